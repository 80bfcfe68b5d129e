/* pacerd's protobuf decoder and gzip inflater (cmocka; also under ASan and
 * UBSan in the unit suite): bodies the OpenTelemetry JS otlp-proto
 * exporters sent (tests/fuzz/corpus/otlp-proto, captured by
 * tests/server/otel/export-all.js), hand-made messages for each failure
 * level, and gzip at and past the limit. */
#include "ingest/gunzip.h"
#include "ingest/otlp.h"

#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

static char *slurp(const char *path, size_t *ret_len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = malloc(1 << 20);
    *ret_len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

static void test_js_exporter_bodies(void **state)
{
    (void)state;
    const char *root = getenv("PACER_SOURCE_ROOT");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/otlp-proto", root ? root : ".");
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int seen = 0;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "js-proto-", 9) != 0)
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len;
        char *body = slurp(path, &len);
        otlp_batch b = {0};
        char err[256] = "";
        int r = strstr(e->d_name, "traces")  ? otlp_proto_decode_traces((uint8_t *)body, len, &b, err, sizeof err)
                : strstr(e->d_name, "logs") ? otlp_proto_decode_logs((uint8_t *)body, len, &b, err, sizeof err)
                                            : otlp_proto_decode_metrics((uint8_t *)body, len, &b, err, sizeof err);
        assert_int_equal(r, 0);
        assert_int_equal(b.rejected, 0);
        assert_int_equal(b.ignored, 0);
        assert_true(b.n_spans + b.n_logs + b.n_points > 0);
        assert_int_equal(b.n_resources, 1);
        const char *sn;
        assert_true(otlp_value_string(otlp_attr(&b.resources[0].attrs, "service.name"), &sn));
        assert_string_equal(sn, "shop");
        for (size_t i = 0; i < b.n_spans; i++) {
            if (strncmp(b.spans[i].name, "op ", 3) != 0)
                continue;
            jbuf j;
            jbuf_init(&j);
            otlp_write_attrs(&j, &b.spans[i].attrs);
            assert_false(j.failed);
            assert_non_null(strstr(j.data, "\"app.tags\",\"value\":{\"arrayValue\":{\"values\":[{\"stringValue\":"));
            jbuf_free(&j);
        }
        for (size_t i = 0; i < b.n_points; i++)
            if (strcmp(b.points[i].type, "histogram") == 0) {
                assert_int_equal(b.points[i].n_bounds, 5);
                assert_int_equal(b.points[i].n_bucket_counts, 6);
                assert_true(b.points[i].has_min && b.points[i].has_max);
            }
        otlp_batch_clear(&b);
        free(body);
        seen++;
    }
    closedir(d);
    assert_true(seen >= 5);
}

/* A message under construction (static storage: small test messages). */
typedef struct msgbuf {
    char p[8192];
    size_t n;
} msgbuf;

