/* The ClickHouse store: the dashboard's reads (store_dash.h), the same
 * answers as SQLite's (store_dash.c) on the same rows.
 *
 * Each read takes the newest scan_max rows of its range (one per
 * identity, newest first; ties by row key) in one query, asking for one
 * more to know whether it reached the bound, and does the rest in C on the
 * decoded rows — the group name, the version, sorting by a metric, the
 * attributes' JSON, dash_parse.c —, so that values compare as SQLite compares them and
 * not as ClickHouse holds them (an MS column is held as twice its micro-
 * or nanoseconds, store_ch.h).
 */
#include "api/dash_parse.h"
#include "store_ch.h"

#include <pacer/base/json.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The layout column of table t named name, or -1. */
static int col_of(enum store_table t, const char *name)
{
    const store_table_desc *d = store_table(t);
    for (size_t i = 0; i < d->n_cols; i++)
        if (strcmp(d->cols[i].name, name) == 0)
            return (int)i;
    return -1;
}

static bool text_is(const store_value *v, const char *s)
{
    size_t n = strlen(s);
    return v->type == SV_TEXT && v->n == n && memcmp(v->p, s, n) == 0;
}

/* What the rows of one read are kept in until it ends. */
typedef struct held {
    ch_row *rows;
    size_t n, cap;
    size_t max; /* the bound: rows beyond it are counted, not kept */
    bool beyond, oom;
} held;

static bool on_held(void *ctx, ch_row *row)
{
    held *h = ctx;
    if (h->n == h->max) {
        h->beyond = true;
        ch_row_clear(row);
        return false;
    }
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 256;
        ch_row *p = realloc(h->rows, cap * sizeof *p);
        if (!p) {
            h->oom = true;
            ch_row_clear(row);
            return false;
        }
        h->rows = p;
        h->cap = cap;
    }
    h->rows[h->n++] = *row;
    return true;
}

static void held_free(held *h)
{
    for (size_t i = 0; i < h->n; i++)
        ch_row_clear(&h->rows[i]);
    free(h->rows);
}

/* The newest scan_max rows of tb of app in [from, to) that match `more`
 * (SQL, "" or " AND …"), newest first, into h (h->beyond: there were
 * more). keep holds the answer they borrow from. */
static int newest(ch_store *st, enum store_table tb, const char *app, int64_t from, int64_t to, const char *more,
                  size_t scan_max, held *h, ch_reply *keep)
{
    *h = (held){.max = scan_max};
    memset(keep, 0, sizeof *keep);
    if (from >= to)
        return 0;
    jbuf w;
    jbuf_init(&w);
    ch_time_where(&w, app, from, to);
    jbuf_puts(&w, more);
    char order[256];
    snprintf(order, sizeof order, "ts DESC, %s DESC", ch_rk_sql(tb));
    int r = w.failed ? -ENOMEM : ch_select_rows(st, tb, w.data, order, scan_max + 1, on_held, h, "a query", keep);
    jbuf_free(&w);
    if (r == 0 && h->oom)
        r = -ENOMEM;
    return r;
}

/* ---- single records ---- */

/* The group name of a record row (its name columns joined by spaces) is
 * name: false when a part is NULL (SQLite's || gives NULL). */
static bool name_is(const store_kind_desc *kd, const store_row *row, const char *name)
{
    size_t o = 0, n = strlen(name);
    for (size_t i = 0; i < kd->n_name_cols; i++) {
        const store_value *v = &row->cols[kd->name_cols[i]];
        if (v->type != SV_TEXT)
            return false;
        if (i) {
            if (o >= n || name[o] != ' ')
                return false;
            o++;
        }
        if (v->n > n - o || memcmp(name + o, v->p, v->n) != 0)
            return false;
        o += v->n;
    }
    return o == n;
}

/* A value as SQLite orders it: NULL first, then numbers, then text. */
static int cmp_value(const store_value *a, const store_value *b)
{
    int ta = a->type == SV_NULL ? 0 : a->type == SV_INT || a->type == SV_REAL ? 1 : 2;
    int tb = b->type == SV_NULL ? 0 : b->type == SV_INT || b->type == SV_REAL ? 1 : 2;
    if (ta != tb || ta == 0)
        return ta - tb;
    if (ta == 1) {
        if (a->type == SV_INT && b->type == SV_INT)
            return a->i < b->i ? -1 : a->i > b->i;
        double x = a->type == SV_INT ? (double)a->i : a->d, y = b->type == SV_INT ? (double)b->i : b->d;
        return x < y ? -1 : x > y;
    }
    size_t n = a->n < b->n ? a->n : b->n;
    int c = memcmp(a->p, b->p, n);
    return c ? c : a->n < b->n ? -1 : a->n > b->n;
}

