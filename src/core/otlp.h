/* Records → OTLP/HTTP request bodies, protobuf and JSON
 * (docs/otlp-mapping.md). See otlp.c for the forms a record takes on its
 * way and otlp_proto.c for the message table. */
#ifndef PACER_CORE_OTLP_H
#define PACER_CORE_OTLP_H

#include "pbuf.h"
#include "spool.h"

#include <pacer/record.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The URL path of a signal: "/v1/traces", "/v1/logs", "/v1/metrics". */
const char *otlp_path(pacer_signal signal);

/* The signal a record travels as: its type's, traces for a type the schema
 * does not know. */
pacer_signal otlp_signal_of(const pacer_record *r);

/* A record as the spool keeps it (SPOOL_OTLP): its run and its OTLP item,
 * encoded from the schema (otlp.c describes the bytes). `line` is the
 * record's JSON text (pacer_record_format), the body of a log record.
 * Writes into *out (emptied first) and returns 0; -EINVAL for a record that
 * is not sent: one the records reader would refuse (record_check), or one
 * dated before 1970; -ENOMEM. */
int otlp_spool_body(const pacer_record *r, const char *line, size_t len, pbuf *out);

/* The export request of a spooled batch (spool_next_batch), protobuf, or
 * OTLP JSON when `json`. Span and trace ids derive from the batch id and
 * the record's index in the batch, so a retried batch encodes identically.
 * `spool_dropped` goes into every resource as pacer.spool.dropped. Records
 * that cannot be read (a JSON line the reader refuses, a spooled body that
 * is not one otlp_spool_body wrote) are left out and counted in
 * *ret_skipped. Returns the malloc'd body, or NULL when out of memory. */
uint8_t *otlp_request(const spool_batch *b, int64_t spool_dropped, bool json, size_t *ret_len,
                      size_t *ret_skipped);

/* ---- otlp_proto.c ---- */

/* The OTLP JSON of a protobuf Export…ServiceRequest of `signal`, as
 * otlp_request writes them; NULL when out of memory or for bytes that are
 * not such a message. */
char *otlp_proto_to_json(pacer_signal signal, const uint8_t *pb, size_t len, size_t *ret_len);

/* Whether `item` is a spooled item of `signal`: a span without its ids
 * (traces), a log record (logs), metrics as ScopeMetrics frames them
 * (metrics), every field one the table knows, with its wire type, in
 * bounds, strings UTF-8 without NUL. */
bool otlp_proto_check(pacer_signal signal, const uint8_t *item, size_t len);

/* The protobuf Export…ServiceRequest of an OTLP JSON request body (one
 * otlp_request wrote with `json`, or any whose members the table names).
 * Not on the uploader's path: for tools that write OTLP JSON. Returns the
 * malloc'd bytes, or NULL when out of memory or for a member the table does
 * not name. */
uint8_t *otlp_json_to_proto(pacer_signal signal, const char *json, size_t len, size_t *ret_len);

/* data compressed as one gzip member; malloc'd, or NULL when out of memory
 * or zlib cannot be loaded (zlib_dl.h). */
uint8_t *otlp_gzip(const void *data, size_t len, size_t *ret_len);

/* Reads partial_success of a protobuf Export…ServiceResponse: the rejected
 * count and the message (cut to msg_size). False when it has none. */
bool otlp_proto_partial_success(const uint8_t *p, size_t len, int64_t *ret_rejected, char *msg, size_t msg_size);

#endif
