/* The ClickHouse store's queries (store.h; the tables: ch_store.c).
 *
 * Percentiles (store_scan) read the rollup tiers: level 2 up to its
 * watermark (by day for whole days, by hour for the hours of days a range
 * cuts, by 10 minutes for the rest of hours it cuts), level 1 after it,
 * the committed attempts of pending after level 1's watermark (winners
 * only); the part of a range that cuts 10 minutes is read from the raw
 * rows. A consolidated slot written twice (two
 * instances) is read once: rows come sorted by key and slot, and a row
 * whose key and slot equal the previous one's is skipped.
 *
 * Raw rows (traces, searches, samples, cut hours) are read once per
 * identity (trace and span id; a log's or point's rid): `LIMIT 1 BY` keeps
 * one of the copies a retried batch left. Items come newest first by
 * (ts, row key) where the row key is the span id's first 8 bytes (or the
 * rid), halved to fit the cursor's 63 bits: items of the same nanosecond
 * come in that order, not in the order they were stored.
 */
#include "ch_int.h"
#include "store/store_filter.h"
#include "store/store_json.h"

#include <pacer/base/array.h>
#include <pacer/base/clock.h>
#include <pacer/base/json.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HOUR_NS INT64_C(3600000000000)
#define MAX_SLOT (INT64_MAX / CH_SLOT_NS)

static int64_t ceil_div(int64_t a, int64_t b)
{
    return a / b + (a % b != 0);
}

/* ---- rollups ---- */

int ch_read_watermarks(ch_store *st, int64_t *ret_hour, int64_t *ret_day)
{
    ch_reply rep;
    int r = ch_store_read(st, "SELECT lvl, max(slot) FROM slots GROUP BY lvl FORMAT TabSeparated", &rep, "a query");
    if (r < 0)
        return r;
    *ret_hour = *ret_day = -1;
    for (const char *p = rep.body; p && *p;) {
        int lvl = 0;
        long long slot = 0;
        if (sscanf(p, "%d\t%lld", &lvl, &slot) == 2) {
            if (lvl == 1)
                *ret_hour = slot;
            if (lvl == 2)
                *ret_day = slot;
        }
        p += strcspn(p, "\n");
        p += *p == '\n';
    }
    ch_client_reply_free(&rep);
    return 0;
}

static void filter_common(jbuf *q, const ch_rollup_query *rq)
{
    jbuf_puts(q, "app = ");
    ch_store_sql_str(q, rq->app);
    if (rq->kind >= 0)
        jbuf_printf(q, " AND kind = %d", rq->kind);
    if (rq->version) {
        jbuf_puts(q, " AND version = ");
        ch_store_sql_str(q, rq->version);
    }
}

/* "(t >= a AND t < b)" or "0" for an empty range */
static void range(jbuf *q, int64_t a, int64_t b)
{
    if (a >= b)
        jbuf_puts(q, "0");
    else
        jbuf_printf(q, "(t >= %" PRId64 " AND t < %" PRId64 ")", a, b);
}

typedef struct rollup_ctx {
    void (*cb)(void *ctx, const ch_srow *row);
    void *ctx;
} rollup_ctx;

static void on_pending(void *ctx, const ch_srow *row, uint64_t att, const char *batch, bool fresh, uint32_t at)
{
    rollup_ctx *c = ctx;
    if (row->kind >= 0)
        c->cb(c->ctx, row);
}

/* One tier of rollups: rows of `where`, each once per slot. */
static int read_tier(ch_store *st, const char *where, void (*cb)(void *ctx, const ch_srow *row), void *ctx)
{
    ch_reply rep;
    rb_reader rd;
    int r = ch_store_read_rowsf(st, &rep, &rd, "a query",
                                "SELECT slot, " CH_SKETCH_COLUMNS " FROM rollups WHERE %s"
                                " ORDER BY kind, app, version, name, grain, t, slot FORMAT RowBinary",
                                where);
    if (r < 0)
        return r;
    ch_srows s;
    ch_layout_srows_begin(&s, rep.body, rep.len);
    int got;
    while ((got = ch_layout_srows_next(&s)) > 0)
        cb(ctx, &s.row);
    ch_layout_srows_end(&s);
    if (got < 0)
        r = got;
    ch_client_reply_free(&rep);
    return r;
}

