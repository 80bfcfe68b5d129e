/* pacerd's options (options.h): the table, --help from it, and the
 * reading of the command line and of the config file. */
#include "options.h"
#include "logger.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define O(field) offsetof(options, field)

const option_def options_table[] = {
    {"config", "FILE",
     "read options from FILE, one \"NAME = VALUE\" per line (pacerd.conf(5)); the command line overrides it; "
     "SIGHUP reads it again",
     .type = OPT_CONFIG, .offset = O(config)},
    {"listen", "ADDR:PORT", "address to serve on (127.0.0.1:4318, [::1]:4318; port 0: any free port)",
     .type = OPT_LISTEN, .offset = O(listen)},
    {"grpc-listen", "ADDR:PORT",
     "also serve OTLP/gRPC there (4317 is its port by convention): HTTP/2 without TLS by prior knowledge, or with "
     "--tls-cert TLS with ALPN h2; the same keys, limits and store as OTLP/HTTP (default: not served)",
     .type = OPT_LISTEN, .offset = O(grpc_listen)},
    {"db", "FILE", "SQLite database (created when missing)", .type = OPT_TEXT, .offset = O(db)},
    {"clickhouse", "URL",
     "store in ClickHouse instead: http://[USER[:PASSWORD]@]HOST[:PORT]/[DATABASE] (database pacer by default, "
     "created when missing); several pacerd may share it. HOST1:PORT1,HOST2:PORT2 with ?cluster=NAME: the shards "
     "of a cluster in ClickHouse's remote_servers, tables on each (docs/server.md)",
     .type = OPT_TEXT, .offset = O(clickhouse)},
    {"clickhouse-file", "FILE", "the same URL read from FILE's first line (keeps the password out of ps)",
     .type = OPT_TEXT, .offset = O(clickhouse_file)},
    {"state", "FILE",
     "ClickHouse: run the application layer (analysis, issues, deliveries) on this instance, its state in this "
     "SQLite file; one instance of those sharing a database (docs/server.md, \"Scaling out\")",
     .type = OPT_TEXT, .offset = O(state)},
    {"admin-token-file", "FILE", "the admin token (first line): config changes, queries, /metrics",
     .type = OPT_TEXT, .offset = O(admin_file), .reload = true},
    {"keys-file", "FILE",
     "ingest keys, one \"APP KEY [rate=N/s] [burst=N] [daily=N]\" per line (SIGHUP reads both files again)",
     .type = OPT_TEXT, .offset = O(keys_file), .reload = true},
    {"tls-cert", "FILE", "serve HTTPS with this certificate (PEM; with --tls-key)", .type = OPT_TEXT,
     .offset = O(tls_cert)},
    {"tls-key", "FILE", "the certificate's private key (PEM)", .type = OPT_TEXT, .offset = O(tls_key)},
    {"web-root", "DIR",
     "the dashboard's files, served on / (default %s; run from its build tree, pacerd serves the build's web/ "
     "first)",
     PACER_WEB_DIR, true, .type = OPT_TEXT, .offset = O(web_root)},
    {"log-level", "error|warning|info|debug",
     "the least grave messages logged: errors (pacerd cannot do what it should), warnings (it does less), "
     "info (start, reloads, stop) or debug (each setting a reload applies)",
     "info", .type = OPT_LEVEL, .offset = O(log_level), .reload = true},

    {"max-body", "BYTES", "largest ingest body, also once a gzip body is inflated", "16777216",
     .group = "limits (every client may be hostile):", .type = OPT_SIZE, .offset = O(max_body), .min = 1024,
     .max = (size_t)1 << 30, .unit = " bytes", .reload = true},
    {"grpc-max-message", "BYTES", "largest OTLP/gRPC message, also once inflated", "4194304", .type = OPT_SIZE,
     .offset = O(grpc_max_message), .min = 1024, .max = (size_t)1 << 30, .unit = " bytes"},
    {"grpc-max-streams", "N", "OTLP/gRPC calls at once on one connection (SETTINGS_MAX_CONCURRENT_STREAMS)", "100",
     .type = OPT_UINT, .offset = O(grpc_max_streams), .min = 1, .max = 10000},
    {"max-inflight-bytes", "N", "all request bodies held in memory at once", "268435456", .type = OPT_SIZE,
     .offset = O(http.max_body_bytes_in_flight), .min = 1 << 16, .max = (size_t)1 << 36, .unit = " bytes",
     .reload = true},
    {"max-connections", "N", "open connections in all, on each listener (HTTP, gRPC)", "4096", .type = OPT_UINT,
     .offset = O(http.max_connections), .min = 16, .max = 1000000},
    {"max-per-address", "N", "open connections from one address or IPv6 /64, on each listener", "64",
     .type = OPT_UINT, .offset = O(http.max_per_address), .min = 1, .max = 1000000, .reload = true},
    {"header-timeout", "S",
     "a request's headers must be complete within S s of the connection or the previous answer", "10",
     .type = OPT_UINT, .offset = O(http.header_timeout_s), .min = 1, .max = 3600, .unit = " s", .reload = true},
    {"body-timeout", "S", "its body within S s of the headers; an answer must be taken within S s", "60",
     .type = OPT_UINT, .offset = O(http.body_timeout_s), .min = 1, .max = 3600, .unit = " s", .reload = true},
    {"idle-timeout", "S", "keep-alive connections idle longer are closed", "30", .type = OPT_UINT,
     .offset = O(http.idle_timeout_s), .min = 1, .max = 3600, .unit = " s"},
    {"max-wait", "MS", "longest a request may wait for a worker: beyond, 429 with Retry-After", "1000",
     .type = OPT_UINT, .offset = O(http.max_wait_ms), .min = 1, .max = 600000, .unit = " ms", .reload = true},
    {"max-queue", "N", "records waiting for the writer before ingest answers 429", "200000", .type = OPT_SIZE,
     .offset = O(store.max_queued_items), .min = 1, .max = 100000000},

    {"threads", "N", "worker threads handling requests", "2 per CPU, at least 4; with --clickhouse 4 per CPU, at "
                                                         "least 8",
     true, .group = "", .type = OPT_UINT, .offset = O(http.workers), .min = 1, .max = 256},
    {"io-threads", "N", "connection threads", "1 per CPU, 2 to 8", true, .type = OPT_UINT,
     .offset = O(http.io_threads), .min = 1, .max = 64},
    {"drain-timeout", "S", "on SIGTERM, longest wait for requests in flight", "30", .type = OPT_UINT,
     .offset = O(drain_timeout_s), .min = 1, .max = 3600, .unit = " s"},
    {"sync", "normal|full",
     "SQLite synchronous mode: normal is durable across a crash of pacerd, full also across a crash of the "
     "machine",
     "normal", .type = OPT_SYNC},
    {"rollup-lag", "MS",
     "SQLite: longest time a stored record waits to be added to the rollups (queries read such records from the "
     "raw rows)",
     "500", .type = OPT_SIZE, .offset = O(store.rollup_lag_ms), .min = 0, .max = 3600000, .unit = " ms"},
    {"seal-rows", "N", "SQLite: records that wait in commit order before they are sealed into blocks of a day",
     "32768", true, .type = OPT_SIZE, .offset = O(store.seal_rows), .min = 1, .max = 10000000},
    {"retention-days", "N",
     "keep the records of the last N UTC days and today: older days are dropped whole, and records older than "
     "that are refused (default %s: keep everything; on ClickHouse the days are those received, as "
     "--clickhouse-retention-days N)",
     "0", .type = OPT_UINT, .offset = O(store.retention_days), .min = 0, .max = 36500, .unit = " days"},
    {"rollup-retention-days", "N",
     "SQLite: keep the daily percentile rollups N days (default %s: always; at least --retention-days)", "0",
     .type = OPT_UINT, .offset = O(store.rollup_retention_days), .min = 0, .max = 36500, .unit = " days"},
    {"clickhouse-slot", "S", "ClickHouse: the commit hour that consolidation sums at once (default %s; a divisor "
                             "of 86400)",
     "3600", true, .type = OPT_UINT, .offset = O(store.clickhouse_unit_s), .min = 1, .max = 86400, .unit = " s"},
    {"clickhouse-settle", "S",
     "ClickHouse: how long after a slot ended it is consolidated (default %s; a batch commits within S/2 of its "
     "start or is refused 503)",
     "360", true, .type = OPT_UINT, .offset = O(store.clickhouse_settle_s), .min = 2, .max = 86400, .unit = " s"},
    {"clickhouse-day", "S", "ClickHouse: the span consolidated a second time", "86400", true, .type = OPT_UINT,
     .offset = O(store.clickhouse_day_s), .min = 1, .max = 86400, .unit = " s"},
    {"clickhouse-gather", "MS",
     "ClickHouse: how long a commit may wait for requests still being read and decoded, to insert them together "
     "(default %s; 0: never)",
     "50", .type = OPT_UINT, .offset = O(store.clickhouse_gather_ms), .min = 0, .max = 10000, .unit = " ms"},
    {"clickhouse-retention-days", "N",
     "ClickHouse: drop what was received more than N days ago, whole days at a time (default %s: keep "
     "everything)",
     "0", .type = OPT_UINT, .offset = O(store.clickhouse_retention_days), .min = 0, .max = 100000,
     .unit = " days"},

    {"analysis-config", "FILE",
     "thresholds of cleaning, the issue kinds, grading, regressions and the life cycle, for all apps or per app "
     "(default: the documented ones)",
     .group = "issues (docs/server.md, \"Issues\"; on ClickHouse only the cleaning thresholds apply):",
     .type = OPT_TEXT, .offset = O(analysis_config)},
    {"webhook", "URL",
     "POST each issue that becomes new or regressed or changes severity to URL (JSON; repeatable, up to 15)",
     .type = OPT_URLS},
    {"github-issues", "URL",
     "file those issues in a GitHub repository through its REST API: URL is "
     "https://api.github.com/repos/OWNER/REPO",
     .type = OPT_URL, .offset = O(github_url)},
    {"github-token-file", "FILE", "the token for --github-issues (first line)", .type = OPT_TEXT,
     .offset = O(github_token_file)},
    {"help", NULL, "this text", .type = OPT_HELP},
    {0},
};

