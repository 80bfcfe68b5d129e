/* The uploader thread (uploader.h).
 *
 * Delivery (docs/otlp-mapping.md):
 *  - Batches come from the spool (spool.c): the same batch, with the same id
 *    in X-Pacer-Batch-Id, until the server accepts it (2xx → ack) or refuses
 *    it for good (4xx other than 408/429 → drop, counted). So a retry never
 *    stores twice, and nothing is deleted before the server has it.
 *  - The spool keeps records in the form they are sent in (their OTLP items,
 *    protobuf): a request is those items put together under their
 *    resources (otlp_request), then gzip; no text is parsed on the way.
 *  - 429 and 503 wait for Retry-After (seconds) when given; other failures
 *    (network, 5xx, 408) wait an exponential backoff with full jitter:
 *    a random delay in [0, min(60 s, 500 ms · 2^k)].
 *  - OTLP/gRPC (grpc_call; grpc.c reads the answer): the same request body
 *    is one unary Export call on HTTP/2 — h2c by prior knowledge for
 *    http://, ALPN h2 for https:// — with the batch id as the
 *    x-pacer-batch-id metadata. The answer's gRPC status, received or
 *    synthesized, decides as the OTLP specification's table says: OK →
 *    ack; CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE,
 *    DATA_LOSS, and RESOURCE_EXHAUSTED with a RetryInfo → retry; any other
 *    → drop, counted. A RetryInfo's retry_delay is waited for, doubled for
 *    each failure in a row before it (up to 60 s, or the delay when
 *    longer); without one, the backoff above. A new batch holds at most
 *    GRPC_BATCH_BYTES of spooled bodies, so that its message stays under
 *    gRPC's default 4 MiB.
 *  - Records of earlier runs left in the spool are sent at start.
 *  - The thread is the only one that touches the network; the app's threads
 *    only append to the spool (through the writer thread) and kick.
 *
 * Config: GET /v1/config/{app} with If-None-Match at start and every
 * config_poll_ms. A 200 is validated (pacer_config_parse), cached on disk
 * (atomic rename, ETag beside it) and handed to on_config; a bad config from
 * the server is ignored and the old one stays.
 *
 * Shutdown: uploader_free() asks the thread to stop; unless it is backing
 * off, it first tries to send what is spooled for at most drain_ms (curl's
 * progress callback aborts a transfer that runs past it).
 */
#include "uploader.h"

#include "clock.h"
#include "grpc.h"
#include <pacer/base/curl_dl.h>
#include "otlp.h"
#include "spool.h"

#include <pacer/pacer.h>

#include <pacer/base/json.h>
#include <pacer/base/thread.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define BACKOFF_BASE_MS 500
#define BACKOFF_MAX_MS 60000
#define REQUEST_TIMEOUT_MS 15000
/* OTLP/gRPC: a new batch's spooled bodies at most, so that its request
 * stays under the 4 MiB a gRPC server takes by default, as the OTLP
 * specification asks of clients (the request adds the ids and the
 * resources: some 0.2 MiB for 500 records of 500 runs). */
#define GRPC_BATCH_BYTES (3 << 20)

struct uploader {
    char *server, *key, *app, *config_url, *spool_path, *config_cache, *ca_file;
    uploader_config_fn on_config;
    void *user_data;
    unsigned batch_records;
    bool json, gzip, grpc;

    spool *sp;
    const curl_api *c;  /* libcurl, loaded at run time */
    CURL *curl;
    unsigned rand_state;

    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping;
    bool kicked;
    unsigned poll_ms;
    int64_t drain_deadline;   /* ns, when stopping */

    /* thread-private */
    int64_t next_send;        /* no sending before (backoff) */
    unsigned failures;        /* consecutive */
    char etag[256];

    uploader_stats stats;     /* under mu */
};

typedef struct response {
    long status;
    long retry_after_s;       /* -1: absent */
    char etag[256];
    char *body;
    size_t len;
    bool too_big;             /* the body ran past what is read */
    grpc_answer grpc;         /* gRPC: what its header lines said */
} response;

