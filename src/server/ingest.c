/* OTLP ingest: POST /v1/traces, /v1/logs, /v1/metrics (pacerd.h).
 *
 * request → checks (content type, batch id) → otlp decode (otlp.c)
 *         → one store_record per accepted item (the mapping below)
 *         → store_submit (blocks until committed) → 200 with partialSuccess
 *
 * Spans are told apart by the attribute pacer.type (docs/server.md, "OTLP
 * mapping"): a record type of the schema that has a table ("page" →
 * page_loads, "startup" → startups, "net" → requests) makes a row of that
 * table; any other span (any OpenTelemetry SDK) a row of spans. Rows are
 * filled column by column as the layout says (store.h, "the rows"): a field
 * F of the record from the attribute pacer.F, else from F's semantic
 * convention attribute, with F's type in the schema (a value of another
 * type rejects the span); the attributes no column took are kept, as JSON,
 * in the column `extra`. What the server itself adds per record type —
 * defaults, what makes a record failed — is record_rules().
 *
 * The resource's service.name must be the app of the key (a key never writes
 * into another app); a resource without one takes the key's app.
 */
#include "pacerd.h"
#include "otlp.h"
#include "urlfold.h"

#include <pacer/base/json.h>

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

/* Gives back all but the first n bytes of p, the last allocation. */
static void arena_keep(arena *a, const char *p, size_t n)
{
    a->head->used = (size_t)(p - a->head->data) + n;
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
        json_compact(json, len, s);
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

static store_value v_null(void)
{
    return (store_value){.type = SV_NULL};
}
static store_value v_text(const char *s)
{
    return s ? (store_value){.type = SV_TEXT, .p = s} : v_null();
}
static store_value v_int(int64_t i)
{
    return (store_value){.type = SV_INT, .i = i};
}
static store_value v_real(double d)
{
    return isnan(d) ? v_null() : (store_value){.type = SV_REAL, .d = d};
}
static store_value v_blob(const void *p, size_t n)
{
    return (store_value){.type = SV_BLOB, .p = p, .n = n};
}

static const char *sv_text(const store_value *v)
{
    return v && v->type == SV_TEXT ? v->p : NULL;
}

/* The resource's app; NULL (and a rejection) when it is not the key's. */
static const char *app_of(mapper *m, const otlp_resource *r, const char *what, size_t index)
{
    if (!r->service_name || strcmp(r->service_name, m->app) == 0)
        return m->app;
    reject(m, "%s[%zu]: service.name \"%.100s\" is not the app of this key", what, index, r->service_name);
    return NULL;
}

/* A string attribute; *bad names the first attribute of another type. */
static const char *a_str(const otlp_attrs *attrs, const char *key, const char **bad)
{
    const otlp_value *v = otlp_attr(attrs, key);
    const char *s = NULL;
    if (v && !otlp_value_string(v, &s) && !*bad)
        *bad = key;
    return s;
}

/* What a row holds beyond its record's fields: the item and its context. */
typedef struct item {
    const char *app, *version, *session;
    int64_t ts;
    const otlp_span *span;
    const otlp_log *log;
    const otlp_point *point;
    const otlp_attrs *attrs;
    const char *log_type;
    const char *extra; /* a record's attributes that no column took */
} item;

static const char *any_text(mapper *m, const otlp_log *l)
{
    const char *s;
    if (!l->has_body)
        return NULL;
    if (otlp_value_string(&l->body, &s))
        return s;
    return arena_json(&m->arena, l->body.json, l->body.json_len);
}

/* The value of a column of r that is not a record's field (those are read
 * by map_record). */
static store_value column_value(mapper *m, const store_column *col, const item *it, const store_record *r)
{
    const otlp_span *s = it->span;
    switch (col->source) {
    case SRC_COMMON:
        switch (col->index) {
        case PACER_COMMON_TS: return v_int(it->ts);
        case PACER_COMMON_APP: return v_text(it->app);
        case PACER_COMMON_VERSION: return v_text(it->version);
        case PACER_COMMON_SESSION: return v_text(it->session);
        default: return v_null();
        }
    case SRC_FIELD:
    case SRC_PATTERN: break;
    case SRC_FAILED: return v_int(r->failed);
    case SRC_TRACE_ID: return v_blob(s->trace_id, 16);
    case SRC_SPAN_ID: return v_blob(s->span_id, 8);
    case SRC_EXTRA: return v_text(it->extra);
    case SRC_END_TS: return v_int(s->end_ns);
    case SRC_SPAN_NAME: return v_text(s->name);
    case SRC_SPAN_KIND: return v_int(s->kind);
    case SRC_STATUS_CODE: return v_int(s->status_code);
    case SRC_STATUS_MESSAGE: return v_text(s->status_message);
    case SRC_PARENT_SPAN_ID: return s->has_parent ? v_blob(s->parent_span_id, 8) : v_null();
    case SRC_SCOPE: return v_text(s->scope);
    case SRC_LOG_TYPE: return v_text(it->log_type);
    case SRC_SEVERITY_NUMBER: return v_int(it->log->severity_number);
    case SRC_SEVERITY_TEXT: return v_text(it->log->severity_text);
    case SRC_BODY: return v_text(any_text(m, it->log));
    case SRC_METRIC_NAME: return v_text(it->point->name);
    case SRC_METRIC_TYPE: return v_text(it->point->type);
    case SRC_UNIT: return v_text(it->point->unit);
    case SRC_VALUE: return v_real(it->point->value);
    case SRC_COUNT: return it->point->count >= 0 ? v_int(it->point->count) : v_null();
    case SRC_ATTRIBUTES:
        return v_text(it->attrs->n ? arena_json(&m->arena, it->attrs->json, it->attrs->json_len) : NULL);
    }
    return v_null();
}

/* Fills the columns of r that map_record does not. */
static void fill_row(mapper *m, const store_table_desc *t, const item *it, store_record *r)
{
    for (size_t c = 0; c < t->n_cols; c++)
        if (t->cols[c].source != SRC_FIELD && t->cols[c].source != SRC_PATTERN)
            r->cols[c] = column_value(m, &t->cols[c], it, r);
}

/* ---- pacer records ---- */

/* A record's row while it is mapped. */
typedef struct row {
    const store_table_desc *t;
    store_record *r;
} row;

static store_value *field_value(row *w, long field)
{
    int c = w->t->field_cols[field];
    return c >= 0 ? &w->r->cols[c] : NULL;
}

static void default_text(row *w, long field, const char *s)
{
    store_value *v = field_value(w, field);
    if (v && v->type == SV_NULL)
        *v = v_text(s);
}

/* The server's own rules of each record type, once its fields are read:
 * defaults, and what makes a record failed (the `incomplete` and `errors`
 * counts of the queries). */
static void record_rules(row *w, const otlp_span *s)
{
    store_record *r = w->r;
    switch (w->t->type->id) {
    case PACER_RECORD_PAGE: {
        default_text(w, PACER_PAGE_CLASS, s->name); /* a span of another SDK names its page */
        default_text(w, PACER_PAGE_STATUS, "complete");
        const char *status = sv_text(field_value(w, PACER_PAGE_STATUS));
        /* a page nobody saw (never_shown) is counted, not failed */
        r->failed = status && strcmp(status, "complete") != 0 && strcmp(status, "never_shown") != 0;
        break;
    }
    case PACER_RECORD_NET: {
        default_text(w, PACER_NET_METHOD, "GET");
        store_value *total = field_value(w, PACER_NET_TOTAL_MS);
        if (total && total->type == SV_NULL) /* the span's own duration */
            *total = v_real((double)(s->end_ns - s->start_ns) / 1e6);
        const store_value *status = field_value(w, PACER_NET_STATUS);
        bool has_status = status && status->type == SV_INT;
        r->failed = sv_text(field_value(w, PACER_NET_ERROR)) || !has_status || status->i >= 400 || status->i <= 0;
        break;
    }
    default: break;
    }
}

/* A schema-typed value of an attribute: false when it has another type
 * (or, for a duration, is negative or not finite). */
static bool typed_value(const pacer_field *f, const otlp_value *v, store_value *ret)
{
    const char *s;
    int64_t i;
    double d;
    bool b;
    switch (f->type) {
    case PACER_TYPE_STRING:
        if (!otlp_value_string(v, &s))
            return false;
        *ret = (store_value){.type = SV_TEXT, .p = s, .n = v->len};
        return true;
    case PACER_TYPE_INT:
    case PACER_TYPE_ID:
        if (!otlp_value_int(v, &i))
            return false;
        *ret = v_int(i);
        return true;
    case PACER_TYPE_MS:
        if (!otlp_value_double(v, &d) || !(d >= 0) || isinf(d))
            return false;
        *ret = v_real(d);
        return true;
    case PACER_TYPE_BOOL:
        if (!otlp_value_bool(v, &b))
            return false;
        *ret = v_int(b);
        return true;
    default: return false;
    }
}

static bool key_is(const otlp_kv *kv, const char *key, size_t len)
{
    return kv->key_len == len && memcmp(kv->key, key, len) == 0;
}

/* Sorts the span's attributes out in one pass: found[c][k] is the first
 * attribute named t->cols[c].attrs[k]; those no column reads (other than
 * pacer.type and pacer.session, which any span may have) are written to
 * *ret_extra as a JSON array, or it stays NULL. */
static void take_attrs(mapper *m, const store_table_desc *t, const otlp_attrs *attrs,
                       const otlp_kv *found[][STORE_MAX_ATTRS], const char **ret_extra)
{
    /* the extra is a part of the list's text: room for all of it, the
     * rest given back at the end */
    char *extra = NULL;
    size_t o = 0;
    for (size_t i = 0; i < attrs->n; i++) {
        const otlp_kv *kv = &attrs->kv[i];
        bool known = key_is(kv, "pacer.type", 10) || key_is(kv, "pacer.session", 13);
        for (size_t c = 0; c < t->n_cols && !known; c++)
            for (size_t k = 0; k < t->cols[c].n_attrs; k++)
                if (key_is(kv, t->cols[c].attrs[k], t->cols[c].attr_lens[k])) {
                    if (!found[c][k])
                        found[c][k] = kv;
                    known = true;
                    break;
                }
        if (known)
            continue;
        if (!extra) {
            extra = arena_alloc(&m->arena, attrs->json_len + 3);
            if (!extra)
                return;
            extra[o++] = '[';
        } else {
            extra[o++] = ',';
        }
        o += json_compact(kv->json, kv->json_len, extra + o);
    }
    if (extra) {
        extra[o++] = ']';
        extra[o++] = 0;
        arena_keep(&m->arena, extra, o);
    }
    *ret_extra = extra;
}

/* The text of columns cols[0..n) joined by ' ' (the rollup group name). */
static const char *join_name(mapper *m, const store_record *r, const int *cols, size_t n)
{
    if (n == 1)
        return sv_text(&r->cols[cols[0]]);
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += strlen(sv_text(&r->cols[cols[i]])) + 1;
    char *name = arena_alloc(&m->arena, len);
    if (!name)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        const char *s = sv_text(&r->cols[cols[i]]);
        size_t k = strlen(s);
        memcpy(name + o, s, k);
        o += k;
        name[o++] = i + 1 < n ? ' ' : 0;
    }
    return name;
}

