/* The reference: records → OTLP/HTTP JSON as the uploader wrote them
 * before it built protobuf from the record (src/core/otlp.c), kept as it
 * was. The unit tests hold the uploader's requests to what this path
 * gives after otlp_json_to_proto, for every record type of the schema;
 * bench-upload counts what it cost.
 *
 * Every spooled line is read back as a record (pacer_record_parse) and
 * written from the schema: a field f is the attribute pacer.<f> (and its
 * semantic-convention name when the schema gives one), a nested object's
 * field k is pacer.<f>.<k>, a list becomes span events. Members the schema
 * does not name (custom records, pacer_emit) are mapped the same way by
 * their JSON type. Records are grouped by their run (app, version,
 * session, pid): one resource entry each, in order of first appearance.
 */
#include "otlp_ref.h"

#include "url.h"

#include <pacer/pacer.h>

#include <pacer/base/hash.h>
#include <pacer/base/json.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- attribute values ---- */

static void kv_open(jbuf *b, const char *key, const char *key2)
{
    jbuf_open(b, '{');
    jbuf_key(b, "key");
    if (key2) {
        char name[256];
        snprintf(name, sizeof(name), "%s%s", key, key2);
        jbuf_str(b, name);
    } else {
        jbuf_str(b, key);
    }
    jbuf_key(b, "value");
    jbuf_open(b, '{');
}

static void kv_close(jbuf *b)
{
    jbuf_close(b, '}');
    jbuf_close(b, '}');
}

static void attr_str(jbuf *b, const char *key, const char *sub, const char *v)
{
    kv_open(b, key, sub);
    jbuf_kv_str(b, "stringValue", v);
    kv_close(b);
}

static void attr_int(jbuf *b, const char *key, const char *sub, int64_t v)
{
    char num[24];
    snprintf(num, sizeof(num), "%" PRId64, v);
    kv_open(b, key, sub);
    jbuf_kv_str(b, "intValue", num); /* 64-bit integers are strings in OTLP JSON */
    kv_close(b);
}

static void attr_double(jbuf *b, const char *key, const char *sub, double v)
{
    kv_open(b, key, sub);
    jbuf_kv_double(b, "doubleValue", v);
    kv_close(b);
}

/* A duration, in ms to the microsecond, as the records file has it: the
 * record's own precision (docs/records.md), not the clock's nanoseconds. */
static void attr_ms(jbuf *b, const char *key, const char *sub, int64_t ns)
{
    kv_open(b, key, sub);
    jbuf_kv_ms(b, "doubleValue", ns);
    kv_close(b);
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

static void attr_bool(jbuf *b, const char *key, const char *sub, bool v)
{
    kv_open(b, key, sub);
    jbuf_kv_bool(b, "boolValue", v);
    kv_close(b);
}

/* "pacer.<name>" (and ".<sub>" for an object's field). */
static void attr_name(char *out, size_t cap, const char *name, const char *sub)
{
    snprintf(out, cap, "pacer.%s%s%s", name, sub ? "." : "", sub ? sub : "");
}

/* One set scalar field as attribute pacer.<prefix><name>. */
static void attr_field(jbuf *b, const pacer_record *r, unsigned i, const char *object)
{
    const pacer_field *f = &pacer_record_shape(r)->fields[i];
    char key[256];
    if (object)
        attr_name(key, sizeof(key), object, f->name);
    else
        attr_name(key, sizeof(key), f->name, NULL);
    const char *keys[2] = {key, object ? NULL : f->semconv};
    for (int k = 0; k < 2 && keys[k]; k++) {
        switch (f->type) {
        case PACER_TYPE_STRING: attr_str(b, keys[k], NULL, pacer_record_str(r, i)); break;
        case PACER_TYPE_INT: attr_int(b, keys[k], NULL, pacer_record_int(r, i)); break;
        case PACER_TYPE_ID: /* an id: its 64 bits, as OTLP has no unsigned integers */
            attr_int(b, keys[k], NULL, (int64_t)pacer_record_u64(r, i));
            break;
        case PACER_TYPE_MS: attr_ms(b, keys[k], NULL, pacer_record_int(r, i)); break;
        case PACER_TYPE_BOOL: attr_bool(b, keys[k], NULL, pacer_record_int(r, i) != 0); break;
        case PACER_TYPE_STRINGS:
            kv_open(b, keys[k], NULL);
            jbuf_key(b, "arrayValue");
            jbuf_open(b, '{');
            jbuf_key(b, "values");
            jbuf_open(b, '[');
            for (size_t j = 0; j < pacer_record_count(r, i); j++) {
                jbuf_open(b, '{');
                jbuf_kv_str(b, "stringValue", pacer_record_str_at(r, i, j));
                jbuf_close(b, '}');
            }
            jbuf_close(b, ']');
            jbuf_close(b, '}');
            kv_close(b);
            break;
        default: break;
        }
    }
}

/* The host of a URL ("https://user@host:8080/x" → "host"), or NULL. */
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
 * the URL's host; lists are left to the caller. Dimensions only when
 * `dimensions` is true; metrics records pass their points elsewhere. */
static void attrs_of_fields(jbuf *b, const pacer_record *r, int only_dimensions)
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
                    attr_field(b, o, k, f->name);
            continue;
        }
        attr_field(b, r, i, NULL);
        char host[256];
        if ((f->flags & PACER_FIELD_URL) && url_host(pacer_record_str(r, i), host, sizeof(host)))
            attr_str(b, "server.address", NULL, host);
    }
}

