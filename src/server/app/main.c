/* pacerd: command line, start-up, signals and shutdown.
 *
 *   pacerd --listen ADDR:PORT --db FILE --admin-token-file FILE --keys-file FILE [options]
 *   pacerd --listen ADDR:PORT --clickhouse URL|--clickhouse-file FILE --admin-token-file FILE …
 *
 * Start: credentials → the application layer's settings → store (schema,
 * writer thread) and the application layer's tables → deliveries →
 * analysis → HTTP → prints "pacerd: listening on http://ADDR:PORT" (https
 * with --tls-cert) on stdout. Signals, taken by the main thread only (sigwait):
 *   SIGHUP           reads the admin token and keys files again; a file
 *                    with an error is reported and the credentials in use
 *                    stay;
 *   SIGTERM, SIGINT  drain: stop accepting, answer new requests on open
 *                    connections 503, wait (at most --drain-timeout) until
 *                    every admitted request has been answered; then stop
 *                    HTTP (running handlers finish), the analysis (after
 *                    its cycle), the deliveries (after the one in
 *                    progress, its outcome stored) and the store (queued
 *                    writes commit).
 * Credentials are read from files, not from the command line, which every
 * user of the machine can read in /proc.
 */
#include "pacerd.h"
#include "store/clickhouse/store_clickhouse.h"
#include "store/sqlite/store_sqlite.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define FDS_BESIDE_CONNECTIONS 64 /* database, WAL, readers, epoll, logs */
#define MAX_TARGETS 16

typedef struct options {
    const char *listen, *db, *state, *admin_file, *keys_file, *tls_cert, *tls_key, *web_root, *clickhouse, *clickhouse_file;
    const char *analysis_config, *github_url, *github_token_file;
    const char *webhooks[MAX_TARGETS];
    size_t n_webhooks;
    char addr[64];
    uint16_t port;
    size_t max_body;
    unsigned drain_timeout_s;
    http_options http;
    store_options store;
} options;

