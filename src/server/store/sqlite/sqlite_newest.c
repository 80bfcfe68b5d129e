/* The newest rows of a range on SQLite (store_dash.h, store_newest_fn):
 * what the dashboard's reads (store/store_dash.c) are made of.
 *
 * The rows of a record table (page loads, start-ups, requests) live in
 * blocks per app and day, and those not sealed yet in the table
 * (sqlite_int.h): a read takes the days of the range newest first, each
 * whole — its blocks overlapping the range and its rows not sealed, a
 * rowid range — until scan_max rows were seen; a first pass over the
 * time column alone finds the oldest of the newest scan_max (a min-heap
 * of (ts, rowid)), the second hands on the rows not older, in no order.
 * Logs are read newest first through their (app, ts) index, metric
 * points through (app, name, ts). A read that reached scan_max says so
 * (*ret_truncated): older rows of the range were not looked at.
 */
#include "sqlite_int.h"

#include <pacer/base/array.h>

#include <sqlite3.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void bind_opt(sqlite3_stmt *s, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

/* ---- the rows of a record table in a range ---- */

static int col_named(enum store_table table, const char *name)
{
    const store_table_desc *t = store_layout_table(table);
    for (size_t c = 0; c < t->n_cols; c++)
        if (strcmp(t->cols[c].name, name) == 0)
            return (int)c;
    return -1;
}

typedef struct range_read {
    enum store_table table;
    const char *app;
    int64_t from, to;
    const bool *want; /* the columns to decode (NULL: all) */
    /* each row of the range; 0 goes on, a negative errno stops */
    int (*fn)(void *ctx, const store_value *const *rows, size_t i, int64_t ts, int64_t rowid);
    void *ctx;
    size_t keep;   /* stop after the day that brought the rows seen past keep */
    uint64_t seen; /* rows of the range seen */
    int ts_col;
    int64_t lo, hi; /* the part of the day being read */
} range_read;

static int range_block(void *ctx, size_t n, const store_value *const *rows, const int64_t *rowids, const char *app)
{
    (void)app;
    range_read *rr = ctx;
    for (size_t i = 0; i < n; i++) {
        const store_value *ts = &rows[rr->ts_col][i];
        if (ts->type != SV_INT || ts->i < rr->lo || ts->i >= rr->hi)
            continue;
        rr->seen++;
        int r = rr->fn(rr->ctx, rows, i, ts->i, rowids[i]);
        if (r)
            return r;
    }
    return 0;
}

/* Every row of (table, app) with ts in [from, to), a day at a time, the
 * newest day first (in no order within a day): the day's blocks, then
 * its rows not sealed yet; after the day that took the rows seen past
 * rr->keep, no more. Inside the caller's read transaction. */
static int range_rows(sqlite3 *db, range_read *rr)
{
    rr->ts_col = col_named(rr->table, "ts");
    rr->seen = 0;
    if (rr->ts_col < 0)
        return -EINVAL;
    if (rr->from >= rr->to)
        return 0;
    part_marks *parts;
    size_t np;
    sqlite3_stmt *s;
    int r = sqlite_seal_days_open(db, rr->table, day_of_ts(rr->from), day_of_ts(rr->to - 1), &parts, &np, &s);
    if (r < 0)
        return r;
    for (size_t d = 0; d < np && r == 0 && rr->seen <= rr->keep; d++) {
        int64_t day0 = parts[d].day * STORE_DAY_NS;
        rr->lo = rr->from > day0 ? rr->from : day0;
        rr->hi = rr->to < day0 + STORE_DAY_NS ? rr->to : day0 + STORE_DAY_NS;
        r = sqlite_seal_day_rows(db, s, rr->table, rr->app, &parts[d], rr->lo, rr->hi, rr->want, range_block, rr);
    }
    sqlite3_finalize(s);
    free(parts);
    return r;
}

/* The oldest (ts, rowid) among the newest `keep` rows of a range: a
 * min-heap of them as the rows come. */
typedef struct rkey {
    int64_t ts, rowid;
} rkey;

static bool rkey_older(rkey a, rkey b)
{
    return a.ts < b.ts || (a.ts == b.ts && a.rowid < b.rowid);
}

typedef struct cutoff {
    rkey *heap;
    size_t n, cap, keep;
} cutoff;

