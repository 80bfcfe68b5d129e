/* OTLP/HTTP protobuf decoding (otlp.h): Export{Trace,Logs,Metrics}Service
 * Requests → the same flat batch the JSON decoder makes.
 *
 * A wire decoder of its own, with the field numbers of opentelemetry-proto
 * (collector, trace, logs, metrics, common, resource v1). One pass over
 * each message, no tree: a length-delimited field is a view of the body
 * that the parser of its message type walks in place, recursing into
 * nested messages (at most OTLP_MAX_DEPTH levels, AnyValues included).
 *
 * Strings. Values are copied into the batch's pool with a NUL (the rest of
 * pacerd takes C strings); attribute keys point into the body (their length
 * is kept). Every string must be valid UTF-8 without NUL, as proto3 says of
 * `string` fields and as pacerd stores JSON: otherwise its item is rejected.
 *
 * Failure levels, as for JSON:
 *   - the body is not a message of the request type (a truncated varint or
 *     length, a length past the end of its message, a group or an unknown
 *     wire type, a known field with the wrong wire type, nesting too deep):
 *     -EBADMSG, "invalid protobuf at byte N: …" (400);
 *   - an item that breaks an OTLP rule (an id of the wrong length or all
 *     zero, end before start, a name over 1024 bytes, a bad string…): left
 *     out and counted, with the first one's reason under its JSON path
 *     (resourceSpans[0].scopeSpans[0].spans[3].…), so that both encodings
 *     answer alike.
 *
 * Attributes of one message are appended to the batch's kv array in a pass
 * of their own before the other fields, so that each list is contiguous
 * even when an encoder interleaves them with nested messages that have
 * attributes of their own (events, links, exemplars).
 *
 * Proto3 has no presence for scalars: an absent field is its zero value
 * (a span without a name has the name ""). Of a oneof (a value, a metric's
 * data), the last one wins. Unknown fields are skipped and counted
 * (otlp_batch.ignored), as OTLP asks of receivers.
 */
#include "otlp.h"

#include <pacer/base/array.h>
#include <pacer/base/utf8.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the wire format ---- */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct msg {
    const uint8_t *p, *end;
} msg;

