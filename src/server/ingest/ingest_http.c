/* The OTLP/HTTP front of ingest (ingest.h): POST /v1/traces, /v1/logs,
 * /v1/metrics.
 *
 * request → checks (content type: protobuf or JSON; encoding: gzip or
 *           identity; batch id) → gunzip up to --max-body (gunzip.c)
 *         → ingest_batch (ingest.c: decode, map, clean, store)
 *         → 200 with an Export…ServiceResponse, its partialSuccess the
 *           rejected items or the skipped unknown fields, in the request's
 *           encoding and with its Content-Type; every error answer of the
 *           route, the HTTP layer's too, becomes a google.rpc.Status in the
 *           request's encoding (ingest_http_encode)
 */
#include "ingest.h"
#include "gunzip.h"
#include "otlp.h"

#include <pacer/base/json.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The media types OTLP/HTTP bodies come in, and the encoding of each;
 * an answer carries the request's own (OTLP/HTTP: "the same
 * Content-Type in the response as it received in the request"). */
static const struct {
    const char *type;
    bool proto;
} media[] = {
    {"application/json", false},
    {"application/x-protobuf", true},
    {"application/protobuf", true}, /* the name registered since */
};

/* The request's media type (its Content-Type without parameters), or -1
 * when it is none of them. */
static int media_of(const http_request *rq)
{
    const char *ct = http_header(rq, "Content-Type");
    for (size_t i = 0; ct && i < sizeof media / sizeof media[0]; i++) {
        size_t n = strlen(media[i].type);
        if (strncasecmp(ct, media[i].type, n) == 0 && (!ct[n] || ct[n] == ';' || ct[n] == ' '))
            return (int)i;
    }
    return -1;
}

/* The gRPC code of a status, for the google.rpc.Status of an error answer
 * (OTLP/HTTP does not use it; gRPC's own meanings, so that a client that
 * records it reads what happened: 413 is what a gRPC server says to a
 * message over its limit, and without RetryInfo it is not retryable). */
static int grpc_code(unsigned status)
{
    switch (status) {
    case 400: return 3;  /* INVALID_ARGUMENT */
    case 401: return 16; /* UNAUTHENTICATED */
    case 403: return 7;  /* PERMISSION_DENIED */
    case 404: return 5;  /* NOT_FOUND */
    case 405: return 12; /* UNIMPLEMENTED */
    case 413: return 8;  /* RESOURCE_EXHAUSTED */
    case 415: return 3;
    case 429: return 8;
    case 500: return 13; /* INTERNAL */
    case 501: return 12;
    case 503: return 14; /* UNAVAILABLE */
    default: return 2;   /* UNKNOWN */
    }
}

/* The message of an {"error": "…"} body (malloc'd), or NULL. */
static char *error_message(const http_response *rs)
{
    if (!rs->body || !rs->len)
        return NULL;
    char *text = malloc(rs->len + 1), *msg = NULL;
    if (!text)
        return NULL;
    memcpy(text, rs->body, rs->len);
    jread r;
    jread_init(&r, text, rs->len, NULL, 0);
    const char *k;
    size_t kl;
    jvalue v;
    if (jread_enter_object(&r))
        while (!msg && jread_member(&r, &k, &kl) > 0 && jread_value(&r, &v))
            if (kl == 5 && memcmp(k, "error", 5) == 0 && v.type == JT_STRING)
                msg = strdup(v.s);
    free(text);
    return msg;
}

/* What a 400's message names as bad: the NAME of "NAME: why" when NAME is
 * one word (a header, a parameter, a path into the body), else "" — and
 * why in *ret_why. */
static void bad_part(const char *msg, char *field, size_t field_size, const char **ret_why)
{
    const char *colon = strstr(msg, ": ");
    size_t n = colon ? (size_t)(colon - msg) : 0;
    field[0] = 0;
    *ret_why = msg;
    if (!n || n >= field_size || memchr(msg, ' ', n))
        return;
    memcpy(field, msg, n);
    field[n] = 0;
    *ret_why = colon + 2;
}

