/* The dashboard's reads (api.h, query_dash_handle; docs/server.md, "The
 * dashboard's reads"). Each takes the common parameters app (required),
 * version, from, to (unix seconds, [from, to); all time without them),
 * decoded strictly (params.h), plus its own:
 *
 *   /api/v1/series     kind, step (and from, to: required), name:
 *                      the percentiles of /api/v1/pages (startup,
 *                      requests, spans) per time bucket [t, t + step)
 *   /api/v1/histogram  kind, name, metric: the DDSketch buckets of one
 *                      metric of one group (the distribution behind its
 *                      percentiles)
 *   /api/v1/records    type (page, startup, net), name, sort (a metric:
 *                      largest first, or "newest"), limit: single records
 *                      with their API list, phases, classes, trace id
 *   /api/v1/request_stats   per method and URL pattern: count, errors,
 *                      bytes, classes
 *   /api/v1/jank       fingerprint, kind: jank and hang records (of that
 *                      fingerprint, of that kind) grouped by fingerprint,
 *                      with the longest one's stack, and every stack or
 *                      profile merged into one call tree (a flame graph's
 *                      data)
 *   /api/v1/frames     widgets: per window: frames, slow, frozen, dropped,
 *                      Matrix's levels, the time per frame phase (all
 *                      frames, slow frames) when the records had phases,
 *                      the `widgets` widget types (and phase) that took
 *                      longest in slow frames when the records named them
 *
 * The last four read single rows, bounded (SCAN_MAX of the range, newest
 * first: "truncated": true says older ones were not looked at).
 */
#include "dash_parse.h"
#include "api.h"
#include "record_json.h"
#include "store/store_dash.h"

#include <pacer/base/json.h>
#include <pacer/base/strmap.h>
#include <pacer/base/utf8.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SECONDS (INT64_MAX / 1000000000LL)
#define MAX_NAME 1024
#define MAX_BUCKETS 400
#define SCAN_MAX 200000
#define RECORDS_MAX 200
#define FLAME_MAX_NODES 20000
#define S_NS 1000000000LL

typedef struct common {
    const char *app, *version;
    int64_t from_s, to_s;
    bool has_from, has_to;
    int64_t from, to; /* ns */
} common;

/* The common parameters and the endpoint's own (names, NULL-terminated,
 * besides app, version, from, to). 0, or -1 with the 400 answered. */
static int common_params(const http_request *rq, http_response *rs, const char *const *own, common *c)
{
    const char *known[16] = {"app", "version", "from", "to"};
    size_t n = 4;
    for (size_t i = 0; own[i] && n < 15; i++)
        known[n++] = own[i];
    known[n] = NULL;
    char err[256];
    int has_app = 0, hf = 0, ht = 0;
    *c = (common){0};
    if (params_only(rq->query, known, err, sizeof err) < 0 ||
        (has_app = params_str(rq->query, "app", 256, &c->app, err, sizeof err)) < 0 ||
        params_str(rq->query, "version", 256, &c->version, err, sizeof err) < 0 ||
        (hf = params_int(rq->query, "from", 0, MAX_SECONDS, &c->from_s, err, sizeof err)) < 0 ||
        (ht = params_int(rq->query, "to", 0, MAX_SECONDS, &c->to_s, err, sizeof err)) < 0) {
        http_error(rs, 400, "%s", err);
        return -1;
    }
    if (!has_app) {
        http_error(rs, 400, "app: required (%s?app=APP[&version=V][&from=UNIX_S&to=UNIX_S])", rq->path);
        return -1;
    }
    if (hf && ht && c->from_s >= c->to_s) {
        http_error(rs, 400, "from, to: from must be before to ([from, to) in unix seconds)");
        return -1;
    }
    c->has_from = hf;
    c->has_to = ht;
    c->from = hf ? c->from_s * S_NS : 0;
    c->to = ht ? c->to_s * S_NS : INT64_MAX;
    return 0;
}

static void common_json(jbuf *b, const common *c)
{
    jbuf_kv_str(b, "app", c->app);
    if (c->version)
        jbuf_kv_str(b, "version", c->version);
    if (c->has_from)
        jbuf_kv_i64(b, "from", c->from_s);
    if (c->has_to)
        jbuf_kv_i64(b, "to", c->to_s);
}

/* kind=page|startup|request|span */
static int kind_param(const http_request *rq, http_response *rs, enum store_kind *ret)
{
    static const char *const names[KIND_COUNT] = {"page", "startup", "request", "span"};
    const char *k = NULL;
    char err[256];
    if (params_str(rq->query, "kind", 16, &k, err, sizeof err) < 0) {
        http_error(rs, 400, "%s", err);
        return -1;
    }
    for (int i = 0; k && i < KIND_COUNT; i++)
        if (strcmp(k, names[i]) == 0) {
            *ret = (enum store_kind)i;
            return 0;
        }
    http_error(rs, 400, "kind: %s (expected page, startup, request or span)", k ? "not a kind" : "required");
    return -1;
}

/* ---- /api/v1/series ---- */

