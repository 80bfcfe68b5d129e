/* The OTLP/gRPC services (grpc_otlp.h). */
#include "grpc_otlp.h"
#include "ingest/otlp.h"

#include <errno.h>
#include <string.h>

static const char *const methods[] = {
    [INGEST_TRACES] = "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
    [INGEST_LOGS] = "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
    [INGEST_METRICS] = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
};

int grpc_otlp_service(const char *path)
{
    for (int i = 0; i < 3; i++)
        if (path && strcmp(path, methods[i]) == 0)
            return i;
    return -1;
}

void grpc_otlp_export(const ingest_ctx *ig, const char *app, enum ingest_signal what, const grpc_call *call,
                      const uint8_t *msg, size_t len, bool *coming, grpc_reply *r)
{
    if (call->batch_id && !ingest_batch_id_ok(call->batch_id)) {
        grpc_reply_set(r, GRPC_INVALID_ARGUMENT, "x-pacer-batch-id: expected 1-%d characters of A-Z a-z 0-9 - _ . :",
                       INGEST_MAX_BATCH_ID);
        return;
    }
    ingest_outcome out;
    char err[512];
    int e = ingest_batch(ig, app, what, true, (const char *)msg, len, call->batch_id, methods[what], coming, &out, err,
                         sizeof err);
    if (e == -EINVAL) {
        grpc_reply_set(r, GRPC_INVALID_ARGUMENT, "%s", err);
        return;
    }
    if (e == -EAGAIN) {
        grpc_reply_set(r, GRPC_RESOURCE_EXHAUSTED, "pacerd is busy: retry after 1 s");
        r->retry_after = 1;
        return;
    }
    if (e == -ENOMEM) {
        grpc_reply_set(r, GRPC_UNAVAILABLE, "out of memory");
        r->retry_after = 1;
        return;
    }
    if (e < 0) {
        grpc_reply_set(r, GRPC_UNAVAILABLE, "the store could not commit the batch: retry later");
        r->retry_after = 5;
        return;
    }
    size_t n;
    uint8_t *resp = otlp_proto_response(out.rejected, out.message, &n);
    if (!resp) {
        grpc_reply_set(r, GRPC_UNAVAILABLE, "out of memory");
        r->retry_after = 1;
        return;
    }
    r->code = GRPC_OK;
    r->body = resp;
    r->len = n;
    r->items = out.items;
}
