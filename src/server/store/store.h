/* pacerd's storage. Two backends serve this interface (store.c hands each
 * call to the one that opened the store): SQLite, described here, and
 * ClickHouse, for several pacerd instances sharing one database
 * (ch_store.c: its schema, and how batches stay exactly once
 * without a single writer). Both give the same answers on the same data.
 *
 * On SQLite: raw records (each resource and scope once,
 * rows naming them by id), rollups, the indexes the read APIs use, batch
 * ids, configs.
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

#include <pacer/base/json.h>
#include <pacer/schema.h>

#include <pacer/base/latency.h>
#include "sketch.h"

#define STORE_MAX_METRICS 8
#define STORE_MAX_COLS 40
#define STORE_MAX_FIELDS 32 /* fields of one record type */
#define STORE_DAY_NS (86400LL * 1000000000LL)

/* Raw tables. */
enum store_table { TABLE_PAGE_LOADS, TABLE_STARTUPS, TABLE_REQUESTS, TABLE_SPANS, TABLE_LOGS, TABLE_METRIC_POINTS,
                   TABLE_COUNT };

/* Rollup kinds: what a group's name is and which metrics it has. */
enum store_kind { KIND_PAGE, KIND_STARTUP, KIND_REQUEST, KIND_SPAN, KIND_COUNT, KIND_NONE = -1 };

/* ---- the rows (store_layout.c) ----
 *
 * One definition of every raw table's columns, shared by the store (its
 * CREATE TABLE, INSERT and SELECT texts) and by ingest (which fills
 * store_record.cols in this order). The tables of pacer's record types
 * come from the record schema (include/pacer/schema.h):
 *
 *   the common fields that have a column (ts, app, version, session)
 *   + the type's fields that have a column, in schema order
 *   + pattern: the folded URL, when a URL field names the rollup group
 *   + failed, trace_id, span_id, extra (the other attributes, OTLP JSON)
 *
 * and the rollup kind of such a table from the same fields: its metrics
 * are the METRIC fields, its group name the NAME fields joined by ' ' (a
 * URL field by its pattern). The generic tables (spans, logs,
 * metric_points) are the server's own: the common columns, then theirs.
 * NOT NULL: app and ts (ingest always has them) and the NAME fields
 * (ingest rejects a record without them). Column names never change
 * (files of older versions keep working); the order of a table's columns
 * is that of new files. */

/* Where ingest takes a column's value from. */
enum store_source {
    SRC_COMMON,  /* a common field (index: PACER_COMMON_*): the resource, the item's time */
    SRC_FIELD,   /* a field of the record type (index: in its shape): attrs[] */
    SRC_PATTERN, /* urlfold() of the URL column `index` */
    SRC_FAILED,
    SRC_TRACE_ID,
    SRC_SPAN_ID,
    SRC_EXTRA,   /* the attributes no column took */
    /* spans (and the span columns of record tables) */
    SRC_END_TS, SRC_SPAN_NAME, SRC_SPAN_KIND, SRC_STATUS_CODE, SRC_STATUS_MESSAGE, SRC_PARENT_SPAN_ID, SRC_SCOPE,
    SRC_TRACE_STATE,
    SRC_EVENTS,  /* span events, OTLP JSON */
    SRC_LINKS,   /* span links, OTLP JSON */
    /* logs */
    SRC_LOG_TYPE, SRC_SEVERITY_NUMBER, SRC_SEVERITY_TEXT, SRC_BODY, SRC_OBSERVED_TS, SRC_EVENT_NAME,
    SRC_BODY_ANY, /* the body as an AnyValue (OTLP JSON) when it is not a string; NULL otherwise */
    /* metric points */
    SRC_METRIC_NAME, SRC_METRIC_TYPE, SRC_UNIT, SRC_VALUE, SRC_COUNT, SRC_DESCRIPTION, SRC_START_TS,
    SRC_TEMPORALITY, SRC_MONOTONIC, SRC_INT_VALUE, SRC_SUM, SRC_MIN, SRC_MAX,
    SRC_DATA,      /* histogram buckets and bounds, exponential buckets, summary quantiles: OTLP JSON */
    SRC_EXEMPLARS, /* OTLP JSON */
    /* any item */
    SRC_ATTRIBUTES, /* every attribute of the item, OTLP JSON */
    SRC_FLAGS,
    SRC_DROPPED,     /* counts of what the sender dropped, JSON; NULL when none */
    SRC_RESOURCE_ID, /* filled by the store from store_record.resource (table resources) */
    SRC_SCOPE_ID,    /* from store_record.scope (table scopes) */
};

