/* Query API: GET /api/v1/{apps,pages,startup,requests,spans} (pacerd.h).
 *
 * Percentiles come from the DDSketch rollups (store_scan merges whole days
 * from the rollups with the raw rows of the days a range cuts), so a query
 * costs one sketch per (name, metric, day), not one row per event.
 * Arguments: app (required, except for apps), version (optional: all
 * versions merged), from / to (optional, unix seconds, [from, to)).
 */
#include "pacerd.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct agg {
    char *name;
    uint64_t count, failed;
    sketch m[STORE_MAX_METRICS];
} agg;

typedef struct aggs {
    agg **slots;
    size_t cap, n;
    enum store_kind kind;
    bool oom;
} aggs;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 14695981039346656037ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static agg *aggs_get(aggs *a, const char *name)
{
    if (a->n * 2 >= a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        agg **slots = calloc(cap, sizeof *slots);
        if (!slots) {
            a->oom = true;
            return NULL;
        }
        for (size_t i = 0; i < a->cap; i++)
            if (a->slots[i]) {
                size_t k = hash_str(a->slots[i]->name) & (cap - 1);
                while (slots[k])
                    k = (k + 1) & (cap - 1);
                slots[k] = a->slots[i];
            }
        free(a->slots);
        a->slots = slots;
        a->cap = cap;
    }
    size_t k = hash_str(name) & (a->cap - 1);
    while (a->slots[k]) {
        if (strcmp(a->slots[k]->name, name) == 0)
            return a->slots[k];
        k = (k + 1) & (a->cap - 1);
    }
    agg *g = calloc(1, sizeof *g);
    if (!g || !(g->name = strdup(name))) {
        free(g);
        a->oom = true;
        return NULL;
    }
    for (size_t i = 0; i < STORE_MAX_METRICS; i++)
        sketch_init(&g->m[i]);
    a->slots[k] = g;
    a->n++;
    return g;
}

static void aggs_free(aggs *a)
{
    for (size_t i = 0; i < a->cap; i++) {
        agg *g = a->slots[i];
        if (!g)
            continue;
        for (size_t m = 0; m < STORE_MAX_METRICS; m++)
            sketch_reset(&g->m[m]);
        free(g->name);
        free(g);
    }
    free(a->slots);
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
    for (size_t i = 0; i < store_kinds[a->kind].n_metrics; i++)
        if (!isnan(metrics[i]) && sketch_add(&g->m[i], metrics[i]) == -ENOMEM)
            a->oom = true;
}

static int cmp_agg(const void *x, const void *y)
{
    return strcmp((*(agg *const *)x)->name, (*(agg *const *)y)->name);
}

static json_t *ms(double v)
{
    return json_real(round(v * 1000.0) / 1000.0);
}

static json_t *metrics_json(enum store_kind kind, const agg *g)
{
    json_t *o = json_object();
    for (size_t i = 0; i < store_kinds[kind].n_metrics; i++) {
        const sketch *s = &g->m[i];
        if (!s->count)
            continue;
        json_object_set_new(o, store_kinds[kind].metrics[i],
                            json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o}", "count", (json_int_t)s->count,
                                      "p50", ms(sketch_quantile(s, 0.50)), "p90", ms(sketch_quantile(s, 0.90)),
                                      "p99", ms(sketch_quantile(s, 0.99)), "min", ms(s->min), "max", ms(s->max),
                                      "mean", ms(s->sum / (double)s->count)));
    }
    return o;
}

/* Unix seconds → ns; false when not a non-negative integer. */
static bool parse_seconds(const char *s, int64_t *ret)
{
    if (!s || !*s || strlen(s) > 11)
        return false;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        v = v * 10 + (*s - '0');
    }
    *ret = v * 1000000000LL;
    return true;
}

