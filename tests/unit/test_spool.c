/* The on-disk spool: batches are stable until acked, survive a reopen (a
 * crash), the cap drops the oldest and counts them, signals stay apart. */
#include "spool.h"

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
        cmocka_unit_test_setup_teardown(test_cap_drops_oldest, setup, teardown),
        cmocka_unit_test(test_open_error_names_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
