/* OTLP/HTTP JSON decoder (src/server/otlp.c): the encodings SDKs use, the
 * split between whole-request errors and rejected items, and the limits. */
#include "ingest/otlp.h"

#include <pacer/base/json.h>

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static int decode(const char *body, otlp_batch *b, char *err)
{
    memset(b, 0, sizeof *b);
    return otlp_decode_traces(body, strlen(body), b, err, 512);
}

#define RES "{\"resource\":{\"attributes\":[{\"key\":\"service.name\",\"value\":{\"stringValue\":\"shop\"}}]},"

static void test_ids_and_ints(void **state)
{
    (void)state;
    /* the same span in OTLP JSON (hex, string ints) and proto3 JSON (base64, numbers, enum names) */
    const char *hex = "{\"resourceSpans\":[" RES "\"scopeSpans\":[{\"spans\":[{\"traceId\":\"5b8efff798038103d269b633813fc60c\","
                      "\"spanId\":\"eee19b7ec3c1b174\",\"parentSpanId\":\"eee19b7ec3c1b173\",\"name\":\"a\",\"kind\":2,"
                      "\"startTimeUnixNano\":\"1700000000000000000\",\"endTimeUnixNano\":\"1700000000500000000\","
                      "\"status\":{\"code\":2,\"message\":\"boom\"}}]}]}]}";
    const char *b64 = "{\"resourceSpans\":[" RES "\"scopeSpans\":[{\"spans\":[{\"traceId\":\"W47/95gDgQPSabYzgT/GDA==\","
                      "\"spanId\":\"7uGbfsPBsXQ=\",\"parentSpanId\":\"7uGbfsPBsXM\",\"name\":\"a\",\"kind\":\"SPAN_KIND_SERVER\","
                      "\"startTimeUnixNano\":1700000000000000000,\"endTimeUnixNano\":1700000000500000000,"
                      "\"status\":{\"code\":\"STATUS_CODE_ERROR\",\"message\":\"boom\"}}]}]}]}";
    otlp_batch a, b;
    char err[512];
    assert_int_equal(decode(hex, &a, err), 0);
    assert_int_equal(decode(b64, &b, err), 0);
    assert_int_equal(a.n_spans, 1);
    assert_int_equal(b.n_spans, 1);
    assert_int_equal(a.rejected + b.rejected, 0);
    assert_memory_equal(a.spans[0].trace_id, b.spans[0].trace_id, 16);
    assert_memory_equal(a.spans[0].span_id, b.spans[0].span_id, 8);
    assert_memory_equal(a.spans[0].parent_span_id, b.spans[0].parent_span_id, 8);
    assert_int_equal(a.spans[0].trace_id[0], 0x5b);
    assert_true(a.spans[0].start_ns == 1700000000000000000LL && b.spans[0].start_ns == a.spans[0].start_ns);
    assert_true(a.spans[0].end_ns - a.spans[0].start_ns == 500000000LL);
    assert_int_equal(a.spans[0].kind, 2);
    assert_int_equal(b.spans[0].kind, 2);
    assert_int_equal(b.spans[0].status_code, 2);
    assert_string_equal(a.resources[0].service_name, "shop");
    otlp_batch_clear(&a);
    otlp_batch_clear(&b);
}