#define HELP_COLUMN 28
#define HELP_WIDTH 114

/* text from column `at`, wrapped at HELP_WIDTH, continued at HELP_COLUMN */
static void wrap(FILE *f, const char *text, size_t at)
{
    size_t col = at;
    for (const char *p = text; *p;) {
        size_t word = strcspn(p, " ");
        if (col > HELP_COLUMN && col + 1 + word > HELP_WIDTH) {
            fprintf(f, "\n%*s", HELP_COLUMN, "");
            col = HELP_COLUMN;
        } else if (col > at) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, word, f);
        col += word;
        p += word;
        while (*p == ' ')
            p++;
    }
    fputc('\n', f);
}

const char options_synopsis[] =
    "pacerd --listen ADDR:PORT --db FILE --admin-token-file FILE --keys-file FILE [options]\n"
    "pacerd --listen ADDR:PORT --clickhouse URL --admin-token-file FILE --keys-file FILE [options]\n"
    "pacerd --config FILE [options]\n";

void options_help(const option_def *d, char *out, size_t size)
{
    /* the default where the help says (%s), else after it */
    if (strstr(d->help, "%s"))
        snprintf(out, size, d->help, d->def ? d->def : "");
    else if (d->def)
        snprintf(out, size, "%s (default%s %s)", d->help, d->computed ? ":" : "", d->def);
    else
        snprintf(out, size, "%s", d->help);
}