typedef struct sort_ctx {
    int col, ts;
} sort_ctx;

static _Thread_local sort_ctx sorting;

/* Largest first by the column, then newest first. */
static int cmp_rows(const void *x, const void *y)
{
    const store_row *a = &(*(ch_row *const *)x)->row, *b = &(*(ch_row *const *)y)->row;
    int c = sorting.col >= 0 ? cmp_value(&b->cols[sorting.col], &a->cols[sorting.col]) : 0;
    return c ? c : cmp_value(&b->cols[sorting.ts], &a->cols[sorting.ts]);
}

int ch_op_rows(store *s, const store_rows_query *q, void (*cb)(void *ctx, const store_row *row), void *ctx,
               bool *ret_truncated)
{
    ch_store *st = (ch_store *)s;
    const store_table_desc *t = store_table(q->table);
    *ret_truncated = false;
    if (t->kind == KIND_NONE)
        return -EINVAL;
    const store_kind_desc *kd = store_kind(t->kind);
    held h;
    ch_reply keep;
    int r = newest(st, q->table, q->app, q->from_ns, q->to_ns, "", q->scan_max, &h, &keep);
    ch_row **pick = r == 0 && h.n ? malloc(h.n * sizeof *pick) : NULL;
    if (r == 0 && h.n && !pick)
        r = -ENOMEM;
    size_t n = 0;
    int vcol = col_of(q->table, "version");
    for (size_t i = 0; r == 0 && i < h.n; i++) {
        const store_row *row = &h.rows[i].row;
        if (q->name && !name_is(kd, row, q->name))
            continue;
        if (q->version && (vcol < 0 || !text_is(&row->cols[vcol], q->version)))
            continue;
        pick[n++] = &h.rows[i];
    }
    if (r == 0) {
        int m = q->order_metric;
        sorting = (sort_ctx){m >= 0 && (size_t)m < kd->n_metrics ? kd->metric_cols[m] : -1, ch_table_of(q->table)->ts_col};
        qsort(pick, n, sizeof *pick, cmp_rows);
        for (size_t i = 0; i < n && i < q->limit; i++)
            cb(ctx, &pick[i]->row);
        *ret_truncated = h.beyond;
    }
    free(pick);
    held_free(&h);
    ch_reply_free(&keep);
    return r;
}

/* ---- attributes ---- */

/* The string values of the attributes named key in v's attribute list
 * (dash_attr_strings, dash_parse.h). */
static void attr_strings(const store_value *v, const char *key, bool first,
                         void (*fn)(void *ctx, const char *s, size_t n), void *ctx)
{
    if (v->type == SV_TEXT)
        dash_attr_strings(v->p, v->n, key, first, fn, ctx);
}

/* ---- requests by pattern ---- */

typedef struct classes {
    bool error, large_image, slow;
} classes;

static bool has(const char *s, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(s + i, needle, k) == 0)
            return true;
    return false;
}

static void on_class(void *ctx, const char *s, size_t n)
{
    classes *c = ctx;
    c->error |= has(s, n, "error");
    c->large_image |= has(s, n, "large_image");
    c->slow |= has(s, n, "slow");
}

typedef struct req_group {
    const char *method, *pattern;
    store_request_stat s;
} req_group;

static int cmp_text(const char *a, const char *b)
{
    return !a || !b ? (a != NULL) - (b != NULL) : strcmp(a, b);
}

static int cmp_groups(const void *x, const void *y)
{
    const req_group *a = x, *b = y;
    int c = cmp_text(a->method, b->method);
    return c ? c : cmp_text(a->pattern, b->pattern);
}

static const char *text_of(const store_value *v)
{
    return v->type == SV_TEXT ? (const char *)v->p : NULL; /* ch_decode_row's strings end with a NUL */
}