/* A pacer span → a row of its record type's table. False with *bad naming
 * the attribute that has the wrong type or value. */
static bool map_record(mapper *m, const otlp_span *s, const store_table_desc *t, item *it, store_record *r,
                       const char **bad)
{
    const store_kind_desc *kd = store_kind(t->kind);
    const otlp_kv *found[STORE_MAX_COLS][STORE_MAX_ATTRS];
    memset(found, 0, t->n_cols * sizeof found[0]);
    take_attrs(m, t, &s->attrs, found, &it->extra);
    if (m->arena.oom)
        return false;
    for (size_t c = 0; c < t->n_cols; c++) {
        const store_column *col = &t->cols[c];
        if (col->source != SRC_FIELD)
            continue;
        const otlp_value *v = NULL;
        size_t k = 0;
        while (k < col->n_attrs && !(found[c][k] && found[c][k]->has_value))
            k++;
        if (k < col->n_attrs)
            v = &found[c][k]->value;
        r->cols[c] = v_null();
        if (v && !typed_value(col->field, v, &r->cols[c])) {
            *bad = col->attrs[k];
            return false;
        }
    }
    row w = {t, r};
    record_rules(&w, s);
    /* the group name's fields must be there, with a value the schema allows */
    for (size_t c = 0; c < t->n_cols; c++) {
        const store_column *col = &t->cols[c];
        if (col->source != SRC_FIELD || !(col->field->flags & PACER_FIELD_NAME))
            continue;
        const char *v = sv_text(&r->cols[c]);
        if (!v || !pacer_field_allows(col->field, v, strlen(v))) {
            *bad = col->attrs[0];
            return false;
        }
    }
    for (size_t c = 0; c < t->n_cols; c++) {
        if (t->cols[c].source != SRC_PATTERN)
            continue;
        char pattern[1024];
        size_t n = url_fold(sv_text(&r->cols[t->cols[c].index]), pattern, sizeof pattern);
        char *p = arena_alloc(&m->arena, n + 1);
        if (!p)
            return false;
        memcpy(p, pattern, n + 1);
        r->cols[c] = (store_value){.type = SV_TEXT, .p = p, .n = n};
    }
    r->name = join_name(m, r, kd->name_cols, kd->n_name_cols);
    if (!r->name)
        return false;
    if (kd->excluded_col >= 0) { /* the outlier flag: false unless the record says so */
        store_value *ex = &r->cols[kd->excluded_col];
        if (ex->type == SV_NULL)
            *ex = v_int(0);
        r->excluded = ex->i != 0;
    }
    for (size_t i = 0; i < kd->n_metrics; i++) {
        const store_value *v = &r->cols[kd->metric_cols[i]];
        r->metrics[i] = v->type == SV_REAL ? v->d : NAN;
    }
    return true;
}