void options_usage(FILE *f)
{
    for (const char *line = options_synopsis; *line;) {
        size_t n = strcspn(line, "\n");
        fprintf(f, "%s%.*s\n", line == options_synopsis ? "usage: " : "       ", (int)n, line);
        line += n + (line[n] == '\n');
    }
    fputc('\n', f);
    for (const option_def *d = options_table; d->name; d++) {
        if (d->group)
            fprintf(f, "\n%s%s", d->group, *d->group ? "\n" : "");
        char lead[64];
        int n = snprintf(lead, sizeof lead, "  --%s%s%s", d->name, d->arg ? " " : "", d->arg ? d->arg : "");
        fprintf(f, "%-*s ", HELP_COLUMN - 1, lead);
        char text[1024];
        options_help(d, text, sizeof text);
        wrap(f, text, (size_t)(n < HELP_COLUMN - 1 ? HELP_COLUMN : n + 1));
    }
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

static int parse_listen(listen_at *l, const char *s)
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
    if (hlen == 0 || hlen >= sizeof l->addr)
        return -EINVAL;
    memcpy(l->addr, host, hlen);
    l->addr[hlen] = 0;
    size_t port;
    if (parse_size(colon + 1, 0, 65535, &port) < 0)
        return -EINVAL;
    l->port = (uint16_t)port;
    l->text = s;
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

/* Reads value into o as d says: 0, or -EINVAL with why (without the
 * option's name) in why. */
static int set_value(options *o, const option_def *d, const char *value, char *why, size_t why_size)
{
    void *at = (char *)o + d->offset;
    size_t v;
    int level;
    switch (d->type) {
    case OPT_TEXT:
    case OPT_CONFIG: *(const char **)at = value; return 0;
    case OPT_LISTEN:
        if (parse_listen(at, value) == 0)
            return 0;
        snprintf(why, why_size, "expected ADDR:PORT, e.g. %s",
                 d->offset == O(grpc_listen) ? "127.0.0.1:4317" : "127.0.0.1:4318");
        return -EINVAL;
    case OPT_URL:
        if (url_ok(value)) {
            *(const char **)at = value;
            return 0;
        }
        snprintf(why, why_size, "expected the repository's API URL, https://api.github.com/repos/OWNER/REPO");
        return -EINVAL;
    case OPT_URLS:
        if (!url_ok(value)) {
            snprintf(why, why_size, "expected an http:// or https:// URL");
            return -EINVAL;
        }
        if (o->n_webhooks == OPTIONS_MAX_WEBHOOKS) {
            snprintf(why, why_size, "at most %d", OPTIONS_MAX_WEBHOOKS);
            return -EINVAL;
        }
        o->webhooks[o->n_webhooks++] = value;
        return 0;
    case OPT_SIZE:
    case OPT_UINT:
        if (parse_size(value, d->min, d->max, &v) < 0) {
            snprintf(why, why_size, "expected %zu to %zu%s", d->min, d->max, d->unit ? d->unit : "");
            return -EINVAL;
        }
        if (d->type == OPT_SIZE)
            *(size_t *)at = v;
        else
            *(unsigned *)at = (unsigned)v;
        return 0;
    case OPT_SYNC:
        if (strcmp(value, "full") != 0 && strcmp(value, "normal") != 0) {
            snprintf(why, why_size, "expected normal or full");
            return -EINVAL;
        }
        o->store.sync_full = strcmp(value, "full") == 0;
        return 0;
    case OPT_LEVEL:
        if ((level = logger_level_parse(value)) < 0) {
            snprintf(why, why_size, "expected error, warning, info or debug");
            return -EINVAL;
        }
        *(int *)at = level;
        return 0;
    case OPT_HELP: return 0;
    }
    return -EINVAL;
}

int options_set(options *o, const option_def *d, const char *value, char *err, size_t err_size)
{
    char why[256];
    if (set_value(o, d, value, why, sizeof why) == 0)
        return 0;
    snprintf(err, err_size, "--%s%s%s: %s", d->name, value ? " " : "", value ? value : "", why);
    return -EINVAL;
}

/* The defaults: the table's, then those computed. */
static void defaults(options *o)
{
    char err[1024];
    for (const option_def *d = options_table; d->name; d++)
        if (d->def && !d->computed && d->type != OPT_TEXT)
            options_set(o, d, d->def, err, sizeof err);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    o->http.workers = ncpu > 2 ? (unsigned)(2 * ncpu) : 4;
    o->http.io_threads = ncpu < 2 ? 2 : ncpu > 8 ? 8 : (unsigned)ncpu;
    o->store.readers = 4;
}

/* What one option says of the others; NULL when all is well. */
static const char *check(options *o, char *err, size_t err_size)
{
    bool clickhouse = o->clickhouse || o->clickhouse_file;
    int stores = !!o->db + !!o->clickhouse + !!o->clickhouse_file;
    /* a ClickHouse worker mostly waits for an insert: twice as many let
     * the next uploads be decoded meanwhile, and join the next insert */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (clickhouse && !o->threads_given)
        o->http.workers = ncpu > 2 ? (unsigned)(4 * ncpu) : 8;
    if (stores > 1)
        return "give one of --db, --clickhouse, --clickhouse-file";
    const char *missing = !o->listen.text   ? "--listen"
                          : !stores         ? "--db (or --clickhouse)"
                          : !o->admin_file  ? "--admin-token-file"
                          : !o->keys_file   ? "--keys-file"
                                            : NULL;
    if (missing) {
        snprintf(err, err_size, "%s is required (see pacerd --help)", missing);
        return err;
    }
    if (o->state && o->db)
        return "--state: for the ClickHouse store (on SQLite the state is in --db's file)";
    if (clickhouse && !o->state && (o->n_webhooks || o->github_url)) {
        snprintf(err, err_size, "%s: only on the instance that runs the application layer (--state FILE; "
                                "docs/server.md, \"Scaling out\")", o->n_webhooks ? "--webhook" : "--github-issues");
        return err;
    }
    if (clickhouse && (o->store.rollup_retention_days || o->store.seal_rows)) {
        snprintf(err, err_size, "%s: for the SQLite store (--db) only",
                 o->store.rollup_retention_days ? "--rollup-retention-days" : "--seal-rows");
        return err;
    }
    if (clickhouse && o->store.retention_days) {
        /* ClickHouse drops the days received before the horizon; ingest
         * refuses records older than it, as on SQLite */
        if (o->store.clickhouse_retention_days && o->store.clickhouse_retention_days != o->store.retention_days) {
            snprintf(err, err_size, "--retention-days %u and --clickhouse-retention-days %u: give one",
                     o->store.retention_days, o->store.clickhouse_retention_days);
            return err;
        }
        o->store.clickhouse_retention_days = o->store.retention_days;
    }
    if (!o->github_url != !o->github_token_file)
        return "--github-issues and --github-token-file go together";
    if (!o->tls_cert != !o->tls_key)
        return "--tls-cert and --tls-key go together";
    if (o->store.rollup_retention_days &&
        (!o->store.retention_days || o->store.rollup_retention_days < o->store.retention_days)) {
        snprintf(err, err_size, "--rollup-retention-days %u: the rollups answer the days whose records are gone, so "
                                "they are kept at least as long: give --retention-days too, at most %u",
                 o->store.rollup_retention_days, o->store.rollup_retention_days);
        return err;
    }
    if (o->grpc_listen.text && o->grpc_max_message > o->http.max_body_bytes_in_flight) {
        snprintf(err, err_size, "--grpc-max-message %zu is larger than --max-inflight-bytes %zu", o->grpc_max_message,
                 o->http.max_body_bytes_in_flight);
        return err;
    }
    if (o->max_body > o->http.max_body_bytes_in_flight) {
        snprintf(err, err_size, "--max-body %zu is larger than --max-inflight-bytes %zu", o->max_body,
                 o->http.max_body_bytes_in_flight);
        return err;
    }
    return NULL;
}

/* Keeps p (malloc'd) for as long as o: NULL when out of memory (p freed). */
static char *own(options *o, char *p)
{
    char **grown = p ? realloc(o->owned, (o->n_owned + 1) * sizeof *grown) : NULL;
    if (!grown) {
        free(p);
        return NULL;
    }
    o->owned = grown;
    o->owned[o->n_owned++] = p;
    return p;
}

void options_free(options *o)
{
    for (size_t i = 0; i < o->n_owned; i++)
        free(o->owned[i]);
    free(o->owned);
    o->owned = NULL;
    o->n_owned = 0;
}

static const option_def *find(const char *name, size_t len)
{
    for (const option_def *d = options_table; d->name; d++)
        if (strlen(d->name) == len && strncmp(d->name, name, len) == 0)
            return d;
    return NULL;
}

#define CONFIG_MAX_BYTES (1 << 20)

int options_read_file(options *o, const char *path, char *err, size_t err_size)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -EINVAL;
    }
    char *text = malloc(CONFIG_MAX_BYTES + 1);
    size_t len = text ? fread(text, 1, CONFIG_MAX_BYTES + 1, f) : 0;
    bool failed = !text || ferror(f);
    fclose(f);
    int r = -EINVAL;
    if (failed || len > CONFIG_MAX_BYTES)
        snprintf(err, err_size, "%s: %s", path, !text ? "out of memory" : failed ? strerror(errno)
                                                                         : "larger than 1 MiB");
    else
        r = options_read_text(o, path, text, len, err, err_size);
    free(text);
    return r;
}

