/* OTLP ingest: POST /v1/traces, /v1/logs, /v1/metrics (pacerd.h).
 *
 * request → checks (content type, batch id) → otlp decode (otlp.c)
 *         → one store_record per accepted item (the mapping below)
 *         → store_submit (blocks until committed) → 200 with partialSuccess
 *
 * Spans are told apart by the attribute pacer.type (docs/server.md, "OTLP
 * mapping"): "page" → page_loads, "startup" → startups, "net" → requests;
 * a span without it (any OpenTelemetry SDK) → spans. A record field F of a
 * pacer record is the attribute pacer.F; the attributes the tables have no
 * column for are kept, as JSON, in the column `extra`.
 *
 * The resource's service.name must be the app of the key (a key never writes
 * into another app); a resource without one takes the key's app.
 */
#include "pacerd.h"
#include "otlp.h"
#include "urlfold.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_BATCH_ID 128

/* Text made while mapping (patterns, JSON): a bump allocator freed with the
 * request, so mapping a span allocates nothing of its own. */
typedef struct chunk {
    struct chunk *next;
    size_t used, size;
    char data[];
} chunk;

typedef struct arena {
    chunk *head;
    bool oom;
} arena;

static char *arena_alloc(arena *a, size_t n)
{
    chunk *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t size = n > 65536 ? n : 65536;
        c = malloc(sizeof *c + size);
        if (!c) {
            a->oom = true;
            return NULL;
        }
        c->next = a->head;
        c->used = 0;
        c->size = size;
        a->head = c;
    }
    char *p = c->data + c->used;
    c->used += n;
    return p;
}

