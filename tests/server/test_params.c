/* Strict request targets (src/server/params.c) and the keys file's
 * parser (src/server/auth.c). */
#include "app/auth.h"
#include "http/params.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void parse_ok(const char *q, params *p)
{
    char err[256];
    if (params_parse(q, strlen(q), p, err, sizeof err) != 0)
        fail_msg("params_parse(\"%s\"): %s", q, err);
}

static void parse_bad(const char *q, const char *want)
{
    params p;
    char err[256];
    if (params_parse(q, strlen(q), &p, err, sizeof err) != -EINVAL)
        fail_msg("params_parse(\"%s\") accepted it", q);
    if (strncmp(err, want, strlen(want)) != 0)
        fail_msg("params_parse(\"%s\"): \"%s\", want it to start with \"%s\"", q, err, want);
    assert_int_equal(p.n, 0);
    params_free(&p);
}

static void test_decoding(void **state)
{
    (void)state;
    params p;
    parse_ok("app=sh%6Fp&version=1.0+beta&x=&flag", &p);
    assert_int_equal(p.n, 4);
    assert_string_equal(params_find(&p, "app")->value, "shop");
    assert_string_equal(params_find(&p, "version")->value, "1.0 beta");
    assert_string_equal(params_find(&p, "x")->value, "");
    assert_string_equal(params_find(&p, "flag")->value, "");
    assert_null(params_find(&p, "ap"));
    params_free(&p);
    parse_ok("caf%C3%A9=%e2%82%ac", &p);
    assert_string_equal(p.p[0].name, "caf\xc3\xa9");
    assert_string_equal(p.p[0].value, "\xe2\x82\xac");
    assert_int_equal(p.p[0].value_len, 3);
    params_free(&p);
    parse_ok("", &p);
    assert_int_equal(p.n, 0);
    params_free(&p);
}

static void test_refusals(void **state)
{
    (void)state;
    parse_bad("app=%ff", "app: not valid UTF-8");
    parse_bad("app=%c0%af", "app: not valid UTF-8"); /* overlong '/' */
    parse_bad("app=%ed%a0%80", "app: not valid UTF-8");
    parse_bad("app=shop%00x", "app: contains a NUL byte");
    parse_bad("app=a%09b", "app: contains a control character");
    parse_bad("app=%7f", "app: contains a control character");
    parse_bad("app=%g0", "app: '%' must be followed by two hex digits");
    parse_bad("app=%4", "app: '%' must be followed by two hex digits");
    parse_bad("app=%", "app: '%' must be followed by two hex digits");
    parse_bad("a%zz=1", "a%zz: the parameter's name");
    parse_bad("app=1&app=2", "app: given more than once");
    params rp;
    char rerr[128];
    assert_int_equal(params_parse("attr=a%3D1&attr=b%3D2", 21, &rp, rerr, sizeof rerr), 0);
    assert_int_equal(rp.n, 2);
    assert_string_equal(rp.p[1].value, "b=2");
    params_free(&rp);
    parse_bad("app=1&&b=2", "query: a parameter without a name");
    parse_bad("=1", "query: a parameter without a name");
    parse_bad("app=1&", "query: a parameter without a name");
    char many[PARAMS_MAX * 6 + 8] = "";
    for (int i = 0; i <= PARAMS_MAX; i++)
        sprintf(many + strlen(many), "%sp%d=1", i ? "&" : "", i);
    parse_bad(many, "query: more than 32 parameters");
}

static void test_numbers(void **state)
{
    (void)state;
    params p;
    char err[256];
    int64_t v = 7;
    parse_ok("a=0&b=9223372036&c=9223372037&d=-1&e=1e3&f=&g=9223372036854775807&h=9223372036854775808"
             "&i=-9223372036854775808&j=00012&k=+1",
             &p);
    assert_int_equal(params_int(&p, "a", 0, 9223372036, &v, err, sizeof err), 1);
    assert_int_equal(v, 0);
    assert_int_equal(params_int(&p, "b", 0, 9223372036, &v, err, sizeof err), 1);
    assert_int_equal(v, 9223372036);
    assert_int_equal(params_int(&p, "c", 0, 9223372036, &v, err, sizeof err), -EINVAL);
    assert_string_equal(err, "c: expected an integer from 0 to 9223372036");
    assert_int_equal(params_int(&p, "d", 0, 10, &v, err, sizeof err), -EINVAL);
    assert_int_equal(params_int(&p, "d", -5, 10, &v, err, sizeof err), 1);
    assert_int_equal(v, -1);
    assert_int_equal(params_int(&p, "e", 0, 10000, &v, err, sizeof err), -EINVAL);
    assert_int_equal(params_int(&p, "f", 0, 10, &v, err, sizeof err), -EINVAL);
    assert_int_equal(params_int(&p, "g", INT64_MIN, INT64_MAX, &v, err, sizeof err), 1);
    assert_true(v == INT64_MAX);
    assert_int_equal(params_int(&p, "h", INT64_MIN, INT64_MAX, &v, err, sizeof err), -EINVAL); /* overflows */
    assert_int_equal(params_int(&p, "i", INT64_MIN, INT64_MAX, &v, err, sizeof err), 1);
    assert_true(v == INT64_MIN);
    assert_int_equal(params_int(&p, "j", 0, 100, &v, err, sizeof err), 1);
    assert_int_equal(v, 12);
    assert_int_equal(params_int(&p, "k", 0, 100, &v, err, sizeof err), -EINVAL);
    assert_int_equal(params_int(&p, "absent", 0, 100, &v, err, sizeof err), 0);
    const char *s;
    assert_int_equal(params_str(&p, "a", 5, &s, err, sizeof err), 1);
    assert_int_equal(params_str(&p, "f", 5, &s, err, sizeof err), -EINVAL);
    assert_string_equal(err, "f: expected 1 to 5 bytes");
    assert_int_equal(params_str(&p, "g", 5, &s, err, sizeof err), -EINVAL);
    static const char *const known[] = {"a", "b", NULL};
    assert_int_equal(params_only(&p, known, err, sizeof err), -EINVAL);
    assert_string_equal(err, "c: unknown parameter (expected a, b)");
    params_free(&p);
}

