/* The on-disk spool: batches are stable until acked, survive a reopen (a
 * crash), the cap drops the oldest and counts them, signals stay apart;
 * OTLP records stay out of an older version's sight, and a spool an older
 * version left (JSON lines, a pending batch) is delivered first, under the
 * ids it had. */
#include "spool.h"
#include "sqlite_dl.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char path[64];

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof(path), "/tmp/pacer-spool-test-%d.db", (int)getpid());
    unlink(path);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char p[96];
    unlink(path);
    snprintf(p, sizeof(p), "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof(p), "%s-shm", path);
    unlink(p);
    return 0;
}

static spool *open_spool(int64_t cap)
{
    spool *s = NULL;
    char *err = NULL;
    if (spool_open(path, cap, &s, &err) < 0)
        fail_msg("spool_open: %s", err);
    return s;
}

/* The signal a record of `type` travels as: its schema type's, traces for a
 * type the schema does not know (what pacer.c does). */
static pacer_signal signal_of(const char *type)
{
    const pacer_record_type *t = pacer_record_type_find(type, strlen(type));
    return t ? t->signal : PACER_SIGNAL_TRACES;
}

static void add(spool *s, const char *type, int i)
{
    char rec[128];
    int n = snprintf(rec, sizeof(rec), "{\"type\":\"%s\",\"i\":%d}", type, i);
    assert_int_equal(spool_add(s, signal_of(type), SPOOL_JSON, rec, (size_t)n), 0);
}

static void test_signal_of(void **state)
{
    (void)state;
    assert_int_equal(signal_of("page"), PACER_SIGNAL_TRACES);
    assert_int_equal(signal_of("jank"), PACER_SIGNAL_LOGS);
    assert_int_equal(signal_of("leak"), PACER_SIGNAL_LOGS);
    assert_int_equal(signal_of("frames"), PACER_SIGNAL_METRICS);
    assert_int_equal(signal_of("janky"), PACER_SIGNAL_TRACES);
    assert_int_equal(signal_of("garbage"), PACER_SIGNAL_TRACES);
}

/* A record of exactly n bytes of body, in the OTLP form. */
static void add_bytes(spool *s, size_t n, char fill)
{
    char body[512];
    memset(body, fill, n);
    assert_int_equal(spool_add(s, PACER_SIGNAL_TRACES, SPOOL_OTLP, body, n), 0);
}

static void test_batch_bytes_cap(void **state)
{
    (void)state;
    spool *s = open_spool(0);
    spool_batch b;
    /* chosen before the cap: a pending batch is sent as it was chosen */
    for (int i = 0; i < 3; i++)
        add_bytes(s, 40, (char)('a' + i));
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 50, &b), 1);
    assert_int_equal(b.n, 3);
    spool_batch_clear(&b);
    spool_set_batch_bytes(s, 100);
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 50, &b), 1);
    assert_int_equal(b.n, 3);
    assert_int_equal(spool_ack(s, &b), 0);
    spool_batch_clear(&b);
    /* 40-byte bodies under a 100-byte cap: two a batch; one of 300 alone;
     * the record count still bounds */
    for (int i = 0; i < 5; i++)
        add_bytes(s, 40, (char)('f' + i));
    add_bytes(s, 300, 'z');
    add_bytes(s, 10, 'y');
    size_t want[] = {2, 2, 1, 1, 1};
    size_t lens[] = {40, 40, 40, 300, 10};
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
        assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 50, &b), 1);
        assert_int_equal(b.n, want[k]);
        assert_int_equal(b.lens[0], lens[k]);
        assert_int_equal(spool_ack(s, &b), 0);
        spool_batch_clear(&b);
    }
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 50, &b), 0);
    for (int i = 0; i < 4; i++)
        add_bytes(s, 10, 'q');
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 3, &b), 1);
    assert_int_equal(b.n, 3);
    spool_batch_clear(&b);
    spool_close(s);
}

