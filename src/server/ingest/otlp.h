/* OTLP/HTTP decoding: request bodies of /v1/traces, /v1/logs and
 * /v1/metrics → flat arrays of spans (with their events and links), log
 * records and data points (with their buckets, quantiles and exemplars),
 * and the resources and scopes they belong to. The JSON decoder is here
 * (otlp.c), the protobuf one in otlp_proto.c; both fill the same batch.
 *
 * JSON is accepted as OpenTelemetry SDKs send it (the OTLP JSON encoding
 * and the plain proto3 JSON mapping): members in lowerCamelCase or named as
 * the proto fields (snake_case), the deprecated instrumentationLibrary…
 * lists read as scopes, trace and span ids as hex (OTLP JSON) or base64
 * (proto3 JSON), 64-bit integers as strings or numbers, enums as integers
 * or their names, doubles as numbers or "NaN", "Infinity", "-Infinity".
 * Unknown members are skipped, as OTLP requires, and counted
 * (batch->ignored) so that the answer can say so.
 *
 * The decoder reads the body in one pass of base's pull parser (jread, in
 * <pacer/base/json.h>): no JSON tree is built. Strings are unescaped in place
 * into one copy of the body, so a decoded batch costs one allocation for the
 * text plus the item arrays, whatever the number of spans. The `json` texts
 * below are the body's own (json_compact() removes their whitespace).
 *
 * Limits: nesting depth at most OTLP_MAX_DEPTH, valid UTF-8 (no overlong
 * forms, no surrogates), no \u0000 and no raw control characters in
 * strings, integers within 64 bits, finite JSON numbers (non-finite doubles
 * come as the strings above).
 *
 * Two levels of failure:
 *   - the request as a whole (not JSON, too deep, the top level is not an
 *     object, a list is not a list): the decode function returns -EBADMSG and
 *     writes the reason, which begins with "invalid JSON" for a text that is
 *     not valid JSON; the HTTP layer answers 400 with it. Too deep (anywhere
 *     in the body) wins over every other reason, a syntax error anywhere
 *     over a wrong shape;
 *   - one item (a span without a valid traceId, a log record with a bad
 *     timestamp, an attribute with a wrong type…): that item is left out and
 *     counted in `rejected`; `reject_message` names the first one, with its
 *     JSON path. The HTTP layer answers 200 with partialSuccess.
 *
 * Duplicate members in an object: the last one wins for a field; lists that
 * appear twice are both read.
 *
 * A decoded batch borrows from the body (the `json` texts of attributes and
 * values point into it) and owns a copy of it (every string), so it stays
 * valid while the body lives and until otlp_batch_clear(). Decoding is
 * reentrant; a batch is owned by one thread at a time.
 */
#ifndef PACER_SERVER_OTLP_H
#define PACER_SERVER_OTLP_H

#include <pacer/base/json.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OTLP_MAX_DEPTH 64
#define OTLP_MAX_NAME 1024 /* bytes in a span, metric or attribute name */

/* An AnyValue, checked. From a JSON body, `json` is its text in the body
 * (not compacted); from a protobuf body, `json` is NULL and an ARRAY or
 * KVLIST keeps its encoded bytes in s/len (rendered by otlp_write_value). */
typedef enum otlp_value_type {
    OTLP_EMPTY, /* {} or only unknown members */
    OTLP_STRING, OTLP_BOOL, OTLP_INT, OTLP_DOUBLE, OTLP_BYTES, OTLP_ARRAY, OTLP_KVLIST
} otlp_value_type;

typedef struct otlp_value {
    otlp_value_type type;
    const char *s; /* STRING, BYTES (JSON: the base64 text; protobuf: the bytes), ARRAY/KVLIST (protobuf) */
    size_t len;
    int64_t i;
    double d;      /* NaN and infinities included */
    bool b;
    const char *json;
    size_t json_len;
} otlp_value;

/* One KeyValue. `json` is the whole {"key":…,"value":…} text in the body
 * (NULL from protobuf). */
typedef struct otlp_kv {
    const char *key;
    size_t key_len;
    bool has_value;
    otlp_value value;
    const char *json;
    size_t json_len;
} otlp_kv;