static void test_paths(void **state)
{
    (void)state;
    char *path, err[256];
    assert_int_equal(params_path("/v1/config/sh%6Fp", 17, &path, err, sizeof err), 0);
    assert_string_equal(path, "/v1/config/shop");
    free(path);
    assert_int_equal(params_path("/a+b", 4, &path, err, sizeof err), 0);
    assert_string_equal(path, "/a+b"); /* '+' is a space only in a query */
    free(path);
    assert_int_equal(params_path("/v1/config/shop%00x", 19, &path, err, sizeof err), -EINVAL);
    assert_string_equal(err, "path: contains a NUL byte");
    assert_int_equal(params_path("/%ff", 4, &path, err, sizeof err), -EINVAL);
    assert_string_equal(err, "path: not valid UTF-8");
    assert_int_equal(params_path("http://x/", 9, &path, err, sizeof err), -EINVAL);
    assert_int_equal(params_path("", 0, &path, err, sizeof err), -EINVAL);
}

static void keys_ok(const char *text)
{
    char err[256];
    if (auth_check_keys(text, strlen(text), "keys", "the-admin", err, sizeof err) != 0)
        fail_msg("keys \"%s\": %s", text, err);
}

static void keys_bad(const char *text, const char *want)
{
    char err[256] = "";
    assert_int_equal(auth_check_keys(text, strlen(text), "keys", "the-admin", err, sizeof err), -EINVAL);
    if (strncmp(err, want, strlen(want)) != 0)
        fail_msg("keys \"%s\": \"%s\", want \"%s\"", text, err, want);
}

static void test_keys_file(void **state)
{
    (void)state;
    keys_ok("");
    keys_ok("# comment\n\nshop k1\r\nother k2 rate=10/s burst=50 daily=1000000\n  spaced\tk3  rate=5/min \n");
    keys_ok("a k1 rate=1/h");
    keys_bad("shop\n", "keys:1: expected \"APP KEY\"");
    keys_bad("shop k1\nother k1\n", "keys:2: this key is already given to app shop");
    keys_bad("shop the-admin\n", "keys:1: an app key must differ from the admin token");
    keys_bad("shop k1 rate=10\n", "keys:1: field 3: expected rate=N/s");
    keys_bad("shop k1 rate=10/day\n", "keys:1: field 3");
    keys_bad("shop k1 rate=0/s\n", "keys:1: field 3");
    keys_bad("shop k1 daily=12x\n", "keys:1: field 3");
    keys_bad("shop k1 daily=99999999999999\n", "keys:1: field 3");
    keys_bad("shop k1 burst=4\n", "keys:1: burst= needs a rate=");
    keys_bad("x k0\nshop k1 rate=1/s a b c d e f\n", "keys:2: too many fields");
    keys_bad("shop k\x01y\n", "keys:1: expected \"APP KEY\"");
    char err[256];
    static const char nul[] = "shop k1\nshop k2\0x\n";
    assert_int_equal(auth_check_keys(nul, sizeof nul - 1, "keys", "the-admin", err, sizeof err), -EINVAL);
    assert_string_equal(err, "keys:2: contains a NUL byte");
    char longline[5000];
    memset(longline, 'a', sizeof longline - 1);
    longline[sizeof longline - 1] = 0;
    keys_bad(longline, "keys:1: line longer than 4096 bytes");
    /* a comment of any number of words is skipped, indented or not */
    keys_ok("# one two three four five six seven eight nine ten\n  # a b c d e f g h i j\nshop k1\n");
    keys_bad("shop k1 # a comment after a key is a field\n", "keys:1: too many fields");
}

/* The keys file docs/server.md shows ("The keys file: one key per line"),
 * as it is written there. */
static void test_keys_file_documented(void **state)
{
    (void)state;
    char path[4096];
    const char *root = getenv("PACER_SOURCE_ROOT");
    snprintf(path, sizeof path, "%s/docs/server.md", root ? root : ".");
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("%s: %s", path, strerror(errno));
    static char doc[1 << 20];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[n] = 0;
    const char *intro = strstr(doc, "The keys file: one key per line");
    assert_non_null(intro);
    const char *start = strstr(intro, "```\n");
    assert_non_null(start);
    start += 4;
    const char *stop = strstr(start, "```");
    assert_non_null(stop);
    char err[256];
    if (auth_check_keys(start, (size_t)(stop - start), "docs/server.md", "the-admin", err, sizeof err) != 0)
        fail_msg("the documented keys file: %s", err);
    /* its comment line is longer than the eight fields a key line may have */
    assert_true(start[0] == '#');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decoding), cmocka_unit_test(test_refusals), cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_paths),    cmocka_unit_test(test_keys_file),
        cmocka_unit_test(test_keys_file_documented),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