static void test_rejects_items(void **state)
{
    (void)state;
    const char *body =
        "{\"resourceSpans\":[" RES "\"scopeSpans\":[{\"spans\":["
        "{\"traceId\":\"00000000000000000000000000000000\",\"spanId\":\"eee19b7ec3c1b174\",\"name\":\"zero trace\","
        "\"startTimeUnixNano\":\"1\",\"endTimeUnixNano\":\"2\"},"
        "{\"traceId\":\"5b8efff798038103d269b633813fc60c\",\"spanId\":\"eee19b7ec3c1b174\",\"name\":\"ok\","
        "\"startTimeUnixNano\":\"1\",\"endTimeUnixNano\":\"2\",\"attributes\":[{\"key\":\"n\",\"value\":{\"intValue\":\"-5\"}}]},"
        "{\"traceId\":\"5b8efff798038103d269b633813fc60c\",\"spanId\":\"eee19b7ec3c1b174\",\"name\":\"backwards\","
        "\"startTimeUnixNano\":\"5\",\"endTimeUnixNano\":\"2\"},"
        "{\"traceId\":\"5b8efff798038103d269b633813fc60c\",\"spanId\":\"eee19b7ec3c1b174\",\"name\":\"bad attr\","
        "\"startTimeUnixNano\":\"1\",\"endTimeUnixNano\":\"2\",\"attributes\":[{\"key\":\"n\",\"value\":{\"intValue\":\"1x\"}}]},"
        "{\"traceId\":\"5b8efff798038103d269b633813fc60c\",\"spanId\":\"eee19b7ec3c1b174\",\"name\":7,"
        "\"startTimeUnixNano\":\"1\",\"endTimeUnixNano\":\"2\"},"
        "{\"traceId\":\"5b8efff798038103d269b633813fc60c\",\"spanId\":\"eee19b7ec3c1b174\",\"name\":\"huge time\","
        "\"startTimeUnixNano\":\"18446744073709551615\",\"endTimeUnixNano\":\"18446744073709551615\"}"
        "]}]}]}";
    otlp_batch b;
    char err[512];
    assert_int_equal(decode(body, &b, err), 0);
    assert_int_equal(b.n_spans, 1);
    assert_string_equal(b.spans[0].name, "ok");
    int64_t n;
    assert_true(otlp_value_int(otlp_attr(&b.spans[0].attrs, "n"), &n));
    assert_true(n == -5);
    assert_int_equal(b.rejected, 5);
    assert_non_null(strstr(b.reject_message, "resourceSpans[0].scopeSpans[0].spans[0].traceId"));
    otlp_batch_clear(&b);
}

static void test_whole_request_errors(void **state)
{
    (void)state;
    static const struct {
        const char *body, *reason;
    } cases[] = {
        {"", "invalid JSON"},
        {"{\"resourceSpans\":[", "invalid JSON"},
        {"[]", "must be a JSON object"},
        {"{\"resourceSpans\":{}}", "must be an array"},
        {"{\"resourceSpans\":[],\"x\":\"\xff\xfe\"}", "invalid JSON"},      /* invalid UTF-8 */
        {"{\"resourceSpans\":[],\"x\":\"a\\u0000b\"}", "invalid JSON"},    /* NUL in a string */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        otlp_batch b;
        char err[512] = "";
        assert_int_equal(decode(cases[i].body, &b, err), -EBADMSG);
        if (!strstr(err, cases[i].reason))
            fail_msg("case %zu: reason \"%s\" lacks \"%s\"", i, err, cases[i].reason);
        assert_null(b.text);
    }
    /* nesting: at the limit passes the depth check, one more is refused */
    char deep[4 * OTLP_MAX_DEPTH + 64];
    for (int extra = 0; extra <= 1; extra++) {
        int depth = OTLP_MAX_DEPTH + extra;
        size_t n = 0;
        n += (size_t)sprintf(deep + n, "{\"x\":");
        for (int i = 1; i < depth; i++)
            deep[n++] = '[';
        for (int i = 1; i < depth; i++)
            deep[n++] = ']';
        n += (size_t)sprintf(deep + n, "}");
        deep[n] = 0;
        otlp_batch b;
        char err[512] = "";
        int r = decode(deep, &b, err);
        if (extra) {
            assert_int_equal(r, -EBADMSG);
            assert_non_null(strstr(err, "nested deeper"));
        } else {
            assert_int_equal(r, 0);
            otlp_batch_clear(&b);
        }
    }
}

static void test_logs_and_metrics(void **state)
{
    (void)state;
    const char *logs = "{\"resourceLogs\":[" RES "\"scopeLogs\":[{\"logRecords\":["
                       "{\"timeUnixNano\":\"1700000000000000000\",\"severityNumber\":\"SEVERITY_NUMBER_WARN\","
                       "\"body\":{\"stringValue\":\"jank\"}},"
                       "{\"observedTimeUnixNano\":1700000000000000001,\"severityNumber\":13},"
                       "{\"severityNumber\":99}]}]}]}";
    otlp_batch b = {0};
    char err[512];
    assert_int_equal(otlp_decode_logs(logs, strlen(logs), &b, err, sizeof err), 0);
    assert_int_equal(b.n_logs, 2);
    assert_int_equal(b.logs[0].severity_number, 13);
    assert_true(b.logs[1].time_ns == 1700000000000000001LL);
    assert_int_equal(b.rejected, 1);
    otlp_batch_clear(&b);

    const char *metrics = "{\"resourceMetrics\":[" RES "\"scopeMetrics\":[{\"metrics\":["
                          "{\"name\":\"frames\",\"unit\":\"1\",\"sum\":{\"dataPoints\":[{\"timeUnixNano\":\"5\",\"asInt\":\"60\"}]}},"
                          "{\"name\":\"lat\",\"histogram\":{\"dataPoints\":[{\"timeUnixNano\":\"5\",\"count\":\"3\",\"sum\":1.5}]}},"
                          "{\"name\":\"g\",\"gauge\":{\"dataPoints\":[{\"timeUnixNano\":\"5\",\"asDouble\":\"x\"}]}},"
                          "{\"name\":\"none\"}]}]}]}";
    assert_int_equal(otlp_decode_metrics(metrics, strlen(metrics), &b, err, sizeof err), 0);
    assert_int_equal(b.n_points, 2);
    assert_true(b.points[0].value == 60 && b.points[0].count == -1);
    assert_true(b.points[1].value == 1.5 && b.points[1].count == 3);
    assert_string_equal(b.points[1].type, "histogram");
    assert_int_equal(b.rejected, 2);
    otlp_batch_clear(&b);
}