static void series(const api_ctx *d, const http_request *rq, http_response *rs)
{
    static const char *const own[] = {"kind", "step", "name", NULL};
    common c;
    enum store_kind kind;
    int64_t step = 0;
    const char *name = NULL;
    char err[256];
    if (common_params(rq, rs, own, &c) < 0 || kind_param(rq, rs, &kind) < 0)
        return;
    int has_step = params_int(rq->query, "step", 60, 366 * 86400, &step, err, sizeof err);
    if (has_step < 0 || params_str(rq->query, "name", MAX_NAME, &name, err, sizeof err) < 0) {
        http_error(rs, 400, "%s", err);
        return;
    }
    if (!c.has_from || !c.has_to || !has_step) {
        http_error(rs, 400, "from, to, step: required (buckets [from + i*step, from + (i+1)*step) up to to)");
        return;
    }
    int64_t n = c.to_s / step - c.from_s / step + 1;
    if (n > MAX_BUCKETS) {
        http_error(rs, 400, "step: %" PRId64 " buckets; at most %d (a larger step, or a shorter range)", n,
                   MAX_BUCKETS);
        return;
    }
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    common_json(&b, &c);
    jbuf_kv_i64(&b, "step", step);
    if (name)
        jbuf_kv_str(&b, "name", name);
    jbuf_key(&b, "buckets");
    jbuf_open(&b, '[');
    int r = 0;
    /* buckets end on multiples of step (UTC days for a step of a day: the
     * inner buckets then read whole days of sketches); the first and the
     * last are clipped to [from, to) */
    for (int64_t t = c.from_s; t < c.to_s && r == 0;) {
        int64_t end = (t / step + 1) * step;
        if (end > c.to_s)
            end = c.to_s;
        jbuf_open(&b, '{');
        jbuf_kv_i64(&b, "from", t);
        jbuf_kv_i64(&b, "to", end);
        jbuf_key(&b, "items");
        r = query_groups(d, kind, c.app, c.version, t * S_NS, end * S_NS, name, &b);
        jbuf_close(&b, '}');
        t = end;
    }
    jbuf_close(&b, ']');
    jbuf_close(&b, '}');
    api_answer(rs, &b, r, "the store could not be read");
}

/* ---- /api/v1/histogram ---- */

typedef struct one_sketch {
    const char *name;
    size_t metric, n_metrics;
    sketch s;
    uint64_t count;
    bool oom;
} one_sketch;

static void hist_count(void *ctx, const char *name, uint64_t count, uint64_t failed)
{
    one_sketch *o = ctx;
    if (strcmp(name, o->name) == 0)
        o->count += count;
}

static void hist_sketch(void *ctx, const char *name, size_t metric, const sketch *s)
{
    one_sketch *o = ctx;
    if (metric == o->metric && strcmp(name, o->name) == 0 && sketch_merge(&o->s, s) < 0)
        o->oom = true;
}

static void hist_raw(void *ctx, const char *name, bool failed, bool excluded, const double *metrics)
{
    one_sketch *o = ctx;
    if (strcmp(name, o->name) != 0)
        return;
    o->count++;
    if (!excluded && !isnan(metrics[o->metric]) && sketch_add(&o->s, metrics[o->metric]) == -ENOMEM)
        o->oom = true;
}

