/* Query API: GET /api/v1/{apps,pages,startup,requests,spans} (api.h), and
 * /api/v1/schema (schema_api.c).
 *
 * Percentiles come from the DDSketch rollups (store_scan merges whole days
 * from the rollups with the raw rows of the days a range cuts), so a query
 * costs one sketch per (name, metric, day), not one row per event.
 * Arguments (params.h: decoded strictly, anything else is 400 naming the
 * parameter): app (required, except for apps), version (optional: all
 * versions merged), from / to (optional, unix seconds, [from, to), at most
 * the largest second whose nanoseconds fit 64 bits).
 */
#include "api.h"

#include <pacer/base/json.h>
#include <pacer/base/strmap.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct agg {
    const char *name; /* the table's key */
    uint64_t count, failed;
    sketch m[STORE_MAX_METRICS];
} agg;

typedef struct aggs {
    agg *last;     /* the one aggs_get gave last */
    strmap groups; /* name → agg */
    size_t n_metrics; /* of the kind */
    bool oom;
} aggs;

static agg *aggs_get(aggs *a, const char *name)
{
    /* rows come in runs of one name (a block's, a rollup's): the last one first */
    if (a->last && strcmp(a->last->name, name) == 0)
        return a->last;
    const char *key;
    void **slot = strmap_put(&a->groups, name, strlen(name), &key);
    if (slot && !*slot && (*slot = calloc(1, sizeof(agg)))) {
        agg *g = *slot;
        g->name = key;
        for (size_t i = 0; i < STORE_MAX_METRICS; i++)
            sketch_init(&g->m[i]);
    }
    if (!slot || !*slot) {
        a->oom = true;
        return NULL;
    }
    return a->last = *slot;
}

static void agg_free(void *p)
{
    agg *g = p;
    for (size_t m = 0; m < STORE_MAX_METRICS; m++)
        sketch_reset(&g->m[m]);
    free(g);
}

static void aggs_free(aggs *a)
{
    strmap_free(&a->groups, agg_free);
}

static void on_count(void *ctx, const char *name, uint64_t count, uint64_t failed)
{
    agg *g = aggs_get(ctx, name);
    if (g) {
        g->count += count;
        g->failed += failed;
    }
}

static void on_sketch(void *ctx, const char *name, size_t metric, const sketch *s)
{
    aggs *a = ctx;
    agg *g = aggs_get(a, name);
    if (g && sketch_merge(&g->m[metric], s) < 0)
        a->oom = true;
}

static int on_sketch_encoded(void *ctx, const char *name, size_t metric, const uint8_t *buf, size_t len)
{
    aggs *a = ctx;
    agg *g = aggs_get(a, name);
    return g ? sketch_merge_encoded(&g->m[metric], buf, len) : -ENOMEM;
}

static void on_raw(void *ctx, const char *name, bool failed, bool excluded, const double *metrics)
{
    aggs *a = ctx;
    agg *g = aggs_get(a, name);
    if (!g)
        return;
    g->count++;
    g->failed += failed;
    if (excluded)
        return;
    for (size_t i = 0; i < a->n_metrics; i++)
        if (!isnan(metrics[i]) && sketch_add(&g->m[i], metrics[i]) == -ENOMEM)
            a->oom = true;
}

static int cmp_agg(const void *x, const void *y)
{
    return strcmp((*(agg *const *)x)->name, (*(agg *const *)y)->name);
}

/* A time in ms, to the microsecond. */
static void kv_ms(jbuf *b, const char *key, double v)
{
    jbuf_kv_double(b, key, round(v * 1000.0) / 1000.0);
}

