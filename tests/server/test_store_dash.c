/* The dashboard's reads of single rows (store_dash.c) reach their tables
 * through an index: EXPLAIN QUERY PLAN of each statement on a store made
 * by sqlite_store_open. A table is never scanned whole ("SCAN t" without an index
 * on one of the store's tables); the raw tables of the rollup kinds are
 * reached by rowid only (the rows not sealed yet: a rowid range; their
 * blocks are read by sqlite_seal_blocks_read, whose plan test_store_query
 * checks). A statement that sorts is bounded by its scan limit (a LIMIT
 * in the statement). */
#include "store/sqlite/sqlite_store.h"
#include "store/store.h"
#include "store/store_dash.h"

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
    char failures[8192];
} seen;

static void on_plan(void *ctx, const char *name, const char *sql, const char *plan)
{
    seen *s = ctx;
    s->n++;
    printf("%s: %s\n", name, plan);
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", plan);
    bool bad = strstr(plan, "TEMP B-TREE") && !strstr(sql, "LIMIT");
    static const char *const tables[] = {"page_loads", "startups", "requests", "logs", "metric_points"};
    for (char *line = strtok(copy, ";"); line; line = strtok(NULL, ";")) {
        while (*line == ' ')
            line++;
        if (strncmp(line, "SCAN ", 5) != 0 || strstr(line, "USING") || strstr(line, "VIRTUAL TABLE"))
            continue;
        char t[64] = "";
        sscanf(line + 5, "%63s", t);
        for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
            if (strcmp(t, tables[i]) == 0)
                bad = true; /* one of the store's tables, whole */
    }
    if (bad) {
        size_t o = strlen(s->failures);
        snprintf(s->failures + o, sizeof s->failures - o, "%s: %s\n", name, plan);
    }
}

static void test_every_dashboard_read_uses_an_index(void **state)
{
    (void)state;
    char dir[] = "/tmp/pacerd-dash-explain-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/p.db", dir);
    store_options o = {.readers = 1};
    store *st = sqlite_store_open(path, &o, err, sizeof err);
    assert_non_null(st);
    seen s = {0};
    assert_int_equal(store_dash_explain(st, on_plan, &s), 0);
    assert_int_equal(s.n, 3 + 2);
    if (s.failures[0])
        fail_msg("statements that scan a table of the store:\n%s", s.failures);
    store_close(st);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_dashboard_read_uses_an_index)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