static int64_t ms_ns(int64_t ms)
{
    return ms * 1000000;
}

static size_t on_header(char *buf, size_t size, size_t n, void *ud)
{
    response *r = ud;
    size_t len = size * n;
    if (len > 12 && strncasecmp(buf, "Retry-After:", 12) == 0) {
        long v = strtol(buf + 12, NULL, 10);
        if (v >= 0)
            r->retry_after_s = v > 3600 ? 3600 : v;
    } else if (len > 5 && strncasecmp(buf, "ETag:", 5) == 0) {
        const char *v = buf + 5;
        while (*v == ' ')
            v++;
        size_t vl = len - (size_t)(v - buf);
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        if (vl < sizeof(r->etag)) {
            memcpy(r->etag, v, vl);
            r->etag[vl] = '\0';
        }
    }
    return len;
}

static size_t on_grpc_header(char *buf, size_t size, size_t n, void *ud)
{
    response *r = ud;
    grpc_answer_header(&r->grpc, buf, size * n);
    return size * n;
}

static size_t on_body(char *buf, size_t size, size_t n, void *ud)
{
    response *r = ud;
    size_t len = size * n;
    if (r->len + len > GRPC_MAX_MESSAGE + 5) { /* nothing we fetch is that big */
        r->too_big = true;
        return 0;
    }
    char *b = realloc(r->body, r->len + len + 1);
    if (!b)
        return 0;
    memcpy(b + r->len, buf, len);
    r->body = b;
    r->len += len;
    b[r->len] = '\0';
    return len;
}

static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    uploader *u = ud;
    pthread_mutex_lock(&u->mu);
    bool abort_now = u->stopping && pacer_now_ns() > u->drain_deadline;
    pthread_mutex_unlock(&u->mu);
    return abort_now;
}

/* One request to base (the server, or the config service) + path.
 * Returns the HTTP status, or 0 for a transport failure. */
static long request(uploader *u, const char *base, const char *path, const char *body, size_t len,
                    const char *batch, const char *if_none_match, response *r)
{
    memset(r, 0, sizeof(*r));
    r->retry_after_s = -1;
    char url[2048], auth[1024], bid[128], inm[300];
    snprintf(url, sizeof(url), "%s%s", base, path);
    struct curl_slist *h = NULL;
    if (body) {
        h = u->c->slist_append(h, u->json ? "Content-Type: application/json" : "Content-Type: application/x-protobuf");
        if (u->gzip)
            h = u->c->slist_append(h, "Content-Encoding: gzip");
    }
    if (u->key) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", u->key);
        h = u->c->slist_append(h, auth);
    }
    if (batch) {
        snprintf(bid, sizeof(bid), "X-Pacer-Batch-Id: %s", batch);
        h = u->c->slist_append(h, bid);
    }
    if (if_none_match && *if_none_match) {
        snprintf(inm, sizeof(inm), "If-None-Match: %s", if_none_match);
        h = u->c->slist_append(h, inm);
    }
    h = u->c->slist_append(h, "Expect:");
    CURL *c = u->curl;
    u->c->easy_reset(c);
    u->c->easy_setopt(c, CURLOPT_URL, url);
    u->c->easy_setopt(c, CURLOPT_HTTPHEADER, h);
    u->c->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    u->c->easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
    u->c->easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)REQUEST_TIMEOUT_MS);
    u->c->easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    u->c->easy_setopt(c, CURLOPT_HEADERDATA, r);
    u->c->easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    u->c->easy_setopt(c, CURLOPT_WRITEDATA, r);
    u->c->easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    u->c->easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    u->c->easy_setopt(c, CURLOPT_XFERINFODATA, u);
    u->c->easy_setopt(c, CURLOPT_USERAGENT, "pacer/" PACER_VERSION);
    if (u->ca_file)
        u->c->easy_setopt(c, CURLOPT_CAINFO, u->ca_file);
    if (body) {
        u->c->easy_setopt(c, CURLOPT_POSTFIELDS, body);
        u->c->easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    CURLcode rc = u->c->easy_perform(c);
    if (rc == CURLE_OK)
        u->c->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    u->c->slist_free_all(h);
    pthread_mutex_lock(&u->mu);
    u->stats.requests++;
    pthread_mutex_unlock(&u->mu);
    return rc == CURLE_OK ? r->status : 0;
}

