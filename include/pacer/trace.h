/* Reading pacer traces: the API of the trace file component (src/tracefile),
 * which the CLI's `pacer trace report/export`, the tests and the fuzzer use.
 * Built as libpacer-trace-read (static, not installed); the runtime that
 * writes the files (libpacer-trace) has no part in it.
 *
 *   reader.c    one .ptrace file -> a stream of events (bounded memory)
 *   calltree.c  events -> calls (begin/end), with longjmp and filters
 *   recording.c a recording directory: its processes, opened in turn
 *   report.c, export_chrome.c, export_perfetto.c, export_folded.c
 *
 * The files' format is in trace_format.h; addresses are named by the
 * symbolizer (symbols.h, libpacer-symbols).
 *
 * Errors: functions return negative errno; the human-readable reason is in
 * the object's error text (pt_reader_error), naming the file and what is
 * wrong. Nothing here prints except the report and exporters, to their FILE.
 */
#ifndef PACER_TRACE_H
#define PACER_TRACE_H

#include <pacer/symbols.h>
#include <pacer/trace_format.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- reader.c ---- */
typedef struct pt_reader pt_reader;

enum pt_event_kind {
    PT_EV_ENTER = 1,
    PT_EV_EXIT,
    PT_EV_LONGJMP, /* sp = the target frame's sp */
    PT_EV_LOST,    /* count events were dropped on tid */
    PT_EV_THREAD,  /* tid is named name[0..name_len) */
};

typedef struct pt_event {
    int kind;
    uint32_t tid;
    uint64_t ns;    /* CLOCK_MONOTONIC ns (ENTER, EXIT, LONGJMP) */
    uint64_t addr;  /* function address (ENTER; EXIT in version 1 files, 0 in
                       version 2: the exit of the innermost open call) */
    uint64_t sp;    /* sp field (ENTER, LONGJMP) */
    uint64_t count; /* LOST */
    bool gap;       /* LOST: dropped mid-call; the thread's open calls end here */
    const char *name; /* THREAD; valid until the next call */
    size_t name_len;
} pt_event;

/* Opens a trace file / a trace held in memory (not copied; must outlive the
 * reader). 0 and *ret, or -errno with the reason in err. */
int pt_reader_open_file(const char *path, pt_reader **ret, char *err, size_t errlen);
int pt_reader_open_mem(const void *data, size_t size, pt_reader **ret, char *err, size_t errlen);
void pt_reader_free(pt_reader *r);

/* Next event: 1 with *ev filled, 0 at the end, -errno on damage (reason in
 * pt_reader_error). Events of one thread come in order. */
int pt_reader_next(pt_reader *r, pt_event *ev);
const char *pt_reader_error(const pt_reader *r);
const struct pt_file_header *pt_reader_header(const pt_reader *r);
/* After the end: whether the writer finished cleanly (END record). */
bool pt_reader_complete(const pt_reader *r);
uint64_t pt_reader_event_count(const pt_reader *r);

/* ---- calltree.c ---- */
typedef struct pt_frame {
    uint64_t addr;
    const pt_sym *sym;  /* NULL when the tree has no symbols */
    uint64_t begin_ns;
    uint64_t end_ns;    /* valid in on_end */
    uint64_t child_ns;  /* time in shown callees (valid in on_end) */
    uint64_t sp;
    uint32_t depth;     /* depth among shown frames, 0 = outermost */
    uint32_t user;      /* for the consumer (e.g. a stack node id) */
    bool shown;         /* reported through on_begin/on_end */
    bool in_scope;      /* --filter matched here or above */
    bool unwound;       /* ended by longjmp or by the end of the trace */
} pt_frame;

typedef struct pt_thread_info {
    uint32_t pid, tid;
    const char *name;   /* may change until the end; never NULL */
} pt_thread_info;

typedef struct pt_tree_ops {
    /* stack[0..n) are the shown frames, outermost first; stack[n-1] is the
     * frame that begins / ends. */
    void (*on_begin)(void *ud, const pt_thread_info *t, pt_frame *const *stack, size_t n);
    void (*on_end)(void *ud, const pt_thread_info *t, pt_frame *const *stack, size_t n);
    void (*on_lost)(void *ud, const pt_thread_info *t, uint64_t count);
} pt_tree_ops;

typedef struct pt_tree_options {
    const char *filter;  /* fnmatch pattern: show matching calls and their callees; NULL = all */
    uint32_t max_depth;  /* 0 = unlimited */
    uint64_t min_ns;     /* hide calls shorter than this */
} pt_tree_options;

/* Reads every event of r and reports calls through ops. syms may be NULL
 * (then --filter cannot match and frames carry no symbol). Returns 0 or
 * the reader's -errno. */
int pt_tree_run(pt_reader *r, pt_symbols *syms, const pt_tree_options *opt,
                const pt_tree_ops *ops, void *ud);

/* ---- recording.c ---- */
/* The processes of a recording directory: NAME.ptrace files, sorted by
 * name. Returns the count (>= 0) and a NULL-terminated array of base paths
 * (DIR/NAME, without extension) in *ret, or -errno (err filled). */
int pt_recording_list(const char *dir, char ***ret, char *err, size_t errlen);
void pt_recording_list_free(char **list);

typedef struct pt_walk_stats {
    uint64_t events;     /* events decoded */
    uint64_t bytes;      /* size of the .ptrace files */
    unsigned processes;
    unsigned incomplete; /* files whose writer did not finish (killed) */
} pt_walk_stats;

/* Runs every process of the recording through pt_tree_run, with its
 * symbols; on_process (may be NULL) is told before each one. 0 or -errno
 * (err filled). */
int pt_recording_walk(const char *dir, const pt_tree_options *opt, const pt_tree_ops *ops,
                      void (*on_process)(void *ud, const struct pt_file_header *h), void *ud,
                      pt_walk_stats *st, char *err, size_t errlen);

/* ---- report.c / export_*.c ---- */
typedef struct pt_output_options {
    pt_tree_options tree;
    unsigned top;        /* report: rows per table (0 = 20) */
} pt_output_options;

/* Each takes the recording directory and writes to out. 0, or -errno with
 * the reason in err. */
int pt_report(const char *dir, const pt_output_options *opt, FILE *out, char *err, size_t errlen);
int pt_export_chrome(const char *dir, const pt_output_options *opt, FILE *out, char *err, size_t errlen);
int pt_export_perfetto(const char *dir, const pt_output_options *opt, FILE *out, char *err, size_t errlen);
int pt_export_folded(const char *dir, const pt_output_options *opt, FILE *out, char *err, size_t errlen);

#endif