/* ---- members the schema does not name ---- */

/* A scalar JSON value as an attribute, by its JSON type. */
static void attr_json(jbuf *b, const char *key, const jvalue *v)
{
    int64_t i;
    double d;
    if (v->type == JT_STRING)
        attr_str(b, key, NULL, v->s);
    else if (v->type == JT_TRUE || v->type == JT_FALSE)
        attr_bool(b, key, NULL, v->type == JT_TRUE);
    else if (v->type == JT_NUMBER && v->integer && jvalue_int64(v, &i))
        attr_int(b, key, NULL, i);
    else if (v->type == JT_NUMBER && jvalue_double(v, &d))
        attr_double(b, key, NULL, d);
}

/* The scalar members of the object at the reader, as attributes
 * <prefix><member>. */
static void attrs_of_object(jbuf *b, jread *r, const char *prefix)
{
    const char *key;
    size_t kl;
    jvalue v;
    if (!jread_enter_object(r))
        return;
    while (jread_member(r, &key, &kl) > 0 && jread_value(r, &v)) {
        char an[512];
        snprintf(an, sizeof(an), "%s%.*s", prefix, (int)(kl > 200 ? 200 : kl), key);
        attr_json(b, an, &v);
    }
}

/* Walks the extra members (the inside of an object): scalars → pacer.<k>;
 * an object's scalars → pacer.<k>.<k2>; on spans (events != NULL) an array
 * of objects → one event per object, named by <k> without its final 's'. */
static void attrs_of_extra(jbuf *b, const char *extra, jbuf *events, const char *event_time)
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
            attrs_of_object(b, &r, prefix);
        } else if (t == JT_ARRAY && events && jread_enter_array(&r)) {
            size_t l = strlen(name);
            if (l > 1 && name[l - 1] == 's')
                name[l - 1] = '\0';
            while (jread_element(&r) > 0) {
                if (jread_peek(&r) != JT_OBJECT) {
                    jread_value(&r, &v);
                    continue;
                }
                jbuf_open(events, '{');
                jbuf_kv_str(events, "timeUnixNano", event_time);
                jbuf_kv_str(events, "name", name);
                jbuf_key(events, "attributes");
                jbuf_open(events, '[');
                attrs_of_object(events, &r, "pacer.");
                jbuf_close(events, ']');
                jbuf_close(events, '}');
            }
        } else if (jread_value(&r, &v)) {
            snprintf(prefix, sizeof(prefix), "pacer.%s", name);
            attr_json(b, prefix, &v);
        }
    }
    free(text);
}

/* ---- items ---- */

static uint64_t id_hash(const char *batch_id, uint64_t seed, size_t index)
{
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)((uint64_t)index >> (8 * i));
    return fnv1a64(fnv1a64_str(batch_id, seed), le, sizeof(le));
}

/* The span's length: the first SPAN_END field present, else the longest
 * SPAN_FALLBACK one, else 0; to the microsecond, as its attribute. */
static int64_t span_ns(const pacer_record *r)
{
    const pacer_shape *sh = pacer_record_shape(r);
    int64_t fallback = 0;
    for (unsigned i = 0; i < sh->n_fields; i++) {
        if (!pacer_record_has(r, i))
            continue;
        if (sh->fields[i].flags & PACER_FIELD_SPAN_END)
            return to_us(pacer_record_int(r, i));
        if ((sh->fields[i].flags & PACER_FIELD_SPAN_FALLBACK) && pacer_record_int(r, i) > fallback)
            fallback = pacer_record_int(r, i);
    }
    return to_us(fallback);
}

