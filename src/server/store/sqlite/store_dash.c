/* pacerd's store: the reads of the dashboard beyond the percentiles
 * (store_dash.h): single records of a rollup kind (the slowest page loads,
 * recent start-ups, the slowest requests), per-pattern request figures,
 * log records of one type (jank), and per-window frame sums.
 *
 * Every read is bounded by `scan_max` rows of the range, newest first. The
 * rows of a record table (page loads, start-ups, requests) live in blocks
 * per app and day, and those not sealed yet in the table (store_int.h):
 * a read takes the days of the range newest first, each whole — its
 * blocks overlapping the range and its rows not sealed, a rowid range —
 * until scan_max rows were seen; a first pass over the time column alone
 * finds the oldest of the newest scan_max (a min-heap of (ts, rowid)),
 * the second keeps, of the rows not older, what the answer needs (the
 * largest `limit` in a heap, or the sums per pattern). Logs are read
 * through their (app, ts) index, metric points through (app, name, ts). A
 * read that reached scan_max says so (*ret_truncated): older rows of the
 * range were not looked at.
 */
#include "store/store_backend.h"
#include "store/store_dash.h"
#include "store_int.h"

#include <sqlite3.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The newest scan_max log records of the range, those of a type. ?1 app,
 * ?2 from, ?3 to, ?4 type, ?5 version, ?6 scan_max. */
#define LOGS_SQL \
    "SELECT ts, version, session, body FROM (SELECT ts, version, session, body, type" \
    " FROM logs WHERE app = ?1 AND ts >= ?2 AND ts < ?3 ORDER BY ts DESC LIMIT ?6)" \
    " WHERE type = ?4 AND (?5 IS NULL OR version = ?5)"

/* One metric's newest scan_max points of the range, summed per value of a
 * string attribute. ?1 app, ?2 name, ?3 from, ?4 to, ?5 version, ?6 the
 * attribute's key, ?7 scan_max. */
#define SUMS_SQL \
    "SELECT g, sum(COALESCE(int_value, CAST(value AS REAL))), count(*) FROM (" \
    " SELECT int_value, value," \
    "  (SELECT json_extract(a.value, '$.value.stringValue') FROM json_each(CASE WHEN json_valid(attributes)" \
    "   THEN attributes END) AS a WHERE json_extract(a.value, '$.key') = ?6) AS g" \
    " FROM metric_points WHERE app = ?1 AND name = ?2 AND ts >= ?3 AND ts < ?4 AND (?5 IS NULL OR version = ?5)" \
    " ORDER BY ts DESC LIMIT ?7)" \
    " GROUP BY g ORDER BY g"

