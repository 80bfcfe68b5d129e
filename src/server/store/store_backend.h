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

typedef struct store_backend {
    const char *name; /* "sqlite", "clickhouse" */
    void (*close)(store *st);
    int (*submit)(store *st, const store_batch *b, bool *ret_duplicate);
    int (*tallies)(store *st, const char *app,
                   void (*cb)(void *ctx, const char *reason, uint64_t count, int64_t last_ns), void *ctx);
    void (*coming)(store *st, int delta); /* NULL: nothing to do */
    void (*health_get)(store *st, unsigned wait_ms, store_health *ret);
    void (*get_stats)(store *st, store_stats *ret);
    int (*config_put)(store *st, const char *app, const char *xml, size_t len, int64_t *ret_version);
    int (*config_get)(store *st, const char *app, char **ret_xml, size_t *ret_len, char **ret_etag,
                      int64_t *ret_version);
    int (*scan)(store *st, enum store_kind kind, const char *app, const char *version, int64_t from_ns,
                int64_t to_ns, const store_scan_cb *cb);
    int (*apps)(store *st, void (*cb)(void *ctx, const char *app, const char *version), void *ctx);
    int (*trace)(store *st, const uint8_t trace_id[16], jbuf *out, size_t *ret_n);
    int (*search_spans)(store *st, const store_span_query *q, jbuf *out);
    int (*search_logs)(store *st, const store_log_query *q, jbuf *out);
    int (*search_points)(store *st, const store_point_query *q, jbuf *out);
    int (*explain)(store *st, void (*cb)(void *ctx, const char *name, const char *sql, const char *plan), void *ctx);
    int (*version_rows)(store *st, enum store_table table, const char *app, const char *version, size_t limit,
                        size_t scan_max, void (*cb)(void *ctx, const store_row *row), void *ctx,
                        bool *ret_truncated);
    /* the rows after a mark (store.h) */
    int (*marks_last)(store *st, int64_t ret[TABLE_COUNT]);
    int (*marks_step)(store *st, enum store_table t, enum store_filter filter, int64_t from, int64_t to, long n,
                      int64_t *ret);
    int (*marks_behind)(store *st, enum store_table t, enum store_filter filter, int64_t after, int64_t last,
                        int64_t *ret);
    int (*rows_after)(store *st, enum store_table t, enum store_filter filter, int64_t after, int64_t upto,
                      const bool want[STORE_MAX_COLS], bool (*cb)(void *ctx, const store_mark_row *row), void *ctx);
    int (*marks_forget)(store *st, enum store_table t, int64_t upto);
    /* the dashboard's reads (store_dash.h) */
    store_newest_fn *newest;
    int (*dash_explain)(store *st, void (*cb)(void *ctx, const char *name, const char *sql, const char *plan),
                        void *ctx);
} store_backend;

/* The backend of a store: every backend's struct starts with its table. */
static inline const store_backend *store_ops(store *st)
{
    return *(const store_backend *const *)(const void *)st;
}

#endif
