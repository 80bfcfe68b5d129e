/* pacerd's HTTP layer on libmicrohttpd (HTTP/1.1, optionally TLS with
 * GnuTLS). Every client may be hostile, so every resource a client can make
 * the server hold is bounded here, before any handler runs:
 *
 *   connections   all clients (max_connections) and one address
 *                 (max_per_address; an IPv6 /64 counts as one address):
 *                 refused at accept;
 *   time          the headers must be complete header_timeout_s after the
 *                 connection opened or the previous answer was sent (this
 *                 includes the TLS handshake), the body body_timeout_s after
 *                 the headers, the answer must be taken by the client within
 *                 body_timeout_s, and an idle keep-alive connection lasts
 *                 idle_timeout_s: past its deadline a connection is closed
 *                 whatever it is trickling;
 *   framing       Content-Length twice, Content-Length with
 *                 Transfer-Encoding, a transfer coding other than chunked,
 *                 HTTP/1.1 without exactly one Host, a target that is not a
 *                 path: 400 (501 for the coding) and the connection closes;
 *   target        path and query decoded strictly (params.h): 400 naming
 *                 the parameter;
 *   body          the application's preflight sees the headers only and
 *                 decides (credentials, method, route) before a byte of the
 *                 body is read, so a refusal never keeps a body in memory
 *                 and is never preceded by "100 Continue" (finish() in
 *                 http.c: when the body is still read, and dropped, so that
 *                 the client sees the answer); a body larger than the
 *                 route's limit is 413 from Content-Length alone; bodies
 *                 are read into memory as they arrive (nothing is allocated
 *                 from Content-Length alone), and all bodies being read or
 *                 handled together are held to max_body_bytes_in_flight
 *                 (beyond: 429);
 *   waiting       requests for workers wait in one queue; a new one is
 *                 admitted only while the wait it would have (from the
 *                 queue's length and the measured time a worker takes per
 *                 request) and the wait of the oldest queued request are
 *                 below max_wait_ms, else 429 with Retry-After (the time the
 *                 queue needs to drain) before its body is read; a queued
 *                 request that still waited longer is answered 429 unrun.
 *
 * Request life (each step on the connection's libmicrohttpd thread unless
 * said): request line → headers → framing, target, preflight, admission,
 * Content-Length checks → body → INLINE: handler on this thread | QUEUED:
 * the connection is suspended, a worker runs the handler and resumes it
 * → the answer is queued → done callback → the connection is idle.
 *
 * Draining (http_drain): the listening socket is closed, new requests on
 * open connections are answered 503 with Connection: close, and the call
 * returns once every admitted request has been answered.
 */
#ifndef PACER_SERVER_HTTP_H
#define PACER_SERVER_HTTP_H

#include <pacer/base/latency.h>
#include "params.h"

#include <pacer/base/json.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct http_header_field {
    const char *name, *value;
} http_header_field;

typedef struct http_request {
    const char *method;  /* as sent: "GET", "HEAD", ... */
    const char *version; /* "HTTP/1.1" */
    const char *path;    /* decoded (params_path) */
    const params *query; /* decoded (params_parse) */
    const char *body;    /* NUL-terminated (the NUL is not counted); "" in the preflight */
    size_t body_len;
    /* what the preflight attached for the handler and the done callback:
     * malloc'd by it, freed by the HTTP layer */
    void *state;
    const http_header_field *headers;
    size_t n_headers;
    /* the client's address as the connection limits count it: an IPv4
     * address (mapped), or an IPv6 /64; all zero when unknown */
    unsigned char client[16];
} http_request;

#define HTTP_MAX_EXTRA_HEADERS 12

typedef struct http_response {
    unsigned status;
    char *body; /* malloc'd; freed by the HTTP layer */
    size_t len;
    const char *content_type;
    char etag[80];     /* sent when not empty */
    int retry_after;   /* seconds; sent when > 0 */
    bool challenge;    /* send WWW-Authenticate: Bearer */
    bool close;        /* send Connection: close and close after the answer */
    const char *allow; /* the Allow header (405, OPTIONS), or NULL */
    uint64_t items;    /* records the request stored (for quotas and /metrics) */
    /* more headers (http_add_header): names constant, values malloc'd and
     * freed by the HTTP layer */
    size_t n_extra;
    struct {
        const char *name;
        char *value;
    } extra[HTTP_MAX_EXTRA_HEADERS];
} http_response;

/* Adds a header to the answer (name: a constant string; value: copied).
 * Past HTTP_MAX_EXTRA_HEADERS, or out of memory, the answer becomes 503:
 * a header that must be there (a cookie's end, a policy) is never left
 * out in silence. */
void http_add_header(http_response *rs, const char *name, const char *value);

/* A request header (the first of that name, case-insensitive), or NULL.
 * Any thread, while the request is being handled. */
const char *http_header(const http_request *rq, const char *name);

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

typedef enum http_plan {
    HTTP_ANSWERED, /* rs holds the answer: sent before any body is read */
    HTTP_INLINE,   /* read the body, then run the handler on the connection's thread (quick, never waits) */
    HTTP_QUEUED,   /* read the body, then run the handler on a worker, if admitted */
} http_plan;