static void usage(FILE *f)
{
    fputs("usage: pacerd --listen ADDR:PORT --db FILE --admin-token-file FILE --keys-file FILE [options]\n"
          "       pacerd --listen ADDR:PORT --clickhouse URL --admin-token-file FILE --keys-file FILE [options]\n"
          "\n"
          "  --listen ADDR:PORT        address to serve on (127.0.0.1:4318, [::1]:4318; port 0: any free port)\n"
          "  --db FILE                 SQLite database (created when missing)\n"
          "  --clickhouse URL          store in ClickHouse instead: http://[USER[:PASSWORD]@]HOST[:PORT]/[DATABASE]\n"
          "                            (database pacer by default, created when missing); several pacerd may\n"
          "                            share it. HOST1:PORT1,HOST2:PORT2 with ?cluster=NAME: the shards of a\n"
          "                            cluster in ClickHouse's remote_servers, tables on each (docs/server.md)\n"
          "  --clickhouse-file FILE    the same URL read from FILE's first line (keeps the password out of ps)\n"
          "  --state FILE              ClickHouse: run the application layer (analysis, issues, deliveries) on\n"
          "                            this instance, its state in this SQLite file; one instance of those\n"
          "                            sharing a database (docs/server.md, \"Scaling out\")\n"
          "  --admin-token-file FILE   the admin token (first line): config changes, queries, /metrics\n"
          "  --keys-file FILE          ingest keys, one \"APP KEY [rate=N/s] [burst=N] [daily=N]\" per line\n"
          "                            (SIGHUP reads both files again)\n"
          "  --tls-cert FILE           serve HTTPS with this certificate (PEM; with --tls-key)\n"
          "  --tls-key FILE            the certificate's private key (PEM)\n"
          "  --web-root DIR            the dashboard's files, served on / (default " PACER_WEB_DIR ";\n"
          "                            run from its build tree, pacerd serves the build's web/ first)\n"
          "\n"
          "limits (every client may be hostile):\n"
          "  --max-body BYTES          largest ingest body, also once a gzip body is inflated\n"
          "                            (default 16777216)\n"
          "  --max-inflight-bytes N    all request bodies held in memory at once (default 268435456)\n"
          "  --max-connections N       open connections in all (default 4096)\n"
          "  --max-per-address N       open connections from one address or IPv6 /64 (default 64)\n"
          "  --header-timeout S        a request's headers must be complete within S s of the connection\n"
          "                            or the previous answer (default 10)\n"
          "  --body-timeout S          its body within S s of the headers; an answer must be taken\n"
          "                            within S s (default 60)\n"
          "  --idle-timeout S          keep-alive connections idle longer are closed (default 30)\n"
          "  --max-wait MS             longest a request may wait for a worker: beyond, 429 with\n"
          "                            Retry-After (default 1000)\n"
          "  --max-queue N             records waiting for the writer before ingest answers 429 (default 200000)\n"
          "\n"
          "  --threads N               worker threads handling requests (default: 2 per CPU, at least 4;\n"
          "                            with --clickhouse 4 per CPU, at least 8)\n"
          "  --io-threads N            connection threads (default: 1 per CPU, 2 to 8)\n"
          "  --drain-timeout S         on SIGTERM, longest wait for requests in flight (default 30)\n"
          "  --sync normal|full        SQLite synchronous mode (default normal: durable across a crash of\n"
          "                            pacerd; full: also across a crash of the machine)\n"
          "  --rollup-lag MS           SQLite: longest time a stored record waits to be added to the rollups\n"
          "                            (default 500; queries read such records from the raw rows)\n"
          "  --seal-rows N             SQLite: records that wait in commit order before they are sealed into\n"
          "                            blocks of a day (default 32768)\n"
          "  --retention-days N        keep the records of the last N UTC days and today: older days are\n"
          "                            dropped whole, and records older than that are refused\n"
          "                            (default 0: keep everything; on ClickHouse the days are those\n"
          "                            received, as --clickhouse-retention-days N)\n"
          "  --rollup-retention-days N SQLite: keep the daily percentile rollups N days (default 0: always;\n"
          "                            at least --retention-days)\n"
          "  --clickhouse-slot S       ClickHouse: the commit hour that consolidation sums at once\n"
          "                            (default 3600; a divisor of 86400)\n"
          "  --clickhouse-settle S     ClickHouse: how long after a slot ended it is consolidated (default 360;\n"
          "                            a batch commits within S/2 of its start or is refused 503)\n"
          "  --clickhouse-day S        ClickHouse: the span consolidated a second time (default 86400)\n"
          "  --clickhouse-gather MS    ClickHouse: how long a commit may wait for requests still being read\n"
          "                            and decoded, to insert them together (default 50; 0: never)\n"
          "  --clickhouse-retention-days N  ClickHouse: drop what was received more than N days ago,\n"
          "                            whole days at a time (default 0: keep everything)\n"
          "\n"
          "issues (docs/server.md, \"Issues\"; on ClickHouse only the cleaning thresholds apply):\n"
          "  --analysis-config FILE    thresholds of cleaning, the issue kinds, grading, regressions and\n"
          "                            the life cycle, for all apps or per app (default: the documented ones)\n"
          "  --webhook URL             POST each issue that becomes new or regressed or changes severity\n"
          "                            to URL (JSON; repeatable, up to 16)\n"
          "  --github-issues URL       file those issues in a GitHub repository through its REST API:\n"
          "                            URL is https://api.github.com/repos/OWNER/REPO\n"
          "  --github-token-file FILE  the token for --github-issues (first line)\n"
          "  --help                    this text\n",
          f);
}

/* Whether this process runs the pacerd its build made (PACER_BUILD_PACERD):
 * that very file, not a copy installed elsewhere — which serves its own
 * DATADIR/pacer/web, never a build tree's files. */
