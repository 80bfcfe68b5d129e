/* HTTP layer on libmicrohttpd (http.h): requests.
 *
 * libmicrohttpd calls, for one request (each on the connection's thread):
 *   on_uri            the request line arrived: the raw target is kept
 *                     (its decoding is ours), the request's state made;
 *   on_request        1st call, headers complete (R_NEW → R_BODY or an
 *                     answer): framing, target, preflight, limits,
 *                     admission; an answer queued here is sent without
 *                     reading the body (libmicrohttpd then closes);
 *                     next calls with data: the body grows as it arrives;
 *                     last call (no data): INLINE runs the handler and
 *                     answers; QUEUED suspends the connection and queues
 *                     the request (R_QUEUED); a worker runs the handler
 *                     (on_work) and resumes the connection;
 *                     after the resume: the worker's answer is queued;
 *   on_completed      the answer was sent or the connection failed: the
 *                     state goes, with its admission and body bytes.
 * on_connection tracks each connection (http_conn.c) and moves its phase,
 * hence its deadline, at each of these steps.
 */
#include "http_int.h"

#include <pacer/base/array.h>
#include <pacer/base/clock.h>

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define LOG_EVERY_NS (60 * 1000000000LL) /* libmicrohttpd's messages once running: one a minute */

const char *const http_reject_names[HTTP_REJ_COUNT] = {
    [HTTP_REJ_CONNECTIONS] = "connections",       [HTTP_REJ_PER_ADDRESS] = "per_address",
    [HTTP_REJ_HEADER_TIMEOUT] = "header_timeout", [HTTP_REJ_BODY_TIMEOUT] = "body_timeout",
    [HTTP_REJ_SEND_TIMEOUT] = "send_timeout",     [HTTP_REJ_FRAMING] = "framing",
    [HTTP_REJ_TARGET] = "target",                 [HTTP_REJ_TOO_LARGE] = "too_large",
    [HTTP_REJ_BODY_BUDGET] = "body_budget",       [HTTP_REJ_OVERLOAD] = "overload",
    [HTTP_REJ_QUEUE_TIMEOUT] = "queue_timeout",   [HTTP_REJ_DRAINING] = "draining",
};

struct http_server {
    struct MHD_Daemon *daemon;
    http_app app;
    uint16_t port;
    bool tls;
    bool draining, stopping; /* atomic */
    conn_table conns;
    pool pool;
    uint64_t rejects[HTTP_REJ_COUNT];
    size_t max_discard;
    /* libmicrohttpd's log, once it runs */
    pthread_mutex_t log_lock;
    bool running;
    int64_t log_next_ns;
    unsigned log_dropped;
};

enum req_state { R_NEW, R_BODY, R_QUEUED, R_ANSWERED };

typedef struct hreq {
    pool_item item; /* first: the pool's queue links it */
    http_server *srv;
    struct MHD_Connection *mc;
    conn *conn;
    char *target; /* as sent */
    enum req_state state;
    http_plan plan;
    http_request rq;
    params query;
    char *path;
    http_header_field *hdrs;
    size_t n_hdrs, cap_hdrs;
    bool hdrs_oom;
    size_t max_body;
    char *body;
    size_t len, cap, taken; /* taken: body bytes counted in the pool's budget */
    bool too_large, over_budget, admitted;
    bool deferred;    /* rs is an answer made on the headers, sent at the last call */
    size_t discard;   /* deferred: the body is read and dropped, up to this many bytes */
    http_response rs; /* the worker's answer, or the deferred one */
} hreq;

static bool flag_get(const bool *b)
{
    return __atomic_load_n(b, __ATOMIC_ACQUIRE);
}

const char *http_header(const http_request *rq, const char *name)
{
    for (size_t i = 0; i < rq->n_headers; i++)
        if (strcasecmp(rq->headers[i].name, name) == 0)
            return rq->headers[i].value;
    return NULL;
}

void http_args(const http_request *rq,
               bool (*fn)(void *ctx, const char *key, size_t key_len, const char *value, size_t value_len),
               void *ctx)
{
    for (size_t i = 0; rq->query && i < rq->query->n; i++) {
        const param *p = &rq->query->p[i];
        if (!fn(ctx, p->name, strlen(p->name), p->value, p->value_len))
            return;
    }
}

