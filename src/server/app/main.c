/* pacerd: command line, start-up, signals and shutdown.
 *
 *   pacerd --listen ADDR:PORT --db FILE --admin-token-file FILE --keys-file FILE [options]
 *   pacerd --listen ADDR:PORT --clickhouse URL|--clickhouse-file FILE --admin-token-file FILE …
 *   pacerd --config FILE [options]
 *
 * Start: credentials → the application layer's settings → store (schema,
 * writer thread) and the application layer's tables → deliveries →
 * analysis → HTTP → prints "pacerd: listening on http://ADDR:PORT" (https
 * with --tls-cert) on stdout, and READY=1 to the service manager (notify.h).
 * Signals, taken by the main thread only (sigwait):
 *   SIGHUP           reads the config file (--config) again, then the
 *                    admin token and keys files it names: the options a
 *                    reload applies (options.c: .reload) take their new
 *                    values, a change to another one is logged as waiting
 *                    for a restart; a file with an error is logged and
 *                    every setting in use stays;
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
#include "logger.h"
#include "notify.h"
#include "options.h"
#include "pacerd.h"
#include "store/clickhouse/ch_store.h"
#include "store/sqlite/sqlite_store.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define FDS_BESIDE_CONNECTIONS 64 /* database, WAL, readers, epoll, logs */
#define MAX_TARGETS (OPTIONS_MAX_WEBHOOKS + 1) /* and the issue tracker */

/* Whether this process runs the pacerd its build made (PACER_BUILD_PACERD):
 * that very file, not a copy installed elsewhere — which serves its own
 * DATADIR/pacer/web, never a build tree's files. */
static bool from_build_tree(void)
{
    struct stat self, built;
    return stat("/proc/self/exe", &self) == 0 && stat(PACER_BUILD_PACERD, &built) == 0 &&
           self.st_dev == built.st_dev && self.st_ino == built.st_ino;
}

/* A PEM file, whole (at most 1 MiB). */
static char *read_pem(const char *path, const char *what)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        logger_printf(LOGGER_ERROR, "%s %s: %s", what, path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 20;
    char *buf = malloc(cap + 1);
    size_t n = buf ? fread(buf, 1, cap + 1, f) : 0;
    bool bad = !buf || ferror(f) || n > cap || !memmem(buf, n, "-----BEGIN ", 11);
    fclose(f);
    if (bad) {
        logger_printf(LOGGER_ERROR, "%s %s: %s", what, path,
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
        logger_printf(LOGGER_ERROR, "--clickhouse-file %s: %s", path, strerror(errno));
        return NULL;
    }
    char line[4096];
    bool ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    line[strcspn(line, "\r\n")] = 0;
    if (!ok || !line[0]) {
        logger_printf(LOGGER_ERROR, "--clickhouse-file %s: expected the URL on the first line", path);
        return NULL;
    }
    char *url = strdup(line);
    memset(line, 0, sizeof line);
    return url;
}

/* Open files: every connection is one. The soft limit goes up to the hard
 * one; when even that is short, fewer connections are allowed. */
static void fit_fd_limit(http_options *h, unsigned listeners)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    rlim_t want = (rlim_t)h->max_connections * listeners + FDS_BESIDE_CONNECTIONS + 4 * h->io_threads;
    if (rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < want) {
        rlim_t room = rl.rlim_cur > FDS_BESIDE_CONNECTIONS + 4 * h->io_threads + 16
                          ? (rl.rlim_cur - FDS_BESIDE_CONNECTIONS - 4 * h->io_threads) / listeners
                          : 16;
        logger_printf(LOGGER_WARNING, "the open file limit (%llu) allows %llu connections, not --max-connections %u",
                (unsigned long long)rl.rlim_cur, (unsigned long long)room, h->max_connections);
        h->max_connections = (unsigned)room;
    }
}

/* A token file's first line, without its line end; NULL with a message. */
static char *read_token(const char *path, const char *what)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        logger_printf(LOGGER_ERROR, "%s %s: %s", what, path, strerror(errno));
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
        logger_printf(LOGGER_ERROR, "%s %s: expected the token on the first line, without spaces", what, path);
    return token;
}

static void log_line(void *ctx, const char *msg)
{
    logger_printf(LOGGER_ERROR, "%s", msg); /* the store's faults and their end */
}