static int cutoff_offer(void *ctx, const store_value *const *rows, size_t i, int64_t ts, int64_t rowid)
{
    (void)rows;
    (void)i;
    cutoff *c = ctx;
    rkey k = {ts, rowid};
    if (c->n == c->keep) {
        if (!c->n || !rkey_older(c->heap[0], k))
            return 0;
        c->heap[0] = k; /* sift down */
        for (size_t j = 0;;) {
            size_t l = 2 * j + 1, m = j;
            if (l < c->n && rkey_older(c->heap[l], c->heap[m]))
                m = l;
            if (l + 1 < c->n && rkey_older(c->heap[l + 1], c->heap[m]))
                m = l + 1;
            if (m == j)
                break;
            rkey t = c->heap[j];
            c->heap[j] = c->heap[m];
            c->heap[m] = t;
            j = m;
        }
        return 0;
    }
    if (!ARRAY_GROW(c->heap, c->cap, c->n + 1, 1024))
        return -ENOMEM;
    size_t j = c->n++; /* sift up */
    c->heap[j] = k;
    while (j && rkey_older(c->heap[j], c->heap[(j - 1) / 2])) {
        rkey t = c->heap[j];
        c->heap[j] = c->heap[(j - 1) / 2];
        c->heap[(j - 1) / 2] = t;
        j = (j - 1) / 2;
    }
    return 0;
}

/* The newest scan_max rows of (table, app, [from, to)) are those not
 * older than *ret (INT64_MIN: all of them); *ret_truncated: older rows of
 * the range were left out. */
static int range_cutoff(sqlite3 *db, enum store_table table, const char *app, int64_t from, int64_t to,
                        size_t scan_max, rkey *ret, bool *ret_truncated)
{
    bool want[STORE_MAX_COLS] = {false};
    int ts = col_named(table, "ts");
    if (ts < 0)
        return -EINVAL;
    want[ts] = true;
    cutoff c = {.keep = scan_max};
    range_read rr = {.table = table, .app = app, .from = from, .to = to, .want = want, .fn = cutoff_offer,
                     .ctx = &c, .keep = scan_max};
    int r = range_rows(db, &rr);
    *ret = (rkey){INT64_MIN, INT64_MIN};
    *ret_truncated = rr.seen > scan_max;
    if (r == 0 && *ret_truncated)
        *ret = c.n ? c.heap[0] : (rkey){INT64_MAX, INT64_MAX};
    free(c.heap);
    return r;
}

/* ---- the newest rows ---- */

typedef struct emit {
    const store_newest_query *q;
    size_t n_cols;
    rkey cut;
    int (*cb)(void *ctx, const store_row *row, int64_t place);
    void *ctx;
} emit;

static int emit_row(void *ctx, const store_value *const *rows, size_t i, int64_t ts, int64_t rowid)
{
    emit *e = ctx;
    if (rkey_older((rkey){ts, rowid}, e->cut))
        return 0;
    store_row row = {.table = e->q->table, .n = e->n_cols};
    for (size_t c = 0; c < e->n_cols; c++)
        row.cols[c] = e->q->want && !e->q->want[c] ? (store_value){.type = SV_NULL} : rows[c][i];
    return e->cb(e->ctx, &row, rowid);
}

/* The newest rows of a log or metric point range, through the table's
 * index: ?1 app, ?2 from, ?3 to, ?4 scan_max + 1; metric points ?5 name,
 * ?6 version (NULL: any). want[c] says which columns are named (NULL:
 * all). sqlite3_free it. */
static char *indexed_sql(enum store_table table, const bool *want)
{
    const store_table_desc *t = store_layout_table(table);
    char cols[4096] = "";
    size_t o = 0;
    for (size_t c = 0; c < t->n_cols && o < sizeof cols; c++)
        o += (size_t)snprintf(cols + o, sizeof cols - o, "%s, ", !want || want[c] ? t->cols[c].name : "NULL");
    if (o >= sizeof cols)
        return NULL;
    return sqlite3_mprintf("SELECT %srowid FROM %s WHERE app = ?1%s AND ts >= ?2 AND ts < ?3%s"
                           " ORDER BY ts DESC LIMIT ?4",
                           cols, t->name, table == TABLE_METRIC_POINTS ? " AND name = ?5" : "",
                           table == TABLE_METRIC_POINTS ? " AND (?6 IS NULL OR version = ?6)" : "");
}

typedef struct newest_job {
    const store_newest_query *q;
    int (*cb)(void *ctx, const store_row *row, int64_t place);
    void *ctx;
    bool truncated;
} newest_job;