/* "page ShopHomeWindow", "startup cold", "GET /api/list", or the type. */
static void span_name(const pacer_record *r, char *out, size_t cap)
{
    const pacer_record_type *t = pacer_record_type_of(r);
    const pacer_shape *sh = pacer_record_shape(r);
    size_t o = 0;
    out[0] = '\0';
    if (t && t->span_prefix)
        o += (size_t)snprintf(out, cap, "%s", t->span_prefix);
    for (unsigned i = 0; i < sh->n_fields && o < cap; i++) {
        const pacer_field *f = &sh->fields[i];
        if (!(f->flags & PACER_FIELD_NAME))
            continue;
        const char *s = pacer_record_str(r, i);
        size_t n = s ? strlen(s) : 0;
        if (s && (f->flags & PACER_FIELD_URL))
            n = url_path(s, &s);
        if (s)
            o += (size_t)snprintf(out + o, cap - o, "%s%.*s", o ? " " : "", (int)n, s);
    }
    if (!out[0])
        snprintf(out, cap, "%s", pacer_record_type_name(r));
}

static bool has_url(const pacer_record *r)
{
    const pacer_shape *sh = pacer_record_shape(r);
    for (unsigned i = 0; i < sh->n_fields; i++)
        if (sh->fields[i].flags & PACER_FIELD_URL)
            return true;
    return false;
}

static void type_attr(jbuf *b, const pacer_record *r)
{
    attr_str(b, "pacer.type", NULL, pacer_record_type_name(r));
}

static void write_span(jbuf *b, const pacer_record *r, const char *batch_id, size_t index)
{
    char name[512], tid[33], sid[17], start[24], end[24];
    span_name(r, name, sizeof(name));
    /* Every record is a trace of one span: its span id is the trace id's
     * low half (random, unique in its trace), which a store can leave out
     * and make again (store_ch_layout.c keeps 8 zero bytes for it). */
    uint64_t low = id_hash(batch_id, 2, index);
    snprintf(tid, sizeof(tid), "%016" PRIx64 "%016" PRIx64, id_hash(batch_id, 1, index), low);
    snprintf(sid, sizeof(sid), "%016" PRIx64, low);
    int64_t ts = pacer_record_ts(r);
    snprintf(start, sizeof(start), "%" PRId64, ts);
    /* the sum wraps past INT64_MAX, as the compiled code did (a negative
     * end that otlp_json_to_proto refuses), without signed overflow */
    snprintf(end, sizeof(end), "%" PRId64, (int64_t)((uint64_t)ts + (uint64_t)span_ns(r)));

    jbuf_open(b, '{');
    jbuf_kv_str(b, "traceId", tid);
    jbuf_kv_str(b, "spanId", sid);
    jbuf_kv_str(b, "name", name);
    jbuf_kv_i64(b, "kind", has_url(r) ? 3 : 1); /* CLIENT for requests, else INTERNAL */
    jbuf_kv_str(b, "startTimeUnixNano", start);
    jbuf_kv_str(b, "endTimeUnixNano", end);
    jbuf events;
    jbuf_init(&events);
    jbuf_key(b, "attributes");
    jbuf_open(b, '[');
    type_attr(b, r);
    attrs_of_fields(b, r, -1);
    attrs_of_extra(b, pacer_record_extra(r), &events, start);
    jbuf_close(b, ']');

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
        for (const pacer_record *e = pacer_record_child(r, i); e; e = pacer_record_next(e)) {
            jbuf_open(&events, '{');
            jbuf_kv_str(&events, "timeUnixNano", start);
            jbuf_kv_str(&events, "name", ev_name);
            jbuf_key(&events, "attributes");
            jbuf_open(&events, '[');
            attrs_of_fields(&events, e, -1);
            jbuf_close(&events, ']');
            jbuf_close(&events, '}');
        }
    }
    jbuf_key(b, "events");
    jbuf_open(b, '[');
    if (events.len)
        jbuf_raw(b, events.data, events.len);
    b->failed |= events.failed;
    jbuf_close(b, ']');
    jbuf_free(&events);
    jbuf_close(b, '}');
}

static void write_log(jbuf *b, const pacer_record *r, const char *line)
{
    char ts[24];
    snprintf(ts, sizeof(ts), "%" PRId64, pacer_record_ts(r));
    jbuf_open(b, '{');
    jbuf_kv_str(b, "timeUnixNano", ts);
    jbuf_kv_i64(b, "severityNumber", 13);
    jbuf_kv_str(b, "severityText", "WARN");
    jbuf_key(b, "body");
    jbuf_open(b, '{');
    jbuf_kv_str(b, "stringValue", line); /* the whole record, lists included */
    jbuf_close(b, '}');
    jbuf_key(b, "attributes");
    jbuf_open(b, '[');
    type_attr(b, r);
    attrs_of_fields(b, r, -1);
    attrs_of_extra(b, pacer_record_extra(r), NULL, NULL);
    jbuf_close(b, ']');
    jbuf_kv_str(b, "observedTimeUnixNano", ts); /* last: the members go in protobuf field order */
    jbuf_close(b, '}');
}