static void test_batches_stable_until_ack(void **state)
{
    (void)state;
    spool *s = open_spool(0);
    for (int i = 0; i < 5; i++)
        add(s, "page", i);
    add(s, "jank", 100);
    spool_batch b, again;
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 3, &b), 1);
    assert_int_equal(b.n, 3);
    assert_string_equal(b.records[0], "{\"type\":\"page\",\"i\":0}");
    /* more records arrive; the pending batch does not change */
    add(s, "page", 5);
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 3, &again), 1);
    assert_string_equal(again.id, b.id);
    assert_int_equal(again.n, 3);
    spool_batch_clear(&again);
    /* a crash before the ack: the reopened spool offers the same batch */
    spool_close(s);
    s = open_spool(0);
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 50, &again), 1);
    assert_string_equal(again.id, b.id);
    assert_int_equal(again.n, 3);
    spool_batch_clear(&again);
    assert_int_equal(spool_ack(s, &b), 0);
    spool_batch_clear(&b);
    /* next batch: the rest, under a new id */
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 50, &again), 1);
    assert_int_equal(again.n, 3);
    assert_string_equal(again.records[0], "{\"type\":\"page\",\"i\":3}");
    assert_string_not_equal(again.id, b.id);
    assert_int_equal(spool_ack(s, &again), 0);
    spool_batch_clear(&again);
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 50, &again), 0);
    /* logs were kept apart */
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_LOGS, 50, &again), 1);
    assert_int_equal(again.n, 1);
    assert_int_equal(spool_drop(s, &again), 0);
    spool_batch_clear(&again);
    spool_stats st;
    spool_get_stats(s, &st);
    assert_int_equal(st.records, 0);
    assert_int_equal(st.bytes, 0);
    assert_int_equal(st.sent, 6);
    assert_int_equal(st.dropped, 1);
    spool_close(s);
}

static void test_cap_drops_oldest(void **state)
{
    (void)state;
    spool *s = open_spool(1000); /* each record is 21-23 bytes */
    for (int i = 0; i < 200; i++)
        add(s, "page", i);
    spool_stats st;
    spool_get_stats(s, &st);
    assert_true(st.bytes <= 1000);
    assert_true(st.records > 30 && st.records < 200);
    assert_int_equal(st.dropped + st.records, 200);
    spool_batch b;
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 1000, &b), 1);
    char last[64];
    snprintf(last, sizeof(last), "{\"type\":\"page\",\"i\":%d}", 199);
    assert_string_equal(b.records[b.n - 1], last);
    spool_batch_clear(&b);
    spool_close(s);
}

static void add_otlp(spool *s, pacer_signal sig, int i)
{
    uint8_t body[8] = {0x0a, 0x01, (uint8_t)('0' + i % 10), 0x00, 0xff, 0x12, 0x00, (uint8_t)i};
    assert_int_equal(spool_add(s, sig, SPOOL_OTLP, body, sizeof body), 0);
}

