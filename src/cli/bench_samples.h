/* pacer bench: samples — per run, the value of every metric — and their
 * file format.
 *
 * A run is one process of the measured program (or, for a baseline read
 * from pacerd, one session of the version). Its metrics come from the
 * records it wrote (docs/records.md), named:
 *
 *   cold_ms, first_screen_ms, app_cost_ms, full_display_ms
 *                      the fields of the run's cold start flagged METRIC in
 *                      the schema (a start flagged outlier gives none)
 *   warm_ms, warm_ms[2], …   the first, second, … warm start
 *   PAGE.FIELD         a METRIC field of the first instance of page class
 *                      PAGE, e.g. ShopHomeWindow.total_ms
 *   PAGE[K].FIELD      of its K-th instance (K ≥ 2), in the order the
 *                      instances were created (the record's ts)
 *
 * A metric a run lacks (a page that did not report it) is NAN for that run.
 * Metrics are kept sorted: start-up first (schema order), then pages by
 * class, instance and field (schema order).
 *
 * The file (`pacer bench --save`, read by --baseline and --current):
 *
 *   {"pacer_bench": 1,
 *    "env": {"program": "…", "cpu_model": "…", "cpus": 2, "kernel": "…",
 *            "gtk": "4.8.3", "pacer": "0.1.0", "nice": 0, "source": "…"},
 *    "runs": [{"start": UNIX_NS, "wall_ms": …, "cpu_ms": …, "background": …,
 *              "load1": …, "cpu_mhz": …, "session": "…"}, …],
 *    "metrics": {"cold_ms": [693.3, 701.2, null, …], …}}
 *
 * Each metric holds one value (or null) per run, in run order. Every member
 * of env and of a run is optional; members the reader does not know are
 * skipped, so a newer pacer's file still reads.
 *
 * Nothing here is thread-safe.
 */
#ifndef PACER_CLI_BENCH_SAMPLES_H
#define PACER_CLI_BENCH_SAMPLES_H

#include <pacer/record.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The limits of one set (a file past them is refused, not truncated). */
#define BENCH_MAX_RUNS 100000
#define BENCH_MAX_METRICS 4096
#define BENCH_MAX_NAME 512

/* What is known about one run; NAN (0 for start, NULL for session) when not. */
typedef struct bench_run {
    int64_t start_ns;  /* wall clock at launch, unix ns */
    double wall_ms;    /* launch to the end of the run */
    double cpu_ms;     /* the program's user + system CPU time */
    double background; /* CPUs kept busy by other processes during the run, on average */
    double load1;      /* the 1-minute load average at the start */
    double cpu_mhz;    /* the mean CPU clock at the start */
    char *session;     /* the record's session (owned) */
} bench_run;

typedef struct bench_metric {
    char *name;
    double *v; /* n_runs values (capacity cap_runs of the set); NAN: absent */
} bench_metric;

typedef struct bench_env {
    char *program, *cpu_model, *kernel, *gtk, *pacer, *source; /* owned; NULL: unknown */
    long cpus;                                                 /* 0: unknown */
    long nice;                                                 /* the runs' niceness */
} bench_env;

typedef struct bench_set {
    bench_env env;
    size_t n_runs, cap_runs;
    bench_run *runs;
    size_t n_metrics, cap_metrics;
    bench_metric *metrics;
} bench_set;

/* The order of metrics (< 0, 0, > 0 as strcmp): start-up, then pages by
 * class, instance and field. */
int bench_metric_cmp(const char *a, const char *b);

/* A new, empty set; NULL on ENOMEM. bench_set_free accepts NULL. */
bench_set *bench_set_new(void);
void bench_set_free(bench_set *set);

/* Appends a run (its notes copied; every metric NAN for it). Returns its
 * index, or -ENOMEM / -E2BIG (BENCH_MAX_RUNS). */
long bench_set_add_run(bench_set *set, const bench_run *notes);

/* Sets metric `name` of run `run`, adding the metric when new. 0, -ENOMEM,
 * -E2BIG (BENCH_MAX_METRICS) or -EINVAL (a name that is empty, longer than
 * BENCH_MAX_NAME or holds a control character). */
int bench_set_put(bench_set *set, size_t run, const char *name, double v);

/* The metric called name, or NULL. */
const bench_metric *bench_set_find(const bench_set *set, const char *name);

/* The values m has (NANs left out), copied into out (n_runs doubles).
 * Returns how many. */
size_t bench_metric_values(const bench_set *set, const bench_metric *m, double *out);

/* Keeps only the metrics whose name matches one of the n shell patterns
 * (fnmatch); n = 0 keeps all. */
void bench_set_filter(bench_set *set, const char *const *patterns, size_t n);

/* A new set holding the runs `pick` (indexes into set->runs, n of them),
 * with set's environment. NULL on ENOMEM. */
bench_set *bench_set_pick(const bench_set *set, const size_t *pick, size_t n);

/* Sets an env string (copied; NULL clears it). 0 or -ENOMEM. */
int bench_env_set(char **slot, const char *value);

/* ---- one run's records → its metrics ---- */

typedef struct bench_collect bench_collect;

bench_collect *bench_collect_new(void);
void bench_collect_free(bench_collect *c);

/* Takes one record of the run: page and startup records count, others are
 * ignored. 0 or -ENOMEM. */
int bench_collect_record(bench_collect *c, const pacer_record *rec);

/* Writes what the records gave into run `run` of set, and empties c for
 * the next run. Returns how many values were put, or a negative errno. */
long bench_collect_finish(bench_collect *c, bench_set *set, size_t run);

/* ---- JSON ---- */

/* The set as the file's JSON text (with a final newline), malloc'd; NULL
 * on ENOMEM. */
char *bench_set_format(const bench_set *set, size_t *ret_len);

/* Reads the file's text: buf holds len bytes and room for one more (the
 * reader writes a NUL there and unescapes strings in place). Returns 0 and
 * the set in *ret, -EINVAL with a reason in err ("byte N: …" or the member
 * path, e.g. "metrics.cold_ms: 14 values for 15 runs"), or -ENOMEM. */
int bench_set_parse(char *buf, size_t len, bench_set **ret, char *err, size_t err_len);

/* Reads pacerd's answer to GET /api/v1/samples (docs/server.md): its
 * "records" are page and startup records (docs/records.md), grouped into
 * runs by session. Same contract as bench_set_parse. */
int bench_set_parse_server(char *buf, size_t len, bench_set **ret, char *err, size_t err_len);

/* Reads a whole file (at most max bytes) into a malloc'd buffer with one
 * spare byte. 0, -errno, or -EFBIG. */
int bench_read_file(const char *path, size_t max, char **ret_buf, size_t *ret_len);

#endif
