/* libFuzzer target for pacerd's OTLP/HTTP JSON decoder (src/server/otlp.c).
 * Every input is decoded as traces, logs and metrics. Either the request is
 * refused with a reason, or every decoded item holds what the decoder
 * promises (valid ids, ordered times, names within the limit, checked
 * attributes readable through the accessors), and rejected items come with
 * a message. ASan and UBSan (the fuzz build's flags) catch the rest. */
#include "otlp.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk_attrs(const json_t *attrs)
{
    size_t i;
    json_t *kv;
    json_array_foreach(attrs, i, kv) {
        const char *key = json_string_value(json_object_get(kv, "key"));
        if (!key)
            abort();
        const json_t *v = otlp_attr(attrs, key);
        const char *s;
        double d;
        int64_t n;
        bool b;
        if (v) {
            (void)otlp_value_string(v, &s);
            (void)otlp_value_double(v, &d);
            (void)otlp_value_int(v, &n);
            (void)otlp_value_bool(v, &b);
        }
    }
}

static void check(int r, otlp_batch *b, const char *err)
{
    if (r < 0) {
        if ((r != -EBADMSG && r != -ENOMEM) || !err[0] || b->root || b->n_spans || b->n_logs || b->n_points)
            abort();
        return;
    }
    if (b->rejected && !b->reject_message)
        abort();
    for (size_t i = 0; i < b->n_resources; i++)
        walk_attrs(b->resources[i].attributes);
    for (size_t i = 0; i < b->n_spans; i++) {
        const otlp_span *s = &b->spans[i];
        static const uint8_t zero[16];
        if (s->resource >= b->n_resources || !s->name || strlen(s->name) > OTLP_MAX_NAME ||
            s->end_ns < s->start_ns || s->start_ns < 0 || s->kind < 0 || s->kind > 5 || s->status_code < 0 ||
            s->status_code > 2 || !memcmp(s->trace_id, zero, 16) || !memcmp(s->span_id, zero, 8))
            abort();
        walk_attrs(s->attributes);
    }
    for (size_t i = 0; i < b->n_logs; i++) {
        if (b->logs[i].resource >= b->n_resources || b->logs[i].time_ns <= 0 || b->logs[i].severity_number < 0 ||
            b->logs[i].severity_number > 24)
            abort();
        walk_attrs(b->logs[i].attributes);
    }
    for (size_t i = 0; i < b->n_points; i++) {
        if (b->points[i].resource >= b->n_resources || !b->points[i].name || b->points[i].time_ns <= 0)
            abort();
        walk_attrs(b->points[i].attributes);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int (*const decoders[])(const char *, size_t, otlp_batch *, char *, size_t) = {
        otlp_decode_traces, otlp_decode_logs, otlp_decode_metrics};
    for (size_t k = 0; k < 3; k++) {
        otlp_batch b;
        memset(&b, 0, sizeof b);
        char err[512] = "";
        int r = decoders[k]((const char *)data, size, &b, err, sizeof err);
        check(r, &b, err);
        otlp_batch_clear(&b);
    }
    return 0;
}
