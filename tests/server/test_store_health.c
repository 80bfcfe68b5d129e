/* The store's health (src/server/store_health.c): which commits end a
 * failure of the writes, the room a batch needs, one log line per change
 * of state. */
#include "store/health.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct log_lines {
    char text[16][640];
    size_t n;
} log_lines;

static void keep(void *ctx, const char *msg)
{
    log_lines *l = ctx;
    if (l->n < 16)
        snprintf(l->text[l->n], sizeof l->text[0], "%s", msg);
    l->n++;
}

static const store_error full = {.kind = STORE_ERR_FULL, .msg = "database or disk is full"};

static enum store_fault fault_of(health_state *h, char *reason, size_t size)
{
    store_health s;
    health_snapshot(h, &s, NULL);
    if (reason)
        snprintf(reason, size, "%s", s.reason);
    return s.fault;
}

/* ClickHouse's view (no database path, so no room to check): a failed
 * batch is ended by a batch or the probe, not by anything else. */
static void test_only_a_batch_or_the_probe_ends_a_failure(void **state)
{
    (void)state;
    log_lines l = {0};
    health_state h;
    health_init(&h, NULL, keep, &l);
    uint64_t rows[TABLE_COUNT] = {0};
    rows[0] = 300;
    health_write(&h, NULL, HEALTH_BATCH, 1000, rows, 0, 0);
    assert_int_equal(fault_of(&h, NULL, 0), STORE_OK);
    assert_int_equal(l.n, 0);

    health_write(&h, &full, HEALTH_BATCH, 1000, NULL, 0, 0);
    char reason[512];
    assert_int_equal(fault_of(&h, reason, sizeof reason), STORE_DISK_FULL);
    assert_string_equal(reason, "the disk is full: database or disk is full");
    assert_int_equal(l.n, 1);
    assert_non_null(strstr(l.text[0], "store: writes fail: the disk is full: database or disk is full"));

    /* a config, the analysis, a rollup: committed, and the writes still fail */
    for (int i = 0; i < 5; i++)
        health_write(&h, NULL, HEALTH_OTHER, 1000, NULL, 0, 0);
    assert_int_equal(fault_of(&h, NULL, 0), STORE_DISK_FULL);
    /* more failed batches of the same cause: no more lines */
    for (int i = 0; i < 5; i++)
        health_write(&h, &full, HEALTH_BATCH, 1000, NULL, 0, 0);
    assert_int_equal(l.n, 1);

    health_write(&h, NULL, HEALTH_PROBE, 1000, NULL, 0, 0);
    assert_int_equal(fault_of(&h, reason, sizeof reason), STORE_OK);
    assert_string_equal(reason, "");
    assert_int_equal(l.n, 2);
    assert_non_null(strstr(l.text[1], "writes succeed again, after 6 failed transaction(s)"));
    assert_non_null(strstr(l.text[1], ": the probe committed"));

    /* another cause is another state: a line each */
    const store_error ro = {.kind = STORE_ERR_READ_ONLY, .msg = "attempt to write a readonly database"};
    health_write(&h, &full, HEALTH_OTHER, 1000, NULL, 0, 0);
    health_write(&h, &ro, HEALTH_BATCH, 1000, NULL, 0, 0);
    assert_int_equal(fault_of(&h, NULL, 0), STORE_READ_ONLY);
    health_write(&h, NULL, HEALTH_BATCH, 1000, rows, 0, 0);
    assert_int_equal(fault_of(&h, NULL, 0), STORE_OK);
    assert_int_equal(l.n, 5);
    assert_non_null(strstr(l.text[4], ": a batch committed"));

    store_stats st;
    health_stats(&h, &st);
    assert_int_equal(st.transactions, 16);
    assert_int_equal(st.transaction_failures, 8);
    assert_int_equal(st.failures[STORE_DISK_FULL], 7);
    assert_int_equal(st.rows[0], 600);
    health_destroy(&h);
}

/* SQLite's view: the commit that ends a failure must find room for a batch
 * beside the database (here a directory with room), and says so. */
static void test_room_beside_the_database(void **state)
{
    (void)state;
    char dir[] = "/tmp/pacer-health-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[64];
    snprintf(db, sizeof db, "%s/pacer.db", dir);
    log_lines l = {0};
    health_state h;
    health_init(&h, db, keep, &l);
    assert_int_equal(health_room_needed(&h), HEALTH_MIN_ROOM);
    /* twice the largest of the last ingest transactions */
    health_write(&h, NULL, HEALTH_BATCH, 1000, NULL, 0, 3 << 20);
    health_write(&h, NULL, HEALTH_BATCH, 1000, NULL, 0, 100 << 10);
    health_write(&h, NULL, HEALTH_OTHER, 1000, NULL, 0, 50 << 20); /* not a batch */
    assert_int_equal(health_room_needed(&h), 6 << 20);
    for (int i = 0; i < HEALTH_SIZES; i++)
        health_write(&h, NULL, HEALTH_BATCH, 1000, NULL, 0, 1 << 20);
    assert_int_equal(health_room_needed(&h), 2 << 20);

    health_write(&h, &full, HEALTH_BATCH, 1000, NULL, 0, 0);
    health_write(&h, NULL, HEALTH_OTHER, 1000, NULL, 0, 0);
    assert_int_equal(fault_of(&h, NULL, 0), STORE_DISK_FULL);
    health_write(&h, NULL, HEALTH_PROBE, 1000, NULL, 0, 0);
    assert_int_equal(fault_of(&h, NULL, 0), STORE_OK);
    assert_int_equal(l.n, 2);
    if (!strstr(l.text[1], ": the probe committed, "))
        fail_msg("%s", l.text[1]);
    assert_non_null(strstr(l.text[1], " MiB free, a batch needs 2.0 MiB"));
    /* what reserved the room is gone again */
    char room[80];
    snprintf(room, sizeof room, "%s-room", db);
    assert_int_equal(access(room, F_OK), -1);
    health_destroy(&h);

    /* no directory to reserve it in: the failure stays, with why */
    snprintf(db, sizeof db, "%s/gone/pacer.db", dir);
    l.n = 0;
    health_init(&h, db, keep, &l);
    health_write(&h, &full, HEALTH_BATCH, 1000, NULL, 0, 0);
    health_write(&h, NULL, HEALTH_PROBE, 1000, NULL, 0, 0);
    char reason[512];
    assert_int_equal(fault_of(&h, reason, sizeof reason), STORE_IO);
    assert_string_equal(reason, "the store failed: room for a batch cannot be reserved beside the database "
                                "(No such file or directory)");
    assert_int_equal(l.n, 2);
    health_destroy(&h);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_only_a_batch_or_the_probe_ends_a_failure),
        cmocka_unit_test(test_room_beside_the_database),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
