/* pacerd's store: the raw rows of one version (store.h, store_version_rows).
 *
 * What `pacer bench --baseline server:VERSION` compares with. The rows of
 * a record table live in blocks per app and day, and those not sealed yet
 * in the table (store_int.h): the app's days are read newest first, each
 * whole — its blocks and its rows in the table — keeping the version's
 * newest rows (at most the limit, in a heap), until the limit is reached
 * or scan_max rows of the app were looked at. The cost is bounded by
 * scan_max (plus a day) whatever the size of the store.
 */
#include "store_int.h"
#include "store/store_backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct held {
    int64_t ts, rowid;
    store_value *vals;
} held;

typedef struct version_rows {
    enum store_table table;
    const char *app, *version;
    size_t limit, scan_max;
    void (*cb)(void *ctx, const store_row *row);
    void *ctx;
    bool truncated;
    /* the newest rows of the day being read: a min-heap on (ts, rowid) */
    held *heap;
    size_t n, cap;
    size_t scanned;
    int ts_col, version_col;
    bool oom;
} version_rows;

static bool older(const held *a, const held *b)
{
    return a->ts < b->ts || (a->ts == b->ts && a->rowid < b->rowid);
}

static void sift_down(held *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && older(&h[l], &h[m]))
            m = l;
        if (l + 1 < n && older(&h[l + 1], &h[m]))
            m = l + 1;
        if (m == i)
            return;
        held t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static void sift_up(held *h, size_t i)
{
    while (i && older(&h[i], &h[(i - 1) / 2])) {
        held t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

/* A copy of a row: its values and their texts in one allocation. */
static store_value *copy_row(const store_value *const *rows, size_t i, size_t n_cols)
{
    size_t bytes = n_cols * sizeof(store_value);
    for (size_t c = 0; c < n_cols; c++)
        if (rows[c][i].type == SV_TEXT || rows[c][i].type == SV_BLOB)
            bytes += rows[c][i].n + 1;
    store_value *v = malloc(bytes);
    if (!v)
        return NULL;
    char *p = (char *)(v + n_cols);
    for (size_t c = 0; c < n_cols; c++) {
        v[c] = rows[c][i];
        if (v[c].type == SV_TEXT || v[c].type == SV_BLOB) {
            if (v[c].n)
                memcpy(p, v[c].p, v[c].n);
            p[v[c].n] = 0;
            v[c].p = p;
            p += v[c].n + 1;
        }
    }
    return v;
}

/* Keeps row i when it is among the newest `keep` of the version. */
static void offer(version_rows *v, const store_value *const *rows, size_t i, int64_t rowid, size_t keep)
{
    v->scanned++;
    const store_value *ver = &rows[v->version_col][i], *ts = &rows[v->ts_col][i];
    if (ver->type != SV_TEXT || strcmp(ver->p, v->version) != 0 || ts->type != SV_INT || !keep)
        return;
    held h = {ts->i, rowid, NULL};
    if (v->n == keep && !older(&v->heap[0], &h))
        return;
    size_t n_cols = store_table(v->table)->n_cols;
    if (!(h.vals = copy_row(rows, i, n_cols))) {
        v->oom = true;
        return;
    }
    if (v->n == keep) {
        free(v->heap[0].vals);
        v->heap[0] = h;
        sift_down(v->heap, v->n, 0);
        return;
    }
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 256;
        held *q = realloc(v->heap, cap * sizeof *q);
        if (!q) {
            free(h.vals);
            v->oom = true;
            return;
        }
        v->heap = q;
        v->cap = cap;
    }
    v->heap[v->n] = h;
    sift_up(v->heap, v->n++);
}

typedef struct day_read {
    version_rows *v;
    size_t keep;
} day_read;

static int on_block(void *ctx, size_t n, const store_value *const *rows, const int64_t *rowids, const char *app)
{
    (void)app;
    day_read *d = ctx;
    for (size_t i = 0; i < n && !d->v->oom; i++)
        offer(d->v, rows, i, rowids[i], d->keep);
    return d->v->oom ? -ENOMEM : 0;
}

static int cmp_newest(const void *x, const void *y)
{
    const held *a = x, *b = y;
    return older(a, b) ? 1 : older(b, a) ? -1 : 0;
}

static int read_rows(void *ctx, sqlite3 *db)
{
    version_rows *v = ctx;
    const store_table_desc *t = store_table(v->table);
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
    int r = store_parts_read(db, v->table, 0, INT64_MAX, true, &parts, &np);
    if (r < 0)
        return r;
    /* the rows not sealed yet, of one day */
    char *sql = sqlite3_mprintf("SELECT %s, rowid FROM %s WHERE rowid > ?1 AND app = ?3 AND ts >= ?4 AND ts < ?5",
                                t->columns, t->name);
    sqlite3_stmt *s = NULL;
    if (!sql || sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
        sqlite3_free(sql);
        free(parts);
        return -EIO;
    }
    sqlite3_free(sql);
    size_t emitted = 0;
    store_value vals[STORE_MAX_COLS];
    const store_value *cols[STORE_MAX_COLS];
    for (size_t c = 0; c < t->n_cols; c++)
        cols[c] = &vals[c];
    for (size_t d = 0; d < np && r == 0; d++) {
        if (v->scanned >= v->scan_max) {
            v->truncated = true; /* older days not looked at */
            break;
        }
        day_read dr = {v, v->limit + 1 - emitted};
        r = store_blocks_read(db, v->table, v->app, parts[d].day, 0, INT64_MAX, -1, NULL, on_block, &dr);
        /* the day's rows not sealed: up to its last row as of the last flush,
         * and any after the rolled mark */
        sqlite3_bind_int64(s, 1, parts[d].last > parts[d].sealed ? parts[d].sealed : parts[d].rolled);
        sqlite3_bind_text(s, 3, v->app, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 4, parts[d].day * STORE_DAY_NS);
        sqlite3_bind_int64(s, 5, (parts[d].day + 1) * STORE_DAY_NS);
        int sr;
        while (r == 0 && !v->oom && (sr = sqlite3_step(s)) == SQLITE_ROW) {
            for (size_t c = 0; c < t->n_cols; c++)
                vals[c] = store_column_value(s, (int)c);
            offer(v, cols, 0, sqlite3_column_int64(s, (int)t->n_cols), dr.keep);
        }
        sqlite3_reset(s);
        if (v->oom)
            r = -ENOMEM;
        if (r < 0)
            break;
        qsort(v->heap, v->n, sizeof *v->heap, cmp_newest);
        for (size_t i = 0; i < v->n; i++) {
            if (emitted == v->limit) {
                v->truncated = true;
                break;
            }
            store_row row = {.table = v->table, .n = t->n_cols};
            memcpy(row.cols, v->heap[i].vals, t->n_cols * sizeof *row.cols);
            v->cb(v->ctx, &row);
            emitted++;
        }
        for (size_t i = 0; i < v->n; i++)
            free(v->heap[i].vals);
        v->n = 0;
        if (v->truncated)
            break;
    }
    for (size_t i = 0; i < v->n; i++)
        free(v->heap[i].vals);
    free(v->heap);
    sqlite3_finalize(s);
    free(parts);
    return r;
}

int store_sqlite_version_rows(store *st, enum store_table table, const char *app, const char *version, size_t limit,
                       size_t scan_max, void (*cb)(void *ctx, const store_row *row), void *ctx, bool *ret_truncated)
{
    version_rows v = {.table = table, .app = app, .version = version, .limit = limit, .scan_max = scan_max,
                      .cb = cb, .ctx = ctx};
    int r = store_sqlite_read(st, read_rows, &v);
    *ret_truncated = v.truncated;
    return r;
}