int ch_op_request_stats(store *s, const char *app, const char *version, int64_t from_ns, int64_t to_ns,
                        size_t scan_max, void (*cb)(void *ctx, const store_request_stat *x), void *ctx,
                        bool *ret_truncated)
{
    ch_store *st = (ch_store *)s;
    *ret_truncated = false;
    held h;
    ch_reply keep;
    int r = newest(st, TABLE_REQUESTS, app, from_ns, to_ns, "", scan_max, &h, &keep);
    int c_method = col_of(TABLE_REQUESTS, "method"), c_pattern = col_of(TABLE_REQUESTS, "pattern"),
        c_failed = col_of(TABLE_REQUESTS, "failed"), c_recv = col_of(TABLE_REQUESTS, "bytes_received"),
        c_sent = col_of(TABLE_REQUESTS, "bytes_sent"), c_extra = col_of(TABLE_REQUESTS, "extra"),
        c_version = col_of(TABLE_REQUESTS, "version");
    if (r == 0 && (c_method < 0 || c_pattern < 0 || c_failed < 0 || c_recv < 0 || c_sent < 0 || c_version < 0))
        r = -EINVAL;
    req_group *g = r == 0 && h.n ? calloc(h.n, sizeof *g) : NULL;
    if (r == 0 && h.n && !g)
        r = -ENOMEM;
    size_t ng = 0;
    for (size_t i = 0; r == 0 && i < h.n; i++) {
        const store_row *row = &h.rows[i].row;
        if (version && !text_is(&row->cols[c_version], version))
            continue;
        g[ng].method = text_of(&row->cols[c_method]);
        g[ng].pattern = text_of(&row->cols[c_pattern]);
        store_request_stat *x = &g[ng].s;
        x->count = 1;
        const store_value *f = &row->cols[c_failed], *rv = &row->cols[c_recv], *sv = &row->cols[c_sent];
        x->failed = f->type == SV_INT ? (uint64_t)f->i : f->type == SV_REAL ? (uint64_t)f->d : 0;
        x->bytes_received = rv->type == SV_INT ? (uint64_t)rv->i : rv->type == SV_REAL ? (uint64_t)rv->d : 0;
        x->with_bytes = rv->type != SV_NULL;
        x->bytes_sent = sv->type == SV_INT ? (uint64_t)sv->i : sv->type == SV_REAL ? (uint64_t)sv->d : 0;
        classes cl = {0};
        if (c_extra >= 0)
            attr_strings(&row->cols[c_extra], "pacer.classes", false, on_class, &cl);
        x->class_error = cl.error;
        x->class_large_image = cl.large_image;
        x->class_slow = cl.slow;
        ng++;
    }
    if (r == 0) {
        qsort(g, ng, sizeof *g, cmp_groups);
        for (size_t i = 0; i < ng;) {
            store_request_stat sum = g[i].s;
            size_t k = i + 1;
            for (; k < ng && cmp_groups(&g[i], &g[k]) == 0; k++) {
                const store_request_stat *x = &g[k].s;
                sum.count += x->count;
                sum.failed += x->failed;
                sum.bytes_received += x->bytes_received;
                sum.with_bytes += x->with_bytes;
                sum.bytes_sent += x->bytes_sent;
                sum.class_error += x->class_error;
                sum.class_large_image += x->class_large_image;
                sum.class_slow += x->class_slow;
            }
            sum.method = g[i].method;
            sum.pattern = g[i].pattern;
            if (sum.pattern)
                cb(ctx, &sum);
            i = k;
        }
        *ret_truncated = h.beyond;
    }
    free(g);
    held_free(&h);
    ch_reply_free(&keep);
    return r;
}

/* ---- log records of one type ---- */

int ch_op_logs_of_type(store *s, const char *app, const char *version, const char *type, int64_t from_ns,
                       int64_t to_ns, size_t scan_max, void (*cb)(void *ctx, const store_log_row *row), void *ctx,
                       bool *ret_truncated)
{
    ch_store *st = (ch_store *)s;
    *ret_truncated = false;
    held h;
    ch_reply keep;
    int r = newest(st, TABLE_LOGS, app, from_ns, to_ns, "", scan_max, &h, &keep);
    int c_type = col_of(TABLE_LOGS, "type"), c_version = col_of(TABLE_LOGS, "version"),
        c_session = col_of(TABLE_LOGS, "session"), c_body = col_of(TABLE_LOGS, "body"),
        c_ts = ch_table_of(TABLE_LOGS)->ts_col;
    if (r == 0 && (c_type < 0 || c_version < 0 || c_session < 0 || c_body < 0 || c_ts < 0))
        r = -EINVAL;
    for (size_t i = 0; r == 0 && i < h.n; i++) {
        const store_row *row = &h.rows[i].row;
        if (!text_is(&row->cols[c_type], type) || (version && !text_is(&row->cols[c_version], version)))
            continue;
        const store_value *b = &row->cols[c_body];
        if (b->type != SV_TEXT)
            continue;
        store_log_row lr = {
            .ts = row->cols[c_ts].i,
            .version = text_of(&row->cols[c_version]),
            .session = text_of(&row->cols[c_session]),
            .body = (const char *)b->p,
            .body_len = b->n,
        };
        cb(ctx, &lr);
    }
    if (r == 0)
        *ret_truncated = h.beyond;
    held_free(&h);
    ch_reply_free(&keep);
    return r;
}

