/* A run's records as a timeline (timeline.c), written as a Chrome trace
 * (JSON) or a Perfetto trace (protobuf) for `pacer export`.
 *
 * Model: processes (one per app run: app, version, session, pid) hold
 * tracks; a track holds slices that never overlap except by nesting (a
 * child lies inside its parent), which both formats require. Which records
 * become which slices is timeline.c's; the writers only walk the model.
 */
#ifndef PACER_CLI_TIMELINE_H
#define PACER_CLI_TIMELINE_H

#include <pacer/record.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TL_MAX_ARGS 10

typedef struct tl_arg {
    const char *key;  /* static text */
    char type;        /* 's' string, 'i' integer, 'd' double, 'b' bool */
    char *s;
    int64_t i;
    double d;
} tl_arg;

typedef struct tl_slice {
    size_t track;
    int64_t start_ns, end_ns; /* unix ns */
    int depth;                /* 0: a top slice; 1: inside the previous top slice of its track */
    char *name;
    const char *category;     /* "page", "startup", "request", "jank" */
    size_t n_args;
    tl_arg args[TL_MAX_ARGS];
} tl_slice;

typedef struct tl_track {
    size_t process;
    char *name;
    int64_t busy_until; /* end of its last top slice: a lane is free after it */
    int sort;           /* order among the process's tracks */
} tl_track;

typedef struct tl_process {
    char *name;  /* "shop 1.0 (pid 4242, session b8385…)" */
    char *key;   /* app \x1f version \x1f session \x1f pid */
    int64_t pid;
} tl_process;

typedef struct timeline {
    tl_process *processes;
    size_t n_processes;
    tl_track *tracks;
    size_t n_tracks;
    tl_slice *slices;
    size_t n_slices;
    bool oom;
    size_t skipped; /* records of a type without a place on the timeline */
} timeline;

/* Adds one record: a page load (its initial draw, API load and final
 * draw), a start-up (its phases as a waterfall), a request, a jank. Other
 * types are counted in tl->skipped. */
void timeline_add(timeline *tl, const pacer_record *r);

/* Sorts the slices per track, parents before their children. */
void timeline_finish(timeline *tl);
void timeline_free(timeline *tl);

/* Writers; 0 or -EIO (write error) / -ENOMEM. */
int timeline_write_chrome(const timeline *tl, FILE *out);
int timeline_write_perfetto(const timeline *tl, FILE *out);

#endif
