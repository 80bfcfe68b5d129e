/* Records → OTLP/HTTP JSON request bodies (docs/otlp-mapping.md). */
#ifndef PACER_CORE_OTLP_H
#define PACER_CORE_OTLP_H

#include "spool.h"

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

#endif