int options_read_text(options *o, const char *path, const char *data, size_t len, char *err, size_t err_size)
{
    if (memchr(data, 0, len)) {
        snprintf(err, err_size, "%s: contains a NUL byte", path);
        return -EINVAL;
    }
    char *text = own(o, malloc(len + 1));
    if (!text) {
        snprintf(err, err_size, "%s: out of memory", path);
        return -EINVAL;
    }
    memcpy(text, data, len);
    text[len] = 0;
    /* a relative FILE or DIR is relative to the file's folder */
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    unsigned given_at[sizeof options_table / sizeof options_table[0]] = {0};
    char *p = text;
    for (unsigned lineno = 1; *p; lineno++) {
        char *line = p, *nl = strchr(p, '\n');
        p = nl ? nl + 1 : p + strlen(p);
        if (nl)
            *nl = 0;
        while (*line == ' ' || *line == '\t')
            line++;
        char *end = line + strlen(line);
        while (end > line && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
            *--end = 0;
        if (!*line || *line == '#')
            continue;
        char *eq = strchr(line, '=');
        if (!eq) {
            snprintf(err, err_size, "%s:%u: expected NAME = VALUE (or a comment starting with #)", path, lineno);
            return -EINVAL;
        }
        char *name_end = eq;
        while (name_end > line && (name_end[-1] == ' ' || name_end[-1] == '\t'))
            name_end--;
        char *value = eq + 1;
        while (*value == ' ' || *value == '\t')
            value++;
        *name_end = 0;
        const option_def *d = find(line, strlen(line));
        if (!d) {
            snprintf(err, err_size, "%s:%u: %.64s%s: no such option (pacerd.conf(5) lists them)", path, lineno, line,
                     strlen(line) > 64 ? "…" : "");
            return -EINVAL;
        }
        if (d->type == OPT_HELP || d->type == OPT_CONFIG) {
            snprintf(err, err_size, "%s:%u: %s: on the command line only", path, lineno, d->name);
            return -EINVAL;
        }
        if (!*value) {
            snprintf(err, err_size, "%s:%u: %s: expected a value after '=' (%s)", path, lineno, d->name, d->arg);
            return -EINVAL;
        }
        size_t at = (size_t)(d - options_table);
        if (given_at[at] && d->type != OPT_URLS) {
            snprintf(err, err_size, "%s:%u: %s is given again (first on line %u)", path, lineno, d->name,
                     given_at[at]);
            return -EINVAL;
        }
        given_at[at] = lineno;
        bool is_path = strcmp(d->arg, "FILE") == 0 || strcmp(d->arg, "DIR") == 0;
        if (is_path && value[0] != '/' && dir_len) {
            char *joined = malloc(dir_len + strlen(value) + 1);
            if (!own(o, joined)) {
                snprintf(err, err_size, "%s: out of memory", path);
                return -EINVAL;
            }
            memcpy(joined, path, dir_len);
            strcpy(joined + dir_len, value);
            value = joined;
        }
        char why[256];
        if (set_value(o, d, value, why, sizeof why) < 0) {
            snprintf(err, err_size, "%s:%u: %s = %.200s: %s", path, lineno, d->name, value, why);
            return -EINVAL;
        }
        o->threads_given |= strcmp(d->name, "threads") == 0;
    }
    return 0;
}

/* The command line's options into o. config_only: --config alone (the
 * first pass, the file is read before the others); otherwise all but it.
 * 0; 1 for --help; -EINVAL with the reason in err. */
static int read_args(int argc, char **argv, options *o, bool config_only, char *err, size_t err_size)
{
    bool webhooks_given = false;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        const char *name = a + 2, *eq = strchr(name, '=');
        const option_def *d = a[1] == '-' ? find(name, eq ? (size_t)(eq - name) : strlen(name)) : NULL;
        const char *value = eq ? eq + 1 : NULL;
        if (d && d->arg && !value && i + 1 < argc)
            value = argv[++i];
        if (!d || (d->arg && !value) || (!d->arg && value)) {
            snprintf(err, err_size, "%s: unknown option or missing value (see pacerd --help)", a);
            return -EINVAL;
        }
        if (config_only != (d->type == OPT_CONFIG))
            continue;
        if (d->type == OPT_HELP)
            return 1;
        if (d->type == OPT_URLS && !webhooks_given) {
            o->n_webhooks = 0; /* the command line's list replaces the file's */
            webhooks_given = true;
        }
        if (options_set(o, d, value, err, err_size) < 0)
            return -EINVAL;
        o->threads_given |= strcmp(d->name, "threads") == 0;
    }
    if (i < argc) {
        snprintf(err, err_size, "unexpected argument %s (see pacerd --help)", argv[i]);
        return -EINVAL;
    }
    return 0;
}

