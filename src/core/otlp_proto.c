/* OTLP/HTTP protobuf ⇄ JSON, gzip, and the protobuf answer, for the
 * uploader (otlp.h).
 *
 * One table of the messages pacer sends (field numbers and types of
 * opentelemetry-proto v1) drives both directions:
 *  - protobuf → JSON (otlp_proto_to_json), the uploader's JSON protocol:
 *    otlp.c builds every request in protobuf, and the JSON says exactly
 *    what the protobuf says, in the canonical JSON mapping (64-bit integers
 *    as strings, ids as hex, members in field order). The same walk checks
 *    a spooled item without writing anything (otlp_proto_check): a field
 *    the table does not name, a wrong wire type, a length past the end, a
 *    string that is not UTF-8 or holds a NUL, or nesting past MAX_DEPTH
 *    make it refuse the bytes;
 *  - JSON → protobuf (otlp_json_to_proto), for tools that write OTLP JSON
 *    (pacerd's load generator, the tests' reference encoder). Members the
 *    table does not name are an error rather than silently left out.
 */
#include "otlp.h"
#include "pbuf.h"
#include "zlib_dl.h"

#include <pacer/base/json.h>
#include <pacer/base/utf8.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum ptype {
    P_MESSAGE, /* a JSON object */
    P_STRING,
    P_ID,      /* hex text → bytes */
    P_ENUM,    /* a JSON integer → varint */
    P_BOOL,
    P_INT64,   /* a decimal string (or number) → varint (two's complement) */
    P_FIXED64, /* a decimal string of nanoseconds → fixed64 */
    P_SFIXED64,
    P_DOUBLE,
} ptype;

typedef struct pmsg pmsg;
typedef struct pfield {
    const char *json;
    unsigned num;
    ptype type;
    const pmsg *msg;
    bool rep; /* repeated: a JSON array */
} pfield;
struct pmsg {
    const pfield *fields;
    size_t n;
};

