/* Ingest (ingest.h): an OTLP export request's body, whichever front
 * received it, into the store.
 *
 * body → decode (otlp_proto.c or otlp.c: the same batch)
 *      → one store_record per accepted item (the mapping below), with its
 *        resource and scope as OTLP JSON (the store keeps each once)
 *      → cleaning (clean.h): a pacer record with an impossible value is
 *        kept out, counted as rejected and tallied by reason; a copy of a
 *        record stored before, sent without a batch id, is kept out and
 *        tallied (dedupe.h); a start-up outlier is stored and tallied
 *      → store_submit: the records and the tallies, atomically (blocks
 *        until committed)
 * The HTTP front (ingest_http.c) checks and inflates the body first and
 * answers in OTLP/HTTP's shape.
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
#include "ingest.h"
#include "clean.h"
#include "dedupe.h"
#include "otlp.h"
#include "urlfold.h"

#include <pacer/base/clock.h>
#include <pacer/base/hash.h>

#include <pacer/base/json.h>

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Fixed malloc thresholds (glibc's own grow with the largest block
 * freed, so megabytes of freed bodies would stay resident for good):
 * blocks of 4 MiB and more — the largest bodies — are mmapped and go
 * back to the system when freed; below that, a request's working
 * arrays (the decoded batch, its records, an inflated body: a few MiB
 * for 1000 spans) come from the arenas, and up to 8 MiB freed at an
 * arena's top stay there for the next request. Mapped afresh for every
 * request instead, their pages were faulted in and zeroed each time:
 * about half of pacerd's CPU time at full ingest. Few arenas, so that
 * the threads' freed memory is not kept apart. */
void ingest_malloc_setup(void)
{
    mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 8 * 1024 * 1024);
    mallopt(M_ARENA_MAX, 4);
}


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
        json_compact(json, len, s);
    return s;
}

typedef struct mapper {
    const char *app;
    otlp_batch *b;
    arena arena;
    size_t rejected;
    char *first_reason; /* the first rejection made here (not by the decoder) */
    jbuf tmp;           /* JSON being written, then copied into the arena */
    store_origin *resources, *scopes; /* one per otlp resource / scope */
    int64_t horizon_ns;                /* older items are refused: the store would drop them (--retention-days) */
    unsigned retention_days;
    const clean_limits *clean;
    int64_t now_ns;
    size_t cleaned;     /* records cleaning keeps out (counted in rejected) */
    uint8_t *why;       /* per record mapped: its enum clean_reason, CLEAN_OK to store it */
} mapper;

