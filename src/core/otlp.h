/* Records → OTLP/HTTP request bodies, JSON and protobuf (docs/otlp-mapping.md). */
#ifndef PACER_CORE_OTLP_H
#define PACER_CORE_OTLP_H

#include "spool.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The URL path of a signal: "/v1/traces", "/v1/logs", "/v1/metrics". */
const char *otlp_path(pacer_signal signal);

/* Encodes `n` record lines as one export request of `signal`. Span and
 * trace ids derive from `batch_id` and the record's index, so a retried
 * batch encodes identically. `spool_dropped` goes into every resource as
 * pacer.spool.dropped. Records that are not JSON objects are skipped and
 * counted in *ret_skipped. Returns the malloc'd body, or NULL on ENOMEM. */
char *otlp_encode(pacer_signal signal, char *const *records, size_t n, const char *batch_id,
                  int64_t spool_dropped, size_t *ret_len, size_t *ret_skipped);

/* The protobuf Export…ServiceRequest of a request body otlp_encode wrote
 * (otlp_proto.c). Returns the malloc'd bytes, or NULL when out of memory
 * (or for a body the encoder could not have written). */
uint8_t *otlp_json_to_proto(pacer_signal signal, const char *json, size_t len, size_t *ret_len);

/* data compressed as one gzip member; malloc'd, or NULL when out of memory
 * or zlib cannot be loaded (zlib_dl.h). */
uint8_t *otlp_gzip(const void *data, size_t len, size_t *ret_len);

/* Reads partial_success of a protobuf Export…ServiceResponse: the rejected
 * count and the message (cut to msg_size). False when it has none. */
bool otlp_proto_partial_success(const uint8_t *p, size_t len, int64_t *ret_rejected, char *msg, size_t msg_size);

#endif
