/* OTLP/gRPC for the uploader: the calls' paths, the length-prefixed
 * message, and the reading of a gRPC answer (status, message, RetryInfo)
 * from the header lines libcurl hands over — response headers and
 * trailers alike — and the response body. Pure functions on bytes: the
 * transport (libcurl, HTTP/2) is uploader.c's. See grpc.c. */
#ifndef PACER_CORE_GRPC_H
#define PACER_CORE_GRPC_H

#include <pacer/schema.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* gRPC status codes (grpc/doc/statuscodes.md). */
enum {
    GRPC_OK = 0,
    GRPC_CANCELLED = 1,
    GRPC_UNKNOWN = 2,
    GRPC_INVALID_ARGUMENT = 3,
    GRPC_DEADLINE_EXCEEDED = 4,
    GRPC_NOT_FOUND = 5,
    GRPC_ALREADY_EXISTS = 6,
    GRPC_PERMISSION_DENIED = 7,
    GRPC_RESOURCE_EXHAUSTED = 8,
    GRPC_FAILED_PRECONDITION = 9,
    GRPC_ABORTED = 10,
    GRPC_OUT_OF_RANGE = 11,
    GRPC_UNIMPLEMENTED = 12,
    GRPC_INTERNAL = 13,
    GRPC_UNAVAILABLE = 14,
    GRPC_DATA_LOSS = 15,
    GRPC_UNAUTHENTICATED = 16,
};

/* The largest response message read (gRPC's default receive limit). */
#define GRPC_MAX_MESSAGE (4u << 20)

/* "UNAVAILABLE" for 14; NULL for a code gRPC does not define. */
const char *grpc_status_name(int code);

/* Whether the OTLP specification's gRPC section lets a failed export be
 * retried: CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE,
 * UNAVAILABLE, DATA_LOSS; RESOURCE_EXHAUSTED only when the server said
 * when (a google.rpc.RetryInfo). Every other code refuses for good. */
bool grpc_retryable(int code, bool retry_info);

/* The status a client synthesizes for an answer without grpc-status
 * (grpc/doc/http-grpc-status-mapping.md): 400 INTERNAL, 401
 * UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 UNIMPLEMENTED, 429, 502,
 * 503, 504 UNAVAILABLE, 431 INTERNAL, any other (200 included) UNKNOWN. */
int grpc_status_from_http(long http_status);

/* The status of an HTTP/2 stream reset with `h2_error` (RST_STREAM's
 * code) before any status arrived (grpc/doc/PROTOCOL-HTTP2.md):
 * REFUSED_STREAM UNAVAILABLE, CANCEL CANCELLED, ENHANCE_YOUR_CALM
 * RESOURCE_EXHAUSTED, INADEQUATE_SECURITY PERMISSION_DENIED, the others
 * INTERNAL. */
int grpc_status_from_h2_reset(unsigned h2_error);

/* The method of a signal's export:
 * "/opentelemetry.proto.collector.trace.v1.TraceService/Export", …logs…,
 * …metrics…. */
const char *grpc_path(pacer_signal signal);

/* The value of grpc-timeout for `ms` milliseconds ("15000m"): at most 8
 * digits, in a coarser unit when needed. `buf` holds 16 bytes. */
void grpc_timeout(int64_t ms, char buf[16]);

/* A Length-Prefixed-Message: the compressed flag, the length (4 bytes, big
 * endian), the message. malloc'd; NULL when out of memory or past 4 GiB. */
uint8_t *grpc_frame(const void *msg, size_t len, bool compressed, size_t *ret_len);

/* What an answer's header lines say. Zeroed by grpc_answer_init. */
typedef struct grpc_answer {
    long http_status;       /* of the last status line ("HTTP/2 200"); 0: none */
    bool grpc_content_type; /* content-type application/grpc, or application/grpc+… / ;… */
    int status;             /* grpc-status; -1: not received */
    char message[160];      /* grpc-message, percent-decoded, control characters as '?' */
    int encoding;           /* grpc-encoding of the response message: 0 identity, 1 gzip, -1 another */
    /* grpc-status-details-bin: a google.rpc.Status */
    bool details;           /* one was read */
    int details_code;       /* its code */
    bool retry_info;        /* it holds a google.rpc.RetryInfo */
    int64_t retry_delay_ms; /* its retry_delay, rounded up, at most 3600 s; 0 when not positive */
} grpc_answer;

void grpc_answer_init(grpc_answer *a);

/* Reads one header line as libcurl hands it to a header callback: a status
 * line, "name: value" with its CRLF, or the empty line ending a block;
 * `len` bytes, not NUL-terminated. Lines of no interest are ignored. A
 * status line starts a new block: what the block before said of the
 * content type is forgotten; a status received stays (trailers come
 * last). */
void grpc_answer_header(grpc_answer *a, const char *line, size_t len);

/* Whether the status details apply: a RetryInfo counts only in a
 * google.rpc.Status whose code is the received grpc-status. */
bool grpc_answer_retry_info(const grpc_answer *a);

/* Reads google.rpc.Status { 1 code; 2 message; 3 repeated Any details }
 * and in its details a google.rpc.RetryInfo { 1 Duration retry_delay }
 * (an Any whose type URL's last segment is google.rpc.RetryInfo). Sets
 * *ret_code, *ret_retry_info and *ret_delay_ms (as grpc_answer's). Fields
 * it does not know are skipped; returns false for bytes that are not such
 * a message. */
bool grpc_status_details(const uint8_t *p, size_t len, int *ret_code, bool *ret_retry_info, int64_t *ret_delay_ms);

/* Decodes base64 (RFC 4648 §4, padded or not) of n bytes into out (room for
 * 3 * n / 4 + 3 bytes). Returns the decoded length, or -1 for text that is
 * not base64. */
long grpc_base64_decode(const char *s, size_t n, uint8_t *out);

/* The message of a unary call's response body: exactly one
 * Length-Prefixed-Message, compressed (flag 1) only with grpc-encoding gzip
 * (`encoding` as grpc_answer's), at most GRPC_MAX_MESSAGE bytes once
 * inflated. Returns GRPC_OK with *ret_msg (malloc'd, NULL for an empty
 * message) and *ret_len, or the status the call fails with —
 * GRPC_INTERNAL for no message, two, a cut one, a bad flag or encoding,
 * GRPC_RESOURCE_EXHAUSTED for one too large — with the reason in `why`. */
int grpc_unary_message(const uint8_t *body, size_t len, int encoding, uint8_t **ret_msg, size_t *ret_len,
                       char *why, size_t why_size);

#endif
