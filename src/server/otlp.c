/* OTLP/HTTP JSON decoding (otlp.h).
 *
 * Order of checks for one request: nesting depth (a linear scan, so jansson
 * never recurses deeply), then jansson (syntax, UTF-8, NUL), then the shape
 * of the lists, then each item. An item is validated completely before it is
 * appended, so a rejected item leaves nothing behind. */
#include "otlp.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_MAX_LEN 160

/* ---- ids and integers ---- */

static int hex_val(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int b64_val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

bool otlp_parse_id(const char *s, uint8_t *out, size_t n)
{
    size_t len = strlen(s);
    bool nonzero = false;
    if (len == 2 * n) {
        size_t i;
        for (i = 0; i < n; i++) {
            int hi = hex_val(s[2 * i]), lo = hex_val(s[2 * i + 1]);
            if (hi < 0 || lo < 0)
                break;
            out[i] = (uint8_t)(hi << 4 | lo);
            nonzero |= out[i] != 0;
        }
        if (i == n)
            return nonzero;
    }
    /* base64, padded or not: n bytes are ceil(4n/3) characters + padding */
    while (len > 0 && s[len - 1] == '=')
        len--;
    if (len != (4 * n + 2) / 3)
        return false;
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64_val(s[i]);
        if (v < 0)
            return false;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o == n)
                return false;
            out[o++] = (uint8_t)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    if (o != n || acc != 0) /* leftover bits must be zero */
        return false;
    for (size_t i = 0; i < n; i++)
        nonzero |= out[i] != 0;
    return nonzero;
}

bool otlp_parse_int64(const json_t *v, int64_t *ret)
{
    if (json_is_integer(v)) {
        *ret = json_integer_value(v);
        return true;
    }
    if (!json_is_string(v))
        return false;
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    bool neg = false;
    size_t i = 0;
    if (len > 0 && s[0] == '-') {
        neg = true;
        i = 1;
    }
    if (i == len || len - i > 20)
        return false;
    uint64_t acc = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (acc > (UINT64_MAX - d) / 10)
            return false;
        acc = acc * 10 + d;
    }
    if (neg) {
        if (acc > (uint64_t)INT64_MAX + 1)
            return false;
        *ret = acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc;
    } else {
        if (acc > INT64_MAX)
            return false;
        *ret = (int64_t)acc;
    }
    return true;
}

/* An unsigned 64-bit nanosecond timestamp; pacerd keeps them signed (until
 * the year 2262). */
static bool parse_time(const json_t *v, int64_t *ret)
{
    return otlp_parse_int64(v, ret) && *ret >= 0;
}

/* An enum given as an integer in [0, max] or as one of its names. */
static bool parse_enum(const json_t *v, const char *const *names, int max, int *ret)
{
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0 || i > max)
            return false;
        *ret = (int)i;
        return true;
    }
    if (json_is_string(v)) {
        for (int i = 0; i <= max; i++)
            if (names[i] && strcmp(json_string_value(v), names[i]) == 0) {
                *ret = i;
                return true;
            }
    }
    return false;
}

static const char *const span_kinds[] = {
    "SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER",
    "SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER",
};
static const char *const status_codes[] = {"STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"};

/* ---- attribute values ---- */

/* Checks an AnyValue. Returns NULL when valid, else a static reason. */
static const char *check_kvs(const json_t *kvs);

