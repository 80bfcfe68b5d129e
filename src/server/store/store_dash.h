/* The dashboard's reads beyond the percentiles (store_dash.c): single
 * records, per-pattern request figures, log records of one type, sums of
 * metric points per attribute value. One layer over one operation of the
 * backends, the newest rows of a range (store_newest_fn): the filtering,
 * grouping, sorting and counting are done here, once, so SQLite and
 * ClickHouse answer the same way. Each read is bounded by scan_max rows
 * of its range, newest first, and says when it reached that bound
 * (*ret_truncated). Any thread; callbacks run on the caller's thread with
 * values borrowed until they return. 0 or negative errno. */
#ifndef PACER_SERVER_STORE_DASH_H
#define PACER_SERVER_STORE_DASH_H

#include "store.h"

typedef struct store_rows_query {
    enum store_table table;    /* TABLE_PAGE_LOADS, TABLE_STARTUPS or TABLE_REQUESTS */
    const char *app;
    const char *version, *name; /* or NULL; name: the rollup group (page class, start-up kind, "GET /p") */
    int64_t from_ns, to_ns;     /* [from, to) of ts */
    int order_metric;           /* the kind's metric to sort by, largest first; -1: newest first */
    size_t limit, scan_max;
} store_rows_query;

/* The rows (every column of store_layout_columns) of the query, sorted. */
int store_dash_rows(store *st, const store_rows_query *q, void (*cb)(void *ctx, const store_row *row), void *ctx,
                    bool *ret_truncated);

typedef struct store_request_stat {
    const char *method, *pattern;
    uint64_t count, failed;
    uint64_t bytes_received, with_bytes, bytes_sent; /* with_bytes: requests whose bytes_received is known */
    uint64_t class_error, class_large_image, class_slow; /* requests with a pacer.classes value containing it */
} store_request_stat;

/* Per (method, pattern) of the requests in [from, to), sorted by them (a
 * missing method first). */
int store_dash_request_stats(store *st, const char *app, const char *version, int64_t from_ns, int64_t to_ns,
                             size_t scan_max, void (*cb)(void *ctx, const store_request_stat *s), void *ctx,
                             bool *ret_truncated);

typedef struct store_log_row {
    int64_t ts;
    const char *version, *session; /* may be NULL */
    const char *body;
    size_t body_len;
} store_log_row;

/* The log records of `type` (pacer.type: "jank", "leak") among the newest
 * scan_max of the app in [from, to), newest first. */
int store_dash_logs_of_type(store *st, const char *app, const char *version, const char *type, int64_t from_ns,
                            int64_t to_ns, size_t scan_max, void (*cb)(void *ctx, const store_log_row *row),
                            void *ctx, bool *ret_truncated);

#define STORE_DASH_MAX_ATTRS 4

/* For each metric of the NULL-terminated names: the sum of the values of
 * its newest scan_max points in [from, to) (of the version), grouped by
 * the first string values of the attributes attrs (NULL-terminated, 1 to
 * STORE_DASH_MAX_ATTRS), sorted by them in order (a point without an
 * attribute, whose group gives "" for it, before one with any value),
 * with the number of points. */
int store_dash_metric_sums(store *st, const char *app, const char *version, const char *const *names,
                           const char *const *attrs, int64_t from_ns, int64_t to_ns, size_t scan_max,
                           void (*cb)(void *ctx, const char *name, const char *const *groups, double sum,
                                      uint64_t points),
                           void *ctx, bool *ret_truncated);

/* The query plan of each statement the backend runs for them (as
 * store_explain): for tests. */
int store_dash_explain(store *st, void (*cb)(void *ctx, const char *name, const char *sql, const char *plan),
                       void *ctx);

/* ---- the backends' operation under them (store_backend.h) ---- */

typedef struct store_newest_query {
    enum store_table table;
    const char *app;
    int64_t from_ns, to_ns;     /* [from, to) of ts */
    const char *name, *version; /* metric points: equal to these (NULL: any), before the bound */
    size_t scan_max;
    const bool *want;           /* the columns to read (the others SV_NULL); NULL: all */
} store_newest_query;

/* The newest scan_max rows of the query, each once, to cb with its place
 * (of rows of the same ts, the larger is the newer): newest first for
 * logs and metric points, in no order for the record tables. cb returns
 * 0 to go on, or a negative errno that ends the read with it.
 * *ret_truncated: the range holds more. 0 or negative errno. */
typedef int store_newest_fn(store *st, const store_newest_query *q,
                            int (*cb)(void *ctx, const store_row *row, int64_t place), void *ctx, bool *ret_truncated);

#endif
