/* HTTP layer on libmicrohttpd (http.h).
 *
 * A request goes through the access handler several times:
 *   1st call: allocate the request's state; reject early (413) when
 *             Content-Length exceeds the limit, so the body is never read;
 *   next calls with data: append to the body, or drop it and remember
 *             that it was too large when it grows past the limit (chunked
 *             uploads have no Content-Length);
 *   last call (no data): run the handler and queue its response.
 */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct http_server {
    struct MHD_Daemon *daemon;
    http_handler handler;
    void *ctx;
    size_t max_body;
    uint16_t port;
};

typedef struct conn_state {
    char *body;
    size_t len, cap;
    bool too_large;
} conn_state;

const char *http_header(const http_request *rq, const char *name)
{
    return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

const char *http_arg(const http_request *rq, const char *name)
{
    return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
}

typedef struct args_walk {
    bool (*fn)(void *ctx, const char *key, size_t key_len, const char *value, size_t value_len);
    void *ctx;
} args_walk;

static enum MHD_Result on_arg(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                              const char *value, size_t value_size)
{
    args_walk *w = cls;
    return w->fn(w->ctx, key, key_size, value ? value : "", value ? value_size : 0) ? MHD_YES : MHD_NO;
}

void http_args(const http_request *rq,
               bool (*fn)(void *ctx, const char *key, size_t key_len, const char *value, size_t value_len),
               void *ctx)
{
    args_walk w = {fn, ctx};
    MHD_get_connection_values_n(rq->conn, MHD_GET_ARGUMENT_KIND, on_arg, &w);
}

void http_json_text(http_response *rs, unsigned status, const char *json)
{
    free(rs->body);
    rs->status = status;
    rs->body = strdup(json);
    rs->len = rs->body ? strlen(rs->body) : 0;
    rs->content_type = "application/json";
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

static enum MHD_Result queue(struct MHD_Connection *c, http_response *rs)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(rs->len, rs->body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(rs->body);
        return MHD_NO;
    }
    rs->body = NULL;
    if (rs->content_type && rs->len)
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
    enum MHD_Result ok = MHD_queue_response(c, rs->status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status, const char *msg)
{
    http_response rs = {0};
    http_error(&rs, status, "%s", msg);
    return queue(c, &rs);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
    http_server *srv = cls;
    conn_state *cs = *con_cls;
    if (!cs) {
        cs = calloc(1, sizeof *cs);
        if (!cs)
            return MHD_NO;
        *con_cls = cs;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl) {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(cl, &end, 10);
            if (errno || *end || n > srv->max_body) {
                cs->too_large = true;
                char msg[128];
                snprintf(msg, sizeof msg, "the body is larger than the limit of %zu bytes", srv->max_body);
                return reply_error(c, MHD_HTTP_CONTENT_TOO_LARGE, msg);
            }
            if (n) {
                cs->body = malloc((size_t)n + 1);
                if (!cs->body)
                    return reply_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
                cs->cap = (size_t)n + 1;
            }
        }
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (cs->too_large)
            return MHD_YES;
        if (cs->len + n > srv->max_body) {
            cs->too_large = true;
            free(cs->body);
            cs->body = NULL;
            cs->len = cs->cap = 0;
            return MHD_YES;
        }
        if (cs->len + n + 1 > cs->cap) {
            size_t cap = cs->cap ? cs->cap : 4096;
            while (cap < cs->len + n + 1)
                cap *= 2;
            char *b = realloc(cs->body, cap);
            if (!b)
                return MHD_NO;
            cs->body = b;
            cs->cap = cap;
        }
        memcpy(cs->body + cs->len, upload_data, n);
        cs->len += n;
        return MHD_YES;
    }
    if (cs->too_large) {
        char msg[128];
        snprintf(msg, sizeof msg, "the body is larger than the limit of %zu bytes", srv->max_body);
        return reply_error(c, MHD_HTTP_CONTENT_TOO_LARGE, msg);
    }
    if (cs->body)
        cs->body[cs->len] = 0;
    http_request rq = {.method = method, .path = url, .body = cs->body ? cs->body : "", .body_len = cs->len,
                       .conn = c};
    http_response rs = {0};
    srv->handler(srv->ctx, &rq, &rs);
    if (!rs.status)
        http_error(&rs, 500, "internal error: the handler gave no answer");
    return queue(c, &rs);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    conn_state *cs = *con_cls;
    if (cs) {
        free(cs->body);
        free(cs);
        *con_cls = NULL;
    }
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    /* libmicrohttpd's own errors (bind failures, protocol violations). They
     * never contain header values. */
    fputs("pacerd: libmicrohttpd: ", stderr);
    vfprintf(stderr, fmt, ap);
}

http_server *http_start(const char *addr, uint16_t port, const http_options *opt, http_handler handler, void *ctx,
                        char *err, size_t err_size)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
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
    http_server *srv = calloc(1, sizeof *srv);
    if (!srv) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    srv->handler = handler;
    srv->ctx = ctx;
    srv->max_body = opt->max_body;
    srv->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv,
                                   MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv,
                                   MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                                   MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(opt->threads ? opt->threads : 4),
                                   MHD_OPTION_CONNECTION_LIMIT, (unsigned)(opt->max_connections ? opt->max_connections : 1000),
                                   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(opt->timeout_s ? opt->timeout_s : 30),
                                   MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
                                   MHD_OPTION_END);
    if (!srv->daemon) {
        snprintf(err, err_size, "%s:%u: cannot listen (address in use, or not an address of this host?)", addr, port);
        free(srv);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : port;
    return srv;
}

uint16_t http_port(const http_server *srv)
{
    return srv->port;
}

void http_stop(http_server *srv)
{
    if (!srv)
        return;
    MHD_stop_daemon(srv->daemon);
    free(srv);
}
