/* The reference encoder of the tests and bench-upload (otlp_ref.c): spooled
 * record lines → OTLP/HTTP JSON, the path the uploader took before it
 * encoded records directly; otlp_json_to_proto turns its output into the
 * protobuf that path sent. */
#ifndef PACER_TESTS_OTLP_REF_H
#define PACER_TESTS_OTLP_REF_H

#include <pacer/schema.h>

#include <stddef.h>
#include <stdint.h>

/* Encodes `n` record lines as one export request of `signal`; ids derive
 * from `batch_id` and the record's index. Lines that do not read as
 * records are skipped and counted in *ret_skipped. Returns the malloc'd
 * body, or NULL on ENOMEM. */
char *ref_otlp_encode(pacer_signal signal, char *const *records, size_t n, const char *batch_id,
                      int64_t spool_dropped, size_t *ret_len, size_t *ret_skipped);

#endif
