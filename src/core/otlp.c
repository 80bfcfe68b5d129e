/* Records → OTLP/HTTP requests (docs/otlp-mapping.md is the contract),
 * encoded in protobuf from the record schema; JSON, when asked, is the
 * same message written out by otlp_proto.c's table.
 *
 * The forms a record takes on its way to the server:
 *
 *   typed record ──► JSON line (records file, record callback; the body of a log record)
 *        │ writer thread: otlp_spool_body
 *        ▼
 *   spool row (SPOOL_OTLP): SpooledRecord { 1 app, 2 version, 3 session: string;
 *                                           4 pid: int64; 5 item: bytes }
 *        │ uploader thread: otlp_request
 *        ▼
 *   Export…ServiceRequest (protobuf; otlp_proto_to_json for JSON) ──► gzip ──► HTTP
 *
 * The item is the record's part of the request, complete but for what only
 * the batch knows: a span without its traceId and spanId (fields 1 and 2,
 * which come first, so otlp_request writes them before the stored bytes),
 * a log record, or a metrics record's Metric messages, each framed as
 * ScopeMetrics.metrics. The run (app, version, session, pid) groups the
 * records of a batch under one resource each, in order of first
 * appearance, and the resource is written when the batch is: it carries
 * the spool's dropped count of that moment. Sending a batch thus parses
 * no text: it reads each body's five fields, checks the item against the
 * message table (otlp_proto_check: a body that is not one this file wrote
 * is left out, not sent) and copies it.
 *
 * A record is sent exactly as its JSON line read back would be, the form
 * earlier versions spooled and sent: a field f is the attribute pacer.<f>
 * (and its semantic-convention name when the schema gives one), a nested
 * object's field k is pacer.<f>.<k>, a list becomes span events; members
 * the schema does not name (custom records, pacer_emit) are mapped the same
 * way by their JSON type. The read-back is not done but its effects are:
 * strings are made valid UTF-8 (pb_string), durations go to the
 * microsecond through the number their text reads as (record_ms_reread), a
 * missing app, version or session is "", and a record the reader would
 * refuse (record_check) is not sent. Spooled JSON lines of earlier
 * versions are read back for real (pacer_record_parse) and then take the
 * same path, so both forms of a record give the same bytes; the unit tests
 * hold this file to the earlier JSON path for every record type.
 *
 * The encoder is pure: same input, same bytes.
 */
#include "otlp.h"

#include "record_int.h"
#include "url.h"

#include <pacer/pacer.h>

#include <pacer/base/hash.h>
#include <pacer/base/json.h>
#include <pacer/base/utf8.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* opentelemetry-proto v1 field numbers (otlp_proto.c has the whole table) */
enum {
    KV_KEY = 1, KV_VALUE = 2,
    AV_STRING = 1, AV_BOOL = 2, AV_INT = 3, AV_DOUBLE = 4, AV_ARRAY = 5, ARRAY_VALUES = 1,
    REQ_RESOURCE_ITEMS = 1, RES_RESOURCE = 1, RES_SCOPE_ITEMS = 2, RESOURCE_ATTRS = 1,
    SCOPE_SCOPE = 1, SCOPE_ITEMS = 2, SCOPE_NAME = 1, SCOPE_VERSION = 2,
    SPAN_TRACE_ID = 1, SPAN_SPAN_ID = 2, SPAN_NAME = 5, SPAN_KIND = 6, SPAN_START = 7, SPAN_END = 8,
    SPAN_ATTRS = 9, SPAN_EVENTS = 11, EVENT_TIME = 1, EVENT_NAME = 2, EVENT_ATTRS = 3,
    LOG_TIME = 1, LOG_SEVERITY = 2, LOG_SEVERITY_TEXT = 3, LOG_BODY = 5, LOG_ATTRS = 6, LOG_OBSERVED = 11,
    METRIC_NAME = 1, METRIC_UNIT = 3, METRIC_GAUGE = 5, GAUGE_POINTS = 1,
    POINT_TIME = 3, POINT_DOUBLE = 4, POINT_INT = 6, POINT_ATTRS = 7,
};

/* the spooled body (SpooledRecord) */
enum { SPOOLED_APP = 1, SPOOLED_VERSION = 2, SPOOLED_SESSION = 3, SPOOLED_PID = 4, SPOOLED_ITEM = 5 };