typedef struct pf {
    uint32_t num;
    int wt;
    uint64_t v; /* VARINT, I64, I32 */
    const uint8_t *data; /* LEN */
    size_t len;
    const uint8_t *at; /* where the field began */
} pf;

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t c = *(*p)++;
        if (shift == 63 && c > 1)
            return false; /* more than 64 bits */
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *ret = v;
            return true;
        }
    }
    return false;
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static double as_double(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* ---- the decoder ---- */

typedef struct pdec {
    otlp_out o; /* first: the batch being filled */
    const uint8_t *base;
    bool bad;
    char err[200];
    char ign[160];
    bool has_ign;
} pdec;

static void fail(pdec *d, const uint8_t *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(pdec *d, const uint8_t *at, const char *fmt, ...)
{
    if (d->bad)
        return;
    d->bad = true;
    char why[150];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    snprintf(d->err, sizeof d->err, "invalid protobuf at byte %zu: %s", (size_t)(at - d->base), why);
}

/* The next field of m: 1, 0 at its end, -1 when the wire format is broken
 * (d->bad is set). */
static int next(pdec *d, msg *m, pf *f)
{
    if (d->bad || d->o.oom)
        return -1;
    if (m->p >= m->end)
        return 0;
    f->at = m->p;
    f->v = 0;
    f->data = NULL;
    f->len = 0;
    uint64_t key;
    if (!varint(&m->p, m->end, &key)) {
        fail(d, f->at, "truncated field key");
        return -1;
    }
    f->num = (uint32_t)(key >> 3);
    f->wt = (int)(key & 7);
    if (f->num == 0 || key >> 3 > 0x1fffffff) {
        fail(d, f->at, "field number %" PRIu64 " is out of range", key >> 3);
        return -1;
    }
    switch (f->wt) {
    case WT_VARINT:
        if (!varint(&m->p, m->end, &f->v)) {
            fail(d, f->at, "field %u: truncated varint", f->num);
            return -1;
        }
        return 1;
    case WT_I64:
        if (m->end - m->p < 8) {
            fail(d, f->at, "field %u: truncated fixed64", f->num);
            return -1;
        }
        f->v = le64(m->p);
        m->p += 8;
        return 1;
    case WT_I32:
        if (m->end - m->p < 4) {
            fail(d, f->at, "field %u: truncated fixed32", f->num);
            return -1;
        }
        f->v = le32(m->p);
        m->p += 4;
        return 1;
    case WT_LEN: {
        uint64_t n;
        if (!varint(&m->p, m->end, &n) || n > (uint64_t)(m->end - m->p)) {
            fail(d, f->at, "field %u: length past the end of its message", f->num);
            return -1;
        }
        f->data = m->p;
        f->len = (size_t)n;
        m->p += n;
        return 1;
    }
    default:
        fail(d, f->at, "field %u: wire type %d (groups and unknown types are not OTLP)", f->num, f->wt);
        return -1;
    }
}

/* A known field must come with its type's wire type. */
static bool want(pdec *d, const pf *f, int wt)
{
    if (f->wt == wt)
        return true;
    fail(d, f->at, "field %u: wire type %d where %d was expected", f->num, f->wt, wt);
    return false;
}

static msg sub(const pf *f)
{
    return (msg){f->data, f->data + f->len};
}

static void ignored(pdec *d, const char *what, const pf *f)
{
    d->o.b->ignored++;
    if (d->has_ign)
        return;
    snprintf(d->ign, sizeof d->ign, "unknown field %u of a %s", f->num, what);
    d->has_ign = true;
}

/* ---- strings, ids, values ---- */

static bool text_ok(const uint8_t *p, size_t n)
{
    return !memchr(p, 0, n) && utf8_valid((const char *)p, n);
}

/* A string field: checked, copied into the pool with a NUL. NULL with *why
 * set when it is not valid text, or with d->o.oom. */
static const char *string_of(pdec *d, const pf *f, const char *what, const char **why)
{
    if (!text_ok(f->data, f->len)) {
        otlp_out_why(why, what);
        return NULL;
    }
    char *s = otlp_batch_alloc(d->o.b, f->len + 1);
    if (!s) {
        d->o.oom = true;
        return NULL;
    }
    memcpy(s, f->data, f->len);
    s[f->len] = 0;
    return s;
}

/* An id: n bytes, not all zero. */
static bool id_of(const pf *f, uint8_t *out, size_t n)
{
    if (f->len != n)
        return false;
    bool nonzero = false;
    for (size_t i = 0; i < n; i++)
        nonzero |= f->data[i] != 0;
    memcpy(out, f->data, n);
    return nonzero;
}

/* An id that may be absent (empty). */
static bool optional_id_of(const pf *f, uint8_t *out, size_t n, bool *has)
{
    *has = false;
    if (f->len == 0)
        return true;
    return (*has = id_of(f, out, n));
}

static bool time_of(const pf *f, int64_t *ret)
{
    if (f->v > INT64_MAX)
        return false;
    *ret = (int64_t)f->v;
    return true;
}

static bool u32_of(const pf *f, uint32_t *ret)
{
    if (f->v > UINT32_MAX)
        return false;
    *ret = (uint32_t)f->v;
    return true;
}

/* The readers of the fields many messages share. Each takes the field at f,
 * checks its wire type and stores it at *out; a bad value sets *why to what
 * (the field's name and why). False only when decoding stops: a wrong wire
 * type or d->o.oom. */

/* A time in ns (fixed64) within the signed 64-bit range. */
static bool time_field(pdec *d, const pf *f, int64_t *out, const char *what, const char **why)
{
    if (!want(d, f, WT_I64))
        return false;
    if (!time_of(f, out))
        otlp_out_why(why, what);
    return true;
}

/* A count (varint) within 32 bits. */
static bool u32_field(pdec *d, const pf *f, uint32_t *out, const char *what, const char **why)
{
    if (!want(d, f, WT_VARINT))
        return false;
    if (!u32_of(f, out))
        otlp_out_why(why, what);
    return true;
}

/* A string that may be empty: an empty one leaves *out as it was. */
static bool text_field(pdec *d, const pf *f, const char **out, const char *what, const char **why)
{
    if (!want(d, f, WT_LEN))
        return false;
    return !(f->len && !(*out = string_of(d, f, what, why)) && d->o.oom);
}

/* A name: at most OTLP_MAX_NAME bytes; an empty one is "". */
static bool name_field(pdec *d, const pf *f, const char **out, const char **why)
{
    if (!want(d, f, WT_LEN))
        return false;
    if (f->len > OTLP_MAX_NAME)
        otlp_out_why(why, "name: longer than 1024 bytes");
    else if (!(*out = string_of(d, f, "name: invalid UTF-8 or a NUL", why)) && d->o.oom)
        return false;
    return true;
}

static bool check_list(pdec *d, otlp_value_type type, msg m, int depth, const char **why);

/* An AnyValue. copy: strings copied into the pool (attribute values);
 * otherwise they point into the body (values only checked, or rendered).
 * depth: of the value, for the nesting limit. */
static bool any_value(pdec *d, msg m, otlp_value *out, bool copy, int depth, const char **why)
{
    memset(out, 0, sizeof *out);
    if (depth > OTLP_MAX_DEPTH) {
        fail(d, m.p, "values nested deeper than %d levels", OTLP_MAX_DEPTH);
        return false;
    }
    pf f;
    int r;
    while ((r = next(d, &m, &f)) > 0) {
        switch (f.num) {
        case 1: /* string_value */
        case 7: /* bytes_value */
            if (!want(d, &f, WT_LEN))
                return false;
            out->type = f.num == 1 ? OTLP_STRING : OTLP_BYTES;
            if (f.num == 1 && !text_ok(f.data, f.len)) {
                otlp_out_why(why, "stringValue: invalid UTF-8 or a NUL");
                out->s = "";
                out->len = 0;
            } else if (copy) {
                char *s = otlp_batch_alloc(d->o.b, f.len + 1);
                if (!s) {
                    d->o.oom = true;
                    return false;
                }
                memcpy(s, f.data, f.len);
                s[f.len] = 0;
                out->s = s;
                out->len = f.len;
            } else {
                out->s = (const char *)f.data;
                out->len = f.len;
            }
            break;
        case 2: /* bool_value */
            if (!want(d, &f, WT_VARINT))
                return false;
            out->type = OTLP_BOOL;
            out->b = f.v != 0;
            break;
        case 3: /* int_value */
            if (!want(d, &f, WT_VARINT))
                return false;
            out->type = OTLP_INT;
            out->i = (int64_t)f.v;
            break;
        case 4: /* double_value */
            if (!want(d, &f, WT_I64))
                return false;
            out->type = OTLP_DOUBLE;
            out->d = as_double(f.v);
            break;
        case 5: /* array_value */
        case 6: /* kvlist_value */
            if (!want(d, &f, WT_LEN))
                return false;
            out->type = f.num == 5 ? OTLP_ARRAY : OTLP_KVLIST;
            out->s = (const char *)f.data;
            out->len = f.len;
            if (!check_list(d, out->type, sub(&f), depth + 1, why))
                return false;
            break;
        default: ignored(d, "value (AnyValue)", &f); break;
        }
    }
    return r == 0;
}

/* A KeyValue: the key's text, the value. */
static bool key_value(pdec *d, msg m, otlp_kv *out, bool copy, int depth, const char **why)
{
    memset(out, 0, sizeof *out);
    out->key = "";
    pf f;
    int r;
    while ((r = next(d, &m, &f)) > 0) {
        if (f.num == 1) {
            if (!want(d, &f, WT_LEN))
                return false;
            if (!text_ok(f.data, f.len))
                otlp_out_why(why, "an attribute key is not valid UTF-8, or has a NUL");
            else if (f.len > OTLP_MAX_NAME)
                otlp_out_why(why, "an attribute key is longer than 1024 bytes");
            out->key = (const char *)f.data;
            out->key_len = f.len;
        } else if (f.num == 2) {
            if (!want(d, &f, WT_LEN) || !any_value(d, sub(&f), &out->value, copy, depth + 1, why))
                return false;
            out->has_value = true;
        } else {
            ignored(d, "attribute (KeyValue)", &f);
        }
    }
    return r == 0;
}

/* The inside of an ArrayValue (repeated AnyValue values = 1) or a
 * KeyValueList (repeated KeyValue values = 1), checked. */
static bool check_list(pdec *d, otlp_value_type type, msg m, int depth, const char **why)
{
    if (depth > OTLP_MAX_DEPTH) {
        fail(d, m.p, "values nested deeper than %d levels", OTLP_MAX_DEPTH);
        return false;
    }
    pf f;
    int r;
    while ((r = next(d, &m, &f)) > 0) {
        if (f.num != 1) {
            ignored(d, type == OTLP_ARRAY ? "ArrayValue" : "KeyValueList", &f);
            continue;
        }
        if (!want(d, &f, WT_LEN))
            return false;
        if (type == OTLP_ARRAY) {
            otlp_value v;
            if (!any_value(d, sub(&f), &v, false, depth + 1, why))
                return false;
        } else {
            otlp_kv kv;
            if (!key_value(d, sub(&f), &kv, false, depth + 1, why))
                return false;
        }
    }
    return r == 0;
}

/* Appends every field `num` of m (KeyValues) to the batch as one list.
 * *why: the first reason one is invalid. False on a broken wire format or
 * out of memory. */
static bool attrs_of(pdec *d, msg m, uint32_t num, otlp_attrs *ret, const char **why)
{
    otlp_batch *b = d->o.b;
    memset(ret, 0, sizeof *ret);
    ret->first = b->n_kvs;
    pf f;
    int r;
    while ((r = next(d, &m, &f)) > 0) {
        if (f.num != num)
            continue;
        if (!want(d, &f, WT_LEN))
            return false;
        otlp_kv kv;
        const char *w = NULL;
        if (!key_value(d, sub(&f), &kv, true, 1, &w))
            return false;
        if (w) {
            otlp_out_why(why, w);
            continue;
        }
        if (!otlp_out_room(&d->o, &b->kvs, b->n_kvs, &d->o.cap_kvs, sizeof *b->kvs))
            return false;
        b->kvs[b->n_kvs++] = kv;
    }
    ret->n = b->n_kvs - ret->first;
    return r == 0;
}

/* ---- spans ---- */

/* Where an item is, for its reason: resourceSpans[i].scopeSpans[j]. */
typedef struct where {
    size_t i, j;
} where;

typedef struct sub_why {
    const char *why;
    size_t index;
    char buf[160];
} sub_why;

static void sub_reject(sub_why *s, const char *list, size_t index, const char *why)
{
    if (s->why)
        return;
    snprintf(s->buf, sizeof s->buf, "%s[%zu].%s", list, index, why);
    s->why = s->buf;
    s->index = index;
}

static bool parse_event(pdec *d, msg m, size_t index, sub_why *sw)
{
    otlp_event ev = {0};
    const char *why = NULL;
    ev.name = "";
    if (!attrs_of(d, m, 3, &ev.attrs, &why))
        return false;
    pf f;
    int r;
    while ((r = next(d, &m, &f)) > 0) {
        switch (f.num) {
        case 1:
            if (!time_field(d, &f, &ev.time_ns, "timeUnixNano: past the signed 64-bit range", &why))
                return false;
            break;
        case 2:
            if (!name_field(d, &f, &ev.name, &why))
                return false;
            break;
        case 3: break;
        case 4:
            if (!u32_field(d, &f, &ev.dropped_attributes, "droppedAttributesCount: past 32 bits", &why))
                return false;
            break;
        default: ignored(d, "span event", &f); break;
        }
    }
    if (r < 0)
        return false;
    if (why) {
        sub_reject(sw, "events", index, why);
        return true;
    }
    if (!ev.name)
        ev.name = "";
    otlp_batch *b = d->o.b;
    if (!otlp_out_room(&d->o, &b->events, b->n_events, &d->o.cap_events, sizeof *b->events))
        return false;
    b->events[b->n_events++] = ev;
    return true;
}

static bool parse_link(pdec *d, msg m, size_t index, sub_why *sw)
{
    otlp_link ln = {0};
    const char *why = NULL;
    bool has_trace = false, has_span = false;
    if (!attrs_of(d, m, 4, &ln.attrs, &why))
        return false;
    pf f;
    int r;
    while ((r = next(d, &m, &f)) > 0) {
        switch (f.num) {
        case 1:
        case 2:
            if (!want(d, &f, WT_LEN))
                return false;
            if (f.num == 1)
                has_trace = id_of(&f, ln.trace_id, 16);
            else
                has_span = id_of(&f, ln.span_id, 8);
            break;
        case 3:
            if (!text_field(d, &f, &ln.trace_state, "traceState: invalid UTF-8 or a NUL", &why))
                return false;
            break;
        case 4: break;
        case 5:
            if (!u32_field(d, &f, &ln.dropped_attributes, "droppedAttributesCount: past 32 bits", &why))
                return false;
            break;
        case 6:
            if (!want(d, &f, WT_I32))
                return false;
            ln.has_flags = true;
            ln.flags = (uint32_t)f.v;
            break;
        default: ignored(d, "span link", &f); break;
        }
    }
    if (r < 0)
        return false;
    if (!has_trace)
        otlp_out_why(&why, "traceId: expected 16 bytes, not all zero");
    else if (!has_span)
        otlp_out_why(&why, "spanId: expected 8 bytes, not all zero");
    if (why) {
        sub_reject(sw, "links", index, why);
        return true;
    }
    otlp_batch *b = d->o.b;
    if (!otlp_out_room(&d->o, &b->links, b->n_links, &d->o.cap_links, sizeof *b->links))
        return false;
    b->links[b->n_links++] = ln;
    return true;
}

static bool parse_status(pdec *d, msg m, otlp_span *out, const char **why)
{
    pf f;
    int r;
    while ((r = next(d, &m, &f)) > 0) {
        if (f.num == 2) {
            if (!want(d, &f, WT_LEN))
                return false;
            if (!(out->status_message = string_of(d, &f, "status.message: invalid UTF-8 or a NUL", why)) && d->o.oom)
                return false;
        } else if (f.num == 3) {
            if (!want(d, &f, WT_VARINT))
                return false;
            if (f.v > 2)
                otlp_out_why(why, "status.code: expected 0-2");
            else
                out->status_code = (int)f.v;
        } else {
            ignored(d, "span status", &f);
        }
    }
    return r == 0;
}

static bool parse_span(pdec *d, msg m, where w, size_t k)
{
    otlp_batch *b = d->o.b;
    otlp_span s = {0};
    const char *why = NULL;
    bool has_trace = false, has_span = false;
    size_t first_event = b->n_events, first_link = b->n_links;
    sub_why sw = {0};
    size_t n_ev = 0, n_ln = 0;
    s.name = "";
    if (!attrs_of(d, m, 9, &s.attrs, &why))
        return false;
    pf f;
    int r;
    while ((r = next(d, &m, &f)) > 0) {
        switch (f.num) {
        case 1:
        case 2:
        case 4:
            if (!want(d, &f, WT_LEN))
                return false;
            if (f.num == 1)
                has_trace = id_of(&f, s.trace_id, 16);
            else if (f.num == 2)
                has_span = id_of(&f, s.span_id, 8);
            else if (!optional_id_of(&f, s.parent_span_id, 8, &s.has_parent))
                otlp_out_why(&why, "parentSpanId: expected 8 bytes");
            break;
        case 3:
            if (!text_field(d, &f, &s.trace_state, "traceState: invalid UTF-8 or a NUL", &why))
                return false;
            break;
        case 5:
            if (!name_field(d, &f, &s.name, &why))
                return false;
            break;
        case 6:
            if (!want(d, &f, WT_VARINT))
                return false;
            if (f.v > 5)
                otlp_out_why(&why, "kind: expected 0-5");
            else
                s.kind = (int)f.v;
            break;
        case 7:
            if (!time_field(d, &f, &s.start_ns, "startTimeUnixNano: past the signed 64-bit range", &why))
                return false;
            break;
        case 8:
            if (!time_field(d, &f, &s.end_ns, "endTimeUnixNano: past the signed 64-bit range", &why))
                return false;
            break;
        case 9: break;
        case 10:
        case 12:
        case 14:
            if (!u32_field(d, &f, f.num == 10 ? &s.dropped_attributes : f.num == 12 ? &s.dropped_events : &s.dropped_links,
                           "dropped…Count: past 32 bits", &why))
                return false;
            break;
        case 11:
            if (!want(d, &f, WT_LEN) || !parse_event(d, sub(&f), n_ev++, &sw))
                return false;
            break;
        case 13:
            if (!want(d, &f, WT_LEN) || !parse_link(d, sub(&f), n_ln++, &sw))
                return false;
            break;
        case 15:
            if (!want(d, &f, WT_LEN) || !parse_status(d, sub(&f), &s, &why))
                return false;
            break;
        case 16:
            if (!want(d, &f, WT_I32))
                return false;
            s.has_flags = true;
            s.flags = (uint32_t)f.v;
            break;
        default: ignored(d, "span", &f); break;
        }
    }
    if (r < 0)
        return false;
    const char *bad = !has_trace ? "traceId: expected 16 bytes, not all zero"
                      : !has_span ? "spanId: expected 8 bytes, not all zero"
                      : s.end_ns < s.start_ns ? "endTimeUnixNano is before startTimeUnixNano"
                      : why ? why
                            : sw.why;
    if (bad) {
        b->n_events = first_event;
        b->n_links = first_link;
        otlp_out_reject(&d->o, "resourceSpans[%zu].scopeSpans[%zu].spans[%zu].%s", w.i, w.j, k, bad);
        return true;
    }
    if (!s.name)
        s.name = "";
    s.first_event = first_event;
    s.n_events = b->n_events - first_event;
    s.first_link = first_link;
    s.n_links = b->n_links - first_link;
    if (!otlp_out_room(&d->o, &b->spans, b->n_spans, &d->o.cap_items, sizeof *b->spans))
        return false;
    b->spans[b->n_spans++] = s;
    return true;
}

/* ---- log records ---- */

static bool parse_log(pdec *d, msg m, where w, size_t k)
{
    otlp_log l = {0};
    const char *why = NULL;
    int64_t t = 0, o = 0;
    if (!attrs_of(d, m, 6, &l.attrs, &why))
        return false;
    pf f;
    int r;
    while ((r = next(d, &m, &f)) > 0) {
        switch (f.num) {
        case 1:
        case 11:
            if (!time_field(d, &f, f.num == 1 ? &t : &o, "timeUnixNano: past the signed 64-bit range", &why))
                return false;
            break;
        case 2:
            if (!want(d, &f, WT_VARINT))
                return false;
            if (f.v > 24)
                otlp_out_why(&why, "severityNumber: expected 0-24");
            else
                l.severity_number = (int)f.v;
            break;
        case 3:
        case 12:
            if (!want(d, &f, WT_LEN))
                return false;
            if (f.num == 12 && f.len > OTLP_MAX_NAME)
                otlp_out_why(&why, "eventName: longer than 1024 bytes");
            else if (f.len && !(*(f.num == 3 ? &l.severity_text : &l.event_name) =
                                    string_of(d, &f, "severityText, eventName: invalid UTF-8 or a NUL", &why)) &&
                     d->o.oom)
                return false;
            break;
        case 5:
            if (!want(d, &f, WT_LEN) || !any_value(d, sub(&f), &l.body, true, 1, &why))
                return false;
            l.has_body = true;
            break;
        case 6: break;
        case 7:
            if (!u32_field(d, &f, &l.dropped_attributes, "droppedAttributesCount: past 32 bits", &why))
                return false;
            break;
        case 8:
            if (!want(d, &f, WT_I32))
                return false;
            l.has_flags = true;
            l.flags = (uint32_t)f.v;
            break;
        case 9:
        case 10:
            if (!want(d, &f, WT_LEN))
                return false;
            if (f.num == 9 ? !optional_id_of(&f, l.trace_id, 16, &l.has_trace_id)
                           : !optional_id_of(&f, l.span_id, 8, &l.has_span_id))
                otlp_out_why(&why, f.num == 9 ? "traceId: expected 16 bytes, not all zero"
                                           : "spanId: expected 8 bytes, not all zero");
            break;
        default: ignored(d, "log record", &f); break;
        }
    }
    if (r < 0)
        return false;
    if (!(l.time_ns = t ? t : o))
        otlp_out_why(&why, "timeUnixNano: missing (and no observedTimeUnixNano)");
    if (why) {
        otlp_out_reject(&d->o, "resourceLogs[%zu].scopeLogs[%zu].logRecords[%zu].%s", w.i, w.j, k, why);
        return true;
    }
    l.observed_ns = o;
    otlp_batch *b = d->o.b;
    if (!otlp_out_room(&d->o, &b->logs, b->n_logs, &d->o.cap_items, sizeof *b->logs))
        return false;
    b->logs[b->n_logs++] = l;
    return true;
}

/* ---- metrics ---- */

enum { MK_GAUGE, MK_SUM, MK_HISTOGRAM, MK_EXPONENTIAL, MK_SUMMARY };
static const char *const kind_names[] = {"gauge", "sum", "histogram", "exponential_histogram", "summary"};
static const char *const kind_fields[] = {"gauge", "sum", "histogram", "exponentialHistogram", "summary"};

/* A growing array of 8-byte numbers, copied into the pool at the end. */
typedef struct nums {
    uint64_t *v;
    size_t n, cap;
} nums;

static bool nums_add(pdec *d, nums *a, uint64_t v)
{
    if (!ARRAY_GROW(a->v, a->cap, a->n + 1, 16)) {
        d->o.oom = true;
        return false;
    }
    a->v[a->n++] = v;
    return true;
}

/* A repeated fixed64/double (wt I64) or uint64 (VARINT) field, packed or
 * not. */
static bool nums_field(pdec *d, const pf *f, int wt, nums *a)
{
    if (f->wt == wt)
        return nums_add(d, a, f->v);
    if (!want(d, f, WT_LEN))
        return false;
    const uint8_t *p = f->data, *end = f->data + f->len;
    while (p < end) {
        uint64_t v;
        if (wt == WT_I64) {
            if (end - p < 8) {
                fail(d, p, "field %u: a packed fixed64 list that is not a multiple of 8 bytes", f->num);
                return false;
            }
            v = le64(p);
            p += 8;
        } else if (!varint(&p, end, &v)) {
            fail(d, p, "field %u: truncated varint in a packed list", f->num);
            return false;
        }
        if (!nums_add(d, a, v))
            return false;
    }
    return true;
}

/* The numbers in the pool (NULL for none). */
static const void *nums_keep(pdec *d, nums *a, size_t *ret_n)
{
    *ret_n = a->n;
    if (!a->n)
        return NULL;
    void *p = otlp_batch_alloc(d->o.b, a->n * 8);
    if (!p)
        d->o.oom = true;
    else
        memcpy(p, a->v, a->n * 8);
    return p;
}

static int32_t zigzag32(uint64_t v)
{
    return (int32_t)((uint32_t)(v >> 1) ^ (uint32_t)-(int64_t)(v & 1));
}

static bool parse_buckets(pdec *d, msg m, otlp_buckets *out, nums *counts, const char **why)
{
    pf f;
    int r;
    while ((r = next(d, &m, &f)) > 0) {
        if (f.num == 1) {
            if (!want(d, &f, WT_VARINT))
                return false;
            if (f.v > UINT32_MAX)
                otlp_out_why(why, "offset: past 32 bits");
            out->offset = zigzag32(f.v);
        } else if (f.num == 2) {
            if (!nums_field(d, &f, WT_VARINT, counts))
                return false;
        } else {
            ignored(d, "exponential histogram buckets", &f);
        }
    }
    return r == 0;
}

static bool parse_exemplar(pdec *d, msg m, size_t index, sub_why *sw)
{
    otlp_exemplar e = {0};
    const char *why = NULL;
    if (!attrs_of(d, m, 7, &e.attrs, &why))
        return false;
    pf f;
    int r;
    while ((r = next(d, &m, &f)) > 0) {
        switch (f.num) {
        case 2:
            if (!time_field(d, &f, &e.time_ns, "timeUnixNano: past the signed 64-bit range", &why))
                return false;
            break;
        case 3:
        case 6:
            if (!want(d, &f, WT_I64))
                return false;
            e.is_int = f.num == 6;
            e.d = as_double(f.v);
            e.i = (int64_t)f.v;
            break;
        case 4:
        case 5:
            if (!want(d, &f, WT_LEN))
                return false;
            if (f.num == 5 ? !optional_id_of(&f, e.trace_id, 16, &e.has_trace_id)
                           : !optional_id_of(&f, e.span_id, 8, &e.has_span_id))
                otlp_out_why(&why, "traceId, spanId: expected 16 and 8 bytes");
            break;
        case 7: break;
        default: ignored(d, "exemplar", &f); break;
        }
    }
    if (r < 0)
        return false;
    if (why) {
        sub_reject(sw, "exemplars", index, why);
        return true;
    }
    otlp_batch *b = d->o.b;
    if (!otlp_out_room(&d->o, &b->exemplars, b->n_exemplars, &d->o.cap_exemplars, sizeof *b->exemplars))
        return false;
    b->exemplars[b->n_exemplars++] = e;
    return true;
}

/* Field numbers of the data point types that differ. */
typedef struct point_fields {
    uint32_t attrs, count, sum, min, max, exemplars, flags;
} point_fields;

static const point_fields point_layout[] = {
    [MK_GAUGE] = {7, 0, 0, 0, 0, 5, 8},
    [MK_SUM] = {7, 0, 0, 0, 0, 5, 8},
    [MK_HISTOGRAM] = {9, 4, 5, 11, 12, 8, 10},
    [MK_EXPONENTIAL] = {1, 4, 5, 12, 13, 11, 10},
    [MK_SUMMARY] = {7, 4, 5, 0, 0, 0, 8},
};

typedef struct point_bufs {
    nums counts, bounds, pos, neg, quantiles;
} point_bufs;

static void point_bufs_free(point_bufs *pb)
{
    free(pb->counts.v);
    free(pb->bounds.v);
    free(pb->pos.v);
    free(pb->neg.v);
    free(pb->quantiles.v);
}

static bool parse_quantile(pdec *d, msg m, nums *q, const char **why)
{
    double quantile = 0, value = 0;
    pf f;
    int r;
    while ((r = next(d, &m, &f)) > 0) {
        if (f.num == 1 || f.num == 2) {
            if (!want(d, &f, WT_I64))
                return false;
            *(f.num == 1 ? &quantile : &value) = as_double(f.v);
        } else {
            ignored(d, "summary quantile", &f);
        }
    }
    if (r < 0)
        return false;
    if (!(quantile >= 0 && quantile <= 1))
        otlp_out_why(why, "quantileValues: a quantile outside [0, 1]");
    uint64_t qb, vb;
    memcpy(&qb, &quantile, 8);
    memcpy(&vb, &value, 8);
    return nums_add(d, q, qb) && nums_add(d, q, vb);
}

static bool parse_point(pdec *d, msg m, int kind, where w, size_t k, size_t index)
{
    const point_fields *pl = &point_layout[kind];
    otlp_batch *b = d->o.b;
    otlp_point p = {0};
    const char *why = NULL;
    bool has_value = false;
    point_bufs pb = {0};
    sub_why sw = {0};
    size_t first_exemplar = b->n_exemplars, n_ex = 0;
    p.count = -1;
    if (!attrs_of(d, m, pl->attrs, &p.attrs, &why))
        return false;
    pf f;
    int r;
    bool hist = kind >= MK_HISTOGRAM;
    if (hist)
        p.count = 0;
    while ((r = next(d, &m, &f)) > 0) {
        uint32_t n = f.num;
        if (n == pl->attrs)
            continue;
        if (n == 2 || n == 3) { /* start_time_unix_nano, time_unix_nano */
            int64_t *at = n == 2 ? &p.start_ns : &p.time_ns;
            if (!time_field(d, &f, at, "timeUnixNano: past the signed 64-bit range", &why))
                goto broken;
        } else if (n == pl->flags) {
            if (!u32_field(d, &f, &p.flags, "flags: past 32 bits", &why))
                goto broken;
        } else if (pl->exemplars && n == pl->exemplars) {
            if (!want(d, &f, WT_LEN) || !parse_exemplar(d, sub(&f), n_ex++, &sw))
                goto broken;
        } else if (!hist && (n == 4 || n == 6)) { /* as_double, as_int */
            if (!want(d, &f, WT_I64))
                goto broken;
            has_value = true;
            p.is_int = n == 6;
            p.int_value = (int64_t)f.v;
            p.value = p.is_int ? (double)p.int_value : as_double(f.v);
        } else if (hist && n == pl->count) {
            if (!want(d, &f, WT_I64))
                goto broken;
            if (f.v > INT64_MAX)
                otlp_out_why(&why, "count: past the signed 64-bit range");
            p.count = (int64_t)f.v;
        } else if (hist && (n == pl->sum || (pl->min && n == pl->min) || (pl->max && n == pl->max))) {
            if (!want(d, &f, WT_I64))
                goto broken;
            double v = as_double(f.v);
            if (n == pl->sum) {
                p.has_sum = true;
                p.sum = v;
            } else if (n == pl->min) {
                p.has_min = true;
                p.min = v;
            } else {
                p.has_max = true;
                p.max = v;
            }
        } else if (kind == MK_HISTOGRAM && (n == 6 || n == 7)) {
            if (!nums_field(d, &f, WT_I64, n == 6 ? &pb.counts : &pb.bounds))
                goto broken;
        } else if (kind == MK_EXPONENTIAL && n == 6) { /* scale, sint32 */
            if (!want(d, &f, WT_VARINT))
                goto broken;
            p.scale = zigzag32(f.v);
            if (f.v > UINT32_MAX || p.scale < -128 || p.scale > 128)
                otlp_out_why(&why, "scale: expected an integer in [-128, 128]");
        } else if (kind == MK_EXPONENTIAL && n == 7) {
            if (!want(d, &f, WT_I64))
                goto broken;
            p.zero_count = f.v;
        } else if (kind == MK_EXPONENTIAL && (n == 8 || n == 9)) {
            if (!want(d, &f, WT_LEN) ||
                !parse_buckets(d, sub(&f), n == 8 ? &p.positive : &p.negative, n == 8 ? &pb.pos : &pb.neg, &why))
                goto broken;
        } else if (kind == MK_EXPONENTIAL && n == 14) {
            if (!want(d, &f, WT_I64))
                goto broken;
            p.zero_threshold = as_double(f.v);
        } else if (kind == MK_SUMMARY && n == 6) {
            if (!want(d, &f, WT_LEN) || !parse_quantile(d, sub(&f), &pb.quantiles, &why))
                goto broken;
        } else {
            ignored(d, "data point", &f);
        }
    }
    if (r < 0)
        goto broken;
    if (!why && p.time_ns == 0)
        why = "timeUnixNano: expected a positive 64-bit integer";
    if (!why && kind == MK_HISTOGRAM && pb.counts.n && pb.counts.n != pb.bounds.n + 1)
        why = "bucketCounts must have one more element than explicitBounds";
    if (!why && !hist && !has_value) {
        if (p.flags & 1) /* FLAG_NO_RECORDED_VALUE */
            p.value = NAN;
        else
            why = "expected asDouble or asInt";
    }
    if (!why)
        why = sw.why;
    if (why) {
        point_bufs_free(&pb);
        b->n_exemplars = first_exemplar;
        otlp_out_reject(&d->o, "resourceMetrics[%zu].scopeMetrics[%zu].metrics[%zu].%s.dataPoints[%zu].%s", w.i, w.j, k,
               kind_fields[kind], index, why);
        return true;
    }
    if (hist)
        p.value = p.has_sum ? p.sum : 0;
    p.bucket_counts = nums_keep(d, &pb.counts, &p.n_bucket_counts);
    p.bounds = nums_keep(d, &pb.bounds, &p.n_bounds);
    p.positive.counts = nums_keep(d, &pb.pos, &p.positive.n);
    p.negative.counts = nums_keep(d, &pb.neg, &p.negative.n);
    size_t nq;
    p.quantiles = nums_keep(d, &pb.quantiles, &nq);
    p.n_quantiles = nq / 2;
    point_bufs_free(&pb);
    if (d->o.oom)
        return false;
    p.type = kind_names[kind];
    p.temporality = p.monotonic = -1;
    p.first_exemplar = first_exemplar;
    p.n_exemplars = b->n_exemplars - first_exemplar;
    if (!otlp_out_room(&d->o, &b->points, b->n_points, &d->o.cap_items, sizeof *b->points))
        return false;
    b->points[b->n_points++] = p;
    return true;
broken:
    point_bufs_free(&pb);
    return false;
}

/* Gauge, Sum, Histogram, ExponentialHistogram or Summary: the points, then
 * the temporality and monotonicity they share. */
static bool parse_data(pdec *d, msg m, int kind, where w, size_t k, int *temporality, int *monotonic)
{
    pf f;
    int r;
    size_t n = 0;
    *temporality = kind == MK_GAUGE || kind == MK_SUMMARY ? -1 : 0;
    *monotonic = kind == MK_SUM ? 0 : -1;
    while ((r = next(d, &m, &f)) > 0) {
        if (f.num == 1) {
            if (!want(d, &f, WT_LEN) || !parse_point(d, sub(&f), kind, w, k, n++))
                return false;
        } else if (f.num == 2 && *temporality >= 0) {
            if (!want(d, &f, WT_VARINT))
                return false;
            *temporality = f.v <= 2 ? (int)f.v : 3;
        } else if (f.num == 3 && kind == MK_SUM) {
            if (!want(d, &f, WT_VARINT))
                return false;
            *monotonic = f.v != 0;
        } else {
            ignored(d, kind_fields[kind], &f);
        }
    }
    return r == 0;
}

static bool parse_metric(pdec *d, msg m, where w, size_t k)
{
    otlp_mark m0 = otlp_out_mark(&d->o);
    const char *name = "", *unit = NULL, *description = NULL, *why = NULL;
    int kind = -1, temporality = -1, monotonic = -1;
    pf f;
    int r;
    while ((r = next(d, &m, &f)) > 0) {
        switch (f.num) {
        case 1:
        case 2:
        case 3: {
            if (!want(d, &f, WT_LEN))
                return false;
            if (f.num == 1 && f.len > OTLP_MAX_NAME) {
                otlp_out_why(&why, "name: longer than 1024 bytes");
                break;
            }
            const char *s = string_of(d, &f, "name, description, unit: invalid UTF-8 or a NUL", &why);
            if (!s && d->o.oom)
                return false;
            if (f.num == 1)
                name = s ? s : "";
            else if (f.num == 2)
                description = f.len ? s : NULL;
            else
                unit = f.len ? s : NULL;
            break;
        }
        case 5:
        case 7:
        case 9:
        case 10:
        case 11:
            if (!want(d, &f, WT_LEN))
                return false;
            otlp_out_restore(&d->o, m0); /* a oneof: the last one wins */
            kind = f.num == 5 ? MK_GAUGE : f.num == 7 ? MK_SUM : f.num == 9 ? MK_HISTOGRAM
                   : f.num == 10 ? MK_EXPONENTIAL : MK_SUMMARY;
            if (!parse_data(d, sub(&f), kind, w, k, &temporality, &monotonic))
                return false;
            break;
        default: ignored(d, "metric", &f); break;
        }
    }
    if (r < 0)
        return false;
    if (!why && kind < 0)
        why = "expected one of gauge, sum, histogram, exponentialHistogram, summary";
    if (!why && temporality > 2)
        why = "aggregationTemporality: expected 0-2";
    if (why) {
        otlp_out_restore(&d->o, m0);
        otlp_out_reject(&d->o, "resourceMetrics[%zu].scopeMetrics[%zu].metrics[%zu]: %s", w.i, w.j, k, why);
        return true;
    }
    for (size_t x = m0.items; x < d->o.b->n_points; x++) {
        otlp_point *p = &d->o.b->points[x];
        p->name = name;
        p->unit = unit;
        p->description = description;
        p->temporality = temporality;
        p->monotonic = monotonic;
    }
    return true;
}

/* ---- scopes, resources, the request ---- */

typedef struct signal {
    const char *list, *scopes, *items;
    bool reject_each; /* a bad resource rejects each item under it (else once) */
    bool (*item)(pdec *d, msg m, where w, size_t k);
} signal;

/* InstrumentationScope (or the deprecated InstrumentationLibrary, which has
 * the same first two fields). */
static bool parse_scope_msg(pdec *d, msg m, otlp_scope *sc, const char **why)
{
    if (!attrs_of(d, m, 3, &sc->attrs, why))
        return false;
    pf f;
    int r;
    while ((r = next(d, &m, &f)) > 0) {
        if (f.num == 1 || f.num == 2) {
            if (!want(d, &f, WT_LEN))
                return false;
            const char *s = f.len ? string_of(d, &f, "scope: invalid UTF-8 or a NUL in its name or version", why) : NULL;
            if (!s && d->o.oom)
                return false;
            *(f.num == 1 ? &sc->name : &sc->version) = s;
        } else if (f.num == 4) {
            if (!u32_field(d, &f, &sc->dropped_attributes, "scope.droppedAttributesCount: past 32 bits", why))
                return false;
        } else if (f.num != 3) {
            ignored(d, "scope", &f);
        }
    }
    return r == 0;
}

static bool parse_scope(pdec *d, const signal *sg, msg m, size_t i, size_t j, size_t *count)
{
    otlp_batch *b = d->o.b;
    otlp_mark m0 = otlp_out_mark(&d->o);
    otlp_scope sc = {0};
    const char *why = NULL;
    size_t k = 0;
    pf f;
    int r;
    while ((r = next(d, &m, &f)) > 0) {
        if (f.num == 1) {
            if (!want(d, &f, WT_LEN) || !parse_scope_msg(d, sub(&f), &sc, &why))
                return false;
        } else if (f.num == 2) {
            if (!want(d, &f, WT_LEN) || !sg->item(d, sub(&f), (where){i, j}, k++))
                return false;
            ++*count;
        } else if (f.num == 3) {
            if (!text_field(d, &f, &sc.schema_url, "schemaUrl: invalid UTF-8 or a NUL", &why))
                return false;
        } else {
            ignored(d, "scope entry", &f);
        }
    }
    if (r < 0)
        return false;
    if (why) {
        otlp_out_restore(&d->o, m0);
        otlp_out_reject(&d->o, "%s[%zu].%s[%zu].%s", sg->list, i, sg->scopes, j, why);
        return true;
    }
    if (!otlp_out_room(&d->o, &b->scopes, b->n_scopes, &d->o.cap_scopes, sizeof *b->scopes))
        return false;
    b->scopes[b->n_scopes] = sc;
    otlp_batch_set_owner(d->o.b, m0.items, -1, (long)b->n_scopes++, sc.name);
    return true;
}

static bool parse_resource_msg(pdec *d, msg m, otlp_resource *rs, const char **why)
{
    if (!attrs_of(d, m, 1, &rs->attrs, why))
        return false;
    pf f;
    int r;
    while ((r = next(d, &m, &f)) > 0) {
        if (f.num == 2) {
            if (!u32_field(d, &f, &rs->dropped_attributes, "resource.droppedAttributesCount: past 32 bits", why))
                return false;
        } else if (f.num != 1) {
            ignored(d, "resource", &f);
        }
    }
    return r == 0;
}

static bool parse_entry(pdec *d, const signal *sg, msg m, size_t i)
{
    otlp_batch *b = d->o.b;
    otlp_mark m0 = otlp_out_mark(&d->o);
    otlp_resource rs = {0};
    const char *why = NULL;
    size_t count = 0, j = 0;
    bool has_resource = false;
    pf f;
    int r;
    while ((r = next(d, &m, &f)) > 0) {
        if (f.num == 1) {
            if (!want(d, &f, WT_LEN))
                return false;
            /* a message given twice is merged: the later fields win, lists add up */
            otlp_resource more = {0};
            if (!parse_resource_msg(d, sub(&f), &more, &why))
                return false;
            if (has_resource && rs.attrs.n) {
                if (more.attrs.n && rs.attrs.first + rs.attrs.n != more.attrs.first)
                    otlp_out_why(&why, "resource: given twice, with attributes between the two");
                more.attrs.first = rs.attrs.first;
                more.attrs.n += rs.attrs.n;
            }
            rs.attrs = more.attrs;
            if (more.dropped_attributes)
                rs.dropped_attributes = more.dropped_attributes;
            has_resource = true;
        } else if (f.num == 2 || f.num == 1000) {
            if (!want(d, &f, WT_LEN) || !parse_scope(d, sg, sub(&f), i, j++, &count))
                return false;
        } else if (f.num == 3) {
            if (!text_field(d, &f, &rs.schema_url, "schemaUrl: invalid UTF-8 or a NUL", &why))
                return false;
        } else {
            ignored(d, "resource entry", &f);
        }
    }
    if (r < 0)
        return false;
    if (why) {
        otlp_out_restore(&d->o, m0);
        size_t n = sg->reject_each && count ? count : 1;
        for (size_t x = 0; x < n; x++)
            otlp_out_reject(&d->o, "%s[%zu]: %s", sg->list, i, why);
        return true;
    }
    if (!otlp_out_room(&d->o, &b->resources, b->n_resources, &d->o.cap_res, sizeof *b->resources))
        return false;
    rs.attrs.kv = rs.attrs.n ? b->kvs + rs.attrs.first : NULL; /* for the lookups below; set again at the end */
    otlp_value_string(otlp_attr(&rs.attrs, "service.name"), &rs.service_name);
    otlp_value_string(otlp_attr(&rs.attrs, "service.version"), &rs.service_version);
    otlp_value_string(otlp_attr(&rs.attrs, "pacer.session"), &rs.session);
    b->resources[b->n_resources] = rs;
    otlp_batch_set_owner(d->o.b, m0.items, (long)b->n_resources++, -1, NULL);
    return true;
}

static int decode(const uint8_t *body, size_t len, otlp_batch *b, const signal *sg, char *err, size_t err_size)
{
    pdec d = {.o = {.b = b}, .base = body};
    msg m = {body, body + len};
    pf f;
    int r;
    size_t i = 0;
    while ((r = next(&d, &m, &f)) > 0) {
        if (f.num == 1) {
            if (!want(&d, &f, WT_LEN) || !parse_entry(&d, sg, sub(&f), i++))
                break;
        } else {
            ignored(&d, "request", &f);
        }
    }
    return otlp_out_end(&d.o, d.bad ? d.err : NULL, d.has_ign ? d.ign : NULL, err, err_size);
}

int otlp_proto_decode_traces(const uint8_t *body, size_t len, otlp_batch *b, char *err, size_t err_size)
{
    static const signal sg = {"resourceSpans", "scopeSpans", "spans", true, parse_span};
    return decode(body, len, b, &sg, err, err_size);
}

int otlp_proto_decode_logs(const uint8_t *body, size_t len, otlp_batch *b, char *err, size_t err_size)
{
    static const signal sg = {"resourceLogs", "scopeLogs", "logRecords", true, parse_log};
    return decode(body, len, b, &sg, err, err_size);
}

int otlp_proto_decode_metrics(const uint8_t *body, size_t len, otlp_batch *b, char *err, size_t err_size)
{
    static const signal sg = {"resourceMetrics", "scopeMetrics", "metrics", false, parse_metric};
    return decode(body, len, b, &sg, err, err_size);
}

/* ---- rendering nested values as OTLP JSON ---- */

void otlp_proto_write_list(jbuf *b, otlp_value_type type, const uint8_t *p, size_t len)
{
    /* the bytes were checked when decoded: a failure here only stops early */
    pdec d = {.base = p};
    otlp_batch scratch = {0};
    d.o.b = &scratch;
    msg m = {p, p + len};
    pf f;
    jbuf_open(b, '[');
    while (next(&d, &m, &f) > 0) {
        if (f.num != 1 || f.wt != WT_LEN)
            continue;
        const char *why = NULL;
        if (type == OTLP_ARRAY) {
            otlp_value v;
            if (!any_value(&d, sub(&f), &v, false, 1, &why))
                break;
            otlp_write_value(b, &v);
        } else {
            otlp_kv kv;
            if (!key_value(&d, sub(&f), &kv, false, 1, &why))
                break;
            otlp_write_kv(b, &kv);
        }
    }
    jbuf_close(b, ']');
    otlp_batch_clear(&scratch);
}

/* ---- responses ---- */

static size_t put_varint(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    do {
        out[n++] = (uint8_t)(v & 0x7f) | (v > 0x7f ? 0x80 : 0);
        v >>= 7;
    } while (v);
    return n;
}

/* {1: varint a (when a_set), 2: string s (when not empty)}, optionally
 * wrapped as field 1 of an outer message. */
static uint8_t *small_message(bool wrap, bool a_set, uint64_t a, const char *s, size_t *ret_len)
{
    size_t sl = s ? strlen(s) : 0;
    uint8_t *out = malloc(sl + 32);
    if (!out)
        return NULL;
    uint8_t inner[24];
    size_t n = 0;
    if (a_set) {
        inner[n++] = 0x08;
        n += put_varint(inner + n, a);
    }
    uint8_t scratch[10];
    size_t body = n + (sl ? 1 + put_varint(scratch, sl) + sl : 0);
    size_t o = 0;
    if (wrap) {
        out[o++] = 0x0a;
        o += put_varint(out + o, body);
    }
    memcpy(out + o, inner, n);
    o += n;
    if (sl) {
        out[o++] = 0x12;
        o += put_varint(out + o, sl);
        memcpy(out + o, s, sl);
        o += sl;
    }
    *ret_len = o;
    return out;
}

uint8_t *otlp_proto_response(size_t rejected, const char *message, size_t *ret_len)
{
    if (!rejected && !(message && *message)) {
        *ret_len = 0;
        return malloc(1);
    }
    return small_message(true, rejected > 0, rejected, message, ret_len);
}

/* A message being written: fields appended, each whole. */
typedef struct pbuf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} pbuf;

static void pbuf_put(pbuf *b, const void *data, size_t n)
{
    if (b->oom)
        return;
    if (!ARRAY_GROW(b->p, b->cap, b->n + n, 64)) {
        b->oom = true;
        return;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void pbuf_varint(pbuf *b, unsigned num, uint64_t v)
{
    uint8_t tmp[24];
    size_t n = put_varint(tmp, (uint64_t)num << 3);
    n += put_varint(tmp + n, v);
    pbuf_put(b, tmp, n);
}

/* A length-delimited field (a string, bytes, a message); proto3 leaves an
 * empty one out. */
static void pbuf_len(pbuf *b, unsigned num, const void *data, size_t len)
{
    if (!len)
        return;
    uint8_t tmp[24];
    size_t n = put_varint(tmp, (uint64_t)num << 3 | 2);
    n += put_varint(tmp + n, len);
    pbuf_put(b, tmp, n);
    pbuf_put(b, data, len);
}

static void pbuf_str(pbuf *b, unsigned num, const char *s)
{
    pbuf_len(b, num, s, s ? strlen(s) : 0);
}

uint8_t *otlp_proto_status(int code, const char *message, const char *bad_field, const char *bad_why,
                           size_t *ret_len)
{
    /* google.rpc.Status { int32 code = 1; string message = 2; repeated Any details = 3 } */
    pbuf st = {0}, bad = {0}, any = {0}, v = {0};
    if (code)
        pbuf_varint(&st, 1, (uint64_t)(int64_t)code); /* int32: negative ones sign-extended */
    pbuf_str(&st, 2, message);
    if (bad_field) {
        /* google.rpc.BadRequest { repeated FieldViolation field_violations = 1 }
         * FieldViolation { string field = 1; string description = 2 } */
        pbuf_str(&v, 1, bad_field);
        pbuf_str(&v, 2, bad_why);
        pbuf_len(&bad, 1, v.p ? v.p : (const uint8_t *)"", v.n);
        /* google.protobuf.Any { string type_url = 1; bytes value = 2 } */
        pbuf_str(&any, 1, OTLP_BAD_REQUEST_TYPE);
        pbuf_len(&any, 2, bad.p ? bad.p : (const uint8_t *)"", bad.n);
        pbuf_len(&st, 3, any.p, any.n);
    }
    bool oom = st.oom || bad.oom || any.oom || v.oom;
    free(v.p);
    free(bad.p);
    free(any.p);
    if (oom) {
        free(st.p);
        return NULL;
    }
    *ret_len = st.n;
    return st.p ? st.p : malloc(1);
}