void http_json_text(http_response *rs, unsigned status, const char *json)
{
    free(rs->body);
    rs->status = status;
    rs->body = strdup(json);
    rs->len = rs->body ? strlen(rs->body) : 0;
    rs->content_type = "application/json";
}

static void extra_free(http_response *rs)
{
    for (size_t i = 0; i < rs->n_extra; i++)
        free(rs->extra[i].value);
    rs->n_extra = 0;
}

void http_add_header(http_response *rs, const char *name, const char *value)
{
    char *v = rs->n_extra < HTTP_MAX_EXTRA_HEADERS ? strdup(value) : NULL;
    if (!v) {
        extra_free(rs);
        free(rs->body);
        rs->body = NULL;
        rs->status = 503;
        rs->body = strdup("{\"error\":\"out of memory\"}");
        rs->len = rs->body ? strlen(rs->body) : 0;
        rs->content_type = "application/json";
        return;
    }
    rs->extra[rs->n_extra].name = name;
    rs->extra[rs->n_extra++].value = v;
}

void http_json(http_response *rs, unsigned status, jbuf *body)
{
    size_t len;
    char *text = jbuf_steal(body, &len);
    if (!text) {
        http_json_text(rs, 503, "{\"error\":\"out of memory\"}");
        return;
    }
    free(rs->body);
    rs->status = status;
    rs->body = text;
    rs->len = len;
    rs->content_type = "application/json";
}

void http_error(http_response *rs, unsigned status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    jbuf_kv_str(&b, "error", msg);
    jbuf_close(&b, '}');
    http_json(rs, status, &b);
}

/* Queues rs (whose body it takes) and tells the application. */
static enum MHD_Result answer(hreq *h, http_response *rs)
{
    http_server *srv = h->srv;
    h->state = R_ANSWERED;
    if (flag_get(&srv->draining))
        rs->close = true;
    if (srv->app.encode)
        srv->app.encode(srv->app.ctx, &h->rq, rs);
    struct MHD_Response *r = MHD_create_response_from_buffer(rs->len, rs->body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(rs->body);
        rs->body = NULL;
        extra_free(rs);
        return MHD_NO;
    }
    rs->body = NULL;
    /* an empty body has a type too (an empty protobuf message) */
    if (rs->content_type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, rs->content_type);
    if (rs->etag[0])
        MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, rs->etag);
    if (rs->retry_after > 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", rs->retry_after);
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, v);
    }
    if (rs->challenge)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"pacerd\"");
    if (rs->allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, rs->allow);
    if (rs->close)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    for (size_t i = 0; i < rs->n_extra; i++)
        MHD_add_response_header(r, rs->extra[i].name, rs->extra[i].value); /* copied */
    enum MHD_Result ok = MHD_queue_response(h->mc, rs->status, r);
    MHD_destroy_response(r);
    http_conn_phase(&srv->conns, h->conn, PH_SENDING);
    if (srv->app.done)
        srv->app.done(srv->app.ctx, &h->rq, rs);
    extra_free(rs);
    return ok;
}

static long long content_length(const hreq *h);
static size_t header_count(const hreq *h, const char *name, const char **ret_first);

/* An answer decided on the headers, when a body may follow. Queued at
 * once, it is sent before the body is read and libmicrohttpd closes the
 * connection; a client still sending its body may then never read it (it
 * gets EPIPE, or a reset that discards the answer). So:
 *   - a client that waits (Expect: 100-continue), a body too large to be
 *     read, or a refused credential with a body over DISCARD_SMALL: the
 *     answer goes at once, without a byte of the body;
 *   - 429 (a client with a right key, told when to retry): the body, up to
 *     max_discard bytes, is read and dropped as it arrives (never kept),
 *     then the answer is sent and the connection stays open;
 *   - any other refusal with a body of at most DISCARD_SMALL bytes, or
 *     without a body: likewise. */
#define DISCARD_SMALL 65536