int ch_read_rollups(ch_store *st, const ch_rollup_query *rq, void (*cb)(void *ctx, const ch_srow *row), void *ctx)
{
    int64_t w1, w2;
    int r = ch_read_watermarks(st, &w1, &w2);
    if (r < 0)
        return r;
    int64_t per = st->day_s / st->unit_s;
    jbuf q;
    /* level 2: its days by day, the hours of the days cut by hour, the
     * slots of the hours cut by slot */
    if (w2 >= 0) {
        jbuf_init(&q);
        jbuf_printf(&q, "lvl = 2 AND slot <= %" PRId64 " AND ", w2);
        filter_common(&q, rq);
        jbuf_printf(&q, " AND ((grain = %d AND ", CH_GRAIN_DAY);
        range(&q, rq->d_lo, rq->d_hi);
        jbuf_printf(&q, ") OR (grain = %d AND (", CH_GRAIN_HOUR);
        range(&q, rq->h_lo, rq->h_hi);
        jbuf_puts(&q, " OR ");
        range(&q, rq->h2_lo, rq->h2_hi);
        jbuf_printf(&q, ")) OR (grain = %d AND (", CH_GRAIN_SLOT);
        range(&q, rq->s_lo, rq->s_hi);
        jbuf_puts(&q, " OR ");
        range(&q, rq->s2_lo, rq->s2_hi);
        jbuf_puts(&q, ")))");
        r = q.failed ? -ENOMEM : read_tier(st, q.data, cb, ctx);
        jbuf_free(&q);
        if (r < 0)
            return r;
    }
    /* level 1 after level 2, and pending after level 1: by slot */
    int64_t all_lo = rq->a_lo, all_hi = rq->a_hi;
    if (w1 > (w2 + 1) * per - 1) {
        jbuf_init(&q);
        jbuf_printf(&q, "lvl = 1 AND slot > %" PRId64 " AND slot <= %" PRId64 " AND grain = %d AND ", (w2 + 1) * per - 1,
                    w1, CH_GRAIN_SLOT);
        filter_common(&q, rq);
        jbuf_puts(&q, " AND ");
        range(&q, all_lo, all_hi);
        r = q.failed ? -ENOMEM : read_tier(st, q.data, cb, ctx);
        jbuf_free(&q);
        if (r < 0)
            return r;
    }
    /* the committed attempts after level 1 */
    jbuf_init(&q);
    jbuf_printf(&q, "toUInt32(at) >= %" PRId64 " AND ", (w1 + 1) * st->unit_s);
    filter_common(&q, rq);
    jbuf_puts(&q, " AND ");
    range(&q, all_lo, all_hi);
    rollup_ctx c = {cb, ctx};
    r = q.failed ? -ENOMEM : ch_keeper_pending_rows(st, q.data, on_pending, &c);
    jbuf_free(&q);
    return r;
}

/* ---- raw rows ---- */

/* The row key of a decoded row: its span id's first 8 bytes (big-endian)
 * or its rid, halved. */
static int64_t row_key(const ch_table *t, const ch_row *row)
{
    if (t->span_col >= 0 && store_layout_table(row->row.table)->kind != KIND_NONE) {
        const store_value *v = &row->row.cols[t->span_col];
        uint64_t k = 0;
        for (size_t i = 0; v->type == SV_BLOB && i < 8 && i < v->n; i++)
            k = k << 8 | ((const uint8_t *)v->p)[i];
        return (int64_t)(k >> 1);
    }
    return (int64_t)(row->rid >> 1);
}

const char *ch_read_rk_sql(enum store_table tb)
{
    return store_layout_table(tb)->kind != KIND_NONE ? "bitShiftRight(" CH_SPAN_ID_SQL ", 1)"
                                              : "bitShiftRight(rid, 1)";
}

const char *ch_read_identity_sql(enum store_table tb)
{
    return store_layout_table(tb)->kind != KIND_NONE ? "trace_id, span_xor" : "rid";
}

/* Rows of table tb matching `tail` ("WHERE … ORDER BY …"), deduplicated,
 * each to cb until it returns false. */
int ch_read_select_rows(ch_store *st, enum store_table tb, const char *where, const char *order, size_t limit,
                       bool (*cb)(void *ctx, ch_row *row), void *ctx, const char *what, ch_reply *keep)
{
    const ch_table *t = ch_layout_table(tb);
    jbuf q;
    jbuf_init(&q);
    jbuf_printf(&q, "SELECT %s FROM %s WHERE %s", t->columns, t->name, where);
    if (order)
        jbuf_printf(&q, " ORDER BY %s", order);
    jbuf_printf(&q, " LIMIT 1 BY %s", ch_read_identity_sql(tb));
    if (limit)
        jbuf_printf(&q, " LIMIT %zu", limit);
    jbuf_puts(&q, " FORMAT RowBinary");
    int r = ch_store_read_query(st, &q, keep, what);
    if (r < 0)
        return r;
    rb_reader rd;
    rb_reader_init(&rd, keep->body, keep->len);
    while (rb_more(&rd)) {
        ch_row row;
        if (!ch_layout_decode_row(t, &rd, &row))
            return -EIO;
        if (!cb(ctx, &row))
            break;
    }
    return 0;
}