static void histogram(const api_ctx *d, const http_request *rq, http_response *rs)
{
    static const char *const own[] = {"kind", "name", "metric", NULL};
    common c;
    enum store_kind kind;
    const char *name = NULL, *metric = NULL;
    char err[256];
    if (common_params(rq, rs, own, &c) < 0 || kind_param(rq, rs, &kind) < 0)
        return;
    if (params_str(rq->query, "name", MAX_NAME, &name, err, sizeof err) < 0 ||
        params_str(rq->query, "metric", 64, &metric, err, sizeof err) < 0) {
        http_error(rs, 400, "%s", err);
        return;
    }
    const store_kind_desc *kd = store_layout_kind(kind);
    size_t m = 0;
    while (metric && m < kd->n_metrics && strcmp(kd->metrics[m], metric) != 0)
        m++;
    if (!name || !metric || m == kd->n_metrics) {
        char list[256] = "";
        for (size_t i = 0; i < kd->n_metrics; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", kd->metrics[i]);
        http_error(rs, 400, "%s (metric: one of %s)", !name ? "name: required" : "metric: required, a metric of the kind",
                   list);
        return;
    }
    one_sketch o = {.name = name, .metric = m, .n_metrics = kd->n_metrics};
    sketch_init(&o.s);
    store_scan_cb cb = {.count = hist_count, .sketch = hist_sketch, .raw = hist_raw, .ctx = &o};
    int r = store_scan(d->store, kind, c.app, c.version, c.from, c.to, &cb);
    if (r == 0 && o.oom)
        r = -ENOMEM;
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    common_json(&b, &c);
    jbuf_kv_str(&b, "name", name);
    jbuf_kv_str(&b, "metric", metric);
    jbuf_kv_u64(&b, "records", o.count);
    jbuf_kv_u64(&b, "count", o.s.count);
    jbuf_kv_u64(&b, "zero_count", o.s.zero_count);
    if (o.s.count) {
        jbuf_kv_double(&b, "min", o.s.min);
        jbuf_kv_double(&b, "max", o.s.max);
        jbuf_kv_double(&b, "p50", round(sketch_quantile(&o.s, 0.5) * 1000.0) / 1000.0);
        jbuf_kv_double(&b, "p90", round(sketch_quantile(&o.s, 0.9) * 1000.0) / 1000.0);
        jbuf_kv_double(&b, "p99", round(sketch_quantile(&o.s, 0.99) * 1000.0) / 1000.0);
    }
    jbuf_kv_double(&b, "relative_accuracy", SKETCH_ALPHA);
    /* bucket i holds (gamma^(i-1), gamma^i] */
    double lg = log((1.0 + SKETCH_ALPHA) / (1.0 - SKETCH_ALPHA));
    jbuf_key(&b, "buckets");
    jbuf_open(&b, '[');
    for (uint32_t i = 0; i < o.s.n_bins; i++) {
        if (!o.s.bins[i])
            continue;
        int32_t k = o.s.offset + (int32_t)i;
        jbuf_open(&b, '{');
        jbuf_kv_double(&b, "lo", exp(lg * (k - 1)));
        jbuf_kv_double(&b, "hi", exp(lg * k));
        jbuf_kv_u64(&b, "count", o.s.bins[i]);
        jbuf_close(&b, '}');
    }
    jbuf_close(&b, ']');
    jbuf_close(&b, '}');
    sketch_reset(&o.s);
    api_answer(rs, &b, r, "the store could not be read");
}

/* ---- /api/v1/records ---- */

typedef struct rec_out {
    jbuf *b;
    const pacer_record_type *type;
} rec_out;

static void write_record(void *ctx, const store_row *row)
{
    rec_out *o = ctx;
    record_json_write(o->b, o->type, row, true);
}

static void records(const api_ctx *d, const http_request *rq, http_response *rs)
{
    static const char *const own[] = {"type", "name", "sort", "limit", NULL};
    static const struct {
        const char *type;
        enum store_table table;
    } types[] = {{"page", TABLE_PAGE_LOADS}, {"startup", TABLE_STARTUPS}, {"net", TABLE_REQUESTS}};
    common c;
    const char *type = NULL, *name = NULL, *sort = NULL;
    int64_t limit = 20;
    char err[256];
    if (common_params(rq, rs, own, &c) < 0)
        return;
    if (params_str(rq->query, "type", 16, &type, err, sizeof err) < 0 ||
        params_str(rq->query, "name", MAX_NAME, &name, err, sizeof err) < 0 ||
        params_str(rq->query, "sort", 64, &sort, err, sizeof err) < 0 ||
        params_int(rq->query, "limit", 1, RECORDS_MAX, &limit, err, sizeof err) < 0) {
        http_error(rs, 400, "%s", err);
        return;
    }
    size_t t = 0;
    while (type && t < sizeof types / sizeof types[0] && strcmp(types[t].type, type) != 0)
        t++;
    if (!type || t == sizeof types / sizeof types[0]) {
        http_error(rs, 400, "type: %s (expected page, startup or net)", type ? "not a record type with a table"
                                                                             : "required");
        return;
    }
    enum store_kind kind = store_layout_table(types[t].table)->kind;
    const store_kind_desc *kd = store_layout_kind(kind);
    int order = -1;
    if (sort && strcmp(sort, "newest") != 0) {
        for (size_t m = 0; m < kd->n_metrics && order < 0; m++)
            if (strcmp(kd->metrics[m], sort) == 0)
                order = (int)m;
        if (order < 0) {
            http_error(rs, 400, "sort: expected newest or a metric of %s records", type);
            return;
        }
    }
    store_rows_query q = {types[t].table, c.app, c.version, name, c.from, c.to, order, (size_t)limit, SCAN_MAX};
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    common_json(&b, &c);
    jbuf_kv_str(&b, "type", type);
    if (name)
        jbuf_kv_str(&b, "name", name);
    jbuf_kv_str(&b, "sort", order < 0 ? "newest" : kd->metrics[order]);
    jbuf_key(&b, "records");
    jbuf_open(&b, '[');
    rec_out o = {&b, store_layout_table(types[t].table)->type};
    bool truncated = false;
    int r = store_dash_rows(d->store, &q, write_record, &o, &truncated);
    jbuf_close(&b, ']');
    jbuf_kv_bool(&b, "truncated", truncated);
    jbuf_close(&b, '}');
    api_answer(rs, &b, r, "the store could not be read");
}

/* ---- /api/v1/request_stats ---- */

static void write_stat(void *ctx, const store_request_stat *s)
{
    jbuf *b = ctx;
    jbuf_open(b, '{');
    jbuf_kv_str(b, "method", s->method ? s->method : "");
    jbuf_kv_str(b, "pattern", s->pattern);
    jbuf_kv_u64(b, "count", s->count);
    jbuf_kv_u64(b, "errors", s->failed);
    jbuf_kv_u64(b, "bytes_received", s->bytes_received);
    jbuf_kv_u64(b, "bytes_sent", s->bytes_sent);
    if (s->with_bytes)
        jbuf_kv_double(b, "bytes_received_mean", round((double)s->bytes_received / (double)s->with_bytes));
    jbuf_key(b, "classes");
    jbuf_open(b, '{');
    jbuf_kv_u64(b, "error", s->class_error);
    jbuf_kv_u64(b, "large_image", s->class_large_image);
    jbuf_kv_u64(b, "slow", s->class_slow);
    jbuf_close(b, '}');
    jbuf_close(b, '}');
}

static void request_stats(const api_ctx *d, const http_request *rq, http_response *rs)
{
    static const char *const own[] = {NULL};
    common c;
    if (common_params(rq, rs, own, &c) < 0)
        return;
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    common_json(&b, &c);
    jbuf_key(&b, "requests");
    jbuf_open(&b, '[');
    bool truncated = false;
    int r = store_dash_request_stats(d->store, c.app, c.version, c.from, c.to, SCAN_MAX, write_stat, &b, &truncated);
    jbuf_close(&b, ']');
    jbuf_kv_bool(&b, "truncated", truncated);
    jbuf_close(&b, '}');
    api_answer(rs, &b, r, "the store could not be read");
}

/* ---- /api/v1/jank ---- */

/* A name and its count (pages, versions of a group). */
typedef struct tally {
    char *name;
    uint64_t count;
} tally;

typedef struct jgroup {
    const char *fingerprint; /* the table's key */
    uint64_t count, hangs;
    sketch durations;
    double longest;
    char *stack; /* the longest one's stack, as JSON text */
    int64_t first_ts, last_ts;
    tally *pages, *versions;
    size_t n_pages, n_versions;
} jgroup;

typedef struct fnode {
    char *function, *module, *file;
    int64_t line;
    bool in_app;
    double ms;
    uint64_t count;
    uint64_t seen; /* the jank that counted here last: a jank counts once per node */
    struct fnode *child, *next;
} fnode;

typedef struct jank_acc {
    const char *fingerprint, *kind; /* only the records of these, or NULL: all */
    strmap groups; /* fingerprint → jgroup */
    uint64_t records;
    fnode root;
    size_t n_nodes;
    bool nodes_truncated, oom;
} jank_acc;

static void tally_add(tally **list, size_t *n, const char *name, bool *oom)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*list)[i].name, name) == 0) {
            (*list)[i].count++;
            return;
        }
    if (*n >= 64) /* a group's pages and versions: the first 64 of each */
        return;
    tally *t = realloc(*list, (*n + 1) * sizeof *t);
    char *s = strdup(name);
    if (!t || !s) {
        free(s);
        if (t)
            *list = t;
        *oom = true;
        return;
    }
    *list = t;
    t[*n] = (tally){s, 1};
    (*n)++;
}