static void bind_opt(sqlite3_stmt *s, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

/* Whether more than scan_max rows of the app lie in [from, to) of table
 * (a keys table, or one with an (app, ts) index). */
static bool rows_beyond(sqlite3 *db, const char *table, const char *app, int64_t from, int64_t to, size_t scan_max)
{
    char *sql = sqlite3_mprintf("SELECT count(*) FROM (SELECT 1 FROM %s WHERE app = ?1 AND ts >= ?2 AND ts < ?3"
                                " LIMIT ?4)",
                                table);
    sqlite3_stmt *c;
    bool beyond = false;
    if (sql && sqlite3_prepare_v2(db, sql, -1, &c, NULL) == SQLITE_OK) {
        sqlite3_bind_text(c, 1, app, -1, SQLITE_STATIC);
        sqlite3_bind_int64(c, 2, from);
        sqlite3_bind_int64(c, 3, to);
        sqlite3_bind_int64(c, 4, (sqlite3_int64)scan_max + 1);
        beyond = sqlite3_step(c) == SQLITE_ROW && (size_t)sqlite3_column_int64(c, 0) > scan_max;
        sqlite3_finalize(c);
    }
    sqlite3_free(sql);
    return beyond;
}

/* ---- the rows of a record table in a range ---- */

/* The rows of record table `table` not sealed yet, of one app and part of
 * a day: a rowid range (at most a seal and a rollup batch of rows), the
 * rest filtered. ?1 the rowid after which to look, ?2 app, ?3 from, ?4 to.
 * sqlite3_free it. */
static char *unsealed_sql(enum store_table table)
{
    const store_table_desc *t = store_table(table);
    return sqlite3_mprintf("SELECT %s, rowid FROM %s WHERE rowid > ?1 AND app = ?2 AND ts >= ?3 AND ts < ?4",
                           t->columns, t->name);
}

static int col_named(enum store_table table, const char *name)
{
    const store_table_desc *t = store_table(table);
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
    const store_table_desc *t = store_table(rr->table);
    rr->ts_col = col_named(rr->table, "ts");
    rr->seen = 0;
    if (rr->ts_col < 0)
        return -EINVAL;
    if (rr->from >= rr->to)
        return 0;
    part_marks *parts;
    size_t np;
    int r = store_parts_read(db, rr->table, day_of_ts(rr->from), day_of_ts(rr->to - 1), true, &parts, &np);
    if (r < 0)
        return r;
    char *sql = unsealed_sql(rr->table);
    sqlite3_stmt *s = NULL;
    if (!sql || sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
        sqlite3_free(sql);
        free(parts);
        return -EIO;
    }
    sqlite3_free(sql);
    store_value vals[STORE_MAX_COLS];
    const store_value *cols[STORE_MAX_COLS];
    for (size_t c = 0; c < t->n_cols; c++)
        cols[c] = &vals[c];
    for (size_t d = 0; d < np && r == 0 && rr->seen <= rr->keep; d++) {
        int64_t day0 = parts[d].day * STORE_DAY_NS;
        rr->lo = rr->from > day0 ? rr->from : day0;
        rr->hi = rr->to < day0 + STORE_DAY_NS ? rr->to : day0 + STORE_DAY_NS;
        r = store_blocks_read(db, rr->table, rr->app, parts[d].day, rr->lo, rr->hi, -1, rr->want, range_block, rr);
        if (r)
            break;
        /* the day's rows not sealed: those up to its last row as of the
         * last flush, and any after the rolled mark (as store_samples.c) */
        sqlite3_bind_int64(s, 1, parts[d].last > parts[d].sealed ? parts[d].sealed : parts[d].rolled);
        sqlite3_bind_text(s, 2, rr->app, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, rr->lo);
        sqlite3_bind_int64(s, 4, rr->hi);
        int sr;
        while (r == 0 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
            for (size_t c = 0; c < t->n_cols; c++)
                vals[c] = store_column_value(s, (int)c);
            rr->seen++;
            r = rr->fn(rr->ctx, cols, 0, sqlite3_column_int64(s, rr->ts_col), sqlite3_column_int64(s, (int)t->n_cols));
        }
        if (r == 0 && sr != SQLITE_DONE)
            r = -EIO;
        sqlite3_reset(s);
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
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 1024;
        rkey *h = realloc(c->heap, cap * sizeof *h);
        if (!h)
            return -ENOMEM;
        c->heap = h;
        c->cap = cap;
    }
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

/* ---- single records ---- */

/* A copy of row i: its values and their texts in one allocation. */
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

/* A row kept: its order (the metric's value, NULL below every number, as
 * SQLite orders; then ts), its values. */
typedef struct kept {
    bool has;
    double v;
    int64_t ts, rowid;
    store_value *vals;
} kept;

static bool kept_below(const kept *a, const kept *b)
{
    if (a->has != b->has)
        return !a->has;
    if (a->has && a->v != b->v)
        return a->v < b->v;
    return a->ts < b->ts || (a->ts == b->ts && a->rowid < b->rowid);
}

typedef struct rows_job {
    const store_rows_query *q;
    void (*cb)(void *ctx, const store_row *row);
    void *ctx;
    bool truncated;
    rkey cut;
    int version_col, order_col;
    kept *heap; /* the largest `limit`, a min-heap */
    size_t n;
} rows_job;

static double value_num(const store_value *v, bool *has)
{
    *has = v->type == SV_INT || v->type == SV_REAL;
    return v->type == SV_INT ? (double)v->i : v->type == SV_REAL ? v->d : 0;
}

static void kept_sift_down(kept *h, size_t n, size_t j)
{
    for (;;) {
        size_t l = 2 * j + 1, m = j;
        if (l < n && kept_below(&h[l], &h[m]))
            m = l;
        if (l + 1 < n && kept_below(&h[l + 1], &h[m]))
            m = l + 1;
        if (m == j)
            return;
        kept t = h[j];
        h[j] = h[m];
        h[m] = t;
        j = m;
    }
}

static int rows_offer(void *ctx, const store_value *const *rows, size_t i, int64_t ts, int64_t rowid)
{
    rows_job *j = ctx;
    const store_rows_query *q = j->q;
    if (rkey_older((rkey){ts, rowid}, j->cut) || !q->limit)
        return 0;
    if (q->version) {
        const store_value *v = &rows[j->version_col][i];
        if (v->type != SV_TEXT || strcmp(v->p, q->version) != 0)
            return 0;
    }
    if (q->name) {
        const store_kind_desc *kd = store_kind(store_table(q->table)->kind);
        size_t o = 0, len = strlen(q->name);
        for (size_t k = 0; k < kd->n_name_cols; k++) {
            const store_value *v = &rows[kd->name_cols[k]][i];
            if (v->type != SV_TEXT || o + (k > 0) + v->n > len)
                return 0; /* as SQL: a NULL part makes the name NULL */
            if (k && q->name[o++] != ' ')
                return 0;
            if (memcmp(q->name + o, v->p, v->n) != 0)
                return 0;
            o += v->n;
        }
        if (o != len)
            return 0;
    }
    kept k = {.ts = ts, .rowid = rowid};
    if (j->order_col >= 0)
        k.v = value_num(&rows[j->order_col][i], &k.has);
    else
        k.has = true, k.v = (double)ts;
    if (j->n == q->limit && !kept_below(&j->heap[0], &k))
        return 0;
    size_t n_cols = store_table(q->table)->n_cols;
    if (!(k.vals = copy_row(rows, i, n_cols)))
        return -ENOMEM;
    if (j->n == q->limit) {
        free(j->heap[0].vals);
        j->heap[0] = k;
        kept_sift_down(j->heap, j->n, 0);
        return 0;
    }
    size_t at = j->n++;
    j->heap[at] = k;
    while (at && kept_below(&j->heap[at], &j->heap[(at - 1) / 2])) {
        kept t = j->heap[at];
        j->heap[at] = j->heap[(at - 1) / 2];
        j->heap[(at - 1) / 2] = t;
        at = (at - 1) / 2;
    }
    return 0;
}

static int cmp_kept_desc(const void *x, const void *y)
{
    const kept *a = x, *b = y;
    return kept_below(a, b) ? 1 : kept_below(b, a) ? -1 : 0;
}

/* The raw column of a kind's metric, or -1 (a computed one). */
static int metric_col(enum store_kind kind, int metric)
{
    const store_kind_desc *kd = store_kind(kind);
    if (metric < 0 || (size_t)metric >= kd->n_metrics)
        return -1;
    return kd->metric_cols[metric];
}

static int read_rows(void *ctx, sqlite3 *db)
{
    rows_job *j = ctx;
    const store_rows_query *q = j->q;
    const store_table_desc *t = store_table(q->table);
    if (!store_is_record(q->table))
        return -EINVAL;
    j->version_col = col_named(q->table, "version");
    j->order_col = metric_col(t->kind, q->order_metric);
    int r = range_cutoff(db, q->table, q->app, q->from_ns, q->to_ns, q->scan_max, &j->cut, &j->truncated);
    if (r < 0)
        return r;
    if (q->limit && !(j->heap = malloc(q->limit * sizeof *j->heap)))
        return -ENOMEM;
    range_read rr = {.table = q->table, .app = q->app, .from = q->from_ns, .to = q->to_ns, .fn = rows_offer,
                     .ctx = j, .keep = q->scan_max};
    r = range_rows(db, &rr);
    if (r == 0) {
        qsort(j->heap, j->n, sizeof *j->heap, cmp_kept_desc);
        for (size_t i = 0; i < j->n; i++) {
            store_row row = {.table = q->table, .n = t->n_cols};
            memcpy(row.cols, j->heap[i].vals, t->n_cols * sizeof *row.cols);
            j->cb(j->ctx, &row);
        }
    }
    for (size_t i = 0; i < j->n; i++)
        free(j->heap[i].vals);
    free(j->heap);
    return r;
}

int store_sqlite_rows(store *st, const store_rows_query *q, void (*cb)(void *ctx, const store_row *row), void *ctx,
               bool *ret_truncated)
{
    rows_job j = {.q = q, .cb = cb, .ctx = ctx};
    int r = store_sqlite_read(st, read_rows, &j);
    *ret_truncated = j.truncated;
    return r;
}

/* ---- requests by pattern ---- */

/* The classes of a request (the pacer.classes attribute in extra), joined
 * as "a,b", from extra's JSON text. */
#define CLASSES_SQL \
    "SELECT group_concat(json_extract(v.value, '$.stringValue')) FROM json_each(CASE WHEN json_valid(?1)" \
    " THEN ?1 END) AS a, json_each(a.value, '$.value.arrayValue.values') AS v" \
    " WHERE json_extract(a.value, '$.key') = 'pacer.classes'"

typedef struct req_group {
    char *method, *pattern; /* method may be NULL */
    store_request_stat s;
} req_group;

typedef struct req_job {
    const char *app, *version;
    int64_t from, to;
    size_t scan_max;
    void (*cb)(void *ctx, const store_request_stat *s);
    void *ctx;
    bool truncated;
    rkey cut;
    int c_version, c_method, c_pattern, c_failed, c_received, c_sent, c_extra;
    sqlite3_stmt *classes;
    req_group *g; /* sorted by (method, pattern); NULL methods first */
    size_t n, cap;
} req_job;

static int req_cmp(const char *m1, const char *p1, const char *m2, const char *p2)
{
    if (!m1 != !m2)
        return m1 ? 1 : -1;
    int c = m1 ? strcmp(m1, m2) : 0;
    return c ? c : strcmp(p1, p2);
}

static const char *text_of(const store_value *v)
{
    return v->type == SV_TEXT ? v->p : NULL;
}

static int64_t int_of(const store_value *v, bool *has)
{
    *has = v->type == SV_INT || v->type == SV_REAL;
    return v->type == SV_INT ? v->i : v->type == SV_REAL ? (int64_t)v->d : 0;
}

static int req_offer(void *ctx, const store_value *const *rows, size_t i, int64_t ts, int64_t rowid)
{
    req_job *j = ctx;
    if (rkey_older((rkey){ts, rowid}, j->cut))
        return 0;
    if (j->version) {
        const char *v = text_of(&rows[j->c_version][i]);
        if (!v || strcmp(v, j->version) != 0)
            return 0;
    }
    const char *method = text_of(&rows[j->c_method][i]), *pattern = text_of(&rows[j->c_pattern][i]);
    if (!pattern)
        return 0; /* a group the answer leaves out */
    size_t lo = 0, hi = j->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = req_cmp(j->g[mid].method, j->g[mid].pattern, method, pattern);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == j->n || req_cmp(j->g[lo].method, j->g[lo].pattern, method, pattern) != 0) {
        if (j->n == j->cap) {
            size_t cap = j->cap ? 2 * j->cap : 64;
            req_group *g = realloc(j->g, cap * sizeof *g);
            if (!g)
                return -ENOMEM;
            j->g = g;
            j->cap = cap;
        }
        req_group ng = {.method = method ? strdup(method) : NULL, .pattern = strdup(pattern)};
        if ((method && !ng.method) || !ng.pattern) {
            free(ng.method);
            free(ng.pattern);
            return -ENOMEM;
        }
        memmove(j->g + lo + 1, j->g + lo, (j->n - lo) * sizeof *j->g);
        j->g[lo] = ng;
        j->n++;
    }
    store_request_stat *s = &j->g[lo].s;
    bool has;
    s->count++;
    s->failed += (uint64_t)int_of(&rows[j->c_failed][i], &has);
    s->bytes_received += (uint64_t)int_of(&rows[j->c_received][i], &has);
    s->with_bytes += has;
    s->bytes_sent += (uint64_t)int_of(&rows[j->c_sent][i], &has);
    const store_value *extra = &rows[j->c_extra][i];
    if (extra->type == SV_TEXT && strstr(extra->p, "pacer.classes")) {
        sqlite3_bind_text(j->classes, 1, extra->p, (int)extra->n, SQLITE_STATIC);
        int r = sqlite3_step(j->classes);
        const char *c = r == SQLITE_ROW ? (const char *)sqlite3_column_text(j->classes, 0) : NULL;
        if (c) {
            s->class_error += strstr(c, "error") != NULL;
            s->class_large_image += strstr(c, "large_image") != NULL;
            s->class_slow += strstr(c, "slow") != NULL;
        }
        sqlite3_reset(j->classes);
        if (r != SQLITE_ROW)
            return -EIO;
    }
    return 0;
}

static int read_request_stats(void *ctx, sqlite3 *db)
{
    req_job *j = ctx;
    enum store_table t = TABLE_REQUESTS;
    j->c_version = col_named(t, "version");
    j->c_method = col_named(t, "method");
    j->c_pattern = col_named(t, "pattern");
    j->c_failed = col_named(t, "failed");
    j->c_received = col_named(t, "bytes_received");
    j->c_sent = col_named(t, "bytes_sent");
    j->c_extra = col_named(t, "extra");
    if (j->c_version < 0 || j->c_method < 0 || j->c_pattern < 0 || j->c_failed < 0 || j->c_received < 0 ||
        j->c_sent < 0 || j->c_extra < 0)
        return -EINVAL;
    int r = range_cutoff(db, t, j->app, j->from, j->to, j->scan_max, &j->cut, &j->truncated);
    if (r < 0)
        return r;
    if (sqlite3_prepare_v2(db, CLASSES_SQL, -1, &j->classes, NULL) != SQLITE_OK)
        return -EIO;
    range_read rr = {.table = t, .app = j->app, .from = j->from, .to = j->to, .fn = req_offer, .ctx = j,
                     .keep = j->scan_max};
    r = range_rows(db, &rr);
    sqlite3_finalize(j->classes);
    for (size_t i = 0; i < j->n; i++) {
        if (r == 0) {
            j->g[i].s.method = j->g[i].method;
            j->g[i].s.pattern = j->g[i].pattern;
            j->cb(j->ctx, &j->g[i].s);
        }
        free(j->g[i].method);
        free(j->g[i].pattern);
    }
    free(j->g);
    return r;
}

int store_sqlite_request_stats(store *st, const char *app, const char *version, int64_t from_ns, int64_t to_ns,
                        size_t scan_max, void (*cb)(void *ctx, const store_request_stat *s), void *ctx,
                        bool *ret_truncated)
{
    req_job j = {.app = app, .version = version, .from = from_ns, .to = to_ns, .scan_max = scan_max, .cb = cb,
                 .ctx = ctx};
    int r = store_sqlite_read(st, read_request_stats, &j);
    *ret_truncated = j.truncated;
    return r;
}

/* ---- log records of one type ---- */

typedef struct logs_job {
    const char *app, *version, *type;
    int64_t from, to;
    size_t scan_max;
    void (*cb)(void *ctx, const store_log_row *row);
    void *ctx;
    bool truncated;
} logs_job;

static int read_logs(void *ctx, sqlite3 *db)
{
    logs_job *j = ctx;
    const char *sql = LOGS_SQL;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(s, 1, j->app, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, j->from);
    sqlite3_bind_int64(s, 3, j->to);
    sqlite3_bind_text(s, 4, j->type, -1, SQLITE_STATIC);
    bind_opt(s, 5, j->version);
    sqlite3_bind_int64(s, 6, (sqlite3_int64)j->scan_max);
    int r;
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
        store_log_row row = {
            .ts = sqlite3_column_int64(s, 0),
            .version = (const char *)sqlite3_column_text(s, 1),
            .session = (const char *)sqlite3_column_text(s, 2),
            .body = (const char *)sqlite3_column_text(s, 3),
            .body_len = (size_t)sqlite3_column_bytes(s, 3),
        };
        if (row.body)
            j->cb(j->ctx, &row);
    }
    sqlite3_finalize(s);
    if (r != SQLITE_DONE)
        return -EIO;
    j->truncated = rows_beyond(db, "logs", j->app, j->from, j->to, j->scan_max);
    return 0;
}

