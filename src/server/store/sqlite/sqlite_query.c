/* Reading rows back: a trace by id, span, log and metric point searches
 * (store.h, "reading rows back").
 *
 * Where each reads from:
 *   trace      trace_index (trace id → table, and a plain span's row or a
 *              record's time, which finds its block; one run per seal,
 *              seeked run by run), which a seal fills for the rows up to
 *              each partition's sealed mark, plus the rows after the marks
 *              by rowid range;
 *   spans      day by day, newest first: spans_keys (app, ts, rid) — or
 *              its index (app, name, ts), or span_attrs (app, day,
 *              attribute hash, ts) for an attribute filter — up to the
 *              day's rolled mark, plus the rows after it by rowid;
 *   logs       logs (app, ts) index;
 *   points     metric_points (app, name, ts) index.
 * Candidates come newest first from one or two ordered statements (merged
 * on (ts, row)); each is read whole by rowid, checked against the filters
 * the index does not cover (attribute values, the body's text) and
 * written. STORE_MAX_EXAMINED candidates at most per call: past that the
 * answer ends with a cursor, so a filter that matches rarely costs a few
 * pages, never a scan of the store.
 *
 * Rows are written as OTLP JSON from the layout (store_layout.c): a record
 * table's fields become pacer.<field> attributes again, its `extra`
 * attributes follow, and the resource and scope come from their tables.
 */
#include "store/store_backend.h"
#include "sqlite_int.h"
#include "store/store_attrs.h"
#include "store/store_filter.h"
#include "store/store_json.h"

#include <pacer/base/array.h>
#include <pacer/base/hash.h>
#include <pacer/base/json.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- SQL functions: an attribute's hash (store_attrs.h), a trace's key ---- */

static void attr_hash_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    const char *json = (const char *)sqlite3_value_text(argv[0]);
    int n = sqlite3_value_bytes(argv[0]);
    if (!json || n <= 0) {
        sqlite3_result_null(ctx);
        return;
    }
    char small[1024];
    char *buf = (size_t)n < sizeof small ? small : malloc((size_t)n + 1);
    if (!buf) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    memcpy(buf, json, (size_t)n);
    jread r;
    jread_init(&r, buf, (size_t)n, NULL, 0);
    store_attr a;
    if (store_attrs_read_one(&r, &a) && a.type != SA_ARRAY)
        sqlite3_result_int64(ctx, (int64_t)store_attrs_hash(a.key, a.key_len, a.text, a.len));
    else
        sqlite3_result_null(ctx);
    if (buf != small)
        free(buf);
}

int64_t sqlite_query_trace_key(const uint8_t *trace_id, size_t n)
{
    uint32_t k = 0;
    for (size_t i = 0; i < 4 && i < n; i++)
        k = k << 8 | trace_id[i];
    return (int64_t)(k & INT32_MAX); /* four bytes in a row of SQLite */
}

static void trace_key_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    const uint8_t *p = sqlite3_value_blob(argv[0]);
    int n = sqlite3_value_bytes(argv[0]);
    if (!p || n <= 0)
        sqlite3_result_null(ctx);
    else
        sqlite3_result_int64(ctx, sqlite_query_trace_key(p, (size_t)n));
}

int sqlite_query_register_functions(sqlite3 *db)
{
    int r = sqlite3_create_function(db, "pacer_attr_hash", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, attr_hash_fn,
                                    NULL, NULL);
    if (r == SQLITE_OK)
        r = sqlite3_create_function(db, "pacer_trace_key", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, trace_key_fn,
                                    NULL, NULL);
    return r;
}

static int64_t filter_hash(const store_attr_filter *f)
{
    char canon_text[1100];
    store_attrs_filter_text(f, canon_text, sizeof canon_text);
    return (int64_t)store_attrs_hash(f->key, strlen(f->key), canon_text, strlen(canon_text));
}

/* ---- writing rows ---- */

/* A row of a table: its columns (store_layout_columns), from SQLite or
 * from a block, with the JSON of its resource and scope. */
typedef struct rowv {
    const store_value *v;
    const char *resource, *scope;
} rowv;

static const void *rv_blob(const rowv *s, int c)
{
    return s->v[c].type == SV_BLOB ? s->v[c].p : NULL;
}

static int rv_bytes(const rowv *s, int c)
{
    return s->v[c].type == SV_BLOB ? (int)s->v[c].n : 0;
}

/* The row of statement q, which selected row_sql's columns. vals: room
 * for the table's columns. */
