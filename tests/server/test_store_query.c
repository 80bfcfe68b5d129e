/* The read APIs' statements each read through an index: EXPLAIN QUERY
 * PLAN of every one (store_explain, all filter combinations) on a store
 * made by sqlite_store_open. A full scan of a table ("SCAN t" without an index)
 * fails; so does a plan that sorts the rows up to the mark, which would
 * read all of an app's rows before the first answer (the rows after the
 * mark, a rowid range of at most one rollup batch, may be sorted). */
#include "store/sqlite/sqlite_store.h"
#include "store/store.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct seen {
    size_t n;
    char failures[4096];
} seen;

static void on_plan(void *ctx, const char *name, const char *sql, const char *plan)
{
    seen *s = ctx;
    s->n++;
    char copy[2048];
    snprintf(copy, sizeof copy, "%s", plan);
    bool bad = false;
    for (char *line = strtok(copy, ";"); line; line = strtok(NULL, ";")) {
        while (*line == ' ')
            line++;
        if (strncmp(line, "SCAN ", 5) == 0 && !strstr(line, "USING"))
            bad = true; /* a full table scan */
        if (strstr(line, "TEMP B-TREE") && !strstr(name, "after the mark"))
            bad = true; /* sorting what an index should give in order */
    }
    if (!strstr(plan, "USING"))
        bad = true;
    if (bad) {
        size_t o = strlen(s->failures);
        snprintf(s->failures + o, sizeof s->failures - o, "%s: %s\n", name, plan);
    }
}

static void test_every_read_uses_an_index(void **state)
{
    (void)state;
    char dir[] = "/tmp/pacerd-explain-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/p.db", dir);
    store_options o = {.readers = 1};
    store *st = sqlite_store_open(path, &o, err, sizeof err);
    assert_non_null(st);
    seen s = {0};
    assert_int_equal(store_explain(st, on_plan, &s), 0);
    printf("%zu statements explained\n", s.n);
    assert_true(s.n >= 2 * 16 + 1 + 8 + 2);
    if (s.failures[0])
        fail_msg("statements that do not read through an index:\n%s", s.failures);
    store_close(st);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_read_uses_an_index)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
