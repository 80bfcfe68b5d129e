/* Base's growable array and table keyed by strings: growth from the first
 * room by doubling, an array left as it was when it cannot grow, keys
 * with NUL bytes inside, a value found again after the table grew, every
 * entry visited once. */
#include <pacer/base/array.h>
#include <pacer/base/strmap.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_array_grows(void **state)
{
    (void)state;
    int *a = NULL;
    size_t cap = 0, n = 0;
    for (int i = 0; i < 1000; i++) {
        assert_true(ARRAY_GROW(a, cap, n + 1, 16));
        a[n++] = i;
        if (i == 0)
            assert_int_equal(cap, 16);
    }
    assert_int_equal(cap, 1024);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(a[i], i);
    assert_true(ARRAY_GROW(a, cap, 10, 16)); /* room enough: nothing changes */
    assert_int_equal(cap, 1024);
    int *before = a;
    assert_false(ARRAY_GROW(a, cap, SIZE_MAX / 2, 16)); /* too large: the array as it was */
    assert_ptr_equal(a, before);
    assert_int_equal(cap, 1024);
    assert_int_equal(a[999], 999);
    free(a);
}

static void test_strmap(void **state)
{
    (void)state;
    strmap m = {0};
    assert_null(strmap_get(&m, "x", 1));
    char key[32];
    for (int i = 0; i < 500; i++) {
        int len = snprintf(key, sizeof key, "key %d", i);
        const char *copy;
        void **v = strmap_put(&m, key, (size_t)len, &copy);
        assert_non_null(v);
        assert_null(*v);
        assert_string_equal(copy, key);
        *v = (void *)(intptr_t)(i + 1);
    }
    assert_int_equal(m.n, 500);
    for (int i = 0; i < 500; i++) {
        int len = snprintf(key, sizeof key, "key %d", i);
        assert_int_equal((intptr_t)strmap_get(&m, key, (size_t)len), i + 1);
        void **v = strmap_put(&m, key, (size_t)len, NULL); /* there already: its value */
        assert_int_equal((intptr_t)*v, i + 1);
    }
    assert_int_equal(m.n, 500);
    /* keys of several parts, NUL bytes inside: "a","bc" is not "ab","c" */
    const char *p1[] = {"a", "bc"}, *p2[] = {"ab", "c"};
    size_t l1 = strmap_key(key, sizeof key, p1, 2), l2 = strmap_key(key + 16, 16, p2, 2);
    assert_int_equal(l1, 5);
    assert_int_equal(l2, 5);
    *strmap_put(&m, key, l1, NULL) = "first";
    assert_null(strmap_get(&m, key + 16, l2));
    assert_string_equal(strmap_get(&m, key, l1), "first");
    const char *big[] = {"0123456789", "0123456789"};
    assert_int_equal(strmap_key(key, 16, big, 2), 0); /* does not fit */
    /* every entry once */
    size_t pos = 0, seen = 0;
    const strmap_slot *s;
    while (strmap_next(&m, &pos, &s))
        seen++;
    assert_int_equal(seen, 501);
    strmap_free(&m, NULL);
    assert_int_equal(m.n, 0);
    assert_null(strmap_get(&m, "key 1", 5));
}

static void test_strmap_frees_values(void **state)
{
    (void)state;
    strmap m = {0};
    for (int i = 0; i < 40; i++) {
        char key[8];
        int len = snprintf(key, sizeof key, "%d", i);
        *strmap_put(&m, key, (size_t)len, NULL) = strdup(key);
    }
    strmap_free(&m, free); /* the sanitizer build finds a leak otherwise */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_array_grows),
        cmocka_unit_test(test_strmap),
        cmocka_unit_test(test_strmap_frees_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