static void on_app(void *ctx, const char *app, const char *version)
{
    json_t *list = ctx;
    json_t *last = json_array_get(list, json_array_size(list) - 1);
    if (!last || strcmp(json_string_value(json_object_get(last, "app")), app) != 0) {
        last = json_pack("{s:s, s:[]}", "app", app, "versions");
        json_array_append_new(list, last);
    }
    json_array_append_new(json_object_get(last, "versions"), json_string(version));
}

void query_handle(pacerd *d, const http_request *rq, http_response *rs)
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
    if (strcmp(rq->path, "/api/v1/apps") == 0) {
        json_t *list = json_array();
        if (store_apps(d->store, on_app, list) < 0) {
            json_decref(list);
            http_error(rs, 503, "the store could not be read");
            return;
        }
        http_json(rs, 200, json_pack("{s:o}", "apps", list));
        return;
    }
    size_t e = 0;
    while (e < sizeof endpoints / sizeof endpoints[0] && strcmp(rq->path, endpoints[e].path) != 0)
        e++;
    if (e == sizeof endpoints / sizeof endpoints[0]) {
        http_error(rs, 404, "no such query: %s (apps, pages, startup, requests, spans)", rq->path);
        return;
    }
    const char *app = http_arg(rq, "app");
    const char *version = http_arg(rq, "version");
    const char *from_s = http_arg(rq, "from"), *to_s = http_arg(rq, "to");
    int64_t from = INT64_MIN, to = INT64_MAX;
    if (!app || !*app) {
        http_error(rs, 400, "app: required (%s?app=APP[&version=V][&from=UNIX_S&to=UNIX_S])", rq->path);
        return;
    }
    if ((from_s && !parse_seconds(from_s, &from)) || (to_s && !parse_seconds(to_s, &to))) {
        http_error(rs, 400, "from, to: expected unix seconds (a non-negative integer)");
        return;
    }
    enum store_kind kind = endpoints[e].kind;
    aggs a = {.kind = kind};
    store_scan_cb cb = {on_count, on_sketch, on_raw, &a};
    int r = store_scan(d->store, kind, app, version, from, to, &cb);
    if (r < 0 || a.oom) {
        aggs_free(&a);
        http_error(rs, 503, "the store could not be read");
        return;
    }
    agg **sorted = malloc((a.n ? a.n : 1) * sizeof *sorted);
    if (!sorted) {
        aggs_free(&a);
        http_error(rs, 503, "out of memory");
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < a.cap; i++)
        if (a.slots[i])
            sorted[n++] = a.slots[i];
    qsort(sorted, n, sizeof *sorted, cmp_agg);
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++) {
        agg *g = sorted[i];
        json_t *o = json_object();
        if (kind == KIND_REQUEST) {
            const char *sp = strchr(g->name, ' ');
            json_object_set_new(o, "method", json_stringn(g->name, sp ? (size_t)(sp - g->name) : 0));
            json_object_set_new(o, "pattern", json_string(sp ? sp + 1 : g->name));
        } else {
            json_object_set_new(o, endpoints[e].name_field, json_string(g->name));
        }
        json_object_set_new(o, "count", json_integer((json_int_t)g->count));
        if (kind == KIND_REQUEST || kind == KIND_SPAN)
            json_object_set_new(o, "errors", json_integer((json_int_t)g->failed));
        else if (kind == KIND_PAGE)
            json_object_set_new(o, "incomplete", json_integer((json_int_t)g->failed));
        json_object_set_new(o, "metrics", metrics_json(kind, g));
        json_array_append_new(list, o);
    }
    free(sorted);
    aggs_free(&a);
    json_t *resp = json_pack("{s:s, s:o}", "app", app, endpoints[e].list, list);
    if (version)
        json_object_set_new(resp, "version", json_string(version));
    if (from_s)
        json_object_set_new(resp, "from", json_integer(from / 1000000000LL));
    if (to_s)
        json_object_set_new(resp, "to", json_integer(to / 1000000000LL));
    http_json(rs, 200, resp);
}