/* Schedules the next attempt. `server_ms` >= 0: the server said how long
 * to wait (Retry-After, RetryInfo); with `grow` (RetryInfo) it doubles for
 * each failure in a row before this one, to at most 60 s or server_ms when
 * that is longer. Otherwise an exponential backoff with full jitter. */
static void backoff(uploader *u, int64_t server_ms, bool grow)
{
    int64_t delay_ms;
    if (server_ms >= 0) {
        delay_ms = server_ms;
        int64_t cap = server_ms > BACKOFF_MAX_MS ? server_ms : BACKOFF_MAX_MS;
        for (unsigned i = 0; grow && i < u->failures && delay_ms < cap; i++)
            delay_ms *= 2;
        if (delay_ms > cap)
            delay_ms = cap;
    } else {
        int64_t cap = BACKOFF_BASE_MS;
        for (unsigned i = 0; i < u->failures && cap < BACKOFF_MAX_MS; i++)
            cap *= 2;
        if (cap > BACKOFF_MAX_MS)
            cap = BACKOFF_MAX_MS;
        delay_ms = (int64_t)(rand_r(&u->rand_state) % (unsigned)(cap + 1));
    }
    u->failures++;
    u->next_send = pacer_now_ns() + ms_ns(delay_ms);
    pthread_mutex_lock(&u->mu);
    u->stats.retries++;
    pthread_mutex_unlock(&u->mu);
}

/* What a gRPC call came to: the status the server sent, or the one a
 * client synthesizes (grpc.c's top note). */
typedef struct grpc_result {
    int status;
    long http_status;        /* 0: no answer (a transport failure) */
    bool retry_info;         /* a RetryInfo came with the status */
    int64_t retry_delay_ms;
    char message[160];       /* grpc-message, or what failed on the way */
    uint8_t *msg;            /* OK: the response message (malloc'd; NULL when empty) */
    size_t msg_len;
} grpc_result;

/* The status of a call that got no status from the server: from libcurl's
 * result, and the reset's code that libcurl's message names. */
static int transport_status(CURLcode rc, const char *errbuf, const response *r, char *msg, size_t msg_size)
{
    snprintf(msg, msg_size, "%s", errbuf[0] ? errbuf : "");
    switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
        return GRPC_DEADLINE_EXCEEDED;
    case CURLE_ABORTED_BY_CALLBACK:
        snprintf(msg, msg_size, "the time to deliver at exit ran out");
        return GRPC_CANCELLED;
    case CURLE_WRITE_ERROR:
        if (r->too_big) {
            snprintf(msg, msg_size, "the response is larger than %u bytes", GRPC_MAX_MESSAGE);
            return GRPC_RESOURCE_EXHAUSTED;
        }
        return GRPC_UNAVAILABLE;
    case CURLE_HTTP2_STREAM: {
        /* "HTTP/2 stream 1 was not closed cleanly: INTERNAL_ERROR (err 2)" */
        const char *e = strstr(errbuf, "(err ");
        char *end;
        unsigned long code = e ? strtoul(e + 5, &end, 10) : 0;
        if (e && end != e + 5 && *end == ')')
            return grpc_status_from_h2_reset((unsigned)code);
        return GRPC_UNAVAILABLE;
    }
    default: /* no connection, or it broke: the call could not be made */
        return GRPC_UNAVAILABLE;
    }
}

/* One unary Export call with `frame` (a Length-Prefixed-Message) as the
 * request. Fills *g; the caller frees g->msg. */
