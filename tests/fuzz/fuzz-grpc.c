/* libFuzzer target for the uploader's readers of what a gRPC server sends
 * (src/core/grpc.c): header lines and trailers (grpc-status,
 * grpc-message, grpc-status-details-bin), google.rpc.Status with its
 * RetryInfo, base64, and a unary call's response body (the
 * Length-Prefixed-Message, gzip inflated) down to its partial_success.
 *
 * The input is read each way: as header lines (split at '\n'); as a
 * google.rpc.Status; as base64 text; as a response body, plain and gzip;
 * and, base64-encoded, as the value of grpc-status-details-bin. Properties:
 * a status is -1 or a number of at most 9 digits, the message is a
 * NUL-terminated string without control characters, a retry delay lies in
 * [0, 1 h], a decoded length fits what base64 of that length can hold, an
 * accepted response message is at most 4 MiB. ASan and UBSan catch the
 * rest.
 *
 * Seeds (corpus/grpc): trailers with a RetryInfo; a Status; responses with
 * partial_success, plain and gzip. */
#include "grpc.h"
#include "otlp.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_answer(const grpc_answer *a)
{
    if (a->status < -1 || a->status > 999999999)
        abort();
    size_t n = strnlen(a->message, sizeof(a->message));
    if (n == sizeof(a->message))
        abort();
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)a->message[i] < 0x20 || a->message[i] == 0x7f)
            abort();
    if (a->retry_info && (a->retry_delay_ms < 0 || a->retry_delay_ms > 3600000))
        abort();
    if (a->encoding < -1 || a->encoding > 1)
        abort();
}

static char *base64(const uint8_t *p, size_t n, size_t *ret_len)
{
    static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc(n / 3 * 4 + 8);
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        out[o++] = al[v >> 18 & 63];
        out[o++] = al[v >> 12 & 63];
        if (i + 1 < n)
            out[o++] = al[v >> 6 & 63];
        if (i + 2 < n)
            out[o++] = al[v & 63];
    }
    *ret_len = o;
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* exactly its size on the heap: a read past the end is caught */
    uint8_t *in = malloc(size ? size : 1);
    memcpy(in, data, size);

    /* header lines */
    grpc_answer a;
    grpc_answer_init(&a);
    const char *p = (const char *)in, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        grpc_answer_header(&a, p, len);
        check_answer(&a);
        p += len;
    }
    (void)grpc_answer_retry_info(&a);

    /* a google.rpc.Status */
    int code;
    bool retry;
    int64_t ms;
    if (grpc_status_details(in, size, &code, &retry, &ms) && retry && (ms < 0 || ms > 3600000))
        abort();

    /* base64 text, into exactly the room the contract asks for */
    uint8_t *out = malloc(size / 4 * 3 + 3);
    long n = grpc_base64_decode((const char *)in, size, out);
    if (n > (long)(size / 4 * 3 + 2))
        abort();
    free(out);

    /* a response body, plain and gzip */
    for (int enc = -1; enc <= 1; enc++) {
        uint8_t *msg;
        size_t len;
        char why[128];
        int st = grpc_unary_message(in, size, enc, &msg, &len, why, sizeof why);
        if (st == GRPC_OK) {
            if (len > GRPC_MAX_MESSAGE || (len && !msg))
                abort();
            int64_t rejected;
            char text[160];
            otlp_proto_partial_success(msg, len, &rejected, text, sizeof text);
        } else if (strnlen(why, sizeof why) == 0 || strnlen(why, sizeof why) == sizeof why) {
            abort();
        }
        free(msg);
    }

    /* the input as grpc-status-details-bin */
    size_t bl;
    char *b64 = base64(in, size, &bl);
    static const char name[] = "grpc-status-details-bin: ";
    char *line = malloc(sizeof(name) - 1 + bl);
    memcpy(line, name, sizeof(name) - 1);
    memcpy(line + sizeof(name) - 1, b64, bl);
    grpc_answer_init(&a);
    grpc_answer_header(&a, "grpc-status: 8", 14);
    grpc_answer_header(&a, line, sizeof(name) - 1 + bl);
    check_answer(&a);
    if (size > 0 && size <= 6144 && grpc_status_details(in, size, &code, &retry, &ms) != a.details)
        abort(); /* the header reads what the Status reader reads */
    free(line);
    free(b64);
    free(in);
    return 0;
}