void ch_read_ts_where(jbuf *q, int64_t from, int64_t to)
{
    int64_t s0 = ch_ts_s(from), s1 = ch_ts_s(to > INT64_MIN ? to - 1 : to);
    jbuf_printf(q,
                " AND ts >= %" PRId64 " AND ts < %" PRId64 " AND ts_s >= %" PRId64 " AND ts_s <= %" PRId64
                " AND intDiv(ts_s, 3600) >= %" PRId64 " AND intDiv(ts_s, 3600) <= %" PRId64,
                from, to, s0, s1, s0 / 3600, s1 / 3600);
}

/* app and [from, to). */
void ch_read_time_where(jbuf *q, const char *app, int64_t from, int64_t to)
{
    jbuf_puts(q, "app = ");
    ch_store_sql_str(q, app);
    ch_read_ts_where(q, from, to);
}

#define MAX_WINDOWS 16

/* What scan_windows hands on: the caller's callback, counting. */
typedef struct counting {
    bool (*cb)(void *ctx, ch_row *row);
    void *ctx;
    size_t n;
    bool stopped;
} counting;

static bool on_counted(void *ctx, ch_row *row)
{
    counting *c = ctx;
    c->n++;
    if (!c->cb(c->ctx, row)) {
        c->stopped = true;
        return false;
    }
    return true;
}

/* Rows of tb of app in [from, to), older than the cursor, that match
 * filters (SQL, "" or " AND …"), newest first, to cb until it returns
 * false or cap rows were given: looked for in windows back from the
 * newest (the last hour, then 4, 16, … times longer), since an ORDER BY
 * over all of a large table costs a scan of it. The answers stay in keeps
 * (MAX_WINDOWS of them, freed by the caller): rows borrow from them. */
static int scan_windows(ch_store *st, enum store_table tb, const char *app, int64_t from, int64_t to,
                        const store_cursor *after, const char *filters, size_t cap,
                        bool (*cb)(void *ctx, ch_row *row), void *ctx, ch_reply *keeps)
{
    char order[256];
    snprintf(order, sizeof order, "ts DESC, %s DESC", ch_read_rk_sql(tb));
    int64_t hi = to;
    if (after->set && after->ts < INT64_MAX && after->ts + 1 < hi)
        hi = after->ts + 1;
    int64_t edge = wall_ns() - HOUR_NS, w = 4 * HOUR_NS;
    int64_t lo = edge > from && edge < hi ? edge : from;
    size_t given = 0;
    for (int k = 0; k < MAX_WINDOWS && hi > from && given < cap; k++) {
        if (k == MAX_WINDOWS - 1)
            lo = from;
        jbuf q;
        jbuf_init(&q);
        ch_read_time_where(&q, app, lo, hi);
        if (after->set)
            jbuf_printf(&q, " AND (ts < %" PRId64 " OR (ts = %" PRId64 " AND %s < %" PRId64 "))", after->ts, after->ts,
                        ch_read_rk_sql(tb), after->row);
        jbuf_puts(&q, filters);
        counting cc = {cb, ctx, 0, false};
        int r = q.failed ? -ENOMEM
                         : ch_read_select_rows(st, tb, q.data, order, cap - given, on_counted, &cc, "a query", &keeps[k]);
        jbuf_free(&q);
        if (r < 0)
            return r;
        given += cc.n;
        if (cc.stopped)
            return 0;
        hi = lo;
        lo = hi - from > w ? hi - w : from;
        w = w > INT64_MAX / 4 ? INT64_MAX : w * 4;
    }
    return 0;
}

/* The raw rows of [from, to): their values only, one row per identity. */
static int scan_raw(ch_store *st, enum store_kind kind, const char *app, const char *version, int64_t from, int64_t to,
                    const store_scan_cb *cb)
{
    if (from >= to)
        return 0;
    const store_kind_desc *kd = store_layout_kind(kind);
    jbuf q;
    jbuf_init(&q);
    jbuf_printf(&q, "SELECT %s FROM %s WHERE ", ch_layout_values_columns(kind), store_layout_table(kd->table)->name);
    ch_read_time_where(&q, app, from, to);
    if (version) {
        jbuf_puts(&q, " AND version = ");
        ch_store_sql_str(&q, version);
    }
    jbuf_printf(&q, " LIMIT 1 BY %s FORMAT RowBinary", ch_read_identity_sql(kd->table));
    ch_reply rep;
    rb_reader rd;
    int r = ch_store_read_rows(st, &q, &rep, &rd, "a query");
    if (r < 0)
        return r;
    char name[4200];
    double m[STORE_MAX_METRICS];
    while (rb_more(&rd)) {
        bool named, failed, excluded;
        if (!ch_layout_decode_values(kind, &rd, name, sizeof name, &named, &failed, &excluded, m)) {
            r = -EIO;
            break;
        }
        if (named)
            cb->raw(cb->ctx, name, failed, excluded, m);
    }
    ch_client_reply_free(&rep);
    return r;
}

typedef struct scan_ctx {
    const store_scan_cb *cb;
} scan_ctx;

