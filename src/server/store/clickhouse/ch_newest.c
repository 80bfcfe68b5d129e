/* The newest rows of a range on ClickHouse (store_dash.h,
 * store_newest_fn): what the dashboard's reads (store/store_dash.c) are
 * made of.
 *
 * One query: the rows of the app in [from, to) (metric points: of the
 * name and version too), one per identity, newest first (ties by row
 * key), one more than scan_max to know whether the range holds more. The
 * rows come decoded as the read APIs decode them (ch_layout.c), so
 * that values compare as SQLite holds them, not as ClickHouse does (an MS
 * column is held as twice its micro- or nanoseconds, ch_int.h).
 */
#include "ch_int.h"

#include <pacer/base/json.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef struct newest_read {
    size_t max, n;
    bool beyond;
    int r;
    int (*cb)(void *ctx, const store_row *row, int64_t place);
    void *ctx;
} newest_read;

static bool on_row(void *ctx, ch_row *row)
{
    newest_read *nr = ctx;
    if (nr->n == nr->max) {
        nr->beyond = true;
        ch_layout_row_clear(row);
        return false;
    }
    nr->r = nr->cb(nr->ctx, &row->row, (int64_t)(nr->max - nr->n)); /* the first is the newest */
    nr->n++;
    ch_layout_row_clear(row);
    return nr->r == 0;
}

int ch_newest(store *s, const store_newest_query *q, int (*cb)(void *ctx, const store_row *row, int64_t place),
              void *ctx, bool *ret_truncated)
{
    ch_store *st = (ch_store *)s;
    *ret_truncated = false;
    if (q->from_ns >= q->to_ns)
        return 0;
    jbuf w;
    jbuf_init(&w);
    ch_read_time_where(&w, q->app, q->from_ns, q->to_ns);
    if (q->table == TABLE_METRIC_POINTS && q->name) {
        jbuf_puts(&w, " AND name = ");
        ch_store_sql_str(&w, q->name);
    }
    if (q->table == TABLE_METRIC_POINTS && q->version) {
        jbuf_puts(&w, " AND version = ");
        ch_store_sql_str(&w, q->version);
    }
    char order[256];
    snprintf(order, sizeof order, "ts DESC, %s DESC", ch_read_rk_sql(q->table));
    newest_read nr = {.max = q->scan_max, .cb = cb, .ctx = ctx};
    ch_reply keep;
    memset(&keep, 0, sizeof keep);
    int r = w.failed ? -ENOMEM
                     : ch_read_select_rows(st, q->table, w.data, order, q->scan_max + 1, on_row, &nr, "a query", &keep);
    jbuf_free(&w);
    ch_client_reply_free(&keep);
    if (r == 0)
        r = nr.r;
    *ret_truncated = nr.beyond;
    return r;
}

int ch_newest_explain(store *s, void (*cb)(void *ctx, const char *name, const char *sql, const char *plan),
                      void *ctx)
{
    (void)s;
    (void)cb;
    (void)ctx;
    return -ENOTSUP; /* the plans of test_store_dash are SQLite's */
}
