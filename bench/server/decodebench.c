/* pacerd's decoders alone, without HTTP or the store: one body of the load
 * generator's page spans (pagespans.h) decoded again and again as OTLP/HTTP
 * JSON, as protobuf, and as protobuf + gzip (inflated first, as ingest
 * does), in this process.
 *
 *   pacerd-decodebench [--batch SPANS] [--runs N]
 *
 * Prints ns per span of each (the median of 5 rounds of N decodes) and the
 * ratios to JSON. */
#include "ingest/gunzip.h"
#include "ingest/otlp.h" /* pacerd's: src/server/ingest/otlp.h */
#include "ingest/ingest.h"

#include <pacer/schema.h>

#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The SDK's encoders (src/core/otlp_proto.c), for the bodies: its header
 * has the name of pacerd's, so they are declared here. */
uint8_t *otlp_json_to_proto(pacer_signal signal, const char *json, size_t len, size_t *ret_len);
uint8_t *otlp_gzip(const void *data, size_t len, size_t *ret_len);

typedef struct config {
    const char *app;
    int batch, pages, versions, days;
    bool protobuf, gzip, recent;
} config;

static config cfg = {.app = "bench", .batch = 1000, .pages = 20, .versions = 2, .days = 30};
static int64_t now_s;

#include "pagespans.h"

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"batch", required_argument, NULL, 'b'}, {"runs", required_argument, NULL, 'n'}, {0}};
    long runs = 50;
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == 'b')
            cfg.batch = atoi(optarg);
        else if (c == 'n')
            runs = atol(optarg);
        else
            return 2;
    }
    if (cfg.batch < 1 || runs < 1)
        return 2;
    ingest_malloc_setup(); /* the heap as pacerd's workers have it */
    now_s = time(NULL);
    buf bodies[3] = {{0}};
    for (int k = 0; k < 3; k++) {
        unsigned seed = 7919u + 17; /* the same spans in each */
        cfg.protobuf = k > 0;
        cfg.gzip = k > 1;
        build_body(&bodies[k], &seed);
    }
    double ns[3];
    for (int k = 0; k < 3; k++) {
        double round_ns[5];
        for (int r = 0; r < 5; r++) {
            double a = seconds();
            for (long i = 0; i < runs; i++) {
                otlp_batch b = {0};
                char err[256];
                int x;
                if (k == 0) {
                    x = otlp_decode_traces(bodies[0].p, bodies[0].len, &b, err, sizeof err);
                } else if (k == 1) {
                    x = otlp_proto_decode_traces((const uint8_t *)bodies[1].p, bodies[1].len, &b, err, sizeof err);
                } else {
                    char *body;
                    size_t len;
                    x = gunzip(bodies[2].p, bodies[2].len, 64u << 20, &body, &len, err, sizeof err);
                    if (x == 0) {
                        x = otlp_proto_decode_traces((const uint8_t *)body, len, &b, err, sizeof err);
                        free(body);
                    }
                }
                if (x < 0 || b.n_spans != (size_t)cfg.batch) {
                    fprintf(stderr, "decodebench: decoding failed: %s\n", err);
                    return 1;
                }
                otlp_batch_clear(&b);
            }
            round_ns[r] = (seconds() - a) / (double)runs / cfg.batch * 1e9;
        }
        qsort(round_ns, 5, sizeof round_ns[0], cmp_double);
        ns[k] = round_ns[2];
    }
    printf("ns_per_span json=%.0f protobuf=%.0f protobuf_gzip=%.0f bytes_per_span json=%zu protobuf=%zu gzip=%zu "
           "ratio_protobuf=%.2f ratio_protobuf_gzip=%.2f\n",
           ns[0], ns[1], ns[2], bodies[0].len / (size_t)cfg.batch, bodies[1].len / (size_t)cfg.batch,
           bodies[2].len / (size_t)cfg.batch, ns[0] / ns[1], ns[0] / ns[2]);
    for (int k = 0; k < 3; k++)
        free(bodies[k].p);
    return 0;
}