static rowv rowv_of(sqlite3_stmt *q, enum store_table tb, store_value *vals)
{
    int n = (int)store_layout_table(tb)->n_cols;
    for (int c = 0; c < n; c++)
        vals[c] = sqlite_store_column_value(q, c);
    return (rowv){vals, (const char *)sqlite3_column_text(q, n), (const char *)sqlite3_column_text(q, n + 1)};
}

/* SELECT of a row of t by rowid: the layout's columns, then the resource's
 * and the scope's JSON, then rowid. (malloc'd) */
static char *row_sql(enum store_table tb, const char *where)
{
    const store_table_desc *t = store_layout_table(tb);
    char *s = NULL;
    if (asprintf(&s,
                 "SELECT %s, (SELECT json FROM resources WHERE id = resource_id),"
                 " (SELECT json FROM scopes WHERE id = scope_id), rowid FROM %s %s",
                 t->columns, t->name, where) < 0)
        return NULL;
    return s;
}

/* ---- candidates, newest first ---- */

static void write_cursor(jbuf *b, int64_t ts, int64_t row)
{
    char cur[48];
    snprintf(cur, sizeof cur, "%" PRId64 ".%" PRId64, ts, row);
    jbuf_kv_str(b, "next", cur);
}

/* Binds the common range of a candidate statement: ?1 app, ?2 from, ?3 to,
 * ?4 ?5 the cursor (below (ts, row)). */
static void bind_range(sqlite3_stmt *s, const char *app, int64_t from, int64_t to, const store_cursor *after)
{
    sqlite3_bind_text(s, 1, app, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, from);
    sqlite3_bind_int64(s, 3, to);
    sqlite3_bind_int64(s, 4, after->set ? after->ts : INT64_MAX);
    sqlite3_bind_int64(s, 5, after->set ? after->row : INT64_MAX);
}

#define RANGE_SQL "app = ?1 AND ts >= ?2 AND ts < ?3 AND (ts < ?4 OR (ts = ?4 AND %s < ?5))"

/* The statements of a span search; see span_sql. */
enum { SQ_NAME = 1, SQ_VERSION = 2, SQ_DURATION = 4, SQ_ATTR = 8, SQ_COMBOS = 16 };

/* Candidates of one day, up to its rolled mark (keys == true: from
 * spans_keys / span_attrs) or after it (from spans, by rowid): rid, ts. ?6
 * name, ?7 version, ?8 ?9 duration, ?10 the rolled mark, ?11 the hash of
 * the first attribute filter, ?12 the day, ?13 the end of its rowids. */
static char *span_sql(unsigned flags, bool keys)
{
    char where[512], range[256];
    size_t o = 0;
    where[0] = 0;
    if (flags & SQ_NAME)
        o += (size_t)snprintf(where + o, sizeof where - o, " AND %sname = ?6", keys ? "k." : "");
    if (flags & SQ_VERSION)
        o += (size_t)snprintf(where + o, sizeof where - o, " AND %sversion = ?7", keys ? "k." : "");
    if (flags & SQ_DURATION)
        o += (size_t)snprintf(where + o, sizeof where - o,
                              keys ? " AND k.m0 >= ?8 AND k.m0 <= ?9" : " AND (end_ts - ts) / 1e6 >= ?8"
                                                                         " AND (end_ts - ts) / 1e6 <= ?9");
    char *s = NULL;
    int r;
    if (!keys) {
        snprintf(range, sizeof range, RANGE_SQL, "rowid");
        r = asprintf(&s,
                     "SELECT rowid, ts FROM spans WHERE rowid > ?10 AND rowid < ?13 AND %s%s"
                     " ORDER BY ts DESC, rowid DESC",
                     range, where);
    } else if (flags & SQ_ATTR) {
        snprintf(range, sizeof range,
                 "a.app = ?1 AND a.day = ?12 AND a.ts >= ?2 AND a.ts < ?3 AND (a.ts < ?4 OR (a.ts = ?4 AND a.rid < ?5))");
        r = asprintf(&s,
                     "SELECT a.rid, a.ts FROM span_attrs AS a CROSS JOIN spans_keys AS k"
                     " ON k.app = a.app AND k.ts = a.ts AND k.rid = a.rid"
                     " WHERE a.h = ?11 AND %s%s ORDER BY a.ts DESC, a.rid DESC",
                     range, where);
    } else {
        snprintf(range, sizeof range,
                 "k.app = ?1 AND k.ts >= ?2 AND k.ts < ?3 AND (k.ts < ?4 OR (k.ts = ?4 AND k.rid < ?5))");
        r = asprintf(&s, "SELECT k.rid, k.ts FROM spans_keys AS k WHERE %s%s ORDER BY k.ts DESC, k.rid DESC", range,
                     where);
    }
    return r < 0 ? NULL : s;
}

