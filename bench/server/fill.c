/* Fills a pacerd store with page spans, quickly: the requests are built
 * here and handed to pacerd's own ingest handler (ingest.c: the protobuf
 * decoder, the mapping to rows, store_submit and the writer thread) in this
 * process, without HTTP. The rows are what `POST /v1/traces` would have
 * written; what is skipped is the network and the HTTP layer.
 *
 *   pacerd-fill --db FILE --spans N [--days D] [--batch SPANS] [--threads T]
 *               [--pages N] [--versions N] [--spread]
 *
 * The spans are those of the load generator (pagespans.h: app "bench", 20
 * pages, 2 versions, log-normal times, a new trace per page load), encoded
 * as OTLP protobuf directly, and come as a live fleet's would: batch after
 * batch through a clock that runs from D days ago to now, each batch
 * spanning its slice of the clock (a store filled over D days). Each batch
 * has its own X-Pacer-Batch-Id and session. T threads submit at once (the
 * writer group-commits them). --spread: each span at a random time of the D
 * days instead (the load generator's default: uploads that come in no
 * order of time, so that every day but today is cold).
 *
 * Prints: "spans=N seconds=S spans_per_s=R db_bytes=B" (N: the spans
 * stored; a batch of which some were refused says so on stderr). */
#include "api/api.h"
#include "ingest/ingest.h"
#include "store/sqlite/sqlite_store.h"

#include <pacer/base/clock.h>

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef struct config {
    const char *db;
    long long spans;
    int days, batch, threads, pages, versions;
    bool spread;
} config;

static config cfg = {.days = 30, .batch = 1000, .threads = 3, .pages = 20, .versions = 2};
static atomic_llong next_batch, done_spans;
static atomic_bool failed;
/* what pacerd gives its ingest and query handlers */
static struct {
    store *store;
    ingest_ctx ingest;
    api_ctx api;
} d;
static int64_t start_ns, span_ns; /* the clock: batch b covers [start + b * span, start + (b + 1) * span) */

/* ---- a protobuf writer ---- */

typedef struct pb {
    uint8_t *p;
    size_t len, cap;
} pb;

static void grow(pb *b, size_t n)
{
    if (b->len + n <= b->cap)
        return;
    b->cap = (b->cap + n) * 2;
    if (!(b->p = realloc(b->p, b->cap)))
        abort();
}