const char *otlp_path(pacer_signal signal)
{
    switch (signal) {
    case PACER_SIGNAL_LOGS: return "/v1/logs";
    case PACER_SIGNAL_METRICS: return "/v1/metrics";
    default: return "/v1/traces";
    }
}

pacer_signal otlp_signal_of(const pacer_record *r)
{
    const pacer_record_type *t = pacer_record_type_of(r);
    return t ? t->signal : PACER_SIGNAL_TRACES;
}

/* What is being encoded: the record, and whether its values are still
 * those of the typed record (the JSON round trip's effects to apply) or
 * already read back from a spooled line. */
typedef struct enc {
    pbuf *b;
    bool typed;
} enc;

/* An MS field's nanoseconds as the record read back has them. */
static int64_t ms_ns(const enc *e, const pacer_record *r, unsigned i)
{
    int64_t ns = pacer_record_int(r, i), back;
    if (!e->typed)
        return ns;
    return record_ms_reread(ns, &back) ? back : ns; /* refused ones never get here (record_check) */
}

/* A string as the record read back has it: valid UTF-8. Returns s, or a
 * malloc'd copy also in *tofree ("" when out of memory). */
static const char *clean(const char *s, char **tofree)
{
    *tofree = NULL;
    size_t n = s ? strlen(s) : 0;
    if (!s || utf8_valid(s, n))
        return s;
    char *c = malloc(3 * n + 1);
    if (!c)
        return "";
    c[pb_utf8_clean(s, n, c)] = '\0';
    *tofree = c;
    return c;
}

/* ---- attribute values ---- */

/* Opens KeyValue `key` (in field `af` of its holder) and its AnyValue;
 * returns the marks for kv_close. */
static void kv_open(pbuf *b, unsigned af, const char *key, size_t marks[2])
{
    marks[0] = pb_open(b, af);
    pb_cstr(b, KV_KEY, key);
    marks[1] = pb_open(b, KV_VALUE);
}

static void kv_close(pbuf *b, const size_t marks[2])
{
    pb_close(b, marks[1]);
    pb_close(b, marks[0]);
}

static void attr_str(pbuf *b, unsigned af, const char *key, const char *v)
{
    size_t m[2];
    kv_open(b, af, key, m);
    pb_cstr(b, AV_STRING, v);
    kv_close(b, m);
}

static void attr_int(pbuf *b, unsigned af, const char *key, int64_t v)
{
    size_t m[2];
    kv_open(b, af, key, m);
    pb_uint(b, AV_INT, (uint64_t)v);
    kv_close(b, m);
}

static void attr_double(pbuf *b, unsigned af, const char *key, double v)
{
    size_t m[2];
    kv_open(b, af, key, m);
    pb_double(b, AV_DOUBLE, v);
    kv_close(b, m);
}

/* A duration, in ms to the microsecond, as the records file has it: the
 * record's own precision (docs/records.md), not the clock's nanoseconds. */
static void attr_ms(pbuf *b, unsigned af, const char *key, int64_t ns)
{
    attr_double(b, af, key, record_ms_value(ns));
}

/* ns to the nearest microsecond, halves away from zero (as jbuf_ms);
 * within 1 us of the int64 range's ends, unchanged. */
static int64_t to_us(int64_t ns)
{
    if (ns > INT64_MAX - 1000 || ns < INT64_MIN + 1000)
        return ns;
    int64_t a = ns < 0 ? -ns : ns;
    a = (a / 1000 + (a % 1000 >= 500)) * 1000;
    return ns < 0 ? -a : a;
}

static void attr_bool(pbuf *b, unsigned af, const char *key, bool v)
{
    size_t m[2];
    kv_open(b, af, key, m);
    pb_uint(b, AV_BOOL, v);
    kv_close(b, m);
}

/* "pacer.<name>" (and ".<sub>" for an object's field). */
static void attr_name(char *out, size_t cap, const char *name, const char *sub)
{
    snprintf(out, cap, "pacer.%s%s%s", name, sub ? "." : "", sub ? sub : "");
}

