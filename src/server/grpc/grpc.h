/* pacerd's OTLP/gRPC front: unary gRPC calls over HTTP/2 (libnghttp2),
 * cleartext by prior knowledge (h2c) or TLS with ALPN h2 (GnuTLS). Every
 * client may be hostile, so what one can make the server hold is bounded
 * here, before the application's handler runs:
 *
 *   connections  all clients (max_connections) and one address
 *                (max_per_address; an IPv6 /64 counts as one): refused at
 *                accept;
 *   time         the TLS handshake and the client's preface within
 *                header_timeout_s of the connection; a call's headers
 *                within header_timeout_s of its stream opening, its message
 *                within body_timeout_s of its headers (or the call's
 *                grpc-timeout, when shorter: DEADLINE_EXCEEDED), its answer
 *                taken within body_timeout_s; a connection without a call
 *                lasts idle_timeout_s;
 *   streams      SETTINGS_MAX_CONCURRENT_STREAMS (max_streams); headers of
 *                a call over max_header_bytes once decoded (an HPACK block
 *                that expands) reset the stream; SETTINGS, PING and
 *                RST_STREAM from a client beyond max_control_frames in one
 *                second end the connection (GOAWAY ENHANCE_YOUR_CALM);
 *   messages     one Length-Prefixed-Message per call, at most max_message
 *                bytes as sent and once inflated (RESOURCE_EXHAUSTED,
 *                without RetryInfo: not to be retried); the messages of
 *                all calls held at once at most max_bytes_in_flight;
 *   waiting      calls wait for the workers in one queue of at most
 *                max_queue; beyond, RESOURCE_EXHAUSTED with a RetryInfo.
 *
 * A call's life: HEADERS → the path, content-type, grpc-encoding,
 * grpc-timeout checked, then the application's preflight on the metadata
 * (the key: refused before any message byte is kept) → DATA up to
 * END_STREAM → the message unframed and inflated (grpc_frame.h) → a
 * worker runs the application's handler → the answer: HEADERS, DATA (the
 * response message), trailers (grpc-status, grpc-message,
 * grpc-status-details-bin). A refusal is a Trailers-Only answer.
 *
 * Draining (grpc_drain): the listening socket closes, every connection
 * gets GOAWAY, calls not yet admitted are answered UNAVAILABLE, and the
 * call returns once the admitted ones are answered.
 */
#ifndef PACER_SERVER_GRPC_H
#define PACER_SERVER_GRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* gRPC status codes. */
enum grpc_code {
    GRPC_OK = 0,
    GRPC_CANCELLED = 1,
    GRPC_UNKNOWN = 2,
    GRPC_INVALID_ARGUMENT = 3,
    GRPC_DEADLINE_EXCEEDED = 4,
    GRPC_NOT_FOUND = 5,
    GRPC_PERMISSION_DENIED = 7,
    GRPC_RESOURCE_EXHAUSTED = 8,
    GRPC_UNIMPLEMENTED = 12,
    GRPC_INTERNAL = 13,
    GRPC_UNAVAILABLE = 14,
    GRPC_UNAUTHENTICATED = 16,
    GRPC_CODE_COUNT = 17
};

/* What a call asks, as the application's callbacks see it. */
typedef struct grpc_call {
    const char *path;          /* ":path": the method */
    const char *authorization; /* the "authorization" metadata, or NULL */
    const char *batch_id;      /* "x-pacer-batch-id", or NULL */
    unsigned char client[16];  /* the client's address as the limits count it */
    void *state;               /* the preflight's (malloc'd by it, freed by release) */
} grpc_call;

/* An answer. */
typedef struct grpc_reply {
    enum grpc_code code;
    char message[512];    /* grpc-message (percent-encoded when sent); "" when none */
    unsigned retry_after; /* > 0: a google.rpc.RetryInfo of that many seconds in grpc-status-details-bin */
    uint8_t *body;        /* OK: the response message (malloc'd, freed by the layer; may be NULL: empty) */
    size_t len;
    uint64_t items;       /* records the call stored (quotas, /metrics) */
} grpc_reply;