static void on_rollup(void *ctx, const ch_srow *row)
{
    const store_scan_cb *cb = ((scan_ctx *)ctx)->cb;
    cb->count(cb->ctx, row->name, row->cnt, row->failed);
    for (size_t i = 0; i < store_layout_kind((enum store_kind)row->kind)->n_metrics; i++)
        if (row->m[i].count)
            cb->sketch(cb->ctx, row->name, i, &row->m[i]);
}

int ch_read_scan(store *s, enum store_kind kind, const char *app, const char *version, int64_t from_ns, int64_t to_ns,
               const store_scan_cb *cb)
{
    ch_store *st = (ch_store *)s;
    /* whole slots [s_lo, s_hi) from the rollups: whole days of them by day,
     * whole hours by hour, the rest by slot; the parts of slots the range
     * cuts from the raw rows */
    int64_t s_lo = from_ns / CH_SLOT_NS + (from_ns % CH_SLOT_NS != 0);
    int64_t s_hi = to_ns / CH_SLOT_NS;
    if (s_hi > MAX_SLOT)
        s_hi = MAX_SLOT;
    if (s_lo >= s_hi)
        return scan_raw(st, kind, app, version, from_ns, to_ns, cb);
    ch_rollup_query rq = {.kind = (int8_t)kind, .app = app, .version = version, .a_lo = s_lo, .a_hi = s_hi};
    int64_t h_lo = ceil_div(s_lo, CH_SLOTS_PER_HOUR), h_hi = s_hi / CH_SLOTS_PER_HOUR;
    if (h_lo < h_hi) {
        rq.s_lo = s_lo;
        rq.s_hi = h_lo * CH_SLOTS_PER_HOUR;
        rq.s2_lo = h_hi * CH_SLOTS_PER_HOUR;
        rq.s2_hi = s_hi;
        int64_t d_lo = ceil_div(h_lo, 24), d_hi = h_hi / 24;
        if (d_lo < d_hi) {
            rq.d_lo = d_lo;
            rq.d_hi = d_hi;
            rq.h_lo = h_lo;
            rq.h_hi = d_lo * 24;
            rq.h2_lo = d_hi * 24;
            rq.h2_hi = h_hi;
        } else {
            rq.h_lo = h_lo;
            rq.h_hi = h_hi;
        }
    } else {
        rq.s_lo = s_lo;
        rq.s_hi = s_hi;
    }
    scan_ctx c = {cb};
    int r = ch_read_rollups(st, &rq, on_rollup, &c);
    if (r == 0)
        r = scan_raw(st, kind, app, version, from_ns, s_lo * CH_SLOT_NS, cb);
    if (r == 0 && (to_ns != INT64_MAX || s_hi < MAX_SLOT))
        r = scan_raw(st, kind, app, version, s_hi * CH_SLOT_NS, to_ns, cb);
    return r;
}

/* ---- apps ---- */

int ch_read_apps(store *s, void (*cb)(void *ctx, const char *app, const char *version), void *ctx)
{
    ch_store *st = (ch_store *)s;
    ch_reply rep;
    int r = ch_store_read(st,
                    "SELECT app, version FROM (SELECT app, version FROM rollups WHERE kind >= 0"
                    " UNION ALL SELECT app, version FROM pending WHERE kind >= 0)"
                    " GROUP BY app, version ORDER BY app, version FORMAT RowBinary",
                    &rep, "a query");
    if (r < 0)
        return -EIO;
    rb_reader rd;
    rb_reader_init(&rd, rep.body, rep.len);
    while (rb_more(&rd)) {
        size_t al, vl;
        const char *a = rb_get_str(&rd, &al), *v = rb_get_str(&rd, &vl);
        if (rd.bad)
            break;
        char app[1100], version[1100];
        snprintf(app, sizeof app, "%.*s", (int)al, a);
        snprintf(version, sizeof version, "%.*s", (int)vl, v);
        cb(ctx, app, version);
    }
    r = rd.bad ? -EIO : 0;
    ch_client_reply_free(&rep);
    return r;
}

/* ---- origins ---- */

typedef struct origin_map {
    uint64_t ids[2][STORE_MAX_EXAMINED];
    char *json[2][STORE_MAX_EXAMINED];
    size_t n[2];
} origin_map;

static void origin_want(origin_map *m, const ch_row *row)
{
    for (int w = 0; w < 2; w++) {
        uint64_t id = row->origin[w];
        if (!id)
            continue;
        bool have = false;
        for (size_t i = 0; i < m->n[w] && !have; i++)
            have = m->ids[w][i] == id;
        if (!have && m->n[w] < STORE_MAX_EXAMINED)
            m->ids[w][m->n[w]++] = id;
    }
}

