/* The uploader's reading of gRPC answers (src/core/grpc.c): the status
 * tables of the OTLP and gRPC specifications, header lines as libcurl hands
 * them (headers and trailers), google.rpc.Status with RetryInfo in
 * grpc-status-details-bin, and the unary response message. Messages are
 * written here with the protobuf writer (pbuf.c), field by field as
 * googleapis' .proto files number them. */
#include "grpc.h"
#include "otlp.h"
#include "pbuf.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void header(grpc_answer *a, const char *line)
{
    grpc_answer_header(a, line, strlen(line));
}

static char *base64(const uint8_t *p, size_t n, bool pad)
{
    static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc(n / 3 * 4 + 8);
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        out[o++] = al[v >> 18 & 63];
        out[o++] = al[v >> 12 & 63];
        out[o++] = i + 1 < n ? al[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? al[v & 63] : '=';
    }
    while (!pad && o && out[o - 1] == '=')
        o--;
    out[o] = '\0';
    return out;
}

/* google.rpc.Status { code, message, details: [Any(RetryInfo{retry_delay}) when
 * seconds >= 0, preceded by an Any of another type] } */
static uint8_t *status_msg(int code, const char *message, int64_t seconds, int32_t nanos, const char *type_url,
                           size_t *ret_len)
{
    pbuf b = {0};
    if (code)
        pb_uint(&b, 1, (uint64_t)(int64_t)code);
    pb_cstr(&b, 2, message);
    size_t any = pb_open(&b, 3); /* a BadRequest first: skipped */
    pb_cstr(&b, 1, "type.googleapis.com/google.rpc.BadRequest");
    pb_bytes(&b, 2, "\x0a\x02\x0a\x00", 4);
    pb_close(&b, any);
    if (type_url) {
        any = pb_open(&b, 3);
        pb_cstr(&b, 1, type_url);
        size_t value = pb_open(&b, 2);
        size_t delay = pb_open(&b, 1);
        if (seconds)
            pb_uint(&b, 1, (uint64_t)seconds);
        if (nanos)
            pb_uint(&b, 2, (uint64_t)(int64_t)nanos);
        pb_close(&b, delay);
        pb_close(&b, value);
        pb_close(&b, any);
    }
    return pb_steal(&b, ret_len);
}

static void test_tables(void **state)
{
    (void)state;
    /* the OTLP specification's table, code by code */
    static const bool retry[17] = {false, true, false, false, true, false, false, false, false,
                                   false, true, true, false, false, true, true, false};
    for (int c = 0; c <= 16; c++) {
        assert_int_equal(grpc_retryable(c, false), retry[c]);
        assert_int_equal(grpc_retryable(c, true), retry[c] || c == GRPC_RESOURCE_EXHAUSTED);
        assert_non_null(grpc_status_name(c));
    }
    assert_false(grpc_retryable(17, true));
    assert_null(grpc_status_name(17));
    assert_null(grpc_status_name(-1));
    assert_string_equal(grpc_status_name(14), "UNAVAILABLE");
    assert_string_equal(grpc_status_name(16), "UNAUTHENTICATED");
    /* HTTP → gRPC for answers without grpc-status */
    assert_int_equal(grpc_status_from_http(400), GRPC_INTERNAL);
    assert_int_equal(grpc_status_from_http(401), GRPC_UNAUTHENTICATED);
    assert_int_equal(grpc_status_from_http(403), GRPC_PERMISSION_DENIED);
    assert_int_equal(grpc_status_from_http(404), GRPC_UNIMPLEMENTED);
    assert_int_equal(grpc_status_from_http(429), GRPC_UNAVAILABLE);
    assert_int_equal(grpc_status_from_http(431), GRPC_INTERNAL);
    assert_int_equal(grpc_status_from_http(502), GRPC_UNAVAILABLE);
    assert_int_equal(grpc_status_from_http(503), GRPC_UNAVAILABLE);
    assert_int_equal(grpc_status_from_http(504), GRPC_UNAVAILABLE);
    assert_int_equal(grpc_status_from_http(200), GRPC_UNKNOWN);
    assert_int_equal(grpc_status_from_http(500), GRPC_UNKNOWN);
    /* RST_STREAM codes */
    assert_int_equal(grpc_status_from_h2_reset(7), GRPC_UNAVAILABLE);
    assert_int_equal(grpc_status_from_h2_reset(8), GRPC_CANCELLED);
    assert_int_equal(grpc_status_from_h2_reset(11), GRPC_RESOURCE_EXHAUSTED);
    assert_int_equal(grpc_status_from_h2_reset(12), GRPC_PERMISSION_DENIED);
    assert_int_equal(grpc_status_from_h2_reset(0), GRPC_INTERNAL);
    assert_int_equal(grpc_status_from_h2_reset(2), GRPC_INTERNAL);
    /* paths */
    assert_string_equal(grpc_path(PACER_SIGNAL_TRACES), "/opentelemetry.proto.collector.trace.v1.TraceService/Export");
    assert_string_equal(grpc_path(PACER_SIGNAL_LOGS), "/opentelemetry.proto.collector.logs.v1.LogsService/Export");
    assert_string_equal(grpc_path(PACER_SIGNAL_METRICS),
                        "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export");
}