static enum MHD_Result finish(hreq *h, http_response *rs)
{
    if (h->state != R_NEW || rs->close)
        return answer(h, rs);
    long long cl = content_length(h);
    bool chunked = header_count(h, MHD_HTTP_HEADER_TRANSFER_ENCODING, NULL) > 0;
    const char *expect = NULL;
    header_count(h, MHD_HTTP_HEADER_EXPECT, &expect);
    size_t cap = rs->status == 429 ? __atomic_load_n(&h->srv->max_discard, __ATOMIC_RELAXED) : DISCARD_SMALL;
    bool body = cl > 0 || chunked;
    if (body && ((expect && strcasecmp(expect, "100-continue") == 0) || cl > (long long)cap ||
                 (chunked && rs->status != 429) || rs->status == 413))
        return answer(h, rs);
    h->rs = *rs;
    h->deferred = true;
    h->discard = cap;
    h->state = R_BODY;
    return MHD_YES;
}

/* Answers {"error": msg} with status, counting why. */
static enum MHD_Result refuse(hreq *h, enum http_reject why, unsigned status, int retry_after, bool close,
                              const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static enum MHD_Result refuse(hreq *h, enum http_reject why, unsigned status, int retry_after, bool close,
                              const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (why != HTTP_REJ_COUNT)
        rejects_add(h->srv->rejects, why);
    http_response rs = {.retry_after = retry_after, .close = close};
    http_error(&rs, status, "%s", msg);
    return finish(h, &rs);
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *mc)
{
    http_server *srv = cls;
    hreq *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->srv = srv;
    h->mc = mc;
    h->target = strdup(uri ? uri : "");
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    h->conn = ci ? ci->socket_context : NULL;
    http_conn_request_line(&srv->conns, h->conn);
    return h;
}

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                      const char *value, size_t value_size)
{
    hreq *h = cls;
    if (!ARRAY_GROW(h->hdrs, h->cap_hdrs, h->n_hdrs + 1, 16)) {
        h->hdrs_oom = true;
        return MHD_NO;
    }
    /* the strings live in the connection's memory until the request ends */
    h->hdrs[h->n_hdrs++] = (http_header_field){key, value ? value : ""};
    return MHD_YES;
}

static size_t header_count(const hreq *h, const char *name, const char **ret_first)
{
    size_t n = 0;
    for (size_t i = 0; i < h->n_hdrs; i++)
        if (strcasecmp(h->hdrs[i].name, name) == 0 && n++ == 0 && ret_first)
            *ret_first = h->hdrs[i].value;
    return n;
}

/* The framing checks; NULL when the request is well framed. */
static const char *framing_error(const hreq *h, unsigned *ret_status)
{
    const char *te = NULL;
    size_t n_cl = header_count(h, MHD_HTTP_HEADER_CONTENT_LENGTH, NULL);
    size_t n_te = header_count(h, MHD_HTTP_HEADER_TRANSFER_ENCODING, &te);
    size_t n_host = header_count(h, MHD_HTTP_HEADER_HOST, NULL);
    *ret_status = 400;
    if (n_cl > 1)
        return "Content-Length sent more than once";
    if (n_te > 1)
        return "Transfer-Encoding sent more than once";
    if (n_cl && n_te)
        return "Content-Length and Transfer-Encoding together: send one of them";
    if (n_te && strcasecmp(te, "chunked") != 0) {
        *ret_status = 501;
        return "Transfer-Encoding: only chunked is supported";
    }
    if (strcmp(h->rq.version, MHD_HTTP_VERSION_1_1) == 0 && n_host != 1)
        return n_host ? "Host sent more than once" : "HTTP/1.1 requires a Host header";
    return NULL;
}

/* Content-Length, or -1 when there is none (libmicrohttpd answered a
 * malformed one already). */
static long long content_length(const hreq *h)
{
    const char *cl = NULL;
    if (!header_count(h, MHD_HTTP_HEADER_CONTENT_LENGTH, &cl))
        return -1;
    return strtoll(cl, NULL, 10);
}