#define STORE_MAX_ATTRS 3
#define STORE_MAX_NAME_COLS 4

typedef struct store_column {
    const char *name;
    const char *decl; /* SQL type and constraint, e.g. "TEXT NOT NULL" */
    enum store_source source;
    long index;
    const pacer_field *field; /* SRC_COMMON, SRC_FIELD: the schema's field */
    /* SRC_FIELD: the attributes that carry the value, first wins:
     * pacer.<name>, the schema's semantic convention, a fallback */
    size_t n_attrs;
    const char *attrs[STORE_MAX_ATTRS];
    size_t attr_lens[STORE_MAX_ATTRS];
} store_column;

typedef struct store_table_desc {
    const char *name;
    const pacer_record_type *type; /* the record type of its rows, or NULL (a generic table) */
    enum store_kind kind;          /* its rollup kind, or KIND_NONE */
    size_t n_cols;
    store_column cols[STORE_MAX_COLS];
    int field_cols[STORE_MAX_FIELDS]; /* the column of each field of type, or -1 */
    size_t n_attr_cols;
    int attr_cols[STORE_MAX_COLS];    /* the columns that read attributes (n_attrs > 0), in order */
    const char *columns;              /* the column names, "ts, app, …" */
} store_table_desc;

typedef struct store_kind_desc {
    const char *name; /* "page", "startup", "request", "span": rollup_counts.kind */
    enum store_table table;
    size_t n_metrics;
    const char *metrics[STORE_MAX_METRICS]; /* "total_ms", … */
    const pacer_field *metric_fields[STORE_MAX_METRICS]; /* each one's field: its unit and meaning */
    int metric_cols[STORE_MAX_METRICS];     /* each metric's column, or -1 (computed: a span's duration) */
    size_t n_name_cols;
    int name_cols[STORE_MAX_NAME_COLS]; /* the columns the group name joins, with ' ' */
    int excluded_col; /* a bool column: true keeps the record's metrics out of the sketches; -1: none */
    /* SQL expressions over a raw row */
    const char *name_sql, *excluded_sql, *metrics_sql;
} store_kind_desc;

/* The descriptions, built from the schema on first use (once, whichever
 * thread asks first); read-only after. */
const store_table_desc *store_layout_table(enum store_table t);
const store_kind_desc *store_layout_kind(enum store_kind k);

/* The column list of a table, e.g. "ts, app, version, session, …" (the
 * order of store_record.cols), and how many there are. */
const char *store_layout_columns(enum store_table t, size_t *ret_n);

/* The layout index of the column of table t whose source is src (for a
 * common field or a record field: index, the field's index; else -1),
 * or -1 when the table has none. */
int store_layout_col(enum store_table t, enum store_source src, long index);

/* NULL when the schema fits the store's limits (STORE_MAX_*), else what
 * does not. Each backend checks it when it opens a store. */
const char *store_layout_error(void);

/* A value bound to one column. */
typedef struct store_value {
    enum { SV_NULL, SV_INT, SV_REAL, SV_TEXT, SV_BLOB } type;
    union {
        int64_t i;
        double d;
        const void *p; /* TEXT (NUL-terminated or with n) / BLOB */
    };
    size_t n;
} store_value;

/* One record: a row of `table` (columns in the order of store_layout_columns)
 * and, when kind != KIND_NONE, its contribution to a rollup group. Strings
 * are borrowed: they must live until the submit call returns. */
/* A resource or an instrumentation scope, as OTLP JSON; the store keeps
 * each distinct one once (tables resources, scopes) and the rows its id. */
typedef struct store_origin {
    const char *json;
    uint64_t hash; /* of json */
} store_origin;

typedef struct store_record {
    enum store_table table;
    const store_origin *resource, *scope; /* or NULL */
    store_value cols[STORE_MAX_COLS];
    enum store_kind kind;
    const char *app, *version, *name;
    int64_t ts_ns;       /* its day is the rollup day */
    bool failed;
    bool excluded;       /* counted, but its metrics stay out of the sketches (outliers) */
    double metrics[STORE_MAX_METRICS]; /* NAN: absent */
} store_record;

typedef struct store store;

