/* Rows as OTLP JSON (store_json.h). */
#include "store_json.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static bool null(const store_value *v)
{
    return v->type == SV_NULL;
}

static int64_t as_int(const store_value *v)
{
    return v->type == SV_INT ? v->i : v->type == SV_REAL ? (int64_t)v->d : 0;
}

static double as_double(const store_value *v)
{
    return v->type == SV_REAL ? v->d : v->type == SV_INT ? (double)v->i : 0;
}

static const char *as_text(const store_value *v)
{
    return v->type == SV_TEXT ? v->p : NULL;
}

static void kv_hex(jbuf *b, const char *key, const store_value *v)
{
    if (v->type != SV_BLOB || !v->n)
        return;
    char hex[80];
    const uint8_t *u = v->p;
    size_t k = v->n > 32 ? 32 : v->n;
    for (size_t i = 0; i < k; i++)
        snprintf(hex + 2 * i, 3, "%02x", u[i]);
    jbuf_kv_str(b, key, hex);
}

static void kv_ns(jbuf *b, const char *key, int64_t ns)
{
    char num[24];
    snprintf(num, sizeof num, "%" PRId64, ns);
    jbuf_kv_str(b, key, num);
}

/* JSON text stored by ingest (compact, valid), written as a value. */
static void raw_json(jbuf *b, const char *text)
{
    if (!text) {
        jbuf_null(b);
        return;
    }
    if (b->need_comma)
        jbuf_raw(b, ",", 1);
    jbuf_puts(b, text);
    b->need_comma = true;
}

/* The members of a stored JSON object or the elements of an array. */
static void splice(jbuf *b, const char *text)
{
    size_t n = text ? strlen(text) : 0;
    if (n <= 2)
        return;
    if (b->need_comma)
        jbuf_raw(b, ",", 1);
    jbuf_raw(b, text + 1, n - 2);
    b->need_comma = true;
}

/* A REAL column that may hold the text "NaN", "Infinity", "-Infinity". */
static void number_value(jbuf *b, const store_value *v)
{
    switch (v->type) {
    case SV_NULL: jbuf_null(b); break;
    case SV_TEXT: jbuf_str(b, v->p); break;
    case SV_INT: jbuf_i64(b, v->i); break;
    default:
        if (isnan(v->d))
            jbuf_str(b, "NaN");
        else if (isinf(v->d))
            jbuf_str(b, v->d < 0 ? "-Infinity" : "Infinity");
        else
            jbuf_double(b, v->d);
    }
}

static void common_members(jbuf *b, const store_table_desc *t, const store_value *cols, const char *resource,
                           const char *scope)
{
    for (size_t c = 0; c < t->n_cols; c++) {
        const store_column *col = &t->cols[c];
        if (col->source != SRC_COMMON || col->index == PACER_COMMON_TS || null(&cols[c]))
            continue;
        jbuf_kv_str(b, col->name, as_text(&cols[c]));
    }
    jbuf_key(b, "resource");
    raw_json(b, resource);
    jbuf_key(b, "scope");
    raw_json(b, scope);
}

static void field_attr(jbuf *b, const store_column *col, const store_value *v)
{
    const pacer_field *f = col->field;
    char key[160];
    snprintf(key, sizeof key, "pacer.%s", f->name);
    jbuf_open(b, '{');
    jbuf_kv_str(b, "key", key);
    jbuf_key(b, "value");
    jbuf_open(b, '{');
    switch (f->type) {
    case PACER_TYPE_STRING: jbuf_kv_str(b, "stringValue", as_text(v)); break;
    case PACER_TYPE_BOOL: jbuf_kv_bool(b, "boolValue", as_int(v) != 0); break;
    case PACER_TYPE_MS: jbuf_kv_double(b, "doubleValue", as_double(v)); break;
    default: {
        char num[24];
        snprintf(num, sizeof num, "%lld", (long long)as_int(v));
        jbuf_kv_str(b, "intValue", num);
    }
    }
    jbuf_close(b, '}');
    jbuf_close(b, '}');
}