/* A point of a list's element: the list, the element's index, the element. */
typedef struct element_of {
    const char *list;
    size_t index;
    const pacer_record *el;
} element_of;

static void write_point(jbuf *b, const pacer_record *r, const char *metric, const pacer_field *f,
                        const pacer_record *holder, unsigned i, const char *ts, const element_of *of)
{
    jbuf_open(b, '{');
    jbuf_kv_str(b, "name", metric);
    if (f->unit)
        jbuf_kv_str(b, "unit", strcmp(f->unit, "count") == 0 ? "1" : f->unit);
    jbuf_key(b, "gauge");
    jbuf_open(b, '{');
    jbuf_key(b, "dataPoints");
    jbuf_open(b, '[');
    jbuf_open(b, '{');
    jbuf_kv_str(b, "timeUnixNano", ts);
    if (f->type == PACER_TYPE_MS) {
        jbuf_kv_ms(b, "asDouble", pacer_record_int(holder, i));
    } else {
        char num[24];
        snprintf(num, sizeof(num), "%" PRId64, pacer_record_int(holder, i));
        jbuf_kv_str(b, "asInt", num);
    }
    jbuf_key(b, "attributes");
    jbuf_open(b, '[');
    attrs_of_fields(b, r, 1);
    if (of) {
        char key[256];
        attr_name(key, sizeof(key), of->list, "index");
        attr_int(b, key, NULL, (int64_t)of->index);
        const pacer_shape *es = pacer_record_shape(of->el);
        for (unsigned k = 0; k < es->n_fields; k++)
            if (pacer_record_has(of->el, k) && es->fields[k].type == PACER_TYPE_STRING)
                attr_field(b, of->el, k, of->list);
    }
    jbuf_close(b, ']');
    jbuf_close(b, '}');
    jbuf_close(b, ']');
    jbuf_close(b, '}');
    jbuf_close(b, '}');
}

/* The points of `holder`'s numbers (the record's, or of an element of
 * one of its lists) and of its objects' numbers, named <prefix>.<field>. */
static void write_points(jbuf *b, const pacer_record *r, const char *prefix, const pacer_record *holder,
                         const char *ts, const element_of *of)
{
    const pacer_shape *sh = pacer_record_shape(holder);
    for (unsigned i = 0; i < sh->n_fields; i++) {
        const pacer_field *f = &sh->fields[i];
        if (!pacer_record_has(holder, i) || (f->flags & PACER_FIELD_DIMENSION))
            continue;
        char name[256];
        if (f->type == PACER_TYPE_INT || f->type == PACER_TYPE_MS) {
            snprintf(name, sizeof(name), "%s.%s", prefix, f->name);
            write_point(b, r, name, f, holder, i, ts, of);
        } else if (f->type == PACER_TYPE_OBJECT) {
            const pacer_record *o = pacer_record_child(holder, i);
            const pacer_shape *os = pacer_record_shape(o);
            for (unsigned k = 0; k < os->n_fields; k++) {
                const pacer_field *objf = &os->fields[k];
                if (!pacer_record_has(o, k) || (objf->type != PACER_TYPE_INT && objf->type != PACER_TYPE_MS))
                    continue;
                snprintf(name, sizeof(name), "%s.%s.%s", prefix, f->name, objf->name);
                write_point(b, r, name, objf, o, k, ts, of);
            }
        } else if (f->type == PACER_TYPE_LIST && !of) {
            snprintf(name, sizeof(name), "%s.%s", prefix, f->name);
            size_t n = 0;
            for (const pacer_record *el = pacer_record_child(holder, i); el; el = pacer_record_next(el), n++) {
                element_of at = {f->name, n, el};
                write_points(b, r, name, el, ts, &at);
            }
        }
    }
}

/* A metrics record: a gauge per numeric field that is not a dimension (and
 * per numeric field of its objects, and of its lists' elements), with the
 * dimensions as attributes. */
static void write_metrics(jbuf *b, const pacer_record *r)
{
    char ts[24], prefix[128];
    snprintf(ts, sizeof(ts), "%" PRId64, pacer_record_ts(r));
    snprintf(prefix, sizeof(prefix), "pacer.%s", pacer_record_type_name(r));
    write_points(b, r, prefix, r, ts, NULL);
}