static void test_timeout_and_frame(void **state)
{
    (void)state;
    char t[16];
    grpc_timeout(15000, t);
    assert_string_equal(t, "15000m");
    grpc_timeout(0, t);
    assert_string_equal(t, "1m");
    grpc_timeout(99999999, t);
    assert_string_equal(t, "99999999m");
    grpc_timeout(100000000, t); /* 9 digits of ms: seconds, rounded up */
    assert_string_equal(t, "100000S");
    grpc_timeout(100000001, t);
    assert_string_equal(t, "100001S");
    size_t n;
    uint8_t *f = grpc_frame("abc", 3, true, &n);
    assert_int_equal(n, 8);
    assert_memory_equal(f, "\x01\x00\x00\x00\x03" "abc", 8);
    free(f);
    f = grpc_frame(NULL, 0, false, &n);
    assert_int_equal(n, 5);
    assert_memory_equal(f, "\0\0\0\0\0", 5);
    free(f);
}

static void test_base64(void **state)
{
    (void)state;
    uint8_t out[64];
    for (size_t n = 0; n < 20; n++) {
        uint8_t in[20];
        for (size_t i = 0; i < n; i++)
            in[i] = (uint8_t)(i * 37 + 200);
        for (int pad = 0; pad < 2; pad++) {
            char *s = base64(in, n, pad);
            assert_int_equal(grpc_base64_decode(s, strlen(s), out), (long)n);
            assert_memory_equal(out, in, n);
            free(s);
        }
    }
    assert_int_equal(grpc_base64_decode("ab-c", 4, out), -1); /* not the standard alphabet */
    assert_int_equal(grpc_base64_decode("abcde", 5, out), -1); /* one char past a group */
    assert_int_equal(grpc_base64_decode("a=bc", 4, out), -1);
}

static void test_status_details(void **state)
{
    (void)state;
    size_t n;
    int code;
    bool retry;
    int64_t ms;
    uint8_t *m = status_msg(14, "busy", 1, 500000000, "type.googleapis.com/google.rpc.RetryInfo", &n);
    assert_true(grpc_status_details(m, n, &code, &retry, &ms));
    assert_int_equal(code, 14);
    assert_true(retry);
    assert_int_equal(ms, 1500);
    free(m);
    /* nanos round up; another host in the type URL is the same type */
    m = status_msg(8, "", 0, 1, "example.com/x/google.rpc.RetryInfo", &n);
    assert_true(grpc_status_details(m, n, &code, &retry, &ms));
    assert_int_equal(code, 8);
    assert_true(retry);
    assert_int_equal(ms, 1);
    free(m);
    /* capped at an hour; a negative delay is none */
    m = status_msg(14, "", 1000000, 0, "type.googleapis.com/google.rpc.RetryInfo", &n);
    assert_true(grpc_status_details(m, n, &code, &retry, &ms));
    assert_int_equal(ms, 3600000);
    free(m);
    m = status_msg(14, "", -5, 0, "type.googleapis.com/google.rpc.RetryInfo", &n);
    assert_true(grpc_status_details(m, n, &code, &retry, &ms));
    assert_true(retry);
    assert_int_equal(ms, 0);
    free(m);
    /* not a RetryInfo: a type whose name only ends alike, or none */
    m = status_msg(8, "", 5, 0, "type.googleapis.com/my.google.rpc.RetryInfo", &n);
    assert_true(grpc_status_details(m, n, &code, &retry, &ms));
    assert_false(retry);
    free(m);
    m = status_msg(3, "bad", 0, 0, NULL, &n);
    assert_true(grpc_status_details(m, n, &code, &retry, &ms));
    assert_int_equal(code, 3);
    assert_false(retry);
    /* cut anywhere inside, it is not a Status (or a shorter valid one) */
    for (size_t cut = 1; cut < n; cut++) {
        int c2 = -1;
        bool r2 = true;
        int64_t ms2;
        if (grpc_status_details(m, cut, &c2, &r2, &ms2))
            assert_false(r2);
    }
    free(m);
    /* a known field with another wire type */
    assert_false(grpc_status_details((const uint8_t *)"\x0a\x01\x00", 3, &code, &retry, &ms));
}

