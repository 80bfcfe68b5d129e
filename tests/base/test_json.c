/* The base JSON writer and reader: escaping, invalid UTF-8, milliseconds,
 * nesting, fixed buffers; the reader's values, errors and limits. */
#include <pacer/base/json.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static char *str_of(const char *s)
{
    jbuf b;
    jbuf_init(&b);
    jbuf_str(&b, s);
    return jbuf_steal(&b, NULL);
}

static void test_escapes(void **state)
{
    (void)state;
    char *s = str_of("a\"b\\c\n\t\x01/é");
    assert_string_equal(s, "\"a\\\"b\\\\c\\n\\t\\u0001/é\"");
    free(s);
    s = str_of("bad\xff\xc3(end\xed\xa0\x80");  /* invalid byte, bad continuation, surrogate */
    assert_string_equal(s, "\"bad\\ufffd\\ufffd(end\\ufffd\\ufffd\\ufffd\"");
    /* valid JSON after all */
    jread r;
    jvalue v;
    char *copy = strdup(s);
    jread_init(&r, copy, strlen(copy), NULL, 0);
    assert_true(jread_value(&r, &v));
    assert_true(jread_end(&r, "value"));
    assert_int_equal(v.type, JT_STRING);
    free(copy);
    free(s);
}

static void test_ms(void **state)
{
    (void)state;
    struct { int64_t ns; const char *want; } cases[] = {
        {0, "0.000"}, {1, "0.000"}, {499, "0.000"}, {500, "0.001"}, {1234567, "1.235"},
        {300000000, "300.000"}, {-1500000, "-1.500"}, {INT64_MIN, "-9223372036854.776"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        jbuf b;
        jbuf_init(&b);
        jbuf_open(&b, '{');
        jbuf_kv_ms(&b, "v", cases[i].ns);
        jbuf_close(&b, '}');
        char want[64];
        snprintf(want, sizeof(want), "{\"v\":%s}", cases[i].want);
        char *s = jbuf_steal(&b, NULL);
        assert_string_equal(s, want);
        free(s);
    }
}

static void test_nesting(void **state)
{
    (void)state;
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    jbuf_kv_str(&b, "a", "x");
    jbuf_key(&b, "list");
    jbuf_open(&b, '[');
    for (int i = 0; i < 2; i++) {
        jbuf_open(&b, '{');
        jbuf_kv_i64(&b, "i", i);
        jbuf_kv_bool(&b, "ok", i);
        jbuf_close(&b, '}');
    }
    jbuf_close(&b, ']');
    jbuf_kv_u64(&b, "u", UINT64_MAX);
    jbuf_close(&b, '}');
    char *s = jbuf_steal(&b, NULL);
    assert_string_equal(s, "{\"a\":\"x\",\"list\":[{\"i\":0,\"ok\":false},{\"i\":1,\"ok\":true}],"
                           "\"u\":18446744073709551615}");
    free(s);
}

static void test_fixed_buffer(void **state)
{
    (void)state;
    char buf[8];
    jbuf b;
    jbuf_init_fixed(&b, buf, sizeof(buf));
    jbuf_open(&b, '[');
    jbuf_i64(&b, 1);
    jbuf_i64(&b, 22);
    jbuf_close(&b, ']');
    assert_true(jbuf_fits(&b));
    assert_string_equal(buf, "[1,22]");
    jbuf_str(&b, "long");           /* does not fit: counted, cut, still terminated */
    assert_false(jbuf_fits(&b));
    assert_int_equal(b.len, 13);
    assert_string_equal(buf, "[1,22],");
    assert_null(jbuf_steal(&b, NULL)); /* the caller's buffer is never handed out */
}

static void test_double(void **state)
{
    (void)state;
    struct { double v; const char *want; } cases[] = {
        {0.1, "0.1"}, {3, "3.0"}, {-2.5, "-2.5"}, {1e300, "1e+300"}, {123.456, "123.456"},
        {1.0 / 3, "0.3333333333333333"}, {0.0 / 0.0, "null"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        jbuf b;
        jbuf_init(&b);
        jbuf_double(&b, cases[i].v);
        char *s = jbuf_steal(&b, NULL);
        assert_string_equal(s, cases[i].want);
        free(s);
    }
}

/* Reads text with a reader over a copy; returns the reader's error or "". */
static const char *read_all(const char *text, unsigned flags, char out[200])
{
    size_t n = strlen(text);
    char *buf = malloc(n + 1);
    memcpy(buf, text, n);
    jread r;
    jvalue v;
    jread_init(&r, buf, n, text, flags);
    out[0] = '\0';
    if (!jread_value(&r, &v) || !jread_end(&r, "value"))
        snprintf(out, 200, "%zu: %s", r.error_at, r.message);
    free(buf);
    return out;
}

static void test_reader_values(void **state)
{
    (void)state;
    const char *text = " {\"a\" : \"x\\ny\\u00e9\", \"n\": -12, \"d\": 2.5e3, \"big\": 18446744073709551615,"
                       " \"l\": [true, false, null], \"o\": {\"k\": [1, {}]}} ";
    size_t n = strlen(text);
    char *buf = malloc(n + 1);
    memcpy(buf, text, n);
    jread r;
    jread_init(&r, buf, n, text, 0);
    const char *key;
    size_t kl;
    jvalue v;
    int64_t i;
    uint64_t u;
    double d;
    assert_int_equal(jread_peek(&r), JT_OBJECT);
    assert_true(jread_enter_object(&r));
    assert_int_equal(jread_member(&r, &key, &kl), 1);
    assert_int_equal(kl, 1);
    assert_true(jread_value(&r, &v));
    assert_int_equal(v.type, JT_STRING);
    assert_string_equal(v.s, "x\ny\xc3\xa9");
    assert_int_equal(jread_member(&r, &key, &kl), 1);
    assert_true(jread_value(&r, &v));
    assert_true(jvalue_int64(&v, &i));
    assert_int_equal(i, -12);
    assert_false(jvalue_uint64(&v, &u));
    assert_int_equal(jread_member(&r, &key, &kl), 1);
    assert_true(jread_value(&r, &v));
    assert_false(v.integer);
    assert_true(jvalue_double(&v, &d));
    assert_true(d == 2500.0);
    assert_int_equal(jread_member(&r, &key, &kl), 1);
    assert_true(jread_value(&r, &v));
    assert_false(jvalue_int64(&v, &i));
    assert_true(jvalue_uint64(&v, &u));
    assert_true(u == UINT64_MAX);
    assert_int_equal(jread_member(&r, &key, &kl), 1);
    assert_true(jread_enter_array(&r));
    jtype want[] = {JT_TRUE, JT_FALSE, JT_NULL};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(jread_element(&r), 1);
        assert_true(jread_value(&r, &v));
        assert_int_equal(v.type, want[k]);
    }
    assert_int_equal(jread_element(&r), 0);
    assert_int_equal(jread_member(&r, &key, &kl), 1);
    assert_true(jread_value(&r, &v)); /* skipped whole, its text from src */
    assert_int_equal(v.type, JT_OBJECT);
    assert_int_equal(v.len, strlen("{\"k\": [1, {}]}"));
    assert_memory_equal(v.s, "{\"k\": [1, {}]}", v.len);
    assert_int_equal(jread_member(&r, &key, &kl), 0);
    assert_true(jread_end(&r, "object"));
    free(buf);
}

static void test_reader_errors(void **state)
{
    (void)state;
    char out[200];
    assert_string_equal(read_all("[1,]", 0, out), "3: expected a value, got ']'");
    assert_string_equal(read_all("{\"a\" 1}", 0, out), "5: expected ':' after member name");
    assert_string_equal(read_all("\"a\\u0000b\"", JREAD_NO_NUL, out), "2: \\u0000 is not allowed in strings");
    assert_string_equal(read_all("\"a\\u0000b\"", 0, out), "");
    assert_string_equal(read_all("01", 0, out), "1: leading zeros are not allowed in numbers");
    assert_string_equal(read_all("\"\xc3\x28\"", 0, out), "1: invalid UTF-8 (byte 0xc3) in string");
    assert_string_equal(read_all("\"abc", JREAD_LINE, out), "4: unterminated string (opened at column 1)");
    assert_string_equal(read_all("", 0, out), "0: expected a value, got end of input");
    assert_string_equal(read_all("1 2", 0, out), "2: unexpected characters after the value");
    assert_string_equal(read_all("[1, 99999999999999999999]", 0, out), "");
    assert_string_equal(read_all("[1, 99999999999999999999]", JREAD_NUMBERS_IN_RANGE, out),
                        "4: integer out of the 64-bit range");
    assert_string_equal(read_all("{\"a\": [1e999]}", JREAD_NUMBERS_IN_RANGE, out), "7: number out of range");
    char deep[200];
    memset(deep, '[', 65);
    memset(deep + 65, ']', 65);
    deep[130] = '\0';
    assert_string_equal(read_all(deep, 0, out), "64: nesting deeper than 64 levels");
    assert_int_equal(json_depth_exceeded(deep, 130, 64), 64);
    memset(deep, '[', 64); /* exactly the limit */
    memset(deep + 64, ']', 64);
    deep[128] = '\0';
    assert_string_equal(read_all(deep, 0, out), "");
    assert_int_equal(json_depth_exceeded(deep, 128, 64), (size_t)-1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_ms),
        cmocka_unit_test(test_nesting),
        cmocka_unit_test(test_fixed_buffer),
        cmocka_unit_test(test_double),
        cmocka_unit_test(test_reader_values),
        cmocka_unit_test(test_reader_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