/* A KeyValue list: n entries at kv; json is the array's text in the body, or
 * NULL when the list was absent or came from protobuf. */
typedef struct otlp_attrs {
    const otlp_kv *kv;
    size_t n;
    size_t first; /* index into the batch's kv array (the decoder's) */
    const char *json;
    size_t json_len;
} otlp_attrs;

typedef struct otlp_resource {
    const char *service_name;    /* resource attribute service.name, or NULL */
    const char *service_version; /* service.version, or NULL */
    const char *session;         /* pacer.session, or NULL */
    otlp_attrs attrs;
    uint32_t dropped_attributes;
    const char *schema_url; /* of the ResourceSpans/Logs/Metrics entry, or NULL */
} otlp_resource;

/* One ScopeSpans / ScopeLogs / ScopeMetrics entry (an InstrumentationScope,
 * or the deprecated InstrumentationLibrary). */
typedef struct otlp_scope {
    const char *name, *version; /* or NULL */
    otlp_attrs attrs;
    uint32_t dropped_attributes;
    const char *schema_url; /* of the entry, or NULL */
} otlp_scope;

typedef struct otlp_event {
    int64_t time_ns;
    const char *name;
    otlp_attrs attrs;
    uint32_t dropped_attributes;
} otlp_event;

typedef struct otlp_link {
    uint8_t trace_id[16];
    uint8_t span_id[8];
    const char *trace_state; /* or NULL */
    otlp_attrs attrs;
    uint32_t dropped_attributes;
    bool has_flags;
    uint32_t flags;
} otlp_link;

typedef struct otlp_span {
    uint32_t resource; /* index into resources */
    uint32_t scope;    /* index into scopes */
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t parent_span_id[8];
    bool has_parent;
    const char *name;
    const char *scope_name; /* instrumentation scope name, or NULL */
    const char *trace_state; /* or NULL */
    bool has_flags;
    uint32_t flags;
    int kind;          /* 0 unspecified … 5 consumer */
    int64_t start_ns, end_ns;
    int status_code;   /* 0 unset, 1 ok, 2 error */
    const char *status_message; /* or NULL */
    otlp_attrs attrs;
    uint32_t dropped_attributes, dropped_events, dropped_links;
    size_t first_event, n_events; /* into the batch's events */
    size_t first_link, n_links;   /* into the batch's links */
} otlp_span;

typedef struct otlp_log {
    uint32_t resource;
    uint32_t scope;
    int64_t time_ns; /* timeUnixNano, or observedTimeUnixNano when it is 0 */
    int64_t observed_ns; /* 0: absent */
    int severity_number;
    const char *severity_text; /* or NULL */
    const char *event_name;    /* or NULL */
    bool has_body;
    otlp_value body;
    otlp_attrs attrs;
    uint32_t dropped_attributes;
    bool has_flags;
    uint32_t flags;
    bool has_trace_id, has_span_id;
    uint8_t trace_id[16];
    uint8_t span_id[8];
} otlp_log;

typedef struct otlp_exemplar {
    int64_t time_ns;
    bool is_int;
    int64_t i;
    double d;
    bool has_trace_id, has_span_id;
    uint8_t trace_id[16];
    uint8_t span_id[8];
    otlp_attrs attrs; /* filtered attributes */
} otlp_exemplar;

typedef struct otlp_quantile {
    double quantile, value;
} otlp_quantile;

/* Buckets of an exponential histogram: counts[i] is bucket offset + i. */
typedef struct otlp_buckets {
    int32_t offset;
    const uint64_t *counts;
    size_t n;
} otlp_buckets;