/* One set scalar field as attribute pacer.<object.><name>. */
static void attr_field(const enc *e, unsigned af, const pacer_record *r, unsigned i, const char *object)
{
    pbuf *b = e->b;
    const pacer_field *f = &pacer_record_shape(r)->fields[i];
    char key[256];
    if (object)
        attr_name(key, sizeof(key), object, f->name);
    else
        attr_name(key, sizeof(key), f->name, NULL);
    const char *keys[2] = {key, object ? NULL : f->semconv};
    for (int k = 0; k < 2 && keys[k]; k++) {
        switch (f->type) {
        case PACER_TYPE_STRING: attr_str(b, af, keys[k], pacer_record_str(r, i)); break;
        case PACER_TYPE_INT: attr_int(b, af, keys[k], pacer_record_int(r, i)); break;
        case PACER_TYPE_ID: /* an id: its 64 bits, as OTLP has no unsigned integers */
            attr_int(b, af, keys[k], (int64_t)pacer_record_u64(r, i));
            break;
        case PACER_TYPE_MS: attr_ms(b, af, keys[k], ms_ns(e, r, i)); break;
        case PACER_TYPE_BOOL: attr_bool(b, af, keys[k], pacer_record_int(r, i) != 0); break;
        case PACER_TYPE_STRINGS: {
            size_t m[2];
            kv_open(b, af, keys[k], m);
            size_t arr = pb_open(b, AV_ARRAY);
            for (size_t j = 0; j < pacer_record_count(r, i); j++) {
                size_t v = pb_open(b, ARRAY_VALUES);
                pb_cstr(b, AV_STRING, pacer_record_str_at(r, i, j));
                pb_close(b, v);
            }
            pb_close(b, arr);
            kv_close(b, m);
            break;
        }
        default: break;
        }
    }
}

/* The host of a URL ("https://user@host:8080/x" → "host"), or false. */
static bool url_host(const char *url, char *out, size_t cap)
{
    const char *p = strstr(url, "://");
    if (!p)
        return false;
    p += 3;
    size_t n = strcspn(p, "/?#");
    const char *at = memchr(p, '@', n);
    if (at) {
        n -= (size_t)(at + 1 - p);
        p = at + 1;
    }
    size_t host = n;
    if (*p == '[') { /* [v6]:port */
        const char *close = memchr(p, ']', n);
        host = close ? (size_t)(close - p + 1) : n;
    } else {
        const char *colon = memchr(p, ':', n);
        if (colon)
            host = (size_t)(colon - p);
    }
    if (!host || host >= cap)
        return false;
    memcpy(out, p, host);
    out[host] = '\0';
    return true;
}

/* Attributes of every set scalar field, of nested objects' fields, and of
 * the URL's host; lists are left to the caller. only_dimensions: 1, the
 * DIMENSION fields only (a metric point's); -1, all. */
static void attrs_of_fields(const enc *e, unsigned af, const pacer_record *r, int only_dimensions)
{
    const pacer_shape *sh = pacer_record_shape(r);
    for (unsigned i = 0; i < sh->n_fields; i++) {
        const pacer_field *f = &sh->fields[i];
        if (!pacer_record_has(r, i))
            continue;
        if (only_dimensions >= 0 && (only_dimensions != 0) != ((f->flags & PACER_FIELD_DIMENSION) != 0))
            continue;
        if (f->type == PACER_TYPE_LIST)
            continue;
        if (f->type == PACER_TYPE_OBJECT) {
            const pacer_record *o = pacer_record_child(r, i);
            for (unsigned k = 0; k < pacer_record_shape(o)->n_fields; k++)
                if (pacer_record_has(o, k) && pacer_record_shape(o)->fields[k].type != PACER_TYPE_LIST &&
                    pacer_record_shape(o)->fields[k].type != PACER_TYPE_OBJECT)
                    attr_field(e, af, o, k, f->name);
            continue;
        }
        attr_field(e, af, r, i, NULL);
        if (f->flags & PACER_FIELD_URL) {
            char host[256], *tofree;
            if (url_host(clean(pacer_record_str(r, i), &tofree), host, sizeof(host)))
                attr_str(e->b, af, "server.address", host);
            free(tofree);
        }
    }
}

/* ---- members the schema does not name ---- */

/* A scalar JSON value as an attribute, by its JSON type. */
static void attr_json(pbuf *b, unsigned af, const char *key, const jvalue *v)
{
    int64_t i;
    double d;
    if (v->type == JT_STRING)
        attr_str(b, af, key, v->s);
    else if (v->type == JT_TRUE || v->type == JT_FALSE)
        attr_bool(b, af, key, v->type == JT_TRUE);
    else if (v->type == JT_NUMBER && v->integer && jvalue_int64(v, &i))
        attr_int(b, af, key, i);
    else if (v->type == JT_NUMBER && jvalue_double(v, &d))
        attr_double(b, af, key, d);
}