static int origin_fetch(ch_store *st, origin_map *m)
{
    if (!m->n[0] && !m->n[1])
        return 0;
    jbuf q;
    jbuf_init(&q);
    jbuf_puts(&q, "SELECT which, id, any(json) FROM origins WHERE ");
    for (int w = 0; w < 2; w++) {
        jbuf_printf(&q, "%s(which = %d AND id IN (", w ? " OR " : "", w);
        for (size_t i = 0; i < m->n[w]; i++)
            jbuf_printf(&q, "%s%" PRIu64, i ? "," : "", m->ids[w][i]);
        if (!m->n[w])
            jbuf_puts(&q, "0");
        jbuf_puts(&q, "))");
    }
    jbuf_puts(&q, " GROUP BY which, id FORMAT RowBinary");
    ch_reply rep;
    rb_reader rd;
    int r = ch_store_read_rows(st, &q, &rep, &rd, "a query");
    if (r < 0)
        return r;
    while (rb_more(&rd)) {
        int w = rb_get_u8(&rd) ? 1 : 0;
        uint64_t id = rb_get_u64(&rd);
        size_t n;
        const char *j = rb_get_str(&rd, &n);
        if (rd.bad)
            break;
        for (size_t i = 0; i < m->n[w]; i++)
            if (m->ids[w][i] == id && !m->json[w][i])
                m->json[w][i] = strndup(j, n);
    }
    ch_client_reply_free(&rep);
    return rd.bad ? -EIO : 0;
}

static const char *origin_json(const origin_map *m, int w, uint64_t id)
{
    for (size_t i = 0; id && i < m->n[w]; i++)
        if (m->ids[w][i] == id)
            return m->json[w][i];
    return NULL;
}

static void origin_free(origin_map *m)
{
    for (int w = 0; w < 2; w++)
        for (size_t i = 0; i < m->n[w]; i++)
            free(m->json[w][i]);
    free(m);
}

/* ---- items, newest first ---- */

typedef struct kept {
    ch_row row;
    int64_t ts, rk;
} kept;

typedef struct page {
    enum store_table tb;
    const char *text;                 /* logs: the body must hold it */
    const store_attr_filter *attrs;   /* each must be among the attributes */
    size_t n_attrs, limit;
    kept *rows;
    size_t n;
    size_t examined;
    size_t bytes;                     /* an estimate of the answer */
    bool more;
    int64_t last_ts, last_rk;
} page;



static bool on_item(void *ctx, ch_row *row)
{
    page *p = ctx;
    const ch_table *t = ch_layout_table(p->tb);
    if (p->n == p->limit || p->examined == STORE_MAX_EXAMINED || p->bytes > STORE_MAX_ANSWER) {
        p->more = true;
        ch_layout_row_clear(row);
        return false;
    }
    p->examined++;
    int64_t ts = row->row.cols[t->ts_col].i, rk = row_key(t, row);
    p->last_ts = ts;
    p->last_rk = rk;
    bool ok = store_filter_row(p->tb, row->row.cols, p->text, p->attrs, p->n_attrs);
    if (!ok) {
        ch_layout_row_clear(row);
        return true;
    }
    kept *k = &p->rows[p->n++];
    k->row = *row;
    k->ts = ts;
    k->rk = rk;
    for (size_t i = 0; i < store_layout_table(p->tb)->n_cols; i++)
        if (row->row.cols[i].type == SV_TEXT || row->row.cols[i].type == SV_BLOB)
            p->bytes += row->row.cols[i].n + 16;
    return true;
}

static void write_cursor(jbuf *b, int64_t ts, int64_t row)
{
    char cur[48];
    snprintf(cur, sizeof cur, "%" PRId64 ".%" PRId64, ts, row);
    jbuf_kv_str(b, "next", cur);
}

/* An attribute's key as it is in the stored JSON, as a cheap first test
 * (rows without it cannot match); only for keys without characters JSON
 * escapes. */
static void attr_prefilter(jbuf *w, const store_attr_filter *attrs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *k = attrs[i].key;
        bool plain = *k;
        for (const char *c = k; *c && plain; c++)
            plain = (unsigned char)*c >= 0x20 && *c != '"' && *c != '\\' && (unsigned char)*c < 0x7f;
        if (!plain)
            continue;
        char pat[1200];
        snprintf(pat, sizeof pat, "\"key\":\"%s\"", k);
        jbuf_puts(w, " AND position(ifNull(attributes, ''), ");
        ch_store_sql_str(w, pat);
        jbuf_puts(w, ") > 0");
    }
}