void store_json_span(jbuf *b, enum store_table tb, const store_value *cols, const char *resource, const char *scope)
{
    const store_table_desc *t = store_layout_table(tb);
    int64_t ts = 0, end = 0;
    bool has_end = false;
    int c_attrs = -1, c_extra = -1;
    jbuf_open(b, '{');
    for (size_t i = 0; i < t->n_cols; i++) {
        const store_column *col = &t->cols[i];
        const store_value *v = &cols[i];
        switch (col->source) {
        case SRC_COMMON:
            if (col->index == PACER_COMMON_TS)
                ts = as_int(v);
            break;
        case SRC_END_TS:
            has_end = !null(v);
            end = as_int(v);
            break;
        case SRC_TRACE_ID: kv_hex(b, "traceId", v); break;
        case SRC_SPAN_ID: kv_hex(b, "spanId", v); break;
        case SRC_PARENT_SPAN_ID: kv_hex(b, "parentSpanId", v); break;
        case SRC_SPAN_NAME:
            if (!null(v))
                jbuf_kv_str(b, "name", as_text(v));
            break;
        case SRC_SPAN_KIND:
            if (!null(v))
                jbuf_kv_i64(b, "kind", as_int(v));
            break;
        case SRC_TRACE_STATE:
            if (!null(v))
                jbuf_kv_str(b, "traceState", as_text(v));
            break;
        case SRC_FLAGS:
            if (!null(v))
                jbuf_kv_i64(b, "flags", as_int(v));
            break;
        case SRC_ATTRIBUTES: c_attrs = (int)i; break;
        case SRC_EXTRA: c_extra = (int)i; break;
        default: break;
        }
    }
    if (!has_end)
        end = ts;
    kv_ns(b, "startTimeUnixNano", ts);
    kv_ns(b, "endTimeUnixNano", end);
    jbuf_kv_double(b, "durationMs", (double)(end - ts) / 1e6);
    jbuf_key(b, "status");
    jbuf_open(b, '{');
    for (size_t i = 0; i < t->n_cols; i++) {
        const store_value *v = &cols[i];
        if (t->cols[i].source == SRC_STATUS_CODE)
            jbuf_kv_i64(b, "code", as_int(v));
        else if (t->cols[i].source == SRC_STATUS_MESSAGE && !null(v))
            jbuf_kv_str(b, "message", as_text(v));
    }
    jbuf_close(b, '}');
    jbuf_key(b, "attributes");
    jbuf_open(b, '[');
    if (c_attrs >= 0)
        splice(b, as_text(&cols[c_attrs]));
    if (t->type) {
        jbuf_open(b, '{');
        jbuf_kv_str(b, "key", "pacer.type");
        jbuf_key(b, "value");
        jbuf_open(b, '{');
        jbuf_kv_str(b, "stringValue", t->type->name);
        jbuf_close(b, '}');
        jbuf_close(b, '}');
        for (size_t i = 0; i < t->n_cols; i++)
            if (t->cols[i].source == SRC_FIELD && !null(&cols[i]))
                field_attr(b, &t->cols[i], &cols[i]);
    }
    if (c_extra >= 0)
        splice(b, as_text(&cols[c_extra]));
    jbuf_close(b, ']');
    for (size_t i = 0; i < t->n_cols; i++) {
        enum store_source src = t->cols[i].source;
        const store_value *v = &cols[i];
        if (src == SRC_EVENTS || src == SRC_LINKS) {
            jbuf_key(b, src == SRC_EVENTS ? "events" : "links");
            if (null(v))
                jbuf_puts(b, "[]"), b->need_comma = true;
            else
                raw_json(b, as_text(v));
        } else if (src == SRC_DROPPED && !null(v)) {
            jbuf_key(b, "dropped");
            raw_json(b, as_text(v));
        }
    }
    if (t->type)
        jbuf_kv_str(b, "record", t->type->name);
    common_members(b, t, cols, resource, scope);
    jbuf_close(b, '}');
}

/* The members a log record and a data point write alike: the time, the
 * flags, the attributes (an empty list when none), what the sender
 * dropped. False when col is not one of those. */
static bool shared_member(jbuf *b, const store_column *col, const store_value *v)
{
    switch (col->source) {
    case SRC_COMMON:
        if (col->index == PACER_COMMON_TS && !null(v))
            kv_ns(b, "timeUnixNano", as_int(v));
        return true;
    case SRC_FLAGS:
        if (!null(v))
            jbuf_kv_i64(b, "flags", as_int(v));
        return true;
    case SRC_ATTRIBUTES:
        jbuf_key(b, "attributes");
        if (null(v)) {
            jbuf_puts(b, "[]");
            b->need_comma = true;
        } else {
            raw_json(b, as_text(v));
        }
        return true;
    case SRC_DROPPED:
        if (!null(v)) {
            jbuf_key(b, "dropped");
            raw_json(b, as_text(v));
        }
        return true;
    default: return false;
    }
}