int store_sqlite_logs_of_type(store *st, const char *app, const char *version, const char *type, int64_t from_ns,
                       int64_t to_ns, size_t scan_max, void (*cb)(void *ctx, const store_log_row *row), void *ctx,
                       bool *ret_truncated)
{
    logs_job j = {app, version, type, from_ns, to_ns, scan_max, cb, ctx, false};
    int r = store_sqlite_read(st, read_logs, &j);
    *ret_truncated = j.truncated;
    return r;
}

/* ---- metric sums per attribute ---- */

typedef struct sums_job {
    const char *app, *version, *attr;
    const char *const *names;
    int64_t from, to;
    size_t scan_max;
    void (*cb)(void *ctx, const char *name, const char *group, double sum, uint64_t points);
    void *ctx;
    bool truncated;
} sums_job;

static int read_sums(void *ctx, sqlite3 *db)
{
    sums_job *j = ctx;
    const char *sql = SUMS_SQL;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    int r = SQLITE_DONE;
    for (size_t k = 0; j->names[k] && r == SQLITE_DONE; k++) {
        sqlite3_reset(s);
        sqlite3_bind_text(s, 1, j->app, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, j->names[k], -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, j->from);
        sqlite3_bind_int64(s, 4, j->to);
        bind_opt(s, 5, j->version);
        sqlite3_bind_text(s, 6, j->attr, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 7, (sqlite3_int64)j->scan_max);
        while ((r = sqlite3_step(s)) == SQLITE_ROW) {
            const char *g = (const char *)sqlite3_column_text(s, 0);
            j->cb(j->ctx, j->names[k], g ? g : "", sqlite3_column_double(s, 1), (uint64_t)sqlite3_column_int64(s, 2));
        }
    }
    sqlite3_finalize(s);
    if (r != SQLITE_DONE)
        return -EIO;
    /* per metric name the newest scan_max points: one name past it is enough to say so */
    sqlite3_stmt *c;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM (SELECT 1 FROM metric_points WHERE app = ?1 AND name = ?2"
                               " AND ts >= ?3 AND ts < ?4 LIMIT ?5)", -1, &c, NULL) != SQLITE_OK)
        return -EIO;
    for (size_t k = 0; j->names[k] && !j->truncated; k++) {
        sqlite3_reset(c);
        sqlite3_bind_text(c, 1, j->app, -1, SQLITE_STATIC);
        sqlite3_bind_text(c, 2, j->names[k], -1, SQLITE_STATIC);
        sqlite3_bind_int64(c, 3, j->from);
        sqlite3_bind_int64(c, 4, j->to);
        sqlite3_bind_int64(c, 5, (sqlite3_int64)j->scan_max + 1);
        if (sqlite3_step(c) == SQLITE_ROW && (size_t)sqlite3_column_int64(c, 0) > j->scan_max)
            j->truncated = true;
    }
    sqlite3_finalize(c);
    return 0;
}