typedef struct http_app {
    /* Decides on the headers alone (rq->body is ""): answers, or gives the
     * largest body the route takes in *ret_max_body (0: none). May set
     * rq->state. Called on a libmicrohttpd thread. */
    http_plan (*preflight)(void *ctx, http_request *rq, http_response *rs, size_t *ret_max_body);
    /* Answers a request whose body is complete. */
    void (*handle)(void *ctx, const http_request *rq, http_response *rs);
    /* Every answer, the layer's own (429, 413, 503, ...) included, just
     * before it is sent: may rewrite its body and headers (an error in
     * the encoding the route speaks). rq's path is "" when the target
     * could not be decoded. On the connection's thread. May be NULL. */
    void (*encode)(void *ctx, const http_request *rq, http_response *rs);
    /* After any answer was queued, the layer's own (429, 400, ...)
     * included; rq->state is NULL when no preflight ran. */
    void (*done)(void *ctx, const http_request *rq, const http_response *rs);
    /* The request's state goes: its answer was sent, or its connection
     * failed before (rq->state as preflight left it). May be NULL. */
    void (*release)(void *ctx, const http_request *rq);
    void *ctx;
} http_app;

typedef struct http_options {
    unsigned io_threads;        /* libmicrohttpd's event loops (0: 2) */
    unsigned workers;           /* handler threads (0: 4) */
    unsigned max_connections;   /* 0: 4096 */
    unsigned max_per_address;   /* 0: 64 */
    unsigned header_timeout_s;  /* 0: 10 */
    unsigned body_timeout_s;    /* 0: 60 */
    unsigned idle_timeout_s;    /* 0: 30 */
    size_t max_body_bytes_in_flight; /* 0: 256 MiB */
    unsigned max_wait_ms;       /* 0: 1000 */
    size_t max_discard_bytes;   /* a body read and dropped after a 429 (0: 16 MiB) */
    const char *tls_cert_pem;   /* with tls_key_pem: serve HTTPS only */
    const char *tls_key_pem;
} http_options;

/* Why the layer turned a client away (counted in http_stats). */
enum http_reject {
    HTTP_REJ_CONNECTIONS,    /* max_connections reached: refused at accept */
    HTTP_REJ_PER_ADDRESS,    /* max_per_address reached: refused at accept */
    HTTP_REJ_HEADER_TIMEOUT, /* closed: headers not complete in time */
    HTTP_REJ_BODY_TIMEOUT,   /* closed: body not complete in time */
    HTTP_REJ_SEND_TIMEOUT,   /* closed: the client did not take the answer in time */
    HTTP_REJ_FRAMING,        /* 400/501: lengths, coding, Host */
    HTTP_REJ_TARGET,         /* 400: path or query */
    HTTP_REJ_TOO_LARGE,      /* 413 */
    HTTP_REJ_BODY_BUDGET,    /* 429: max_body_bytes_in_flight */
    HTTP_REJ_OVERLOAD,       /* 429: the wait would be over max_wait_ms */
    HTTP_REJ_QUEUE_TIMEOUT,  /* 429: admitted, but waited over max_wait_ms */
    HTTP_REJ_DRAINING,       /* 503: shutting down */
    HTTP_REJ_COUNT
};
extern const char *const http_reject_names[HTTP_REJ_COUNT];

typedef struct http_stats {
    uint64_t rejects[HTTP_REJ_COUNT];
    uint64_t connections_total, idle_closed;
    unsigned connections_open;
    size_t body_bytes_in_flight;
    size_t admitted; /* requests past admission, not yet answered */
    size_t queued, running, workers;
    double service_s; /* a worker's time per request, moving average */
    latency queue_wait;   /* admitted → a worker starts it */
    latency handler_time; /* a worker runs it */
} http_stats;

typedef struct http_server http_server;

/* Binds addr:port (IPv4 or IPv6 literal; port 0 picks a free one) and
 * starts serving. Returns NULL with "ADDR:PORT: reason" in err. */
http_server *http_start(const char *addr, uint16_t port, const http_options *opt, const http_app *app, char *err,
                        size_t err_size);
/* The port bound. */
/* Applies new limits to a running server (a reload): max_per_address,
 * header_timeout_s and body_timeout_s (for the deadlines set from now
 * on), max_body_bytes_in_flight, max_wait_ms and max_discard_bytes; 0
 * leaves one as it is. The others hold until the server is started again. */
void http_set_limits(http_server *srv, const http_options *o);

uint16_t http_port(const http_server *srv);
/* Whether it serves TLS. */
bool http_tls(const http_server *srv);
void http_get_stats(http_server *srv, http_stats *ret);
/* Stops accepting and answers new requests 503; waits until every
 * admitted request has been answered, at most timeout_ms. Returns how many
 * were still unanswered. */
size_t http_drain(http_server *srv, unsigned timeout_ms);
/* Stops: finishes the handlers still running, closes every connection,
 * frees. Accepts NULL. */
void http_stop(http_server *srv);

#endif
