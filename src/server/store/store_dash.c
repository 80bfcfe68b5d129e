/* The dashboard's reads (store_dash.h): one layer over the backends'
 * newest rows of a range (store_newest_fn).
 *
 * Each read asks the backend for the newest scan_max rows of its range
 * and does the rest here, on the rows as the layout holds them, whichever
 * backend read them: the filters (the version, the group name), the
 * grouping (per request pattern, per attribute value), the order (by a
 * metric, NULL below every number, then newest first), the classes of a
 * request (its pacer.classes strings, through the one reader of stored
 * attributes, store_attrs.h). What a read keeps is bounded by its answer
 * (a heap of `limit` rows, a group per pattern or attribute value), not
 * by scan_max.
 */
#include "store_dash.h"
#include "store_attrs.h"
#include "store_backend.h"
#include "store_heap.h"

#include <pacer/base/array.h>
#include <pacer/base/strmap.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The layout column of table t named name, or -1. */
static int col_of(enum store_table t, const char *name)
{
    const store_table_desc *d = store_layout_table(t);
    for (size_t i = 0; i < d->n_cols; i++)
        if (strcmp(d->cols[i].name, name) == 0)
            return (int)i;
    return -1;
}

static const char *text_of(const store_value *v)
{
    return v->type == SV_TEXT ? (const char *)v->p : NULL; /* every backend's texts end with a NUL */
}

static bool text_is(const store_value *v, const char *s)
{
    size_t n = strlen(s);
    return v->type == SV_TEXT && v->n == n && memcmp(v->p, s, n) == 0;
}

/* A number as a count: an integer, or a real cut to one; *has: it is one. */
static uint64_t count_of(const store_value *v, bool *has)
{
    *has = v->type == SV_INT || v->type == SV_REAL;
    return v->type == SV_INT ? (uint64_t)v->i : v->type == SV_REAL ? (uint64_t)(int64_t)v->d : 0;
}

int store_dash_explain(store *st, void (*cb)(void *ctx, const char *name, const char *sql, const char *plan),
                       void *ctx)
{
    return store_ops(st)->dash_explain(st, cb, ctx);
}

/* ---- single records ---- */

/* The group name of a record row (its name columns joined by spaces) is
 * name: false when a part is NULL (as SQL's || gives NULL). */
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

typedef struct rows_read {
    const store_rows_query *q;
    const store_kind_desc *kd;
    int version_col, order_col, ts_col;
    store_heap heap;
} rows_read;

static int rows_offer(void *ctx, const store_row *row, int64_t place)
{
    rows_read *rr = ctx;
    const store_rows_query *q = rr->q;
    if (q->version && (rr->version_col < 0 || !text_is(&row->cols[rr->version_col], q->version)))
        return 0;
    if (q->name && !name_is(rr->kd, row, q->name))
        return 0;
    const store_value *ts = &row->cols[rr->ts_col];
    store_heap_key k = {.has = true, .ts = ts->type == SV_INT ? ts->i : INT64_MIN, .place = place};
    if (rr->order_col >= 0) {
        const store_value *v = &row->cols[rr->order_col];
        k.has = v->type == SV_INT || v->type == SV_REAL;
        k.v = v->type == SV_INT ? (double)v->i : v->type == SV_REAL ? v->d : 0;
    }
    return store_heap_offer(&rr->heap, k, row->cols, row->n);
}

int store_dash_rows(store *st, const store_rows_query *q, void (*cb)(void *ctx, const store_row *row), void *ctx,
                    bool *ret_truncated)
{
    const store_table_desc *t = store_layout_table(q->table);
    *ret_truncated = false;
    if (t->kind == KIND_NONE)
        return -EINVAL;
    rows_read rr = {.q = q, .kd = store_layout_kind(t->kind), .version_col = col_of(q->table, "version"),
                    .ts_col = col_of(q->table, "ts"), .order_col = -1};
    if (q->order_metric >= 0 && (size_t)q->order_metric < rr.kd->n_metrics)
        rr.order_col = rr.kd->metric_cols[q->order_metric]; /* -1: a computed one, by time */
    if (rr.ts_col < 0)
        return -EINVAL;
    int r = store_heap_init(&rr.heap, q->limit);
    store_newest_query nq = {.table = q->table, .app = q->app, .from_ns = q->from_ns, .to_ns = q->to_ns,
                             .scan_max = q->scan_max};
    if (r == 0)
        r = store_ops(st)->newest(st, &nq, rows_offer, &rr, ret_truncated);
    if (r == 0) {
        store_heap_sort(&rr.heap);
        for (size_t i = 0; i < rr.heap.n; i++) {
            store_row row = {.table = q->table, .n = t->n_cols};
            memcpy(row.cols, rr.heap.items[i].vals, t->n_cols * sizeof *row.cols);
            cb(ctx, &row);
        }
    }
    store_heap_free(&rr.heap);
    return r;
}