/* Sets code and a printf message. */
void grpc_reply_set(grpc_reply *r, enum grpc_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

typedef struct grpc_app {
    /* On a call's headers, before any of its message is kept: 0 to take
     * it (may set call->state), or fills r (a refusal) and returns -1.
     * On the I/O thread: quick, never waits. */
    int (*preflight)(void *ctx, grpc_call *call, grpc_reply *r);
    /* The call's message (inflated): fills r. On a worker. */
    void (*handle)(void *ctx, const grpc_call *call, const uint8_t *msg, size_t len, grpc_reply *r);
    /* Every answer sent, refusals of the layer included (call->state NULL
     * when no preflight took the call). May be NULL. */
    void (*done)(void *ctx, const grpc_call *call, const grpc_reply *r);
    /* The call ends (answered, reset or its connection gone) with the
     * state its preflight set. May be NULL. */
    void (*release)(void *ctx, grpc_call *call);
    void *ctx;
} grpc_app;

typedef struct grpc_options {
    unsigned workers;          /* 0: 4 */
    unsigned max_connections;  /* 0: 4096 */
    unsigned max_per_address;  /* 0: 64 */
    unsigned max_streams;      /* SETTINGS_MAX_CONCURRENT_STREAMS (0: 100) */
    unsigned header_timeout_s; /* 0: 10 */
    unsigned body_timeout_s;   /* 0: 60 */
    unsigned idle_timeout_s;   /* 0: 30 */
    size_t max_message;        /* 0: 4 MiB */
    size_t max_bytes_in_flight; /* 0: 256 MiB */
    size_t max_header_bytes;   /* a call's headers once decoded (0: 16 KiB) */
    unsigned max_control_frames; /* SETTINGS, PING, RST_STREAM from a client per second (0: 1000) */
    unsigned max_queue;        /* calls waiting for a worker (0: 1024) */
    const char *tls_cert_pem;  /* with tls_key_pem: TLS only, ALPN h2 */
    const char *tls_key_pem;
} grpc_options;

/* Why the layer turned a client away. */
enum grpc_reject {
    GRPC_REJ_CONNECTIONS,    /* max_connections: closed at accept */
    GRPC_REJ_PER_ADDRESS,    /* max_per_address: closed at accept */
    GRPC_REJ_TIMEOUT,        /* a connection or call past its deadline */
    GRPC_REJ_PROTOCOL,       /* HTTP/2 or TLS errors: the connection ended */
    GRPC_REJ_FLOOD,          /* control frames over max_control_frames: GOAWAY */
    GRPC_REJ_HEADERS,        /* headers over max_header_bytes: stream reset */
    GRPC_REJ_TOO_LARGE,      /* a message over max_message */
    GRPC_REJ_OVERLOAD,       /* queue or bytes in flight full */
    GRPC_REJ_DRAINING,       /* UNAVAILABLE: shutting down */
    GRPC_REJ_COUNT
};
extern const char *const grpc_reject_names[GRPC_REJ_COUNT];

typedef struct grpc_stats {
    uint64_t rejects[GRPC_REJ_COUNT];
    uint64_t calls[GRPC_CODE_COUNT]; /* answers by grpc-status */
    uint64_t connections_total;
    unsigned connections_open;
    size_t bytes_in_flight, queued;
} grpc_stats;

typedef struct grpc_server grpc_server;

/* Binds addr:port (IPv4 or IPv6 literal; port 0: a free one) and serves.
 * NULL with "ADDR:PORT: reason" in err. */
grpc_server *grpc_start(const char *addr, uint16_t port, const grpc_options *opt, const grpc_app *app, char *err,
                        size_t err_size);
/* What a reload may change, for the streams and connections started from
 * now on: max_per_address, header_timeout_s, body_timeout_s and
 * max_bytes_in_flight of o (0: unchanged); the rest of o is not read. Taken
 * by the I/O thread within its next turn (250 ms at most). */
void grpc_set_limits(grpc_server *s, const grpc_options *o);
uint16_t grpc_port(const grpc_server *s);
bool grpc_tls(const grpc_server *s);
void grpc_get_stats(grpc_server *s, grpc_stats *ret);
/* Stops accepting, GOAWAY to every connection; waits until every admitted
 * call is answered, at most timeout_ms. Returns how many were not. */
size_t grpc_drain(grpc_server *s, unsigned timeout_ms);
/* Stops: the running handlers finish, connections close, frees. NULL: nothing. */
void grpc_stop(grpc_server *s);

#endif
