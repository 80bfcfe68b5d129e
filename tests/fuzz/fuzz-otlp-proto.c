/* libFuzzer target for pacerd's OTLP/HTTP protobuf decoder (src/server/otlp_proto.c)
 * and its gzip inflater (src/server/gunzip.c). Every input is decoded as
 * traces, logs and metrics (inflated first when it is gzip data). Either
 * the request is refused with a reason, or every decoded item holds what
 * the decoder promises (valid ids, ordered times, names within the limit,
 * owners in range, valid UTF-8 text) and everything it holds writes as
 * valid JSON (what ingest stores). ASan and UBSan catch the rest. */
#include "ingest/gunzip.h"
#include "ingest/otlp.h"

#include <pacer/base/json.h>
#include <pacer/base/utf8.h>

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The JSON written for what the batch holds reads back whole. */
static void valid_json(jbuf *j)
{
    if (j->failed)
        abort();
    jread r;
    jread_init(&r, j->data, j->len, NULL, 0);
    jvalue v;
    if (!jread_value(&r, &v) || !jread_end(&r, "value"))
        abort();
}

static void walk_attrs(const otlp_attrs *attrs)
{
    if (attrs->n && !attrs->kv)
        abort();
    for (size_t i = 0; i < attrs->n; i++) {
        const otlp_kv *kv = &attrs->kv[i];
        if (kv->key_len > OTLP_MAX_NAME || !utf8_valid(kv->key, kv->key_len) || memchr(kv->key, 0, kv->key_len))
            abort();
        if (kv->has_value && kv->value.type == OTLP_STRING &&
            (strlen(kv->value.s) != kv->value.len || !utf8_valid(kv->value.s, kv->value.len)))
            abort();
    }
    jbuf j;
    jbuf_init(&j);
    otlp_write_attrs(&j, attrs);
    valid_json(&j);
    jbuf_free(&j);
}

static void check(int r, otlp_batch *b, const char *err)
{
    static const uint8_t zero[16];
    if (r < 0) {
        if ((r != -EBADMSG && r != -ENOMEM) || !err[0] || b->n_spans || b->n_logs || b->n_points)
            abort();
        return;
    }
    if ((b->rejected && !b->reject_message) || (b->ignored && !b->ignore_message))
        abort();
    for (size_t i = 0; i < b->n_resources; i++)
        walk_attrs(&b->resources[i].attrs);
    for (size_t i = 0; i < b->n_scopes; i++)
        walk_attrs(&b->scopes[i].attrs);
    for (size_t i = 0; i < b->n_spans; i++) {
        const otlp_span *s = &b->spans[i];
        if (s->resource >= b->n_resources || s->scope >= b->n_scopes || !s->name || strlen(s->name) > OTLP_MAX_NAME ||
            s->end_ns < s->start_ns || s->start_ns < 0 || s->kind < 0 || s->kind > 5 || s->status_code < 0 ||
            s->status_code > 2 || !memcmp(s->trace_id, zero, 16) || !memcmp(s->span_id, zero, 8) ||
            s->first_event + s->n_events > b->n_events || s->first_link + s->n_links > b->n_links)
            abort();
        walk_attrs(&s->attrs);
        for (size_t e = 0; e < s->n_events; e++)
            walk_attrs(&b->events[s->first_event + e].attrs);
        for (size_t l = 0; l < s->n_links; l++)
            walk_attrs(&b->links[s->first_link + l].attrs);
    }
    for (size_t i = 0; i < b->n_logs; i++) {
        const otlp_log *l = &b->logs[i];
        if (l->resource >= b->n_resources || l->scope >= b->n_scopes || l->time_ns <= 0 || l->severity_number < 0 ||
            l->severity_number > 24)
            abort();
        walk_attrs(&l->attrs);
        if (l->has_body) {
            jbuf j;
            jbuf_init(&j);
            otlp_write_value(&j, &l->body);
            valid_json(&j);
            jbuf_free(&j);
        }
    }
    for (size_t i = 0; i < b->n_points; i++) {
        const otlp_point *p = &b->points[i];
        if (p->resource >= b->n_resources || p->scope >= b->n_scopes || !p->name || p->time_ns <= 0 ||
            (p->n_bucket_counts && p->n_bucket_counts != p->n_bounds + 1 && !strcmp(p->type, "histogram")) ||
            p->first_exemplar + p->n_exemplars > b->n_exemplars)
            abort();
        walk_attrs(&p->attrs);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int (*const decoders[])(const uint8_t *, size_t, otlp_batch *, char *, size_t) = {
        otlp_proto_decode_traces, otlp_proto_decode_logs, otlp_proto_decode_metrics};
    char *inflated = NULL;
    size_t len = size;
    char err[512] = "";
    if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
        int g = gunzip(data, size, 1 << 20, &inflated, &len, err, sizeof err);
        if (g < 0) {
            if (!err[0] && g != -ENOMEM)
                abort();
            return 0;
        }
        if (len > 1 << 20 || inflated[len] != 0)
            abort();
        data = (const uint8_t *)inflated;
    }
    for (size_t k = 0; k < 3; k++) {
        otlp_batch b;
        memset(&b, 0, sizeof b);
        err[0] = 0;
        int r = decoders[k](data, len, &b, err, sizeof err);
        check(r, &b, err);
        otlp_batch_clear(&b);
    }
    size_t n;
    uint8_t *resp = otlp_proto_response(len, err, &n);
    free(resp);
    free(inflated);
    return 0;
}