static const char *check_any(const json_t *v)
{
    if (!json_is_object(v))
        return "a value must be an object (AnyValue)";
    const char *key;
    json_t *x;
    int kinds = 0;
    json_object_foreach((json_t *)v, key, x) {
        int64_t i;
        if (strcmp(key, "stringValue") == 0) {
            if (!json_is_string(x))
                return "stringValue must be a string";
        } else if (strcmp(key, "boolValue") == 0) {
            if (!json_is_boolean(x))
                return "boolValue must be true or false";
        } else if (strcmp(key, "intValue") == 0) {
            if (!otlp_parse_int64(x, &i))
                return "intValue must be a 64-bit integer (number or decimal string)";
        } else if (strcmp(key, "doubleValue") == 0) {
            if (!json_is_number(x))
                return "doubleValue must be a number";
        } else if (strcmp(key, "bytesValue") == 0) {
            if (!json_is_string(x))
                return "bytesValue must be a base64 string";
        } else if (strcmp(key, "arrayValue") == 0) {
            json_t *vals = json_object_get(x, "values");
            if (!json_is_object(x) || (vals && !json_is_array(vals)))
                return "arrayValue must be {\"values\":[…]}";
            size_t k;
            json_t *e;
            json_array_foreach(vals, k, e) {
                const char *r = check_any(e);
                if (r)
                    return r;
            }
        } else if (strcmp(key, "kvlistValue") == 0) {
            json_t *vals = json_object_get(x, "values");
            if (!json_is_object(x) || (vals && !json_is_array(vals)))
                return "kvlistValue must be {\"values\":[…]}";
            const char *r = check_kvs(vals);
            if (r)
                return r;
        } else {
            continue; /* unknown members are ignored */
        }
        kinds++;
    }
    if (kinds > 1)
        return "a value holds more than one of stringValue, intValue, …";
    return NULL;
}

static const char *check_kvs(const json_t *kvs)
{
    if (!kvs)
        return NULL;
    if (!json_is_array(kvs))
        return "attributes must be an array of {\"key\",\"value\"}";
    size_t i;
    json_t *kv;
    json_array_foreach(kvs, i, kv) {
        json_t *key = json_object_get(kv, "key");
        if (!json_is_object(kv) || !json_is_string(key))
            return "an attribute must be an object with a string \"key\"";
        if (json_string_length(key) > OTLP_MAX_NAME)
            return "an attribute key is longer than 1024 bytes";
        json_t *val = json_object_get(kv, "value");
        if (val) {
            const char *r = check_any(val);
            if (r)
                return r;
        }
    }
    return NULL;
}

const json_t *otlp_attr(const json_t *attrs, const char *key)
{
    size_t i;
    json_t *kv;
    json_array_foreach(attrs, i, kv) {
        const char *k = json_string_value(json_object_get(kv, "key"));
        if (k && strcmp(k, key) == 0)
            return json_object_get(kv, "value");
    }
    return NULL;
}

bool otlp_value_string(const json_t *v, const char **ret)
{
    const char *s = json_string_value(json_object_get(v, "stringValue"));
    if (s)
        *ret = s;
    return s != NULL;
}

bool otlp_value_double(const json_t *v, double *ret)
{
    json_t *d = json_object_get(v, "doubleValue");
    if (json_is_number(d)) {
        *ret = json_number_value(d);
        return true;
    }
    int64_t i;
    if (otlp_parse_int64(json_object_get(v, "intValue"), &i)) {
        *ret = (double)i;
        return true;
    }
    return false;
}

bool otlp_value_int(const json_t *v, int64_t *ret)
{
    if (otlp_parse_int64(json_object_get(v, "intValue"), ret))
        return true;
    json_t *d = json_object_get(v, "doubleValue");
    if (json_is_number(d)) {
        double x = json_number_value(d);
        if (x == floor(x) && x >= -9.2e18 && x <= 9.2e18) {
            *ret = (int64_t)x;
            return true;
        }
    }
    return false;
}

bool otlp_value_bool(const json_t *v, bool *ret)
{
    json_t *b = json_object_get(v, "boolValue");
    if (json_is_boolean(b))
        *ret = json_is_true(b);
    return json_is_boolean(b);
}

/* ---- batch building ---- */

static bool grow(void **arr, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, c * size);
    if (!p)
        return false;
    *arr = p;
    *cap = c;
    return true;
}

typedef struct decoder {
    otlp_batch *b;
    size_t cap_res, cap_items;
    bool oom;
} decoder;