static bool from_build_tree(void)
{
    struct stat self, built;
    return stat("/proc/self/exe", &self) == 0 && stat(PACER_BUILD_PACERD, &built) == 0 &&
           self.st_dev == built.st_dev && self.st_ino == built.st_ino;
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

/* http:// or https://, a host, nothing that would break a header line. */
static bool url_ok(const char *s)
{
    size_t n = strlen(s);
    if (n > 2000 || strpbrk(s, " \t\r\n"))
        return false;
    const char *rest = strncmp(s, "http://", 7) == 0 ? s + 7 : strncmp(s, "https://", 8) == 0 ? s + 8 : NULL;
    return rest && *rest && *rest != '/';
}

/* The numeric options: name, range, where. */
typedef struct num_opt {
    int code;
    const char *name;
    size_t min, max;
    size_t *size;
    unsigned *uint;
    const char *unit;
} num_opt;

static int parse_args(int argc, char **argv, options *o)
{
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, 'l'},
        {"db", required_argument, NULL, 'd'},
        {"admin-token-file", required_argument, NULL, 'a'},
        {"keys-file", required_argument, NULL, 'k'},
        {"tls-cert", required_argument, NULL, 'C'},
        {"tls-key", required_argument, NULL, 'K'},
        {"threads", required_argument, NULL, 't'},
        {"io-threads", required_argument, NULL, 'i'},
        {"max-body", required_argument, NULL, 'b'},
        {"max-inflight-bytes", required_argument, NULL, 'F'},
        {"max-connections", required_argument, NULL, 'c'},
        {"max-per-address", required_argument, NULL, 'p'},
        {"header-timeout", required_argument, NULL, 'H'},
        {"body-timeout", required_argument, NULL, 'B'},
        {"idle-timeout", required_argument, NULL, 'I'},
        {"max-wait", required_argument, NULL, 'w'},
        {"max-queue", required_argument, NULL, 'q'},
        {"drain-timeout", required_argument, NULL, 'D'},
        {"sync", required_argument, NULL, 's'},
        {"rollup-lag", required_argument, NULL, 'r'},
        {"clickhouse", required_argument, NULL, 'X'},
        {"clickhouse-file", required_argument, NULL, 'x'},
        {"state", required_argument, NULL, 'Z'},
        {"clickhouse-slot", required_argument, NULL, 'u'},
        {"clickhouse-settle", required_argument, NULL, 'n'},
        {"clickhouse-day", required_argument, NULL, 'Y'},
        {"clickhouse-gather", required_argument, NULL, 'g'},
        {"clickhouse-retention-days", required_argument, NULL, 'E'},
        {"retention-days", required_argument, NULL, 'y'},
        {"seal-rows", required_argument, NULL, 'S'},
        {"rollup-retention-days", required_argument, NULL, 'U'},
        {"web-root", required_argument, NULL, 'R'},
        {"analysis-config", required_argument, NULL, 'A'},
        {"webhook", required_argument, NULL, 'W'},
        {"github-issues", required_argument, NULL, 'G'},
        {"github-token-file", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    o->http.workers = ncpu > 2 ? (unsigned)(2 * ncpu) : 4;
    o->http.io_threads = ncpu < 2 ? 2 : ncpu > 8 ? 8 : (unsigned)ncpu;
    o->max_body = 16 << 20;
    o->http.max_body_bytes_in_flight = (size_t)256 << 20;
    o->http.max_connections = 4096;
    o->http.max_per_address = 64;
    o->http.header_timeout_s = 10;
    o->http.body_timeout_s = 60;
    o->http.idle_timeout_s = 30;
    o->http.max_wait_ms = 1000;
    o->drain_timeout_s = 30;
    o->store.max_queued_items = 200000;
    o->store.readers = 4;
    o->store.rollup_lag_ms = 500;
    o->store.clickhouse_gather_ms = 50;
    const num_opt nums[] = {
        {'t', "--threads", 1, 256, NULL, &o->http.workers, ""},
        {'i', "--io-threads", 1, 64, NULL, &o->http.io_threads, ""},
        {'b', "--max-body", 1024, (size_t)1 << 30, &o->max_body, NULL, " bytes"},
        {'F', "--max-inflight-bytes", 1 << 16, (size_t)1 << 36, &o->http.max_body_bytes_in_flight, NULL, " bytes"},
        {'c', "--max-connections", 16, 1000000, NULL, &o->http.max_connections, ""},
        {'p', "--max-per-address", 1, 1000000, NULL, &o->http.max_per_address, ""},
        {'H', "--header-timeout", 1, 3600, NULL, &o->http.header_timeout_s, " s"},
        {'B', "--body-timeout", 1, 3600, NULL, &o->http.body_timeout_s, " s"},
        {'I', "--idle-timeout", 1, 3600, NULL, &o->http.idle_timeout_s, " s"},
        {'w', "--max-wait", 1, 600000, NULL, &o->http.max_wait_ms, " ms"},
        {'q', "--max-queue", 1, 100000000, &o->store.max_queued_items, NULL, ""},
        {'D', "--drain-timeout", 1, 3600, NULL, &o->drain_timeout_s, " s"},
        {'r', "--rollup-lag", 0, 3600000, &o->store.rollup_lag_ms, NULL, " ms"},
        {'u', "--clickhouse-slot", 1, 86400, NULL, &o->store.clickhouse_unit_s, " s"},
        {'n', "--clickhouse-settle", 2, 86400, NULL, &o->store.clickhouse_settle_s, " s"},
        {'Y', "--clickhouse-day", 1, 86400, NULL, &o->store.clickhouse_day_s, " s"},
        {'g', "--clickhouse-gather", 0, 10000, NULL, &o->store.clickhouse_gather_ms, " ms"},
        {'E', "--clickhouse-retention-days", 0, 100000, NULL, &o->store.clickhouse_retention_days, " days"},
        {'y', "--retention-days", 0, 36500, NULL, &o->store.retention_days, " days"},
        {'S', "--seal-rows", 1, 10000000, &o->store.seal_rows, NULL, ""},
        {'U', "--rollup-retention-days", 0, 36500, NULL, &o->store.rollup_retention_days, " days"},
    };
    int c;
    bool threads_given = false;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        const num_opt *num = NULL;
        for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
            if (nums[i].code == c)
                num = &nums[i];
        if (num) {
            size_t v;
            if (parse_size(optarg, num->min, num->max, &v) < 0) {
                fprintf(stderr, "pacerd: %s %s: expected %zu to %zu%s\n", num->name, optarg, num->min, num->max,
                        num->unit);
                return -EINVAL;
            }
            if (num->size)
                *num->size = v;
            else
                *num->uint = (unsigned)v;
            threads_given |= c == 't';
            continue;
        }
        switch (c) {
        case 'l':
            o->listen = optarg;
            if (parse_listen(o, optarg) < 0) {
                fprintf(stderr, "pacerd: --listen %s: expected ADDR:PORT, e.g. 127.0.0.1:4318\n", optarg);
                return -EINVAL;
            }
            break;
        case 'd': o->db = optarg; break;
        case 'X': o->clickhouse = optarg; break;
        case 'x': o->clickhouse_file = optarg; break;
        case 'Z': o->state = optarg; break;
        case 'a': o->admin_file = optarg; break;
        case 'k': o->keys_file = optarg; break;
        case 'C': o->tls_cert = optarg; break;
        case 'A': o->analysis_config = optarg; break;
        case 'W':
            if (!url_ok(optarg)) {
                fprintf(stderr, "pacerd: --webhook %s: expected an http:// or https:// URL\n", optarg);
                return -EINVAL;
            }
            if (o->n_webhooks == MAX_TARGETS - 1) {
                fprintf(stderr, "pacerd: --webhook: at most %d\n", MAX_TARGETS - 1);
                return -EINVAL;
            }
            o->webhooks[o->n_webhooks++] = optarg;
            break;
        case 'G':
            if (!url_ok(optarg)) {
                fprintf(stderr, "pacerd: --github-issues %s: expected the repository's API URL, "
                                "https://api.github.com/repos/OWNER/REPO\n", optarg);
                return -EINVAL;
            }
            o->github_url = optarg;
            break;
        case 'T': o->github_token_file = optarg; break;
        case 'K': o->tls_key = optarg; break;
        case 'R': o->web_root = optarg; break;
        case 's':
            if (strcmp(optarg, "full") != 0 && strcmp(optarg, "normal") != 0) {
                fprintf(stderr, "pacerd: --sync %s: expected normal or full\n", optarg);
                return -EINVAL;
            }
            o->store.sync_full = strcmp(optarg, "full") == 0;
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
    int stores = !!o->db + !!o->clickhouse + !!o->clickhouse_file;
    /* a ClickHouse worker mostly waits for an insert: twice as many let
     * the next uploads be decoded meanwhile, and join the next insert */
    if ((o->clickhouse || o->clickhouse_file) && !threads_given)
        o->http.workers = ncpu > 2 ? (unsigned)(4 * ncpu) : 8;
    if (stores > 1) {
        fprintf(stderr, "pacerd: give one of --db, --clickhouse, --clickhouse-file\n");
        return -EINVAL;
    }
    const char *missing = !o->listen ? "--listen" : !stores ? "--db (or --clickhouse)" : !o->admin_file ? "--admin-token-file"
                          : !o->keys_file ? "--keys-file" : NULL;
    if (missing) {
        fprintf(stderr, "pacerd: %s is required (see pacerd --help)\n", missing);
        return -EINVAL;
    }
    if (o->state && o->db) {
        fprintf(stderr, "pacerd: --state: for the ClickHouse store (on SQLite the state is in --db's file)\n");
        return -EINVAL;
    }
    if ((o->clickhouse || o->clickhouse_file) && !o->state && (o->n_webhooks || o->github_url)) {
        fprintf(stderr, "pacerd: %s: only on the instance that runs the application layer (--state FILE; "
                        "docs/server.md, \"Scaling out\")\n", o->n_webhooks ? "--webhook" : "--github-issues");
        return -EINVAL;
    }
    if ((o->clickhouse || o->clickhouse_file) && (o->store.rollup_retention_days || o->store.seal_rows)) {
        fprintf(stderr, "pacerd: %s: for the SQLite store (--db) only\n",
                o->store.rollup_retention_days ? "--rollup-retention-days" : "--seal-rows");
        return -EINVAL;
    }
    if ((o->clickhouse || o->clickhouse_file) && o->store.retention_days) {
        /* ClickHouse drops the days received before the horizon; ingest
         * refuses records older than it, as on SQLite */
        if (o->store.clickhouse_retention_days && o->store.clickhouse_retention_days != o->store.retention_days) {
            fprintf(stderr, "pacerd: --retention-days %u and --clickhouse-retention-days %u: give one\n",
                    o->store.retention_days, o->store.clickhouse_retention_days);
            return -EINVAL;
        }
        o->store.clickhouse_retention_days = o->store.retention_days;
    }
    if (!o->github_url != !o->github_token_file) {
        fprintf(stderr, "pacerd: --github-issues and --github-token-file go together\n");
        return -EINVAL;
    }
    if (!o->tls_cert != !o->tls_key) {
        fprintf(stderr, "pacerd: --tls-cert and --tls-key go together\n");
        return -EINVAL;
    }
    if (o->store.rollup_retention_days &&
        (!o->store.retention_days || o->store.rollup_retention_days < o->store.retention_days)) {
        fprintf(stderr, "pacerd: --rollup-retention-days %u: the rollups answer the days whose records are gone,"
                        " so they are kept at least as long: give --retention-days too, at most %u\n",
                o->store.rollup_retention_days, o->store.rollup_retention_days);
        return -EINVAL;
    }
    if (o->max_body > o->http.max_body_bytes_in_flight) {
        fprintf(stderr, "pacerd: --max-body %zu is larger than --max-inflight-bytes %zu\n", o->max_body,
                o->http.max_body_bytes_in_flight);
        return -EINVAL;
    }
    return 0;
}

/* A PEM file, whole (at most 1 MiB). */
static char *read_pem(const char *path, const char *what)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        fprintf(stderr, "pacerd: %s %s: %s\n", what, path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 20;
    char *buf = malloc(cap + 1);
    size_t n = buf ? fread(buf, 1, cap + 1, f) : 0;
    bool bad = !buf || ferror(f) || n > cap || !memmem(buf, n, "-----BEGIN ", 11);
    fclose(f);
    if (bad) {
        fprintf(stderr, "pacerd: %s %s: %s\n", what, path,
                !buf ? "out of memory" : n > cap ? "larger than 1 MiB" : "not a PEM file (no -----BEGIN line)");
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    return buf;
}

static void wipe_free(char *s)
{
    if (s) {
        memset(s, 0, strlen(s));
        free(s);
    }
}

/* The ClickHouse URL from the first line of a file (it may hold a
 * password): malloc'd, or NULL with the reason on stderr. */
static char *read_url(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        fprintf(stderr, "pacerd: --clickhouse-file %s: %s\n", path, strerror(errno));
        return NULL;
    }
    char line[4096];
    bool ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    line[strcspn(line, "\r\n")] = 0;
    if (!ok || !line[0]) {
        fprintf(stderr, "pacerd: --clickhouse-file %s: expected the URL on the first line\n", path);
        return NULL;
    }
    char *url = strdup(line);
    memset(line, 0, sizeof line);
    return url;
}

/* Open files: every connection is one. The soft limit goes up to the hard
 * one; when even that is short, fewer connections are allowed. */
static void fit_fd_limit(http_options *h)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    rlim_t want = (rlim_t)h->max_connections + FDS_BESIDE_CONNECTIONS + 4 * h->io_threads;
    if (rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < want) {
        rlim_t room = rl.rlim_cur > FDS_BESIDE_CONNECTIONS + 4 * h->io_threads + 16
                          ? rl.rlim_cur - FDS_BESIDE_CONNECTIONS - 4 * h->io_threads
                          : 16;
        fprintf(stderr, "pacerd: the open file limit (%llu) allows %llu connections, not --max-connections %u\n",
                (unsigned long long)rl.rlim_cur, (unsigned long long)room, h->max_connections);
        h->max_connections = (unsigned)room;
    }
}

/* A token file's first line, without its line end; NULL with a message. */
static char *read_token(const char *path, const char *what)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        fprintf(stderr, "pacerd: %s %s: %s\n", what, path, strerror(errno));
        return NULL;
    }
    char line[4096];
    char *t = fgets(line, sizeof line, f);
    fclose(f);
    size_t n = t ? strcspn(line, "\r\n") : 0;
    line[n] = 0;
    char *token = n && !strpbrk(line, " \t") ? strdup(line) : NULL;
    memset(line, 0, sizeof line);
    if (!token)
        fprintf(stderr, "pacerd: %s %s: expected the token on the first line, without spaces\n", what, path);
    return token;
}

