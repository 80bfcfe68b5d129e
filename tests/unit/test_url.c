/* URL path extraction used for API matching (src/core/url.c). */
#include "url.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void expect(const char *url, const char *want)
{
    const char *p;
    size_t n = url_path(url, &p);
    if (n != strlen(want) || memcmp(p, want, n) != 0)
        fail_msg("url_path(\"%s\") = \"%.*s\", want \"%s\"", url, (int)n, p, want);
}

static void test_paths(void **state)
{
    (void)state;
    expect("/api/list", "/api/list");
    expect("/api/list?page=2", "/api/list");
    expect("/api/list#frag", "/api/list");
    expect("http://127.0.0.1:8080/api/list?x=1", "/api/list");
    expect("https://user:pw@shop.example/a/b/c?q", "/a/b/c");
    expect("HTTPS://SHOP.example/api", "/api");
    expect("//cdn.example/img.png", "/img.png");
    expect("http://host", "/");
    expect("http://host?x=1", "/");
    expect("", "/");
    expect(NULL, "/");
    expect("?only=query", "/");
    expect("api/relative", "api/relative");
    expect("not a scheme://x/y", "not a scheme://x/y"); /* spaces: no scheme */
    expect("file:///etc/hosts", "/etc/hosts");
}

static void test_equal(void **state)
{
    (void)state;
    assert_true(url_path_equal("http://a/api/x?1", "/api/x"));
    assert_false(url_path_equal("/api/x", "/api/xy"));
    assert_false(url_path_equal("/api/x", "/API/x")); /* paths are case-sensitive */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_equal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