typedef struct otlp_point {
    uint32_t resource;
    uint32_t scope;
    const char *name;
    const char *description; /* or NULL */
    const char *unit;    /* or NULL */
    const char *type;    /* "gauge", "sum", "histogram", "exponential_histogram", "summary" */
    int64_t time_ns;
    int64_t start_ns;    /* 0: absent */
    double value;        /* gauge, sum: the value; histograms, summary: the sum (0 when absent) */
    bool is_int;         /* gauge, sum: asInt (exact in int_value) */
    int64_t int_value;
    int64_t count;       /* histograms, summary: the count; else -1 */
    int temporality;     /* sum, histograms: 0 unspecified, 1 delta, 2 cumulative; -1: none */
    int monotonic;       /* sum: 0 or 1; -1: none */
    uint32_t flags;
    bool has_sum, has_min, has_max;
    double sum, min, max;
    /* histogram */
    const uint64_t *bucket_counts;
    size_t n_bucket_counts;
    const double *bounds;
    size_t n_bounds;
    /* exponential histogram */
    int32_t scale;
    uint64_t zero_count;
    double zero_threshold;
    otlp_buckets positive, negative;
    /* summary */
    const otlp_quantile *quantiles;
    size_t n_quantiles;
    size_t first_exemplar, n_exemplars; /* into the batch's exemplars */
    otlp_attrs attrs;
} otlp_point;

typedef struct otlp_chunk otlp_chunk;

typedef struct otlp_batch {
    char *text;           /* the copy of the body every string points into */
    otlp_chunk *pool;     /* numbers and strings the decoder made (protobuf: copies of strings) */
    otlp_kv *kvs;         /* every attribute of the batch */
    size_t n_kvs;
    otlp_resource *resources;
    size_t n_resources;
    otlp_scope *scopes;
    size_t n_scopes;
    otlp_span *spans;
    size_t n_spans;
    otlp_event *events;
    size_t n_events;
    otlp_link *links;
    size_t n_links;
    otlp_log *logs;
    size_t n_logs;
    otlp_point *points;
    size_t n_points;
    otlp_exemplar *exemplars;
    size_t n_exemplars;
    size_t rejected;      /* items left out */
    char *reject_message; /* the first item's reason (malloc'd), or NULL */
    size_t ignored;       /* unknown fields skipped (nothing of them is stored) */
    char *ignore_message; /* the first one (malloc'd), or NULL */
} otlp_batch;

/* Decode a request body into an empty (zeroed) batch. Return 0 (items may
 * have been rejected: see batch->rejected), -EBADMSG with the reason in err
 * when the request as a whole is invalid, or -ENOMEM. On failure the batch
 * is left empty. */
int otlp_decode_traces(const char *body, size_t len, otlp_batch *batch, char *err, size_t err_size);
int otlp_decode_logs(const char *body, size_t len, otlp_batch *batch, char *err, size_t err_size);
int otlp_decode_metrics(const char *body, size_t len, otlp_batch *batch, char *err, size_t err_size);

/* The same from OTLP/HTTP protobuf bodies (Export…ServiceRequest), in
 * otlp_proto.c. A body that is not a valid message of that type (bad wire
 * format, a known field with the wrong wire type, nesting deeper than
 * OTLP_MAX_DEPTH) is invalid as a whole: -EBADMSG, the reason beginning
 * with "invalid protobuf". Item checks and reasons are those of the JSON
 * decoder, with the same (OTLP JSON) path, so both encodings answer alike. */
int otlp_proto_decode_traces(const uint8_t *body, size_t len, otlp_batch *batch, char *err, size_t err_size);
int otlp_proto_decode_logs(const uint8_t *body, size_t len, otlp_batch *batch, char *err, size_t err_size);
int otlp_proto_decode_metrics(const uint8_t *body, size_t len, otlp_batch *batch, char *err, size_t err_size);

/* An Export…ServiceResponse (protobuf): partial_success with `rejected` and
 * `message` when either is set, else empty. Returns the malloc'd bytes (len
 * in *ret_len, possibly 0), or NULL when out of memory. */
uint8_t *otlp_proto_response(size_t rejected, const char *message, size_t *ret_len);
/* The type URL of a google.rpc.BadRequest in a google.protobuf.Any. */
#define OTLP_BAD_REQUEST_TYPE "type.googleapis.com/google.rpc.BadRequest"
/* A google.rpc.Status (protobuf), the error body OTLP/HTTP asks for in
 * answer to a protobuf request: the gRPC code and the message, and with
 * bad_field not NULL a google.rpc.BadRequest in its details (an Any), of
 * one field violation: bad_field ("" when none is named) and bad_why.
 * Returns the malloc'd bytes (len in *ret_len), or NULL when out of
 * memory. */
uint8_t *otlp_proto_status(int code, const char *message, const char *bad_field, const char *bad_why,
                           size_t *ret_len);

