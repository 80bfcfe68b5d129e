/* libFuzzer target for pacerd's OTLP/gRPC front: a call's request stream
 * as gRPC frames it (src/server/grpc/grpc_frame.c: the
 * Length-Prefixed-Message, its compressed flag and length), inflated when
 * flagged (ingest/gunzip.c), decoded as traces, logs and metrics (the
 * decoder OTLP/HTTP uses, ingest/otlp_proto.c); and the header values the
 * front reads or writes (grpc-timeout, grpc-message's percent-encoding,
 * grpc-status-details-bin). Either the input is refused with a reason, or
 * what comes out keeps its promises; ASan and UBSan catch the rest. */
#include "grpc/grpc_frame.h"
#include "ingest/gunzip.h"
#include "ingest/otlp.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MESSAGE (1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void headers(const uint8_t *data, size_t size)
{
    char text[64];
    size_t n = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, data, n);
    text[n] = 0;
    int64_t ns = -1;
    if (grpc_frame_timeout(text, &ns) == 0 && ns < 0)
        abort();
    char out[40];
    grpc_frame_percent(text, out, sizeof out);
    if (strlen(out) >= sizeof out)
        abort();
    for (const char *p = out; *p; p++)
        if (*p < 0x20 || *p > 0x7e)
            abort();
    char *b64 = grpc_frame_status_details(size & 0xff, text, (unsigned)(size % 7));
    if (!b64)
        return;
    if (strspn(b64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") != strlen(b64))
        abort();
    free(b64);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    headers(data, size);
    bool compressed = false;
    const uint8_t *msg = NULL;
    size_t len = 0;
    char err[512] = "";
    int r = grpc_frame_message(data, size, MAX_MESSAGE, &compressed, &msg, &len, err, sizeof err);
    if (r < 0) {
        if ((r != -EBADMSG && r != -EFBIG) || !err[0])
            abort();
        return 0;
    }
    if (size < 5 || msg != data + 5 || len != size - 5 || len > MAX_MESSAGE || grpc_frame_length(data) != len)
        abort();
    char *inflated = NULL;
    if (compressed) {
        int g = gunzip(msg, len, MAX_MESSAGE, &inflated, &len, err, sizeof err);
        if (g < 0) {
            if (!err[0] && g != -ENOMEM)
                abort();
            return 0;
        }
        if (len > MAX_MESSAGE)
            abort();
        msg = (const uint8_t *)inflated;
    }
    int (*const decoders[])(const uint8_t *, size_t, otlp_batch *, char *, size_t) = {
        otlp_proto_decode_traces, otlp_proto_decode_logs, otlp_proto_decode_metrics};
    for (size_t k = 0; k < 3; k++) {
        otlp_batch b;
        memset(&b, 0, sizeof b);
        err[0] = 0;
        int d = decoders[k](msg, len, &b, err, sizeof err);
        if (d < 0 && (!err[0] || b.n_spans || b.n_logs || b.n_points))
            abort();
        otlp_batch_clear(&b);
    }
    free(inflated);
    return 0;
}
