/* The record writer (writer.h).
 *
 * Producers push records (formatted here, on the writer thread, so that
 * the app's threads only link a node) and event lines onto a FIFO under a mutex held only for the
 * list operation, and make no system call: the writer thread wakes on its
 * own every WRITER_LATENCY_MS (so a record reaches the file within that
 * time), or earlier when WRITER_WAKE_BATCH lines are waiting, a flush is
 * requested or the writer stops. A wake that found nothing to write makes
 * the next wait idle: no wake of its own (but the tick's), and the first
 * line pushed wakes the thread — one system call per burst after a quiet
 * period, so that an app with nothing to record pays no periodic wakes. It takes the whole list at once, writes it
 * with one write(2) per file and batch (no stdio buffer: a child that
 * forks from the app and calls exit() has nothing of ours to flush twice)
 * and calls the record callback.
 *
 * Sequence numbers make flush exact: `pushed` counts lines queued, `done`
 * lines written or failed by the thread; writer_flush() waits for done ≥ the
 * pushed count it saw.
 *
 * The thread also runs on_tick (live page deadlines) when it is due, without
 * holding the queue lock, so the tick may push lines itself; the tick says
 * when it is due next, writer_tick_at brings it forward, and with nothing
 * due and nothing to write the thread sleeps until a push or a tick asks.
 */
#include "writer.h"

#include "clock.h"

#include <pacer/base/json.h>
#include <pacer/base/thread.h>

#include <fcntl.h>
#include <unistd.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WRITER_LATENCY_MS 100
#define WRITER_WAKE_BATCH 512

typedef struct wline {
    struct wline *next;
    writer_stream stream;
    pacer_record *rec; /* WRITER_RECORD: formatted into text by the thread */
    size_t len;
    char *text;
} wline;

struct writer {
    pthread_mutex_t mu;
    pthread_cond_t wake;     /* to the thread: work or stop */
    pthread_cond_t done_cv;  /* from the thread: progress */
    pthread_t thread;
    wline *head, *tail;
    size_t queued;
    uint64_t pushed, done;
    bool stopping;
    bool flush_requested;
    bool idle; /* the thread waits with no deadline of its own: a push wakes it */
    int64_t tick_due; /* CLOCK_MONOTONIC ns; INT64_MAX: none */

    int records_fd;         /* -1: none */
    bool records_owned;     /* false for stdout */
    int events_fd;          /* -1: none */
    writer_options opts;

    uint64_t written, dropped, errors; /* under mu */
};