static jgroup *group_of(jank_acc *a, const char *fp)
{
    const char *key;
    void **slot = strmap_put(&a->groups, fp, strlen(fp), &key);
    if (slot && !*slot && (*slot = calloc(1, sizeof(jgroup)))) {
        jgroup *g = *slot;
        g->fingerprint = key;
        sketch_init(&g->durations);
    }
    if (!slot || !*slot)
        a->oom = true;
    return slot ? *slot : NULL;
}

static void group_free(void *p)
{
    jgroup *g = p;
    for (size_t k = 0; k < g->n_pages; k++)
        free(g->pages[k].name);
    for (size_t k = 0; k < g->n_versions; k++)
        free(g->versions[k].name);
    free(g->pages);
    free(g->versions);
    sketch_reset(&g->durations);
    free(g->stack);
    free(g);
}

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Adds a stack (innermost first) to the call tree, outermost at the root:
 * the same function of the same module under the same caller is one node.
 * `ms` of jank number `jank` (a jank with a profile adds each of its
 * stacks: it counts once in each node it passed). */
static void flame_add(jank_acc *a, const dash_frame *fr, size_t n, double ms, uint64_t jank)
{
    fnode *node = &a->root;
    node->ms += ms;
    if (node->seen != jank)
        node->count++;
    node->seen = jank;
    for (size_t i = n; i-- > 0;) {
        const dash_frame *f = &fr[i];
        const char *fn = f->function ? f->function : "?";
        fnode *c = node->child;
        while (c && !(strcmp(c->function, fn) == 0 && same_str(c->module, f->module)))
            c = c->next;
        if (!c) {
            if (a->n_nodes >= FLAME_MAX_NODES) {
                a->nodes_truncated = true;
                return;
            }
            c = calloc(1, sizeof *c);
            if (!c || !(c->function = strdup(fn)) || (f->module && !(c->module = strdup(f->module))) ||
                (f->file && !(c->file = strdup(f->file)))) {
                if (c) {
                    free(c->function);
                    free(c->module);
                    free(c);
                }
                a->oom = true;
                return;
            }
            c->line = f->line;
            c->in_app = f->in_app;
            c->next = node->child;
            node->child = c;
            a->n_nodes++;
        }
        c->ms += ms;
        if (c->seen != jank)
            c->count++;
        c->seen = jank;
        node = c;
    }
}

/* A jank's profile into the call tree: each line's stack ("f;g;h COUNT",
 * outermost first), COUNT × the interval in ms. The frames are named by
 * function only; one the jank's stack also shows takes its module and
 * in_app from there (so that it is the same node as the stacks'). Lines past DASH_MAX_FRAMES frames keep the outermost.
 * Returns whether any line was added. */