static void grpc_call(uploader *u, pacer_signal sig, const uint8_t *frame, size_t len, const char *batch,
                      grpc_result *g)
{
    memset(g, 0, sizeof(*g));
    response r;
    memset(&r, 0, sizeof(r));
    grpc_answer_init(&r.grpc);
    /* the deadline: the request's timeout, or what is left of the drain */
    int64_t timeout_ms = REQUEST_TIMEOUT_MS;
    pthread_mutex_lock(&u->mu);
    if (u->stopping) {
        int64_t left = (u->drain_deadline - pacer_now_ns()) / 1000000;
        if (left < timeout_ms)
            timeout_ms = left > 1 ? left : 1;
    }
    pthread_mutex_unlock(&u->mu);
    char url[2048], auth[1024], bid[128], tmo[48], t[16], errbuf[CURL_ERROR_SIZE] = "";
    snprintf(url, sizeof(url), "%s%s", u->server, grpc_path(sig));
    grpc_timeout(timeout_ms, t);
    snprintf(tmo, sizeof(tmo), "grpc-timeout: %s", t);
    /* Call-Definition first (the timeout leading), then Custom-Metadata */
    struct curl_slist *h = u->c->slist_append(NULL, tmo);
    h = u->c->slist_append(h, "content-type: application/grpc");
    h = u->c->slist_append(h, "te: trailers");
    if (u->gzip)
        h = u->c->slist_append(h, "grpc-encoding: gzip");
    h = u->c->slist_append(h, "grpc-accept-encoding: gzip");
    h = u->c->slist_append(h, "Accept:");
    h = u->c->slist_append(h, "Expect:");
    if (u->key) {
        snprintf(auth, sizeof(auth), "authorization: Bearer %s", u->key);
        h = u->c->slist_append(h, auth);
    }
    snprintf(bid, sizeof(bid), "x-pacer-batch-id: %s", batch);
    h = u->c->slist_append(h, bid);
    CURL *c = u->curl;
    u->c->easy_reset(c);
    u->c->easy_setopt(c, CURLOPT_URL, url);
    u->c->easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    if (strncmp(url, "http://", 7) == 0) {
        /* h2c: a connection of its own per call. libcurl before 8.0
         * (Debian 12's 7.88) fails a second request on a reused h2c
         * connection without sending it (curl issue 10634); TLS
         * connections, negotiated by ALPN, are reused. */
        u->c->easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
        u->c->easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
    }
    u->c->easy_setopt(c, CURLOPT_HTTPHEADER, h);
    u->c->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    u->c->easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
    /* a little past the deadline, so that the server's DEADLINE_EXCEEDED
     * can arrive */
    u->c->easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms + 1000L);
    u->c->easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    u->c->easy_setopt(c, CURLOPT_HEADERFUNCTION, on_grpc_header);
    u->c->easy_setopt(c, CURLOPT_HEADERDATA, &r);
    u->c->easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    u->c->easy_setopt(c, CURLOPT_WRITEDATA, &r);
    u->c->easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    u->c->easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    u->c->easy_setopt(c, CURLOPT_XFERINFODATA, u);
    u->c->easy_setopt(c, CURLOPT_USERAGENT, "pacer/" PACER_VERSION);
    if (u->ca_file)
        u->c->easy_setopt(c, CURLOPT_CAINFO, u->ca_file);
    u->c->easy_setopt(c, CURLOPT_POSTFIELDS, frame);
    u->c->easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    CURLcode rc = u->c->easy_perform(c);
    long version = 0;
    u->c->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &g->http_status);
    u->c->easy_getinfo(c, CURLINFO_HTTP_VERSION, &version);
    u->c->easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
    u->c->slist_free_all(h);
    pthread_mutex_lock(&u->mu);
    u->stats.requests++;
    pthread_mutex_unlock(&u->mu);

    const grpc_answer *a = &r.grpc;
    if (g->http_status && version != CURL_HTTP_VERSION_2_0) {
        /* a gRPC client does not get this far: the connection is not one */
        g->status = GRPC_UNAVAILABLE;
        snprintf(g->message, sizeof(g->message), "the server answered in HTTP/1 (HTTP %ld), not HTTP/2",
                 g->http_status);
    } else if (g->http_status == 200 && a->grpc_content_type && a->status >= 0) {
        g->status = a->status;
        snprintf(g->message, sizeof(g->message), "%s", a->message);
        g->retry_info = grpc_answer_retry_info(a);
        g->retry_delay_ms = g->retry_info ? a->retry_delay_ms : 0;
        if (g->status == GRPC_OK)
            g->status = grpc_unary_message((const uint8_t *)r.body, r.len, a->encoding, &g->msg, &g->msg_len,
                                           g->message, sizeof(g->message));
    } else if (rc != CURLE_OK && (!g->http_status || g->http_status == 200)) {
        g->status = transport_status(rc, errbuf, &r, g->message, sizeof(g->message));
    } else {
        /* not a gRPC answer, or one without its status: from the HTTP status */
        g->status = grpc_status_from_http(g->http_status);
        snprintf(g->message, sizeof(g->message), "HTTP %ld%s, no grpc-status", g->http_status,
                 a->grpc_content_type ? "" : " without a gRPC content type");
    }
    free(r.body);
}