/* The scalar members of the object at the reader, as attributes
 * <prefix><member>. */
static void attrs_of_object(pbuf *b, unsigned af, jread *r, const char *prefix)
{
    const char *key;
    size_t kl;
    jvalue v;
    if (!jread_enter_object(r))
        return;
    while (jread_member(r, &key, &kl) > 0 && jread_value(r, &v)) {
        char an[512];
        snprintf(an, sizeof(an), "%s%.*s", prefix, (int)(kl > 200 ? 200 : kl), key);
        attr_json(b, af, an, &v);
    }
}

/* Walks the extra members (the inside of an object): scalars → pacer.<k>;
 * an object's scalars → pacer.<k>.<k2>; on spans (events != NULL) an array
 * of objects → one event per object at event_time, named by <k> without its
 * final 's'. The members are JSON text (pacer_record_extra): the one text
 * the encoder reads, for custom records only. */
static void attrs_of_extra(pbuf *b, unsigned af, const char *extra, pbuf *events, uint64_t event_time)
{
    if (!extra)
        return;
    size_t n = strlen(extra);
    char *text = malloc(n + 3);
    if (!text) {
        b->failed = true;
        return;
    }
    text[0] = '{';
    memcpy(text + 1, extra, n);
    text[n + 1] = '}';
    jread r;
    jread_init(&r, text, n + 2, NULL, 0);
    const char *key;
    size_t kl;
    jread_enter_object(&r);
    while (jread_member(&r, &key, &kl) > 0) {
        char name[256], prefix[272];
        snprintf(name, sizeof(name), "%.*s", (int)(kl > 200 ? 200 : kl), key);
        jtype t = jread_peek(&r);
        jvalue v;
        if (t == JT_OBJECT) {
            snprintf(prefix, sizeof(prefix), "pacer.%s.", name);
            attrs_of_object(b, af, &r, prefix);
        } else if (t == JT_ARRAY && events && jread_enter_array(&r)) {
            size_t l = strlen(name);
            if (l > 1 && name[l - 1] == 's')
                name[l - 1] = '\0';
            while (jread_element(&r) > 0) {
                if (jread_peek(&r) != JT_OBJECT) {
                    jread_value(&r, &v);
                    continue;
                }
                size_t ev = pb_open(events, SPAN_EVENTS);
                pb_fixed64(events, EVENT_TIME, event_time);
                pb_cstr(events, EVENT_NAME, name);
                attrs_of_object(events, EVENT_ATTRS, &r, "pacer.");
                pb_close(events, ev);
            }
        } else if (jread_value(&r, &v)) {
            snprintf(prefix, sizeof(prefix), "pacer.%s", name);
            attr_json(b, af, prefix, &v);
        }
    }
    free(text);
}

/* ---- items ---- */

/* The span's length: the first SPAN_END field present, else the longest
 * SPAN_FALLBACK one, else 0; to the microsecond, as its attribute. */
static int64_t span_ns(const enc *e, const pacer_record *r)
{
    const pacer_shape *sh = pacer_record_shape(r);
    int64_t fallback = 0;
    for (unsigned i = 0; i < sh->n_fields; i++) {
        if (!pacer_record_has(r, i))
            continue;
        if (sh->fields[i].flags & PACER_FIELD_SPAN_END)
            return to_us(ms_ns(e, r, i));
        if ((sh->fields[i].flags & PACER_FIELD_SPAN_FALLBACK) && ms_ns(e, r, i) > fallback)
            fallback = ms_ns(e, r, i);
    }
    return to_us(fallback);
}

/* "page ShopHomeWindow", "startup cold", "GET /api/list", or the type. */
static void span_name(const pacer_record *r, char *out, size_t cap)
{
    const pacer_record_type *t = pacer_record_type_of(r);
    const pacer_shape *sh = pacer_record_shape(r);
    size_t o = 0;
    char *tofree;
    out[0] = '\0';
    if (t && t->span_prefix)
        o += (size_t)snprintf(out, cap, "%s", t->span_prefix);
    for (unsigned i = 0; i < sh->n_fields && o < cap; i++) {
        const pacer_field *f = &sh->fields[i];
        if (!(f->flags & PACER_FIELD_NAME))
            continue;
        const char *s = clean(pacer_record_str(r, i), &tofree);
        size_t n = s ? strlen(s) : 0;
        if (s && (f->flags & PACER_FIELD_URL))
            n = url_path(s, &s);
        if (s)
            o += (size_t)snprintf(out + o, cap - o, "%s%.*s", o ? " " : "", (int)n, s);
        free(tofree);
    }
    if (!out[0]) {
        snprintf(out, cap, "%s", clean(pacer_record_type_name(r), &tofree));
        free(tofree);
    }
}