static void arena_free(arena *a)
{
    for (chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
}

/* JSON text from the body, without its whitespace, NUL-terminated. */
static const char *arena_json(arena *a, const char *json, size_t len)
{
    char *s = arena_alloc(a, len + 1);
    if (s)
        otlp_json_compact(json, len, s);
    return s;
}

typedef struct mapper {
    const char *app;
    otlp_batch *b;
    arena arena;
    size_t rejected;
    char *first_reason; /* the first rejection made here (not by the decoder) */
} mapper;

static void reject(mapper *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reject(mapper *m, const char *fmt, ...)
{
    m->rejected++;
    if (m->first_reason)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    m->first_reason = strdup(buf);
}

static store_value v_text(const char *s)
{
    return s ? (store_value){.type = SV_TEXT, .p = s} : (store_value){.type = SV_NULL};
}
static store_value v_int(int64_t i)
{
    return (store_value){.type = SV_INT, .i = i};
}
static store_value v_real(double d)
{
    return isnan(d) ? (store_value){.type = SV_NULL} : (store_value){.type = SV_REAL, .d = d};
}
static store_value v_blob(const void *p, size_t n)
{
    return (store_value){.type = SV_BLOB, .p = p, .n = n};
}

/* The resource's app; NULL (and a rejection) when it is not the key's. */
static const char *app_of(mapper *m, const otlp_resource *r, const char *what, size_t index)
{
    if (!r->service_name || strcmp(r->service_name, m->app) == 0)
        return m->app;
    reject(m, "%s[%zu]: service.name \"%.100s\" is not the app of this key", what, index, r->service_name);
    return NULL;
}

/* Attribute readers that tell "absent" from "wrong type". */
typedef struct attrs {
    const otlp_attrs *kv;
    const char *bad; /* the first attribute with a wrong type */
} attrs;

static const char *a_str(attrs *a, const char *key)
{
    const otlp_value *v = otlp_attr(a->kv, key);
    const char *s = NULL;
    if (v && !otlp_value_string(v, &s) && !a->bad)
        a->bad = key;
    return s;
}

static double a_ms(attrs *a, const char *key)
{
    const otlp_value *v = otlp_attr(a->kv, key);
    double d = NAN;
    if (v && (!otlp_value_double(v, &d) || !(d >= 0) || isinf(d))) {
        if (!a->bad)
            a->bad = key;
        d = NAN;
    }
    return d;
}

static bool a_int(attrs *a, const char *key, int64_t *ret)
{
    const otlp_value *v = otlp_attr(a->kv, key);
    if (v && !otlp_value_int(v, ret) && !a->bad)
        a->bad = key;
    return v && !a->bad;
}

static int a_bool(attrs *a, const char *key) /* -1 absent */
{
    const otlp_value *v = otlp_attr(a->kv, key);
    bool b;
    if (!v)
        return -1;
    if (!otlp_value_bool(v, &b)) {
        if (!a->bad)
            a->bad = key;
        return -1;
    }
    return b;
}

static bool is_known(const otlp_kv *kv, const char *const *known)
{
    for (const char *const *p = known; *p; p++)
        if (strlen(*p) == kv->key_len && memcmp(*p, kv->key, kv->key_len) == 0)
            return true;
    return false;
}

/* The attributes whose keys are not in known, as JSON text, or NULL. */
static const char *extra_json(mapper *m, const otlp_attrs *kvs, const char *const *known)
{
    size_t len = 0;
    for (size_t i = 0; i < kvs->n; i++)
        if (!is_known(&kvs->kv[i], known))
            len += kvs->kv[i].json_len + 1;
    if (!len)
        return NULL;
    char *s = arena_alloc(&m->arena, len + 2);
    if (!s)
        return NULL;
    size_t o = 0;
    s[o++] = '[';
    for (size_t i = 0; i < kvs->n; i++)
        if (!is_known(&kvs->kv[i], known)) {
            if (o > 1)
                s[o++] = ',';
            o += otlp_json_compact(kvs->kv[i].json, kvs->kv[i].json_len, s + o);
        }
    s[o++] = ']';
    s[o] = 0;
    return s;
}

static const char *const page_known[] = {
    "pacer.type", "pacer.page", "pacer.instance", "pacer.kind", "pacer.status", "pacer.main",
    "pacer.initial_draw_ms", "pacer.api_load_ms", "pacer.final_draw_ms", "pacer.total_ms", "pacer.session", NULL};
static const char *const startup_known[] = {
    "pacer.type", "pacer.kind", "pacer.cold_ms", "pacer.first_screen_ms", "pacer.app_cost_ms",
    "pacer.full_display_ms", "pacer.warm_ms", "pacer.outlier", "pacer.main_page", "pacer.page", "pacer.session", NULL};
static const char *const net_known[] = {
    "pacer.type", "pacer.method", "http.request.method", "pacer.url", "url.full", "pacer.status",
    "http.response.status_code", "pacer.error", "error.type", "pacer.total_ms", "pacer.dns_ms", "pacer.connect_ms",
    "pacer.tls_ms", "pacer.first_byte_ms", "pacer.bytes_sent", "pacer.bytes_received", "pacer.content_type",
    "pacer.page", "pacer.session", NULL};

static bool map_page(mapper *m, const otlp_span *s, attrs *a, store_record *r)
{
    const char *page = a_str(a, "pacer.page");
    const char *status = a_str(a, "pacer.status");
    int64_t instance = 0;
    bool has_instance = a_int(a, "pacer.instance", &instance);
    const char *kind = a_str(a, "pacer.kind");
    int main_page = a_bool(a, "pacer.main");
    double ms[4] = {a_ms(a, "pacer.initial_draw_ms"), a_ms(a, "pacer.api_load_ms"), a_ms(a, "pacer.final_draw_ms"),
                    a_ms(a, "pacer.total_ms")};
    if (a->bad)
        return false;
    if (!page)
        page = s->name;
    if (!status)
        status = "complete";
    r->table = TABLE_PAGE_LOADS;
    r->kind = KIND_PAGE;
    r->name = page;
    r->failed = strcmp(status, "complete") != 0;
    memcpy(r->metrics, ms, sizeof ms);
    store_value *c = r->cols;
    c[4] = v_text(page);
    c[5] = has_instance ? v_int(instance) : (store_value){.type = SV_NULL};
    c[6] = v_text(kind);
    c[7] = v_text(status);
    c[8] = main_page < 0 ? (store_value){.type = SV_NULL} : v_int(main_page);
    for (int i = 0; i < 4; i++)
        c[9 + i] = v_real(ms[i]);
    c[13] = v_int(r->failed);
    c[14] = v_blob(s->trace_id, 16);
    c[15] = v_blob(s->span_id, 8);
    c[16] = v_text(extra_json(m, &s->attrs, page_known));
    return true;
}

static bool map_startup(mapper *m, const otlp_span *s, attrs *a, store_record *r)
{
    const char *kind = a_str(a, "pacer.kind");
    double ms[5] = {a_ms(a, "pacer.cold_ms"), a_ms(a, "pacer.first_screen_ms"), a_ms(a, "pacer.app_cost_ms"),
                    a_ms(a, "pacer.full_display_ms"), a_ms(a, "pacer.warm_ms")};
    int outlier = a_bool(a, "pacer.outlier");
    const char *main_page = a_str(a, "pacer.main_page");
    const char *page = a_str(a, "pacer.page");
    if (a->bad)
        return false;
    if (!kind || (strcmp(kind, "cold") != 0 && strcmp(kind, "warm") != 0)) {
        a->bad = "pacer.kind";
        return false;
    }
    r->table = TABLE_STARTUPS;
    r->kind = KIND_STARTUP;
    r->name = kind;
    r->excluded = outlier > 0;
    memcpy(r->metrics, ms, sizeof ms);
    store_value *c = r->cols;
    c[4] = v_text(kind);
    for (int i = 0; i < 5; i++)
        c[5 + i] = v_real(ms[i]);
    c[10] = v_int(outlier > 0);
    c[11] = v_text(main_page);
    c[12] = v_text(page);
    c[13] = v_int(0);
    c[14] = v_blob(s->trace_id, 16);
    c[15] = v_blob(s->span_id, 8);
    c[16] = v_text(extra_json(m, &s->attrs, startup_known));
    return true;
}

static bool map_net(mapper *m, const otlp_span *s, attrs *a, store_record *r)
{
    const char *method = a_str(a, "pacer.method");
    if (!method)
        method = a_str(a, "http.request.method");
    const char *url = a_str(a, "pacer.url");
    if (!url)
        url = a_str(a, "url.full");
    int64_t status = 0;
    bool has_status = a_int(a, "pacer.status", &status) || a_int(a, "http.response.status_code", &status);
    const char *error = a_str(a, "pacer.error");
    if (!error)
        error = a_str(a, "error.type");
    double ms[5] = {a_ms(a, "pacer.total_ms"), a_ms(a, "pacer.dns_ms"), a_ms(a, "pacer.connect_ms"),
                    a_ms(a, "pacer.tls_ms"), a_ms(a, "pacer.first_byte_ms")};
    int64_t sent = -1, received = -1;
    bool has_sent = a_int(a, "pacer.bytes_sent", &sent);
    bool has_received = a_int(a, "pacer.bytes_received", &received);
    const char *content_type = a_str(a, "pacer.content_type");
    const char *page = a_str(a, "pacer.page");
    if (a->bad)
        return false;
    if (!method)
        method = "GET";
    if (!url) {
        a->bad = "pacer.url";
        return false;
    }
    if (isnan(ms[0])) /* the span's own duration */
        ms[0] = (double)(s->end_ns - s->start_ns) / 1e6;
    char pattern[1024];
    url_fold(url, pattern, sizeof pattern);
    size_t nlen = strlen(method) + 1 + strlen(pattern) + 1;
    char *name = arena_alloc(&m->arena, nlen);
    if (!name)
        return false;
    snprintf(name, nlen, "%s %s", method, pattern);
    const char *pat = name + strlen(method) + 1;
    r->table = TABLE_REQUESTS;
    r->kind = KIND_REQUEST;
    r->name = name;
    r->failed = error || !has_status || status >= 400 || status <= 0;
    memcpy(r->metrics, ms, sizeof ms);
    store_value *c = r->cols;
    c[4] = v_text(method);
    c[5] = v_text(url);
    c[6] = v_text(pat);
    c[7] = has_status ? v_int(status) : (store_value){.type = SV_NULL};
    c[8] = v_text(error);
    for (int i = 0; i < 5; i++)
        c[9 + i] = v_real(ms[i]);
    c[14] = has_sent ? v_int(sent) : (store_value){.type = SV_NULL};
    c[15] = has_received ? v_int(received) : (store_value){.type = SV_NULL};
    c[16] = v_text(content_type);
    c[17] = v_text(page);
    c[18] = v_int(r->failed);
    c[19] = v_blob(s->trace_id, 16);
    c[20] = v_blob(s->span_id, 8);
    c[21] = v_text(extra_json(m, &s->attrs, net_known));
    return true;
}

static bool map_span(mapper *m, const otlp_span *s, store_record *r)
{
    r->table = TABLE_SPANS;
    r->kind = KIND_SPAN;
    r->name = s->name;
    r->failed = s->status_code == 2;
    r->metrics[0] = (double)(s->end_ns - s->start_ns) / 1e6;
    store_value *c = r->cols;
    c[4] = v_int(s->end_ns);
    c[5] = v_text(s->name);
    c[6] = v_int(s->kind);
    c[7] = v_int(s->status_code);
    c[8] = v_text(s->status_message);
    c[9] = v_int(r->failed);
    c[10] = v_blob(s->trace_id, 16);
    c[11] = v_blob(s->span_id, 8);
    c[12] = s->has_parent ? v_blob(s->parent_span_id, 8) : (store_value){.type = SV_NULL};
    c[13] = v_text(s->scope);
    c[14] = v_text(s->attrs.n ? arena_json(&m->arena, s->attrs.json, s->attrs.json_len) : NULL);
    return true;
}

/* Fills recs (room for every span); returns how many were mapped. */
static size_t map_spans(mapper *m, store_record *recs)
{
    size_t n = 0;
    for (size_t i = 0; i < m->b->n_spans; i++) {
        const otlp_span *s = &m->b->spans[i];
        const otlp_resource *res = &m->b->resources[s->resource];
        const char *app = app_of(m, res, "spans", i);
        if (!app)
            continue;
        store_record *r = &recs[n];
        memset(r, 0, sizeof *r);
        for (size_t k = 0; k < STORE_MAX_METRICS; k++)
            r->metrics[k] = NAN;
        attrs a = {.kv = &s->attrs};
        const char *type = a_str(&a, "pacer.type");
        const char *session = a_str(&a, "pacer.session");
        if (!session)
            session = res->session;
        bool ok;
        if (type && strcmp(type, "page") == 0)
            ok = map_page(m, s, &a, r);
        else if (type && strcmp(type, "startup") == 0)
            ok = map_startup(m, s, &a, r);
        else if (type && strcmp(type, "net") == 0)
            ok = map_net(m, s, &a, r);
        else
            ok = !a.bad && map_span(m, s, r);
        if (m->arena.oom)
            return 0;
        if (!ok) {
            reject(m, "spans[%zu] (\"%.100s\"): attribute %s has the wrong type or value (docs/server.md)", i,
                   s->name, a.bad ? a.bad : "?");
            continue;
        }
        r->app = app;
        r->version = res->service_version;
        r->ts_ns = s->start_ns;
        r->cols[0] = v_text(app);
        r->cols[1] = v_text(res->service_version);
        r->cols[2] = v_text(session);
        r->cols[3] = v_int(s->start_ns);
        n++;
    }
    return n;
}

static const char *any_text(mapper *m, const otlp_log *l)
{
    const char *s;
    if (!l->has_body)
        return NULL;
    if (otlp_value_string(&l->body, &s))
        return s;
    return arena_json(&m->arena, l->body.json, l->body.json_len);
}

static size_t map_logs(mapper *m, store_record *recs)
{
    size_t n = 0;
    for (size_t i = 0; i < m->b->n_logs; i++) {
        const otlp_log *l = &m->b->logs[i];
        const otlp_resource *res = &m->b->resources[l->resource];
        const char *app = app_of(m, res, "logRecords", i);
        if (!app)
            continue;
        attrs a = {.kv = &l->attrs};
        const char *type = a_str(&a, "pacer.type");
        if (!type)
            type = a_str(&a, "event.name");
        const char *session = a_str(&a, "pacer.session");
        if (a.bad) {
            reject(m, "logRecords[%zu]: attribute %s has the wrong type", i, a.bad);
            continue;
        }
        store_record *r = &recs[n++];
        memset(r, 0, sizeof *r);
        r->table = TABLE_LOGS;
        r->kind = KIND_NONE;
        store_value *c = r->cols;
        c[0] = v_text(app);
        c[1] = v_text(res->service_version);
        c[2] = v_text(session ? session : res->session);
        c[3] = v_int(l->time_ns);
        c[4] = v_text(type);
        c[5] = v_int(l->severity_number);
        c[6] = v_text(l->severity_text);
        c[7] = v_text(any_text(m, l));
        c[8] = v_text(l->attrs.n ? arena_json(&m->arena, l->attrs.json, l->attrs.json_len) : NULL);
        if (m->arena.oom)
            return 0;
    }
    return n;
}

static size_t map_points(mapper *m, store_record *recs)
{
    size_t n = 0;
    for (size_t i = 0; i < m->b->n_points; i++) {
        const otlp_point *p = &m->b->points[i];
        const otlp_resource *res = &m->b->resources[p->resource];
        const char *app = app_of(m, res, "dataPoints", i);
        if (!app)
            continue;
        attrs a = {.kv = &p->attrs};
        const char *session = a_str(&a, "pacer.session");
        if (a.bad) {
            reject(m, "dataPoints[%zu]: attribute %s has the wrong type", i, a.bad);
            continue;
        }
        store_record *r = &recs[n++];
        memset(r, 0, sizeof *r);
        r->table = TABLE_METRIC_POINTS;
        r->kind = KIND_NONE;
        store_value *c = r->cols;
        c[0] = v_text(app);
        c[1] = v_text(res->service_version);
        c[2] = v_text(session ? session : res->session);
        c[3] = v_int(p->time_ns);
        c[4] = v_text(p->name);
        c[5] = v_text(p->type);
        c[6] = v_text(p->unit);
        c[7] = v_real(p->value);
        c[8] = p->count >= 0 ? v_int(p->count) : (store_value){.type = SV_NULL};
        c[9] = v_text(p->attrs.n ? arena_json(&m->arena, p->attrs.json, p->attrs.json_len) : NULL);
        if (m->arena.oom)
            return 0;
    }
    return n;
}

static bool batch_id_ok(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > MAX_BATCH_ID)
        return false;
    for (; *id; id++)
        if (!((*id >= 'a' && *id <= 'z') || (*id >= 'A' && *id <= 'Z') || (*id >= '0' && *id <= '9') ||
              *id == '-' || *id == '_' || *id == '.' || *id == ':'))
            return false;
    return true;
}

void ingest_handle(pacerd *d, const char *app, const http_request *rq, http_response *rs)
{
    enum { TRACES, LOGS, METRICS } what =
        strcmp(rq->path, "/v1/traces") == 0 ? TRACES : strcmp(rq->path, "/v1/logs") == 0 ? LOGS : METRICS;
    static const char *const rejected_field[] = {"rejectedSpans", "rejectedLogRecords", "rejectedDataPoints"};

    const char *ct = http_header(rq, "Content-Type");
    if (!ct || strncasecmp(ct, "application/json", 16) != 0 || (ct[16] && ct[16] != ';' && ct[16] != ' ')) {
        http_error(rs, 415, "pacerd takes OTLP/HTTP JSON: send Content-Type: application/json "
                            "(set the exporter's protocol to http/json)");
        return;
    }
    const char *ce = http_header(rq, "Content-Encoding");
    if (ce && strcasecmp(ce, "identity") != 0) {
        http_error(rs, 415, "Content-Encoding %.40s is not supported: send the body uncompressed", ce);
        return;
    }
    const char *batch_id = http_header(rq, "X-Pacer-Batch-Id");
    if (batch_id && !batch_id_ok(batch_id)) {
        http_error(rs, 400, "X-Pacer-Batch-Id: expected 1-%d characters of A-Z a-z 0-9 - _ . :", MAX_BATCH_ID);
        return;
    }

    otlp_batch b = {0};
    char err[512];
    int r = what == TRACES ? otlp_decode_traces(rq->body, rq->body_len, &b, err, sizeof err)
            : what == LOGS ? otlp_decode_logs(rq->body, rq->body_len, &b, err, sizeof err)
                           : otlp_decode_metrics(rq->body, rq->body_len, &b, err, sizeof err);
    if (r < 0) {
        if (r == -ENOMEM)
            http_error(rs, 503, "out of memory");
        else
            http_error(rs, 400, "%s", err);
        return;
    }
    size_t items = what == TRACES ? b.n_spans : what == LOGS ? b.n_logs : b.n_points;
    mapper m = {.app = app, .b = &b};
    store_record *recs = items ? malloc(items * sizeof *recs) : NULL;
    size_t n = 0;
    if (items && !recs) {
        http_error(rs, 503, "out of memory");
        goto out;
    }
    n = what == TRACES ? map_spans(&m, recs) : what == LOGS ? map_logs(&m, recs) : map_points(&m, recs);
    if (m.arena.oom) {
        http_error(rs, 503, "out of memory");
        goto out;
    }
    size_t rejected = b.rejected + m.rejected;
    bool duplicate = false;
    r = store_submit(d->store, app, batch_id, rq->path, recs, n, rejected, &duplicate);
    if (r == -EAGAIN) {
        rs->retry_after = 1;
        http_error(rs, 429, "pacerd is busy: retry after 1 s");
        goto out;
    }
    if (r < 0) {
        rs->retry_after = 5;
        http_error(rs, 503, "the store could not commit the batch: retry later");
        goto out;
    }
    json_t *resp = json_object();
    if (rejected && !duplicate) {
        const char *why = b.reject_message ? b.reject_message : m.first_reason;
        char count[24];
        snprintf(count, sizeof count, "%zu", rejected);
        json_object_set_new(resp, "partialSuccess",
                            json_pack("{s:s, s:s}", rejected_field[what], count, "errorMessage", why ? why : ""));
    }
    http_json(rs, 200, resp);
out:
    free(recs);
    free(m.first_reason);
    arena_free(&m.arena);
    otlp_batch_clear(&b);
}