static void metrics_json(jbuf *b, enum store_kind kind, const agg *g)
{
    jbuf_open(b, '{');
    for (size_t i = 0; i < store_layout_kind(kind)->n_metrics; i++) {
        const sketch *s = &g->m[i];
        if (!s->count)
            continue;
        jbuf_key(b, store_layout_kind(kind)->metrics[i]);
        jbuf_open(b, '{');
        jbuf_kv_u64(b, "count", s->count);
        kv_ms(b, "p50", sketch_quantile(s, 0.50));
        kv_ms(b, "p90", sketch_quantile(s, 0.90));
        kv_ms(b, "p99", sketch_quantile(s, 0.99));
        kv_ms(b, "min", s->min);
        kv_ms(b, "max", s->max);
        kv_ms(b, "mean", sketch_sum(s) / (double)s->count);
        jbuf_close(b, '}');
    }
    jbuf_close(b, '}');
}

#define MAX_SECONDS (INT64_MAX / 1000000000LL) /* 9223372036: its nanoseconds fit an int64 */
#define MAX_NAME 256
/* {"apps":[{"app":A,"versions":[…]}, …]} from the sorted (app, version)
 * pairs: an entry per run of one app. */
typedef struct apps_out {
    jbuf b;
    char *app; /* the open entry's, or NULL */
    bool oom;
} apps_out;

static void on_app(void *ctx, const char *app, const char *version)
{
    apps_out *o = ctx;
    if (!o->app || strcmp(o->app, app) != 0) {
        if (o->app) {
            jbuf_close(&o->b, ']');
            jbuf_close(&o->b, '}');
        }
        free(o->app);
        if (!(o->app = strdup(app)))
            o->oom = true;
        jbuf_open(&o->b, '{');
        jbuf_kv_str(&o->b, "app", app);
        jbuf_key(&o->b, "versions");
        jbuf_open(&o->b, '[');
    }
    jbuf_str(&o->b, version);
}

int query_groups(const api_ctx *d, enum store_kind kind, const char *app, const char *version, int64_t from, int64_t to,
                 const char *only, jbuf *out)
{
    static const char *const name_fields[KIND_COUNT] = {
        [KIND_PAGE] = "page", [KIND_STARTUP] = "kind", [KIND_REQUEST] = "pattern", [KIND_SPAN] = "name"};
    aggs a = {.n_metrics = store_layout_kind(kind)->n_metrics};
    store_scan_cb cb = {.count = on_count, .sketch = on_sketch, .raw = on_raw, .sketch_encoded = on_sketch_encoded,
                        .ctx = &a};
    int r = store_scan(d->store, kind, app, version, from, to, &cb);
    if (r < 0 || a.oom) {
        aggs_free(&a);
        return r < 0 ? -EIO : -ENOMEM;
    }
    agg **sorted = malloc((a.groups.n ? a.groups.n : 1) * sizeof *sorted);
    if (!sorted) {
        aggs_free(&a);
        return -ENOMEM;
    }
    size_t n = 0, pos = 0;
    const strmap_slot *slot;
    while (strmap_next(&a.groups, &pos, &slot)) {
        agg *g = slot->value;
        if (!only || strcmp(g->name, only) == 0)
            sorted[n++] = g;
    }
    qsort(sorted, n, sizeof *sorted, cmp_agg);
    jbuf *b = out;
    jbuf_open(b, '[');
    for (size_t i = 0; i < n; i++) {
        agg *g = sorted[i];
        jbuf_open(b, '{');
        if (kind == KIND_REQUEST) {
            const char *sp = strchr(g->name, ' ');
            jbuf_key(b, "method");
            jbuf_strn(b, g->name, sp ? (size_t)(sp - g->name) : 0);
            jbuf_kv_str(b, "pattern", sp ? sp + 1 : g->name);
        } else {
            jbuf_kv_str(b, name_fields[kind], g->name);
        }
        jbuf_kv_u64(b, "count", g->count);
        if (kind == KIND_REQUEST || kind == KIND_SPAN)
            jbuf_kv_u64(b, "errors", g->failed);
        else if (kind == KIND_PAGE)
            jbuf_kv_u64(b, "incomplete", g->failed);
        jbuf_key(b, "metrics");
        metrics_json(b, kind, g);
        jbuf_close(b, '}');
    }
    jbuf_close(b, ']');
    free(sorted);
    aggs_free(&a);
    return b->failed ? -ENOMEM : 0;
}