/* Two ordered candidate streams merged on (ts, row), newest first. */
typedef struct stream {
    sqlite3_stmt *s;
    bool live;
    int64_t row, ts;
} stream;

static void stream_step(stream *st)
{
    if (!st->s) {
        st->live = false;
        return;
    }
    st->live = sqlite3_step(st->s) == SQLITE_ROW;
    if (st->live) {
        st->row = sqlite3_column_int64(st->s, 0);
        st->ts = sqlite3_column_int64(st->s, 1);
    }
}

static stream *stream_pick(stream *a, stream *b)
{
    if (!a->live)
        return b->live ? b : NULL;
    if (!b->live)
        return a;
    return (a->ts > b->ts || (a->ts == b->ts && a->row > b->row)) ? a : b;
}

static int column_of(enum store_table tb, enum store_source src)
{
    const store_table_desc *t = store_layout_table(tb);
    for (size_t c = 0; c < t->n_cols; c++)
        if (t->cols[c].source == src)
            return (int)c;
    return -1;
}

int sqlite_query_search_spans(store *st, const store_span_query *q, jbuf *out)
{
    unsigned flags = (q->name ? SQ_NAME : 0) | (q->version ? SQ_VERSION : 0) |
                     (!isnan(q->min_ms) || !isnan(q->max_ms) ? SQ_DURATION : 0) | (q->n_attrs ? SQ_ATTR : 0);
    sqlite3 *db = sqlite_store_reader_get(st);
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    int r = -EIO;
    stream a = {0}, b = {0};
    sqlite3_stmt *row = NULL;
    part_marks *parts = NULL;
    size_t np = 0;
    char *sa = span_sql(flags, true), *sb = span_sql(flags, false), *sr = row_sql(TABLE_SPANS, "WHERE rowid = ?1");
    int64_t from = q->from_ns < 0 ? 0 : q->from_ns, to = q->to_ns;
    if (q->after.set && q->after.ts < to)
        to = q->after.ts + 1;
    if (!sa || !sb || !sr || sqlite3_prepare_v2(db, sa, -1, &a.s, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, sb, -1, &b.s, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, sr, -1, &row, NULL) != SQLITE_OK)
        goto out;
    if (to > from && sqlite_store_parts_read(db, TABLE_SPANS, day_of_ts(from), day_of_ts(to - 1), true, &parts, &np) < 0)
        goto out;
    store_value vals[STORE_MAX_COLS];
    jbuf_key(out, "spans");
    jbuf_open(out, '[');
    size_t n = 0, examined = 0;
    size_t start_len = out->len;
    int64_t last_ts = 0, last_row = 0;
    bool more = false;
    /* day by day, newest first: the days' times do not overlap */
    for (size_t d = 0; d < np && !more; d++) {
        int64_t lo = parts[d].day * STORE_DAY_NS, hi = lo + STORE_DAY_NS;
        lo = lo < from ? from : lo;
        hi = hi > to ? to : hi;
        stream *both[2] = {&a, &b};
        for (int i = 0; i < 2; i++) {
            sqlite3_stmt *s = both[i]->s;
            sqlite3_reset(s);
            bind_range(s, q->app, lo, hi, &q->after);
            if (q->name)
                sqlite3_bind_text(s, 6, q->name, -1, SQLITE_STATIC);
            if (q->version)
                sqlite3_bind_text(s, 7, q->version, -1, SQLITE_STATIC);
            sqlite3_bind_double(s, 8, isnan(q->min_ms) ? -1e300 : q->min_ms);
            sqlite3_bind_double(s, 9, isnan(q->max_ms) ? 1e300 : q->max_ms);
            if (i == 1) {
                sqlite3_bind_int64(s, 10, parts[d].rolled);
                sqlite3_bind_int64(s, 13, part_base(parts[d].day + 1));
            } else if (flags & SQ_ATTR) {
                sqlite3_bind_int64(s, 11, filter_hash(&q->attrs[0]));
                sqlite3_bind_int64(s, 12, parts[d].day);
            }
        }
        stream_step(&a);
        stream_step(&b);
        stream *p;
        while ((p = stream_pick(&a, &b))) {
            if (n == q->limit || examined == STORE_MAX_EXAMINED || out->len - start_len > STORE_MAX_ANSWER) {
                more = true;
                break;
            }
            examined++;
            last_ts = p->ts;
            last_row = p->row;
            sqlite3_bind_int64(row, 1, p->row);
            if (sqlite3_step(row) == SQLITE_ROW) {
                rowv rv = rowv_of(row, TABLE_SPANS, vals);
                if (store_filter_row(TABLE_SPANS, rv.v, NULL, q->attrs, q->n_attrs)) {
                    store_json_span(out, TABLE_SPANS, rv.v, rv.resource, rv.scope);
                    n++;
                }
            }
            sqlite3_reset(row);
            stream_step(p);
        }
    }
    jbuf_close(out, ']');
    if (more)
        write_cursor(out, last_ts, last_row);
    r = out->failed ? -ENOMEM : 0;
out:
    sqlite3_finalize(a.s);
    sqlite3_finalize(b.s);
    sqlite3_finalize(row);
    free(sa);
    free(sb);
    free(sr);
    free(parts);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite_store_reader_put(st, db);
    return r;
}

