/* URL folding for request statistics (src/server/urlfold.c). */
#include "ingest/urlfold.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void expect(const char *url, const char *want)
{
    char buf[256];
    size_t n = urlfold(url, buf, sizeof buf);
    if (strcmp(buf, want) != 0 || n != strlen(want))
        fail_msg("urlfold(\"%s\") = \"%s\", want \"%s\"", url, buf, want);
}

static void test_folding(void **state)
{
    (void)state;
    expect("/api/items/123", "/api/items/{id}");
    expect("https://shop.example:8443/api/items/123?x=1#f", "/api/items/{id}");
    expect("/api/items/123/reviews/9", "/api/items/{id}/reviews/{id}");
    expect("/u/0b3c9a52-1f0e-4c7a-9d2b-6a5e4f3c2b1a/profile", "/u/{id}/profile");
    expect("/obj/5f2a9c0e11aa", "/obj/{id}");
    expect("/s/AbC3dE4fG5hI6jK7lM8n", "/s/{id}");
    expect("/api/v2/list", "/api/v2/list");        /* a version is not an id */
    expect("/api/deadbeefcafe", "/api/deadbeefcafe"); /* hex without a digit: a word */
    expect("/api/config", "/api/config");
    expect("http://host", "/");
    expect("", "/");
    expect(NULL, "/");
    expect("//cdn.example/img/42.png", "/img/42.png"); /* not all digits */
    expect("/a//b/", "/a//b/");
    expect("api/items/7", "/api/items/{id}");
}

static void test_truncation(void **state)
{
    (void)state;
    char buf[12];
    size_t n = urlfold("/api/items/123/more", buf, sizeof buf);
    assert_true(n < sizeof buf);
    assert_string_equal(buf, "/api/items/");
    n = urlfold("/abcdefghijklmnopqrstuvwxyz", buf, sizeof buf);
    assert_string_equal(buf, "/");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_folding),
        cmocka_unit_test(test_truncation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
