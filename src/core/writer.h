/* The record writer: a background thread that appends queued lines to the
 * output files, so producers never block on I/O. See writer.c. */
#ifndef PACER_CORE_WRITER_H
#define PACER_CORE_WRITER_H

#include <pacer/record.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct writer writer;

typedef enum writer_stream {
    WRITER_RECORD = 0, /* to the records file and the record callback */
    WRITER_EVENT,      /* to the raw events file */
} writer_stream;

/* A record written (line: its JSON text), on the writer thread. */
typedef void (*writer_record_fn)(const pacer_record *rec, const char *line, size_t len, void *user_data);
/* The tick, on the writer thread, without the queue's lock: returns when
 * it is next due (CLOCK_MONOTONIC ns; INT64_MAX: not until writer_tick_at
 * asks for it). */
typedef int64_t (*writer_tick_fn)(void *user_data);

typedef struct writer_options {
    const char *records_path;   /* "-" = stdout, NULL = none */
    const char *events_path;    /* NULL = none */
    writer_record_fn on_record; /* called on the writer thread for each record */
    void *user_data;
    writer_tick_fn on_tick;     /* called on the writer thread when due */
    void *tick_data;
    unsigned tick_ms;           /* 0 = no tick; else the first is due tick_ms after the start, and ticks come at
                                 * least tick_ms apart */
    size_t queue_limit;         /* lines waiting; beyond, new lines are dropped */
} writer_options;

/* Opens the files (append) and starts the thread. Returns 0 or -errno, with
 * *ret_path_failed naming the file that could not be opened. */
int writer_new(const writer_options *opts, writer **ret, const char **ret_path_failed);

/* Stops the thread after writing everything queued, closes the files. */
void writer_free(writer *w);

/* Queues a line (without newline), taking ownership of the malloc'd `line`.
 * Never blocks on I/O; returns false (and frees the line) when the queue is
 * full or the writer is stopping. */
bool writer_push(writer *w, writer_stream stream, char *line, size_t len);

/* Queues a record, taking ownership; the writer thread formats it. Same
 * rules as writer_push. */
bool writer_push_record(writer *w, pacer_record *rec);

/* Brings the next tick forward to t_ns (CLOCK_MONOTONIC) when it was due
 * later (or not at all); any thread. Nothing when there is no tick. */
void writer_tick_at(writer *w, int64_t t_ns);

/* Waits until every line pushed before the call has been written. Must not
 * be called from the writer thread (a tick callback). */
void writer_flush(writer *w);

typedef struct writer_stats {
    uint64_t written;
    uint64_t dropped;
    uint64_t errors;
} writer_stats;

void writer_get_stats(writer *w, writer_stats *ret);

#endif
