/* The dashboard's files (src/server/web.c): the first directory that holds
 * them is loaded; when none does, every place looked in is named, with
 * why each failed. */
#include "app/web.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static void put(const char *dir, const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The body of a 200 answer to GET path, or "" (kept until the next call). */
static const char *served(const web_assets *w, const char *path)
{
    static char body[256];
    http_request rq = {.method = "GET", .path = path};
    http_response rs = {0};
    web_serve(w, "", &rq, &rs);
    snprintf(body, sizeof body, "%.*s", rs.status == 200 ? (int)rs.len : 0, rs.body ? rs.body : "");
    free(rs.body);
    for (size_t i = 0; i < rs.n_extra; i++) /* what the HTTP layer frees once it sent them */
        free(rs.extra[i].value);
    return body;
}

static void test_the_first_that_holds_the_dashboard(void **state)
{
    (void)state;
    char root[] = "/tmp/pacer-web-XXXXXX";
    assert_non_null(mkdtemp(root));
    char gone[128], bare[128], full[128];
    snprintf(gone, sizeof gone, "%s/gone", root);
    snprintf(bare, sizeof bare, "%s/bare", root); /* files, but no index.html */
    snprintf(full, sizeof full, "%s/full", root);
    assert_int_equal(mkdir(bare, 0700), 0);
    assert_int_equal(mkdir(full, 0700), 0);
    put(bare, "app.js", "1");
    put(full, "index.html", "<!doctype html>");
    put(full, "app.js", "2");

    const char *dirs[] = {gone, bare, full};
    const char *dir = NULL;
    char looked[512], err[1024];
    web_assets *w = web_load_first(dirs, 3, &dir, looked, sizeof looked, err, sizeof err);
    assert_non_null(w);
    assert_string_equal(dir, full);
    /* both files of full/, none of bare/ */
    assert_string_equal(served(w, "/"), "<!doctype html>");
    assert_string_equal(served(w, "/assets/app.js"), "2");
    web_free(w);

    /* none: each named, in order, with its reason */
    w = web_load_first(dirs, 2, &dir, looked, sizeof looked, err, sizeof err);
    assert_null(w);
    char want[512];
    snprintf(want, sizeof want, "%s, %s", gone, bare);
    assert_string_equal(looked, want);
    char want_err[1024];
    snprintf(want_err, sizeof want_err,
             "%s: No such file or directory; %s: no index.html (the dashboard is built into BUILD/web; installed "
             "into SHARE/pacer/web)", gone, bare);
    assert_string_equal(err, want_err);

    for (const char *const *d = (const char *const[]){bare, full, NULL}; *d; d++) {
        char p[160];
        snprintf(p, sizeof p, "%s/app.js", *d);
        unlink(p);
    }
    char p[160];
    snprintf(p, sizeof p, "%s/index.html", full);
    unlink(p);
    rmdir(bare);
    rmdir(full);
    assert_int_equal(rmdir(root), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_first_that_holds_the_dashboard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
