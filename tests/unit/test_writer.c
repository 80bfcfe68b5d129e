/* The background writer: lines from many threads all reach the file in one
 * piece, flush is exact, the queue limit drops and counts, ticks run. */
#include "writer.h"

#include <pacer/pacer.h>

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define THREADS 4
#define PER_THREAD 5000

static writer *W;
static atomic_int callbacks;
static atomic_int ticks;

static atomic_int not_internal;

static void on_line(const pacer_record *rec, const char *line, size_t len, void *ud)
{
    (void)rec;
    (void)ud;
    if (!pacer_thread_is_internal())
        atomic_fetch_add(&not_internal, 1);
    assert_true(len > 0 && line[len] == '\0');
    atomic_fetch_add(&callbacks, 1);
}

static int64_t on_tick(void *ud)
{
    (void)ud;
    atomic_fetch_add(&ticks, 1);
    return 0; /* due again as soon as tick_ms allows */
}

static void *pusher(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        char *s;
        int n = asprintf(&s, "{\"t\":%d,\"i\":%d}", t, i);
        assert_true(n > 0);
        assert_true(writer_push(W, i % 2 ? WRITER_EVENT : WRITER_RECORD, s, (size_t)n));
    }
    return NULL;
}

static size_t count_lines(const char *path, int *seen)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[128];
    size_t n = 0;
    while (fgets(line, sizeof(line), f)) {
        int t, i;
        assert_int_equal(sscanf(line, "{\"t\":%d,\"i\":%d}\n", &t, &i), 2);
        seen[t * PER_THREAD + i]++;
        n++;
    }
    fclose(f);
    return n;
}

static void test_many_threads(void **state)
{
    (void)state;
    char rec[] = "/tmp/pacer-writer-rec-XXXXXX", ev[] = "/tmp/pacer-writer-ev-XXXXXX";
    close(mkstemp(rec));
    close(mkstemp(ev));
    writer_options o = {.records_path = rec, .events_path = ev, .on_record = on_line,
                        .on_tick = on_tick, .tick_ms = 10, .queue_limit = 1000000};
    atomic_store(&callbacks, 0);
    atomic_store(&ticks, 0);
    assert_int_equal(writer_new(&o, &W, NULL), 0);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, pusher, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    writer_flush(W);
    /* flush means written: the files hold every line now */
    int *seen = calloc(THREADS * PER_THREAD, sizeof(int));
    size_t n = count_lines(rec, seen) + count_lines(ev, seen);
    assert_int_equal(n, THREADS * PER_THREAD);
    for (int i = 0; i < THREADS * PER_THREAD; i++)
        assert_int_equal(seen[i], 1);
    assert_int_equal(atomic_load(&callbacks), THREADS * PER_THREAD / 2);
    /* the writer thread is marked as pacer's own; the test's are not */
    assert_int_equal(atomic_load(&not_internal), 0);
    assert_false(pacer_thread_is_internal());
    usleep(50000);
    assert_true(atomic_load(&ticks) > 0);
    writer_stats st;
    writer_get_stats(W, &st);
    assert_int_equal(st.written, THREADS * PER_THREAD);
    assert_int_equal(st.dropped, 0);
    writer_free(W);
    free(seen);
    unlink(rec);
    unlink(ev);
}

static void test_queue_limit_drops_and_counts(void **state)
{
    (void)state;
    writer_options o = {.queue_limit = 3};
    assert_int_equal(writer_new(&o, &W, NULL), 0);
    int accepted = 0;
    for (int i = 0; i < 1000; i++)
        accepted += writer_push(W, WRITER_RECORD, strdup("{}"), 2);
    writer_flush(W);
    writer_stats st;
    writer_get_stats(W, &st);
    assert_int_equal(st.dropped, 1000 - accepted);
    assert_true(accepted >= 3);
    writer_free(W);
}

static void test_open_failure_names_file(void **state)
{
    (void)state;
    writer_options o = {.records_path = "/nonexistent-dir/r.jsonl"};
    const char *failed = NULL;
    writer *w = NULL;
    assert_int_equal(writer_new(&o, &w, &failed), -ENOENT);
    assert_string_equal(failed, "/nonexistent-dir/r.jsonl");
    assert_null(w);
}

static void test_appends(void **state)
{
    (void)state;
    char rec[] = "/tmp/pacer-writer-app-XXXXXX";
    int fd = mkstemp(rec);
    assert_int_equal(write(fd, "old\n", 4), 4);
    close(fd);
    writer_options o = {.records_path = rec};
    assert_int_equal(writer_new(&o, &W, NULL), 0);
    writer_push(W, WRITER_RECORD, strdup("new"), 3);
    writer_free(W); /* writes what is queued */
    FILE *f = fopen(rec, "r");
    char buf[32] = {0};
    assert_int_equal(fread(buf, 1, sizeof(buf) - 1, f), 8);
    fclose(f);
    assert_string_equal(buf, "old\nnew\n");
    unlink(rec);
}

/* After a quiet period the thread waits with no wake of its own: a line
 * pushed then still reaches the file without a flush, and so does the next
 * one after another quiet period. */
static void test_quiet_then_pushed_reaches_the_file(void **state)
{
    (void)state;
    char rec[] = "/tmp/pacer-writer-quiet-XXXXXX";
    close(mkstemp(rec));
    writer_options o = {.records_path = rec};
    assert_int_equal(writer_new(&o, &W, NULL), 0);
    for (int round = 1; round <= 2; round++) {
        usleep(350000); /* several periods with nothing to write */
        writer_push(W, WRITER_RECORD, strdup("{}"), 2);
        size_t n = 0;
        for (int i = 0; i < 500 && n < (size_t)round; i++) { /* up to 5 s: liveness, not timing */
            usleep(10000);
            FILE *f = fopen(rec, "r");
            assert_non_null(f);
            n = 0;
            for (int c; (c = fgetc(f)) != EOF;)
                n += c == '\n';
            fclose(f);
        }
        assert_int_equal(n, round);
    }
    writer_free(W);
    unlink(rec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_threads),
        cmocka_unit_test(test_queue_limit_drops_and_counts),
        cmocka_unit_test(test_open_failure_names_file),
        cmocka_unit_test(test_appends),
        cmocka_unit_test(test_quiet_then_pushed_reaches_the_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