static void varint(pb *b, uint64_t v)
{
    grow(b, 10);
    while (v >= 0x80) {
        b->p[b->len++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->p[b->len++] = (uint8_t)v;
}

static void bytes(pb *b, unsigned field, const void *p, size_t n)
{
    varint(b, field << 3 | 2);
    varint(b, n);
    grow(b, n);
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void str(pb *b, unsigned field, const char *s)
{
    bytes(b, field, s, strlen(s));
}

static void fixed64(pb *b, unsigned field, uint64_t v)
{
    varint(b, field << 3 | 1);
    grow(b, 8);
    for (int i = 0; i < 8; i++)
        b->p[b->len++] = (uint8_t)(v >> (8 * i));
}

/* A nested message: its bytes, then closed by nest_end. */
static size_t nest_begin(pb *b, unsigned field)
{
    varint(b, field << 3 | 2);
    grow(b, 5);
    size_t at = b->len;
    b->len += 5; /* a 5-byte varint length, filled in by nest_end */
    return at;
}

static void nest_end(pb *b, size_t at)
{
    size_t n = b->len - at - 5;
    for (int i = 0; i < 5; i++)
        b->p[at + i] = (uint8_t)((n >> (7 * i)) & 0x7f) | (i < 4 ? 0x80 : 0);
}

/* KeyValue (field f of its parent) with an AnyValue */
static void kv_str(pb *b, unsigned f, const char *k, const char *v)
{
    size_t a = nest_begin(b, f);
    str(b, 1, k);
    size_t v1 = nest_begin(b, 2);
    str(b, 1, v);
    nest_end(b, v1);
    nest_end(b, a);
}

static void kv_int(pb *b, unsigned f, const char *k, int64_t v)
{
    size_t a = nest_begin(b, f);
    str(b, 1, k);
    size_t v1 = nest_begin(b, 2);
    varint(b, 3 << 3);
    varint(b, (uint64_t)v);
    nest_end(b, v1);
    nest_end(b, a);
}

static void kv_bool(pb *b, unsigned f, const char *k, bool v)
{
    size_t a = nest_begin(b, f);
    str(b, 1, k);
    size_t v1 = nest_begin(b, 2);
    varint(b, 2 << 3);
    varint(b, v);
    nest_end(b, v1);
    nest_end(b, a);
}

static void kv_double(pb *b, unsigned f, const char *k, double v)
{
    size_t a = nest_begin(b, f);
    str(b, 1, k);
    size_t v1 = nest_begin(b, 2);
    uint64_t u;
    memcpy(&u, &v, 8);
    fixed64(b, 4, u);
    nest_end(b, v1);
    nest_end(b, a);
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

/* milliseconds with 3 decimals, as the SDK writes them */
static double ms3(double v)
{
    return (double)llround(v * 1000.0) / 1000.0;
}

/* One ExportTraceServiceRequest of cfg.batch page spans of batch number
 * `batch` (as pagespans.h's JSON has them). */
static void build(pb *b, unsigned *seed, long long batch)
{
    b->len = 0;
    char text[64];
    int version = rand_r(seed) % cfg.versions;
    size_t rs = nest_begin(b, 1);
    size_t res = nest_begin(b, 1);
    kv_str(b, 1, "service.name", "bench");
    snprintf(text, sizeof text, "1.%d", version);
    kv_str(b, 1, "service.version", text);
    snprintf(text, sizeof text, "%08x%08x", rand_r(seed), rand_r(seed));
    kv_str(b, 1, "pacer.session", text);
    nest_end(b, res);
    size_t ss = nest_begin(b, 2);
    size_t scope = nest_begin(b, 1);
    str(b, 1, "pacer");
    nest_end(b, scope);
    for (int i = 0; i < cfg.batch; i++) {
        int page = rand_r(seed) % cfg.pages;
        double initial = ms3(lognormal(seed, 40 + page, 0.5));
        double api = ms3(lognormal(seed, 300 + 10 * page, 0.6));
        double final = ms3(lognormal(seed, 15, 0.4));
        double total = ms3(initial + api + final);
        int64_t ts = cfg.spread ? start_ns + (int64_t)(uniform(seed) * (double)cfg.days * (double)STORE_DAY_NS)
                                : start_ns + batch * span_ns + (int64_t)(uniform(seed) * (double)span_ns);
        size_t sp = nest_begin(b, 2);
        uint8_t id[16];
        for (int k = 0; k < 16; k += 4) {
            uint32_t r = (uint32_t)rand_r(seed) | (k == 12 ? 1u : 0u);
            memcpy(id + k, &r, 4);
        }
        bytes(b, 1, id, 16);
        for (int k = 0; k < 8; k += 4) {
            uint32_t r = (uint32_t)rand_r(seed) | 1u;
            memcpy(id + k, &r, 4);
        }
        bytes(b, 2, id, 8);
        snprintf(text, sizeof text, "Page%d", page);
        str(b, 5, text);
        varint(b, 6 << 3);
        varint(b, 1);
        fixed64(b, 7, (uint64_t)ts);
        fixed64(b, 8, (uint64_t)(ts + (int64_t)(total * 1e6)));
        kv_str(b, 9, "pacer.type", "page");
        kv_str(b, 9, "pacer.page", text);
        kv_int(b, 9, "pacer.instance", i + 1);
        kv_str(b, 9, "pacer.kind", "window");
        kv_str(b, 9, "pacer.status", "complete");
        kv_bool(b, 9, "pacer.main", page == 0);
        kv_double(b, 9, "pacer.initial_draw_ms", initial);
        kv_double(b, 9, "pacer.api_load_ms", api);
        kv_double(b, 9, "pacer.final_draw_ms", final);
        kv_double(b, 9, "pacer.total_ms", total);
        nest_end(b, sp);
    }
    nest_end(b, ss);
    nest_end(b, rs);
}

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 104729u + 7;
    pb body = {0};
    long long n_batches = (cfg.spans + cfg.batch - 1) / cfg.batch;
    for (;;) {
        long long id = atomic_fetch_add(&next_batch, 1);
        if (id >= n_batches || failed)
            break;
        build(&body, &seed, id);
        char bid[64];
        snprintf(bid, sizeof bid, "fill-%lld", id);
        http_header_field headers[] = {{"Content-Type", "application/x-protobuf"}, {"X-Pacer-Batch-Id", bid}};
        http_request rq = {.method = "POST", .version = "HTTP/1.1", .path = "/v1/traces", .body = (char *)body.p,
                           .body_len = body.len, .headers = headers, .n_headers = 2};
        uint64_t stored = 0;
        for (;;) {
            http_response rs = {0};
            ingest_http_handle(&d.ingest, "bench", &rq, &rs, NULL);
            unsigned status = rs.status;
            stored = rs.items;
            if (status == 200 && rs.items < (uint64_t)cfg.batch)
                fprintf(stderr, "pacerd-fill: batch %lld: %" PRIu64 " of %d stored: %.*s\n", id, rs.items, cfg.batch,
                        (int)(rs.len < 300 ? rs.len : 300), rs.body ? rs.body : "");
            free(rs.body);
            if (status == 200)
                break;
            if (status != 429) {
                fprintf(stderr, "pacerd-fill: batch %lld: status %u\n", id, status);
                failed = true;
                goto out;
            }
        }
        atomic_fetch_add(&done_spans, (long long)stored);
    }
out:
    free(body.p);
    return NULL;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"db", required_argument, NULL, 'd'},      {"spans", required_argument, NULL, 'n'},
        {"days", required_argument, NULL, 'D'},    {"batch", required_argument, NULL, 'b'},
        {"threads", required_argument, NULL, 't'}, {"pages", required_argument, NULL, 'g'},
        {"versions", required_argument, NULL, 'v'}, {"spread", no_argument, NULL, 's'}, {0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': cfg.db = optarg; break;
        case 'n': cfg.spans = atoll(optarg); break;
        case 'D': cfg.days = atoi(optarg); break;
        case 'b': cfg.batch = atoi(optarg); break;
        case 't': cfg.threads = atoi(optarg); break;
        case 'g': cfg.pages = atoi(optarg); break;
        case 'v': cfg.versions = atoi(optarg); break;
        case 's': cfg.spread = true; break;
        default: fprintf(stderr, "pacerd-fill: bad option (see the top of bench/server/fill.c)\n"); return 2;
        }
    }
    if (!cfg.db || cfg.spans < 1 || cfg.days < 1 || cfg.batch < 1 || cfg.threads < 1 || cfg.threads > 64 ||
        cfg.pages < 1 || cfg.versions < 1) {
        fprintf(stderr, "pacerd-fill: --db and --spans are required; counts must be positive\n");
        return 2;
    }
    ingest_malloc_setup(); /* as pacerd does */
    char err[512];
    store_options so = {.max_queued_items = 200000, .readers = 1, .rollup_lag_ms = 500};
    d.store = d.ingest.store = d.api.store = sqlite_store_open(cfg.db, &so, err, sizeof err);
    if (!d.store) {
        fprintf(stderr, "pacerd-fill: %s\n", err);
        return 1;
    }
    d.ingest.max_body = 64 << 20;
    d.ingest.clean = (clean_limits){86400000, 3600LL * 1000000000LL}; /* pacerd's defaults (docs/server.md, Cleaning) */
    int64_t now = wall_ns();
    int64_t n_batches = (cfg.spans + cfg.batch - 1) / cfg.batch;
    start_ns = now - (int64_t)cfg.days * STORE_DAY_NS;
    span_ns = (int64_t)cfg.days * STORE_DAY_NS / n_batches;
    int64_t t0 = mono_ns();
    pthread_t t[64];
    for (int i = 0; i < cfg.threads; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < cfg.threads; i++)
        pthread_join(t[i], NULL);
    store_close(d.store);
    double s = (double)(mono_ns() - t0) / 1e9;
    struct stat sb;
    long long bytes_on_disk = stat(cfg.db, &sb) == 0 ? (long long)sb.st_size : -1;
    long long n = atomic_load(&done_spans);
    printf("spans=%lld seconds=%.1f spans_per_s=%.0f db_bytes=%lld\n", n, s, (double)n / s, bytes_on_disk);
    return failed ? 1 : 0;
}
