/* Records → OTLP/HTTP JSON (docs/otlp-mapping.md is the contract).
 *
 * Records are grouped by their run (app, version, session, pid): one
 * resource entry each, in order of first appearance. Every non-common scalar
 * field f becomes the attribute pacer.<f>; nested objects flatten to
 * pacer.<o>.<k>; arrays of objects become span events. The encoder is pure:
 * same input, same bytes.
 */
#include "otlp.h"

#include <pacer/pacer.h>

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *otlp_path(spool_signal signal)
{
    switch (signal) {
    case SIGNAL_LOGS: return "/v1/logs";
    case SIGNAL_METRICS: return "/v1/metrics";
    default: return "/v1/traces";
    }
}

static bool is_common(const char *key)
{
    static const char *const common[] = {"type", "ts", "app", "version", "session", "pid"};
    for (size_t i = 0; i < sizeof(common) / sizeof(common[0]); i++)
        if (strcmp(key, common[i]) == 0)
            return true;
    return false;
}

static json_t *any_value(json_t *v)
{
    char num[32];
    switch (json_typeof(v)) {
    case JSON_STRING: return json_pack("{s:O}", "stringValue", v);
    case JSON_INTEGER:
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return json_pack("{s:s}", "intValue", num);
    case JSON_REAL: return json_pack("{s:f}", "doubleValue", json_real_value(v));
    case JSON_TRUE: return json_pack("{s:b}", "boolValue", 1);
    case JSON_FALSE: return json_pack("{s:b}", "boolValue", 0);
    default: return NULL;
    }
}

static void add_attr(json_t *attrs, const char *key, json_t *value)
{
    if (!value)
        return;
    json_array_append_new(attrs, json_pack("{s:s,s:o}", "key", key, "value", value));
}

static void add_str_attr(json_t *attrs, const char *key, const char *s)
{
    add_attr(attrs, key, json_pack("{s:s}", "stringValue", s));
}

/* pacer.<prefix><key> for every scalar member; nested objects one level. */
static void add_fields(json_t *attrs, json_t *obj, const char *prefix, json_t *ret_arrays)
{
    const char *key;
    json_t *v;
    char name[256];
    json_object_foreach(obj, key, v) {
        if (!*prefix && is_common(key))
            continue;
        snprintf(name, sizeof(name), "pacer.%s%s", prefix, key);
        if (json_is_object(v) && !*prefix) {
            char sub[128];
            snprintf(sub, sizeof(sub), "%s.", key);
            add_fields(attrs, v, sub, NULL);
        } else if (json_is_array(v)) {
            if (ret_arrays)
                json_object_set(ret_arrays, key, v);
        } else {
            add_attr(attrs, name, any_value(v));
        }
    }
    if (!*prefix) {
        json_t *type = json_object_get(obj, "type");
        if (json_is_string(type))
            add_attr(attrs, "pacer.type", json_pack("{s:O}", "stringValue", type));
    }
}

static uint64_t fnv(const char *s, uint64_t seed, size_t index)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ seed;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    for (int i = 0; i < 8; i++) {
        h ^= (index >> (8 * i)) & 0xff;
        h *= 0x100000001b3ULL;
    }
    return h;
}

static double num(json_t *rec, const char *key, bool *ok)
{
    json_t *v = json_object_get(rec, key);
    *ok = json_is_number(v);
    return *ok ? json_number_value(v) : 0;
}

/* The record's main duration in ms (see the mapping), 0 when none. */
static double main_duration_ms(json_t *rec, const char *type)
{
    bool ok;
    double v;
    if (strcmp(type, "page") == 0) {
        if ((v = num(rec, "total_ms", &ok)), ok)
            return v;
        double a = num(rec, "initial_draw_ms", &ok), b = num(rec, "api_load_ms", &ok);
        return a > b ? a : b;
    }
    if (strcmp(type, "startup") == 0) {
        if ((v = num(rec, "cold_ms", &ok)), ok)
            return v;
        return num(rec, "warm_ms", &ok);
    }
    return num(rec, "total_ms", &ok);
}