static bool flame_add_profile(jank_acc *a, const dash_jank *j, uint64_t jank)
{
    /* a sender's numbers: an interval of more than an hour, or more than
     * a billion samples on a line, is no profile pacer wrote */
    double interval = isnan(j->profile_interval_ms) || j->profile_interval_ms <= 0 ||
                              j->profile_interval_ms > 3600000 ? 0 : j->profile_interval_ms;
    if (!interval)
        return false;
    dash_frame fr[DASH_MAX_FRAMES];
    const char *names[DASH_MAX_FRAMES];
    size_t lens[DASH_MAX_FRAMES];
    char namebuf[DASH_MAX_FRAMES][128];
    bool any = false;
    for (const char *line = j->profile; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *sp = NULL;
        for (size_t i = len; i-- > 0;)
            if (line[i] == ' ') {
                sp = line + i;
                break;
            }
        long long count = sp ? strtoll(sp + 1, NULL, 10) : 0;
        if (sp && count > 0 && count <= 1000000000) {
            size_t n = 0;
            for (const char *f = line; f < sp && n < DASH_MAX_FRAMES;) {
                const char *semi = memchr(f, ';', (size_t)(sp - f));
                size_t fl = semi ? (size_t)(semi - f) : (size_t)(sp - f);
                names[n] = f;
                lens[n++] = fl;
                f = semi ? semi + 1 : sp;
            }
            for (size_t i = 0; i < n; i++) { /* innermost first */
                dash_frame *d = &fr[n - 1 - i];
                utf8_copy(namebuf[i], sizeof namebuf[i], names[i], lens[i]);
                *d = (dash_frame){.function = namebuf[i], .line = -1};
                for (size_t k = 0; k < j->n_frames; k++)
                    if (j->frames[k].function && strncmp(j->frames[k].function, namebuf[i], strlen(namebuf[i])) == 0 &&
                        strchr(".@", j->frames[k].function[strlen(namebuf[i])]) != NULL) {
                        d->in_app = j->frames[k].in_app;
                        d->module = j->frames[k].module;
                        break;
                    }
            }
            if (n) {
                flame_add(a, fr, n, (double)count * interval, jank);
                any = true;
            }
        }
        line = end ? end + 1 : line + len;
    }
    return any;
}

static void on_jank(void *ctx, const store_log_row *row)
{
    jank_acc *a = ctx;
    char *text = dash_parse_copy(row->body, row->body_len);
    dash_jank *j = malloc(sizeof *j);
    if (!text || !j) {
        free(text);
        free(j);
        a->oom = true;
        return;
    }
    if (dash_parse_jank(text, row->body_len, j) < 0)
        goto done; /* not a jank record pacer wrote: left out */
    if ((a->fingerprint && !same_str(a->fingerprint, j->fingerprint)) || (a->kind && !same_str(a->kind, j->kind)))
        goto done; /* another group's */
    double ms = j->duration_ms;
    a->records++;
    jgroup *g = group_of(a, j->fingerprint ? j->fingerprint : "");
    if (g) {
        g->count++;
        g->hangs += j->kind && strcmp(j->kind, "hang") == 0;
        if (sketch_add(&g->durations, ms) == -ENOMEM)
            a->oom = true;
        if (!g->first_ts || row->ts < g->first_ts)
            g->first_ts = row->ts;
        if (row->ts > g->last_ts)
            g->last_ts = row->ts;
        if (j->n_frames && (ms > g->longest || !g->stack)) {
            jbuf s;
            jbuf_init(&s);
            dash_parse_stack(&s, j->frames, j->n_frames);
            char *text_stack = jbuf_steal(&s, NULL);
            if (text_stack) {
                free(g->stack);
                g->stack = text_stack;
            } else {
                a->oom = true;
            }
        }
        if (ms > g->longest)
            g->longest = ms;
        tally_add(&g->pages, &g->n_pages, j->page ? j->page : "", &a->oom);
        tally_add(&g->versions, &g->n_versions, row->version ? row->version : "", &a->oom);
    }
    /* the flame graph: the jank's profile when it has one (where its time
     * went), else its one stack for the whole duration */
    if (!(j->profile && flame_add_profile(a, j, a->records)) && j->n_frames)
        flame_add(a, j->frames, j->n_frames, ms, a->records);
done:
    free(j);
    free(text);
}

static void tallies_json(jbuf *b, const char *key, const char *name_key, const tally *t, size_t n)
{
    jbuf_key(b, key);
    jbuf_open(b, '[');
    for (size_t i = 0; i < n; i++) {
        jbuf_open(b, '{');
        jbuf_kv_str(b, name_key, t[i].name);
        jbuf_kv_u64(b, "count", t[i].count);
        jbuf_close(b, '}');
    }
    jbuf_close(b, ']');
}

static int cmp_group(const void *x, const void *y)
{
    const jgroup *a = *(jgroup *const *)x, *b = *(jgroup *const *)y;
    double ta = sketch_sum(&a->durations), tb = sketch_sum(&b->durations); /* time lost first */
    return ta < tb ? 1 : ta > tb ? -1 : strcmp(a->fingerprint, b->fingerprint);
}