/* Fills recs (room for every span); returns how many were mapped. */
static size_t map_spans(mapper *m, store_record *recs)
{
    /* the table of each record type; -1: its spans are plain spans */
    int tables[PACER_N_RECORD_TYPES];
    for (size_t i = 0; i < PACER_N_RECORD_TYPES; i++)
        tables[i] = -1;
    for (enum store_table t = 0; t < TABLE_COUNT; t++)
        if (store_table(t)->type)
            tables[store_table(t)->type->id] = (int)t;
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
        const char *bad = NULL;
        const char *type = a_str(&s->attrs, "pacer.type", &bad);
        const char *session = a_str(&s->attrs, "pacer.session", &bad);
        item it = {.app = app, .version = res->service_version, .session = session ? session : res->session,
                   .ts = s->start_ns, .span = s, .attrs = &s->attrs};
        const pacer_record_type *rt = type ? pacer_record_type_find(type, strlen(type)) : NULL;
        int tb = rt ? tables[rt->id] : -1;
        const store_table_desc *t = store_table(tb >= 0 ? (enum store_table)tb : TABLE_SPANS);
        bool ok = !bad;
        if (ok && tb >= 0) {
            r->table = (enum store_table)tb;
            r->kind = t->kind;
            ok = map_record(m, s, t, &it, r, &bad);
        } else if (ok) {
            /* a plain span: its name and duration */
            r->table = TABLE_SPANS;
            r->kind = KIND_SPAN;
            r->name = s->name;
            r->failed = s->status_code == 2;
            r->metrics[0] = (double)(s->end_ns - s->start_ns) / 1e6;
        }
        if (m->arena.oom)
            return 0;
        if (!ok) {
            reject(m, "spans[%zu] (\"%.100s\"): attribute %s has the wrong type or value (docs/server.md)", i,
                   s->name, bad ? bad : "?");
            continue;
        }
        fill_row(m, t, &it, r);
        r->app = app;
        r->version = res->service_version;
        r->ts_ns = s->start_ns;
        n++;
    }
    return n;
}