/* OTLP JSON of what a batch holds, whichever encoding it came in: a value
 * ({"stringValue":…}), a KeyValue ({"key":…,"value":…}), a KeyValue list
 * ([…]). Text from a JSON body is copied without its whitespace. */
void otlp_write_value(jbuf *b, const otlp_value *v);
void otlp_write_kv(jbuf *b, const otlp_kv *kv);
void otlp_write_attrs(jbuf *b, const otlp_attrs *a);
/* A double as OTLP JSON has it: a number, or "NaN", "Infinity", "-Infinity". */
void otlp_write_double(jbuf *b, double d);
/* An ARRAY or KVLIST from protobuf (its encoded bytes), for
 * otlp_write_value; in otlp_proto.c. */
void otlp_proto_write_list(jbuf *b, otlp_value_type type, const uint8_t *p, size_t len);

/* What a decoder fills (otlp.c's and otlp_proto.c's, each struct starts
 * with one): the batch, the room of its arrays, and the count of rejected
 * items with the first one's reason. */
typedef struct otlp_out {
    otlp_batch *b;
    size_t cap_res, cap_items, cap_kvs, cap_scopes, cap_events, cap_links, cap_exemplars;
    bool oom;
    char msg[512]; /* the first rejection's reason */
    bool has_msg;
} otlp_out;

/* Room in the array *arr (of elements of size bytes, n in use, room
 * *cap) for one more: false when out of memory (o->oom set). */
bool otlp_out_room(otlp_out *o, void *arr, size_t n, size_t *cap, size_t size);

/* Where to roll the batch back to when a part is rejected after some of
 * its items were added. */
typedef struct otlp_mark {
    size_t items, rejected;
    bool has_msg;
} otlp_mark;
otlp_mark otlp_out_mark(const otlp_out *o);
void otlp_out_restore(otlp_out *o, otlp_mark m);
/* One more item rejected; the first one's reason is kept. */
void otlp_out_reject(otlp_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* *why keeps the first reason given. */
void otlp_out_why(const char **why, const char *w);
/* The end of a decode: out of memory (-ENOMEM) or the request refused
 * for `bad` (-EBADMSG; the reason in err) clear the batch; otherwise each
 * attribute list points into the batch's key-value array (which may have
 * moved while it grew) and the first rejection's reason and `ignored`
 * (when not NULL) are kept in the batch: 0. */
int otlp_out_end(otlp_out *o, const char *bad, const char *ignored, char *err, size_t err_size);

/* Memory that lives as long as the batch (aligned for any type); NULL when
 * out of memory. For the decoders. */
void *otlp_batch_alloc(otlp_batch *batch, size_t n);

/* Sets the resource and the scope (each when >= 0) of the items of b
 * from index `from` on, of every signal (both decoders). */
void otlp_batch_set_owner(otlp_batch *b, size_t from, long resource, long scope, const char *scope_name);
/* Frees what a batch holds and zeroes it. Accepts an empty batch. */
void otlp_batch_clear(otlp_batch *batch);

/* Attribute access: the value of the first attribute named key, or NULL
 * (absent, or a KeyValue without a value). Values were checked by the
 * decoder. */
const otlp_value *otlp_attr(const otlp_attrs *attrs, const char *key);
/* Each returns true and stores the value when v (may be NULL) holds that
 * type. int and double accept intValue and doubleValue both (a double must
 * be integral and in range for int). */
bool otlp_value_string(const otlp_value *v, const char **ret);
bool otlp_value_double(const otlp_value *v, double *ret);
bool otlp_value_int(const otlp_value *v, int64_t *ret);
bool otlp_value_bool(const otlp_value *v, bool *ret);

/* Parses an OTLP 64-bit integer written as decimal digits with an optional
 * '-' (the string form; the number form is the same digits). Returns true
 * and stores it when valid. Exposed for tests. */
bool otlp_parse_int64(const char *s, size_t len, int64_t *ret);

/* Decodes an id of n bytes (16 or 8) from hex (2n digits) or base64.
 * Returns true when valid. Exposed for tests. */
bool otlp_parse_id(const char *s, uint8_t *out, size_t n);

#endif
