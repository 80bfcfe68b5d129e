/* pacerd's store: the raw rows of one version (store.h, store_version_rows).
 *
 * What `pacer bench --baseline server:VERSION` compares with. The rows of
 * a record table live in blocks per app and day, and those not sealed yet
 * in the table (sqlite_int.h): the app's days are read newest first, each
 * whole — its blocks and its rows in the table — keeping the version's
 * newest rows (at most the limit, in a heap), until the limit is reached
 * or scan_max rows of the app were looked at. The cost is bounded by
 * scan_max (plus a day) whatever the size of the store.
 */
#include "sqlite_int.h"
#include "store/store_heap.h"
#include "store/store_backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct version_rows {
    enum store_table table;
    const char *app, *version;
    size_t limit, scan_max;
    void (*cb)(void *ctx, const store_row *row);
    void *ctx;
    bool truncated;
    store_heap heap; /* the newest rows of the day being read, by (ts, rowid) */
    size_t scanned;
    int ts_col, version_col;
    bool oom;
} version_rows;

/* Keeps row i when it is among the newest of the version (the heap's bound). */
static void offer(version_rows *v, const store_value *const *rows, size_t i, int64_t rowid)
{
    v->scanned++;
    const store_value *ver = &rows[v->version_col][i], *ts = &rows[v->ts_col][i];
    if (ver->type != SV_TEXT || strcmp(ver->p, v->version) != 0 || ts->type != SV_INT)
        return;
    store_heap_key k = {.has = true, .ts = ts->i, .place = rowid};
    if (!store_heap_wants(&v->heap, k))
        return;
    size_t n_cols = store_layout_table(v->table)->n_cols;
    store_value vals[STORE_MAX_COLS];
    for (size_t c = 0; c < n_cols; c++)
        vals[c] = rows[c][i];
    if (store_heap_offer(&v->heap, k, vals, n_cols) < 0)
        v->oom = true;
}

static int on_block(void *ctx, size_t n, const store_value *const *rows, const int64_t *rowids, const char *app)
{
    (void)app;
    version_rows *v = ctx;
    for (size_t i = 0; i < n && !v->oom; i++)
        offer(v, rows, i, rowids[i]);
    return v->oom ? -ENOMEM : 0;
}

static int read_rows(void *ctx, sqlite3 *db)
{
    version_rows *v = ctx;
    const store_table_desc *t = store_layout_table(v->table);
    if (!t->type)
        return -EINVAL;
    for (size_t c = 0; c < t->n_cols; c++) {
        if (t->cols[c].source == SRC_COMMON && t->cols[c].index == PACER_COMMON_TS)
            v->ts_col = (int)c;
        if (t->cols[c].source == SRC_COMMON && t->cols[c].index == PACER_COMMON_VERSION)
            v->version_col = (int)c;
    }
    part_marks *parts;
    size_t np;
    sqlite3_stmt *s;
    int r = sqlite_seal_days_open(db, v->table, 0, INT64_MAX, &parts, &np, &s);
    if (r < 0)
        return r;
    size_t emitted = 0;
    for (size_t d = 0; d < np && r == 0; d++) {
        if (v->scanned >= v->scan_max) {
            v->truncated = true; /* older days not looked at */
            break;
        }
        /* the day's newest, as many as the answer may still take (and one
         * to know there are more) */
        store_heap_free(&v->heap);
        if ((r = store_heap_init(&v->heap, v->limit + 1 - emitted)) < 0)
            break;
        r = sqlite_seal_day_rows(db, s, v->table, v->app, &parts[d], parts[d].day * STORE_DAY_NS,
                           (parts[d].day + 1) * STORE_DAY_NS, NULL, on_block, v);
        if (v->oom)
            r = -ENOMEM;
        if (r < 0)
            break;
        store_heap_sort(&v->heap);
        for (size_t i = 0; i < v->heap.n; i++) {
            if (emitted == v->limit) {
                v->truncated = true;
                break;
            }
            store_row row = {.table = v->table, .n = t->n_cols};
            memcpy(row.cols, v->heap.items[i].vals, t->n_cols * sizeof *row.cols);
            v->cb(v->ctx, &row);
            emitted++;
        }
        if (v->truncated)
            break;
    }
    store_heap_free(&v->heap);
    sqlite3_finalize(s);
    free(parts);
    return r;
}

int sqlite_samples_version_rows(store *st, enum store_table table, const char *app, const char *version, size_t limit,
                       size_t scan_max, void (*cb)(void *ctx, const store_row *row), void *ctx, bool *ret_truncated)
{
    version_rows v = {.table = table, .app = app, .version = version, .limit = limit, .scan_max = scan_max,
                      .cb = cb, .ctx = ctx};
    int r = sqlite_store_read(st, read_rows, &v);
    *ret_truncated = v.truncated;
    return r;
}