static bool has_url(const pacer_record *r)
{
    const pacer_shape *sh = pacer_record_shape(r);
    for (unsigned i = 0; i < sh->n_fields; i++)
        if (sh->fields[i].flags & PACER_FIELD_URL)
            return true;
    return false;
}

/* A span, but for its ids (the batch's): fields 5 on. */
static void span_item(const enc *e, const pacer_record *r)
{
    pbuf *b = e->b;
    char name[512];
    span_name(r, name, sizeof(name));
    uint64_t start = (uint64_t)pacer_record_ts(r);
    pb_cstr(b, SPAN_NAME, name);
    pb_uint(b, SPAN_KIND, has_url(r) ? 3 : 1); /* CLIENT for requests, else INTERNAL */
    pb_fixed64(b, SPAN_START, start);
    pb_fixed64(b, SPAN_END, start + (uint64_t)span_ns(e, r));
    pbuf events = {0};
    attr_str(b, SPAN_ATTRS, "pacer.type", pacer_record_type_name(r));
    attrs_of_fields(e, SPAN_ATTRS, r, -1);
    attrs_of_extra(b, SPAN_ATTRS, pacer_record_extra(r), &events, start);

    /* lists: one event per element, named by the list without its final 's' */
    const pacer_shape *sh = pacer_record_shape(r);
    for (unsigned i = 0; i < sh->n_fields; i++) {
        if (sh->fields[i].type != PACER_TYPE_LIST)
            continue;
        char ev_name[128];
        snprintf(ev_name, sizeof(ev_name), "%s", sh->fields[i].name);
        size_t l = strlen(ev_name);
        if (l > 1 && ev_name[l - 1] == 's')
            ev_name[l - 1] = '\0';
        enc ee = {&events, e->typed};
        for (const pacer_record *el = pacer_record_child(r, i); el; el = pacer_record_next(el)) {
            size_t ev = pb_open(&events, SPAN_EVENTS);
            pb_fixed64(&events, EVENT_TIME, start);
            pb_cstr(&events, EVENT_NAME, ev_name);
            attrs_of_fields(&ee, EVENT_ATTRS, el, -1);
            pb_close(&events, ev);
        }
    }
    pb_raw(b, events.p, events.len);
    b->failed |= events.failed;
    pb_free(&events);
}

static void log_item(const enc *e, const pacer_record *r, const char *line, size_t len)
{
    pbuf *b = e->b;
    uint64_t ts = (uint64_t)pacer_record_ts(r);
    pb_fixed64(b, LOG_TIME, ts);
    pb_uint(b, LOG_SEVERITY, 13);
    pb_cstr(b, LOG_SEVERITY_TEXT, "WARN");
    size_t body = pb_open(b, LOG_BODY);
    pb_string(b, AV_STRING, line, len); /* the whole record, lists included */
    pb_close(b, body);
    attr_str(b, LOG_ATTRS, "pacer.type", pacer_record_type_name(r));
    attrs_of_fields(e, LOG_ATTRS, r, -1);
    attrs_of_extra(b, LOG_ATTRS, pacer_record_extra(r), NULL, 0);
    pb_fixed64(b, LOG_OBSERVED, ts); /* last: fields in number order */
}

/* A list element a point belongs to: its list's name, its index, the
 * element (whose strings name the point). */
typedef struct point_of {
    const char *list;
    size_t index;
    const pacer_record *el;
} point_of;