/* An accepted batch may still have items the server rejected (OTLP
 * partialSuccess: e.g. records of an app the key is not for). They are not
 * retryable; count them and keep the server's reason. */
static void note_partial_success(uploader *u, const char *body, size_t len)
{
    if (!body || !len)
        return;
    if (!u->json) { /* the answer to protobuf is protobuf */
        int64_t n = 0;
        char msg[sizeof(u->stats.message)];
        if (otlp_proto_partial_success((const uint8_t *)body, len, &n, msg, sizeof(msg)) && n > 0) {
            pthread_mutex_lock(&u->mu);
            u->stats.rejected += (uint64_t)n;
            snprintf(u->stats.message, sizeof(u->stats.message), "%s", msg);
            pthread_mutex_unlock(&u->mu);
        }
        return;
    }
    char *buf = malloc(len + 1);
    if (!buf)
        return;
    memcpy(buf, body, len);
    jread r;
    jread_init(&r, buf, len, NULL, JREAD_NO_NUL);
    int64_t n = 0;
    char msg[sizeof(u->stats.message)] = "";
    const char *key, *k2;
    size_t kl, kl2;
    jvalue v;
    if (jread_peek(&r) == JT_OBJECT && jread_enter_object(&r)) {
        while (jread_member(&r, &key, &kl) > 0) {
            if (!(kl == 14 && memcmp(key, "partialSuccess", 14) == 0) || jread_peek(&r) != JT_OBJECT) {
                if (!jread_value(&r, &v))
                    break;
                continue;
            }
            jread_enter_object(&r);
            while (jread_member(&r, &k2, &kl2) > 0 && jread_value(&r, &v)) {
                int64_t x = 0;
                bool count = (kl2 == 13 && memcmp(k2, "rejectedSpans", 13) == 0) ||
                             (kl2 == 18 && memcmp(k2, "rejectedLogRecords", 18) == 0) ||
                             (kl2 == 18 && memcmp(k2, "rejectedDataPoints", 18) == 0);
                /* 64-bit counts are strings in OTLP JSON */
                if (count && (jvalue_int64(&v, &x) || (v.type == JT_STRING && (x = strtoll(v.s, NULL, 10)) >= 0)))
                    n += x;
                else if (kl2 == 12 && memcmp(k2, "errorMessage", 12) == 0 && v.type == JT_STRING)
                    snprintf(msg, sizeof(msg), "%s", v.s);
            }
        }
    }
    free(buf);
    if (n > 0) {
        pthread_mutex_lock(&u->mu);
        u->stats.rejected += (uint64_t)n;
        snprintf(u->stats.message, sizeof(u->stats.message), "%s", msg);
        pthread_mutex_unlock(&u->mu);
    }
}

static void note_error(uploader *u, long status)
{
    pthread_mutex_lock(&u->mu);
    u->stats.last_error = (int)status;
    pthread_mutex_unlock(&u->mu);
}