static void test_answer_headers(void **state)
{
    (void)state;
    grpc_answer a;
    /* headers, then trailers with a RetryInfo */
    grpc_answer_init(&a);
    assert_int_equal(a.status, -1);
    header(&a, "HTTP/2 200 \r\n");
    header(&a, "content-type: application/grpc+proto\r\n");
    header(&a, "grpc-encoding: gzip\r\n");
    header(&a, "\r\n");
    assert_int_equal(a.http_status, 200);
    assert_true(a.grpc_content_type);
    assert_int_equal(a.encoding, 1);
    size_t n;
    uint8_t *m = status_msg(14, "busy", 2, 0, "type.googleapis.com/google.rpc.RetryInfo", &n);
    char *b64 = base64(m, n, false);
    char line[512];
    header(&a, "grpc-status: 14\r\n");
    header(&a, "grpc-message: server%20is%20busy%2c try%zzlater%\r\n");
    snprintf(line, sizeof line, "grpc-status-details-bin: %s\r\n", b64);
    header(&a, line);
    assert_int_equal(a.status, 14);
    assert_string_equal(a.message, "server is busy, try%zzlater%");
    assert_true(grpc_answer_retry_info(&a));
    assert_int_equal(a.retry_delay_ms, 2000);
    free(b64);
    free(m);

    /* details whose code is not the status: their RetryInfo does not count */
    grpc_answer_init(&a);
    header(&a, "HTTP/2 200\r\n");
    header(&a, "content-type: application/grpc\r\n");
    header(&a, "grpc-status: 8\r\n");
    m = status_msg(14, "", 2, 0, "type.googleapis.com/google.rpc.RetryInfo", &n);
    b64 = base64(m, n, true);
    snprintf(line, sizeof line, "Grpc-Status-Details-Bin: %s", b64);
    header(&a, line);
    assert_true(a.details);
    assert_false(grpc_answer_retry_info(&a));
    free(b64);
    free(m);

    /* repeated values joined with ',': each is read */
    grpc_answer_init(&a);
    header(&a, "grpc-status: 8\r\n");
    m = status_msg(8, "", 3, 0, "type.googleapis.com/google.rpc.RetryInfo", &n);
    b64 = base64(m, n, false);
    snprintf(line, sizeof line, "grpc-status-details-bin: !!!, %s\r\n", b64);
    header(&a, line);
    assert_true(grpc_answer_retry_info(&a));
    assert_int_equal(a.retry_delay_ms, 3000);
    free(b64);
    free(m);

    /* content types */
    const char *types[] = {"application/grpc", "application/grpc+proto", "application/grpc;charset=x",
                           "Application/GRPC", "application/grpcx", "application/json", "text/plain"};
    const bool want[] = {true, true, true, true, false, false, false};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        grpc_answer_init(&a);
        snprintf(line, sizeof line, "content-type: %s\r\n", types[i]);
        header(&a, line);
        assert_int_equal(a.grpc_content_type, want[i]);
    }
    /* a new block forgets the content type, not the status */
    grpc_answer_init(&a);
    header(&a, "content-type: application/grpc\r\n");
    header(&a, "grpc-status: 0\r\n");
    header(&a, "HTTP/1.1 503 Service Unavailable\r\n");
    assert_false(a.grpc_content_type);
    assert_int_equal(a.http_status, 503);
    assert_int_equal(a.status, 0);
    /* malformed statuses are INTERNAL */
    const char *bad[] = {"grpc-status: 01", "grpc-status: 1a", "grpc-status:", "grpc-status: -1",
                         "grpc-status: 1234567890"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        grpc_answer_init(&a);
        header(&a, bad[i]);
        assert_int_equal(a.status, GRPC_INTERNAL);
    }
    grpc_answer_init(&a);
    header(&a, "grpc-status: 16");
    header(&a, "grpc-message: bad key\x01\x7f");
    assert_int_equal(a.status, 16);
    assert_string_equal(a.message, "bad key??");
    header(&a, "grpc-encoding: snappy");
    assert_int_equal(a.encoding, -1);
    header(&a, "grpc-encoding: identity");
    assert_int_equal(a.encoding, 0);
}

