/* The store's backends (store.c dispatches store.h's calls to them).
 *
 * A backend's own struct begins with a pointer to its ops table, so that
 * store.c, which sees `store` as an incomplete type, finds the table of
 * any store it is given: every function of store.h but the layout's (which
 * is the same for all backends) goes through it. Each operation has the
 * contract of the store.h function of the same name.
 */
#ifndef PACER_SERVER_STORE_BACKEND_H
#define PACER_SERVER_STORE_BACKEND_H

#include "store.h"
#include "store_dash.h"

/* Each operation's type: the contract of the store.h function of the
 * same name. A backend declares its operations with them
 * (`store_scan_fn ch_read_scan;`). */
typedef void store_close_fn(store *st);
typedef int store_submit_fn(store *st, const store_batch *b, bool *ret_duplicate);
typedef int store_tallies_fn(store *st, const char *app,
                             void (*cb)(void *ctx, const char *reason, uint64_t count, int64_t last_ns), void *ctx);
typedef void store_coming_fn(store *st, int delta);
typedef void store_health_get_fn(store *st, unsigned wait_ms, store_health *ret);
typedef void store_get_stats_fn(store *st, store_stats *ret);
typedef int store_config_put_fn(store *st, const char *app, const char *xml, size_t len, int64_t *ret_version);
typedef int store_config_get_fn(store *st, const char *app, char **ret_xml, size_t *ret_len, char **ret_etag,
                                int64_t *ret_version);
typedef int store_scan_fn(store *st, enum store_kind kind, const char *app, const char *version, int64_t from_ns,
                          int64_t to_ns, const store_scan_cb *cb);
typedef int store_apps_fn(store *st, void (*cb)(void *ctx, const char *app, const char *version), void *ctx);
typedef int store_trace_fn(store *st, const uint8_t trace_id[16], jbuf *out, size_t *ret_n);
typedef int store_search_spans_fn(store *st, const store_span_query *q, jbuf *out);
typedef int store_search_logs_fn(store *st, const store_log_query *q, jbuf *out);
typedef int store_search_points_fn(store *st, const store_point_query *q, jbuf *out);
typedef int store_explain_fn(store *st, void (*cb)(void *ctx, const char *name, const char *sql, const char *plan),
                             void *ctx);
typedef int store_version_rows_fn(store *st, enum store_table table, const char *app, const char *version,
                                  size_t limit, size_t scan_max, void (*cb)(void *ctx, const store_row *row), void *ctx,
                                  bool *ret_truncated);
typedef int store_marks_last_fn(store *st, int64_t ret[TABLE_COUNT]);
typedef int store_marks_step_fn(store *st, enum store_table t, enum store_filter filter, int64_t from, int64_t to,
                                long n, int64_t *ret);
typedef int store_marks_behind_fn(store *st, enum store_table t, enum store_filter filter, int64_t after,
                                  int64_t last, int64_t *ret);
typedef int store_rows_after_fn(store *st, enum store_table t, enum store_filter filter, int64_t after, int64_t upto,
                                const bool want[STORE_MAX_COLS], bool (*cb)(void *ctx, const store_mark_row *row),
                                void *ctx);
typedef int store_marks_forget_fn(store *st, enum store_table t, int64_t upto);

typedef struct store_backend {
    const char *name; /* "sqlite", "clickhouse" */
    store_close_fn *close;
    store_submit_fn *submit;
    store_tallies_fn *tallies;
    store_coming_fn *coming; /* NULL: nothing to do */
    store_health_get_fn *health_get;
    store_get_stats_fn *get_stats;
    store_config_put_fn *config_api_put;
    store_config_get_fn *config_api_get;
    store_scan_fn *scan;
    store_apps_fn *apps;
    store_trace_fn *trace;
    store_search_spans_fn *search_spans;
    store_search_logs_fn *search_logs;
    store_search_points_fn *search_points;
    store_explain_fn *explain;
    store_version_rows_fn *version_rows;
    /* the rows after a mark */
    store_marks_last_fn *marks_last;
    store_marks_step_fn *marks_step;
    store_marks_behind_fn *marks_behind;
    store_rows_after_fn *rows_after;
    store_marks_forget_fn *marks_forget;
    /* under the dashboard's reads (store_dash.h) */
    store_newest_fn *newest;
    store_explain_fn *dash_explain;
} store_backend;

/* The backend of a store: every backend's struct starts with its table. */
static inline const store_backend *store_ops(store *st)
{
    return *(const store_backend *const *)(const void *)st;
}

#endif