/* Runs SQL on the spool file as another program would (an older libpacer). */
static void sql(const char *stmt)
{
    const sqlite_api *sq = sqlite_api_get();
    sqlite3 *db;
    assert_non_null(sq);
    assert_int_equal(sq->open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL), SQLITE_OK);
    char *err = NULL;
    if (sq->exec(db, stmt, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s: %s", stmt, err ? err : "?");
    sq->close(db);
}

static int64_t count(const char *query)
{
    const sqlite_api *sq = sqlite_api_get();
    sqlite3 *db;
    sqlite3_stmt *st;
    int64_t n = -1;
    assert_int_equal(sq->open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sq->prepare_v2(db, query, -1, &st, NULL), SQLITE_OK);
    if (sq->step(st) == SQLITE_ROW)
        n = sq->column_int64(st, 0);
    sq->finalize(st);
    sq->close(db);
    return n;
}

static void test_otlp_records(void **state)
{
    (void)state;
    spool *s = open_spool(0);
    for (int i = 0; i < 3; i++)
        add_otlp(s, PACER_SIGNAL_TRACES, i);
    add_otlp(s, PACER_SIGNAL_METRICS, 9);
    /* what an older libpacer asks for (signal 0-2) finds none of them */
    assert_int_equal(count("SELECT count(*) FROM record WHERE signal IN (0, 1, 2)"), 0);
    assert_int_equal(count("SELECT count(*) FROM record"), 4);
    spool_batch b, again;
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 2, &b), 1);
    assert_int_equal(b.form, SPOOL_OTLP);
    assert_int_equal(b.n, 2);
    /* bodies come back as they went in, NULs and all */
    assert_int_equal(b.lens[1], 8);
    assert_memory_equal(b.records[1], ((uint8_t[]){0x0a, 0x01, '1', 0x00, 0xff, 0x12, 0x00, 1}), 8);
    assert_int_equal(b.records[1][8], '\0');
    /* stable until acked, across a reopen */
    spool_close(s);
    s = open_spool(0);
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 50, &again), 1);
    assert_string_equal(again.id, b.id);
    assert_int_equal(again.n, 2);
    spool_batch_clear(&again);
    assert_int_equal(spool_ack(s, &b), 0);
    spool_batch_clear(&b);
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 50, &b), 1);
    assert_int_equal(b.n, 1);
    assert_int_equal(spool_ack(s, &b), 0);
    spool_batch_clear(&b);
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 50, &b), 0);
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_METRICS, 50, &b), 1);
    assert_int_equal(b.lens[0], 8);
    assert_int_equal(spool_ack(s, &b), 0);
    spool_batch_clear(&b);
    spool_stats st;
    spool_get_stats(s, &st);
    assert_int_equal(st.records, 0);
    assert_int_equal(st.bytes, 0);
    assert_int_equal(st.sent, 4);
    spool_close(s);
}

/* The same range of ids in the two forms never has the same batch id. */
static void test_batch_ids_of_the_forms_differ(void **state)
{
    (void)state;
    spool *s = open_spool(0);
    add(s, "page", 1);
    spool_batch json, otlp;
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 50, &json), 1);
    assert_int_equal(spool_ack(s, &json), 0);
    spool_close(s);
    /* a new file, the same uuid: the OTLP record gets the same id 1 */
    teardown(NULL);
    s = open_spool(0);
    spool_close(s);
    char q[160];
    snprintf(q, sizeof q, "UPDATE meta SET value = '%s' WHERE key = 'uuid'", "00000000000000000000000000000001");
    sql(q);
    s = open_spool(0);
    add_otlp(s, PACER_SIGNAL_TRACES, 1);
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 50, &otlp), 1);
    assert_int_equal(otlp.first_id, 1);
    spool_close(s);
    teardown(NULL);
    s = open_spool(0);
    spool_close(s);
    sql(q);
    s = open_spool(0);
    add(s, "page", 1);
    spool_batch_clear(&json);
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 50, &json), 1);
    assert_int_equal(json.first_id, 1);
    assert_string_not_equal(json.id, otlp.id);
    spool_batch_clear(&json);
    spool_batch_clear(&otlp);
    spool_close(s);
}

/* A spool an older version left: its schema, JSON lines, a batch pending
 * (sent, maybe stored, not acked). Delivered first and under its id; the
 * records spooled since then follow, and the cap counts both. */