static enum MHD_Result first_call(hreq *h, const char *method, const char *version)
{
    http_server *srv = h->srv;
    http_conn_phase(&srv->conns, h->conn, PH_BODY);
    h->rq.method = method;
    h->rq.version = version;
    h->rq.path = "";
    h->rq.query = &h->query;
    h->rq.body = "";
    /* the headers and the path first: every answer, a refusal too, is
     * made for its route and in the encoding the request asked for
     * (app.encode) */
    MHD_get_connection_values_n(h->mc, MHD_HEADER_KIND, collect_header, h);
    if (h->hdrs_oom)
        return refuse(h, HTTP_REJ_COUNT, 503, 1, true, "out of memory");
    h->rq.headers = h->hdrs;
    h->rq.n_headers = h->n_hdrs;
    http_conn_client_key(h->conn, h->rq.client);
    char err[256];
    const char *t = h->target, *q = strchr(t, '?');
    size_t plen = q ? (size_t)(q - t) : strlen(t);
    int target = 0;
    if (strcmp(t, "*") == 0 && strcmp(method, MHD_HTTP_METHOD_OPTIONS) == 0) {
        h->path = strdup("*");
        if (!h->path)
            return refuse(h, HTTP_REJ_COUNT, 503, 1, true, "out of memory");
    } else {
        target = params_path(t, plen, &h->path, err, sizeof err);
    }
    if (target == 0)
        h->rq.path = h->path;
    if (flag_get(&srv->draining))
        return refuse(h, HTTP_REJ_DRAINING, 503, 5, true, "pacerd is shutting down: retry in a few seconds");
    unsigned status;
    const char *bad = framing_error(h, &status);
    if (bad)
        return refuse(h, HTTP_REJ_FRAMING, status, 0, true, "%s", bad);
    if (target < 0 || (q && params_parse(q + 1, strlen(q + 1), &h->query, err, sizeof err) < 0))
        return refuse(h, HTTP_REJ_TARGET, 400, 0, false, "%s", err);

    http_response rs = {0};
    size_t max_body = 0;
    h->plan = srv->app.preflight(srv->app.ctx, &h->rq, &rs, &max_body);
    if (h->plan == HTTP_ANSWERED)
        return finish(h, &rs);
    free(rs.body);
    extra_free(&rs);
    h->max_body = max_body;
    long long cl = content_length(h);
    if (cl > (long long)max_body) {
        if (max_body == 0)
            return refuse(h, HTTP_REJ_TOO_LARGE, 413, 0, false, "%s %s takes no body", method, h->path);
        return refuse(h, HTTP_REJ_TOO_LARGE, 413, 0, false, "the body is larger than the limit of %zu bytes",
                      max_body);
    }
    if (h->plan == HTTP_QUEUED) {
        unsigned retry;
        if (http_pool_admit(&srv->pool, &retry) < 0)
            return refuse(h, HTTP_REJ_OVERLOAD, 429, (int)retry, false,
                          "pacerd is busy: requests would wait longer than allowed; retry after %u s", retry);
        h->admitted = true;
    }
    if (cl > 0 && !http_pool_body_fits(&srv->pool, (size_t)cl))
        return refuse(h, HTTP_REJ_BODY_BUDGET, 429, 1, false,
                      "pacerd is busy: too many request bodies in flight; retry after 1 s");
    h->state = R_BODY;
    return MHD_YES;
}

static void body_drop(hreq *h)
{
    free(h->body);
    h->body = NULL;
    h->len = h->cap = 0;
    http_pool_body_give(&h->srv->pool, h->taken);
    h->taken = 0;
}

static void body_append(hreq *h, const char *data, size_t n)
{
    if (h->too_large || h->over_budget)
        return;
    if (h->len + n > h->max_body) {
        h->too_large = true;
        body_drop(h);
        return;
    }
    if (h->len + n + 1 > h->cap) {
        long long cl = content_length(h);
        size_t cap = h->cap ? 2 * h->cap : 16384;
        if (cap < h->len + n + 1)
            cap = h->len + n + 1;
        if (cl >= 0 && cap > (size_t)cl + 1)
            cap = (size_t)cl + 1;
        size_t more = cap - h->cap;
        if (!http_pool_body_take(&h->srv->pool, more)) {
            h->over_budget = true;
            body_drop(h);
            return;
        }
        char *b = realloc(h->body, cap);
        if (!b) {
            http_pool_body_give(&h->srv->pool, more);
            h->over_budget = true;
            body_drop(h);
            return;
        }
        h->taken += more;
        h->body = b;
        h->cap = cap;
    }
    memcpy(h->body + h->len, data, n);
    h->len += n;
}