static int run_page(ch_store *st, page *p, const char *app, int64_t from, int64_t to, const store_cursor *after,
                    const char *filters, jbuf *out, const char *list)
{
    p->rows = calloc(p->limit + 1, sizeof *p->rows);
    origin_map *om = calloc(1, sizeof *om);
    ch_reply *keeps = calloc(MAX_WINDOWS, sizeof *keeps);
    if (!p->rows || !om || !keeps) {
        free(p->rows);
        free(om);
        free(keeps);
        return -ENOMEM;
    }
    /* at most as many candidates as may be looked at, and one more */
    size_t cap = p->n_attrs || p->text ? STORE_MAX_EXAMINED + 1 : p->limit + 1;
    int r = scan_windows(st, p->tb, app, from, to, after, filters, cap, on_item, p, keeps);
    for (size_t i = 0; r == 0 && i < p->n; i++)
        origin_want(om, &p->rows[i].row);
    if (r == 0)
        r = origin_fetch(st, om);
    if (r == 0) {
        jbuf_key(out, list);
        jbuf_open(out, '[');
        for (size_t i = 0; i < p->n; i++) {
            const ch_row *row = &p->rows[i].row;
            const char *res = origin_json(om, 0, row->origin[0]), *sc = origin_json(om, 1, row->origin[1]);
            if (p->tb == TABLE_LOGS)
                store_json_log(out, row->row.cols, res, sc);
            else if (p->tb == TABLE_METRIC_POINTS)
                store_json_point(out, row->row.cols, res, sc);
            else
                store_json_span(out, row->row.table, row->row.cols, res, sc);
        }
        jbuf_close(out, ']');
        if (p->more)
            write_cursor(out, p->last_ts, p->last_rk);
        r = out->failed ? -ENOMEM : 0;
    }
    for (size_t i = 0; i < p->n; i++)
        ch_layout_row_clear(&p->rows[i].row);
    free(p->rows);
    origin_free(om);
    for (int k = 0; k < MAX_WINDOWS; k++)
        ch_client_reply_free(&keeps[k]);
    free(keeps);
    return r;
}

/* run_page with the filters in w, which is freed. */
static int run_filtered(ch_store *st, page *p, const char *app, int64_t from, int64_t to, const store_cursor *after,
                        jbuf *w, jbuf *out, const char *list)
{
    int r = w->failed ? -ENOMEM : run_page(st, p, app, from, to, after, w->data, out, list);
    jbuf_free(w);
    return r;
}

int ch_read_search_spans(store *s, const store_span_query *q, jbuf *out)
{
    ch_store *st = (ch_store *)s;
    jbuf w;
    jbuf_init(&w);
    jbuf_puts(&w, "");
    if (q->name) {
        jbuf_puts(&w, " AND name = ");
        ch_store_sql_str(&w, q->name);
    }
    if (q->version) {
        jbuf_puts(&w, " AND version = ");
        ch_store_sql_str(&w, q->version);
    }
    /* the duration as SQLite computes it: (end_ts - ts) / 1e6; end_ts is
     * stored as end_ts - ts here */
    if (!isnan(q->min_ms) || !isnan(q->max_ms))
        jbuf_printf(&w, " AND end_ts / 1e6 >= %.17g AND end_ts / 1e6 <= %.17g", isnan(q->min_ms) ? -1e300 : q->min_ms,
                    isnan(q->max_ms) ? 1e300 : q->max_ms);
    attr_prefilter(&w, q->attrs, q->n_attrs);
    page p = {.tb = TABLE_SPANS, .attrs = q->attrs, .n_attrs = q->n_attrs, .limit = q->limit};
    return run_filtered(st, &p, q->app, q->from_ns, q->to_ns, &q->after, &w, out, "spans");
}

int ch_read_search_logs(store *s, const store_log_query *q, jbuf *out)
{
    ch_store *st = (ch_store *)s;
    jbuf w;
    jbuf_init(&w);
    jbuf_puts(&w, "");
    if (q->min_severity)
        jbuf_printf(&w, " AND severity_number >= %d", q->min_severity);
    page p = {.tb = TABLE_LOGS, .text = q->text && *q->text ? q->text : NULL, .limit = q->limit};
    return run_filtered(st, &p, q->app, q->from_ns, q->to_ns, &q->after, &w, out, "logs");
}

int ch_read_search_points(store *s, const store_point_query *q, jbuf *out)
{
    ch_store *st = (ch_store *)s;
    jbuf w;
    jbuf_init(&w);
    jbuf_puts(&w, " AND name = ");
    ch_store_sql_str(&w, q->name);
    attr_prefilter(&w, q->attrs, q->n_attrs);
    page p = {.tb = TABLE_METRIC_POINTS, .attrs = q->attrs, .n_attrs = q->n_attrs, .limit = q->limit};
    return run_filtered(st, &p, q->app, q->from_ns, q->to_ns, &q->after, &w, out, "points");
}

/* ---- a trace ---- */

#define TRACE_MAX_SPANS 10000

typedef struct trace_ctx {
    kept *rows;
    size_t n;
    bool truncated;
    enum store_table tb;
} trace_ctx;