static json_t *span_of(json_t *rec, const char *batch_id, size_t index)
{
    const char *type = json_string_value(json_object_get(rec, "type"));
    type = type ? type : "record";
    json_int_t ts = json_integer_value(json_object_get(rec, "ts"));
    char name[512], tid[33], sid[17], start[24], end[24];
    if (strcmp(type, "page") == 0)
        snprintf(name, sizeof(name), "page %s", json_string_value(json_object_get(rec, "page")) ?: "?");
    else if (strcmp(type, "startup") == 0)
        snprintf(name, sizeof(name), "startup %s", json_string_value(json_object_get(rec, "kind")) ?: "?");
    else if (strcmp(type, "net") == 0)
        snprintf(name, sizeof(name), "%s %s", json_string_value(json_object_get(rec, "method")) ?: "HTTP",
                 json_string_value(json_object_get(rec, "path")) ?: json_string_value(json_object_get(rec, "url")) ?: "");
    else
        snprintf(name, sizeof(name), "%s", type);
    snprintf(tid, sizeof(tid), "%016" PRIx64 "%016" PRIx64, fnv(batch_id, 1, index), fnv(batch_id, 2, index));
    snprintf(sid, sizeof(sid), "%016" PRIx64, fnv(batch_id, 3, index));
    double dur = main_duration_ms(rec, type);
    snprintf(start, sizeof(start), "%" JSON_INTEGER_FORMAT, ts);
    snprintf(end, sizeof(end), "%" JSON_INTEGER_FORMAT, ts + (json_int_t)llround(dur * 1e6));

    json_t *attrs = json_array(), *arrays = json_object(), *events = json_array();
    add_fields(attrs, rec, "", arrays);
    if (strcmp(type, "net") == 0) {
        json_t *v;
        if ((v = json_object_get(rec, "method")) && json_is_string(v))
            add_attr(attrs, "http.request.method", any_value(v));
        if ((v = json_object_get(rec, "url")) && json_is_string(v))
            add_attr(attrs, "url.full", any_value(v));
        if ((v = json_object_get(rec, "status")) && json_is_integer(v))
            add_attr(attrs, "http.response.status_code", any_value(v));
        if ((v = json_object_get(rec, "host")) && json_is_string(v))
            add_attr(attrs, "server.address", any_value(v));
    }
    const char *akey;
    json_t *arr;
    json_object_foreach(arrays, akey, arr) {
        char ev_name[128];
        snprintf(ev_name, sizeof(ev_name), "%s", akey);
        size_t l = strlen(ev_name);
        if (l > 1 && ev_name[l - 1] == 's')
            ev_name[l - 1] = '\0';
        size_t i;
        json_t *el;
        json_array_foreach(arr, i, el) {
            if (!json_is_object(el))
                continue;
            json_t *eattrs = json_array();
            const char *k;
            json_t *v;
            json_object_foreach(el, k, v) {
                char an[160];
                snprintf(an, sizeof(an), "pacer.%s", k);
                add_attr(eattrs, an, any_value(v));
            }
            json_array_append_new(events, json_pack("{s:s,s:s,s:o}", "timeUnixNano", start, "name", ev_name,
                                                    "attributes", eattrs));
        }
    }
    json_decref(arrays);
    return json_pack("{s:s,s:s,s:s,s:i,s:s,s:s,s:o,s:o}", "traceId", tid, "spanId", sid, "name", name, "kind",
                     strcmp(type, "net") == 0 ? 3 : 1, "startTimeUnixNano", start, "endTimeUnixNano", end,
                     "attributes", attrs, "events", events);
}