static void test_spool_of_an_older_version(void **state)
{
    (void)state;
    sql("PRAGMA journal_mode=WAL;"
        "CREATE TABLE record(id INTEGER PRIMARY KEY AUTOINCREMENT,"
        "  signal INTEGER NOT NULL, body TEXT NOT NULL, bytes INTEGER NOT NULL);"
        "CREATE INDEX record_signal ON record(signal, id);"
        "CREATE TABLE pending(signal INTEGER PRIMARY KEY, first_id INTEGER, last_id INTEGER, batch TEXT);"
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;"
        "INSERT INTO meta VALUES ('uuid', 'aaaabbbbccccddddeeeeffff00001111'), ('bytes', 63), ('dropped', 2);"
        "INSERT INTO record(signal, body, bytes) VALUES (0, '{\"type\":\"page\",\"i\":1}', 21),"
        "  (1, '{\"type\":\"jank\",\"i\":2}', 21), (0, '{\"type\":\"page\",\"i\":3}', 21);"
        "INSERT INTO pending VALUES (0, 1, 1, '0123456789abcdef0123456789abcdef');");
    spool *s = open_spool(0);
    add_otlp(s, PACER_SIGNAL_TRACES, 4);
    spool_stats st;
    spool_get_stats(s, &st);
    assert_int_equal(st.records, 4);
    assert_int_equal(st.bytes, 63 + 8);
    assert_int_equal(st.dropped, 2);
    spool_batch b;
    /* the pending batch, as the older version chose it */
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 50, &b), 1);
    assert_int_equal(b.form, SPOOL_JSON);
    assert_string_equal(b.id, "0123456789abcdef0123456789abcdef");
    assert_int_equal(b.n, 1);
    assert_string_equal(b.records[0], "{\"type\":\"page\",\"i\":1}");
    assert_int_equal(b.lens[0], 21);
    assert_int_equal(spool_ack(s, &b), 0);
    spool_batch_clear(&b);
    /* its other lines, then what this version spooled */
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 50, &b), 1);
    assert_int_equal(b.form, SPOOL_JSON);
    assert_string_equal(b.records[0], "{\"type\":\"page\",\"i\":3}");
    assert_int_equal(spool_ack(s, &b), 0);
    spool_batch_clear(&b);
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 50, &b), 1);
    assert_int_equal(b.form, SPOOL_OTLP);
    assert_int_equal(spool_ack(s, &b), 0);
    spool_batch_clear(&b);
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_LOGS, 50, &b), 1);
    assert_int_equal(b.form, SPOOL_JSON);
    assert_string_equal(b.records[0], "{\"type\":\"jank\",\"i\":2}");
    assert_int_equal(spool_ack(s, &b), 0);
    spool_batch_clear(&b);
    spool_get_stats(s, &st);
    assert_int_equal(st.records, 0);
    assert_int_equal(st.bytes, 0);
    assert_int_equal(st.sent, 4);
    spool_close(s);
}

static void test_cap_counts_both_forms(void **state)
{
    (void)state;
    spool *s = open_spool(300);
    for (int i = 0; i < 40; i++) {
        if (i % 2)
            add_otlp(s, PACER_SIGNAL_TRACES, i);
        else
            add(s, "page", i);
    }
    spool_stats st;
    spool_get_stats(s, &st);
    assert_true(st.bytes <= 300);
    assert_int_equal(st.dropped + st.records, 40);
    assert_true(st.records > 5 && st.records < 40);
    /* the newest of each form are the ones kept */
    spool_batch b;
    assert_int_equal(spool_next_batch(s, PACER_SIGNAL_TRACES, 100, &b), 1);
    assert_int_equal(b.form, SPOOL_JSON);
    assert_string_equal(b.records[b.n - 1], "{\"type\":\"page\",\"i\":38}");
    spool_batch_clear(&b);
    spool_close(s);
}

static void test_open_error_names_file(void **state)
{
    (void)state;
    spool *s = NULL;
    char *err = NULL;
    assert_true(spool_open("/nonexistent-dir/spool.db", 0, &s, &err) < 0);
    assert_non_null(strstr(err, "/nonexistent-dir/spool.db"));
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signal_of),
        cmocka_unit_test_setup_teardown(test_batches_stable_until_ack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_bytes_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cap_drops_oldest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_otlp_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_ids_of_the_forms_differ, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spool_of_an_older_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cap_counts_both_forms, setup, teardown),
        cmocka_unit_test(test_open_error_names_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