static void metric(const enc *e, const pacer_record *r, const char *name, const pacer_field *f,
                   const pacer_record *holder, unsigned i, const point_of *of)
{
    pbuf *b = e->b;
    size_t m = pb_open(b, SCOPE_ITEMS);
    pb_cstr(b, METRIC_NAME, name);
    if (f->unit)
        pb_cstr(b, METRIC_UNIT, strcmp(f->unit, "count") == 0 ? "1" : f->unit);
    size_t gauge = pb_open(b, METRIC_GAUGE);
    size_t point = pb_open(b, GAUGE_POINTS);
    pb_fixed64(b, POINT_TIME, (uint64_t)pacer_record_ts(r));
    if (f->type == PACER_TYPE_MS)
        pb_double(b, POINT_DOUBLE, record_ms_value(ms_ns(e, holder, i)));
    else
        pb_fixed64(b, POINT_INT, (uint64_t)pacer_record_int(holder, i));
    attrs_of_fields(e, POINT_ATTRS, r, 1);
    if (of) {
        char key[256];
        attr_name(key, sizeof(key), of->list, "index");
        attr_int(b, POINT_ATTRS, key, (int64_t)of->index);
        const pacer_shape *es = pacer_record_shape(of->el);
        for (unsigned k = 0; k < es->n_fields; k++)
            if (pacer_record_has(of->el, k) && es->fields[k].type == PACER_TYPE_STRING)
                attr_field(e, POINT_ATTRS, of->el, k, of->list);
    }
    pb_close(b, point);
    pb_close(b, gauge);
    pb_close(b, m);
}

/* The gauges of the numbers of `holder` (the record, or an element of one
 * of its lists: `of`) and of its objects, named <prefix>.<field>. */
static void metrics_of(const enc *e, const pacer_record *r, const char *prefix, const pacer_record *holder,
                       const point_of *of)
{
    const pacer_shape *sh = pacer_record_shape(holder);
    for (unsigned i = 0; i < sh->n_fields; i++) {
        const pacer_field *f = &sh->fields[i];
        if (!pacer_record_has(holder, i) || (f->flags & PACER_FIELD_DIMENSION))
            continue;
        char name[256];
        if (f->type == PACER_TYPE_INT || f->type == PACER_TYPE_MS) {
            snprintf(name, sizeof(name), "%s.%s", prefix, f->name);
            metric(e, r, name, f, holder, i, of);
        } else if (f->type == PACER_TYPE_OBJECT) {
            const pacer_record *o = pacer_record_child(holder, i);
            const pacer_shape *os = pacer_record_shape(o);
            for (unsigned k = 0; k < os->n_fields; k++) {
                const pacer_field *of_f = &os->fields[k];
                if (!pacer_record_has(o, k) || (of_f->type != PACER_TYPE_INT && of_f->type != PACER_TYPE_MS))
                    continue;
                snprintf(name, sizeof(name), "%s.%s.%s", prefix, f->name, of_f->name);
                metric(e, r, name, of_f, o, k, of);
            }
        } else if (f->type == PACER_TYPE_LIST && !of) {
            snprintf(name, sizeof(name), "%s.%s", prefix, f->name);
            size_t n = 0;
            for (const pacer_record *el = pacer_record_child(holder, i); el; el = pacer_record_next(el), n++) {
                point_of at = {f->name, n, el};
                metrics_of(e, r, name, el, &at);
            }
        }
    }
}

/* A metrics record: a gauge per numeric field that is not a dimension (and
 * per numeric field of its objects), with the dimensions as attributes; a
 * list's elements: a gauge per number of each (pacer.<type>.<list>.<field>),
 * its point named by the element's index (pacer.<list>.index) and its
 * strings (pacer.<list>.<field>). */
static void metrics_item(const enc *e, const pacer_record *r)
{
    char prefix[128];
    snprintf(prefix, sizeof(prefix), "pacer.%s", pacer_record_type_name(r));
    metrics_of(e, r, prefix, r, NULL);
}

/* The item of record r as `signal` (the batch's, which is r's own for a
 * record the writer spooled). */
static void item(const enc *e, pacer_signal signal, const pacer_record *r, const char *line, size_t len)
{
    if (signal == PACER_SIGNAL_TRACES)
        span_item(e, r);
    else if (signal == PACER_SIGNAL_LOGS)
        log_item(e, r, line, len);
    else
        metrics_item(e, r);
}

int otlp_spool_body(const pacer_record *r, const char *line, size_t len, pbuf *out)
{
    pb_reset(out);
    if (record_check(r) < 0 || pacer_record_ts(r) < 0)
        return -EINVAL;
    /* the JSON line writes an absent app, version or session as "" */
    static const unsigned run[3] = {PACER_COMMON_APP, PACER_COMMON_VERSION, PACER_COMMON_SESSION};
    for (int k = 0; k < 3; k++) {
        const char *s = pacer_record_common(r, run[k]);
        pb_cstr(out, SPOOLED_APP + (unsigned)k, s ? s : "");
    }
    pb_uint(out, SPOOLED_PID, (uint64_t)pacer_record_pid(r));
    size_t mark = pb_open(out, SPOOLED_ITEM);
    enc e = {out, true};
    item(&e, otlp_signal_of(r), r, line, len);
    pb_close(out, mark);
    return out->failed ? -ENOMEM : 0;
}