void query_handle(const api_ctx *d, const http_request *rq, http_response *rs)
{
    static const struct {
        const char *path, *list, *name_field;
        enum store_kind kind;
    } endpoints[] = {
        {"/api/v1/pages", "pages", "page", KIND_PAGE},
        {"/api/v1/startup", "startup", "kind", KIND_STARTUP},
        {"/api/v1/requests", "requests", "pattern", KIND_REQUEST},
        {"/api/v1/spans", "spans", "name", KIND_SPAN},
    };
    char err[256];
    if (schema_api_handle(d, rq, rs))
        return;
    if (strcmp(rq->path, "/api/v1/apps") == 0) {
        static const char *const none[] = {NULL};
        if (params_only(rq->query, none, err, sizeof err) < 0) {
            http_error(rs, 400, "%s", err);
            return;
        }
        apps_out o = {.app = NULL};
        jbuf_init(&o.b);
        jbuf_open(&o.b, '{');
        jbuf_key(&o.b, "apps");
        jbuf_open(&o.b, '[');
        int r = store_apps(d->store, on_app, &o);
        if (o.app) {
            jbuf_close(&o.b, ']');
            jbuf_close(&o.b, '}');
        }
        jbuf_close(&o.b, ']');
        jbuf_close(&o.b, '}');
        free(o.app);
        if (r < 0 || o.oom) {
            jbuf_free(&o.b);
            http_error(rs, 503, "the store could not be read");
            return;
        }
        http_json(rs, 200, &o.b);
        return;
    }
    size_t e = 0;
    while (e < sizeof endpoints / sizeof endpoints[0] && strcmp(rq->path, endpoints[e].path) != 0)
        e++;
    if (e == sizeof endpoints / sizeof endpoints[0]) {
        http_error(rs, 404, "no such query: %s (apps, pages, startup, requests, spans, schema)", rq->path);
        return;
    }
    static const char *const known[] = {"app", "version", "from", "to", NULL};
    const char *app = NULL, *version = NULL;
    int64_t from_s = 0, to_s = 0;
    int has_from = 0, has_to = 0, has_app = 0;
    if (params_only(rq->query, known, err, sizeof err) < 0 ||
        (has_app = params_str(rq->query, "app", MAX_NAME, &app, err, sizeof err)) < 0 ||
        params_str(rq->query, "version", MAX_NAME, &version, err, sizeof err) < 0 ||
        (has_from = params_int(rq->query, "from", 0, MAX_SECONDS, &from_s, err, sizeof err)) < 0 ||
        (has_to = params_int(rq->query, "to", 0, MAX_SECONDS, &to_s, err, sizeof err)) < 0) {
        http_error(rs, 400, "%s", err);
        return;
    }
    if (!has_app) {
        http_error(rs, 400, "app: required (%s?app=APP[&version=V][&from=UNIX_S&to=UNIX_S])", rq->path);
        return;
    }
    if (has_from && has_to && from_s >= to_s) {
        http_error(rs, 400, "from, to: from must be before to ([from, to) in unix seconds)");
        return;
    }
    int64_t from = has_from ? from_s * 1000000000LL : INT64_MIN;
    int64_t to = has_to ? to_s * 1000000000LL : INT64_MAX;
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    jbuf_kv_str(&b, "app", app);
    if (version)
        jbuf_kv_str(&b, "version", version);
    if (has_from)
        jbuf_kv_i64(&b, "from", from_s);
    if (has_to)
        jbuf_kv_i64(&b, "to", to_s);
    jbuf_key(&b, endpoints[e].list);
    int r = query_groups(d, endpoints[e].kind, app, version, from, to, NULL, &b);
    if (r < 0) {
        jbuf_free(&b);
        http_error(rs, 503, r == -ENOMEM ? "out of memory" : "the store could not be read");
        return;
    }
    jbuf_close(&b, '}');
    http_json(rs, 200, &b);
}