static void log_line(void *ctx, const char *msg)
{
    fprintf(stderr, "pacerd: %s\n", msg);
}

/* The application layer's tables in the SQLite store's file, through its
 * connections (issues_db.h). */
static int state_read(void *ctx, int (*fn)(void *fn_ctx, sqlite3 *db), void *fn_ctx)
{
    return store_sqlite_read(ctx, fn, fn_ctx);
}

static int state_write(void *ctx, int (*fn)(void *fn_ctx, sqlite3 *db), void *fn_ctx)
{
    return store_sqlite_write(ctx, fn, fn_ctx);
}

/* What main holds besides the pacerd, for the clean-up. */
typedef struct held {
    char *cert, *key, *github_token, *url;
    ana_config acfg;
    bool acfg_loaded;
} held;

/* Stops and frees everything started, in the reverse order; accepts a
 * pacerd started only in part. */
static void shutdown_all(pacerd *d, held *h)
{
    http_stop(d->http);
    analysis_stop(d->analysis);
    deliver_stop(d->deliver);
    issues_db_close(d->issues);
    store_close(d->store);
    dedupe_free(d->ingest.dedupe);
    if (h->acfg_loaded)
        ana_config_free(&h->acfg);
    wipe_free(h->github_token);
    wipe_free(h->url);
    free(h->cert);
    wipe_free(h->key);
    auth_free(d->auth);
    sessions_free(d->sessions);
    web_free(d->web);
    metrics_destroy(&d->metrics);
}