typedef struct store_options {
    bool sync_full;          /* synchronous=FULL instead of NORMAL */
    size_t max_queued_items; /* records waiting for the writer before submits get -EAGAIN */
    size_t readers;          /* read connections */
    size_t rollup_lag_ms;    /* longest a committed record waits to be added to the rollups (0: none) */
    /* SQLite (sqlite_store.c): days of raw records kept (0: all): the partitions of older UTC days
     * are dropped, with the sub-day rollups; days of the daily rollups
     * kept (0: all, else at least retention_days) */
    unsigned retention_days, rollup_retention_days;
    /* records of pacer's record tables that wait in commit order before
     * they are sealed into blocks (0: 32768) */
    size_t seal_rows;
    /* records of a day from which the next day gets ten-minute rollups
     * (0: 500000) */
    size_t fine_day_rows;
    /* ClickHouse (ch_store.c), 0 for the defaults: the commit hour
     * consolidated into the rollups (3600 s), the span of level 2 (86400),
     * how long after an hour ends it is (360; an attempt commits within
     * half of it or not at all), writer threads (2) */
    unsigned clickhouse_unit_s, clickhouse_day_s, clickhouse_settle_s, clickhouse_writers;
    unsigned clickhouse_retention_days; /* ClickHouse: drop what was received this many days ago (0: keep) */
    /* ClickHouse: how long a commit may wait for requests on their way
     * (store_coming), to insert them together (0: never) */
    unsigned clickhouse_gather_ms;
    /* ClickHouse: the threads that may submit at once (the HTTP workers;
     * 0: unknown): once that many jobs are in, none else can come */
    unsigned submitters;
    /* where failures of the store are told, one line each, no newline
     * (NULL: nowhere); called from any of the store's threads */
    void (*log)(void *ctx, const char *msg);
    void *log_ctx;
} store_options;

/* A store is opened by its backend (store/sqlite/sqlite_store.h,
 * store/clickhouse/ch_store.h); everything else goes through
 * this interface. */
/* The backend that serves the store: "sqlite" or "clickhouse". */
const char *store_backend_name(store *st);
/* Finishes queued jobs, stops the writer, closes everything. Accepts NULL. */
void store_close(store *st);

/* A record counted by reason with its batch: kept out of the store by
 * the layer above (it is not among the batch's records), or stored and
 * counted (ingest's cleaning counts: docs/server.md, "Cleaning"). */
typedef struct store_tally {
    const char *reason; /* the counts are kept per (app, reason) */
    int64_t ts_ns;      /* the record's time */
} store_tally;

/* One ingest batch. Strings are borrowed: they must live until the
 * submit returns. */
typedef struct store_batch {
    const char *app;
    const char *batch_id; /* or NULL: no idempotency */
    const char *endpoint; /* the route it came by: /v1/traces, … */
    store_record *recs;   /* the records to store */
    size_t n;
    const store_tally *tallies;
    size_t n_tallies;
    size_t items;    /* the records the batch carried, those kept out included (for the batches' log) */
    size_t rejected; /* items refused before they became records */
} store_batch;

/* Stores a batch's records and tallies atomically; blocks until
 * committed. Returns 0 (and *ret_duplicate tells whether the batch had
 * been stored before: then nothing of it is stored or counted again),
 * -EAGAIN when the queue is full (answer 429), -EIO when the transaction
 * failed (nothing of it is stored), -ESHUTDOWN when the store is closing.
 * Any thread. */
int store_submit(store *st, const store_batch *b, bool *ret_duplicate);

/* The tallies (store_tally) per reason, sorted by reason, to cb: the
 * records counted and the latest time of one (ns; 0 when not kept), of
 * app, or of every app since the store was made (NULL: answered from
 * memory where the backend can, for /metrics). 0 or negative errno. */
int store_tallies(store *st, const char *app,
                  void (*cb)(void *ctx, const char *reason, uint64_t count, int64_t last_ns), void *ctx);
/* A request on its way to store_submit (+1, when its handler starts) or
 * no longer (-1: just before it submits, or when it fails first). A
 * backend whose commits are dear waits for those before it commits
 * (ClickHouse: --clickhouse-gather); SQLite ignores it. Any thread. */
void store_coming(store *st, int delta);

/* ---- health and figures (health.c) ----
 *
 * The health says whether an ingest batch can commit. Every write
 * transaction and every read reports its outcome. A failed write makes
 * the writes fail until a batch, or the probe, commits — with room for one
 * more batch on the database's file system (SQLite) —, whatever else
 * commits meanwhile. A failure is classified by its cause (SQLite's code
 * and the system's errno) and logged once, through store_options.log,
 * when it starts (and when its cause changes) and once when writes
 * succeed again; corruption, once seen, stays reported until pacerd
 * restarts. */
enum store_fault { STORE_OK, STORE_DISK_FULL, STORE_READ_ONLY, STORE_CORRUPT, STORE_IO, STORE_STUCK,
                   STORE_FAULT_COUNT };