static void test_unary_message(void **state)
{
    (void)state;
    char why[128];
    uint8_t *msg;
    size_t n, len;
    /* ExportTraceServiceResponse { partial_success { rejected_spans: 3, error_message: "no" } } */
    static const uint8_t resp[] = {0x0a, 0x06, 0x08, 0x03, 0x12, 0x02, 'n', 'o'};
    uint8_t *f = grpc_frame(resp, sizeof resp, false, &n);
    assert_int_equal(grpc_unary_message(f, n, 0, &msg, &len, why, sizeof why), GRPC_OK);
    assert_int_equal(len, sizeof resp);
    assert_memory_equal(msg, resp, len);
    int64_t rejected;
    char text[16];
    assert_true(otlp_proto_partial_success(msg, len, &rejected, text, sizeof text));
    assert_int_equal(rejected, 3);
    assert_string_equal(text, "no");
    free(msg);
    /* cut, or followed by a second message */
    for (size_t cut = 0; cut < n; cut++)
        assert_int_equal(grpc_unary_message(f, cut, 0, &msg, &len, why, sizeof why), GRPC_INTERNAL);
    uint8_t two[64];
    memcpy(two, f, n);
    memcpy(two + n, f, n);
    assert_int_equal(grpc_unary_message(two, 2 * n, 0, &msg, &len, why, sizeof why), GRPC_INTERNAL);
    assert_non_null(strstr(why, "more than one"));
    /* flags: 1 needs gzip, 2 is none */
    f[0] = 1;
    assert_int_equal(grpc_unary_message(f, n, 0, &msg, &len, why, sizeof why), GRPC_INTERNAL);
    f[0] = 2;
    assert_int_equal(grpc_unary_message(f, n, 1, &msg, &len, why, sizeof why), GRPC_INTERNAL);
    free(f);
    /* an empty message is a message */
    f = grpc_frame(NULL, 0, false, &n);
    assert_int_equal(grpc_unary_message(f, n, 0, &msg, &len, why, sizeof why), GRPC_OK);
    assert_null(msg);
    assert_int_equal(len, 0);
    free(f);
    /* compressed */
    size_t zl;
    uint8_t *z = otlp_gzip(resp, sizeof resp, &zl);
    assert_non_null(z);
    f = grpc_frame(z, zl, true, &n);
    assert_int_equal(grpc_unary_message(f, n, 1, &msg, &len, why, sizeof why), GRPC_OK);
    assert_int_equal(len, sizeof resp);
    assert_memory_equal(msg, resp, len);
    free(msg);
    assert_int_equal(grpc_unary_message(f, n, -1, &msg, &len, why, sizeof why), GRPC_INTERNAL);
    f[n - 1] ^= 0xff; /* the gzip trailer's size no longer matches */
    assert_int_equal(grpc_unary_message(f, n, 1, &msg, &len, why, sizeof why), GRPC_INTERNAL);
    free(f);
    free(z);
    /* a gzip bomb stops at the limit */
    size_t big = GRPC_MAX_MESSAGE + 1;
    uint8_t *zeros = calloc(big, 1);
    z = otlp_gzip(zeros, big, &zl);
    free(zeros);
    f = grpc_frame(z, zl, true, &n);
    assert_int_equal(grpc_unary_message(f, n, 1, &msg, &len, why, sizeof why), GRPC_RESOURCE_EXHAUSTED);
    free(f);
    free(z);
    /* a length past the limit, refused before anything is read */
    static const uint8_t huge[] = {0, 0x7f, 0xff, 0xff, 0xff};
    assert_int_equal(grpc_unary_message(huge, 5, 0, &msg, &len, why, sizeof why), GRPC_RESOURCE_EXHAUSTED);
    /* no message at all */
    assert_int_equal(grpc_unary_message(NULL, 0, 0, &msg, &len, why, sizeof why), GRPC_INTERNAL);
    assert_non_null(strstr(why, "without a response message"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables),
        cmocka_unit_test(test_timeout_and_frame),
        cmocka_unit_test(test_base64),
        cmocka_unit_test(test_status_details),
        cmocka_unit_test(test_answer_headers),
        cmocka_unit_test(test_unary_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