static int cmp_node(const void *x, const void *y)
{
    const fnode *a = *(fnode *const *)x, *b = *(fnode *const *)y;
    return strcmp(a->function, b->function);
}

static void flame_json(jbuf *b, const fnode *n, const char *name, int depth)
{
    jbuf_open(b, '{');
    jbuf_kv_str(b, "name", name);
    jbuf_kv_double(b, "value", round(n->ms * 1000.0) / 1000.0);
    jbuf_kv_u64(b, "count", n->count);
    if (n->module)
        jbuf_kv_str(b, "module", n->module);
    if (n->file)
        jbuf_kv_str(b, "file", n->file);
    if (n->line >= 0 && n->file)
        jbuf_kv_i64(b, "line", n->line);
    jbuf_kv_bool(b, "in_app", n->in_app);
    size_t k = 0;
    for (const fnode *c = n->child; c; c = c->next)
        k++;
    if (k && depth < DASH_MAX_FRAMES) {
        const fnode **kids = malloc(k * sizeof *kids);
        if (kids) {
            k = 0;
            for (const fnode *c = n->child; c; c = c->next)
                kids[k++] = c;
            qsort(kids, k, sizeof *kids, cmp_node);
            jbuf_key(b, "children");
            jbuf_open(b, '[');
            for (size_t i = 0; i < k; i++)
                flame_json(b, kids[i], kids[i]->function, depth + 1);
            jbuf_close(b, ']');
            free(kids);
        } else {
            b->failed = true;
        }
    }
    jbuf_close(b, '}');
}

static void flame_free(fnode *n)
{
    for (fnode *c = n->child, *next; c; c = next) {
        next = c->next;
        flame_free(c);
        free(c->function);
        free(c->module);
        free(c->file);
        free(c);
    }
}

static void jank(const api_ctx *d, const http_request *rq, http_response *rs)
{
    static const char *const own[] = {"fingerprint", "kind", NULL};
    common c;
    if (common_params(rq, rs, own, &c) < 0)
        return;
    jank_acc a = {.root = {.line = -1}};
    char err[256];
    if (params_str(rq->query, "fingerprint", 64, &a.fingerprint, err, sizeof err) < 0 ||
        params_str(rq->query, "kind", 16, &a.kind, err, sizeof err) < 0) {
        http_error(rs, 400, "%s", err);
        return;
    }
    if (a.kind && strcmp(a.kind, "jank") != 0 && strcmp(a.kind, "hang") != 0) {
        http_error(rs, 400, "kind: not a kind of jank record (expected jank or hang)");
        return;
    }
    bool truncated = false;
    int r = store_dash_logs_of_type(d->store, c.app, c.version, "jank", c.from, c.to, SCAN_MAX, on_jank, &a, &truncated);
    if (r == 0 && a.oom)
        r = -ENOMEM;
    jgroup **sorted = a.groups.n ? malloc(a.groups.n * sizeof *sorted) : NULL;
    size_t n = 0, pos = 0;
    const strmap_slot *slot;
    while (sorted && strmap_next(&a.groups, &pos, &slot))
        sorted[n++] = slot->value;
    if (a.groups.n && !sorted && r == 0)
        r = -ENOMEM;
    if (sorted)
        qsort(sorted, n, sizeof *sorted, cmp_group);
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    common_json(&b, &c);
    jbuf_kv_u64(&b, "records", a.records);
    jbuf_key(&b, "groups");
    jbuf_open(&b, '[');
    for (size_t i = 0; i < n; i++) {
        jgroup *g = sorted[i];
        jbuf_open(&b, '{');
        jbuf_kv_str(&b, "fingerprint", g->fingerprint);
        jbuf_kv_u64(&b, "count", g->count);
        jbuf_kv_u64(&b, "hangs", g->hangs);
        jbuf_key(&b, "duration_ms");
        jbuf_open(&b, '{');
        jbuf_kv_double(&b, "p50", round(sketch_quantile(&g->durations, 0.5) * 1000.0) / 1000.0);
        jbuf_kv_double(&b, "max", round(g->durations.max * 1000.0) / 1000.0);
        jbuf_kv_double(&b, "sum", round(sketch_sum(&g->durations) * 1000.0) / 1000.0);
        jbuf_close(&b, '}');
        jbuf_kv_i64(&b, "first_ts", g->first_ts);
        jbuf_kv_i64(&b, "last_ts", g->last_ts);
        tallies_json(&b, "pages", "page", g->pages, g->n_pages);
        tallies_json(&b, "versions", "version", g->versions, g->n_versions);
        if (g->stack) {
            jbuf_key(&b, "stack");
            jbuf_raw(&b, g->stack, strlen(g->stack)); /* dash_parse_stack's */
            b.need_comma = true;
        }
        jbuf_close(&b, '}');
    }
    jbuf_close(&b, ']');
    jbuf_key(&b, "flame");
    flame_json(&b, &a.root, "all", 0);
    jbuf_kv_bool(&b, "flame_truncated", a.nodes_truncated);
    jbuf_kv_bool(&b, "truncated", truncated);
    jbuf_close(&b, '}');
    strmap_free(&a.groups, group_free);
    free(sorted);
    flame_free(&a.root);
    api_answer(rs, &b, r, "the store could not be read");
}