#define MSG(name, ...)                                                                                                \
    static const pfield name##_fields[] = {__VA_ARGS__};                                                              \
    static const pmsg name = {name##_fields, sizeof name##_fields / sizeof name##_fields[0]}
#define REP true

static const pmsg any_value, key_value;
MSG(array_value, {"values", 1, P_MESSAGE, &any_value, REP});
MSG(kvlist_value, {"values", 1, P_MESSAGE, &key_value, REP});
MSG(any_value, {"stringValue", 1, P_STRING, NULL, 0}, {"boolValue", 2, P_BOOL, NULL, 0},
    {"intValue", 3, P_INT64, NULL, 0}, {"doubleValue", 4, P_DOUBLE, NULL, 0},
    {"arrayValue", 5, P_MESSAGE, &array_value, 0}, {"kvlistValue", 6, P_MESSAGE, &kvlist_value, 0});
MSG(key_value, {"key", 1, P_STRING, NULL, 0}, {"value", 2, P_MESSAGE, &any_value, 0});
MSG(resource, {"attributes", 1, P_MESSAGE, &key_value, REP});
MSG(scope, {"name", 1, P_STRING, NULL, 0}, {"version", 2, P_STRING, NULL, 0});
MSG(event, {"timeUnixNano", 1, P_FIXED64, NULL, 0}, {"name", 2, P_STRING, NULL, 0},
    {"attributes", 3, P_MESSAGE, &key_value, REP});
/* traceId and spanId first: a spooled span is the rest (span_body) */
MSG(span, {"traceId", 1, P_ID, NULL, 0}, {"spanId", 2, P_ID, NULL, 0}, {"name", 5, P_STRING, NULL, 0},
    {"kind", 6, P_ENUM, NULL, 0}, {"startTimeUnixNano", 7, P_FIXED64, NULL, 0},
    {"endTimeUnixNano", 8, P_FIXED64, NULL, 0}, {"attributes", 9, P_MESSAGE, &key_value, REP},
    {"events", 11, P_MESSAGE, &event, REP});
static const pmsg span_body = {span_fields + 2, sizeof span_fields / sizeof span_fields[0] - 2};
MSG(scope_spans, {"scope", 1, P_MESSAGE, &scope, 0}, {"spans", 2, P_MESSAGE, &span, REP});
MSG(resource_spans, {"resource", 1, P_MESSAGE, &resource, 0}, {"scopeSpans", 2, P_MESSAGE, &scope_spans, REP});
MSG(traces_request, {"resourceSpans", 1, P_MESSAGE, &resource_spans, REP});
MSG(log_record, {"timeUnixNano", 1, P_FIXED64, NULL, 0}, {"severityNumber", 2, P_ENUM, NULL, 0},
    {"severityText", 3, P_STRING, NULL, 0}, {"body", 5, P_MESSAGE, &any_value, 0},
    {"attributes", 6, P_MESSAGE, &key_value, REP}, {"observedTimeUnixNano", 11, P_FIXED64, NULL, 0});
MSG(scope_logs, {"scope", 1, P_MESSAGE, &scope, 0}, {"logRecords", 2, P_MESSAGE, &log_record, REP});
MSG(resource_logs, {"resource", 1, P_MESSAGE, &resource, 0}, {"scopeLogs", 2, P_MESSAGE, &scope_logs, REP});
MSG(logs_request, {"resourceLogs", 1, P_MESSAGE, &resource_logs, REP});
MSG(number_point, {"timeUnixNano", 3, P_FIXED64, NULL, 0}, {"asDouble", 4, P_DOUBLE, NULL, 0},
    {"asInt", 6, P_SFIXED64, NULL, 0}, {"attributes", 7, P_MESSAGE, &key_value, REP});
MSG(gauge, {"dataPoints", 1, P_MESSAGE, &number_point, REP});
MSG(metric, {"name", 1, P_STRING, NULL, 0}, {"unit", 3, P_STRING, NULL, 0}, {"gauge", 5, P_MESSAGE, &gauge, 0});
MSG(scope_metrics, {"scope", 1, P_MESSAGE, &scope, 0}, {"metrics", 2, P_MESSAGE, &metric, REP});
/* a spooled metrics record: its metrics, as ScopeMetrics frames them */
static const pmsg metric_list = {scope_metrics_fields + 1, 1};
MSG(resource_metrics, {"resource", 1, P_MESSAGE, &resource, 0}, {"scopeMetrics", 2, P_MESSAGE, &scope_metrics, REP});
MSG(metrics_request, {"resourceMetrics", 1, P_MESSAGE, &resource_metrics, REP});

static const pmsg *request_of(pacer_signal signal)
{
    return signal == PACER_SIGNAL_LOGS ? &logs_request : signal == PACER_SIGNAL_METRICS ? &metrics_request
                                                                                         : &traces_request;
}

/* ---- JSON → protobuf ---- */

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static bool encode_message(jread *r, const pmsg *m, pbuf *out);

/* One value of field f at the reader. */
static bool encode_value(jread *r, const pfield *f, pbuf *out)
{
    if (f->type == P_MESSAGE) {
        size_t mark = pb_open(out, f->num);
        bool ok = encode_message(r, f->msg, out);
        pb_close(out, mark);
        return ok;
    }
    jvalue v;
    if (!jread_value(r, &v))
        return false;
    int64_t i;
    uint64_t u;
    double d;
    switch (f->type) {
    case P_STRING:
        if (v.type != JT_STRING)
            return false;
        pb_bytes(out, f->num, v.s, v.len);
        return true;
    case P_ID: {
        if (v.type != JT_STRING || v.len % 2 || v.len > 64)
            return false;
        uint8_t id[32];
        for (size_t k = 0; k < v.len / 2; k++) {
            int hi = hexval(v.s[2 * k]), lo = hexval(v.s[2 * k + 1]);
            if (hi < 0 || lo < 0)
                return false;
            id[k] = (uint8_t)(hi << 4 | lo);
        }
        pb_bytes(out, f->num, id, v.len / 2);
        return true;
    }
    case P_ENUM:
        if (!jvalue_int64(&v, &i) || i < 0)
            return false;
        pb_uint(out, f->num, (uint64_t)i);
        return true;
    case P_BOOL:
        if (v.type != JT_TRUE && v.type != JT_FALSE)
            return false;
        pb_uint(out, f->num, v.type == JT_TRUE);
        return true;
    case P_INT64:
    case P_SFIXED64:
        if (v.type == JT_STRING) {
            char *end;
            errno = 0;
            i = strtoll(v.s, &end, 10);
            if (errno || *end || !v.len)
                return false;
        } else if (!jvalue_int64(&v, &i)) {
            return false;
        }
        if (f->type == P_INT64)
            pb_uint(out, f->num, (uint64_t)i);
        else
            pb_fixed64(out, f->num, (uint64_t)i);
        return true;
    case P_FIXED64:
        if (v.type == JT_STRING) {
            char *end;
            errno = 0;
            u = strtoull(v.s, &end, 10);
            if (errno || *end || !v.len || v.s[0] == '-')
                return false;
        } else if (!jvalue_uint64(&v, &u)) {
            return false;
        }
        pb_fixed64(out, f->num, u);
        return true;
    case P_DOUBLE:
        if (v.type == JT_NULL) /* the JSON writer's NaN: protobuf has the real one */
            d = __builtin_nan("");
        else if (!jvalue_double(&v, &d))
            return false;
        pb_double(out, f->num, d);
        return true;
    default: return false;
    }
}

static bool encode_message(jread *r, const pmsg *m, pbuf *out)
{
    const char *key;
    size_t kl;
    if (!jread_enter_object(r))
        return false;
    int more;
    while ((more = jread_member(r, &key, &kl)) > 0) {
        const pfield *f = NULL;
        for (size_t i = 0; i < m->n && !f; i++)
            if (strlen(m->fields[i].json) == kl && memcmp(m->fields[i].json, key, kl) == 0)
                f = &m->fields[i];
        if (!f)
            return false; /* a member the table lacks: an encoder and table out of step */
        if (jread_peek(r) == JT_ARRAY) {
            if (!jread_enter_array(r))
                return false;
            int e;
            while ((e = jread_element(r)) > 0)
                if (!encode_value(r, f, out))
                    return false;
            if (e < 0)
                return false;
        } else if (!encode_value(r, f, out)) {
            return false;
        }
    }
    return more == 0;
}

uint8_t *otlp_json_to_proto(pacer_signal signal, const char *json, size_t len, size_t *ret_len)
{
    char *text = malloc(len + 1);
    if (!text)
        return NULL;
    memcpy(text, json, len);
    jread r;
    jread_init(&r, text, len, NULL, 0);
    pbuf out = {0};
    bool ok = encode_message(&r, request_of(signal), &out) && jread_end(&r, "request") && !out.failed;
    free(text);
    if (!ok) {
        pb_free(&out);
        return NULL;
    }
    return pb_steal(&out, ret_len);
}

/* ---- protobuf → JSON ---- */

/* Requests are 8 messages deep (an attribute's array value); anything
 * deeper is not pacer's, and the JSON stays well inside a reader's depth. */
#define MAX_DEPTH 20

static bool walk(const uint8_t *p, const uint8_t *end, const pmsg *m, jbuf *out, int depth);

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* One value of field f (wire type wt) at *p; to out as JSON when not NULL. */
static bool walk_value(const uint8_t **p, const uint8_t *end, const pfield *f, unsigned wt, jbuf *out, int depth)
{
    uint64_t v;
    char num[24];
    static const char hex[] = "0123456789abcdef";
    switch (f->type) {
    case P_MESSAGE:
    case P_STRING:
    case P_ID: {
        if (wt != PB_LEN || !pb_read_varint(p, end, &v) || v > (uint64_t)(end - *p))
            return false;
        const uint8_t *s = *p;
        *p += v;
        if (f->type == P_MESSAGE)
            return walk(s, s + v, f->msg, out, depth + 1);
        if (f->type == P_STRING) {
            if (memchr(s, 0, v) || !utf8_valid((const char *)s, v))
                return false;
            if (out)
                jbuf_strn(out, (const char *)s, v);
            return true;
        }
        if (v > 32)
            return false;
        char h[65];
        for (size_t i = 0; i < v; i++) {
            h[2 * i] = hex[s[i] >> 4];
            h[2 * i + 1] = hex[s[i] & 15];
        }
        if (out)
            jbuf_strn(out, h, 2 * v);
        return true;
    }
    case P_ENUM:
    case P_BOOL:
    case P_INT64:
        if (wt != PB_VARINT || !pb_read_varint(p, end, &v))
            return false;
        if (f->type == P_BOOL) {
            if (v > 1)
                return false;
            if (out)
                jbuf_bool(out, v != 0);
        } else if (f->type == P_ENUM) {
            if (v > INT32_MAX)
                return false;
            if (out)
                jbuf_i64(out, (int64_t)v);
        } else if (out) { /* 64-bit integers are strings in OTLP JSON */
            snprintf(num, sizeof num, "%" PRId64, (int64_t)v);
            jbuf_str(out, num);
        }
        return true;
    case P_FIXED64:
    case P_SFIXED64:
    case P_DOUBLE:
        if (wt != PB_I64 || end - *p < 8)
            return false;
        v = le64(*p);
        *p += 8;
        if (!out)
            return true;
        if (f->type == P_DOUBLE) {
            double d;
            memcpy(&d, &v, 8);
            jbuf_double(out, d); /* NaN: null, as the JSON writer has it */
            return true;
        }
        if (f->type == P_FIXED64)
            snprintf(num, sizeof num, "%" PRIu64, v);
        else
            snprintf(num, sizeof num, "%" PRId64, (int64_t)v);
        jbuf_str(out, num);
        return true;
    }
    return false;
}

/* The message m in [p, end). Each field once, or a repeated field's
 * elements one after the other (so that each is one JSON member), as
 * pacer's encoder writes them. */
static bool walk(const uint8_t *p, const uint8_t *end, const pmsg *m, jbuf *out, int depth)
{
    if (depth > MAX_DEPTH)
        return false;
    if (out)
        jbuf_open(out, '{');
    const pfield *open = NULL; /* the repeated field whose array is open */
    unsigned seen = 0;
    while (p < end) {
        uint64_t key;
        if (!pb_read_varint(&p, end, &key))
            return false;
        const pfield *f = NULL;
        for (size_t i = 0; i < m->n && !f; i++)
            if (m->fields[i].num == key >> 3)
                f = &m->fields[i];
        if (!f)
            return false;
        if (f != open) {
            unsigned bit = 1u << (f - m->fields);
            if (seen & bit)
                return false;
            seen |= bit;
            if (open && out)
                jbuf_close(out, ']');
            open = f->rep ? f : NULL;
            if (out) {
                jbuf_key(out, f->json);
                if (f->rep)
                    jbuf_open(out, '[');
            }
        }
        if (!walk_value(&p, end, f, (unsigned)(key & 7), out, depth))
            return false;
    }
    if (open && out)
        jbuf_close(out, ']');
    if (out)
        jbuf_close(out, '}');
    return true;
}

char *otlp_proto_to_json(pacer_signal signal, const uint8_t *pb, size_t len, size_t *ret_len)
{
    jbuf out;
    jbuf_init(&out);
    if (!walk(pb, pb + len, request_of(signal), &out, 0)) {
        jbuf_free(&out);
        return NULL;
    }
    return jbuf_steal(&out, ret_len);
}

bool otlp_proto_check(pacer_signal signal, const uint8_t *item, size_t len)
{
    const pmsg *m = signal == PACER_SIGNAL_LOGS ? &log_record : signal == PACER_SIGNAL_METRICS ? &metric_list
                                                                                               : &span_body;
    return walk(item, item + len, m, NULL, 3);
}

uint8_t *otlp_gzip(const void *data, size_t len, size_t *ret_len)
{
    const zlib_api *zl = zlib_api_get();
    if (!zl)
        return NULL;
    z_stream z;
    memset(&z, 0, sizeof z);
    if (zl->deflateInit2_(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, (int)sizeof(z)) !=
        Z_OK)
        return NULL;
    size_t cap = zl->deflateBound(&z, (uLong)len);
    uint8_t *out = malloc(cap);
    if (!out) {
        zl->deflateEnd(&z);
        return NULL;
    }
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int r = zl->deflate(&z, Z_FINISH);
    *ret_len = cap - z.avail_out;
    zl->deflateEnd(&z);
    if (r != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    return out;
}

bool otlp_proto_partial_success(const uint8_t *p, size_t len, int64_t *ret_rejected, char *msg, size_t msg_size)
{
    /* Export…ServiceResponse { partial_success = 1 { rejected = 1; error_message = 2 } } */
    *ret_rejected = 0;
    if (msg_size)
        msg[0] = 0;
    const uint8_t *end = p + len;
    bool any = false;
    while (p < end) {
        uint64_t key = 0, n = 0;
        int shift = 0;
        while (p < end && shift < 64) {
            key |= (uint64_t)(*p & 0x7f) << shift;
            shift += 7;
            if (!(*p++ & 0x80))
                break;
        }
        if ((key & 7) != 2) /* nothing else is expected here */
            return any;
        shift = 0;
        while (p < end && shift < 64) {
            n |= (uint64_t)(*p & 0x7f) << shift;
            shift += 7;
            if (!(*p++ & 0x80))
                break;
        }
        if (n > (uint64_t)(end - p))
            return any;
        const uint8_t *q = p, *qend = p + n;
        p = qend;
        if (key >> 3 != 1)
            continue;
        while (q < qend) {
            uint64_t k = 0, v = 0;
            shift = 0;
            while (q < qend && shift < 64) {
                k |= (uint64_t)(*q & 0x7f) << shift;
                shift += 7;
                if (!(*q++ & 0x80))
                    break;
            }
            shift = 0;
            while (q < qend && shift < 64) {
                v |= (uint64_t)(*q & 0x7f) << shift;
                shift += 7;
                if (!(*q++ & 0x80))
                    break;
            }
            if (k == (1 << 3)) { /* rejected, varint */
                *ret_rejected = (int64_t)v;
                any = true;
            } else if (k == (2 << 3 | 2) && v <= (uint64_t)(qend - q)) {
                if (msg_size)
                    snprintf(msg, msg_size, "%.*s", (int)v, (const char *)q);
                q += v;
                any = true;
            } else {
                break;
            }
        }
    }
    return any;
}