/* ---- requests by pattern ---- */

typedef struct req_read {
    const char *version;
    int c_version, c_method, c_pattern, c_failed, c_received, c_sent, c_extra;
    strmap groups; /* (method, pattern) → store_request_stat */
} req_read;

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

static int req_offer(void *ctx, const store_row *row, int64_t place)
{
    (void)place;
    req_read *rr = ctx;
    if (rr->version && !text_is(&row->cols[rr->c_version], rr->version))
        return 0;
    const char *method = text_of(&row->cols[rr->c_method]), *pattern = text_of(&row->cols[rr->c_pattern]);
    if (!pattern)
        return 0; /* a group the answer leaves out */
    /* the key: whether there is a method, the method, the pattern */
    char key[2048];
    const char *parts[3] = {method ? "m" : "", method, pattern};
    size_t len = strmap_key(key, sizeof key, parts, 3);
    if (!len)
        return 0; /* longer than a stored method and pattern can be */
    const char *copy;
    void **slot = strmap_put(&rr->groups, key, len, &copy);
    if (!slot || (!*slot && !(*slot = calloc(1, sizeof(store_request_stat)))))
        return -ENOMEM;
    store_request_stat *s = *slot;
    if (!s->pattern) { /* the key's own copies */
        s->method = method ? copy + 2 : NULL;
        s->pattern = method ? copy + 2 + strlen(method) + 1 : copy + 2;
    }
    bool known;
    s->count++;
    s->failed += count_of(&row->cols[rr->c_failed], &known);
    s->bytes_received += count_of(&row->cols[rr->c_received], &known);
    s->with_bytes += known;
    s->bytes_sent += count_of(&row->cols[rr->c_sent], &known);
    const store_value *extra = &row->cols[rr->c_extra];
    if (extra->type == SV_TEXT) {
        classes c = {0};
        store_attrs_strings(extra->p, extra->n, "pacer.classes", false, on_class, &c);
        s->class_error += c.error;
        s->class_large_image += c.large_image;
        s->class_slow += c.slow;
    }
    return 0;
}

static int cmp_stats(const void *x, const void *y)
{
    const store_request_stat *a = *(const store_request_stat *const *)x, *b = *(const store_request_stat *const *)y;
    if (!a->method != !b->method)
        return a->method ? 1 : -1;
    int c = a->method ? strcmp(a->method, b->method) : 0;
    return c ? c : strcmp(a->pattern, b->pattern);
}

int store_dash_request_stats(store *st, const char *app, const char *version, int64_t from_ns, int64_t to_ns,
                             size_t scan_max, void (*cb)(void *ctx, const store_request_stat *s), void *ctx,
                             bool *ret_truncated)
{
    enum store_table t = TABLE_REQUESTS;
    req_read rr = {.version = version, .c_version = col_of(t, "version"), .c_method = col_of(t, "method"),
                   .c_pattern = col_of(t, "pattern"), .c_failed = col_of(t, "failed"),
                   .c_received = col_of(t, "bytes_received"), .c_sent = col_of(t, "bytes_sent"),
                   .c_extra = col_of(t, "extra")};
    *ret_truncated = false;
    if (rr.c_version < 0 || rr.c_method < 0 || rr.c_pattern < 0 || rr.c_failed < 0 || rr.c_received < 0 ||
        rr.c_sent < 0 || rr.c_extra < 0)
        return -EINVAL;
    bool want[STORE_MAX_COLS] = {false};
    int cols[] = {rr.c_version, rr.c_method, rr.c_pattern, rr.c_failed, rr.c_received, rr.c_sent, rr.c_extra};
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        want[cols[i]] = true;
    store_newest_query nq = {.table = t, .app = app, .from_ns = from_ns, .to_ns = to_ns, .scan_max = scan_max,
                             .want = want};
    int r = store_ops(st)->newest(st, &nq, req_offer, &rr, ret_truncated);
    store_request_stat **sorted = r == 0 && rr.groups.n ? malloc(rr.groups.n * sizeof *sorted) : NULL;
    if (r == 0 && rr.groups.n && !sorted)
        r = -ENOMEM;
    if (r == 0) {
        size_t n = 0, pos = 0;
        const strmap_slot *s;
        while (strmap_next(&rr.groups, &pos, &s))
            sorted[n++] = s->value;
        if (n) /* sorted is NULL without groups */
            qsort(sorted, n, sizeof *sorted, cmp_stats);
        for (size_t i = 0; i < n; i++)
            cb(ctx, sorted[i]);
    }
    free(sorted);
    strmap_free(&rr.groups, free);
    return r;
}