static json_t *log_of(json_t *rec)
{
    char ts[24];
    snprintf(ts, sizeof(ts), "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(rec, "ts")));
    char *body = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_t *attrs = json_array();
    add_fields(attrs, rec, "", NULL);
    json_t *l = json_pack("{s:s,s:s,s:i,s:s,s:{s:s},s:o}", "timeUnixNano", ts, "observedTimeUnixNano", ts,
                          "severityNumber", 13, "severityText", "WARN", "body", "stringValue", body ? body : "",
                          "attributes", attrs);
    free(body);
    return l;
}

/* Appends one metric per numeric field of a frames record. */
static void metrics_of(json_t *rec, json_t *metrics)
{
    char ts[24];
    snprintf(ts, sizeof(ts), "%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(rec, "ts")));
    json_t *window = json_object_get(rec, "window");
    json_t *refresh = json_object_get(rec, "refresh_ms");
    const char *key;
    json_t *v;
    json_object_foreach(rec, key, v) {
        if (is_common(key) || !json_is_number(v) || strcmp(key, "refresh_ms") == 0)
            continue;
        char name[160];
        snprintf(name, sizeof(name), "pacer.%s.%s", json_string_value(json_object_get(rec, "type")) ?: "record",
                 key);
        json_t *attrs = json_array();
        if (json_is_string(window))
            add_attr(attrs, "pacer.window", any_value(window));
        if (json_is_number(refresh))
            add_attr(attrs, "pacer.refresh_ms", json_pack("{s:f}", "doubleValue", json_number_value(refresh)));
        json_t *dp = json_is_integer(v)
                         ? json_pack("{s:s,s:I,s:o}", "timeUnixNano", ts, "asInt", json_integer_value(v),
                                     "attributes", attrs)
                         : json_pack("{s:s,s:f,s:o}", "timeUnixNano", ts, "asDouble", json_real_value(v),
                                     "attributes", attrs);
        json_array_append_new(metrics, json_pack("{s:s,s:{s:[o]}}", "name", name, "gauge", "dataPoints", dp));
    }
}

static json_t *resource_of(json_t *rec, int64_t spool_dropped)
{
    json_t *attrs = json_array();
    const char *app = json_string_value(json_object_get(rec, "app"));
    const char *version = json_string_value(json_object_get(rec, "version"));
    const char *session = json_string_value(json_object_get(rec, "session"));
    add_str_attr(attrs, "service.name", app ? app : "unknown");
    add_str_attr(attrs, "service.version", version ? version : "unknown");
    add_str_attr(attrs, "pacer.session", session ? session : "");
    json_t *pid = json_object_get(rec, "pid");
    if (json_is_integer(pid))
        add_attr(attrs, "process.pid", any_value(pid));
    add_str_attr(attrs, "telemetry.sdk.name", "pacer");
    add_str_attr(attrs, "telemetry.sdk.version", PACER_VERSION);
    char d[24];
    snprintf(d, sizeof(d), "%" PRId64, spool_dropped);
    add_attr(attrs, "pacer.spool.dropped", json_pack("{s:s}", "intValue", d));
    return json_pack("{s:o}", "attributes", attrs);
}

char *otlp_encode(spool_signal signal, char *const *records, size_t n, const char *batch_id,
                  int64_t spool_dropped, size_t *ret_len, size_t *ret_skipped)
{
    static const char *const top[] = {"resourceSpans", "resourceLogs", "resourceMetrics"};
    static const char *const scoped[] = {"scopeSpans", "scopeLogs", "scopeMetrics"};
    static const char *const items[] = {"spans", "logRecords", "metrics"};
    json_t *groups = json_array();   /* resource entries, in order */
    json_t *by_key = json_object();  /* run key → its item array */
    size_t skipped = 0;

    for (size_t i = 0; i < n; i++) {
        json_t *rec = json_loads(records[i], JSON_DECODE_ANY, NULL);
        if (!json_is_object(rec)) {
            json_decref(rec);
            skipped++;
            continue;
        }
        char key[512];
        json_t *pid = json_object_get(rec, "pid");
        snprintf(key, sizeof(key), "%s\x1f%s\x1f%s\x1f%" JSON_INTEGER_FORMAT,
                 json_string_value(json_object_get(rec, "app")) ?: "",
                 json_string_value(json_object_get(rec, "version")) ?: "",
                 json_string_value(json_object_get(rec, "session")) ?: "",
                 json_is_integer(pid) ? json_integer_value(pid) : 0);
        json_t *list = json_object_get(by_key, key);
        if (!list) {
            list = json_array();
            json_t *scope = json_pack("{s:{s:s,s:s},s:O}", "scope", "name", "pacer", "version", PACER_VERSION,
                                      items[signal], list);
            json_array_append_new(groups, json_pack("{s:o,s:[o]}", "resource", resource_of(rec, spool_dropped),
                                                    scoped[signal], scope));
            json_object_set_new(by_key, key, list);
        }
        if (signal == SIGNAL_TRACES)
            json_array_append_new(list, span_of(rec, batch_id, i));
        else if (signal == SIGNAL_LOGS)
            json_array_append_new(list, log_of(rec));
        else
            metrics_of(rec, list);
        json_decref(rec);
    }
    json_t *doc = json_pack("{s:o}", top[signal], groups);
    json_decref(by_key);
    char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (ret_len)
        *ret_len = body ? strlen(body) : 0;
    if (ret_skipped)
        *ret_skipped = skipped;
    return body;
}