static void put_field(msgbuf *m, unsigned num, const void *data, size_t len)
{
    m->p[m->n++] = (char)(num << 3 | 2);
    size_t v = len;
    do {
        m->p[m->n++] = (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    memcpy(m->p + m->n, data, len);
    m->n += len;
}

static int decode(const char *bytes, size_t len, otlp_batch *b, char *err)
{
    memset(b, 0, sizeof *b);
    return otlp_proto_decode_traces((const uint8_t *)bytes, len, b, err, 256);
}

static void test_failure_levels(void **state)
{
    (void)state;
    otlp_batch b;
    char err[256];
    /* truncated: a length past the end */
    assert_int_equal(decode("\x0a\x05\x01", 3, &b, err), -EBADMSG);
    assert_non_null(strstr(err, "invalid protobuf at byte 0"));
    /* a group */
    assert_int_equal(decode("\x0b", 1, &b, err), -EBADMSG);
    /* a known field with another wire type: resource_spans as a varint */
    assert_int_equal(decode("\x08\x01", 2, &b, err), -EBADMSG);
    assert_non_null(strstr(err, "wire type 0 where 2"));
    /* an empty request, and one with only an unknown field: fine, the latter counted */
    assert_int_equal(decode("", 0, &b, err), 0);
    otlp_batch_clear(&b);
    assert_int_equal(decode("\x10\x05", 2, &b, err), 0);
    assert_int_equal(b.ignored, 1);
    assert_string_equal(b.ignore_message, "unknown field 2 of a request");
    otlp_batch_clear(&b);
    /* a span with a 3-byte trace id: rejected with its path */
    static const char span[] = "\x0a\x13"           /* resource_spans */
                               "\x12\x11"           /* scope_spans */
                               "\x12\x0f"           /* span */
                               "\x0a\x03\x01\x02\x03" /* trace_id, 3 bytes */
                               "\x12\x08\x01\x01\x01\x01\x01\x01\x01\x01"; /* span_id */
    assert_int_equal(decode(span, sizeof span - 1, &b, err), 0);
    assert_int_equal(b.rejected, 1);
    assert_int_equal(b.n_spans, 0);
    assert_string_equal(b.reject_message, "resourceSpans[0].scopeSpans[0].spans[0].traceId: expected 16 bytes, not all zero");
    otlp_batch_clear(&b);
    /* AnyValues nested past the limit: the request as a whole */
    msgbuf v = {0};
    put_field(&v, 1, "x", 1); /* AnyValue{string_value "x"} */
    for (int i = 0; i < 70; i++) {
        msgbuf arr = {0}, any = {0};
        put_field(&arr, 1, v.p, v.n);   /* ArrayValue{values} */
        put_field(&any, 5, arr.p, arr.n); /* AnyValue{array_value} */
        v = any;
    }
    msgbuf kv = {0}, sp = {0}, ss = {0}, rs = {0}, req = {0};
    put_field(&kv, 1, "k", 1);
    put_field(&kv, 2, v.p, v.n);
    put_field(&sp, 1, "\x01\x02\x03\x04\x05\x06\x07\x08\x01\x02\x03\x04\x05\x06\x07\x08", 16);
    put_field(&sp, 2, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
    put_field(&sp, 9, kv.p, kv.n);
    put_field(&ss, 2, sp.p, sp.n);
    put_field(&rs, 2, ss.p, ss.n);
    put_field(&req, 1, rs.p, rs.n);
    assert_int_equal(decode(req.p, req.n, &b, err), -EBADMSG);
    assert_non_null(strstr(err, "nested deeper than 64 levels"));
}

static void test_gunzip(void **state)
{
    (void)state;
    char err[256];
    char *out;
    size_t len;
    /* 1 MiB of zeros compressed: within a limit of 1 MiB, past one of 1 MiB - 1 */
    size_t n = 1 << 20;
    unsigned char *zeros = calloc(1, n);
    unsigned char *gz = malloc(n);
    z_stream z = {0};
    deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    z.next_in = zeros;
    z.avail_in = (uInt)n;
    z.next_out = gz;
    z.avail_out = (uInt)n;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t gl = n - z.avail_out;
    deflateEnd(&z);
    assert_int_equal(gunzip(gz, gl, n, &out, &len, err, sizeof err), 0);
    assert_int_equal(len, n);
    assert_int_equal(out[len], 0);
    free(out);
    assert_int_equal(gunzip(gz, gl, n - 1, &out, &len, err, sizeof err), -EFBIG);
    assert_non_null(strstr(err, "more than the limit of 1048575 bytes"));
    /* two members in a row are one body */
    unsigned char *two = malloc(2 * gl);
    memcpy(two, gz, gl);
    memcpy(two + gl, gz, gl);
    assert_int_equal(gunzip(two, 2 * gl, 4 * n, &out, &len, err, sizeof err), 0);
    assert_int_equal(len, 2 * n);
    free(out);
    /* truncated, corrupt, not gzip */
    assert_int_equal(gunzip(gz, gl - 5, n, &out, &len, err, sizeof err), -EBADMSG);
    assert_non_null(strstr(err, "truncated"));
    gz[gl - 8] ^= 0xff; /* the CRC-32 of the trailer */
    assert_int_equal(gunzip(gz, gl, n, &out, &len, err, sizeof err), -EBADMSG);
    assert_non_null(strstr(err, "corrupt"));
    assert_int_equal(gunzip("{}", 2, n, &out, &len, err, sizeof err), -EBADMSG);
    assert_non_null(strstr(err, "not gzip"));
    free(two);
    free(gz);
    free(zeros);
}

static void test_responses(void **state)
{
    (void)state;
    size_t len;
    uint8_t *p = otlp_proto_response(0, "", &len);
    assert_int_equal(len, 0);
    free(p);
    p = otlp_proto_response(300, "why", &len);
    /* partial_success(1) { rejected(1) = 300, error_message(2) = "why" } */
    static const uint8_t want[] = {0x0a, 0x08, 0x08, 0xac, 0x02, 0x12, 0x03, 'w', 'h', 'y'};
    assert_int_equal(len, sizeof want);
    assert_memory_equal(p, want, sizeof want);
    free(p);
    p = otlp_proto_status(16, "bad", NULL, NULL, &len);
    static const uint8_t status[] = {0x08, 0x10, 0x12, 0x03, 'b', 'a', 'd'};
    assert_int_equal(len, sizeof status);
    assert_memory_equal(p, status, sizeof status);
    free(p);
    /* details(3) { Any { type_url(1), value(2) = BadRequest { field_violations(1) {
     * field(1) = "x", description(2) = "y" } } } } */
    p = otlp_proto_status(3, "x: y", "x", "y", &len);
    static const char url[] = OTLP_BAD_REQUEST_TYPE;
    uint8_t bad[128];
    size_t n = 0, u = sizeof url - 1;
    static const uint8_t head[] = {0x08, 0x03, 0x12, 0x04, 'x', ':', ' ', 'y'};
    memcpy(bad, head, sizeof head);
    n = sizeof head;
    bad[n++] = 0x1a;
    bad[n++] = (uint8_t)(2 + u + 2 + 8);
    bad[n++] = 0x0a;
    bad[n++] = (uint8_t)u;
    memcpy(bad + n, url, u);
    n += u;
    static const uint8_t value[] = {0x12, 0x08, 0x0a, 0x06, 0x0a, 0x01, 'x', 0x12, 0x01, 'y'};
    memcpy(bad + n, value, sizeof value);
    n += sizeof value;
    assert_int_equal(len, n);
    assert_memory_equal(p, bad, n);
    free(p);
    /* no field named: the violation has only its description */
    p = otlp_proto_status(3, "m", "", "m", &len);
    assert_int_equal(p[len - 5], 0x0a); /* field_violations, 3 bytes */
    assert_int_equal(p[len - 3], 0x12); /* description */
    assert_int_equal(p[len - 1], 'm');
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_js_exporter_bodies),
        cmocka_unit_test(test_failure_levels),
        cmocka_unit_test(test_gunzip),
        cmocka_unit_test(test_responses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