/* Opens the store and the application layer's tables: 0, or -1 with the
 * reason on stderr. */
static int open_store(const options *o, pacerd *d, held *h)
{
    char err[512];
    store_options so = o->store;
    so.log = log_line;
    bool clickhouse = o->clickhouse || o->clickhouse_file;
    if (!clickhouse) {
        d->store = store_sqlite_open(o->db, &so, err, sizeof err);
        if (!d->store) {
            fprintf(stderr, "pacerd: %s\n", err);
            return -1;
        }
        /* the application layer's tables beside the records, written in
         * the writer's transactions */
        issues_db_host host = {state_read, state_write, d->store};
        if (!(d->issues = issues_db_open_in(&host, err, sizeof err))) {
            fprintf(stderr, "pacerd: %s\n", err);
            return -1;
        }
        /* one instance sees every record: copies sent without a batch id
         * are recognised (the newest help, they are not needed: rows that
         * cannot be read, which the store has told in the log and
         * /healthz, leave the filter with fewer) */
        int r;
        if (!(d->ingest.dedupe = dedupe_new((size_t)h->acfg.dedupe_records)) ||
            ((r = dedupe_fill(d->ingest.dedupe, d->store)) == -ENOMEM)) {
            fprintf(stderr, "pacerd: cannot read the newest records' ids: out of memory\n");
            return -1;
        }
        return 0;
    }
    if (o->clickhouse_file && !(h->url = read_url(o->clickhouse_file)))
        return -1;
    so.submitters = o->http.workers; /* the threads that may submit at once */
    d->store = store_clickhouse_open(h->url ? h->url : o->clickhouse, &so, err, sizeof err);
    if (!d->store) {
        fprintf(stderr, "pacerd: %s\n", err);
        return -1;
    }
    if (!o->state) {
        fprintf(stderr, "pacerd: ClickHouse store: the application layer runs on the instance given --state: "
                        "records are cleaned on ingest (--analysis-config); /api/v1/issues and "
                        "/api/v1/cleaning answer 501 here\n");
        return 0;
    }
    /* the application layer's tables in a SQLite file of their own */
    if (!(d->issues = issues_db_open(o->state, err, sizeof err))) {
        fprintf(stderr, "pacerd: --state: %s\n", err);
        return -1;
    }
    return 0;
}