static bool on_trace_row(void *ctx, ch_row *row)
{
    trace_ctx *c = ctx;
    if (c->n == TRACE_MAX_SPANS) {
        c->truncated = true;
        ch_layout_row_clear(row);
        return false;
    }
    const ch_table *t = ch_layout_table(c->tb);
    c->rows[c->n].row = *row;
    c->rows[c->n].ts = row->row.cols[t->ts_col].i;
    c->rows[c->n].rk = row_key(t, row);
    c->n++;
    return true;
}

static int cmp_trace(const void *x, const void *y)
{
    const kept *a = x, *b = y;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    if (a->row.row.table != b->row.row.table)
        return a->row.row.table < b->row.row.table ? -1 : 1;
    return a->rk < b->rk ? -1 : a->rk > b->rk;
}

int ch_read_trace(store *s, const uint8_t trace_id[16], jbuf *out, size_t *ret_n)
{
    ch_store *st = (ch_store *)s;
    *ret_n = 0;
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", trace_id[i]);
    /* the index keeps 24 bits of the trace id: a few other traces' hours
     * come with it (about one per 16 M spans), and the rows' own trace id
     * is compared */
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT tbl, app, hour FROM trace_index WHERE th = %u AND tl = %u GROUP BY tbl, app, hour"
             " ORDER BY tbl, app, hour LIMIT 20000 FORMAT RowBinary",
             (unsigned)(trace_id[0] << 8 | trace_id[1]), (unsigned)trace_id[2]);
    ch_reply idx;
    if (ch_store_read(st, sql, &idx, "a query") < 0)
        return -EIO;
    trace_ctx c = {.rows = calloc(TRACE_MAX_SPANS, sizeof(kept))};
    ch_reply keeps[TABLE_COUNT];
    memset(keeps, 0, sizeof keeps);
    int r = c.rows ? 0 : -ENOMEM;
    for (enum store_table tb = 0; r == 0 && tb < TABLE_COUNT && !c.truncated; tb++) {
        if (store_layout_table(tb)->kind == KIND_NONE)
            continue;
        jbuf w;
        jbuf_init(&w);
        jbuf_printf(&w, "trace_id = toFixedString(unhex('%s'), 16) AND (0", hex);
        rb_reader rd;
        rb_reader_init(&rd, idx.body, idx.len);
        bool any = false;
        while (rb_more(&rd)) {
            int t = rb_get_u8(&rd);
            size_t al;
            const char *a = rb_get_str(&rd, &al);
            int32_t h = (int32_t)rb_get_u32(&rd);
            if (rd.bad || t != (int)tb)
                continue;
            jbuf_puts(&w, " OR (app = ");
            ch_client_quote(&w, a, al);
            ch_read_ts_where(&w, (int64_t)h * HOUR_NS, ((int64_t)h + 1) * HOUR_NS);
            jbuf_puts(&w, ")");
            any = true;
        }
        jbuf_puts(&w, ")");
        if (any) {
            c.tb = tb;
            r = w.failed ? -ENOMEM
                         : ch_read_select_rows(st, tb, w.data, NULL, TRACE_MAX_SPANS + 1, on_trace_row, &c, "a query", &keeps[tb]);
        }
        jbuf_free(&w);
    }
    ch_client_reply_free(&idx);
    origin_map *om = calloc(1, sizeof *om);
    if (r == 0 && !om)
        r = -ENOMEM;
    for (size_t i = 0; r == 0 && i < c.n; i++)
        origin_want(om, &c.rows[i].row);
    if (r == 0)
        r = origin_fetch(st, om);
    if (r == 0) {
        qsort(c.rows, c.n, sizeof *c.rows, cmp_trace);
        jbuf_key(out, "spans");
        jbuf_open(out, '[');
        size_t start = out->len, written = 0;
        for (size_t i = 0; i < c.n; i++) {
            if (out->len - start > STORE_MAX_ANSWER) {
                c.truncated = true;
                break;
            }
            const ch_row *row = &c.rows[i].row;
            store_json_span(out, row->row.table, row->row.cols, origin_json(om, 0, row->origin[0]), origin_json(om, 1, row->origin[1]));
            written++;
        }
        jbuf_close(out, ']');
        if (c.truncated)
            jbuf_kv_bool(out, "truncated", true);
        *ret_n = written;
        r = out->failed ? -ENOMEM : 0;
    }
    for (size_t i = 0; c.rows && i < c.n; i++)
        ch_layout_row_clear(&c.rows[i].row);
    free(c.rows);
    if (om)
        origin_free(om);
    for (int t = 0; t < TABLE_COUNT; t++)
        ch_client_reply_free(&keeps[t]);
    return r;
}

/* ---- the rows of a version (samples) ---- */

typedef struct count_ctx {
    struct slot_count {
        int64_t slot, count; /* rows per 10-minute slot */
    } *s;
    size_t n, cap;
    bool oom;
} count_ctx;

