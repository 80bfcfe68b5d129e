/* pacerd's HTTP layer on libmicrohttpd: one epoll event loop per thread of
 * a thread pool, bodies collected in memory up to a limit, one handler
 * called with the complete request.
 *
 * Limits enforced here, before any handler runs: the body size (413, also
 * answered from Content-Length alone without reading the body), connection
 * count and idle timeout (libmicrohttpd). Handlers run on the pool's
 * threads, several at once.
 */
#ifndef PACER_SERVER_HTTP_H
#define PACER_SERVER_HTTP_H

#include <pacer/base/json.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct MHD_Connection;

typedef struct http_request {
    const char *method;
    const char *path; /* without the query */
    const char *body; /* NUL-terminated (the NUL is not counted) */
    size_t body_len;
    struct MHD_Connection *conn;
} http_request;

typedef struct http_response {
    unsigned status;
    char *body; /* malloc'd; freed by the HTTP layer */
    size_t len;
    const char *content_type;
    char etag[80];   /* sent when not empty */
    int retry_after; /* seconds; sent when > 0 */
    bool challenge;  /* send WWW-Authenticate: Bearer */
} http_response;

/* Request header / query argument, or NULL. Valid during the handler. */
const char *http_header(const http_request *rq, const char *name);
const char *http_arg(const http_request *rq, const char *name);

/* Calls fn for every query argument in order, repeats included, with the
 * decoded lengths (a value may hold a NUL: check value_len). A NULL value
 * (no '=') has length 0. Stops when fn returns false. */
void http_args(const http_request *rq,
               bool (*fn)(void *ctx, const char *key, size_t key_len, const char *value, size_t value_len),
               void *ctx);

/* Sets a JSON response: the text of body, which it takes (body is left
 * empty). A body whose writing failed (out of memory) answers 503. */
void http_json(http_response *rs, unsigned status, jbuf *body);
/* Sets a JSON response from constant text, e.g. "{}". */
void http_json_text(http_response *rs, unsigned status, const char *json);
/* Sets {"error": MESSAGE}. */
void http_error(http_response *rs, unsigned status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

typedef void (*http_handler)(void *ctx, const http_request *rq, http_response *rs);

typedef struct http_options {
    unsigned threads;
    unsigned max_connections;
    unsigned timeout_s;
    size_t max_body;
} http_options;

typedef struct http_server http_server;

/* Binds addr:port (IPv4 or IPv6 literal; port 0 picks a free one) and
 * starts serving. Returns NULL with "ADDR:PORT: reason" in err. */
http_server *http_start(const char *addr, uint16_t port, const http_options *opt, http_handler handler, void *ctx,
                        char *err, size_t err_size);
/* The port bound. */
uint16_t http_port(const http_server *srv);
/* Stops accepting, finishes running handlers, frees. Accepts NULL. */
void http_stop(http_server *srv);

#endif
