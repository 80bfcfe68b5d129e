/* The load generator's request bodies: OTLP/HTTP JSON page spans as
 * pacer's SDK maps them, optionally turned into protobuf and gzip (shared
 * by loadgen.c and decodebench.c; one includer per program). Needs the
 * includer's `cfg` (batch, pages, versions, days, recent, app, protobuf, gzip) and
 * `now_s`, and the core's otlp_json_to_proto and otlp_gzip. */
#ifndef PACER_BENCH_PAGESPANS_H
#define PACER_BENCH_PAGESPANS_H

typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        b->cap = b->cap * 2 + (size_t)n + 1;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            abort();
    }
}

static double uniform(unsigned *seed)
{
    return (rand_r(seed) + 1.0) / ((double)RAND_MAX + 2.0);
}

static double lognormal(unsigned *seed, double median, double sigma)
{
    double z = sqrt(-2 * log(uniform(seed))) * cos(2 * M_PI * uniform(seed));
    return median * exp(sigma * z);
}

/* One request body of cfg.batch page spans. */
static void build_body(buf *b, unsigned *seed)
{
    b->len = 0;
    int version = rand_r(seed) % cfg.versions;
    put(b, "{\"resourceSpans\":[{\"resource\":{\"attributes\":["
           "{\"key\":\"service.name\",\"value\":{\"stringValue\":\"%s\"}},"
           "{\"key\":\"service.version\",\"value\":{\"stringValue\":\"1.%d\"}},"
           "{\"key\":\"pacer.session\",\"value\":{\"stringValue\":\"%08x%08x\"}}]},"
           "\"scopeSpans\":[{\"scope\":{\"name\":\"pacer\"},\"spans\":[",
        cfg.app, version, rand_r(seed), rand_r(seed));
    for (int i = 0; i < cfg.batch; i++) {
        int page = rand_r(seed) % cfg.pages;
        double initial = lognormal(seed, 40 + page, 0.5);
        double api = lognormal(seed, 300 + 10 * page, 0.6);
        double final = lognormal(seed, 15, 0.4);
        double total = initial + api + final;
        double back_s = cfg.recent ? uniform(seed) * 60 : uniform(seed) * cfg.days * 86400;
        int64_t ts = (now_s - (int64_t)back_s) * 1000000000LL + rand_r(seed) % 1000000000;
        put(b, "%s{\"traceId\":\"%08x%08x%08x%08x\",\"spanId\":\"%08x%08x\",\"name\":\"Page%d\",\"kind\":1,"
               "\"startTimeUnixNano\":\"%lld\",\"endTimeUnixNano\":\"%lld\",\"attributes\":["
               "{\"key\":\"pacer.type\",\"value\":{\"stringValue\":\"page\"}},"
               "{\"key\":\"pacer.page\",\"value\":{\"stringValue\":\"Page%d\"}},"
               "{\"key\":\"pacer.instance\",\"value\":{\"intValue\":\"%d\"}},"
               "{\"key\":\"pacer.kind\",\"value\":{\"stringValue\":\"window\"}},"
               "{\"key\":\"pacer.status\",\"value\":{\"stringValue\":\"complete\"}},"
               "{\"key\":\"pacer.main\",\"value\":{\"boolValue\":%s}},"
               "{\"key\":\"pacer.initial_draw_ms\",\"value\":{\"doubleValue\":%.3f}},"
               "{\"key\":\"pacer.api_load_ms\",\"value\":{\"doubleValue\":%.3f}},"
               "{\"key\":\"pacer.final_draw_ms\",\"value\":{\"doubleValue\":%.3f}},"
               "{\"key\":\"pacer.total_ms\",\"value\":{\"doubleValue\":%.3f}}]}",
            i ? "," : "", rand_r(seed), rand_r(seed), rand_r(seed), rand_r(seed) | 1, rand_r(seed), rand_r(seed) | 1,
            page, (long long)ts, (long long)(ts + (int64_t)(total * 1e6)), page, i + 1, page == 0 ? "true" : "false",
            initial, api, final, total);
    }
    put(b, "]}]}]}");
    if (cfg.protobuf || cfg.gzip) { /* the same request, as the SDK would send it */
        size_t n = b->len;
        uint8_t *pb = NULL;
        if (cfg.protobuf && !(pb = otlp_json_to_proto(PACER_SIGNAL_TRACES, b->p, b->len, &n)))
            abort();
        uint8_t *z = cfg.gzip ? otlp_gzip(pb ? (const void *)pb : b->p, n, &n) : NULL;
        if (cfg.gzip && !z)
            abort();
        const uint8_t *body = z ? z : pb;
        if (n > b->cap) {
            b->p = realloc(b->p, n);
            b->cap = n;
        }
        memcpy(b->p, body, n);
        b->len = n;
        free(pb);
        free(z);
    }
}

#endif