int store_sqlite_metric_sums(store *st, const char *app, const char *version, const char *const *names, const char *attr,
                      int64_t from_ns, int64_t to_ns, size_t scan_max,
                      void (*cb)(void *ctx, const char *name, const char *group, double sum, uint64_t points),
                      void *ctx, bool *ret_truncated)
{
    sums_job j = {app, version, attr, names, from_ns, to_ns, scan_max, cb, ctx, false};
    int r = store_sqlite_read(st, read_sums, &j);
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
    static const enum store_table tables[] = {TABLE_PAGE_LOADS, TABLE_STARTUPS, TABLE_REQUESTS};
    int r = 0;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0] && r == 0; t++) {
        char name[64];
        snprintf(name, sizeof name, "rows of %s not sealed", store_table(tables[t])->name);
        char *sql = unsealed_sql(tables[t]);
        r = sql ? explain_one(db, name, sql, j) : -ENOMEM;
        sqlite3_free(sql);
    }
    if (r == 0)
        r = explain_one(db, "logs of a type", LOGS_SQL, j);
    if (r == 0)
        r = explain_one(db, "metric sums", SUMS_SQL, j);
    return r;
}

int store_sqlite_dash_explain(store *st, void (*cb)(void *ctx, const char *name, const char *sql, const char *plan),
                       void *ctx)
{
    explain_job j = {cb, ctx};
    return store_sqlite_read(st, explain_all, &j);
}
