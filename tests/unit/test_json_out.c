/* JSON output: escaping, invalid UTF-8, milliseconds formatting, nesting. */
#include "json_out.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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
    json_t *v = json_loads(s, JSON_DECODE_ANY, NULL); /* valid JSON after all */
    assert_non_null(v);
    json_decref(v);
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
        jbuf_elem(&b);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_ms),
        cmocka_unit_test(test_nesting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