/* The application layer's tables in the SQLite store's file, through its
 * connections (issues_db.h). */
static int state_read(void *ctx, int (*fn)(void *fn_ctx, sqlite3 *db), void *fn_ctx)
{
    return sqlite_store_read(ctx, fn, fn_ctx);
}

static int state_write(void *ctx, int (*fn)(void *fn_ctx, sqlite3 *db), void *fn_ctx)
{
    return sqlite_store_write(ctx, fn, fn_ctx);
}

/* What main holds besides the pacerd, for the clean-up, and what the
 * threads read for as long as they run (the deliveries' targets, the
 * analysis's kinds of them: deliver_start and analysis_start keep the
 * arrays, not copies). */
typedef struct held {
    char *cert, *key, *github_token, *url;
    ana_config acfg;
    bool acfg_loaded;
    deliver_target targets[MAX_TARGETS];
    enum target_kind kinds[MAX_TARGETS];
} held;

/* Stops and frees everything started, in the reverse order; accepts a
 * pacerd started only in part. */
static void shutdown_all(pacerd *d, held *h)
{
    grpc_stop(d->grpc);
    http_stop(d->http);
    analysis_stop(d->analysis);
    deliver_stop(d->deliver);
    issues_db_close(d->issues);
    store_close(d->store);
    dedupe_free(d->ingest.dedupe);
    if (h->acfg_loaded)
        analysis_config_free(&h->acfg);
    wipe_free(h->github_token);
    wipe_free(h->url);
    free(h->cert);
    wipe_free(h->key);
    auth_free(d->auth);
    session_set_free(d->sessions);
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
        d->store = sqlite_store_open(o->db, &so, err, sizeof err);
        if (!d->store) {
            logger_printf(LOGGER_ERROR, "%s", err);
            return -1;
        }
        /* the application layer's tables beside the records, written in
         * the writer's transactions */
        issues_db_host host = {state_read, state_write, d->store};
        if (!(d->issues = issues_db_open_in(&host, err, sizeof err))) {
            logger_printf(LOGGER_ERROR, "%s", err);
            return -1;
        }
        /* one instance sees every record: copies sent without a batch id
         * are recognised (the newest help, they are not needed: rows that
         * cannot be read, which the store has told in the log and
         * /healthz, leave the filter with fewer) */
        int r;
        if (!(d->ingest.dedupe = dedupe_new((size_t)h->acfg.dedupe_records)) ||
            ((r = dedupe_fill(d->ingest.dedupe, d->store)) == -ENOMEM)) {
            logger_printf(LOGGER_ERROR, "cannot read the newest records' ids: out of memory");
            return -1;
        }
        return 0;
    }
    if (o->clickhouse_file && !(h->url = read_url(o->clickhouse_file)))
        return -1;
    so.submitters = o->http.workers; /* the threads that may submit at once */
    d->store = ch_store_open(h->url ? h->url : o->clickhouse, &so, err, sizeof err);
    if (!d->store) {
        logger_printf(LOGGER_ERROR, "%s", err);
        return -1;
    }
    if (!o->state) {
        logger_printf(LOGGER_INFO, "ClickHouse store: the application layer runs on the instance given --state: "
                        "records are cleaned on ingest (--analysis-config); /api/v1/issues and "
                        "/api/v1/cleaning answer 501 here");
        return 0;
    }
    /* the application layer's tables in a SQLite file of their own */
    if (!(d->issues = issues_db_open(o->state, err, sizeof err))) {
        logger_printf(LOGGER_ERROR, "--state: %s", err);
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
        logger_printf(LOGGER_ERROR, "%s", err);
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
        logger_printf(LOGGER_WARNING, "no dashboard: %s (--web-root DIR; / answers 404)", web_err);
    if (!(d->sessions = session_set_new())) {
        logger_printf(LOGGER_ERROR, "out of memory");
        return -1;
    }
    /* the application layer: its settings, its targets */
    if (o->analysis_config) {
        if (analysis_config_load(o->analysis_config, &h->acfg, err, sizeof err) < 0) {
            logger_printf(LOGGER_ERROR, "--analysis-config %s", err);
            return -1;
        }
    } else {
        analysis_config_defaults(&h->acfg);
    }
    h->acfg_loaded = true;
    d->ingest.clean = (clean_limits){h->acfg.max_duration_ms, (int64_t)h->acfg.max_clock_skew_s * 1000000000LL};
    deliver_target *targets = h->targets;
    enum target_kind *kinds = h->kinds;
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
            logger_printf(LOGGER_ERROR, "cannot start the analysis or the deliveries (out of memory, or libcurl)");
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
    d->http = http_start(o->listen.addr, o->listen.port, &ho, &app, err, sizeof err);
    if (d->http && o->grpc_listen.text) {
        /* the same limits as HTTP, counted apart */
        grpc_options go = {.workers = o->http.workers, .max_connections = o->http.max_connections,
                           .max_per_address = o->http.max_per_address, .max_streams = o->grpc_max_streams,
                           .header_timeout_s = o->http.header_timeout_s, .body_timeout_s = o->http.body_timeout_s,
                           .idle_timeout_s = o->http.idle_timeout_s, .max_message = o->grpc_max_message,
                           .max_bytes_in_flight = o->http.max_body_bytes_in_flight, .tls_cert_pem = h->cert,
                           .tls_key_pem = h->key};
        grpc_app gapp = {.preflight = grpc_router_preflight, .handle = grpc_router_handle,
                         .done = grpc_router_done, .release = grpc_router_release, .ctx = d};
        d->grpc = grpc_start(o->grpc_listen.addr, o->grpc_listen.port, &go, &gapp, err, sizeof err);
        if (!d->grpc) {
            logger_printf(LOGGER_ERROR, "--grpc-listen %s", err);
            free(h->cert);
            wipe_free(h->key);
            h->cert = h->key = NULL;
            return -1;
        }
    }
    free(h->cert); /* libmicrohttpd and GnuTLS keep their own copies */
    wipe_free(h->key);
    h->cert = h->key = NULL;
    if (!d->http) {
        logger_printf(LOGGER_ERROR, "%s", err);
        return -1;
    }
    d->tls = http_tls(d->http);
    return 0;
}