/* ---- /api/v1/frames ---- */

static const char *const frame_metrics[] = {
    "pacer.frames.frames", "pacer.frames.slow", "pacer.frames.frozen", "pacer.frames.dropped_frames",
    "pacer.frames.levels.best", "pacer.frames.levels.normal", "pacer.frames.levels.middle",
    "pacer.frames.levels.high", "pacer.frames.levels.frozen",
    /* where the time went (records that carry phases) */
    "pacer.frames.phases_ms.events", "pacer.frames.phases_ms.update", "pacer.frames.phases_ms.layout",
    "pacer.frames.phases_ms.paint", "pacer.frames.phases_ms.present", "pacer.frames.slow_phases_ms.events",
    "pacer.frames.slow_phases_ms.update", "pacer.frames.slow_phases_ms.layout", "pacer.frames.slow_phases_ms.paint",
    "pacer.frames.slow_phases_ms.present", NULL,
};
#define N_FRAME_METRICS 19
#define FIRST_PHASE 9 /* phases_ms, then slow_phases_ms: 5 each */
#define MAX_WINDOWS 256

typedef struct widget_sum {
    const char *type, *phase; /* the key's copies in frames_acc.widget_keys */
    double ms, calls;
    uint64_t records; /* the slow_widgets.ms points: one per record that named it */
} widget_sum;

typedef struct window_sums {
    char *window;
    double v[N_FRAME_METRICS];
    uint64_t points[N_FRAME_METRICS];
    uint64_t records;
    widget_sum *widgets; /* the widget types its records named in slow frames */
    size_t n_widgets, cap_widgets;
} window_sums;

typedef struct frames_acc {
    window_sums w[MAX_WINDOWS];
    size_t n;
    strmap widget_keys; /* window NUL type NUL phase → index + 1 into its window's widgets */
    bool oom, more;
} frames_acc;

/* The window named `window`, added when new; NULL past MAX_WINDOWS (more)
 * or out of memory. */
static window_sums *window_of(frames_acc *a, const char *window)
{
    size_t i = 0;
    while (i < a->n && strcmp(a->w[i].window, window) != 0)
        i++;
    if (i == a->n) {
        if (a->n == MAX_WINDOWS) {
            a->more = true;
            return NULL;
        }
        if (!(a->w[i].window = strdup(window))) {
            a->oom = true;
            return NULL;
        }
        a->n++;
    }
    return &a->w[i];
}

static void on_sum(void *ctx, const char *name, const char *const *groups, double sum, uint64_t points)
{
    frames_acc *a = ctx;
    size_t m = 0;
    while (frame_metrics[m] && strcmp(frame_metrics[m], name) != 0)
        m++;
    if (!frame_metrics[m])
        return;
    window_sums *w = window_of(a, groups[0]);
    if (!w)
        return;
    w->v[m] += sum;
    w->points[m] += points;
    if (m == 0)
        w->records += points; /* one frames point per record */
}

/* A slow_widgets element's sums: groups are the window, the widget's type
 * and its phase. */
static void on_widget(void *ctx, const char *name, const char *const *groups, double sum, uint64_t points)
{
    frames_acc *a = ctx;
    bool ms = strcmp(name, "pacer.frames.slow_widgets.ms") == 0;
    if (!*groups[1] || a->oom)
        return; /* an element without a type names no widget */
    window_sums *w = window_of(a, groups[0]);
    if (!w)
        return;
    char key[3 * 1024];
    size_t len = strmap_key(key, sizeof key, groups, 3);
    if (!len)
        return; /* names longer than any GType's */
    const char *copy;
    void **slot = strmap_put(&a->widget_keys, key, len, &copy);
    if (!slot) {
        a->oom = true;
        return;
    }
    if (!*slot) {
        if (w->n_widgets == w->cap_widgets) {
            size_t cap = w->cap_widgets ? 2 * w->cap_widgets : 16;
            widget_sum *more = realloc(w->widgets, cap * sizeof *more);
            if (!more) {
                a->oom = true;
                return;
            }
            w->widgets = more;
            w->cap_widgets = cap;
        }
        /* the key's parts, each ending with a NUL: window, type, phase */
        const char *type = copy + strlen(copy) + 1;
        w->widgets[w->n_widgets] = (widget_sum){.type = type, .phase = type + strlen(type) + 1};
        *slot = (void *)(uintptr_t)++w->n_widgets;
    }
    widget_sum *x = &w->widgets[(uintptr_t)*slot - 1];
    if (ms) {
        x->ms += sum;
        x->records += points;
    } else {
        x->calls += sum;
    }
}

static int cmp_widget(const void *x, const void *y)
{
    const widget_sum *a = x, *b = y;
    if (a->ms != b->ms)
        return a->ms < b->ms ? 1 : -1; /* the longest first */
    int c = strcmp(a->type, b->type);
    return c ? c : strcmp(a->phase, b->phase);
}

static int cmp_window(const void *x, const void *y)
{
    return strcmp(((const window_sums *)x)->window, ((const window_sums *)y)->window);
}

static const char *const widget_metrics[] = {"pacer.frames.slow_widgets.ms", "pacer.frames.slow_widgets.calls", NULL};