/* Starts everything, in order: 0, or -1 with the reason on stderr. */
static int start(const options *o, pacerd *d, held *h)
{
    char err[512];
    if (o->tls_cert && (!(h->cert = read_pem(o->tls_cert, "--tls-cert")) || !(h->key = read_pem(o->tls_key, "--tls-key"))))
        return -1;
    d->auth = auth_load(o->admin_file, o->keys_file, err, sizeof err);
    if (!d->auth) {
        fprintf(stderr, "pacerd: %s\n", err);
        return -1;
    }
    /* the dashboard: without its files pacerd serves everything else */
    const char *web_dirs[2];
    size_t n_web_dirs = 0;
    if (o->web_root) {
        web_dirs[n_web_dirs++] = o->web_root;
    } else {
        if (from_build_tree())
            web_dirs[n_web_dirs++] = PACER_BUILD_WEB_DIR;
        web_dirs[n_web_dirs++] = PACER_WEB_DIR;
    }
    const char *web_dir = NULL;
    char web_err[2048];
    d->web = web_load_first(web_dirs, n_web_dirs, &web_dir, d->web_looked, sizeof d->web_looked, web_err,
                            sizeof web_err);
    if (!d->web)
        fprintf(stderr, "pacerd: no dashboard: %s (--web-root DIR; / answers 404)\n", web_err);
    if (!(d->sessions = sessions_new())) {
        fprintf(stderr, "pacerd: out of memory\n");
        return -1;
    }
    /* the application layer: its settings, its targets */
    if (o->analysis_config) {
        if (ana_config_load(o->analysis_config, &h->acfg, err, sizeof err) < 0) {
            fprintf(stderr, "pacerd: --analysis-config %s\n", err);
            return -1;
        }
    } else {
        ana_config_defaults(&h->acfg);
    }
    h->acfg_loaded = true;
    d->ingest.clean = (clean_limits){h->acfg.max_duration_ms, (int64_t)h->acfg.max_clock_skew_s * 1000000000LL};
    deliver_target targets[MAX_TARGETS];
    enum target_kind kinds[MAX_TARGETS];
    size_t n_targets = 0;
    for (size_t i = 0; i < o->n_webhooks; i++) {
        targets[n_targets] = (deliver_target){TARGET_KIND_WEBHOOK, (char *)o->webhooks[i], NULL};
        kinds[n_targets++] = TARGET_KIND_WEBHOOK;
    }
    if (o->github_url) {
        if (!(h->github_token = read_token(o->github_token_file, "--github-token-file")))
            return -1;
        targets[n_targets] = (deliver_target){TARGET_KIND_GITHUB, (char *)o->github_url, h->github_token};
        kinds[n_targets++] = TARGET_KIND_GITHUB;
    }
    if (open_store(o, d, h) < 0)
        return -1;
    d->ingest.store = d->api.store = d->store;
    d->api.issues = d->issues;
    d->api.acfg = &h->acfg;
    if (d->issues) {
        d->deliver = n_targets ? deliver_start(d->issues, targets, n_targets, &h->acfg) : NULL;
        d->analysis = analysis_start(d->issues, d->store, &h->acfg, kinds, n_targets, deliver_kick, d->deliver);
        if ((n_targets && !d->deliver) || !d->analysis) {
            fprintf(stderr, "pacerd: cannot start the analysis or the deliveries (out of memory, or libcurl)\n");
            return -1;
        }
    }
    d->api.analysis = d->analysis;
    http_options ho = o->http;
    ho.max_discard_bytes = o->max_body;
    ho.tls_cert_pem = h->cert;
    ho.tls_key_pem = h->key;
    http_app app = {.preflight = router_preflight, .handle = router_handle, .encode = router_encode,
                    .done = router_done, .release = router_release, .ctx = d};
    d->http = http_start(o->addr, o->port, &ho, &app, err, sizeof err);
    free(h->cert); /* libmicrohttpd keeps its own copies */
    wipe_free(h->key);
    h->cert = h->key = NULL;
    if (!d->http) {
        fprintf(stderr, "pacerd: %s\n", err);
        return -1;
    }
    d->tls = http_tls(d->http);
    return 0;
}

