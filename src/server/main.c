/* pacerd: command line, start-up and shutdown.
 *
 *   pacerd --listen ADDR:PORT --db FILE --admin-token-file FILE --keys-file FILE
 *          [--threads N] [--max-body BYTES] [--max-queue SPANS] [--sync normal|full]
 *          [--rollup-lag MS]
 *
 * Start: credentials → store (schema, writer thread) → HTTP → prints
 * "pacerd: listening on http://ADDR:PORT" on stdout. SIGINT / SIGTERM stop
 * it: HTTP first (running requests finish), then the store (queued writes
 * commit). Credentials are read from files, not from the command line,
 * which every user of the machine can read in /proc.
 */
#include "pacerd.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct options {
    const char *listen, *db, *admin_file, *keys_file;
    char addr[64];
    uint16_t port;
    http_options http;
    store_options store;
} options;

static void usage(FILE *f)
{
    fputs("usage: pacerd --listen ADDR:PORT --db FILE --admin-token-file FILE --keys-file FILE [options]\n"
          "\n"
          "  --listen ADDR:PORT        address to serve on (127.0.0.1:4318, [::1]:4318; port 0: any free port)\n"
          "  --db FILE                 SQLite database (created when missing)\n"
          "  --admin-token-file FILE   the admin token (first line): config changes and queries\n"
          "  --keys-file FILE          ingest keys, one \"APP KEY\" per line\n"
          "  --threads N               HTTP threads (default: 2 per CPU, at least 4)\n"
          "  --max-body BYTES          largest request body accepted, also once a gzip body is inflated\n"
          "                            (default 16777216)\n"
          "  --max-queue N             records waiting for the writer before ingest answers 429 (default 200000)\n"
          "  --sync normal|full        SQLite synchronous mode (default normal: durable across a crash of\n"
          "                            pacerd; full: also across a crash of the machine)\n"
          "  --rollup-lag MS           longest time a stored record waits to be added to the rollups\n"
          "                            (default 500; queries read such records from the raw rows)\n"
          "  --help                    this text\n",
          f);
}

static int parse_size(const char *s, size_t min, size_t max, size_t *ret)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max || *s == '-')
        return -EINVAL;
    *ret = (size_t)v;
    return 0;
}

static int parse_listen(options *o, const char *s)
{
    const char *colon = strrchr(s, ':');
    if (!colon)
        return -EINVAL;
    const char *host = s;
    size_t hlen = (size_t)(colon - s);
    if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
        host++;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= sizeof o->addr)
        return -EINVAL;
    memcpy(o->addr, host, hlen);
    o->addr[hlen] = 0;
    size_t port;
    if (parse_size(colon + 1, 0, 65535, &port) < 0)
        return -EINVAL;
    o->port = (uint16_t)port;
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, 'l'},
        {"db", required_argument, NULL, 'd'},
        {"admin-token-file", required_argument, NULL, 'a'},
        {"keys-file", required_argument, NULL, 'k'},
        {"threads", required_argument, NULL, 't'},
        {"max-body", required_argument, NULL, 'b'},
        {"max-queue", required_argument, NULL, 'q'},
        {"sync", required_argument, NULL, 's'},
        {"rollup-lag", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    o->http.threads = ncpu > 2 ? (unsigned)(2 * ncpu) : 4;
    o->http.max_body = 16 << 20;
    o->http.max_connections = 1000;
    o->http.timeout_s = 30;
    o->store.max_queued_items = 200000;
    o->store.readers = 4;
    o->store.rollup_lag_ms = 500;
    int c;
    size_t v;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'l':
            o->listen = optarg;
            if (parse_listen(o, optarg) < 0) {
                fprintf(stderr, "pacerd: --listen %s: expected ADDR:PORT, e.g. 127.0.0.1:4318\n", optarg);
                return -EINVAL;
            }
            break;
        case 'd': o->db = optarg; break;
        case 'a': o->admin_file = optarg; break;
        case 'k': o->keys_file = optarg; break;
        case 't':
            if (parse_size(optarg, 1, 256, &v) < 0) {
                fprintf(stderr, "pacerd: --threads %s: expected 1-256\n", optarg);
                return -EINVAL;
            }
            o->http.threads = (unsigned)v;
            break;
        case 'b':
            if (parse_size(optarg, 1024, (size_t)1 << 30, &o->http.max_body) < 0) {
                fprintf(stderr, "pacerd: --max-body %s: expected 1024 to 1073741824 bytes\n", optarg);
                return -EINVAL;
            }
            break;
        case 'q':
            if (parse_size(optarg, 1, 100000000, &o->store.max_queued_items) < 0) {
                fprintf(stderr, "pacerd: --max-queue %s: expected 1 to 100000000\n", optarg);
                return -EINVAL;
            }
            break;
        case 's':
            if (strcmp(optarg, "full") != 0 && strcmp(optarg, "normal") != 0) {
                fprintf(stderr, "pacerd: --sync %s: expected normal or full\n", optarg);
                return -EINVAL;
            }
            o->store.sync_full = strcmp(optarg, "full") == 0;
            break;
        case 'r':
            if (parse_size(optarg, 0, 3600000, &o->store.rollup_lag_ms) < 0) {
                fprintf(stderr, "pacerd: --rollup-lag %s: expected 0 to 3600000 ms\n", optarg);
                return -EINVAL;
            }
            break;
        case 'h': usage(stdout); exit(0);
        default:
            fprintf(stderr, "pacerd: %s: unknown option or missing value (see pacerd --help)\n", argv[optind - 1]);
            return -EINVAL;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "pacerd: unexpected argument %s (see pacerd --help)\n", argv[optind]);
        return -EINVAL;
    }
    const char *missing = !o->listen ? "--listen" : !o->db ? "--db" : !o->admin_file ? "--admin-token-file"
                          : !o->keys_file ? "--keys-file" : NULL;
    if (missing) {
        fprintf(stderr, "pacerd: %s is required (see pacerd --help)\n", missing);
        return -EINVAL;
    }
    return 0;
}

int main(int argc, char **argv)
{
    options o = {0};
    if (parse_args(argc, argv, &o) < 0)
        return 2;

    /* Every thread started from here on inherits the blocked set; only
     * sigwait below takes these signals. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    char err[512];
    pacerd d = {.max_config_bytes = 1 << 20, .max_body = o.http.max_body};
    d.auth = auth_load(o.admin_file, o.keys_file, err, sizeof err);
    if (!d.auth) {
        fprintf(stderr, "pacerd: %s\n", err);
        return 1;
    }
    d.store = store_open(o.db, &o.store, err, sizeof err);
    if (!d.store) {
        fprintf(stderr, "pacerd: %s\n", err);
        auth_free(d.auth);
        return 1;
    }
    http_server *srv = http_start(o.addr, o.port, &o.http, pacerd_route, &d, err, sizeof err);
    if (!srv) {
        fprintf(stderr, "pacerd: %s\n", err);
        store_close(d.store);
        auth_free(d.auth);
        return 1;
    }
    bool v6 = strchr(o.addr, ':') != NULL;
    printf("pacerd: listening on http://%s%s%s:%u\n", v6 ? "[" : "", o.addr, v6 ? "]" : "", http_port(srv));
    fflush(stdout);

    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, "pacerd: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    http_stop(srv);
    store_close(d.store);
    auth_free(d.auth);
    return 0;
}