/* ---- log records of one type ---- */

typedef struct logs_read {
    const char *type, *version;
    int c_type, c_version, c_session, c_body, c_ts;
    void (*cb)(void *ctx, const store_log_row *row);
    void *ctx;
} logs_read;

static int log_offer(void *ctx, const store_row *row, int64_t place)
{
    (void)place;
    logs_read *lr = ctx;
    if (!text_is(&row->cols[lr->c_type], lr->type) || (lr->version && !text_is(&row->cols[lr->c_version], lr->version)))
        return 0;
    const store_value *b = &row->cols[lr->c_body];
    if (b->type != SV_TEXT)
        return 0;
    store_log_row out = {
        .ts = row->cols[lr->c_ts].type == SV_INT ? row->cols[lr->c_ts].i : 0,
        .version = text_of(&row->cols[lr->c_version]),
        .session = text_of(&row->cols[lr->c_session]),
        .body = (const char *)b->p,
        .body_len = b->n,
    };
    lr->cb(lr->ctx, &out);
    return 0;
}

int store_dash_logs_of_type(store *st, const char *app, const char *version, const char *type, int64_t from_ns,
                            int64_t to_ns, size_t scan_max, void (*cb)(void *ctx, const store_log_row *row),
                            void *ctx, bool *ret_truncated)
{
    enum store_table t = TABLE_LOGS;
    logs_read lr = {type, version, col_of(t, "type"), col_of(t, "version"), col_of(t, "session"),
                    col_of(t, "body"), col_of(t, "ts"), cb, ctx};
    *ret_truncated = false;
    if (lr.c_type < 0 || lr.c_version < 0 || lr.c_session < 0 || lr.c_body < 0 || lr.c_ts < 0)
        return -EINVAL;
    bool want[STORE_MAX_COLS] = {false};
    want[lr.c_type] = want[lr.c_version] = want[lr.c_session] = want[lr.c_body] = want[lr.c_ts] = true;
    store_newest_query nq = {.table = t, .app = app, .from_ns = from_ns, .to_ns = to_ns, .scan_max = scan_max,
                             .want = want};
    return store_ops(st)->newest(st, &nq, log_offer, &lr, ret_truncated);
}

/* ---- metric sums per attribute values ---- */

typedef struct sum_group {
    const char *g[STORE_DASH_MAX_ATTRS]; /* NULL: points without the attribute */
    double sum;
    bool any;      /* a value was summed */
    uint64_t points;
} sum_group;

typedef struct sums_read {
    const char *const *attrs;
    size_t n_attrs;
    int c_int, c_value, c_attrs;
    strmap groups; /* the attributes' values (each "" and a byte: none) → sum_group */
} sums_read;

static void on_first(void *ctx, const char *s, size_t n)
{
    char **g = ctx;
    if (!*g && (*g = malloc(n + 1))) {
        memcpy(*g, s, n);
        (*g)[n] = 0;
    }
}

static void sum_group_free(void *p)
{
    sum_group *x = p;
    for (size_t i = 0; i < STORE_DASH_MAX_ATTRS; i++)
        free((char *)x->g[i]);
    free(x);
}

