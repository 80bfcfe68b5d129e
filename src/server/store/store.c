/* The store's calls (store.h), handed to the backend that opened the store
 * (store_backend.h), whichever it is. */
#include "store.h"
#include "store_backend.h"

#include <errno.h>

void store_close(store *st)
{
    if (st)
        store_ops(st)->close(st);
}

int store_submit(store *st, const store_batch *b, bool *ret_duplicate)
{
    return store_ops(st)->submit(st, b, ret_duplicate);
}

int store_tallies(store *st, const char *app,
                  void (*cb)(void *ctx, const char *reason, uint64_t count, int64_t last_ns), void *ctx)
{
    return store_ops(st)->tallies(st, app, cb, ctx);
}

void store_coming(store *st, int delta)
{
    if (store_ops(st)->coming)
        store_ops(st)->coming(st, delta);
}

void store_health_get(store *st, unsigned wait_ms, store_health *ret)
{
    store_ops(st)->health_get(st, wait_ms, ret);
}

void store_get_stats(store *st, store_stats *ret)
{
    store_ops(st)->get_stats(st, ret);
}

int store_config_put(store *st, const char *app, const char *xml, size_t len, int64_t *ret_version)
{
    return store_ops(st)->config_api_put(st, app, xml, len, ret_version);
}

int store_config_get(store *st, const char *app, char **ret_xml, size_t *ret_len, char **ret_etag,
                     int64_t *ret_version)
{
    return store_ops(st)->config_api_get(st, app, ret_xml, ret_len, ret_etag, ret_version);
}

int store_scan(store *st, enum store_kind kind, const char *app, const char *version, int64_t from_ns,
               int64_t to_ns, const store_scan_cb *cb)
{
    if (kind < 0 || kind >= KIND_COUNT)
        return -EINVAL;
    if (from_ns < 0)
        from_ns = 0; /* nothing is stored before 1970 */
    if (to_ns <= from_ns)
        return 0;
    return store_ops(st)->scan(st, kind, app, version, from_ns, to_ns, cb);
}

int store_apps(store *st, void (*cb)(void *ctx, const char *app, const char *version), void *ctx)
{
    return store_ops(st)->apps(st, cb, ctx);
}

int store_trace(store *st, const uint8_t trace_id[16], jbuf *out, size_t *ret_n)
{
    return store_ops(st)->trace(st, trace_id, out, ret_n);
}

int store_search_spans(store *st, const store_span_query *q, jbuf *out)
{
    return store_ops(st)->search_spans(st, q, out);
}

int store_search_logs(store *st, const store_log_query *q, jbuf *out)
{
    return store_ops(st)->search_logs(st, q, out);
}

int store_search_points(store *st, const store_point_query *q, jbuf *out)
{
    return store_ops(st)->search_points(st, q, out);
}

int store_explain(store *st, void (*cb)(void *ctx, const char *name, const char *sql, const char *plan), void *ctx)
{
    return store_ops(st)->explain(st, cb, ctx);
}

int store_version_rows(store *st, enum store_table table, const char *app, const char *version, size_t limit,
                       size_t scan_max, void (*cb)(void *ctx, const store_row *row), void *ctx, bool *ret_truncated)
{
    return store_ops(st)->version_rows(st, table, app, version, limit, scan_max, cb, ctx, ret_truncated);
}

int store_marks_last(store *st, int64_t ret[TABLE_COUNT])
{
    return store_ops(st)->marks_last(st, ret);
}

int store_marks_step(store *st, enum store_table t, enum store_filter filter, int64_t from, int64_t to, long n,
                     int64_t *ret)
{
    return store_ops(st)->marks_step(st, t, filter, from, to, n, ret);
}

int store_marks_behind(store *st, enum store_table t, enum store_filter filter, int64_t after, int64_t last,
                       int64_t *ret)
{
    return store_ops(st)->marks_behind(st, t, filter, after, last, ret);
}

int store_rows_after(store *st, enum store_table t, enum store_filter filter, int64_t after, int64_t upto,
                     const bool want[STORE_MAX_COLS], bool (*cb)(void *ctx, const store_mark_row *row), void *ctx)
{
    return store_ops(st)->rows_after(st, t, filter, after, upto, want, cb, ctx);
}

int store_marks_forget(store *st, enum store_table t, int64_t upto)
{
    return store_ops(st)->marks_forget(st, t, upto);
}

const char *store_backend_name(store *st)
{
    return store_ops(st)->name;
}
