/* pacerd load generator: POSTs OTLP/HTTP page spans (the SDK's mapping,
 * docs/server.md) over keep-alive loopback connections, one thread per
 * connection, each request with its own X-Pacer-Batch-Id.
 *
 *   loadgen --port P --key KEY [--app A] [--connections N] [--batch SPANS]
 *           [--spans TOTAL | --seconds S] [--pages N] [--versions N] [--days N]
 *           [--recent] [--fresh] [--protobuf] [--gzip]
 *
 * --protobuf sends the same bodies as OTLP protobuf (the JSON built, then
 * turned into protobuf by the SDK's encoder, src/core/otlp_proto.c), --gzip
 * compresses them (Content-Encoding: gzip), as pacer's uploader and the
 * OpenTelemetry SDKs' otlp-proto exporters send by default. The seed of each
 * connection is the same whatever the encoding, so both runs carry the same
 * spans.
 *
 * Bodies: by default a pool of 32 bodies per connection, built and
 * connected before the clock starts, is sent over and over (what is
 * measured is pacerd, not the generator); --fresh
 * builds every body anew, with new values and timestamps spread over the
 * last --days days (the query benchmark's data set). Values are log-normal,
 * so percentiles are spread out as real page loads are. --recent puts
 * every span in the last minute instead (a fleet that uploads as it goes);
 * --seconds S sends for S seconds rather than TOTAL spans.
 *
 * Prints: "spans=N seconds=S spans_per_s=R rejected=N retries_429=N".
 * Exit status 1 when a request failed (not 200/429) or the server closed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <strings.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "otlp.h"

typedef struct config {
    int port;
    const char *key, *app;
    int connections, batch, pages, versions, days;
    long long total;
    double seconds;
    bool fresh, protobuf, gzip, recent;
} config;

static config cfg = {.app = "bench", .connections = 4, .batch = 1000, .total = 500000, .pages = 20, .versions = 2,
                     .days = 30};
static atomic_llong next_batch, sent_spans, retries;
static atomic_bool failed;
static int64_t now_s;
static double deadline; /* --seconds: CLOCK_MONOTONIC seconds at which to stop */

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
static pthread_barrier_t ready; /* every worker has its bodies and its connection: start the clock */
static pthread_barrier_t go;    /* the clock and the deadline are set */

#include "pagespans.h"

static int connect_to(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)cfg.port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        perror("loadgen: connect");
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads one response; returns its status (0 on a closed connection). */
static int read_response(int fd, int *retry_after)
{
    char hdr[8192];
    size_t n = 0;
    char *end = NULL;
    while (!end) {
        ssize_t r = read(fd, hdr + n, sizeof hdr - 1 - n);
        if (r <= 0)
            return 0;
        n += (size_t)r;
        hdr[n] = 0;
        end = strstr(hdr, "\r\n\r\n");
        if (!end && n == sizeof hdr - 1)
            return 0;
    }
    int status = atoi(hdr + 9);
    size_t content_length = 0;
    for (char *l = strstr(hdr, "\r\n"); l && l < end; l = strstr(l + 2, "\r\n")) {
        if (strncasecmp(l + 2, "Content-Length:", 15) == 0)
            content_length = strtoul(l + 17, NULL, 10);
        if (strncasecmp(l + 2, "Retry-After:", 12) == 0)
            *retry_after = atoi(l + 14);
    }
    size_t have = n - (size_t)(end + 4 - hdr);
    while (have < content_length) {
        char sink[4096];
        size_t want = content_length - have < sizeof sink ? content_length - have : sizeof sink;
        ssize_t r = read(fd, sink, want);
        if (r <= 0)
            return 0;
        have += (size_t)r;
    }
    return status;
}

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 7919u + 17;
    enum { POOL = 32 };
    buf bodies[POOL] = {0};
    int pool = cfg.fresh ? 1 : POOL;
    for (int i = 0; i < pool; i++)
        build_body(&bodies[i], &seed);
    int fd = connect_to();
    pthread_barrier_wait(&ready);
    pthread_barrier_wait(&go);
    if (fd < 0) {
        failed = true;
        goto out;
    }
    for (long long k = 0;; k++) {
        long long id = atomic_fetch_add(&next_batch, 1);
        if (cfg.seconds > 0 ? mono_s() >= deadline : id * cfg.batch >= cfg.total)
            break;
        buf *b = &bodies[k % pool];
        if (cfg.fresh && k)
            build_body(b, &seed);
        char head[512];
        int hn = snprintf(head, sizeof head,
                          "POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                          "Content-Type: %s\r\n%sX-Pacer-Batch-Id: lg-%d-%lld-%lld\r\n"
                          "Content-Length: %zu\r\n\r\n",
                          cfg.key, cfg.protobuf ? "application/x-protobuf" : "application/json",
                          cfg.gzip ? "Content-Encoding: gzip\r\n" : "", (int)getpid(), (long long)now_s, id, b->len);
        for (;;) {
            struct iovec iov[2] = {{head, (size_t)hn}, {b->p, b->len}};
            size_t total = (size_t)hn + b->len, done = 0;
            while (done < total) {
                ssize_t w = writev(fd, iov, 2);
                if (w <= 0) {
                    perror("loadgen: write");
                    failed = true;
                    goto out;
                }
                done += (size_t)w;
                for (int i = 0; i < 2; i++) {
                    size_t t = (size_t)w < iov[i].iov_len ? (size_t)w : iov[i].iov_len;
                    iov[i].iov_base = (char *)iov[i].iov_base + t;
                    iov[i].iov_len -= t;
                    w -= (ssize_t)t;
                }
            }
            int retry_after = 1;
            int status = read_response(fd, &retry_after);
            if (status == 200) {
                atomic_fetch_add(&sent_spans, cfg.batch);
                break;
            }
            if (status == 429 || status == 503) {
                atomic_fetch_add(&retries, 1);
                usleep(100000); /* shorter than Retry-After: the benchmark wants the server saturated */
                continue;
            }
            fprintf(stderr, "loadgen: HTTP status %d\n", status);
            failed = true;
            goto out;
        }
    }