/* The candidate statement of logs (by (app, ts)) and of points (by (app,
 * name, ts)), with the whole row: `filter` is what ?6 asks of each. */
static char *search_sql(enum store_table tb, const char *filter)
{
    char range[256];
    snprintf(range, sizeof range, RANGE_SQL, "rowid");
    char where[512];
    snprintf(where, sizeof where, "WHERE %s AND %s ORDER BY ts DESC, rowid DESC", range, filter);
    return row_sql(tb, where);
}
#define LOG_FILTER "(?6 = 0 OR severity_number >= ?6)"
#define POINT_FILTER "name = ?6"

/* Logs and points: one statement, filters in C, bounded. */
static int search_rows(store *st, enum store_table tb, const char *app, int64_t from, int64_t to,
                       const store_cursor *after, size_t limit, int bind6, const char *bind6_text, const char *text,
                       const store_attr_filter *attrs, size_t n_attrs, jbuf *out)
{
    char *sql = search_sql(tb, tb == TABLE_LOGS ? LOG_FILTER : POINT_FILTER);
    const char *list = tb == TABLE_LOGS ? "logs" : "points";
    sqlite3 *db = sqlite_store_reader_get(st);
    sqlite3_stmt *s = NULL;
    int r = -EIO;
    if (!sql || sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        goto out;
    bind_range(s, app, from, to, after);
    if (bind6_text)
        sqlite3_bind_text(s, 6, bind6_text, -1, SQLITE_STATIC);
    else
        sqlite3_bind_int(s, 6, bind6);
    int c_ts = column_of(tb, SRC_COMMON); /* ts is the first common column */
    int c_row = (int)store_layout_table(tb)->n_cols + 2;
    store_value vals[STORE_MAX_COLS];
    jbuf_key(out, list);
    jbuf_open(out, '[');
    size_t n = 0, examined = 0, start_len = out->len;
    int64_t last_ts = 0, last_row = 0;
    bool more = false;
    int sr;
    while ((sr = sqlite3_step(s)) == SQLITE_ROW) {
        if (n == limit || examined == STORE_MAX_EXAMINED || out->len - start_len > STORE_MAX_ANSWER) {
            more = true;
            break;
        }
        examined++;
        last_ts = sqlite3_column_int64(s, c_ts);
        last_row = sqlite3_column_int64(s, c_row);
        rowv rv = rowv_of(s, tb, vals);
        if (!store_filter_row(tb, rv.v, text, attrs, n_attrs))
            continue;
        if (tb == TABLE_LOGS)
            store_json_log(out, rv.v, rv.resource, rv.scope);
        else
            store_json_point(out, rv.v, rv.resource, rv.scope);
        n++;
    }
    jbuf_close(out, ']');
    if (more)
        write_cursor(out, last_ts, last_row);
    r = sr == SQLITE_ROW || sr == SQLITE_DONE ? (out->failed ? -ENOMEM : 0) : -EIO;
out:
    sqlite3_finalize(s);
    free(sql);
    sqlite_store_reader_put(st, db);
    return r;
}

int sqlite_query_search_logs(store *st, const store_log_query *q, jbuf *out)
{
    return search_rows(st, TABLE_LOGS, q->app, q->from_ns, q->to_ns, &q->after, q->limit, q->min_severity, NULL,
                       q->text, NULL, 0, out);
}

int sqlite_query_search_points(store *st, const store_point_query *q, jbuf *out)
{
    return search_rows(st, TABLE_METRIC_POINTS, q->app, q->from_ns, q->to_ns, &q->after, q->limit, 0, q->name, NULL,
                       q->attrs, q->n_attrs, out);
}

/* ---- a trace ---- */

#define TRACE_MAX_SPANS 10000

/* A span of the trace: a row of a table (vals NULL: read again by rowid
 * to be written), or a copy of a block's row. */
typedef struct trace_row {
    int tbl;
    int64_t rid, ts;
    store_value *vals;
    const char *resource, *scope;
} trace_row;

typedef struct trace_set {
    trace_row *rows;
    size_t n, cap;
    bool truncated, oom;
    /* block rows: copies */
    struct copy {
        struct copy *next;
        char data[];
    } *copies;
} trace_set;

static trace_row *trace_add(trace_set *t)
{
    if (t->n == TRACE_MAX_SPANS) {
        t->truncated = true;
        return NULL;
    }
    if (!ARRAY_GROW(t->rows, t->cap, t->n + 1, 64)) {
        t->oom = true;
        return NULL;
    }
    trace_row *r = &t->rows[t->n++];
    memset(r, 0, sizeof *r);
    return r;
}

static void *trace_copy(trace_set *t, const void *p, size_t n)
{
    struct copy *c = malloc(sizeof *c + n + 1);
    if (!c) {
        t->oom = true;
        return NULL;
    }
    c->next = t->copies;
    t->copies = c;
    if (n && p)
        memcpy(c->data, p, n);
    c->data[n] = 0;
    return c->data;
}

static int cmp_trace_row(const void *x, const void *y)
{
    const trace_row *a = x, *b = y;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    if (a->tbl != b->tbl)
        return a->tbl < b->tbl ? -1 : 1;
    return a->rid < b->rid ? -1 : a->rid > b->rid;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

/* trace_index holds one run per seal (trace_runs), in chunks: per run,
 * the chunk that would hold the key (an index seek each). */
static const char TRACE_RUN_SQL[] = "SELECT b FROM trace_runs WHERE b > ?1 ORDER BY b LIMIT 1";
static const char TRACE_KEYS_SQL[] = "SELECT t_lo, data FROM trace_index WHERE b = ?1 AND t_lo <= ?2"
                                     " ORDER BY t_lo DESC LIMIT 1";
/* the rows of a table after a partition's sealed mark (not in trace_index) */
static char *trace_after_sql(enum store_table t)
{
    char *s = NULL;
    if (asprintf(&s, "SELECT rowid, ts FROM %s WHERE rowid > ?2 AND rowid < ?3 AND trace_id = ?1",
                 store_layout_table(t)->name) < 0)
        return NULL;
    return s;
}

static const char RESOURCE_SQL[] = "SELECT json FROM resources WHERE id = ?1";
static const char SCOPE_SQL[] = "SELECT json FROM scopes WHERE id = ?1";

typedef struct trace_blocks {
    trace_set *set;
    enum store_table table;
    const uint8_t *trace_id;
    const int64_t *ts; /* the times trace_index named, sorted */
    size_t n_ts;
    sqlite3_stmt *origin[2];
} trace_blocks;

static const char *origin_json(trace_blocks *tb, int which, const store_value *id)
{
    if (id->type != SV_INT)
        return NULL;
    sqlite3_stmt *s = tb->origin[which];
    sqlite3_bind_int64(s, 1, id->i);
    const char *json = NULL;
    if (sqlite3_step(s) == SQLITE_ROW)
        json = trace_copy(tb->set, sqlite3_column_text(s, 0), (size_t)sqlite3_column_bytes(s, 0));
    sqlite3_reset(s);
    return json;
}

static int on_trace_block(void *ctx, size_t n, const store_value *const *rows, const int64_t *rowids, const char *app)
{
    (void)app;
    trace_blocks *tb = ctx;
    const store_table_desc *t = store_layout_table(tb->table);
    int c_tid = column_of(tb->table, SRC_TRACE_ID), c_ts = column_of(tb->table, SRC_COMMON);
    int c_res = column_of(tb->table, SRC_RESOURCE_ID), c_scope = column_of(tb->table, SRC_SCOPE_ID);
    for (size_t i = 0; i < n && !tb->set->truncated && !tb->set->oom; i++) {
        const store_value *tid = &rows[c_tid][i], *ts = &rows[c_ts][i];
        if (tid->type != SV_BLOB || tid->n != 16 || memcmp(tid->p, tb->trace_id, 16) != 0 || ts->type != SV_INT ||
            !bsearch(&ts->i, tb->ts, tb->n_ts, sizeof *tb->ts, cmp_i64))
            continue;
        store_value *vals = trace_copy(tb->set, NULL, t->n_cols * sizeof *vals);
        trace_row *r = vals ? trace_add(tb->set) : NULL;
        if (!r)
            break;
        for (size_t c = 0; c < t->n_cols; c++) {
            vals[c] = rows[c][i];
            if ((vals[c].type == SV_TEXT || vals[c].type == SV_BLOB) &&
                !(vals[c].p = trace_copy(tb->set, vals[c].p, vals[c].n)))
                return -ENOMEM;
        }
        *r = (trace_row){(int)tb->table, rowids[i], ts->i, vals, c_res >= 0 ? origin_json(tb, 0, &rows[c_res][i]) : NULL,
                         c_scope >= 0 ? origin_json(tb, 1, &rows[c_scope][i]) : NULL};
    }
    return tb->set->oom ? -ENOMEM : 0;
}

/* The rows of record table t that trace_index named by time (ts[0 … n)):
 * from the blocks of their days. */
static int trace_from_blocks(sqlite3 *db, trace_set *set, enum store_table t, const uint8_t *trace_id, int64_t *ts,
                             size_t n)
{
    qsort(ts, n, sizeof *ts, cmp_i64);
    trace_blocks tb = {.set = set, .table = t, .trace_id = trace_id, .ts = ts, .n_ts = n};
    if (sqlite3_prepare_v2(db, RESOURCE_SQL, -1, &tb.origin[0], NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, SCOPE_SQL, -1, &tb.origin[1], NULL) != SQLITE_OK) {
        sqlite3_finalize(tb.origin[0]);
        return -EIO;
    }
    int r = 0;
    for (size_t i = 0; i < n && r == 0;) {
        int64_t day = day_of_ts(ts[i]);
        size_t j = i;
        while (j < n && day_of_ts(ts[j]) == day)
            j++;
        r = sqlite_seal_blocks_read(db, t, NULL, day, ts[i], ts[j - 1] + 1, -1, NULL, on_trace_block, &tb);
        i = j;
    }
    sqlite3_finalize(tb.origin[0]);
    sqlite3_finalize(tb.origin[1]);
    return r;
}

/* What trace_index names: a plain span's row, a record's time. */
typedef struct trace_found {
    trace_set *set;
    int64_t **times;
    size_t *n_times, *cap_times;
} trace_found;

static void on_trace_entry(void *ctx, int tbl, int64_t rid)
{
    trace_found *f = ctx;
    if (f->set->truncated || f->set->oom || store_layout_table((enum store_table)tbl)->kind == KIND_NONE)
        return;
    if (store_layout_table((enum store_table)tbl)->type) { /* a record: its time, to find its block */
        if (f->n_times[tbl] == TRACE_MAX_SPANS) {
            f->set->truncated = true;
            return;
        }
        if (!ARRAY_GROW(f->times[tbl], f->cap_times[tbl], f->n_times[tbl] + 1, 16)) {
            f->set->oom = true;
            return;
        }
        f->times[tbl][f->n_times[tbl]++] = rid;
        return;
    }
    trace_row *tr = trace_add(f->set);
    if (tr)
        *tr = (trace_row){tbl, rid, 0, NULL, NULL, NULL};
}

int sqlite_query_trace(store *st, const uint8_t trace_id[16], jbuf *out, size_t *ret_n)
{
    sqlite3 *db = sqlite_store_reader_get(st);
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    int r = -EIO;
    trace_set set = {0};
    int64_t *times[TABLE_COUNT] = {NULL};
    size_t n_times[TABLE_COUNT] = {0}, cap_times[TABLE_COUNT] = {0};
    sqlite3_stmt *runs = NULL, *keys = NULL, *s = NULL;
    sqlite3_stmt *by_table[TABLE_COUNT] = {NULL};
    *ret_n = 0;
    /* sealed: the index, run by run */
    if (sqlite3_prepare_v2(db, TRACE_RUN_SQL, -1, &runs, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, TRACE_KEYS_SQL, -1, &keys, NULL) != SQLITE_OK)
        goto out;
    trace_found found = {&set, times, n_times, cap_times};
    int64_t key = sqlite_query_trace_key(trace_id, 16); /* the row's own trace id is checked below */
    for (int64_t run = -1; !set.truncated && !set.oom;) {
        sqlite3_bind_int64(runs, 1, run);
        if (sqlite3_step(runs) != SQLITE_ROW)
            break;
        run = sqlite3_column_int64(runs, 0);
        sqlite3_reset(runs);
        sqlite3_bind_int64(keys, 1, run);
        sqlite3_bind_int64(keys, 2, key);
        if (sqlite3_step(keys) == SQLITE_ROW &&
            store_codec_trace_chunk_find(sqlite3_column_blob(keys, 1), (size_t)sqlite3_column_bytes(keys, 1),
                                   sqlite3_column_int64(keys, 0), key, on_trace_entry, &found) < 0)
            goto out;
        sqlite3_reset(keys);
    }
    /* not sealed yet: the rows after each partition's sealed mark, by rowid */
    for (enum store_kind k = 0; k < KIND_COUNT && !set.truncated && !set.oom; k++) {
        enum store_table t = store_layout_kind(k)->table;
        part_marks *parts;
        size_t np;
        char *sql = trace_after_sql(t);
        if (!sql || sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK ||
            sqlite_store_parts_read(db, t, 0, INT64_MAX, false, &parts, &np) < 0) {
            free(sql);
            goto out;
        }
        free(sql);
        /* a record table's rows wait in one range; a plain span's per day */
        for (size_t i = 0; i < (store_is_record(t) && np ? 1 : np) && !set.truncated && !set.oom; i++) {
            sqlite3_bind_blob(s, 1, trace_id, 16, SQLITE_STATIC);
            sqlite3_bind_int64(s, 2, parts[i].sealed);
            sqlite3_bind_int64(s, 3, store_is_record(t) ? INT64_MAX : part_base(parts[i].day + 1));
            while (sqlite3_step(s) == SQLITE_ROW) {
                trace_row *tr = trace_add(&set);
                if (!tr)
                    break;
                *tr = (trace_row){(int)t, sqlite3_column_int64(s, 0), 0, NULL, NULL, NULL};
            }
            sqlite3_reset(s);
        }
        free(parts);
        sqlite3_finalize(s);
        s = NULL;
    }
    for (enum store_table t = 0; t < TABLE_COUNT && !set.oom; t++)
        if (n_times[t] && trace_from_blocks(db, &set, t, trace_id, times[t], n_times[t]) < 0)
            goto out;
    if (set.oom)
        goto out;
    /* the rows of tables: their times first, to sort */
    for (enum store_kind k = 0; k < KIND_COUNT; k++) {
        enum store_table tb = store_layout_kind(k)->table;
        char *sql = row_sql(tb, "WHERE rowid = ?1");
        int pr = sql ? sqlite3_prepare_v2(db, sql, -1, &by_table[tb], NULL) : SQLITE_NOMEM;
        free(sql);
        if (pr != SQLITE_OK)
            goto out;
    }
    for (size_t i = 0; i < set.n; i++) {
        trace_row *tr = &set.rows[i];
        if (tr->vals)
            continue;
        sqlite3_stmt *q = by_table[tr->tbl];
        sqlite3_bind_int64(q, 1, tr->rid);
        tr->ts = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, column_of((enum store_table)tr->tbl, SRC_COMMON))
                                                : INT64_MIN; /* gone (retention) */
        sqlite3_reset(q);
    }
    qsort(set.rows, set.n, sizeof *set.rows, cmp_trace_row);
    jbuf_key(out, "spans");
    jbuf_open(out, '[');
    size_t start_len = out->len, written = 0;
    store_value vals[STORE_MAX_COLS];
    for (size_t i = 0; i < set.n; i++) {
        trace_row *tr = &set.rows[i];
        if (out->len - start_len > STORE_MAX_ANSWER) {
            set.truncated = true;
            break;
        }
        if (tr->vals) {
            rowv rv = {tr->vals, tr->resource, tr->scope};
            store_json_span(out, (enum store_table)tr->tbl, rv.v, rv.resource, rv.scope);
            written++;
            continue;
        }
        if (tr->ts == INT64_MIN)
            continue;
        sqlite3_stmt *q = by_table[tr->tbl];
        sqlite3_bind_int64(q, 1, tr->rid);
        if (sqlite3_step(q) == SQLITE_ROW) {
            rowv rv = rowv_of(q, (enum store_table)tr->tbl, vals);
            int c = column_of((enum store_table)tr->tbl, SRC_TRACE_ID);
            if (c >= 0 && rv_bytes(&rv, c) == 16 && memcmp(rv_blob(&rv, c), trace_id, 16) == 0) {
                store_json_span(out, (enum store_table)tr->tbl, rv.v, rv.resource, rv.scope);
                written++;
            }
        }
        sqlite3_reset(q);
    }
    jbuf_close(out, ']');
    if (set.truncated)
        jbuf_kv_bool(out, "truncated", true);
    *ret_n = written;
    r = out->failed ? -ENOMEM : 0;
out:
    sqlite3_finalize(runs);
    sqlite3_finalize(keys);
    sqlite3_finalize(s);
    for (int t = 0; t < TABLE_COUNT; t++) {
        sqlite3_finalize(by_table[t]);
        free(times[t]);
    }
    free(set.rows);
    while (set.copies) {
        struct copy *c = set.copies;
        set.copies = c->next;
        free(c);
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite_store_reader_put(st, db);
    return r;
}

/* ---- plans ---- */

static int explain_one(sqlite3 *db, const char *name, const char *sql,
                       void (*cb)(void *ctx, const char *name, const char *sql, const char *plan), void *ctx)
{
    if (!sql)
        return -ENOMEM;
    char *q = NULL;
    if (asprintf(&q, "EXPLAIN QUERY PLAN %s", sql) < 0)
        return -ENOMEM;
    sqlite3_stmt *s;
    int r = sqlite3_prepare_v2(db, q, -1, &s, NULL);
    free(q);
    if (r != SQLITE_OK)
        return -EIO;
    jbuf plan;
    jbuf_init(&plan);
    while (sqlite3_step(s) == SQLITE_ROW) {
        if (plan.len)
            jbuf_raw(&plan, "; ", 2);
        jbuf_puts(&plan, (const char *)sqlite3_column_text(s, 3));
    }
    sqlite3_finalize(s);
    cb(ctx, name, sql, plan.data ? plan.data : "");
    jbuf_free(&plan);
    return 0;
}

int sqlite_query_explain(store *st, void (*cb)(void *ctx, const char *name, const char *sql, const char *plan), void *ctx)
{
    sqlite3 *db = sqlite_store_reader_get(st);
    static const struct {
        const char *name, *sql;
    } fixed[] = {
        {"trace: runs", TRACE_RUN_SQL},
        {"trace: keys", TRACE_KEYS_SQL},
        {"trace: resource", RESOURCE_SQL},
        {"partitions", "SELECT day, rolled, sealed, hourly FROM partitions WHERE tbl = ?1 AND day >= ?2 AND day <= ?3"
                       " ORDER BY day DESC"},
        {"blocks of an app's day", "SELECT layout, data, app FROM blocks WHERE tbl = ?1 AND day = ?2 AND app = ?3"
                                   " AND t_lo < ?5 AND t_hi >= ?4 AND r_hi > ?6"},
        {"blocks of a day", "SELECT layout, data, app FROM blocks WHERE tbl = ?1 AND day = ?2"
                            " AND t_lo < ?5 AND t_hi >= ?4 AND r_hi > ?6"},
        {"blocks of a range of rowids", STORE_BLOCKS_ROWIDS_SQL},
        {"positions after a mark", STORE_ARRIVALS_SQL},
        {"sub-day rollups", "SELECT name, count, failed, sketches FROM subday WHERE kind = ?1 AND app = ?2 AND width = ?6"
                            " AND t >= ?4 AND t < ?5 AND (?3 IS NULL OR version = ?3)"},
    };
    int r = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] && r == 0; i++)
        r = explain_one(db, fixed[i].name, fixed[i].sql, cb, ctx);
    for (enum store_kind k = 0; k < KIND_COUNT && r == 0; k++) {
        char name[64], *sql = trace_after_sql(store_layout_kind(k)->table);
        snprintf(name, sizeof name, "trace: %s after the mark", store_layout_table(store_layout_kind(k)->table)->name);
        r = explain_one(db, name, sql, cb, ctx);
        free(sql);
        if (r == 0) {
            sql = row_sql(store_layout_kind(k)->table, "WHERE rowid = ?1");
            snprintf(name, sizeof name, "row of %s", store_layout_table(store_layout_kind(k)->table)->name);
            r = explain_one(db, name, sql, cb, ctx);
            free(sql);
        }
        if (r == 0) {
            sql = sqlite_store_raw_select(k, "WHERE rowid > ?5 AND rowid < ?6 AND app = ?1 AND ts >= ?2 AND ts < ?3"
                                      " AND (?4 IS NULL OR version = ?4)");
            snprintf(name, sizeof name, "scan: %s after the mark", store_layout_table(store_layout_kind(k)->table)->name);
            r = explain_one(db, name, sql, cb, ctx);
            free(sql);
        }
    }
    for (unsigned f = 0; f < SQ_COMBOS && r == 0; f++)
        for (int keys = 1; keys >= 0 && r == 0; keys--) {
            char name[96], *sql = span_sql(f, keys);
            snprintf(name, sizeof name, "spans:%s%s%s%s %s", f & SQ_NAME ? " name" : "", f & SQ_VERSION ? " version" : "",
                     f & SQ_DURATION ? " duration" : "", f & SQ_ATTR ? " attribute" : "",
                     keys ? "up to the mark" : "after the mark");
            r = explain_one(db, name, sql, cb, ctx);
            free(sql);
        }
    char *sql = search_sql(TABLE_LOGS, LOG_FILTER);
    if (r == 0)
        r = explain_one(db, "logs", sql, cb, ctx);
    free(sql);
    sql = search_sql(TABLE_METRIC_POINTS, POINT_FILTER);
    if (r == 0)
        r = explain_one(db, "points", sql, cb, ctx);
    free(sql);
    sqlite_store_reader_put(st, db);
    return r;
}