static void reject(mapper *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An item older than the store keeps is refused, not stored and dropped. */
static bool too_old(mapper *m, int64_t ts, const char *what, size_t i)
{
    if (ts >= m->horizon_ns)
        return false;
    reject(m, "%s[%zu]: older than the store keeps (--retention-days %u): not stored", what, i, m->retention_days);
    return true;
}

/* Starts a JSON text in m->tmp. */
static jbuf *tmp_begin(mapper *m)
{
    m->tmp.len = 0;
    m->tmp.need_comma = false;
    if (m->tmp.data)
        m->tmp.data[0] = 0;
    return &m->tmp;
}

/* The text written since tmp_begin, in the arena (NULL when empty or out
 * of memory). */
static const char *tmp_end(mapper *m)
{
    if (m->tmp.failed) {
        m->arena.oom = true;
        return NULL;
    }
    if (!m->tmp.len)
        return NULL;
    char *s = arena_alloc(&m->arena, m->tmp.len + 1);
    if (s)
        memcpy(s, m->tmp.data, m->tmp.len + 1);
    return s;
}

/* A KeyValue list as stored: compact OTLP JSON, or NULL when empty. */
static const char *attrs_text(mapper *m, const otlp_attrs *a)
{
    if (!a->n)
        return NULL;
    if (a->json)
        return arena_json(&m->arena, a->json, a->json_len);
    otlp_write_attrs(tmp_begin(m), a);
    return tmp_end(m);
}

static void write_hex(jbuf *b, const char *key, const uint8_t *p, size_t n)
{
    char hex[40];
    for (size_t i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", p[i]);
    jbuf_kv_str(b, key, hex);
}

static void write_ns(jbuf *b, const char *key, int64_t ns)
{
    char num[24];
    snprintf(num, sizeof num, "%lld", (long long)ns);
    jbuf_kv_str(b, key, num);
}

/* The resource and the scope as the store keeps them (store_origin). */
static bool make_origins(mapper *m)
{
    otlp_batch *b = m->b;
    size_t n = b->n_resources + b->n_scopes;
    if (!n)
        return true;
    store_origin *o = calloc(n, sizeof *o);
    if (!o)
        return false;
    m->resources = o;
    m->scopes = o + b->n_resources;
    for (size_t i = 0; i < n; i++) {
        jbuf *j = tmp_begin(m);
        const otlp_attrs *attrs;
        uint32_t dropped;
        const char *schema;
        jbuf_open(j, '{');
        if (i < b->n_resources) {
            attrs = &b->resources[i].attrs;
            dropped = b->resources[i].dropped_attributes;
            schema = b->resources[i].schema_url;
        } else {
            const otlp_scope *sc = &b->scopes[i - b->n_resources];
            attrs = &sc->attrs;
            dropped = sc->dropped_attributes;
            schema = sc->schema_url;
            if (sc->name)
                jbuf_kv_str(j, "name", sc->name);
            if (sc->version)
                jbuf_kv_str(j, "version", sc->version);
        }
        jbuf_key(j, "attributes");
        otlp_write_attrs(j, attrs);
        if (dropped)
            jbuf_kv_i64(j, "droppedAttributesCount", dropped);
        if (schema)
            jbuf_kv_str(j, "schemaUrl", schema);
        jbuf_close(j, '}');
        const char *text = tmp_end(m);
        if (!text)
            return false;
        o[i].json = text;
        o[i].hash = fnv1a64(FNV1A64_INIT, text, strlen(text));
    }
    return true;
}

static const char *events_text(mapper *m, const otlp_span *s)
{
    if (!s->n_events)
        return NULL;
    jbuf *j = tmp_begin(m);
    jbuf_open(j, '[');
    for (size_t i = 0; i < s->n_events; i++) {
        const otlp_event *e = &m->b->events[s->first_event + i];
        jbuf_open(j, '{');
        write_ns(j, "timeUnixNano", e->time_ns);
        jbuf_kv_str(j, "name", e->name);
        jbuf_key(j, "attributes");
        otlp_write_attrs(j, &e->attrs);
        if (e->dropped_attributes)
            jbuf_kv_i64(j, "droppedAttributesCount", e->dropped_attributes);
        jbuf_close(j, '}');
    }
    jbuf_close(j, ']');
    return tmp_end(m);
}

static const char *links_text(mapper *m, const otlp_span *s)
{
    if (!s->n_links)
        return NULL;
    jbuf *j = tmp_begin(m);
    jbuf_open(j, '[');
    for (size_t i = 0; i < s->n_links; i++) {
        const otlp_link *l = &m->b->links[s->first_link + i];
        jbuf_open(j, '{');
        write_hex(j, "traceId", l->trace_id, 16);
        write_hex(j, "spanId", l->span_id, 8);
        if (l->trace_state)
            jbuf_kv_str(j, "traceState", l->trace_state);
        jbuf_key(j, "attributes");
        otlp_write_attrs(j, &l->attrs);
        if (l->dropped_attributes)
            jbuf_kv_i64(j, "droppedAttributesCount", l->dropped_attributes);
        if (l->has_flags)
            jbuf_kv_i64(j, "flags", l->flags);
        jbuf_close(j, '}');
    }
    jbuf_close(j, ']');
    return tmp_end(m);
}

/* {"attributes":N,"events":N,"links":N} of what the sender dropped, or NULL. */
static const char *dropped_text(mapper *m, uint32_t attrs, uint32_t events, uint32_t links)
{
    if (!attrs && !events && !links)
        return NULL;
    jbuf *j = tmp_begin(m);
    jbuf_open(j, '{');
    if (attrs)
        jbuf_kv_i64(j, "attributes", attrs);
    if (events)
        jbuf_kv_i64(j, "events", events);
    if (links)
        jbuf_kv_i64(j, "links", links);
    jbuf_close(j, '}');
    return tmp_end(m);
}

static void write_u64s(jbuf *j, const char *key, const uint64_t *v, size_t n)
{
    jbuf_key(j, key);
    jbuf_open(j, '[');
    for (size_t i = 0; i < n; i++) {
        char num[24];
        snprintf(num, sizeof num, "%llu", (unsigned long long)v[i]);
        jbuf_str(j, num); /* 64-bit integers are strings in OTLP JSON */
    }
    jbuf_close(j, ']');
}

/* A point's distribution: histogram buckets and bounds, exponential
 * buckets, summary quantiles (members of an object), or NULL. */
static const char *data_text(mapper *m, const otlp_point *p)
{
    jbuf *j = tmp_begin(m);
    jbuf_open(j, '{');
    if (strcmp(p->type, "histogram") == 0) {
        write_u64s(j, "bucketCounts", p->bucket_counts, p->n_bucket_counts);
        jbuf_key(j, "explicitBounds");
        jbuf_open(j, '[');
        for (size_t i = 0; i < p->n_bounds; i++)
            otlp_write_double(j, p->bounds[i]);
        jbuf_close(j, ']');
    } else if (strcmp(p->type, "exponential_histogram") == 0) {
        char num[24];
        jbuf_kv_i64(j, "scale", p->scale);
        snprintf(num, sizeof num, "%llu", (unsigned long long)p->zero_count);
        jbuf_kv_str(j, "zeroCount", num);
        jbuf_key(j, "zeroThreshold");
        otlp_write_double(j, p->zero_threshold);
        const otlp_buckets *bk[2] = {&p->positive, &p->negative};
        for (int i = 0; i < 2; i++) {
            jbuf_key(j, i ? "negative" : "positive");
            jbuf_open(j, '{');
            jbuf_kv_i64(j, "offset", bk[i]->offset);
            write_u64s(j, "bucketCounts", bk[i]->counts, bk[i]->n);
            jbuf_close(j, '}');
        }
    } else if (strcmp(p->type, "summary") == 0) {
        jbuf_key(j, "quantileValues");
        jbuf_open(j, '[');
        for (size_t i = 0; i < p->n_quantiles; i++) {
            jbuf_open(j, '{');
            jbuf_key(j, "quantile");
            otlp_write_double(j, p->quantiles[i].quantile);
            jbuf_key(j, "value");
            otlp_write_double(j, p->quantiles[i].value);
            jbuf_close(j, '}');
        }
        jbuf_close(j, ']');
    } else {
        return NULL;
    }
    jbuf_close(j, '}');
    return tmp_end(m);
}

static const char *exemplars_text(mapper *m, const otlp_point *p)
{
    if (!p->n_exemplars)
        return NULL;
    jbuf *j = tmp_begin(m);
    jbuf_open(j, '[');
    for (size_t i = 0; i < p->n_exemplars; i++) {
        const otlp_exemplar *e = &m->b->exemplars[p->first_exemplar + i];
        jbuf_open(j, '{');
        write_ns(j, "timeUnixNano", e->time_ns);
        if (e->is_int) {
            write_ns(j, "asInt", e->i);
        } else {
            jbuf_key(j, "asDouble");
            otlp_write_double(j, e->d);
        }
        if (e->has_trace_id)
            write_hex(j, "traceId", e->trace_id, 16);
        if (e->has_span_id)
            write_hex(j, "spanId", e->span_id, 8);
        jbuf_key(j, "filteredAttributes");
        otlp_write_attrs(j, &e->attrs);
        jbuf_close(j, '}');
    }
    jbuf_close(j, ']');
    return tmp_end(m);
}

static void reject(mapper *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reject(mapper *m, const char *fmt, ...)
{
    m->rejected++;
    if (m->first_reason)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&m->first_reason, fmt, ap) < 0)
        m->first_reason = NULL;
    va_end(ap);
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
/* A number that may be NaN or infinite: those as the text OTLP JSON gives
 * them (SQLite would store a NaN as NULL). */
static store_value v_number(double d)
{
    if (isnan(d))
        return (store_value){.type = SV_TEXT, .p = "NaN"};
    if (isinf(d))
        return (store_value){.type = SV_TEXT, .p = d < 0 ? "-Infinity" : "Infinity"};
    return (store_value){.type = SV_REAL, .d = d};
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
    enum clean_reason clean; /* why cleaning keeps the record out, or CLEAN_OK */
    const char *clean_field; /* what cleaning found impossible */
} item;

/* A log's body: the text of a string; otherwise the AnyValue's JSON (also
 * in body_any, which tells the two apart). */
static const char *any_text(mapper *m, const otlp_log *l)
{
    const char *s;
    if (!l->has_body)
        return NULL;
    if (otlp_value_string(&l->body, &s))
        return s;
    if (l->body.json)
        return arena_json(&m->arena, l->body.json, l->body.json_len);
    otlp_write_value(tmp_begin(m), &l->body);
    return tmp_end(m);
}

/* The value of a column of r that is not a record's field (those are read
 * by map_record). */
static store_value column_value(mapper *m, const store_column *col, const item *it, const store_record *r)
{
    const otlp_span *s = it->span;
    const otlp_log *l = it->log;
    const otlp_point *p = it->point;
    const char *body;
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
    case SRC_TRACE_ID:
        if (l)
            return l->has_trace_id ? v_blob(l->trace_id, 16) : v_null();
        return v_blob(s->trace_id, 16);
    case SRC_SPAN_ID:
        if (l)
            return l->has_span_id ? v_blob(l->span_id, 8) : v_null();
        return v_blob(s->span_id, 8);
    case SRC_EXTRA: return v_text(it->extra);
    case SRC_TRACE_STATE: return v_text(s->trace_state);
    case SRC_EVENTS: return v_text(events_text(m, s));
    case SRC_LINKS: return v_text(links_text(m, s));
    case SRC_FLAGS:
        if (s)
            return s->has_flags ? v_int(s->flags) : v_null();
        if (l)
            return l->has_flags ? v_int(l->flags) : v_null();
        return p && p->flags ? v_int(p->flags) : v_null();
    case SRC_DROPPED:
        if (s)
            return v_text(dropped_text(m, s->dropped_attributes, s->dropped_events, s->dropped_links));
        return l ? v_text(dropped_text(m, l->dropped_attributes, 0, 0)) : v_null();
    case SRC_RESOURCE_ID:
    case SRC_SCOPE_ID: return v_null(); /* the store's: store_record.resource, .scope */
    case SRC_OBSERVED_TS: return l->observed_ns ? v_int(l->observed_ns) : v_null();
    case SRC_EVENT_NAME: return v_text(l->event_name);
    case SRC_BODY_ANY:
        return l->has_body && l->body.type != OTLP_STRING && (body = any_text(m, l)) ? v_text(body) : v_null();
    case SRC_DESCRIPTION: return v_text(p->description);
    case SRC_START_TS: return p->start_ns ? v_int(p->start_ns) : v_null();
    case SRC_TEMPORALITY: return p->temporality >= 0 ? v_int(p->temporality) : v_null();
    case SRC_MONOTONIC: return p->monotonic >= 0 ? v_int(p->monotonic) : v_null();
    case SRC_INT_VALUE: return p->is_int ? v_int(p->int_value) : v_null();
    case SRC_SUM: return p->has_sum ? v_number(p->sum) : v_null();
    case SRC_MIN: return p->has_min ? v_number(p->min) : v_null();
    case SRC_MAX: return p->has_max ? v_number(p->max) : v_null();
    case SRC_DATA: return v_text(data_text(m, p));
    case SRC_EXEMPLARS: return v_text(exemplars_text(m, p));
    case SRC_END_TS: return v_int(s->end_ns);
    case SRC_SPAN_NAME: return v_text(s->name);
    case SRC_SPAN_KIND: return v_int(s->kind);
    case SRC_STATUS_CODE: return v_int(s->status_code);
    case SRC_STATUS_MESSAGE: return v_text(s->status_message);
    case SRC_PARENT_SPAN_ID: return s->has_parent ? v_blob(s->parent_span_id, 8) : v_null();
    case SRC_SCOPE: return v_text(s->scope_name);
    case SRC_LOG_TYPE: return v_text(it->log_type);
    case SRC_SEVERITY_NUMBER: return v_int(it->log->severity_number);
    case SRC_SEVERITY_TEXT: return v_text(it->log->severity_text);
    case SRC_BODY: return v_text(any_text(m, it->log));
    case SRC_METRIC_NAME: return v_text(it->point->name);
    case SRC_METRIC_TYPE: return v_text(it->point->type);
    case SRC_UNIT: return v_text(it->point->unit);
    case SRC_VALUE: return v_number(it->point->value);
    case SRC_COUNT: return it->point->count >= 0 ? v_int(it->point->count) : v_null();
    case SRC_ATTRIBUTES: return v_text(attrs_text(m, it->attrs));
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

/* A schema-typed value of an attribute: false when it has another type.
 * A duration that is negative or not finite is of its type but impossible:
 * *ret_clean says why (cleaning keeps the record out), and ret holds
 * nothing. */
static bool typed_value(const pacer_field *f, const otlp_value *v, store_value *ret, enum clean_reason *ret_clean)
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
        if (!otlp_value_double(v, &d))
            return false;
        if (isnan(d) || isinf(d) || d < 0) {
            *ret_clean = isnan(d) || isinf(d) ? CLEAN_NON_FINITE : CLEAN_NEGATIVE;
            *ret = v_null();
            return true;
        }
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
    jbuf *extra = NULL;
    for (size_t i = 0; i < attrs->n; i++) {
        const otlp_kv *kv = &attrs->kv[i];
        bool known = key_is(kv, "pacer.type", 10) || key_is(kv, "pacer.session", 13);
        for (size_t x = 0; x < t->n_attr_cols && !known; x++)
            for (size_t k = 0, c = (size_t)t->attr_cols[x]; k < t->cols[c].n_attrs; k++)
                if (key_is(kv, t->cols[c].attrs[k], t->cols[c].attr_lens[k])) {
                    if (!found[c][k])
                        found[c][k] = kv;
                    known = true;
                    break;
                }
        if (known)
            continue;
        if (!extra) {
            extra = tmp_begin(m);
            jbuf_open(extra, '[');
        }
        otlp_write_kv(extra, kv);
    }
    if (extra) {
        jbuf_close(extra, ']');
        *ret_extra = tmp_end(m);
    }
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

/* Cleaning (clean.h): a record already found impossible keeps its first
 * reason; else each duration, the time, the order of the phases. */
static void clean_row(mapper *m, const store_table_desc *t, item *it, store_record *r)
{
    for (size_t c = 0; c < t->n_cols && !it->clean; c++) {
        const store_column *col = &t->cols[c];
        if (col->source != SRC_FIELD || col->field->type != PACER_TYPE_MS || r->cols[c].type != SV_REAL)
            continue;
        enum clean_reason why = clean_duration(m->clean, r->cols[c].d);
        if (why) {
            it->clean = why;
            it->clean_field = col->attrs[0];
        }
    }
    if (!it->clean && (it->clean = clean_time(m->clean, it->ts, m->now_ns)))
        it->clean_field = "the time";
    if (it->clean)
        return;
    double f[3];
    if (t->type->id == PACER_RECORD_PAGE) {
        static const long order[3] = {PACER_PAGE_INITIAL_DRAW_MS, PACER_PAGE_FINAL_DRAW_MS, PACER_PAGE_TOTAL_MS};
        for (int k = 0; k < 3; k++) {
            int c = t->field_cols[order[k]];
            f[k] = c >= 0 && r->cols[c].type == SV_REAL ? r->cols[c].d : NAN;
        }
        it->clean = clean_page(f[0], f[1], f[2]);
    } else if (t->type->id == PACER_RECORD_STARTUP) {
        static const long order[3] = {PACER_STARTUP_FIRST_SCREEN_MS, PACER_STARTUP_COLD_MS,
                                      PACER_STARTUP_FULL_DISPLAY_MS};
        for (int k = 0; k < 3; k++) {
            int c = t->field_cols[order[k]];
            f[k] = c >= 0 && r->cols[c].type == SV_REAL ? r->cols[c].d : NAN;
        }
        it->clean = clean_startup(f[0], f[1], f[2]);
    }
    if (it->clean)
        it->clean_field = "the phases";
}

/* A pacer span → a row of its record type's table. False with *bad naming
 * the attribute that has the wrong type or value. */
static bool map_record(mapper *m, const otlp_span *s, const store_table_desc *t, item *it, store_record *r,
                       const char **bad)
{
    const store_kind_desc *kd = store_layout_kind(t->kind);
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
        enum clean_reason why = CLEAN_OK;
        if (v && !typed_value(col->field, v, &r->cols[c], &why)) {
            *bad = col->attrs[k];
            return false;
        }
        if (why && !it->clean) {
            it->clean = why;
            it->clean_field = col->attrs[k];
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
        size_t n = urlfold(sv_text(&r->cols[t->cols[c].index]), pattern, sizeof pattern);
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
    clean_row(m, t, it, r);
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
        if (store_layout_table(t)->type)
            tables[store_layout_table(t)->type->id] = (int)t;
    size_t n = 0;
    for (size_t i = 0; i < m->b->n_spans; i++) {
        const otlp_span *s = &m->b->spans[i];
        const otlp_resource *res = &m->b->resources[s->resource];
        const char *app = app_of(m, res, "spans", i);
        if (!app || too_old(m, s->start_ns, "spans", i))
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
        const store_table_desc *t = store_layout_table(tb >= 0 ? (enum store_table)tb : TABLE_SPANS);
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
        if (it.clean) {
            m->cleaned++;
            reject(m, "spans[%zu] (\"%.100s\"): not used: %s (%s; docs/server.md, Cleaning)", i, s->name,
                   clean_reason_name(it.clean), it.clean_field ? it.clean_field : "?");
        }
        m->why[n] = (uint8_t)it.clean;
        fill_row(m, t, &it, r);
        r->app = app;
        r->version = res->service_version;
        r->ts_ns = s->start_ns;
        r->resource = &m->resources[s->resource];
        r->scope = m->b->n_scopes ? &m->scopes[s->scope] : NULL;
        n++;
    }
    return n;
}

/* Cleaning of pacer's log records (jank, leak): the time, a jank's duration. */
static enum clean_reason clean_log(mapper *m, const otlp_log *l, const char *type, size_t index)
{
    const pacer_record_type *rt = type ? pacer_record_type_find(type, strlen(type)) : NULL;
    if (!rt || rt->signal != PACER_SIGNAL_LOGS)
        return CLEAN_OK;
    const char *what = "the time";
    enum clean_reason why = clean_time(m->clean, l->time_ns, m->now_ns);
    const otlp_value *v = rt->id == PACER_RECORD_JANK ? otlp_attr(&l->attrs, "pacer.duration_ms") : NULL;
    double d;
    if (!why && v && otlp_value_double(v, &d)) {
        why = clean_duration(m->clean, d);
        what = "pacer.duration_ms";
    }
    if (!why)
        return CLEAN_OK;
    m->cleaned++;
    reject(m, "logRecords[%zu] (%s): not used: %s (%s; docs/server.md, Cleaning)", index, type,
           clean_reason_name(why), what);
    return why;
}

static size_t map_logs(mapper *m, store_record *recs)
{
    const store_table_desc *t = store_layout_table(TABLE_LOGS);
    size_t n = 0;
    for (size_t i = 0; i < m->b->n_logs; i++) {
        const otlp_log *l = &m->b->logs[i];
        const otlp_resource *res = &m->b->resources[l->resource];
        const char *app = app_of(m, res, "logRecords", i);
        if (!app || too_old(m, l->time_ns, "logRecords", i))
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
        m->why[n] = CLEAN_OK;
        store_record *r = &recs[n++];
        memset(r, 0, sizeof *r);
        r->table = TABLE_LOGS;
        r->kind = KIND_NONE;
        item it = {.app = app, .version = res->service_version, .session = session ? session : res->session,
                   .ts = l->time_ns, .log = l, .attrs = &l->attrs, .log_type = type};
        fill_row(m, t, &it, r);
        m->why[n - 1] = (uint8_t)clean_log(m, l, type, i);
        r->resource = &m->resources[l->resource];
        r->scope = m->b->n_scopes ? &m->scopes[l->scope] : NULL;
        if (m->arena.oom)
            return 0;
    }
    return n;
}

static size_t map_points(mapper *m, store_record *recs)
{
    const store_table_desc *t = store_layout_table(TABLE_METRIC_POINTS);
    size_t n = 0;
    for (size_t i = 0; i < m->b->n_points; i++) {
        const otlp_point *p = &m->b->points[i];
        const otlp_resource *res = &m->b->resources[p->resource];
        const char *app = app_of(m, res, "dataPoints", i);
        if (!app || too_old(m, p->time_ns, "dataPoints", i))
            continue;
        const char *bad = NULL;
        const char *session = a_str(&p->attrs, "pacer.session", &bad);
        if (bad) {
            reject(m, "dataPoints[%zu]: attribute %s has the wrong type", i, bad);
            continue;
        }
        m->why[n] = CLEAN_OK;
        store_record *r = &recs[n++];
        memset(r, 0, sizeof *r);
        r->table = TABLE_METRIC_POINTS;
        r->kind = KIND_NONE;
        item it = {.app = app, .version = res->service_version, .session = session ? session : res->session,
                   .ts = p->time_ns, .point = p, .attrs = &p->attrs};
        fill_row(m, t, &it, r);
        enum clean_reason why;
        if (p->name && strncmp(p->name, "pacer.", 6) == 0 && (why = clean_time(m->clean, p->time_ns, m->now_ns))) {
            m->why[n - 1] = (uint8_t)why;
            m->cleaned++;
            reject(m, "dataPoints[%zu] (%.100s): not used: %s (the time; docs/server.md, Cleaning)", i, p->name,
                   clean_reason_name(why));
        }
        r->resource = &m->resources[p->resource];
        r->scope = m->b->n_scopes ? &m->scopes[p->scope] : NULL;
        if (m->arena.oom)
            return 0;
    }
    return n;
}

/* A record's time, for its tally: its ts column. */
static int64_t record_ts(const store_record *r)
{
    int c = store_layout_col(r->table, SRC_COMMON, PACER_COMMON_TS);
    return c >= 0 && r->cols[c].type == SV_INT ? r->cols[c].i : r->ts_ns;
}

bool ingest_batch_id_ok(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > INGEST_MAX_BATCH_ID)
        return false;
    for (; *id; id++)
        if (!((*id >= 'a' && *id <= 'z') || (*id >= 'A' && *id <= 'Z') || (*id >= '0' && *id <= '9') ||
              *id == '-' || *id == '_' || *id == '.' || *id == ':'))
            return false;
    return true;
}

int ingest_batch(const ingest_ctx *ig, const char *app, enum ingest_signal what, bool proto, const char *body,
                 size_t body_len, const char *batch_id, const char *endpoint, bool *coming, ingest_outcome *ret,
                 char *err, size_t err_size)
{
    memset(ret, 0, sizeof *ret);
    otlp_batch b = {0};
    int r;
    if (proto)
        r = what == INGEST_TRACES ? otlp_proto_decode_traces((const uint8_t *)body, body_len, &b, err, err_size)
            : what == INGEST_LOGS ? otlp_proto_decode_logs((const uint8_t *)body, body_len, &b, err, err_size)
                                  : otlp_proto_decode_metrics((const uint8_t *)body, body_len, &b, err, err_size);
    else
        r = what == INGEST_TRACES ? otlp_decode_traces(body, body_len, &b, err, err_size)
            : what == INGEST_LOGS ? otlp_decode_logs(body, body_len, &b, err, err_size)
                                  : otlp_decode_metrics(body, body_len, &b, err, err_size);
    mapper m = {.app = app, .b = &b, .horizon_ns = INT64_MIN, .retention_days = ig->retention_days,
                .clean = &ig->clean, .now_ns = wall_ns()};
    if (ig->retention_days)
        m.horizon_ns = (m.now_ns / STORE_DAY_NS - (int64_t)ig->retention_days) * STORE_DAY_NS;
    jbuf_init(&m.tmp);
    store_record *recs = NULL;
    store_tally *tallies = NULL;
    bool *copy = NULL;
    uint64_t *held = NULL;
    size_t n_held = 0;
    if (r < 0) {
        if (r != -ENOMEM)
            r = -EINVAL;
        goto out;
    }
    r = -ENOMEM;
    size_t items = what == INGEST_TRACES ? b.n_spans : what == INGEST_LOGS ? b.n_logs : b.n_points;
    recs = items ? malloc(items * sizeof *recs) : NULL;
    m.why = items ? malloc(items) : NULL;
    if ((items && (!recs || !m.why)) || !make_origins(&m))
        goto out;
    size_t n = what == INGEST_TRACES ? map_spans(&m, recs) : what == INGEST_LOGS ? map_logs(&m, recs)
                                                                                : map_points(&m, recs);
    if (m.arena.oom)
        goto out;
    /* what is stored, and what is counted with it by reason (clean.h):
     * the cleaned records (kept out), the copies of records stored before
     * (kept out), start-up outliers (stored); one tally a record at most */
    tallies = n ? malloc(n * sizeof *tallies) : NULL;
    copy = n ? malloc(n * sizeof *copy) : NULL;
    if (n && (!tallies || !copy))
        goto out;
    size_t kept = 0, n_tallies = 0;
    for (size_t i = 0; i < n; i++) {
        if (m.why[i]) {
            tallies[n_tallies++] = (store_tally){clean_reason_name(m.why[i]), record_ts(&recs[i])};
            continue;
        }
        if (kept != i)
            recs[kept] = recs[i];
        kept++;
    }
    /* a batch with an id is stored once by its id (store.h); records that
     * come without one, by their own */
    if (!batch_id && ig->dedupe)
        dedupe_check(ig->dedupe, recs, kept, copy, &held, &n_held);
    else if (kept)
        memset(copy, 0, kept * sizeof *copy);
    size_t stored = 0;
    for (size_t i = 0; i < kept; i++) {
        if (copy[i]) {
            tallies[n_tallies++] = (store_tally){clean_reason_name(CLEAN_DUPLICATE), record_ts(&recs[i])};
            continue;
        }
        if (stored != i)
            recs[stored] = recs[i];
        if (recs[stored].table == TABLE_STARTUPS && recs[stored].excluded)
            tallies[n_tallies++] = (store_tally){clean_reason_name(CLEAN_OUTLIER), record_ts(&recs[stored])};
        stored++;
    }
    size_t rejected = b.rejected + m.rejected;
    if (coming && *coming) {
        store_coming(ig->store, -1);
        *coming = false;
    }
    store_batch sb = {.app = app, .batch_id = batch_id, .endpoint = endpoint, .recs = recs, .n = stored,
                      .tallies = tallies, .n_tallies = n_tallies, .items = n, .rejected = rejected};
    r = store_submit(ig->store, &sb, &ret->duplicate);
    if (ig->dedupe)
        dedupe_settle(ig->dedupe, held, n_held, r == 0);
    held = NULL;
    if (r == -EAGAIN)
        goto out;
    if (r < 0) {
        r = -EIO;
        goto out;
    }
    /* what was left out, and why; or, with nothing left out, what was
     * ignored (OTLP: rejected 0 and a message is a warning) */
    if (rejected) {
        const char *first = b.reject_message ? b.reject_message : m.first_reason;
        snprintf(ret->message, sizeof ret->message, "%s", first ? first : "");
    }
    size_t o = strlen(ret->message);
    if (b.ignored)
        snprintf(ret->message + o, sizeof ret->message - o,
                 "%s%zu unknown field%s skipped (nothing of %s is stored), the first: %s", o ? "; " : "", b.ignored,
                 b.ignored == 1 ? "" : "s", b.ignored == 1 ? "it" : "them",
                 b.ignore_message ? b.ignore_message : "?");
    ret->rejected = ret->duplicate ? 0 : rejected;
    if (ret->duplicate)
        ret->message[0] = 0;
    ret->items = ret->duplicate ? 0 : n - m.cleaned;
out:
    free(held);
    free(copy);
    free(tallies);
    free(recs);
    free(m.why);
    free(m.first_reason);
    free(m.resources);
    jbuf_free(&m.tmp);
    arena_free(&m.arena);
    otlp_batch_clear(&b);
    return r;
}