static void note_grpc_error(uploader *u, const grpc_result *g)
{
    pthread_mutex_lock(&u->mu);
    u->stats.last_error = (int)g->http_status;
    u->stats.grpc_status = g->status;
    snprintf(u->stats.error, sizeof(u->stats.error), "%s", g->message);
    pthread_mutex_unlock(&u->mu);
}

/* Sends a batch's request as one gRPC call and acts on the answer. Returns
 * false when the next attempt must wait. */
static bool send_grpc(uploader *u, pacer_signal sig, spool_batch *b, uint8_t *body, size_t len)
{
    size_t flen;
    uint8_t *frame = grpc_frame(body, len, u->gzip, &flen);
    free(body);
    if (!frame) {
        backoff(u, -1, false);
        return false;
    }
    grpc_result g;
    grpc_call(u, sig, frame, flen, b->id, &g);
    free(frame);
    bool go_on = true;
    if (g.status == GRPC_OK) {
        note_partial_success(u, (const char *)g.msg, g.msg_len);
        spool_ack(u->sp, b);
        u->failures = 0;
        pthread_mutex_lock(&u->mu);
        u->stats.batches_sent++;
        pthread_mutex_unlock(&u->mu);
    } else if (grpc_retryable(g.status, g.retry_info)) {
        note_grpc_error(u, &g);
        backoff(u, g.retry_info && g.retry_delay_ms > 0 ? g.retry_delay_ms : -1, true);
        go_on = false;
    } else {
        /* refused for good (bad batch, bad key, a method the server lacks) */
        spool_drop(u->sp, b);
        note_grpc_error(u, &g);
        pthread_mutex_lock(&u->mu);
        u->stats.batches_refused++;
        pthread_mutex_unlock(&u->mu);
    }
    free(g.msg);
    return go_on;
}

/* Sends batches until the spool is empty (true) or a failure asks to wait
 * (false). */
static bool send_all(uploader *u)
{
    for (int sig = 0; sig < PACER_N_SIGNALS; sig++) {
        for (;;) {
            spool_batch b;
            int r = spool_next_batch(u->sp, (pacer_signal)sig, u->batch_records, &b);
            if (r < 0) {
                backoff(u, -1, false);
                return false;
            }
            if (r == 0)
                break;
            spool_stats st;
            spool_get_stats(u->sp, &st);
            size_t len, skipped;
            char *body = (char *)otlp_request(&b, st.dropped, u->json, &len, &skipped);
            if (body && u->gzip) {
                size_t zlen;
                uint8_t *z = otlp_gzip(body, len, &zlen);
                free(body);
                body = (char *)z;
                len = zlen;
            }
            if (!body) {
                spool_batch_clear(&b);
                backoff(u, -1, false);
                return false;
            }
            if (u->grpc) {
                bool go_on = send_grpc(u, (pacer_signal)sig, &b, (uint8_t *)body, len);
                spool_batch_clear(&b);
                if (!go_on)
                    return false;
                continue;
            }
            response resp;
            long status = request(u, u->server, otlp_path((pacer_signal)sig), body, len, b.id, NULL, &resp);
            free(body);
            if (status >= 200 && status < 300) {
                note_partial_success(u, resp.body, resp.len);
                spool_ack(u->sp, &b);
                u->failures = 0;
                pthread_mutex_lock(&u->mu);
                u->stats.batches_sent++;
                pthread_mutex_unlock(&u->mu);
            } else if (status == 429 || status == 503) {
                spool_batch_clear(&b);
                note_error(u, status);
                backoff(u, resp.retry_after_s >= 0 ? (int64_t)resp.retry_after_s * 1000 : -1, false);
                free(resp.body);
                return false;
            } else if (status >= 400 && status < 500 && status != 408) {
                /* refused for good (bad batch, bad key): retrying cannot help */
                spool_drop(u->sp, &b);
                note_error(u, status);
                pthread_mutex_lock(&u->mu);
                u->stats.batches_refused++;
                pthread_mutex_unlock(&u->mu);
            } else {
                spool_batch_clear(&b);
                note_error(u, status);
                backoff(u, -1, false);
                free(resp.body);
                return false;
            }
            free(resp.body);
            spool_batch_clear(&b);
        }
    }
    return true;
}