static enum MHD_Result last_call(hreq *h)
{
    http_server *srv = h->srv;
    if (h->deferred)
        return answer(h, &h->rs);
    if (h->too_large)
        return refuse(h, HTTP_REJ_TOO_LARGE, 413, 0, false, "the body is larger than the limit of %zu bytes",
                      h->max_body);
    if (h->over_budget)
        return refuse(h, HTTP_REJ_BODY_BUDGET, 429, 1, false,
                      "pacerd is busy: too many request bodies in flight; retry after 1 s");
    if (h->body)
        h->body[h->len] = 0;
    h->rq.body = h->body ? h->body : "";
    h->rq.body_len = h->len;
    http_conn_phase(&srv->conns, h->conn, PH_SERVER);
    if (h->plan == HTTP_INLINE) {
        http_response rs = {0};
        srv->app.handle(srv->app.ctx, &h->rq, &rs);
        if (!rs.status)
            http_error(&rs, 500, "internal error: the handler gave no answer");
        return answer(h, &rs);
    }
    /* suspended before it is queued: the worker may resume it at once */
    h->state = R_QUEUED;
    MHD_suspend_connection(h->mc);
    http_pool_push(&srv->pool, &h->item);
    return MHD_YES;
}

/* A worker: runs the handler (or sheds the request) and resumes the
 * connection, whose thread then sends the answer. */
static void on_work(pool_item *it, bool shed, unsigned retry_after_s)
{
    hreq *h = (hreq *)it;
    http_server *srv = h->srv;
    if (shed && flag_get(&srv->stopping)) {
        h->rs.retry_after = (int)retry_after_s;
        h->rs.close = true;
        http_error(&h->rs, 503, "pacerd is shutting down: retry in a few seconds");
        rejects_add(srv->rejects, HTTP_REJ_DRAINING);
    } else if (shed) {
        h->rs.retry_after = (int)retry_after_s;
        http_error(&h->rs, 429, "pacerd is busy: this request waited too long; retry after %u s", retry_after_s);
        rejects_add(srv->rejects, HTTP_REJ_QUEUE_TIMEOUT);
    } else {
        srv->app.handle(srv->app.ctx, &h->rq, &h->rs);
        if (!h->rs.status)
            http_error(&h->rs, 500, "internal error: the handler gave no answer");
    }
    MHD_resume_connection(h->mc); /* the last touch: h may be gone after it */
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *mc, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
    hreq *h = *con_cls;
    if (!h)
        return MHD_NO; /* out of memory when the request began: close */
    switch (h->state) {
    case R_NEW: return first_call(h, method, version);
    case R_BODY:
        if (*upload_size && h->deferred) {
            size_t n = *upload_size;
            *upload_size = 0;
            if (n > h->discard)
                return MHD_NO; /* more than it announced, or a chunked body too long: close */
            h->discard -= n;
            return MHD_YES;
        }
        if (*upload_size) {
            body_append(h, upload_data, *upload_size);
            *upload_size = 0;
            return MHD_YES;
        }
        return last_call(h);
    case R_QUEUED: return answer(h, &h->rs);
    case R_ANSWERED: break;
    }
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    http_server *srv = cls;
    hreq *h = *con_cls;
    if (!h)
        return;
    *con_cls = NULL;
    http_conn_phase(&srv->conns, h->conn, PH_IDLE);
    body_drop(h);
    if (h->admitted)
        http_pool_unadmit(&srv->pool);
    if (srv->app.release && h->rq.state)
        srv->app.release(srv->app.ctx, &h->rq);
    free(h->rs.body);
    extra_free(&h->rs);
    free(h->rq.state);
    params_free(&h->query);
    free(h->path);
    free(h->hdrs);
    free(h->target);
    free(h);
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    http_server *srv = cls;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        http_conn_remove(&srv->conns, *socket_context);
        *socket_context = NULL;
        return;
    }
    const union MHD_ConnectionInfo *fd = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *ad = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    conn *c = fd ? http_conn_add(&srv->conns, fd->connect_fd, ad ? ad->client_addr : NULL) : NULL;
    if (!c && fd)
        shutdown(fd->connect_fd, SHUT_RDWR); /* out of memory: no connection we cannot bound */
    *socket_context = c;
}