static int read_indexed(sqlite3 *db, newest_job *j)
{
    const store_newest_query *q = j->q;
    const store_table_desc *t = store_layout_table(q->table);
    char *sql = indexed_sql(q->table, q->want);
    sqlite3_stmt *s = NULL;
    int r = sql && sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK ? 0 : sql ? -EIO : -ENOMEM;
    sqlite3_free(sql);
    if (r < 0)
        return r;
    sqlite3_bind_text(s, 1, q->app, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, q->from_ns);
    sqlite3_bind_int64(s, 3, q->to_ns);
    sqlite3_bind_int64(s, 4, (sqlite3_int64)q->scan_max + 1);
    if (q->table == TABLE_METRIC_POINTS) {
        bind_opt(s, 5, q->name);
        bind_opt(s, 6, q->version);
    }
    size_t n = 0;
    int sr;
    while (r == 0 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
        if (n++ == q->scan_max) {
            j->truncated = true; /* the one past the bound */
            sr = SQLITE_DONE;
            break;
        }
        store_row row = {.table = q->table, .n = t->n_cols};
        for (size_t c = 0; c < t->n_cols; c++)
            row.cols[c] = sqlite_store_column_value(s, (int)c);
        r = j->cb(j->ctx, &row, sqlite3_column_int64(s, (int)t->n_cols));
    }
    if (r == 0 && sr != SQLITE_DONE)
        r = -EIO;
    sqlite3_finalize(s);
    return r;
}

static int read_newest(void *ctx, sqlite3 *db)
{
    newest_job *j = ctx;
    const store_newest_query *q = j->q;
    if (q->table == TABLE_LOGS || q->table == TABLE_METRIC_POINTS)
        return read_indexed(db, j);
    if (!store_is_record(q->table))
        return -EINVAL;
    emit e = {q, store_layout_table(q->table)->n_cols, {0, 0}, j->cb, j->ctx};
    int r = range_cutoff(db, q->table, q->app, q->from_ns, q->to_ns, q->scan_max, &e.cut, &j->truncated);
    if (r < 0)
        return r;
    bool want[STORE_MAX_COLS]; /* what was asked for, and the time the range is of */
    for (size_t c = 0; c < e.n_cols; c++)
        want[c] = !q->want || q->want[c];
    int ts = col_named(q->table, "ts");
    if (ts >= 0)
        want[ts] = true;
    range_read rr = {.table = q->table, .app = q->app, .from = q->from_ns, .to = q->to_ns, .want = want,
                     .fn = emit_row, .ctx = &e, .keep = q->scan_max};
    return range_rows(db, &rr);
}

int sqlite_newest(store *st, const store_newest_query *q, int (*cb)(void *ctx, const store_row *row, int64_t place),
                  void *ctx, bool *ret_truncated)
{
    newest_job j = {q, cb, ctx, false};
    int r = sqlite_store_read(st, read_newest, &j);
    *ret_truncated = j.truncated;
    return r;
}

/* ---- query plans, for tests ---- */

typedef struct explain_job {
    void (*cb)(void *ctx, const char *name, const char *sql, const char *plan);
    void *ctx;
} explain_job;

static int explain_one(sqlite3 *db, const char *name, const char *sql, const explain_job *j)
{
    char *text = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", sql);
    sqlite3_stmt *s;
    int pr = text ? sqlite3_prepare_v2(db, text, -1, &s, NULL) : SQLITE_NOMEM;
    sqlite3_free(text);
    if (pr != SQLITE_OK)
        return -EIO;
    char plan[4096] = "";
    size_t o = 0;
    while (sqlite3_step(s) == SQLITE_ROW && o < sizeof plan)
        o += (size_t)snprintf(plan + o, sizeof plan - o, "%s%s", o ? "; " : "", (const char *)sqlite3_column_text(s, 3));
    sqlite3_finalize(s);
    j->cb(j->ctx, name, sql, plan);
    return 0;
}

static int explain_all(void *ctx, sqlite3 *db)
{
    const explain_job *j = ctx;
    static const enum store_table tables[] = {TABLE_PAGE_LOADS, TABLE_STARTUPS, TABLE_REQUESTS, TABLE_LOGS,
                                              TABLE_METRIC_POINTS};
    int r = 0;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0] && r == 0; t++) {
        char name[64];
        bool indexed = tables[t] == TABLE_LOGS || tables[t] == TABLE_METRIC_POINTS;
        snprintf(name, sizeof name, indexed ? "newest %s" : "rows of %s not sealed", store_layout_table(tables[t])->name);
        char *sql = indexed ? indexed_sql(tables[t], NULL) : sqlite_seal_unsealed_sql(tables[t]);
        r = sql ? explain_one(db, name, sql, j) : -ENOMEM;
        sqlite3_free(sql);
    }
    return r;
}

int sqlite_newest_explain(store *st, void (*cb)(void *ctx, const char *name, const char *sql, const char *plan),
                          void *ctx)
{
    explain_job j = {cb, ctx};
    return sqlite_store_read(st, explain_all, &j);
}