static int write_file_atomic(const char *path, const char *data, size_t len)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "we");
    if (!f)
        return -errno;
    bool ok = fwrite(data, 1, len, f) == len;
    ok = (fflush(f) == 0) && ok;
    ok = (fsync(fileno(f)) == 0) && ok;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) < 0) {
        unlink(tmp);
        return -EIO;
    }
    return 0;
}

static void fetch_config(uploader *u)
{
    if (!u->app || !u->config_url)
        return;
    char *esc = u->c->easy_escape(u->curl, u->app, 0);
    if (!esc)
        return;
    char path[1024];
    snprintf(path, sizeof(path), "/v1/config/%s", esc);
    u->c->free(esc);
    response r;
    long status = request(u, u->config_url, path, NULL, 0, NULL, u->etag, &r);
    if (status == 200 && r.body) {
        pacer_config *cfg = pacer_config_parse(r.body, r.len, NULL);
        if (cfg) {
            snprintf(u->etag, sizeof(u->etag), "%s", r.etag);
            if (u->config_cache) {
                char etag_path[4096];
                snprintf(etag_path, sizeof(etag_path), "%s.etag", u->config_cache);
                if (write_file_atomic(u->config_cache, r.body, r.len) == 0)
                    write_file_atomic(etag_path, u->etag, strlen(u->etag));
            }
            if (u->on_config)
                u->on_config(cfg, u->user_data);
            pthread_mutex_lock(&u->mu);
            u->poll_ms = pacer_config_config_poll_ms(cfg);
            pthread_mutex_unlock(&u->mu);
            pacer_config_unref(cfg);
            pthread_mutex_lock(&u->mu);
            u->stats.configs++;
            pthread_mutex_unlock(&u->mu);
        }
    }
    free(r.body);
}