static void frames(const api_ctx *d, const http_request *rq, http_response *rs)
{
    static const char *const own[] = {"widgets", NULL};
    common c;
    if (common_params(rq, rs, own, &c) < 0)
        return;
    int64_t top = 10;
    char err[256];
    if (params_int(rq->query, "widgets", 0, 100, &top, err, sizeof err) < 0) {
        http_error(rs, 400, "%s", err);
        return;
    }
    frames_acc *a = calloc(1, sizeof *a);
    if (!a) {
        http_error(rs, 503, "out of memory");
        return;
    }
    bool truncated = false, wtruncated = false;
    static const char *const by_window[] = {"pacer.window", NULL};
    static const char *const by_widget[] = {"pacer.window", "pacer.slow_widgets.type", "pacer.slow_widgets.phase", NULL};
    int r = store_dash_metric_sums(d->store, c.app, c.version, frame_metrics, by_window, c.from, c.to, SCAN_MAX,
                                   on_sum, a, &truncated);
    if (r == 0 && top > 0)
        r = store_dash_metric_sums(d->store, c.app, c.version, widget_metrics, by_widget, c.from, c.to, SCAN_MAX,
                                   on_widget, a, &wtruncated);
    if (r == 0 && a->oom)
        r = -ENOMEM;
    qsort(a->w, a->n, sizeof a->w[0], cmp_window);
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    common_json(&b, &c);
    jbuf_key(&b, "windows");
    jbuf_open(&b, '[');
    static const char *const keys[] = {"frames", "slow", "frozen", "dropped_frames"};
    static const char *const levels[] = {"best", "normal", "middle", "high", "frozen"};
    for (size_t i = 0; i < a->n; i++) {
        window_sums *w = &a->w[i];
        jbuf_open(&b, '{');
        jbuf_kv_str(&b, "window", w->window);
        jbuf_kv_u64(&b, "records", w->records);
        for (size_t k = 0; k < 4; k++)
            jbuf_kv_u64(&b, keys[k], (uint64_t)llround(w->v[k]));
        jbuf_key(&b, "levels");
        jbuf_open(&b, '{');
        for (size_t k = 0; k < 5; k++)
            jbuf_kv_u64(&b, levels[k], (uint64_t)llround(w->v[4 + k]));
        jbuf_close(&b, '}');
        /* the frames' time per phase, over all frames and over the slow
         * ones, summed over the records that had phases */
        static const char *const phases[] = {"events", "update", "layout", "paint", "present"};
        static const char *const sets[] = {"phases_ms", "slow_phases_ms"};
        for (size_t set = 0; set < 2; set++) {
            size_t first = FIRST_PHASE + 5 * set;
            uint64_t n = 0;
            for (size_t k = 0; k < 5; k++)
                n += w->points[first + k];
            if (!n)
                continue;
            jbuf_key(&b, sets[set]);
            jbuf_open(&b, '{');
            for (size_t k = 0; k < 5; k++)
                jbuf_kv_double(&b, phases[k], round(w->v[first + k] * 1000) / 1000);
            jbuf_close(&b, '}');
        }
        /* the widget types that took longest in slow frames (records
         * written with --frames=detail), summed per type and phase */
        if (w->n_widgets) {
            qsort(w->widgets, w->n_widgets, sizeof w->widgets[0], cmp_widget);
            jbuf_key(&b, "slow_widgets");
            jbuf_open(&b, '[');
            for (size_t k = 0; k < w->n_widgets && k < (size_t)top; k++) {
                const widget_sum *x = &w->widgets[k];
                jbuf_open(&b, '{');
                jbuf_kv_str(&b, "type", x->type);
                jbuf_kv_str(&b, "phase", x->phase);
                jbuf_kv_double(&b, "ms", round(x->ms * 1000) / 1000);
                jbuf_kv_u64(&b, "calls", (uint64_t)llround(x->calls));
                jbuf_kv_u64(&b, "records", x->records);
                jbuf_close(&b, '}');
            }
            jbuf_close(&b, ']');
            jbuf_kv_u64(&b, "slow_widget_types", w->n_widgets);
        }
        jbuf_close(&b, '}');
    }
    jbuf_close(&b, ']');
    jbuf_kv_bool(&b, "truncated", truncated || wtruncated || a->more);
    jbuf_close(&b, '}');
    for (size_t i = 0; i < a->n; i++) {
        free(a->w[i].window);
        free(a->w[i].widgets);
    }
    strmap_free(&a->widget_keys, NULL);
    free(a);
    api_answer(rs, &b, r, "the store could not be read");
}

bool query_dash_handle(const api_ctx *d, const http_request *rq, http_response *rs)
{
    static const struct {
        const char *path;
        void (*fn)(const api_ctx *d, const http_request *rq, http_response *rs);
    } routes[] = {
        {"/api/v1/series", series},       {"/api/v1/histogram", histogram},
        {"/api/v1/records", records},     {"/api/v1/request_stats", request_stats},
        {"/api/v1/jank", jank},           {"/api/v1/frames", frames},
    };
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strcmp(rq->path, routes[i].path) == 0) {
            routes[i].fn(d, rq, rs);
            return true;
        }
    return false;
}