static int sum_offer(void *ctx, const store_row *row, int64_t place)
{
    (void)place;
    sums_read *sr = ctx;
    const store_value *iv = &row->cols[sr->c_int], *dv = &row->cols[sr->c_value], *av = &row->cols[sr->c_attrs];
    double v = iv->type == SV_INT ? (double)iv->i : dv->type == SV_REAL ? dv->d : dv->type == SV_INT ? (double)dv->i
                                                                                                     : NAN;
    /* the key: each attribute's value then a NUL, and a byte saying
     * whether the point had it — a point without the attribute is not
     * one with an empty value */
    char *g[STORE_DASH_MAX_ATTRS] = {NULL};
    size_t len = 0;
    for (size_t i = 0; i < sr->n_attrs; i++) {
        if (av->type == SV_TEXT)
            store_attrs_strings(av->p, av->n, sr->attrs[i], true, on_first, &g[i]);
        len += (g[i] ? strlen(g[i]) : 0) + 2;
    }
    int r = -ENOMEM;
    char *key = malloc(len + 1);
    if (!key)
        goto out;
    size_t at = 0;
    for (size_t i = 0; i < sr->n_attrs; i++) {
        size_t n = g[i] ? strlen(g[i]) : 0;
        memcpy(key + at, g[i] ? g[i] : "", n);
        at += n;
        key[at++] = 0;
        key[at++] = g[i] ? 1 : 2;
    }
    void **slot = strmap_put(&sr->groups, key, at, NULL);
    free(key);
    if (!slot)
        goto out;
    if (!*slot) {
        if (!(*slot = calloc(1, sizeof(sum_group))))
            goto out;
        sum_group *x = *slot;
        for (size_t i = 0; i < sr->n_attrs; i++) {
            x->g[i] = g[i]; /* the group's own */
            g[i] = NULL;
        }
    }
    sum_group *x = *slot;
    if (!isnan(v)) {
        x->sum += v; /* in the order of the points, newest first, which a sum of doubles depends on */
        x->any = true;
    }
    x->points++;
    r = 0;
out:
    for (size_t i = 0; i < sr->n_attrs; i++)
        free(g[i]);
    return r;
}

static int cmp_sums(const void *x, const void *y)
{
    const sum_group *a = *(const sum_group *const *)x, *b = *(const sum_group *const *)y;
    for (size_t i = 0; i < STORE_DASH_MAX_ATTRS; i++) {
        if (!a->g[i] || !b->g[i]) {
            if ((a->g[i] != NULL) != (b->g[i] != NULL))
                return (a->g[i] != NULL) - (b->g[i] != NULL);
            continue;
        }
        int c = strcmp(a->g[i], b->g[i]);
        if (c)
            return c;
    }
    return 0;
}

int store_dash_metric_sums(store *st, const char *app, const char *version, const char *const *names,
                           const char *const *attrs, int64_t from_ns, int64_t to_ns, size_t scan_max,
                           void (*cb)(void *ctx, const char *name, const char *const *groups, double sum,
                                      uint64_t points),
                           void *ctx, bool *ret_truncated)
{
    enum store_table t = TABLE_METRIC_POINTS;
    *ret_truncated = false;
    size_t n_attrs = 0;
    while (attrs[n_attrs])
        n_attrs++;
    if (n_attrs == 0 || n_attrs > STORE_DASH_MAX_ATTRS)
        return -EINVAL;
    int c_int = col_of(t, "int_value"), c_value = col_of(t, "value"), c_attrs = col_of(t, "attributes");
    if (c_int < 0 || c_value < 0 || c_attrs < 0)
        return -EINVAL;
    bool want[STORE_MAX_COLS] = {false};
    want[c_int] = want[c_value] = want[c_attrs] = true;
    int r = 0;
    for (size_t k = 0; names[k] && r == 0; k++) {
        sums_read sr = {attrs, n_attrs, c_int, c_value, c_attrs, {0}};
        store_newest_query nq = {.table = t, .app = app, .from_ns = from_ns, .to_ns = to_ns, .name = names[k],
                                 .version = version, .scan_max = scan_max, .want = want};
        bool truncated = false;
        r = store_ops(st)->newest(st, &nq, sum_offer, &sr, &truncated);
        *ret_truncated |= truncated;
        sum_group **sorted = r == 0 && sr.groups.n ? malloc(sr.groups.n * sizeof *sorted) : NULL;
        if (r == 0 && sr.groups.n && !sorted)
            r = -ENOMEM;
        if (r == 0) {
            size_t n = 0, pos = 0;
            const strmap_slot *s;
            while (strmap_next(&sr.groups, &pos, &s))
                sorted[n++] = s->value;
            if (n) /* sorted is NULL without groups */
                qsort(sorted, n, sizeof *sorted, cmp_sums);
            for (size_t i = 0; i < n; i++) {
                const char *groups[STORE_DASH_MAX_ATTRS];
                for (size_t a = 0; a < n_attrs; a++)
                    groups[a] = sorted[i]->g[a] ? sorted[i]->g[a] : "";
                cb(ctx, names[k], groups, sorted[i]->any ? sorted[i]->sum : 0, sorted[i]->points);
            }
        }
        free(sorted);
        strmap_free(&sr.groups, sum_group_free);
    }
    return r;
}