/* ---- requests ---- */

/* One record of a batch, ready to be placed. */
typedef struct entry {
    bool ok;
    const char *run[3]; /* app, version, session: NULL when absent (a JSON line without them) */
    int64_t pid;
    const uint8_t *item; /* NULL: in `scratch` at off (a JSON line's, encoded here) */
    size_t off, len;
    int group;          /* index of the first entry of its run */
} entry;

/* Reads a SpooledRecord: false for bytes otlp_spool_body did not write. */
static bool read_body(pacer_signal signal, const uint8_t *p, size_t n, entry *e, char *strs)
{
    const uint8_t *end = p + n;
    unsigned seen = 0;
    while (p < end) {
        uint64_t key, v;
        if (!pb_read_varint(&p, end, &key))
            return false;
        unsigned f = (unsigned)(key >> 3);
        if (f < SPOOLED_APP || f > SPOOLED_ITEM || (seen & (1u << f)))
            return false;
        seen |= 1u << f;
        if (f == SPOOLED_PID) {
            if ((key & 7) != PB_VARINT || !pb_read_varint(&p, end, &v))
                return false;
            e->pid = (int64_t)v;
            continue;
        }
        if ((key & 7) != PB_LEN || !pb_read_varint(&p, end, &v) || v > (uint64_t)(end - p))
            return false;
        if (f == SPOOLED_ITEM) {
            e->item = p;
            e->len = v;
        } else {
            /* the strings, NUL-terminated, into strs (as long as the body) */
            if (memchr(p, 0, v) || !utf8_valid((const char *)p, v))
                return false;
            memcpy(strs, p, v);
            strs[v] = '\0';
            e->run[f - SPOOLED_APP] = strs;
            strs += v + 1;
        }
        p += v;
    }
    return (seen >> SPOOLED_APP & 31) == 31 && otlp_proto_check(signal, e->item, e->len);
}

static bool same_run(const entry *a, const entry *b)
{
    for (int k = 0; k < 3; k++)
        if (strcmp(a->run[k] ? a->run[k] : "", b->run[k] ? b->run[k] : "") != 0)
            return false;
    return a->pid == b->pid;
}

static uint64_t id_hash(const char *batch_id, uint64_t seed, size_t index)
{
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)((uint64_t)index >> (8 * i));
    return fnv1a64(fnv1a64_str(batch_id, seed), le, sizeof(le));
}

static void put_be64(uint8_t *out, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)(v >> (56 - 8 * i));
}

static void resource(pbuf *b, const entry *e, int64_t spool_dropped)
{
    size_t res = pb_open(b, RES_RESOURCE);
    attr_str(b, RESOURCE_ATTRS, "service.name", e->run[0] ? e->run[0] : "unknown");
    attr_str(b, RESOURCE_ATTRS, "service.version", e->run[1] ? e->run[1] : "unknown");
    attr_str(b, RESOURCE_ATTRS, "pacer.session", e->run[2] ? e->run[2] : "");
    attr_int(b, RESOURCE_ATTRS, "process.pid", e->pid);
    attr_str(b, RESOURCE_ATTRS, "telemetry.sdk.name", "pacer");
    attr_str(b, RESOURCE_ATTRS, "telemetry.sdk.version", PACER_VERSION);
    attr_int(b, RESOURCE_ATTRS, "pacer.spool.dropped", spool_dropped);
    pb_close(b, res);
}

/* Reads the batch's records into entries: OTLP bodies in place, JSON lines
 * read back and encoded into `scratch`. Returns the number skipped. */
