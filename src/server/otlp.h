/* OTLP/HTTP JSON decoding: request bodies of /v1/traces, /v1/logs and
 * /v1/metrics → flat arrays of spans, log records and data points.
 *
 * Accepts what OpenTelemetry SDKs send (the OTLP JSON encoding and the plain
 * proto3 JSON mapping): trace and span ids as hex (OTLP JSON) or base64
 * (proto3 JSON), 64-bit integers as strings or numbers, enums as integers or
 * their names. Unknown fields are ignored, as OTLP requires.
 *
 * Limits enforced before jansson sees the body: nesting depth at most
 * OTLP_MAX_DEPTH (jansson's own limit is 2048, far deeper than any OTLP
 * document), and the body must be valid UTF-8 (jansson checks it).
 *
 * Two levels of failure:
 *   - the request as a whole (not JSON, too deep, the top level is not an
 *     object, a list is not a list): the decode function returns -EBADMSG and
 *     writes the reason; the HTTP layer answers 400 with it;
 *   - one item (a span without a valid traceId, a log record with a bad
 *     timestamp, an attribute with a wrong type…): that item is left out and
 *     counted in `rejected`; `reject_message` names the first one, with its
 *     JSON path. The HTTP layer answers 200 with partialSuccess.
 *
 * A decoded batch borrows strings and attribute arrays from the parsed JSON
 * (`root`), so it stays valid until otlp_batch_clear(). Decoding is
 * reentrant; a batch is owned by one thread at a time.
 */
#ifndef PACER_SERVER_OTLP_H
#define PACER_SERVER_OTLP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OTLP_MAX_DEPTH 64
#define OTLP_MAX_NAME 1024 /* bytes in a span, metric or attribute name */

typedef struct otlp_resource {
    const char *service_name;    /* resource attribute service.name, or NULL */
    const char *service_version; /* service.version, or NULL */
    const char *session;         /* pacer.session, or NULL */
    json_t *attributes;          /* KeyValue array, or NULL */
} otlp_resource;

typedef struct otlp_span {
    uint32_t resource; /* index into resources */
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t parent_span_id[8];
    bool has_parent;
    const char *name;
    const char *scope; /* instrumentation scope name, or NULL */
    int kind;          /* 0 unspecified … 5 consumer */
    int64_t start_ns, end_ns;
    int status_code;   /* 0 unset, 1 ok, 2 error */
    const char *status_message; /* or NULL */
    json_t *attributes; /* KeyValue array, or NULL */
} otlp_span;

typedef struct otlp_log {
    uint32_t resource;
    int64_t time_ns; /* timeUnixNano, or observedTimeUnixNano when it is 0 */
    int severity_number;
    const char *severity_text; /* or NULL */
    json_t *body;               /* AnyValue, or NULL */
    json_t *attributes;
} otlp_log;

typedef struct otlp_point {
    uint32_t resource;
    const char *name;
    const char *unit;    /* or NULL */
    const char *type;    /* "gauge", "sum", "histogram", "exponential_histogram", "summary" */
    int64_t time_ns;
    double value;        /* gauge, sum: the value; histograms, summary: the sum */
    int64_t count;       /* histograms, summary: the count; else -1 */
    json_t *attributes;
} otlp_point;

typedef struct otlp_batch {
    json_t *root;
    otlp_resource *resources;
    size_t n_resources;
    otlp_span *spans;
    size_t n_spans;
    otlp_log *logs;
    size_t n_logs;
    otlp_point *points;
    size_t n_points;
    size_t rejected;      /* items left out */
    char *reject_message; /* the first item's reason (malloc'd), or NULL */
} otlp_batch;

/* Decode a request body into an empty (zeroed) batch. Return 0 (items may
 * have been rejected: see batch->rejected), -EBADMSG with the reason in err
 * when the request as a whole is invalid, or -ENOMEM. On failure the batch
 * is left empty. */
int otlp_decode_traces(const char *body, size_t len, otlp_batch *batch, char *err, size_t err_size);
int otlp_decode_logs(const char *body, size_t len, otlp_batch *batch, char *err, size_t err_size);
int otlp_decode_metrics(const char *body, size_t len, otlp_batch *batch, char *err, size_t err_size);

/* Frees what a batch holds and zeroes it. Accepts an empty batch. */
void otlp_batch_clear(otlp_batch *batch);

/* Attribute access. attrs is a KeyValue array (may be NULL); values are
 * AnyValue objects already checked by the decoder. */
const json_t *otlp_attr(const json_t *attrs, const char *key);
/* Each returns true and stores the value when v holds that type. int and
 * double accept intValue and doubleValue both (a double must be integral
 * and in range for int). */
bool otlp_value_string(const json_t *v, const char **ret);
bool otlp_value_double(const json_t *v, double *ret);
bool otlp_value_int(const json_t *v, int64_t *ret);
bool otlp_value_bool(const json_t *v, bool *ret);

/* Parses an OTLP 64-bit integer (a JSON integer, or a string of decimal
 * digits). Returns true and stores it when valid. Exposed for tests. */
bool otlp_parse_int64(const json_t *v, int64_t *ret);

/* Decodes an id of n bytes (16 or 8) from hex (2n digits) or base64.
 * Returns true when valid. Exposed for tests. */
bool otlp_parse_id(const char *s, uint8_t *out, size_t n);

#endif