static void on_count_row(void *ctx, const ch_srow *row)
{
    count_ctx *c = ctx;
    if (row->grain != CH_GRAIN_SLOT)
        return;
    for (size_t i = 0; i < c->n; i++)
        if (c->s[i].slot == row->t) {
            c->s[i].count += (int64_t)row->cnt;
            return;
        }
    if (!ARRAY_GROW(c->s, c->cap, c->n + 1, 256)) {
        c->oom = true;
        return;
    }
    c->s[c->n++] = (struct slot_count){row->t, (int64_t)row->cnt};
}

typedef struct vrow_ctx {
    void (*cb)(void *ctx, const store_row *row);
    void *ctx;
    size_t limit, n;
    bool truncated;
} vrow_ctx;

static bool on_version_row(void *ctx, ch_row *row)
{
    vrow_ctx *c = ctx;
    if (c->n++ == c->limit) {
        c->truncated = true;
        ch_layout_row_clear(row);
        return false;
    }
    c->cb(c->ctx, &row->row);
    ch_layout_row_clear(row);
    return true;
}

int ch_read_version_rows(store *s, enum store_table table, const char *app, const char *version, size_t limit,
                       size_t scan_max, void (*cb)(void *ctx, const store_row *row), void *ctx, bool *ret_truncated)
{
    ch_store *st = (ch_store *)s;
    const store_table_desc *t = store_layout_table(table);
    *ret_truncated = false;
    if (t->kind == KIND_NONE)
        return -EINVAL;
    /* the newest scan_max rows of the app begin at ts_min: found from the
     * rollups' counts per slot, then within that slot */
    jbuf w;
    jbuf_init(&w);
    jbuf_puts(&w, "app = ");
    ch_store_sql_str(&w, app);
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count() FROM (SELECT 1 FROM %s WHERE %s LIMIT %zu) FORMAT TabSeparated",
             t->name, w.data ? w.data : "0", scan_max + 1);
    ch_reply rep;
    int r = w.failed ? -ENOMEM : ch_store_read(st, sql, &rep, "a query");
    if (r < 0) {
        jbuf_free(&w);
        return -EIO;
    }
    size_t total = (size_t)strtoull(rep.body, NULL, 10);
    ch_client_reply_free(&rep);
    int64_t ts_min = 0;
    if (total > scan_max) {
        *ret_truncated = true;
        count_ctx cc = {0};
        ch_rollup_query rq = {.kind = (int8_t)t->kind, .app = app, .a_lo = 0, .a_hi = MAX_SLOT, .s_lo = 0,
                              .s_hi = MAX_SLOT};
        r = ch_read_rollups(st, &rq, on_count_row, &cc);
        int64_t start_hour = 0, need = (int64_t)scan_max;
        if (r == 0 && !cc.oom) {
            /* newest slots first until they hold scan_max rows */
            for (;;) {
                int64_t best = -1;
                size_t bi = 0;
                for (size_t i = 0; i < cc.n; i++)
                    if (cc.s[i].count >= 0 && cc.s[i].slot > best) {
                        best = cc.s[i].slot;
                        bi = i;
                    }
                if (best < 0)
                    break;
                start_hour = best;
                if (cc.s[bi].count >= need)
                    break;
                need -= cc.s[bi].count;
                cc.s[bi].count = -1;
            }
        }
        free(cc.s);
        if (r < 0) {
            jbuf_free(&w);
            return -EIO;
        }
        /* the scan_max-th newest row of that slot and later */
        jbuf q;
        jbuf_init(&q);
        jbuf_printf(&q, "SELECT ts FROM %s WHERE ", t->name);
        ch_read_time_where(&q, app, start_hour * CH_SLOT_NS, INT64_MAX);
        jbuf_printf(&q, " ORDER BY ts DESC LIMIT 1 OFFSET %" PRId64 " FORMAT TabSeparated", (int64_t)scan_max - 1);
        r = q.failed ? -ENOMEM : ch_store_read(st, q.data, &rep, "a query");
        jbuf_free(&q);
        if (r < 0) {
            jbuf_free(&w);
            return -EIO;
        }
        ts_min = rep.len ? strtoll(rep.body, NULL, 10) : start_hour * CH_SLOT_NS;
        ch_client_reply_free(&rep);
    }
    jbuf_free(&w);
    jbuf_init(&w);
    jbuf_puts(&w, " AND version = ");
    ch_store_sql_str(&w, version);
    vrow_ctx vc = {cb, ctx, limit, 0, false};
    ch_reply *keeps = calloc(MAX_WINDOWS, sizeof *keeps);
    store_cursor none = {.set = false};
    r = w.failed || !keeps ? -ENOMEM
                           : scan_windows(st, table, app, ts_min, INT64_MAX, &none, w.data, limit + 1, on_version_row, &vc,
                                          keeps);
    for (int k = 0; keeps && k < MAX_WINDOWS; k++)
        ch_client_reply_free(&keeps[k]);
    free(keeps);
    jbuf_free(&w);
    if (vc.truncated)
        *ret_truncated = true;
    return r;
}