void store_json_log(jbuf *b, const store_value *cols, const char *resource, const char *scope)
{
    const store_table_desc *t = store_layout_table(TABLE_LOGS);
    int c_body = -1, c_any = -1;
    jbuf_open(b, '{');
    for (size_t i = 0; i < t->n_cols; i++) {
        const store_column *col = &t->cols[i];
        const store_value *v = &cols[i];
        if (shared_member(b, col, v) || null(v))
            continue;
        switch (col->source) {
        case SRC_OBSERVED_TS: kv_ns(b, "observedTimeUnixNano", as_int(v)); break;
        case SRC_SEVERITY_NUMBER: jbuf_kv_i64(b, "severityNumber", as_int(v)); break;
        case SRC_SEVERITY_TEXT: jbuf_kv_str(b, "severityText", as_text(v)); break;
        case SRC_EVENT_NAME: jbuf_kv_str(b, "eventName", as_text(v)); break;
        case SRC_LOG_TYPE: jbuf_kv_str(b, "type", as_text(v)); break;
        case SRC_TRACE_ID: kv_hex(b, "traceId", v); break;
        case SRC_SPAN_ID: kv_hex(b, "spanId", v); break;
        case SRC_BODY: c_body = (int)i; break;
        case SRC_BODY_ANY: c_any = (int)i; break;
        default: break;
        }
    }
    if (c_any >= 0) {
        jbuf_key(b, "body");
        raw_json(b, as_text(&cols[c_any]));
    } else if (c_body >= 0) {
        jbuf_key(b, "body");
        jbuf_open(b, '{');
        jbuf_kv_str(b, "stringValue", as_text(&cols[c_body]));
        jbuf_close(b, '}');
    }
    common_members(b, t, cols, resource, scope);
    jbuf_close(b, '}');
}

void store_json_point(jbuf *b, const store_value *cols, const char *resource, const char *scope)
{
    const store_table_desc *t = store_layout_table(TABLE_METRIC_POINTS);
    jbuf_open(b, '{');
    for (size_t i = 0; i < t->n_cols; i++) {
        const store_column *col = &t->cols[i];
        const store_value *v = &cols[i];
        if (shared_member(b, col, v))
            continue;
        if (null(v) && col->source != SRC_VALUE)
            continue;
        switch (col->source) {
        case SRC_START_TS: kv_ns(b, "startTimeUnixNano", as_int(v)); break;
        case SRC_METRIC_NAME: jbuf_kv_str(b, "name", as_text(v)); break;
        case SRC_DESCRIPTION: jbuf_kv_str(b, "description", as_text(v)); break;
        case SRC_UNIT: jbuf_kv_str(b, "unit", as_text(v)); break;
        case SRC_METRIC_TYPE: jbuf_kv_str(b, "type", as_text(v)); break;
        case SRC_VALUE:
            jbuf_key(b, "value");
            number_value(b, v);
            break;
        case SRC_INT_VALUE: {
            char num[24];
            snprintf(num, sizeof num, "%lld", (long long)as_int(v));
            jbuf_kv_str(b, "asInt", num);
            break;
        }
        case SRC_COUNT: kv_ns(b, "count", as_int(v)); break;
        case SRC_SUM:
        case SRC_MIN:
        case SRC_MAX:
            jbuf_key(b, col->name);
            number_value(b, v);
            break;
        case SRC_TEMPORALITY: jbuf_kv_i64(b, "aggregationTemporality", as_int(v)); break;
        case SRC_MONOTONIC: jbuf_kv_bool(b, "isMonotonic", as_int(v) != 0); break;
        case SRC_DATA: splice(b, as_text(v)); break;
        case SRC_EXEMPLARS:
            jbuf_key(b, "exemplars");
            raw_json(b, as_text(v));
            break;
        default: break;
        }
    }
    common_members(b, t, cols, resource, scope);
    jbuf_close(b, '}');
}