/* The streaming decoder: members in any order, escapes, values kept as text. */
static void test_order_and_escapes(void **state)
{
    (void)state;
    const char *body =
        "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"spanId\":\"eee19b7ec3c1b174\",\"name\":"
        "\"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\"\",\"endTimeUnixNano\":\"2\",\"startTimeUnixNano\":1,"
        "\"traceId\":\"5b8efff798038103d269b633813fc60c\",\"attributes\":[{\"value\":{\"arrayValue\":"
        "{\"values\":[{\"intValue\":1}, {\"stringValue\":\"x\"}]}},\"key\":\"a\"},{\"key\":\"n\"}]}],"
        "\"scope\":{\"name\":\"sc\"}}],\"resource\":{\"attributes\":[{\"key\":\"service.name\","
        "\"value\":{\"stringValue\":\"shop\"}}]}},"
        "{\"scopeSpans\":[{\"spans\":[1,2]}],\"resource\":{\"attributes\":\"x\"}}]}";
    otlp_batch b;
    char err[512];
    assert_int_equal(decode(body, &b, err), 0);
    assert_int_equal(b.n_spans, 1);
    assert_string_equal(b.spans[0].name, "caf\xc3\xa9 \xf0\x9f\x98\x80 \"q\"");
    assert_string_equal(b.spans[0].scope_name, "sc");
    assert_string_equal(b.scopes[b.spans[0].scope].name, "sc");
    assert_string_equal(b.resources[b.spans[0].resource].service_name, "shop");
    assert_int_equal(b.spans[0].attrs.n, 2);
    assert_null(otlp_attr(&b.spans[0].attrs, "n")); /* a key without a value */
    const otlp_value *a = otlp_attr(&b.spans[0].attrs, "a");
    assert_non_null(a);
    assert_int_equal(a->type, OTLP_ARRAY);
    char out[256];
    json_compact(a->json, a->json_len, out);
    assert_string_equal(out, "{\"arrayValue\":{\"values\":[{\"intValue\":1},{\"stringValue\":\"x\"}]}}");
    /* the second resource is bad, and says so after its spans: both are rejected with its reason */
    assert_int_equal(b.rejected, 2);
    assert_non_null(strstr(b.reject_message, "resourceSpans[1]: attributes must be an array"));
    otlp_batch_clear(&b);
}

static void test_id_parser(void **state)
{
    (void)state;
    uint8_t id[8];
    assert_true(otlp_parse_id("0102030405060708", id, 8));
    assert_int_equal(id[7], 8);
    assert_true(otlp_parse_id("AQIDBAUGBwg=", id, 8)); /* base64 of the same */
    assert_int_equal(id[7], 8);
    assert_true(otlp_parse_id("AQIDBAUGBwg", id, 8));  /* unpadded */
    assert_false(otlp_parse_id("AQIDBAUGBw", id, 8));  /* 7 bytes */
    assert_false(otlp_parse_id("010203040506070", id, 8));
    assert_false(otlp_parse_id("", id, 8));
    assert_false(otlp_parse_id("AAAAAAAAAAA=", id, 8)); /* all zero */
    assert_false(otlp_parse_id("AQIDBAUGBwh=", id, 8)); /* non-zero leftover bits */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids_and_ints),
        cmocka_unit_test(test_rejects_items),
        cmocka_unit_test(test_whole_request_errors),
        cmocka_unit_test(test_logs_and_metrics),
        cmocka_unit_test(test_order_and_escapes),
        cmocka_unit_test(test_id_parser),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