static void *uploader_main(void *arg)
{
    uploader *u = arg;
    clock_mark_internal_thread();
    int64_t next_poll = 0; /* fetch the config at once */
    u->next_send = 0;      /* and send what earlier runs left */
    bool pending = true;   /* something may wait in the spool */
    bool polls = u->app && u->config_url;
    for (;;) {
        int64_t now = pacer_now_ns();
        if (polls && now >= next_poll) {
            fetch_config(u);
            pthread_mutex_lock(&u->mu);
            unsigned poll = u->poll_ms;
            pthread_mutex_unlock(&u->mu);
            next_poll = poll ? pacer_now_ns() + ms_ns(poll) : INT64_MAX;
        }
        if (pending && pacer_now_ns() >= u->next_send)
            pending = !send_all(u);

        pthread_mutex_lock(&u->mu);
        if (u->kicked) {
            u->kicked = false;
            pending = true;
        }
        if (u->stopping) {
            /* One last try within the drain time, after any backoff that
             * ends inside it. */
            bool try_drain = pending && u->next_send < u->drain_deadline;
            while (try_drain && pacer_now_ns() < u->next_send) {
                struct timespec ts = {.tv_sec = u->next_send / 1000000000,
                                      .tv_nsec = u->next_send % 1000000000};
                pthread_cond_timedwait(&u->cv, &u->mu, &ts);
            }
            pthread_mutex_unlock(&u->mu);
            if (try_drain)
                send_all(u);
            break;
        }
        int64_t wake = polls ? next_poll : INT64_MAX;
        if (pending && u->next_send < wake)
            wake = u->next_send;
        if (!u->kicked && pacer_now_ns() < wake) {
            struct timespec ts;
            int64_t w = wake == INT64_MAX ? pacer_now_ns() + ms_ns(3600000) : wake;
            ts.tv_sec = w / 1000000000;
            ts.tv_nsec = w % 1000000000;
            pthread_cond_timedwait(&u->cv, &u->mu, &ts);
        }
        pthread_mutex_unlock(&u->mu);
    }
    return NULL;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void read_cached_etag(uploader *u)
{
    if (!u->config_cache)
        return;
    char p[4096];
    snprintf(p, sizeof(p), "%s.etag", u->config_cache);
    FILE *f = fopen(p, "re");
    if (!f)
        return;
    size_t n = fread(u->etag, 1, sizeof(u->etag) - 1, f);
    u->etag[n] = '\0';
    fclose(f);
}

/* Frees what uploader_new() allocated (not the thread and its lock). */
static void release(uploader *u)
{
    spool_close(u->sp);
    if (u->curl)
        u->c->easy_cleanup(u->curl);
    free(u->server);
    if (u->key)
        memset(u->key, 0, strlen(u->key));
    free(u->key);
    free(u->app);
    free(u->config_url);
    free(u->spool_path);
    free(u->config_cache);
    free(u->ca_file);
    free(u);
}

int uploader_new(const uploader_options *o, uploader **ret, char **ret_error)
{
    const curl_api *c = curl_api_get();
    if (!c) {
        if (ret_error)
            *ret_error = strdup("cannot upload: libcurl (libcurl.so.4) could not be loaded");
        return -ENOENT;
    }
    uploader *u = calloc(1, sizeof(*u));
    if (!u)
        return -ENOMEM;
    u->c = c;
    u->server = strdup(o->server_url);
    u->key = dup_or_null(o->key);
    u->app = dup_or_null(o->app);
    u->config_url = dup_or_null(o->config_url);
    u->spool_path = strdup(o->spool_path);
    u->config_cache = dup_or_null(o->config_cache);
    u->ca_file = dup_or_null(o->ca_file);
    u->on_config = o->on_config;
    u->user_data = o->user_data;
    u->poll_ms = o->config_poll_ms;
    u->batch_records = o->batch_records ? o->batch_records : 500;
    u->grpc = o->grpc;
    u->json = o->json && !o->grpc; /* gRPC's message is protobuf */
    u->gzip = !o->no_gzip;
    u->rand_state = (unsigned)(pacer_now_ns() ^ getpid());
    size_t sl = u->server ? strlen(u->server) : 0;
    while (sl && u->server[sl - 1] == '/')
        u->server[--sl] = '\0';
    sl = u->config_url ? strlen(u->config_url) : 0;
    while (sl && u->config_url[sl - 1] == '/')
        u->config_url[--sl] = '\0';
    int r = -ENOMEM;
    if (!u->server || !u->spool_path || (o->config_url && !u->config_url) || !(u->curl = c->easy_init()))
        goto fail;
    r = spool_open(u->spool_path, 0, &u->sp, ret_error);
    if (r < 0)
        goto fail;
    if (u->grpc)
        spool_set_batch_bytes(u->sp, GRPC_BATCH_BYTES);
    read_cached_etag(u);
    pthread_mutex_init(&u->mu, NULL);
    cond_init_monotonic(&u->cv);
    r = thread_start(&u->thread, "pacer-upload", uploader_main, u);
    if (r < 0) {
        pthread_cond_destroy(&u->cv);
        pthread_mutex_destroy(&u->mu);
        goto fail;
    }
    *ret = u;
    return 0;
fail:
    release(u);
    return r;
}

void uploader_kick(uploader *u)
{
    pthread_mutex_lock(&u->mu);
    u->kicked = true;
    pthread_cond_signal(&u->cv);
    pthread_mutex_unlock(&u->mu);
}

void uploader_free(uploader *u, unsigned drain_ms, uploader_stats *ret_final)
{
    if (!u)
        return;
    pthread_mutex_lock(&u->mu);
    u->stopping = true;
    u->kicked = true;
    u->drain_deadline = pacer_now_ns() + ms_ns(drain_ms);
    pthread_cond_signal(&u->cv);
    pthread_mutex_unlock(&u->mu);
    pthread_join(u->thread, NULL);
    if (ret_final)
        *ret_final = u->stats;
    pthread_cond_destroy(&u->cv);
    pthread_mutex_destroy(&u->mu);
    release(u);
}

void uploader_get_stats(uploader *u, uploader_stats *ret)
{
    pthread_mutex_lock(&u->mu);
    *ret = u->stats;
    pthread_mutex_unlock(&u->mu);
}