static int64_t mono_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct timespec timespec_at(int64_t ns)
{
    return (struct timespec){.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
}

static bool write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

/* Writes a batch; returns the number of lines that failed. */
static uint64_t write_batch(writer *w, wline *batch)
{
    jbuf out[2];
    uint64_t lines[2] = {0, 0}, errors = 0;
    int fds[2] = {w->records_fd, w->events_fd};
    jbuf_init(&out[0]);
    jbuf_init(&out[1]);
    for (wline *l = batch; l; l = l->next) {
        int s = l->stream == WRITER_RECORD ? 0 : 1;
        if (l->rec && !(l->text = pacer_record_format(l->rec, &l->len))) {
            errors++; /* out of memory: this record is lost */
            continue;
        }
        if (fds[s] >= 0) {
            jbuf_raw(&out[s], l->text, l->len);
            jbuf_raw(&out[s], "\n", 1);
            lines[s]++;
        }
        if (l->stream == WRITER_RECORD && w->opts.on_record)
            w->opts.on_record(l->rec, l->text, l->len, w->opts.user_data);
    }
    for (int s = 0; s < 2; s++) {
        if (lines[s] && (out[s].failed || !write_all(fds[s], out[s].data, out[s].len)))
            errors += lines[s];
        jbuf_free(&out[s]);
    }
    return errors;
}

static void *writer_main(void *arg)
{
    writer *w = arg;
    clock_mark_internal_thread();
    const int64_t tick_gap = (int64_t)w->opts.tick_ms * 1000000;
    bool quiet = false; /* the last wake had nothing to write */
    pthread_mutex_lock(&w->mu);
    for (;;) {
        bool idle = quiet && !w->head;
        int64_t due = idle ? INT64_MAX : mono_now_ns() + (int64_t)WRITER_LATENCY_MS * 1000000;
        if (w->tick_due < due)
            due = w->tick_due;
        w->idle = idle;
        while (!w->stopping && !w->flush_requested && w->queued < WRITER_WAKE_BATCH && !(idle && w->head) &&
               w->tick_due >= due) {
            struct timespec at = timespec_at(due);
            int rc = due == INT64_MAX ? pthread_cond_wait(&w->wake, &w->mu)
                                      : pthread_cond_timedwait(&w->wake, &w->mu, &at);
            if (rc == ETIMEDOUT)
                break;
        }
        w->idle = false;
        wline *batch = w->head;
        uint64_t n = w->queued;
        w->head = w->tail = NULL;
        w->queued = 0;
        w->flush_requested = false;
        bool stopping = w->stopping;
        int64_t now = mono_now_ns();
        bool tick = tick_gap && !stopping && now >= w->tick_due;
        if (tick)
            w->tick_due = INT64_MAX; /* what writer_tick_at asks meanwhile stays */
        pthread_mutex_unlock(&w->mu);

        quiet = !batch;
        uint64_t errors = batch ? write_batch(w, batch) : 0;
        while (batch) {
            wline *next = batch->next;
            free(batch->text);
            pacer_record_free(batch->rec);
            free(batch);
            batch = next;
        }

        int64_t next_tick = INT64_MAX;
        if (tick) {
            next_tick = w->opts.on_tick(w->opts.tick_data);
            if (next_tick < now + tick_gap)
                next_tick = now + tick_gap;
        }

        pthread_mutex_lock(&w->mu);
        if (next_tick < w->tick_due)
            w->tick_due = next_tick;
        w->done += n;
        w->written += n - (errors > n ? n : errors);
        w->errors += errors;
        pthread_cond_broadcast(&w->done_cv);
        if (stopping && !w->head)
            break;
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

void writer_tick_at(writer *w, int64_t t_ns)
{
    if (!w->opts.tick_ms)
        return;
    pthread_mutex_lock(&w->mu);
    if (t_ns < w->tick_due) {
        w->tick_due = t_ns;
        pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&w->mu);
}

static int open_append(const char *path)
{
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

int writer_new(const writer_options *opts, writer **ret, const char **ret_path_failed)
{
    writer *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->opts = *opts;
    if (!w->opts.queue_limit)
        w->opts.queue_limit = 65536;
    if (!w->opts.on_tick)
        w->opts.tick_ms = 0;
    w->tick_due = w->opts.tick_ms ? mono_now_ns() + (int64_t)w->opts.tick_ms * 1000000 : INT64_MAX;
    int r;
    w->records_fd = w->events_fd = -1;
    if (opts->records_path && strcmp(opts->records_path, "-") == 0) {
        fflush(stdout);
        w->records_fd = STDOUT_FILENO;
    } else if (opts->records_path) {
        w->records_owned = true;
        w->records_fd = open_append(opts->records_path);
        if (w->records_fd < 0) {
            r = -errno;
            if (ret_path_failed)
                *ret_path_failed = opts->records_path;
            goto fail;
        }
    }
    if (opts->events_path) {
        w->events_fd = open_append(opts->events_path);
        if (w->events_fd < 0) {
            r = -errno;
            if (ret_path_failed)
                *ret_path_failed = opts->events_path;
            goto fail;
        }
    }
    pthread_mutex_init(&w->mu, NULL);
    cond_init_monotonic(&w->wake);
    pthread_cond_init(&w->done_cv, NULL);
    r = thread_start(&w->thread, "pacer-writer", writer_main, w);
    if (r < 0) {
        pthread_cond_destroy(&w->wake);
        pthread_cond_destroy(&w->done_cv);
        pthread_mutex_destroy(&w->mu);
        goto fail;
    }
    *ret = w;
    return 0;
fail:
    if (w->records_owned && w->records_fd >= 0)
        close(w->records_fd);
    if (w->events_fd >= 0)
        close(w->events_fd);
    free(w);
    return r;
}

void writer_free(writer *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    if (w->records_owned)
        close(w->records_fd);
    if (w->events_fd >= 0)
        close(w->events_fd);
    pthread_cond_destroy(&w->wake);
    pthread_cond_destroy(&w->done_cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

static bool push(writer *w, writer_stream stream, pacer_record *rec, char *line, size_t len)
{
    wline *l = malloc(sizeof(*l));
    if (!l) {
        free(line);
        pacer_record_free(rec);
        pthread_mutex_lock(&w->mu);
        w->dropped++;
        pthread_mutex_unlock(&w->mu);
        return false;
    }
    l->next = NULL;
    l->stream = stream;
    l->rec = rec;
    l->len = len;
    l->text = line;
    pthread_mutex_lock(&w->mu);
    if (w->stopping || w->queued >= w->opts.queue_limit) {
        w->dropped++;
        pthread_mutex_unlock(&w->mu);
        free(line);
        pacer_record_free(rec);
        free(l);
        return false;
    }
    if (w->tail)
        w->tail->next = l;
    else
        w->head = l;
    w->tail = l;
    w->queued++;
    w->pushed++;
    if (w->queued == WRITER_WAKE_BATCH || w->idle) {
        w->idle = false;
        pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&w->mu);
    return true;
}

bool writer_push(writer *w, writer_stream stream, char *line, size_t len)
{
    return push(w, stream, NULL, line, len);
}

bool writer_push_record(writer *w, pacer_record *rec)
{
    return push(w, WRITER_RECORD, rec, NULL, 0);
}

void writer_flush(writer *w)
{
    pthread_mutex_lock(&w->mu);
    uint64_t target = w->pushed;
    if (w->done < target) {
        w->flush_requested = true;
        pthread_cond_signal(&w->wake);
    }
    while (w->done < target)
        pthread_cond_wait(&w->done_cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

void writer_get_stats(writer *w, writer_stats *ret)
{
    pthread_mutex_lock(&w->mu);
    ret->written = w->written;
    ret->dropped = w->dropped;
    ret->errors = w->errors;
    pthread_mutex_unlock(&w->mu);
}