typedef struct store_health {
    enum store_fault fault;
    char reason[512];   /* what failed and why; "" when ok */
    int64_t since_ns;   /* wall time of the first failure of this kind in a row; 0 when ok */
} store_health;

/* The store's state now. Answers at once from what the last transactions
 * and reads found; when nothing was committed in the last second, or the
 * writes fail, a probe is committed (SQLite: a row by the writer, then
 * room for a batch reserved; ClickHouse: a row inserted into `probes`)
 * and this waits for it at most wait_ms (SQLite, longer: STORE_STUCK;
 * ClickHouse: at least 200 ms; wait_ms 0 there: no probe). Any thread. */
void store_health_get(store *st, unsigned wait_ms, store_health *ret);

typedef struct store_stats {
    uint64_t transactions, transaction_failures, read_failures;
    uint64_t failures[STORE_FAULT_COUNT]; /* failed transactions and reads, by cause */
    uint64_t rows[TABLE_COUNT];           /* rows committed, by table */
    uint64_t duplicates;                  /* batches already stored, answered without storing */
    latency transaction;                  /* BEGIN to COMMIT */
    latency submit;                       /* store_submit: queued to committed, as its caller waits */
    size_t queued_items;
    int64_t db_bytes, wal_bytes, disk_free_bytes; /* -1 when unknown */
} store_stats;

void store_get_stats(store *st, store_stats *ret);

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
    /* optional: a sketch as sketch_encode wrote it, instead of `sketch`
     * (the caller merges it with sketch_merge_encoded); 0, or negative
     * errno (the scan stops with it). A store may still call `sketch`. */
    int (*sketch_encoded)(void *ctx, const char *name, size_t metric, const uint8_t *buf, size_t len);
    void *ctx;
} store_scan_cb;

int store_scan(store *st, enum store_kind kind, const char *app, const char *version, int64_t from_ns,
               int64_t to_ns, const store_scan_cb *cb);

/* ---- reading rows back (sqlite_query.c) ----
 *
 * Every answer is JSON written into a jbuf, bounded: at most `limit` items
 * and about STORE_MAX_ANSWER bytes, and at most STORE_MAX_EXAMINED rows
 * looked at per call, so that a rare match over a large store still
 * answers at once (with a cursor to go on from). Items come newest first,
 * (ts, row) descending; a cursor "TS.ROW" names the last row examined: the
 * next page starts strictly after it. Each query reads through an index
 * (store_explain shows the plans); plain spans and the span rows of the
 * record tables that have not reached the rollup mark yet (at most one
 * rollup batch) are read by rowid range instead. */

#define STORE_MAX_ANSWER (4u << 20)
#define STORE_MAX_EXAMINED 20000

/* An attribute filter: key = value, the value given as text. It matches an
 * attribute of that key whose value writes as that text: a string of it,
 * or an integer, double or bool written canonically ("3" finds 3, 3.0 and
 * "3"; "true" finds true and "true"). */
typedef struct store_attr_filter {
    const char *key, *value;
} store_attr_filter;

#define STORE_MAX_FILTERS 8

typedef struct store_cursor {
    bool set;
    int64_t ts, row;
} store_cursor;

typedef struct store_span_query {
    const char *app;
    const char *version, *name;                /* or NULL */
    size_t n_attrs;
    store_attr_filter attrs[STORE_MAX_FILTERS];
    double min_ms, max_ms;                     /* duration range; NAN: none */
    int64_t from_ns, to_ns;                    /* [from, to) of the start */
    store_cursor after;
    size_t limit;
} store_span_query;

typedef struct store_log_query {
    const char *app;
    int min_severity;           /* 0: any */
    const char *text;           /* substring of the body (ASCII case ignored), or NULL */
    int64_t from_ns, to_ns;
    store_cursor after;
    size_t limit;
} store_log_query;

typedef struct store_point_query {
    const char *app;
    const char *name;
    size_t n_attrs;
    store_attr_filter attrs[STORE_MAX_FILTERS]; /* each must be among the point's attributes */
    int64_t from_ns, to_ns;
    store_cursor after;
    size_t limit;
} store_point_query;

/* Every span of the trace, from the tables of plain spans and of pacer's
 * records, oldest first, as {"spans":[…]} members written into out (inside
 * an open object): each span as OTLP JSON with its attributes (a record's
 * fields as pacer.<field>), events, links, resource and scope. 0, or
 * -EIO. *ret_n: spans written. */
int store_trace(store *st, const uint8_t trace_id[16], jbuf *out, size_t *ret_n);

/* Span search over plain spans (any OpenTelemetry SDK): writes "spans":[…]
 * and, when more may follow, "next":"CURSOR". */