void ingest_http_encode(const http_request *rq, http_response *rs)
{
    if (rs->status < 400)
        return; /* ingest_http_handle wrote its Export…ServiceResponse; OPTIONS has no body */
    int m = media_of(rq);
    bool proto = m >= 0 && media[m].proto;
    /* a request in neither encoding (415, or a GET) gets JSON */
    const char *type = m >= 0 ? media[m].type : "application/json";
    if ((rs->status == 429 || rs->status == 503) && rs->retry_after <= 0)
        rs->retry_after = 1; /* OTLP clients wait what Retry-After says, else back off */
    char *msg = error_message(rs);
    const char *text = msg ? msg : "";
    char field[128];
    const char *why = text;
    bool bad = rs->status == 400;
    if (bad)
        bad_part(text, field, sizeof field, &why);
    char *body = NULL;
    size_t len = 0;
    if (proto) {
        body = (char *)otlp_proto_status(grpc_code(rs->status), text, bad ? field : NULL, why, &len);
    } else {
        /* google.rpc.Status in proto3 JSON */
        jbuf b;
        jbuf_init(&b);
        jbuf_open(&b, '{');
        jbuf_kv_i64(&b, "code", grpc_code(rs->status));
        jbuf_kv_str(&b, "message", text);
        if (bad) {
            jbuf_key(&b, "details");
            jbuf_open(&b, '[');
            jbuf_open(&b, '{');
            jbuf_kv_str(&b, "@type", OTLP_BAD_REQUEST_TYPE);
            jbuf_key(&b, "fieldViolations");
            jbuf_open(&b, '[');
            jbuf_open(&b, '{');
            if (field[0])
                jbuf_kv_str(&b, "field", field);
            jbuf_kv_str(&b, "description", why);
            jbuf_close(&b, '}');
            jbuf_close(&b, ']');
            jbuf_close(&b, '}');
            jbuf_close(&b, ']');
        }
        jbuf_close(&b, '}');
        body = jbuf_steal(&b, &len);
    }
    free(msg);
    if (!body)
        return; /* out of memory: the answer stays as it was */
    free(rs->body);
    rs->body = body;
    rs->len = len;
    rs->content_type = type;
}

static void out_of_memory(http_response *rs)
{
    rs->retry_after = 1;
    http_error(rs, 503, "out of memory");
}

void ingest_http_handle(const ingest_ctx *ig, const char *app, const http_request *rq, http_response *rs, bool *coming)
{
    enum ingest_signal what = strcmp(rq->path, "/v1/traces") == 0 ? INGEST_TRACES
                              : strcmp(rq->path, "/v1/logs") == 0 ? INGEST_LOGS
                                                                   : INGEST_METRICS;
    static const char *const rejected_field[] = {"rejectedSpans", "rejectedLogRecords", "rejectedDataPoints"};

    int media_type = media_of(rq);
    if (media_type < 0) {
        http_error(rs, 415, "Content-Type: pacerd takes OTLP/HTTP, application/x-protobuf or application/json");
        return;
    }
    bool proto = media[media_type].proto;
    const char *ce = http_header(rq, "Content-Encoding");
    bool gzip = ce && strcasecmp(ce, "gzip") == 0;
    if (ce && !gzip && strcasecmp(ce, "identity") != 0) {
        http_error(rs, 415, "Content-Encoding: %.40s is not supported: send gzip or identity", ce);
        return;
    }
    const char *batch_id = http_header(rq, "X-Pacer-Batch-Id");
    if (batch_id && !ingest_batch_id_ok(batch_id)) {
        http_error(rs, 400, "X-Pacer-Batch-Id: expected 1-%d characters of A-Z a-z 0-9 - _ . :", INGEST_MAX_BATCH_ID);
        return;
    }

    const char *body = rq->body;
    size_t body_len = rq->body_len;
    char *inflated = NULL;
    char err[512];
    if (gzip) {
        int g = gunzip(rq->body, rq->body_len, __atomic_load_n(&ig->max_body, __ATOMIC_RELAXED), &inflated, &body_len,
                       err, sizeof err);
        if (g == -EFBIG) {
            http_error(rs, 413, "%s", err);
            return;
        }
        if (g == -ENOMEM) {
            out_of_memory(rs);
            return;
        }
        if (g < 0) {
            http_error(rs, 400, "%s", err);
            return;
        }
        body = inflated;
    }

    ingest_outcome out;
    int r = ingest_batch(ig, app, what, proto, body, body_len, batch_id, rq->path, coming, &out, err, sizeof err);
    free(inflated);
    if (r == -EINVAL) {
        http_error(rs, 400, "%s", err);
        return;
    }
    if (r == -ENOMEM) {
        out_of_memory(rs);
        return;
    }
    if (r == -EAGAIN) {
        rs->retry_after = 1;
        http_error(rs, 429, "pacerd is busy: retry after 1 s");
        return;
    }
    if (r < 0) {
        rs->retry_after = 5;
        http_error(rs, 503, "the store could not commit the batch: retry later");
        return;
    }
    rs->items = out.items; /* charged to the key's quota (router.c) */
    if (proto) {
        size_t len;
        uint8_t *resp = otlp_proto_response(out.rejected, out.message, &len);
        if (!resp) {
            out_of_memory(rs);
            return;
        }
        free(rs->body);
        rs->status = 200;
        rs->body = (char *)resp; /* zero bytes on full success: still an Export…ServiceResponse */
        rs->len = len;
        rs->content_type = media[media_type].type;
        return;
    }
    jbuf resp;
    jbuf_init(&resp);
    jbuf_open(&resp, '{');
    if (out.rejected || out.message[0]) {
        char count[24];
        snprintf(count, sizeof count, "%zu", out.rejected); /* an OTLP int64: a string */
        jbuf_key(&resp, "partialSuccess");
        jbuf_open(&resp, '{');
        jbuf_kv_str(&resp, rejected_field[what], count);
        jbuf_kv_str(&resp, "errorMessage", out.message);
        jbuf_close(&resp, '}');
    }
    jbuf_close(&resp, '}');
    http_json(rs, 200, &resp);
}