static void write_resource(jbuf *b, const pacer_record *r, int64_t spool_dropped)
{
    const char *app = pacer_record_common(r, PACER_COMMON_APP);
    const char *version = pacer_record_common(r, PACER_COMMON_VERSION);
    const char *session = pacer_record_common(r, PACER_COMMON_SESSION);
    jbuf_key(b, "resource");
    jbuf_open(b, '{');
    jbuf_key(b, "attributes");
    jbuf_open(b, '[');
    attr_str(b, "service.name", NULL, app ? app : "unknown");
    attr_str(b, "service.version", NULL, version ? version : "unknown");
    attr_str(b, "pacer.session", NULL, session ? session : "");
    attr_int(b, "process.pid", NULL, pacer_record_pid(r));
    attr_str(b, "telemetry.sdk.name", NULL, "pacer");
    attr_str(b, "telemetry.sdk.version", NULL, PACER_VERSION);
    attr_int(b, "pacer.spool.dropped", NULL, spool_dropped);
    jbuf_close(b, ']');
    jbuf_close(b, '}');
}

static bool same_run(const pacer_record *a, const pacer_record *b)
{
    static const unsigned keys[] = {PACER_COMMON_APP, PACER_COMMON_VERSION, PACER_COMMON_SESSION};
    for (size_t i = 0; i < 3; i++) {
        const char *x = pacer_record_common(a, keys[i]), *y = pacer_record_common(b, keys[i]);
        if (strcmp(x ? x : "", y ? y : "") != 0)
            return false;
    }
    return pacer_record_pid(a) == pacer_record_pid(b);
}

char *ref_otlp_encode(pacer_signal signal, char *const *records, size_t n, const char *batch_id, int64_t spool_dropped,
                  size_t *ret_len, size_t *ret_skipped)
{
    static const char *const top[] = {"resourceSpans", "resourceLogs", "resourceMetrics"};
    static const char *const scoped[] = {"scopeSpans", "scopeLogs", "scopeMetrics"};
    static const char *const items[] = {"spans", "logRecords", "metrics"};
    pacer_record **recs = calloc(n ? n : 1, sizeof(*recs));
    int *run = calloc(n ? n : 1, sizeof(*run)); /* index of the run's first record */
    if (!recs || !run) {
        free(recs);
        free(run);
        return NULL;
    }
    size_t skipped = 0;
    for (size_t i = 0; i < n; i++) {
        if (pacer_record_parse(records[i], strlen(records[i]), &recs[i], NULL, 0) < 0) {
            skipped++;
            run[i] = -1;
            continue;
        }
        run[i] = (int)i;
        for (size_t j = 0; j < i; j++)
            if (run[j] == (int)j && same_run(recs[j], recs[i])) {
                run[i] = (int)j;
                break;
            }
    }
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    jbuf_key(&b, top[signal]);
    jbuf_open(&b, '[');
    for (size_t g = 0; g < n; g++) {
        if (run[g] != (int)g)
            continue;
        jbuf_open(&b, '{');
        write_resource(&b, recs[g], spool_dropped);
        jbuf_key(&b, scoped[signal]);
        jbuf_open(&b, '[');
        jbuf_open(&b, '{');
        jbuf_key(&b, "scope");
        jbuf_open(&b, '{');
        jbuf_kv_str(&b, "name", "pacer");
        jbuf_kv_str(&b, "version", PACER_VERSION);
        jbuf_close(&b, '}');
        jbuf_key(&b, items[signal]);
        jbuf_open(&b, '[');
        for (size_t i = g; i < n; i++) {
            if (run[i] != (int)g)
                continue;
            if (signal == PACER_SIGNAL_TRACES)
                write_span(&b, recs[i], batch_id, i);
            else if (signal == PACER_SIGNAL_LOGS)
                write_log(&b, recs[i], records[i]);
            else
                write_metrics(&b, recs[i]);
        }
        jbuf_close(&b, ']');
        jbuf_close(&b, '}');
        jbuf_close(&b, ']');
        jbuf_close(&b, '}');
    }
    jbuf_close(&b, ']');
    jbuf_close(&b, '}');
    for (size_t i = 0; i < n; i++)
        pacer_record_free(recs[i]);
    free(recs);
    free(run);
    size_t len;
    char *body = jbuf_steal(&b, &len);
    if (ret_len)
        *ret_len = body ? len : 0;
    if (ret_skipped)
        *ret_skipped = skipped;
    return body;
}
