/* OTLP/HTTP JSON → protobuf, and gzip, for the uploader (otlp.h).
 *
 * The encoder of records (otlp.c) writes OTLP JSON; this turns that text
 * into the Export…ServiceRequest protobuf message it stands for, field by
 * field, from a table of the messages pacer sends (field numbers and types
 * of opentelemetry-proto v1). Members the table does not name are an error
 * rather than silently left out: the tests hold the two encoders to each
 * other and to the .proto files read by an independent decoder.
 *
 * Nested messages are encoded into a buffer of their own and then appended
 * with their length; a request is a few levels deep, so each byte is copied
 * a few times at most.
 */
#include "otlp.h"
#include "zlib_dl.h"

#include <pacer/base/json.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum ptype {
    P_MESSAGE, /* a JSON object (or an array of them: repeated) */
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
} pfield;
struct pmsg {
    const pfield *fields;
    size_t n;
};

#define MSG(name, ...)                                                                                                \
    static const pfield name##_fields[] = {__VA_ARGS__};                                                              \
    static const pmsg name = {name##_fields, sizeof name##_fields / sizeof name##_fields[0]}

static const pmsg any_value, key_value;
MSG(array_value, {"values", 1, P_MESSAGE, &any_value});
MSG(kvlist_value, {"values", 1, P_MESSAGE, &key_value});
MSG(any_value, {"stringValue", 1, P_STRING, NULL}, {"boolValue", 2, P_BOOL, NULL}, {"intValue", 3, P_INT64, NULL},
    {"doubleValue", 4, P_DOUBLE, NULL}, {"arrayValue", 5, P_MESSAGE, &array_value},
    {"kvlistValue", 6, P_MESSAGE, &kvlist_value});
MSG(key_value, {"key", 1, P_STRING, NULL}, {"value", 2, P_MESSAGE, &any_value});
MSG(resource, {"attributes", 1, P_MESSAGE, &key_value});
MSG(scope, {"name", 1, P_STRING, NULL}, {"version", 2, P_STRING, NULL});
MSG(event, {"timeUnixNano", 1, P_FIXED64, NULL}, {"name", 2, P_STRING, NULL},
    {"attributes", 3, P_MESSAGE, &key_value});
MSG(span, {"traceId", 1, P_ID, NULL}, {"spanId", 2, P_ID, NULL}, {"name", 5, P_STRING, NULL},
    {"kind", 6, P_ENUM, NULL}, {"startTimeUnixNano", 7, P_FIXED64, NULL}, {"endTimeUnixNano", 8, P_FIXED64, NULL},
    {"attributes", 9, P_MESSAGE, &key_value}, {"events", 11, P_MESSAGE, &event});
MSG(scope_spans, {"scope", 1, P_MESSAGE, &scope}, {"spans", 2, P_MESSAGE, &span});
MSG(resource_spans, {"resource", 1, P_MESSAGE, &resource}, {"scopeSpans", 2, P_MESSAGE, &scope_spans});
MSG(traces_request, {"resourceSpans", 1, P_MESSAGE, &resource_spans});
MSG(log_record, {"timeUnixNano", 1, P_FIXED64, NULL}, {"severityNumber", 2, P_ENUM, NULL},
    {"severityText", 3, P_STRING, NULL}, {"body", 5, P_MESSAGE, &any_value},
    {"attributes", 6, P_MESSAGE, &key_value}, {"observedTimeUnixNano", 11, P_FIXED64, NULL});
MSG(scope_logs, {"scope", 1, P_MESSAGE, &scope}, {"logRecords", 2, P_MESSAGE, &log_record});
MSG(resource_logs, {"resource", 1, P_MESSAGE, &resource}, {"scopeLogs", 2, P_MESSAGE, &scope_logs});
MSG(logs_request, {"resourceLogs", 1, P_MESSAGE, &resource_logs});
MSG(number_point, {"timeUnixNano", 3, P_FIXED64, NULL}, {"asDouble", 4, P_DOUBLE, NULL},
    {"asInt", 6, P_SFIXED64, NULL}, {"attributes", 7, P_MESSAGE, &key_value});
MSG(gauge, {"dataPoints", 1, P_MESSAGE, &number_point});
MSG(metric, {"name", 1, P_STRING, NULL}, {"unit", 3, P_STRING, NULL}, {"gauge", 5, P_MESSAGE, &gauge});
MSG(scope_metrics, {"scope", 1, P_MESSAGE, &scope}, {"metrics", 2, P_MESSAGE, &metric});
MSG(resource_metrics, {"resource", 1, P_MESSAGE, &resource}, {"scopeMetrics", 2, P_MESSAGE, &scope_metrics});
MSG(metrics_request, {"resourceMetrics", 1, P_MESSAGE, &resource_metrics});

typedef struct pbuf {
    uint8_t *p;
    size_t len, cap;
    bool failed;
} pbuf;

static void put(pbuf *b, const void *p, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (!q) {
            b->failed = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void put_varint(pbuf *b, uint64_t v)
{
    uint8_t out[10];
    size_t n = 0;
    do {
        out[n++] = (uint8_t)(v & 0x7f) | (v > 0x7f ? 0x80 : 0);
        v >>= 7;
    } while (v);
    put(b, out, n);
}

static void put_key(pbuf *b, unsigned num, int wt)
{
    put_varint(b, (uint64_t)num << 3 | (unsigned)wt);
}

static void put_le64(pbuf *b, uint64_t v)
{
    uint8_t out[8];
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)(v >> (8 * i));
    put(b, out, 8);
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static bool encode_message(jread *r, const pmsg *m, pbuf *out);

/* One value of field f at the reader. */
static bool encode_value(jread *r, const pfield *f, pbuf *out)
{
    if (f->type == P_MESSAGE) {
        pbuf sub = {0};
        bool ok = encode_message(r, f->msg, &sub);
        if (ok) {
            put_key(out, f->num, 2);
            put_varint(out, sub.len);
            put(out, sub.p, sub.len);
            ok = !sub.failed;
        }
        free(sub.p);
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
        put_key(out, f->num, 2);
        put_varint(out, v.len);
        put(out, v.s, v.len);
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
        put_key(out, f->num, 2);
        put_varint(out, v.len / 2);
        put(out, id, v.len / 2);
        return true;
    }
    case P_ENUM:
        if (!jvalue_int64(&v, &i) || i < 0)
            return false;
        put_key(out, f->num, 0);
        put_varint(out, (uint64_t)i);
        return true;
    case P_BOOL:
        if (v.type != JT_TRUE && v.type != JT_FALSE)
            return false;
        put_key(out, f->num, 0);
        put_varint(out, v.type == JT_TRUE);
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
        if (f->type == P_INT64) {
            put_key(out, f->num, 0);
            put_varint(out, (uint64_t)i);
        } else {
            put_key(out, f->num, 1);
            put_le64(out, (uint64_t)i);
        }
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
        put_key(out, f->num, 1);
        put_le64(out, u);
        return true;
    case P_DOUBLE:
        if (v.type == JT_NULL) /* the JSON writer's NaN: protobuf has the real one */
            d = __builtin_nan("");
        else if (!jvalue_double(&v, &d))
            return false;
        put_key(out, f->num, 1);
        memcpy(&u, &d, 8);
        put_le64(out, u);
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
    const pmsg *top = signal == PACER_SIGNAL_LOGS ? &logs_request
                      : signal == PACER_SIGNAL_METRICS ? &metrics_request
                                                       : &traces_request;
    char *text = malloc(len + 1);
    if (!text)
        return NULL;
    memcpy(text, json, len);
    jread r;
    jread_init(&r, text, len, NULL, 0);
    pbuf out = {0};
    bool ok = encode_message(&r, top, &out) && jread_end(&r, "request") && !out.failed;
    free(text);
    if (!ok) {
        free(out.p);
        return NULL;
    }
    if (!out.p) /* an empty request is a valid, empty message */
        out.p = malloc(1);
    *ret_len = out.len;
    return out.p;
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