out:
    if (fd >= 0)
        close(fd);
    for (int i = 0; i < pool; i++)
        free(bodies[i].p);
    return NULL;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"port", required_argument, NULL, 'p'}, {"key", required_argument, NULL, 'k'},
        {"app", required_argument, NULL, 'a'}, {"connections", required_argument, NULL, 'c'},
        {"batch", required_argument, NULL, 'b'}, {"spans", required_argument, NULL, 'n'},
        {"pages", required_argument, NULL, 'g'}, {"versions", required_argument, NULL, 'v'},
        {"days", required_argument, NULL, 'd'}, {"fresh", no_argument, NULL, 'f'},
        {"protobuf", no_argument, NULL, 'P'}, {"gzip", no_argument, NULL, 'z'},
        {"seconds", required_argument, NULL, 's'}, {"recent", no_argument, NULL, 'r'}, {0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'p': cfg.port = atoi(optarg); break;
        case 'k': cfg.key = optarg; break;
        case 'a': cfg.app = optarg; break;
        case 'c': cfg.connections = atoi(optarg); break;
        case 'b': cfg.batch = atoi(optarg); break;
        case 'n': cfg.total = atoll(optarg); break;
        case 'g': cfg.pages = atoi(optarg); break;
        case 'v': cfg.versions = atoi(optarg); break;
        case 'd': cfg.days = atoi(optarg); break;
        case 'f': cfg.fresh = true; break;
        case 'P': cfg.protobuf = true; break;
        case 'z': cfg.gzip = true; break;
        case 's': cfg.seconds = atof(optarg); break;
        case 'r': cfg.recent = true; break;
        default: fprintf(stderr, "loadgen: bad option (see the top of bench/server/loadgen.c)\n"); return 2;
        }
    }
    if (!cfg.port || !cfg.key || cfg.connections < 1 || cfg.connections > 64 || cfg.batch < 1 || cfg.pages < 1 ||
        cfg.versions < 1 || cfg.days < 1 || cfg.total < 1) {
        fprintf(stderr, "loadgen: --port and --key are required; counts must be positive\n");
        return 2;
    }
    now_s = time(NULL);
    pthread_t t[64];
    struct timespec a, b;
    pthread_barrier_init(&ready, NULL, (unsigned)cfg.connections + 1);
    pthread_barrier_init(&go, NULL, (unsigned)cfg.connections + 1);
    for (int i = 0; i < cfg.connections; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
    pthread_barrier_wait(&ready);
    clock_gettime(CLOCK_MONOTONIC, &a);
    deadline = mono_s() + cfg.seconds;
    pthread_barrier_wait(&go);
    for (int i = 0; i < cfg.connections; i++)
        pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    long long n = atomic_load(&sent_spans);
    printf("spans=%lld seconds=%.3f spans_per_s=%.0f retries_429=%lld\n", n, s, (double)n / s,
           (long long)atomic_load(&retries));
    return failed ? 1 : 0;
}