static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t len)
{
    http_server *srv = cls;
    return http_conn_admit(&srv->conns, addr, len) ? MHD_YES : MHD_NO;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    /* libmicrohttpd's own messages (bind failures, clients that break the
     * protocol). They never contain header values. Once serving, clients
     * can cause them at will: at most one a minute. */
    http_server *srv = cls;
    pthread_mutex_lock(&srv->log_lock);
    int64_t now = mono_ns();
    bool say = !srv->running || now >= srv->log_next_ns;
    unsigned dropped = 0;
    if (say && srv->running) {
        dropped = srv->log_dropped;
        srv->log_dropped = 0;
        srv->log_next_ns = now + LOG_EVERY_NS;
    } else if (!say) {
        srv->log_dropped++;
    }
    pthread_mutex_unlock(&srv->log_lock);
    if (!say)
        return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n')
        msg[--n] = 0;
    if (dropped)
        fprintf(stderr, "pacerd: libmicrohttpd: %s (and %u more messages in the last minute)\n", msg, dropped);
    else
        fprintf(stderr, "pacerd: libmicrohttpd: %s\n", msg);
}

static void options_defaults(http_options *o)
{
    if (!o->io_threads)
        o->io_threads = 2;
    if (!o->workers)
        o->workers = 4;
    if (!o->max_connections)
        o->max_connections = 4096;
    if (!o->max_per_address)
        o->max_per_address = 64;
    if (!o->header_timeout_s)
        o->header_timeout_s = 10;
    if (!o->body_timeout_s)
        o->body_timeout_s = 60;
    if (!o->idle_timeout_s)
        o->idle_timeout_s = 30;
    if (!o->max_body_bytes_in_flight)
        o->max_body_bytes_in_flight = (size_t)256 << 20;
    if (!o->max_wait_ms)
        o->max_wait_ms = 1000;
    if (!o->max_discard_bytes)
        o->max_discard_bytes = (size_t)16 << 20;
}

http_server *http_start(const char *addr, uint16_t port, const http_options *opts, const http_app *app, char *err,
                        size_t err_size)
{
    http_options o = *opts;
    options_defaults(&o);
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC;
    if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons(port);
    } else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(port);
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(err, err_size, "%s:%u: not an IPv4 or IPv6 address", addr, port);
        return NULL;
    }
    bool tls = o.tls_cert_pem && o.tls_key_pem;
    if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        snprintf(err, err_size, "this libmicrohttpd was built without TLS");
        return NULL;
    }
    if (tls)
        flags |= MHD_USE_TLS;
    http_server *srv = calloc(1, sizeof *srv);
    if (!srv) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    srv->app = *app;
    srv->tls = tls;
    srv->max_discard = o.max_discard_bytes;
    pthread_mutex_init(&srv->log_lock, NULL);
    if (http_conn_init(&srv->conns, &o, srv->rejects) < 0) {
        snprintf(err, err_size, "cannot start the connection reaper");
        goto fail_conns;
    }
    if (http_pool_start(&srv->pool, o.workers, o.max_wait_ms, o.max_body_bytes_in_flight, on_work) < 0) {
        snprintf(err, err_size, "cannot start %u worker threads", o.workers);
        goto fail_pool;
    }
    /* ours is the limit that counts (on_accept); libmicrohttpd shares its
     * own among its threads, so it is set above what any one could reach */
    unsigned mhd_limit = o.max_connections * o.io_threads + o.io_threads;
    /* TLS 1.2 and 1.3 only */
    static const char priorities[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";
    struct MHD_OptionItem tls_opts[] = {
        {MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)o.tls_key_pem},
        {MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)o.tls_cert_pem},
        {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)priorities},
        {MHD_OPTION_END, 0, NULL},
    };
    srv->daemon = MHD_start_daemon(
        flags, 0, on_accept, srv, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss, MHD_OPTION_THREAD_POOL_SIZE, o.io_threads,
        MHD_OPTION_CONNECTION_LIMIT, mhd_limit, MHD_OPTION_CONNECTION_TIMEOUT, o.idle_timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv, MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv,
        MHD_OPTION_ARRAY, tls ? tls_opts : tls_opts + 3, MHD_OPTION_END);
    if (!srv->daemon) {
        if (tls)
            snprintf(err, err_size, "%s:%u: cannot listen with TLS (a certificate or key libmicrohttpd cannot use, "
                     "address in use, or not an address of this host?)", addr, port);
        else
            snprintf(err, err_size, "%s:%u: cannot listen (address in use, or not an address of this host?)", addr,
                     port);
        goto fail_daemon;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : port;
    pthread_mutex_lock(&srv->log_lock);
    srv->running = true;
    pthread_mutex_unlock(&srv->log_lock);
    return srv;
fail_daemon:
    http_pool_stop(&srv->pool);
fail_pool:
    http_conn_destroy(&srv->conns);
fail_conns:
    pthread_mutex_destroy(&srv->log_lock);
    free(srv);
    return NULL;
}