/* ---- metric sums per attribute ---- */

typedef struct sum_group {
    char *g; /* NULL: no such attribute */
    size_t idx; /* the point's place, newest first */
    double sum;
    uint64_t points;
} sum_group;

static void on_group(void *ctx, const char *s, size_t n)
{
    char **g = ctx;
    if (!*g && (*g = malloc(n + 1))) {
        memcpy(*g, s, n);
        (*g)[n] = 0;
    }
}

static int cmp_sum_groups(const void *x, const void *y)
{
    return cmp_text(((const sum_group *)x)->g, ((const sum_group *)y)->g);
}

/* By group, then in the order of the points (newest first), which a sum of doubles depends on. */
static int cmp_sum_places(const void *x, const void *y)
{
    const sum_group *a = x, *b = y;
    int c = cmp_sum_groups(a, b);
    return c ? c : a->idx < b->idx ? -1 : a->idx > b->idx;
}

int ch_op_metric_sums(store *s, const char *app, const char *version, const char *const *names, const char *attr,
                      int64_t from_ns, int64_t to_ns, size_t scan_max,
                      void (*cb)(void *ctx, const char *name, const char *group, double sum, uint64_t points),
                      void *ctx, bool *ret_truncated)
{
    ch_store *st = (ch_store *)s;
    *ret_truncated = false;
    int c_int = col_of(TABLE_METRIC_POINTS, "int_value"), c_value = col_of(TABLE_METRIC_POINTS, "value"),
        c_attrs = col_of(TABLE_METRIC_POINTS, "attributes");
    if (c_int < 0 || c_value < 0 || c_attrs < 0)
        return -EINVAL;
    int r = 0;
    for (size_t k = 0; names[k] && r == 0; k++) {
        jbuf more;
        jbuf_init(&more);
        jbuf_puts(&more, " AND name = ");
        ch_sql_str(&more, names[k]);
        if (version) {
            jbuf_puts(&more, " AND version = ");
            ch_sql_str(&more, version);
        }
        held h;
        ch_reply keep;
        r = more.failed ? -ENOMEM : newest(st, TABLE_METRIC_POINTS, app, from_ns, to_ns, more.data, scan_max, &h, &keep);
        jbuf_free(&more);
        /* here the version filters before the bound, as in SQLite's */
        sum_group *g = r == 0 && h.n ? calloc(h.n, sizeof *g) : NULL;
        if (r == 0 && h.n && !g)
            r = -ENOMEM;
        size_t ng = 0;
        for (size_t i = 0; r == 0 && i < h.n; i++) {
            const store_row *row = &h.rows[i].row;
            const store_value *iv = &row->cols[c_int], *dv = &row->cols[c_value];
            double v = iv->type == SV_INT ? (double)iv->i : dv->type == SV_REAL ? dv->d
                                                        : dv->type == SV_INT ? (double)dv->i : NAN;
            attr_strings(&row->cols[c_attrs], attr, true, on_group, &g[ng].g);
            g[ng].sum = v;
            g[ng].points = 1;
            g[ng].idx = ng;
            ng++;
        }
        if (r == 0) {
            qsort(g, ng, sizeof *g, cmp_sum_places);
            for (size_t i = 0; i < ng;) {
                double sum = 0;
                uint64_t pts = 0;
                bool any = false;
                size_t e = i;
                for (; e < ng && cmp_sum_groups(&g[i], &g[e]) == 0; e++) {
                    if (!isnan(g[e].sum)) {
                        sum += g[e].sum;
                        any = true;
                    }
                    pts++;
                }
                cb(ctx, names[k], g[i].g ? g[i].g : "", any ? sum : 0, pts);
                i = e;
            }
            if (h.beyond)
                *ret_truncated = true;
        }
        for (size_t i = 0; g && i < ng; i++)
            free(g[i].g);
        free(g);
        held_free(&h);
        ch_reply_free(&keep);
    }
    return r;
}

/* ---- query plans ---- */

int ch_op_dash_explain(store *s, void (*cb)(void *ctx, const char *name, const char *sql, const char *plan),
                       void *ctx)
{
    (void)s;
    (void)cb;
    (void)ctx;
    return -ENOTSUP; /* the plans of test_store_dash are SQLite's */
}