/* SIGHUP: the config file and the credentials again; what a reload
 * applies is applied, the rest waits for a restart. o: the settings in
 * use, updated to what was applied; its paths to the credentials are kept
 * in paths (freed by the caller). */
static void reload(int argc, char **argv, options *o, pacerd *d, char *paths[2])
{
    char err[1024];
    notify_reloading();
    options n;
    if (!o->config) {
        /* no config file: the credentials alone */
        int r = auth_reload(d->auth, err, sizeof err);
        metrics_reload(&d->metrics, r == 0);
        if (r == 0)
            logger_printf(LOGGER_INFO, "SIGHUP: reloaded the admin token and %zu keys", auth_n_keys(d->auth));
        else
            logger_printf(LOGGER_ERROR, "SIGHUP: %s; the credentials in use stay", err);
        notify_send("READY=1");
        return;
    }
    if (options_reload(argc, argv, &n, err, sizeof err) < 0) {
        metrics_reload(&d->metrics, false);
        logger_printf(LOGGER_ERROR, "SIGHUP: %s; the settings in use stay", err);
        options_free(&n);
        notify_send("READY=1");
        return;
    }
    /* the credentials first: when they fail, nothing changes */
    if (auth_reload_files(d->auth, n.admin_file, n.keys_file, err, sizeof err) < 0) {
        metrics_reload(&d->metrics, false);
        logger_printf(LOGGER_ERROR, "SIGHUP: %s; the settings in use stay", err);
        options_free(&n);
        notify_send("READY=1");
        return;
    }
    metrics_reload(&d->metrics, true);
    size_t applied = 0, waiting = 0;
    for (const option_def *od = options_table; od->name; od++) {
        if (options_same(o, &n, od))
            continue;
        if (od->reload) {
            applied++;
            logger_printf(LOGGER_DEBUG, "SIGHUP: applied a new %s", od->name);
        } else {
            waiting++;
            logger_printf(LOGGER_WARNING, "SIGHUP: %s changed in %s: it needs a restart (systemctl restart pacerd); "
                          "the running value stays until then", od->name, o->config);
        }
    }
    logger_set_level(n.log_level);
    http_options ho = n.http;
    ho.max_discard_bytes = n.max_body;
    http_set_limits(d->http, &ho);
    if (d->grpc)
        grpc_set_limits(d->grpc, &(grpc_options){.max_per_address = n.http.max_per_address,
                                                 .header_timeout_s = n.http.header_timeout_s,
                                                 .body_timeout_s = n.http.body_timeout_s,
                                                 .max_bytes_in_flight = n.http.max_body_bytes_in_flight});
    __atomic_store_n(&d->ingest.max_body, n.max_body, __ATOMIC_RELAXED);
    /* what is in use now, for the next reload's comparison */
    char *admin = strdup(n.admin_file), *keys = strdup(n.keys_file);
    if (admin && keys) {
        free(paths[0]);
        free(paths[1]);
        paths[0] = admin;
        paths[1] = keys;
        o->admin_file = admin;
        o->keys_file = keys;
    } else {
        free(admin);
        free(keys);
    }
    o->log_level = n.log_level;
    o->max_body = n.max_body;
    o->http.max_per_address = n.http.max_per_address;
    o->http.header_timeout_s = n.http.header_timeout_s;
    o->http.body_timeout_s = n.http.body_timeout_s;
    o->http.max_wait_ms = n.http.max_wait_ms;
    o->http.max_body_bytes_in_flight = n.http.max_body_bytes_in_flight;
    options_free(&n);
    logger_printf(LOGGER_INFO, "SIGHUP: reloaded %s, the admin token and %zu keys; %zu settings changed%s", o->config,
                  auth_n_keys(d->auth), applied,
                  waiting ? ", others wait for a restart (above)" : "");
    notify_send("READY=1");
}