static size_t read_entries(const spool_batch *b, entry *ents, pacer_record **recs, char *strs, pbuf *scratch)
{
    size_t skipped = 0;
    for (size_t i = 0; i < b->n; i++) {
        entry *e = &ents[i];
        if (b->form == SPOOL_OTLP) {
            e->ok = read_body(b->signal, (const uint8_t *)b->records[i], b->lens[i], e, strs);
            strs += b->lens[i] + 1;
        } else if (pacer_record_parse(b->records[i], strlen(b->records[i]), &recs[i], NULL, 0) == 0 &&
                   pacer_record_ts(recs[i]) >= 0) {
            static const unsigned run[3] = {PACER_COMMON_APP, PACER_COMMON_VERSION, PACER_COMMON_SESSION};
            for (int k = 0; k < 3; k++)
                e->run[k] = pacer_record_common(recs[i], run[k]);
            e->pid = pacer_record_pid(recs[i]);
            e->off = scratch->len;
            enc en = {scratch, false};
            item(&en, b->signal, recs[i], b->records[i], strlen(b->records[i]));
            e->len = scratch->len - e->off;
            e->ok = true;
        }
        if (!e->ok)
            skipped++;
    }
    return skipped;
}

uint8_t *otlp_request(const spool_batch *b, int64_t spool_dropped, bool json, size_t *ret_len, size_t *ret_skipped)
{
    size_t n = b->n, strs_len = 1;
    for (size_t i = 0; i < n && b->form == SPOOL_OTLP; i++)
        strs_len += b->lens[i] + 1;
    entry *ents = calloc(n ? n : 1, sizeof(*ents));
    pacer_record **recs = calloc(n ? n : 1, sizeof(*recs));
    char *strs = malloc(strs_len);
    pbuf scratch = {0}, out = {0};
    uint8_t *body = NULL;
    if (!ents || !recs || !strs)
        goto done;
    size_t skipped = read_entries(b, ents, recs, strs, &scratch);
    if (scratch.failed)
        goto done;
    for (size_t i = 0; i < n; i++) {
        if (!ents[i].ok)
            continue;
        if (!ents[i].item) /* an empty item leaves scratch without memory */
            ents[i].item = scratch.p ? scratch.p + ents[i].off : (const uint8_t *)"";
        ents[i].group = (int)i;
        for (size_t j = 0; j < i; j++)
            if (ents[j].ok && ents[j].group == (int)j && same_run(&ents[j], &ents[i])) {
                ents[i].group = (int)j;
                break;
            }
    }
    for (size_t g = 0; g < n; g++) {
        if (!ents[g].ok || ents[g].group != (int)g)
            continue;
        size_t rm = pb_open(&out, REQ_RESOURCE_ITEMS);
        resource(&out, &ents[g], spool_dropped);
        size_t sm = pb_open(&out, RES_SCOPE_ITEMS);
        size_t sc = pb_open(&out, SCOPE_SCOPE);
        pb_cstr(&out, SCOPE_NAME, "pacer");
        pb_cstr(&out, SCOPE_VERSION, PACER_VERSION);
        pb_close(&out, sc);
        for (size_t i = g; i < n; i++) {
            const entry *e = &ents[i];
            if (!e->ok || e->group != (int)g)
                continue;
            if (b->signal == PACER_SIGNAL_TRACES) {
                /* Every record is a trace of one span: its span id is the
                 * trace id's low half (random, unique in its trace), which a
                 * store can leave out and make again (store_ch_layout.c
                 * keeps 8 zero bytes for it). */
                uint8_t ids[24];
                uint64_t low = id_hash(b->id, 2, i);
                put_be64(ids, id_hash(b->id, 1, i));
                put_be64(ids + 8, low);
                put_be64(ids + 16, low);
                size_t sp = pb_open(&out, SCOPE_ITEMS);
                pb_bytes(&out, SPAN_TRACE_ID, ids, 16);
                pb_bytes(&out, SPAN_SPAN_ID, ids + 16, 8);
                pb_raw(&out, e->item, e->len);
                pb_close(&out, sp);
            } else if (b->signal == PACER_SIGNAL_LOGS) {
                pb_bytes(&out, SCOPE_ITEMS, e->item, e->len);
            } else {
                pb_raw(&out, e->item, e->len); /* Metric messages, framed */
            }
        }
        pb_close(&out, sm);
        pb_close(&out, rm);
    }
    size_t len;
    body = pb_steal(&out, &len);
    if (body && json) {
        char *text = otlp_proto_to_json(b->signal, body, len, &len);
        free(body);
        body = (uint8_t *)text;
    }
    if (body) {
        if (ret_len)
            *ret_len = len;
        if (ret_skipped)
            *ret_skipped = skipped;
    }
done:
    for (size_t i = 0; recs && i < n; i++)
        pacer_record_free(recs[i]);
    free(recs);
    free(ents);
    free(strs);
    pb_free(&scratch);
    pb_free(&out);
    return body;
}
