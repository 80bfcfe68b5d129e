/* The OTLP/gRPC services (opentelemetry.proto.collector.{trace,logs,
 * metrics}.v1.{Trace,Logs,Metrics}Service/Export) on the one ingest path
 * (ingest.h) that OTLP/HTTP takes too: the same decoder, cleaning and
 * store; only the answer's shape differs. */
#ifndef PACER_SERVER_GRPC_OTLP_H
#define PACER_SERVER_GRPC_OTLP_H

#include "grpc.h"
#include "ingest/ingest.h"

/* The signal of a method (":path"), or -1 when it is none of the three. */
int grpc_otlp_service(const char *path);

/* Export: msg (an Export…ServiceRequest, inflated) of signal what, under
 * app, with the call's batch id (refused INVALID_ARGUMENT when malformed)
 * → r: OK with an Export…ServiceResponse (its partial_success the items
 * refused and why), INVALID_ARGUMENT (a message that does not decode),
 * RESOURCE_EXHAUSTED with RetryInfo (the store's queue is full),
 * UNAVAILABLE with RetryInfo (out of memory, the store could not commit).
 * *coming as ingest_batch has it. */
void grpc_otlp_export(const ingest_ctx *ig, const char *app, enum ingest_signal what, const grpc_call *call,
                      const uint8_t *msg, size_t len, bool *coming, grpc_reply *r);

#endif