/* The defaults, the file, the command line, the checks. */
static int load(int argc, char **argv, options *o, char *err, size_t err_size)
{
    memset(o, 0, sizeof *o);
    defaults(o);
    int r = read_args(argc, argv, o, true, err, err_size);
    if (r == 0 && o->config)
        r = options_read_file(o, o->config, err, err_size);
    if (r == 0)
        r = read_args(argc, argv, o, false, err, err_size);
    if (r != 0)
        return r;
    const char *why = check(o, err, err_size);
    if (why) {
        if (why != err)
            snprintf(err, err_size, "%s", why);
        return -EINVAL;
    }
    return 0;
}

int options_parse(int argc, char **argv, options *o)
{
    char err[1024];
    int r = load(argc, argv, o, err, sizeof err);
    if (r == 1)
        options_usage(stdout);
    else if (r < 0)
        fprintf(stderr, "pacerd: %s\n", err);
    return r;
}

int options_reload(int argc, char **argv, options *o, char *err, size_t err_size)
{
    int r = load(argc, argv, o, err, err_size);
    return r == 1 ? 0 : r;
}

static bool text_same(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

bool options_same(const options *a, const options *b, const option_def *d)
{
    const char *pa = (const char *)a + d->offset, *pb = (const char *)b + d->offset;
    switch (d->type) {
    case OPT_TEXT:
    case OPT_LISTEN:
    case OPT_URL:
    case OPT_CONFIG: return text_same(*(const char *const *)pa, *(const char *const *)pb);
    case OPT_URLS:
        if (a->n_webhooks != b->n_webhooks)
            return false;
        for (size_t i = 0; i < a->n_webhooks; i++)
            if (!text_same(a->webhooks[i], b->webhooks[i]))
                return false;
        return true;
    case OPT_SIZE: return *(const size_t *)pa == *(const size_t *)pb;
    case OPT_UINT: return *(const unsigned *)pa == *(const unsigned *)pb;
    case OPT_SYNC: return a->store.sync_full == b->store.sync_full;
    case OPT_LEVEL: return *(const int *)pa == *(const int *)pb;
    case OPT_HELP: return true;
    }
    return true;
}