static void reject(decoder *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reject(decoder *d, const char *fmt, ...)
{
    d->b->rejected++;
    if (d->b->reject_message)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    d->b->reject_message = strdup(buf);
}

void otlp_batch_clear(otlp_batch *b)
{
    json_decref(b->root);
    free(b->resources);
    free(b->spans);
    free(b->logs);
    free(b->points);
    free(b->reject_message);
    memset(b, 0, sizeof *b);
}

static int depth_check(const char *s, size_t n, char *err, size_t err_size)
{
    int depth = 0;
    bool in_str = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (c == '"') {
            in_str = true;
        } else if (c == '{' || c == '[') {
            if (++depth > OTLP_MAX_DEPTH) {
                snprintf(err, err_size, "JSON nested deeper than %d levels at byte %zu", OTLP_MAX_DEPTH, i);
                return -EBADMSG;
            }
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return 0;
}

/* Parses the body and returns the array under `list` (NULL when absent). */
static int load(const char *body, size_t len, const char *list, otlp_batch *b, json_t **ret_list,
                char *err, size_t err_size)
{
    int r = depth_check(body, len, err, err_size);
    if (r < 0)
        return r;
    json_error_t je;
    json_t *root = json_loadb(body, len, 0, &je);
    if (!root) {
        snprintf(err, err_size, "invalid JSON at line %d, column %d: %s", je.line, je.column, je.text);
        return -EBADMSG;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        snprintf(err, err_size, "the request body must be a JSON object with \"%s\"", list);
        return -EBADMSG;
    }
    json_t *arr = json_object_get(root, list);
    if (arr && !json_is_array(arr)) {
        json_decref(root);
        snprintf(err, err_size, "\"%s\" must be an array", list);
        return -EBADMSG;
    }
    b->root = root;
    *ret_list = arr;
    return 0;
}

/* The resource of one resourceSpans/resourceLogs/resourceMetrics entry.
 * Returns its index, or -1 with the reason in *why. */
static long add_resource(decoder *d, json_t *entry, const char **why)
{
    if (!json_is_object(entry)) {
        *why = "must be an object";
        return -1;
    }
    json_t *res = json_object_get(entry, "resource");
    json_t *attrs = NULL;
    if (res) {
        if (!json_is_object(res)) {
            *why = "resource must be an object";
            return -1;
        }
        attrs = json_object_get(res, "attributes");
        const char *r = check_kvs(attrs);
        if (r) {
            *why = r;
            return -1;
        }
    }
    otlp_batch *b = d->b;
    if (!grow((void **)&b->resources, b->n_resources, &d->cap_res, sizeof *b->resources)) {
        d->oom = true;
        *why = "out of memory";
        return -1;
    }
    otlp_resource *rs = &b->resources[b->n_resources];
    memset(rs, 0, sizeof *rs);
    rs->attributes = attrs;
    const json_t *v;
    if ((v = otlp_attr(attrs, "service.name")))
        otlp_value_string(v, &rs->service_name);
    if ((v = otlp_attr(attrs, "service.version")))
        otlp_value_string(v, &rs->service_version);
    if ((v = otlp_attr(attrs, "pacer.session")))
        otlp_value_string(v, &rs->session);
    return (long)b->n_resources++;
}

/* Iterates entry[scope_list][*][item_list][*], counting the items, so that a
 * bad resource or scope rejects exactly the items under it. */
static size_t count_items(json_t *entry, const char *scope_list, const char *item_list)
{
    size_t n = 0, i;
    json_t *scope;
    json_array_foreach(json_object_get(entry, scope_list), i, scope)
        n += json_array_size(json_object_get(scope, item_list));
    return n;
}

/* ---- traces ---- */

static const char *decode_span(json_t *s, otlp_span *out)
{
    if (!json_is_object(s))
        return "must be an object";
    const char *id = json_string_value(json_object_get(s, "traceId"));
    if (!id || !otlp_parse_id(id, out->trace_id, 16))
        return "traceId: expected 32 hex digits or base64 of 16 bytes, not all zero";
    id = json_string_value(json_object_get(s, "spanId"));
    if (!id || !otlp_parse_id(id, out->span_id, 8))
        return "spanId: expected 16 hex digits or base64 of 8 bytes, not all zero";
    json_t *p = json_object_get(s, "parentSpanId");
    out->has_parent = false;
    if (p) {
        id = json_string_value(p);
        if (!id)
            return "parentSpanId must be a string";
        if (*id) {
            if (!otlp_parse_id(id, out->parent_span_id, 8))
                return "parentSpanId: expected 16 hex digits or base64 of 8 bytes";
            out->has_parent = true;
        }
    }
    json_t *name = json_object_get(s, "name");
    if (!json_is_string(name))
        return "name: expected a string";
    if (json_string_length(name) > OTLP_MAX_NAME)
        return "name: longer than 1024 bytes";
    out->name = json_string_value(name);
    json_t *k = json_object_get(s, "kind");
    out->kind = 0;
    if (k && !parse_enum(k, span_kinds, 5, &out->kind))
        return "kind: expected 0-5 or a SPAN_KIND_* name";
    if (!parse_time(json_object_get(s, "startTimeUnixNano"), &out->start_ns))
        return "startTimeUnixNano: expected a non-negative 64-bit integer";
    if (!parse_time(json_object_get(s, "endTimeUnixNano"), &out->end_ns))
        return "endTimeUnixNano: expected a non-negative 64-bit integer";
    if (out->end_ns < out->start_ns)
        return "endTimeUnixNano is before startTimeUnixNano";
    out->status_code = 0;
    out->status_message = NULL;
    json_t *st = json_object_get(s, "status");
    if (st) {
        if (!json_is_object(st))
            return "status must be an object";
        json_t *c = json_object_get(st, "code");
        if (c && !parse_enum(c, status_codes, 2, &out->status_code))
            return "status.code: expected 0-2 or a STATUS_CODE_* name";
        json_t *m = json_object_get(st, "message");
        if (m && !json_is_string(m))
            return "status.message must be a string";
        out->status_message = json_string_value(m);
    }
    out->attributes = json_object_get(s, "attributes");
    const char *r = check_kvs(out->attributes);
    if (r)
        return r;
    return NULL;
}

int otlp_decode_traces(const char *body, size_t len, otlp_batch *b, char *err, size_t err_size)
{
    json_t *list;
    int r = load(body, len, "resourceSpans", b, &list, err, err_size);
    if (r < 0)
        return r;
    decoder d = {.b = b};
    size_t i, j, k;
    json_t *entry, *scope, *span;
    json_array_foreach(list, i, entry) {
        const char *why = NULL;
        long res = add_resource(&d, entry, &why);
        if (d.oom)
            goto oom;
        if (res < 0) {
            size_t n = count_items(entry, "scopeSpans", "spans");
            for (size_t m = 0; m < (n ? n : 1); m++)
                reject(&d, "resourceSpans[%zu]: %s", i, why);
            continue;
        }
        json_t *scopes = json_object_get(entry, "scopeSpans");
        if (scopes && !json_is_array(scopes)) {
            reject(&d, "resourceSpans[%zu].scopeSpans must be an array", i);
            continue;
        }
        json_array_foreach(scopes, j, scope) {
            json_t *spans = json_object_get(scope, "spans");
            if (!json_is_object(scope) || (spans && !json_is_array(spans))) {
                reject(&d, "resourceSpans[%zu].scopeSpans[%zu]: expected an object with a \"spans\" array", i, j);
                continue;
            }
            const char *scope_name = json_string_value(json_object_get(json_object_get(scope, "scope"), "name"));
            json_array_foreach(spans, k, span) {
                if (!grow((void **)&b->spans, b->n_spans, &d.cap_items, sizeof *b->spans))
                    goto oom;
                otlp_span *out = &b->spans[b->n_spans];
                const char *bad = decode_span(span, out);
                if (bad) {
                    reject(&d, "resourceSpans[%zu].scopeSpans[%zu].spans[%zu].%s", i, j, k, bad);
                    continue;
                }
                out->resource = (uint32_t)res;
                out->scope = scope_name;
                b->n_spans++;
            }
        }
    }
    return 0;
oom:
    otlp_batch_clear(b);
    snprintf(err, err_size, "out of memory");
    return -ENOMEM;
}

/* ---- logs ---- */

static const char *decode_log(json_t *l, otlp_log *out)
{
    if (!json_is_object(l))
        return "must be an object";
    int64_t t = 0, observed = 0;
    json_t *v = json_object_get(l, "timeUnixNano");
    if (v && !parse_time(v, &t))
        return "timeUnixNano: expected a non-negative 64-bit integer";
    v = json_object_get(l, "observedTimeUnixNano");
    if (v && !parse_time(v, &observed))
        return "observedTimeUnixNano: expected a non-negative 64-bit integer";
    out->time_ns = t ? t : observed;
    if (!out->time_ns)
        return "timeUnixNano: missing (and no observedTimeUnixNano)";
    static const char *const sev[25] = {"SEVERITY_NUMBER_UNSPECIFIED"};
    out->severity_number = 0;
    v = json_object_get(l, "severityNumber");
    if (v && !parse_enum(v, sev, 24, &out->severity_number)) {
        /* names other than UNSPECIFIED: SEVERITY_NUMBER_<LEVEL><n> */
        static const char *const levels[] = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"};
        const char *s = json_string_value(v);
        bool ok = false;
        if (s && strncmp(s, "SEVERITY_NUMBER_", 16) == 0)
            for (int lv = 0; lv < 6 && !ok; lv++) {
                size_t n = strlen(levels[lv]);
                if (strncmp(s + 16, levels[lv], n) == 0) {
                    int sub = s[16 + n] ? s[16 + n] - '0' : 1;
                    if (sub >= 1 && sub <= 4 && (!s[16 + n] || !s[17 + n])) {
                        out->severity_number = lv * 4 + sub;
                        ok = true;
                    }
                }
            }
        if (!ok)
            return "severityNumber: expected 0-24 or a SEVERITY_NUMBER_* name";
    }
    v = json_object_get(l, "severityText");
    if (v && !json_is_string(v))
        return "severityText must be a string";
    out->severity_text = json_string_value(v);
    out->body = json_object_get(l, "body");
    if (out->body) {
        const char *r = check_any(out->body);
        if (r)
            return r;
    }
    out->attributes = json_object_get(l, "attributes");
    return check_kvs(out->attributes);
}

int otlp_decode_logs(const char *body, size_t len, otlp_batch *b, char *err, size_t err_size)
{
    json_t *list;
    int r = load(body, len, "resourceLogs", b, &list, err, err_size);
    if (r < 0)
        return r;
    decoder d = {.b = b};
    size_t i, j, k;
    json_t *entry, *scope, *rec;
    json_array_foreach(list, i, entry) {
        const char *why = NULL;
        long res = add_resource(&d, entry, &why);
        if (d.oom)
            goto oom;
        if (res < 0) {
            size_t n = count_items(entry, "scopeLogs", "logRecords");
            for (size_t m = 0; m < (n ? n : 1); m++)
                reject(&d, "resourceLogs[%zu]: %s", i, why);
            continue;
        }
        json_t *scopes = json_object_get(entry, "scopeLogs");
        if (scopes && !json_is_array(scopes)) {
            reject(&d, "resourceLogs[%zu].scopeLogs must be an array", i);
            continue;
        }
        json_array_foreach(scopes, j, scope) {
            json_t *recs = json_object_get(scope, "logRecords");
            if (!json_is_object(scope) || (recs && !json_is_array(recs))) {
                reject(&d, "resourceLogs[%zu].scopeLogs[%zu]: expected an object with a \"logRecords\" array", i, j);
                continue;
            }
            json_array_foreach(recs, k, rec) {
                if (!grow((void **)&b->logs, b->n_logs, &d.cap_items, sizeof *b->logs))
                    goto oom;
                otlp_log *out = &b->logs[b->n_logs];
                const char *bad = decode_log(rec, out);
                if (bad) {
                    reject(&d, "resourceLogs[%zu].scopeLogs[%zu].logRecords[%zu].%s", i, j, k, bad);
                    continue;
                }
                out->resource = (uint32_t)res;
                b->n_logs++;
            }
        }
    }
    return 0;
oom:
    otlp_batch_clear(b);
    snprintf(err, err_size, "out of memory");
    return -ENOMEM;
}

/* ---- metrics ---- */

static const char *decode_point(json_t *p, bool histogram, otlp_point *out)
{
    if (!json_is_object(p))
        return "must be an object";
    if (!parse_time(json_object_get(p, "timeUnixNano"), &out->time_ns) || out->time_ns == 0)
        return "timeUnixNano: expected a positive 64-bit integer";
    out->count = -1;
    if (histogram) {
        if (!otlp_parse_int64(json_object_get(p, "count"), &out->count) || out->count < 0)
            return "count: expected a non-negative 64-bit integer";
        json_t *sum = json_object_get(p, "sum");
        if (sum && !json_is_number(sum))
            return "sum must be a number";
        out->value = sum ? json_number_value(sum) : 0;
    } else {
        json_t *d = json_object_get(p, "asDouble");
        json_t *i = json_object_get(p, "asInt");
        int64_t iv;
        if (d && json_is_number(d))
            out->value = json_number_value(d);
        else if (!d && i && otlp_parse_int64(i, &iv))
            out->value = (double)iv;
        else
            return "expected asDouble (a number) or asInt (a 64-bit integer)";
    }
    if (!isfinite(out->value))
        return "the value is not finite";
    out->attributes = json_object_get(p, "attributes");
    return check_kvs(out->attributes);
}

int otlp_decode_metrics(const char *body, size_t len, otlp_batch *b, char *err, size_t err_size)
{
    static const struct {
        const char *field, *type;
        bool histogram;
    } kinds[] = {
        {"gauge", "gauge", false},
        {"sum", "sum", false},
        {"histogram", "histogram", true},
        {"exponentialHistogram", "exponential_histogram", true},
        {"summary", "summary", true},
    };
    json_t *list;
    int r = load(body, len, "resourceMetrics", b, &list, err, err_size);
    if (r < 0)
        return r;
    decoder d = {.b = b};
    size_t i, j, k, m;
    json_t *entry, *scope, *metric, *point;
    json_array_foreach(list, i, entry) {
        const char *why = NULL;
        long res = add_resource(&d, entry, &why);
        if (d.oom)
            goto oom;
        if (res < 0) {
            reject(&d, "resourceMetrics[%zu]: %s", i, why);
            continue;
        }
        json_t *scopes = json_object_get(entry, "scopeMetrics");
        if (scopes && !json_is_array(scopes)) {
            reject(&d, "resourceMetrics[%zu].scopeMetrics must be an array", i);
            continue;
        }
        json_array_foreach(scopes, j, scope) {
            json_t *metrics = json_object_get(scope, "metrics");
            if (!json_is_object(scope) || (metrics && !json_is_array(metrics))) {
                reject(&d, "resourceMetrics[%zu].scopeMetrics[%zu]: expected an object with a \"metrics\" array", i, j);
                continue;
            }
            json_array_foreach(metrics, k, metric) {
                json_t *name = json_object_get(metric, "name");
                json_t *unit = json_object_get(metric, "unit");
                if (!json_is_string(name) || json_string_length(name) > OTLP_MAX_NAME ||
                    (unit && !json_is_string(unit))) {
                    reject(&d, "resourceMetrics[%zu].scopeMetrics[%zu].metrics[%zu]: expected a string name "
                               "(at most 1024 bytes) and unit", i, j, k);
                    continue;
                }
                size_t kind = 0;
                json_t *data = NULL;
                for (; kind < sizeof kinds / sizeof kinds[0]; kind++)
                    if ((data = json_object_get(metric, kinds[kind].field)))
                        break;
                json_t *points = json_object_get(data, "dataPoints");
                if (!data || !json_is_object(data) || (points && !json_is_array(points))) {
                    reject(&d, "resourceMetrics[%zu].scopeMetrics[%zu].metrics[%zu]: expected one of gauge, sum, "
                               "histogram, exponentialHistogram, summary with a \"dataPoints\" array", i, j, k);
                    continue;
                }
                json_array_foreach(points, m, point) {
                    if (!grow((void **)&b->points, b->n_points, &d.cap_items, sizeof *b->points))
                        goto oom;
                    otlp_point *out = &b->points[b->n_points];
                    const char *bad = decode_point(point, kinds[kind].histogram, out);
                    if (bad) {
                        reject(&d, "resourceMetrics[%zu].scopeMetrics[%zu].metrics[%zu].%s.dataPoints[%zu].%s",
                               i, j, k, kinds[kind].field, m, bad);
                        continue;
                    }
                    out->resource = (uint32_t)res;
                    out->name = json_string_value(name);
                    out->unit = json_string_value(unit);
                    out->type = kinds[kind].type;
                    b->n_points++;
                }
            }
        }
    }
    return 0;
oom:
    otlp_batch_clear(b);
    snprintf(err, err_size, "out of memory");
    return -ENOMEM;
}