int main(int argc, char **argv)
{
    options o = {0};
    if (parse_args(argc, argv, &o) < 0)
        return 2;
    ingest_malloc_setup();

    /* Every thread started from here on inherits the blocked set; only
     * sigwait below takes these signals. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    fit_fd_limit(&o.http);

    pacerd d = {.ingest = {.max_body = o.max_body, .retention_days = o.store.retention_days},
                .api = {.max_config_bytes = 1 << 20}};
    held h = {0};
    metrics_init(&d.metrics);
    if (start(&o, &d, &h) < 0) {
        shutdown_all(&d, &h);
        return 1;
    }
    bool v6 = strchr(o.addr, ':') != NULL;
    printf("pacerd: listening on %s://%s%s%s:%u\n", d.tls ? "https" : "http", v6 ? "[" : "", o.addr,
           v6 ? "]" : "", http_port(d.http));
    fflush(stdout);

    int sig = 0;
    char err[512];
    for (;;) {
        sigwait(&sigs, &sig);
        if (sig != SIGHUP)
            break;
        int r = auth_reload(d.auth, err, sizeof err);
        metrics_reload(&d.metrics, r == 0);
        if (r == 0)
            fprintf(stderr, "pacerd: SIGHUP: reloaded the admin token and %zu keys\n", auth_n_keys(d.auth));
        else
            fprintf(stderr, "pacerd: SIGHUP: %s; the credentials in use stay\n", err);
    }
    http_stats hs;
    http_get_stats(d.http, &hs);
    fprintf(stderr, "pacerd: %s: stopping; %zu requests in flight\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
            hs.admitted);
    size_t left = http_drain(d.http, o.drain_timeout_s * 1000);
    if (left)
        fprintf(stderr, "pacerd: %zu requests still in flight after %u s; closing them\n", left, o.drain_timeout_s);
    shutdown_all(&d, &h);
    return 0;
}