void http_set_limits(http_server *srv, const http_options *o)
{
    conn_table *t = &srv->conns;
    pthread_mutex_lock(&t->lock);
    if (o->max_per_address)
        t->max_per_address = o->max_per_address;
    if (o->header_timeout_s)
        t->header_ns = (int64_t)o->header_timeout_s * 1000000000LL;
    if (o->body_timeout_s)
        t->body_ns = (int64_t)o->body_timeout_s * 1000000000LL;
    pthread_mutex_unlock(&t->lock);
    pool *p = &srv->pool;
    pthread_mutex_lock(&p->lock);
    if (o->max_wait_ms)
        p->max_wait_ns = (int64_t)o->max_wait_ms * 1000000LL;
    if (o->max_body_bytes_in_flight)
        p->max_body_bytes = o->max_body_bytes_in_flight;
    pthread_mutex_unlock(&p->lock);
    if (o->max_discard_bytes)
        __atomic_store_n(&srv->max_discard, o->max_discard_bytes, __ATOMIC_RELAXED);
}

uint16_t http_port(const http_server *srv)
{
    return srv->port;
}

bool http_tls(const http_server *srv)
{
    return srv->tls;
}

void http_get_stats(http_server *srv, http_stats *ret)
{
    memset(ret, 0, sizeof *ret);
    for (size_t i = 0; i < HTTP_REJ_COUNT; i++)
        ret->rejects[i] = __atomic_load_n(&srv->rejects[i], __ATOMIC_RELAXED);
    pthread_mutex_lock(&srv->conns.lock);
    ret->connections_open = srv->conns.n;
    ret->connections_total = srv->conns.total;
    ret->idle_closed = srv->conns.idle_closed;
    pthread_mutex_unlock(&srv->conns.lock);
    pool *p = &srv->pool;
    pthread_mutex_lock(&p->lock);
    ret->body_bytes_in_flight = p->body_bytes;
    ret->admitted = p->admitted;
    ret->queued = p->queued;
    ret->running = p->running;
    ret->workers = p->n_workers;
    ret->service_s = p->service_ns / 1e9;
    ret->queue_wait = p->wait;
    ret->handler_time = p->handler;
    pthread_mutex_unlock(&p->lock);
}

/* How long a drain waits, once nothing is in flight, for requests that
 * clients sent before the signal and that still sit unread in socket
 * buffers; each is then answered 503. */
#define DRAIN_GRACE_MS 100

size_t http_drain(http_server *srv, unsigned timeout_ms)
{
    __atomic_store_n(&srv->draining, true, __ATOMIC_RELEASE);
    MHD_socket fd = MHD_quiesce_daemon(srv->daemon);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
    int64_t deadline = mono_ns() + (int64_t)timeout_ms * 1000000LL;
    bool quiet_once = false;
    for (;;) {
        size_t left = http_pool_wait_idle(&srv->pool, deadline);
        unsigned busy = http_conn_busy(&srv->conns);
        if (left || mono_ns() >= deadline)
            return left > busy ? left : busy;
        if (!busy && quiet_once)
            return 0;
        quiet_once = !busy;
        sleep_ms(busy ? 10 : DRAIN_GRACE_MS);
    }
}

void http_stop(http_server *srv)
{
    if (!srv)
        return;
    __atomic_store_n(&srv->draining, true, __ATOMIC_RELEASE);
    __atomic_store_n(&srv->stopping, true, __ATOMIC_RELEASE);
    /* every suspended connection is resumed before libmicrohttpd stops */
    http_pool_stop(&srv->pool);
    MHD_stop_daemon(srv->daemon);
    http_conn_destroy(&srv->conns);
    pthread_mutex_destroy(&srv->log_lock);
    free(srv);
}