int store_search_spans(store *st, const store_span_query *q, jbuf *out);
/* Log records: "logs":[…], "next". */
int store_search_logs(store *st, const store_log_query *q, jbuf *out);
/* Metric data points of one metric, histogram buckets included: "points":[…], "next". */
int store_search_points(store *st, const store_point_query *q, jbuf *out);

/* The query plan (EXPLAIN QUERY PLAN) of every statement the read APIs
 * use, one call per statement: its name, SQL text, and the plan's lines
 * joined by "; ". For tests. */
int store_explain(store *st, void (*cb)(void *ctx, const char *name, const char *sql, const char *plan), void *ctx);

/* Every (app, version) that has rollups, sorted. */
int store_apps(store *st, void (*cb)(void *ctx, const char *app, const char *version), void *ctx);

/* ---- the rows that came after a mark (the application layer's reads) ----
 *
 * Each backend keeps the order in which the rows of a table came and
 * names a place in it by a mark, a number that grows with that order:
 * SQLite, a record table's rowid or a log record's or data point's
 * position (store/sqlite/sqlite_marks.c); ClickHouse, the write mark
 * `ins`, read only once older than a read lag (store/clickhouse/
 * ch_marks.c). A reader (the analysis) keeps its own marks and reads
 * what came after them in bounded steps, whatever the store did with the
 * rows since (sealed them into blocks, merged parts): the same rows, in
 * the same order, after a restart too. Any thread. */

/* Which rows of a table: all, pacer's log records (jank, leak), pacer's
 * frames data points (pacer.frames.*), pacer's data points (pacer.*). */
enum store_filter { STORE_ROWS_ALL, STORE_ROWS_PACER_LOGS, STORE_ROWS_FRAMES, STORE_ROWS_PACER_POINTS };

/* The condition of a filter on its table's columns, as SQL both
 * backends take: "" or " AND …" (store_layout.c). */
const char *store_layout_filter_sql(enum store_filter f);

typedef struct store_mark_row {
    enum store_table table;
    int64_t mark; /* its place in the order rows came */
    store_value cols[STORE_MAX_COLS]; /* the columns asked for, at their layout index; others SV_NULL */
} store_mark_row;

/* The newest mark of each table that may be read now (0: none), all at
 * once: rows written together (a page load and its requests) are under
 * the marks together. 0 or negative errno. */
int store_marks_last(store *st, int64_t ret[TABLE_COUNT]);

/* The mark n rows of t (filter) after `from` and not after `to` (n > 0:
 * the n-th row's, or `to` when there are fewer), or about n rows before
 * `from` (n < 0; 0 at the most). */
int store_marks_step(store *st, enum store_table t, enum store_filter filter, int64_t from, int64_t to, long n,
                     int64_t *ret);

/* How many rows of t (filter) came after mark `after`: those up to
 * `last` (store_marks_last) and, where the backend holds rows back (a
 * read lag), those still held. */
int store_marks_behind(store *st, enum store_table t, enum store_filter filter, int64_t after, int64_t last,
                       int64_t *ret);

/* The rows of t with a mark in (after, upto] that match filter, in that
 * order, wherever they are kept; only the columns with want[c] are read
 * (borrowed until cb returns). cb returns false to stop. t: a record
 * table (filter STORE_ROWS_ALL), logs or metric points. 0 or -EIO,
 * -ENOMEM, -EBADMSG (a damaged block), -EINVAL. */
int store_rows_after(store *st, enum store_table t, enum store_filter filter, int64_t after, int64_t upto,
                     const bool want[STORE_MAX_COLS], bool (*cb)(void *ctx, const store_mark_row *row), void *ctx);

/* The readers are done with the rows of t up to mark upto: what the
 * backend keeps only to find them again may go (SQLite: the positions of
 * logs and metric points). 0 or negative errno. */
int store_marks_forget(store *st, enum store_table t, int64_t upto);

/* One raw row of a table: the columns of store_layout_columns, borrowed
 * until the callback returns. */
typedef struct store_row {
    enum store_table table;
    size_t n;
    store_value cols[STORE_MAX_COLS];
} store_row;

/* The rows of a rollup kind's table (TABLE_PAGE_LOADS, TABLE_STARTUPS) of
 * app and version, newest first (by ts), at most limit, among the newest
 * scan_max rows of the app (sqlite_samples.c). *ret_truncated: there may be
 * more. 0 or negative errno. */
int store_version_rows(store *st, enum store_table table, const char *app, const char *version, size_t limit,
                       size_t scan_max, void (*cb)(void *ctx, const store_row *row), void *ctx, bool *ret_truncated);

#endif
