/* pacerd's storage on SQLite: raw records, rollups, batch ids, configs.
 *
 * One file in WAL mode. All writes go through one writer thread, which
 * group-commits: it takes every job queued since its last commit, runs them
 * in one transaction, commits, and only then wakes their submitters. A job
 * that returns 0 is therefore durable against a crash of pacerd (SIGKILL):
 * WAL with synchronous=NORMAL loses committed transactions only on an OS
 * crash or power loss. (--sync full makes every commit durable against those
 * too, at the cost of an fsync per group.)
 *
 * Idempotency: a job with a batch id first inserts (app, batch id) into
 * `batches`, in the same transaction as its records; when the row exists
 * already, the job stores nothing and reports a duplicate. A batch is thus
 * stored once however often it is retried, and never half.
 *
 * Rollups: every record with a rollup kind adds to its group
 * (kind, app, version, name, UTC day): a count, a failed count and one
 * DDSketch per metric. The writer keeps groups it touched in memory (loaded
 * from the file on first touch) and writes the changed ones in batches, at
 * most rollup_lag_ms (or ~32 000 records) after their records committed,
 * together with a mark: the last record the rollups hold. Records after
 * the mark are committed raw rows like any other; store_scan reads them
 * from the raw table, so answers are exact whatever the lag, and a restart
 * (or a failed transaction) rebuilds the groups from the file.
 *
 * Reads use a pool of read-only connections and never wait for the writer.
 * Every value reaches SQL through a bound parameter.
 */
#ifndef PACER_SERVER_STORE_H
#define PACER_SERVER_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sketch.h"

#define STORE_MAX_METRICS 5
#define STORE_MAX_COLS 24
#define STORE_DAY_NS (86400LL * 1000000000LL)

/* Raw tables. */
enum store_table { TABLE_PAGE_LOADS, TABLE_STARTUPS, TABLE_REQUESTS, TABLE_SPANS, TABLE_LOGS, TABLE_METRIC_POINTS,
                   TABLE_COUNT };

/* Rollup kinds: what a group's name is and which metrics it has. */
enum store_kind { KIND_PAGE, KIND_STARTUP, KIND_REQUEST, KIND_SPAN, KIND_COUNT, KIND_NONE = -1 };

typedef struct store_kind_desc {
    const char *name;                        /* "page", "startup", "request", "span" */
    size_t n_metrics;
    const char *metrics[STORE_MAX_METRICS];  /* "total_ms", … */
} store_kind_desc;

extern const store_kind_desc store_kinds[KIND_COUNT];

/* A value bound to one column. */
typedef struct store_value {
    enum { SV_NULL, SV_INT, SV_REAL, SV_TEXT, SV_BLOB } type;
    int64_t i;
    double d;
    const void *p; /* TEXT (NUL-terminated or with n) / BLOB */
    size_t n;
} store_value;

/* One record: a row of `table` (columns in the order of store_table_columns)
 * and, when kind != KIND_NONE, its contribution to a rollup group. Strings
 * are borrowed: they must live until the submit call returns. */
typedef struct store_record {
    enum store_table table;
    store_value cols[STORE_MAX_COLS];
    enum store_kind kind;
    const char *app, *version, *name;
    int64_t ts_ns;       /* its day is the rollup day */
    bool failed;
    bool excluded;       /* counted, but its metrics stay out of the sketches (outliers) */
    double metrics[STORE_MAX_METRICS]; /* NAN: absent */
} store_record;

/* The column list of a table, e.g. "app, version, session, ts, …", and how
 * many there are. */
const char *store_table_columns(enum store_table t, size_t *ret_n);

typedef struct store store;

typedef struct store_options {
    bool sync_full;          /* synchronous=FULL instead of NORMAL */
    size_t max_queued_items; /* records waiting for the writer before submits get -EAGAIN */
    size_t readers;          /* read connections */
    size_t rollup_lag_ms;    /* longest a committed record waits to be added to the rollups (0: none) */
} store_options;

/* Opens (creating when needed) the database and starts the writer thread.
 * Returns NULL with a message "PATH: reason" in err. */
store *store_open(const char *path, const store_options *opt, char *err, size_t err_size);
/* Finishes queued jobs, stops the writer, closes everything. Accepts NULL. */
void store_close(store *st);

/* Stores records atomically; blocks until committed. batch_id may be NULL
 * (no idempotency). Returns 0 (and *ret_duplicate tells whether the batch
 * had been stored before), -EAGAIN when the queue is full (answer 429),
 * -EIO when the transaction failed (nothing of it is stored), -ESHUTDOWN
 * when the store is closing. Any thread. */
int store_submit(store *st, const char *app, const char *batch_id, const char *endpoint, store_record *recs,
                 size_t n, size_t rejected, bool *ret_duplicate);

/* Writes and commits a probe row. 0 when the store is writable, else
 * negative errno. */
int store_probe(store *st);

/* Configs: versions per app, newest wins. put stores xml as a new version
 * (etag computed from the content) and returns it in ret_version. get
 * returns 0 with malloc'd xml and etag, -ENOENT when the app has none. */
int store_config_put(store *st, const char *app, const char *xml, size_t len, int64_t *ret_version);
int store_config_get(store *st, const char *app, char **ret_xml, size_t *ret_len, char **ret_etag,
                     int64_t *ret_version);

/* Rollup queries. from_ns/to_ns bound [from, to); pass INT64_MIN/INT64_MAX
 * for no bound. Days wholly inside the range are read from the rollups;
 * the part of a day that is cut by from or to is read from the raw rows, so
 * the answer is exact about the range. version NULL means all versions.
 * Callbacks run on the calling thread, in no particular order; they may be
 * called several times for one name (the caller merges). Returns 0 or
 * negative errno. */
typedef struct store_scan_cb {
    void (*count)(void *ctx, const char *name, uint64_t count, uint64_t failed);
    void (*sketch)(void *ctx, const char *name, size_t metric, const sketch *s);
    /* one raw record of a partial day: metrics[i] NAN when absent */
    void (*raw)(void *ctx, const char *name, bool failed, bool excluded, const double *metrics);
    void *ctx;
} store_scan_cb;

int store_scan(store *st, enum store_kind kind, const char *app, const char *version, int64_t from_ns,
               int64_t to_ns, const store_scan_cb *cb);

/* Every (app, version) that has rollups, sorted. */
int store_apps(store *st, void (*cb)(void *ctx, const char *app, const char *version), void *ctx);

#endif