int main(int argc, char **argv)
{
    options o;
    int parsed = options_parse(argc, argv, &o);
    if (parsed != 0) {
        options_free(&o);
        return parsed > 0 ? 0 : 2; /* --help: 0 */
    }
    logger_set_level(o.log_level);
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
    fit_fd_limit(&o.http, o.grpc_listen.text ? 2 : 1);

    pacerd d = {.ingest = {.max_body = o.max_body, .retention_days = o.store.retention_days},
                .api = {.max_config_bytes = 1 << 20}};
    held h = {0};
    metrics_init(&d.metrics);
    if (start(&o, &d, &h) < 0) {
        shutdown_all(&d, &h);
        options_free(&o);
        return 1;
    }
    bool v6 = strchr(o.listen.addr, ':') != NULL;
    char where[128];
    snprintf(where, sizeof where, "%s://%s%s%s:%u", d.tls ? "https" : "http", v6 ? "[" : "", o.listen.addr,
             v6 ? "]" : "", http_port(d.http));
    printf("pacerd: listening on %s\n", where);
    if (d.grpc) {
        v6 = strchr(o.grpc_listen.addr, ':') != NULL;
        printf("pacerd: OTLP/gRPC on %s://%s%s%s:%u\n", grpc_tls(d.grpc) ? "https" : "http", v6 ? "[" : "",
               o.grpc_listen.addr, v6 ? "]" : "", grpc_port(d.grpc));
    }
    fflush(stdout);
    /* the socket listens (http_start returned): the service manager may
     * start what needs pacerd */
    char state[192];
    snprintf(state, sizeof state, "READY=1\nSTATUS=listening on %s", where);
    int nr = notify_send(state);
    if (nr < 0)
        logger_printf(LOGGER_WARNING, "cannot notify the service manager ($NOTIFY_SOCKET): %s", strerror(-nr));

    int sig = 0;
    char *paths[2] = {NULL, NULL};
    for (;;) {
        sigwait(&sigs, &sig);
        if (sig != SIGHUP)
            break;
        reload(argc, argv, &o, &d, paths);
    }
    notify_send("STOPPING=1");
    http_stats hs;
    http_get_stats(d.http, &hs);
    logger_printf(LOGGER_INFO, "%s: stopping; %zu requests in flight", sig == SIGINT ? "SIGINT" : "SIGTERM",
                  hs.admitted);
    if (d.grpc)
        grpc_drain(d.grpc, 0); /* both fronts refuse new calls while the admitted ones finish */
    size_t left = http_drain(d.http, o.drain_timeout_s * 1000);
    if (d.grpc)
        left += grpc_drain(d.grpc, o.drain_timeout_s * 1000);
    if (left)
        logger_printf(LOGGER_WARNING, "%zu requests still in flight after %u s; closing them", left,
                      o.drain_timeout_s);
    shutdown_all(&d, &h);
    free(paths[0]);
    free(paths[1]);
    options_free(&o);
    return 0;
}