static size_t map_logs(mapper *m, store_record *recs)
{
    const store_table_desc *t = store_table(TABLE_LOGS);
    size_t n = 0;
    for (size_t i = 0; i < m->b->n_logs; i++) {
        const otlp_log *l = &m->b->logs[i];
        const otlp_resource *res = &m->b->resources[l->resource];
        const char *app = app_of(m, res, "logRecords", i);
        if (!app)
            continue;
        const char *bad = NULL;
        const char *type = a_str(&l->attrs, "pacer.type", &bad);
        if (!type)
            type = a_str(&l->attrs, "event.name", &bad);
        const char *session = a_str(&l->attrs, "pacer.session", &bad);
        if (bad) {
            reject(m, "logRecords[%zu]: attribute %s has the wrong type", i, bad);
            continue;
        }
        store_record *r = &recs[n++];
        memset(r, 0, sizeof *r);
        r->table = TABLE_LOGS;
        r->kind = KIND_NONE;
        item it = {.app = app, .version = res->service_version, .session = session ? session : res->session,
                   .ts = l->time_ns, .log = l, .attrs = &l->attrs, .log_type = type};
        fill_row(m, t, &it, r);
        if (m->arena.oom)
            return 0;
    }
    return n;
}

static size_t map_points(mapper *m, store_record *recs)
{
    const store_table_desc *t = store_table(TABLE_METRIC_POINTS);
    size_t n = 0;
    for (size_t i = 0; i < m->b->n_points; i++) {
        const otlp_point *p = &m->b->points[i];
        const otlp_resource *res = &m->b->resources[p->resource];
        const char *app = app_of(m, res, "dataPoints", i);
        if (!app)
            continue;
        const char *bad = NULL;
        const char *session = a_str(&p->attrs, "pacer.session", &bad);
        if (bad) {
            reject(m, "dataPoints[%zu]: attribute %s has the wrong type", i, bad);
            continue;
        }
        store_record *r = &recs[n++];
        memset(r, 0, sizeof *r);
        r->table = TABLE_METRIC_POINTS;
        r->kind = KIND_NONE;
        item it = {.app = app, .version = res->service_version, .session = session ? session : res->session,
                   .ts = p->time_ns, .point = p, .attrs = &p->attrs};
        fill_row(m, t, &it, r);
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
    jbuf resp;
    jbuf_init(&resp);
    jbuf_open(&resp, '{');
    if (rejected && !duplicate) {
        const char *why = b.reject_message ? b.reject_message : m.first_reason;
        char count[24];
        snprintf(count, sizeof count, "%zu", rejected); /* an OTLP int64: a string */
        jbuf_key(&resp, "partialSuccess");
        jbuf_open(&resp, '{');
        jbuf_kv_str(&resp, rejected_field[what], count);
        jbuf_kv_str(&resp, "errorMessage", why ? why : "");
        jbuf_close(&resp, '}');
    }
    jbuf_close(&resp, '}');
    http_json(rs, 200, &resp);
    rs->items = duplicate ? 0 : n;
out:
    free(recs);
    free(m.first_reason);
    arena_free(&m.arena);
    otlp_batch_clear(&b);
}
