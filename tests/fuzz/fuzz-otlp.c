/* libFuzzer target for pacerd's streaming OTLP/HTTP JSON decoder (src/server/otlp.c).
 * Every input is decoded as traces, logs and metrics. Either the request is
 * refused with a reason, or every decoded item holds what the decoder
 * promises (valid ids, ordered times, names within the limit, checked
 * attributes readable through the accessors), and rejected items come with
 * a message. ASan and UBSan (the fuzz build's flags) catch the rest. */
#include "ingest/otlp.h"

#include <pacer/base/json.h>

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every attribute is readable by its key; its JSON text compacts into the
 * room the contract promises. */
static void walk_attrs(const otlp_attrs *attrs)
{
    if (attrs->n && (!attrs->kv || !attrs->json))
        abort();
    for (size_t i = 0; i < attrs->n; i++) {
        const otlp_kv *kv = &attrs->kv[i];
        if (!kv->key || strlen(kv->key) != kv->key_len || kv->key_len > OTLP_MAX_NAME || !kv->json)
            abort();
        const otlp_value *v = otlp_attr(attrs, kv->key);
        const char *s;
        double d;
        int64_t n;
        bool b;
        if (v) {
            if (otlp_value_string(v, &s) && strlen(s) != v->len)
                abort();
            (void)otlp_value_double(v, &d);
            (void)otlp_value_int(v, &n);
            (void)otlp_value_bool(v, &b);
        }
        char *out = malloc(kv->json_len + 1);
        if (!out)
            abort();
        if (json_compact(kv->json, kv->json_len, out) > kv->json_len || out[0] != '{')
            abort();
        free(out);
    }
}

static void check(int r, otlp_batch *b, const char *err)
{
    if (r < 0) {
        if ((r != -EBADMSG && r != -ENOMEM) || !err[0] || b->text || b->n_spans || b->n_logs || b->n_points)
            abort();
        return;
    }
    if (b->rejected && !b->reject_message)
        abort();
    for (size_t i = 0; i < b->n_resources; i++)
        walk_attrs(&b->resources[i].attrs);
    for (size_t i = 0; i < b->n_spans; i++) {
        const otlp_span *s = &b->spans[i];
        static const uint8_t zero[16];
        if (s->resource >= b->n_resources || !s->name || strlen(s->name) > OTLP_MAX_NAME ||
            s->end_ns < s->start_ns || s->start_ns < 0 || s->kind < 0 || s->kind > 5 || s->status_code < 0 ||
            s->status_code > 2 || !memcmp(s->trace_id, zero, 16) || !memcmp(s->span_id, zero, 8))
            abort();
        walk_attrs(&s->attrs);
    }
    for (size_t i = 0; i < b->n_logs; i++) {
        if (b->logs[i].resource >= b->n_resources || b->logs[i].time_ns <= 0 || b->logs[i].severity_number < 0 ||
            b->logs[i].severity_number > 24)
            abort();
        walk_attrs(&b->logs[i].attrs);
    }
    for (size_t i = 0; i < b->n_points; i++) {
        if (b->points[i].resource >= b->n_resources || !b->points[i].name || b->points[i].time_ns <= 0)
            abort();
        walk_attrs(&b->points[i].attrs);
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
