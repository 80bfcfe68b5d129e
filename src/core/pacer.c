/* The public API (pacer.h): an instance is a model behind one mutex plus a
 * writer thread.
 *
 * Locking: `mu` guards the model. Callers on any thread take it for the
 * duration of one event — a few hash lookups and, when a page finishes, the
 * formatting of one record — and never for I/O: records leave the model
 * through writer_push(), which only links a node into the writer's queue.
 * The writer thread takes `mu` only from its tick (live deadlines), never
 * while holding its own queue lock, so the two locks have one order. The
 * tick is due at the model's next page deadline, none while no page
 * measures: an event that brings the deadline forward tells the writer
 * (writer_tick_at, under `mu`: instance → queue as above).
 *
 * Upload: with a server, the writer thread also encodes each record as OTLP,
 * appends it to the spool (its own SQLite connection; otlp.c, spool.c) and
 * kicks the uploader thread, which has another connection and does all
 * network I/O (OTLP/HTTP, or OTLP/gRPC: uploader.c, grpc.c). At the end the writer is drained first, then the uploader
 * gets a short time to deliver.
 */
#include "clock.h"
#include "grpc.h"
#include "model.h"
#include "otlp.h"
#include "record_int.h"
#include "spool.h"
#include "uploader.h"
#include "writer.h"

#include <pacer/pacer.h>

#include <pacer/base/clock.h>
#include <pacer/base/random.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UPLOAD_DRAIN_MS 3000

struct pacer {
    pthread_mutex_t mu;
    model *model;
    writer *writer;
    /* upload (NULL without a server) */
    spool *spool;         /* writer thread only */
    pbuf spool_body;      /* writer thread only: the record being spooled */
    uploader *uploader;
    uint64_t spool_errors; /* writer thread only */
    uploader_stats final_upload; /* the uploader's figures when it stopped */
    pacer_record_fn user_on_record;
    void *user_data;
    bool raw_events;
    bool explicit_times;
    int64_t tick_asked; /* under mu: the deadline the writer's tick is due at, at the latest */
    uint64_t events;
    _Atomic uint64_t config_generation;
    bool finished;
};

static void on_model_record(pacer_record *rec, void *user_data)
{
    pacer_t *p = user_data;
    writer_push_record(p->writer, rec);
}

/* Writer thread: every record, after it reached the output file. */
static void on_writer_record(const pacer_record *rec, const char *line, size_t len, void *user_data)
{
    pacer_t *p = user_data;
    if (p->user_on_record)
        p->user_on_record(line, len, p->user_data);
    if (p->spool) {
        /* spooled in the form it is sent in; a record the records reader
         * would refuse is not sent (otlp_spool_body) */
        if (otlp_spool_body(rec, line, len, &p->spool_body) < 0 ||
            spool_add(p->spool, otlp_signal_of(rec), SPOOL_OTLP, p->spool_body.p, p->spool_body.len) < 0)
            p->spool_errors++;
        uploader *u = __atomic_load_n(&p->uploader, __ATOMIC_ACQUIRE);
        if (u)
            uploader_kick(u);
    }
}

/* Uploader thread: a config from the server. */
static void on_server_config(pacer_config *cfg, void *user_data)
{
    pacer_set_config(user_data, cfg);
}

static int64_t on_writer_tick(void *user_data)
{
    pacer_t *p = user_data;
    int64_t next = INT64_MAX;
    pthread_mutex_lock(&p->mu);
    if (!p->finished) {
        model_tick(p->model, pacer_now_ns());
        next = model_next_deadline(p->model);
    }
    p->tick_asked = next;
    pthread_mutex_unlock(&p->mu);
    return next;
}

/* Under mu, after an event: a page deadline earlier than the writer's
 * next tick brings the tick forward. */
static void ask_tick(pacer_t *p)
{
    int64_t d = model_next_deadline(p->model);
    if (d < p->tick_asked) {
        p->tick_asked = d;
        writer_tick_at(p->writer, d);
    }
}

static char *error_printf(const char *fmt, const char *a, const char *b)
{
    size_t n = strlen(fmt) + strlen(a) + strlen(b) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, fmt, a, b);
    return s;
}

/* "<dir of spool>/config-<app>.xml": the last good config from the server. */
static char *config_cache_path(const char *spool_path, const char *app)
{
    const char *slash = strrchr(spool_path, '/');
    size_t dir = slash ? (size_t)(slash - spool_path) : 1;
    const char *d = slash ? spool_path : ".";
    size_t n = dir + strlen(app) + sizeof("/config-.xml");
    char *path = malloc(n);
    if (!path)
        return NULL;
    snprintf(path, n, "%.*s/config-", (int)dir, d);
    /* keep the app name a plain file name */
    size_t at = strlen(path);
    for (const char *c = app; *c; c++)
        path[at++] = (*c == '/' || *c == '\\' || (c == app && *c == '.')) ? '_' : *c;
    strcpy(path + at, ".xml");
    return path;
}

/* The key `pacer run` hands over (src/cli/cmd_run.c): a sealed memfd named
 * "pacer-key", inherited as the descriptor PACER_SERVER_KEY_FD names. It is
 * read, closed and its variable removed, so that the app's children get
 * neither; a descriptor that is not that memfd is left alone. Returns the
 * malloc'd key, or NULL. */
static char *key_from_fd(void)
{
    const char *v = getenv("PACER_SERVER_KEY_FD");
    if (!v || !*v)
        return NULL;
    char *end;
    long fd = strtol(v, &end, 10);
    unsetenv("PACER_SERVER_KEY_FD");
    if (*end || fd < 3 || fd > 65535)
        return NULL;
    char link[64], target[64];
    snprintf(link, sizeof link, "/proc/self/fd/%ld", fd);
    ssize_t tl = readlink(link, target, sizeof target - 1);
    if (tl < 0 || (target[tl] = 0, strncmp(target, "/memfd:pacer-key", 16) != 0))
        return NULL;
    char buf[1024];
    ssize_t n = pread((int)fd, buf, sizeof buf - 1, 0);
    close((int)fd);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        n--;
    char *key = n > 0 ? strndup(buf, (size_t)n) : NULL;
    memset(buf, 0, sizeof buf);
    return key;
}

/* Whether `url` is http(s)://authority with no path (a "/" aside): what a
 * gRPC endpoint is. */
static bool endpoint_without_path(const char *url)
{
    const char *a = strncmp(url, "http://", 7) == 0 ? url + 7 : strncmp(url, "https://", 8) == 0 ? url + 8 : NULL;
    if (!a || !*a)
        return false;
    const char *rest = a + strcspn(a, "/?#");
    return rest > a && (!*rest || strcmp(rest, "/") == 0);
}

static const char *option_or_env(const char *opt, const char *env)
{
    const char *v = opt ? opt : getenv(env);
    return v && *v ? v : NULL;
}

/* Starts the spool and the uploader. Returns 0 or a negative errno with
 * *ret_error set. Called before the writer starts. */
static int start_upload(pacer_t *p, const pacer_options *opts, pacer_config **cfg, char **ret_error)
{
    const char *protocol = option_or_env(opts->otlp_protocol, "PACER_OTLP_PROTOCOL");
    const char *compression = option_or_env(opts->otlp_compression, "PACER_OTLP_COMPRESSION");
    bool bad_protocol = protocol && strcmp(protocol, "protobuf") != 0 && strcmp(protocol, "json") != 0 &&
                        strcmp(protocol, "grpc") != 0;
    bool bad_compression = compression && strcmp(compression, "gzip") != 0 && strcmp(compression, "none") != 0;
    bool grpc = protocol && strcmp(protocol, "grpc") == 0;
    if (bad_protocol || bad_compression) {
        if (ret_error && asprintf(ret_error, bad_protocol ? "OTLP protocol '%s': expected protobuf, json or grpc"
                                                          : "OTLP compression '%s': expected gzip or none",
                                  bad_protocol ? protocol : compression) < 0)
            *ret_error = NULL;
        return -EINVAL;
    }
    if (grpc && !endpoint_without_path(opts->server_url)) {
        if (ret_error && asprintf(ret_error,
                                  "server URL '%s': over OTLP/gRPC it is the endpoint, http://HOST:PORT or "
                                  "https://HOST:PORT without a path (the calls go to "
                                  "/opentelemetry.proto.collector.*.v1.*Service/Export)",
                                  opts->server_url) < 0)
            *ret_error = NULL;
        return -EINVAL;
    }
    /* the config service: pacerd's GET /v1/config/{app}, which a gRPC
     * endpoint does not serve */
    const char *config_url = option_or_env(opts->config_server_url, "PACER_CONFIG_SERVER_URL");
    if (!config_url && !grpc)
        config_url = opts->server_url;
    if (config_url && strncmp(config_url, "http://", 7) != 0 && strncmp(config_url, "https://", 8) != 0) {
        if (ret_error && asprintf(ret_error, "config server URL '%s': expected http:// or https://", config_url) < 0)
            *ret_error = NULL;
        return -EINVAL;
    }
    char *spool_path = opts->spool_path ? strdup(opts->spool_path) : spool_default_path();
    if (!spool_path) {
        if (ret_error)
            *ret_error = strdup("no place for the upload spool: set XDG_STATE_HOME or HOME, or a spool path");
        return -ENOENT;
    }
    const char *app = opts->app_name ? opts->app_name : "unknown";
    char *cache = config_url ? config_cache_path(spool_path, app) : NULL;
    /* offline start: the server's last config wins over the local file */
    if (cache && access(cache, R_OK) == 0) {
        pacer_config *cached = pacer_config_load(cache, NULL);
        if (cached) {
            pacer_config_unref(*cfg);
            *cfg = cached;
        }
    }
    int64_t cap = (int64_t)pacer_config_spool_max_kb(*cfg) * 1024;
    int r = spool_open(spool_path, cap, &p->spool, ret_error);
    char *handed = opts->server_key ? NULL : key_from_fd();
    const char *ca = opts->server_ca_file ? opts->server_ca_file : getenv("PACER_SERVER_CA");
    if (r == 0) {
        uploader_options uo = {
            .server_url = opts->server_url,
            .key = opts->server_key ? opts->server_key : handed,
            .ca_file = ca && *ca ? ca : NULL,
            .app = app,
            .config_url = config_url,
            .spool_path = spool_path,
            .config_cache = cache,
            .on_config = on_server_config,
            .user_data = p,
            .config_poll_ms = pacer_config_config_poll_ms(*cfg),
            .json = protocol && strcmp(protocol, "json") == 0,
            .no_gzip = compression && strcmp(compression, "none") == 0,
            .grpc = grpc,
        };
        r = uploader_new(&uo, &p->uploader, ret_error);
        if (r < 0) {
            spool_close(p->spool);
            p->spool = NULL;
        }
    }
    if (handed) {
        memset(handed, 0, strlen(handed));
        free(handed);
    }
    free(cache);
    free(spool_path);
    return r;
}

PACER_API int pacer_new(const pacer_options *opts, pacer_t **ret, char **ret_error)
{
    pacer_options none = {0};
    if (!opts)
        opts = &none;
    if (ret_error)
        *ret_error = NULL;

    pacer_config *cfg = NULL;
    if (opts->config_path) {
        cfg = pacer_config_load(opts->config_path, ret_error);
        if (!cfg)
            return -EINVAL;
    }

    pacer_t *p = calloc(1, sizeof(*p));
    if (!p) {
        pacer_config_unref(cfg);
        return -ENOMEM;
    }
    pthread_mutex_init(&p->mu, NULL);
    p->user_on_record = opts->on_record;
    p->user_data = opts->user_data;
    if (opts->server_url) {
        int r = start_upload(p, opts, &cfg, ret_error);
        if (r < 0) {
            pacer_config_unref(cfg);
            pthread_mutex_destroy(&p->mu);
            free(p);
            return r;
        }
    }
    p->raw_events = opts->raw_events_path != NULL;
    p->explicit_times = opts->explicit_times;

    char session[17];
    if (!opts->session)
        random_hex(session, 8);
    model_info info = {
        .app = opts->app_name,
        .version = opts->app_version,
        .session = opts->session ? opts->session : session,
        .pid = getpid(),
        .wall_offset_ns = wall_ns() - pacer_now_ns(),
    };
    p->model = model_new(&info, cfg, on_model_record, p);
    pacer_config_unref(cfg);
    if (!p->model) {
        uploader_free(p->uploader, 0, NULL);
        spool_close(p->spool);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return -ENOMEM;
    }

    writer_options wo = {
        .records_path = opts->out_path,
        .events_path = opts->raw_events_path,
        .on_record = (opts->on_record || p->spool) ? on_writer_record : NULL,
        .user_data = p,
        .on_tick = opts->live_deadlines ? on_writer_tick : NULL,
        .tick_data = p,
        .tick_ms = opts->live_deadlines ? 250 : 0,
        .queue_limit = opts->queue_limit,
    };
    const char *failed = NULL;
    int r = writer_new(&wo, &p->writer, &failed);
    if (r < 0) {
        if (ret_error && failed)
            *ret_error = error_printf("%s: %s", failed, strerror(-r));
        model_free(p->model);
        uploader_free(p->uploader, 0, NULL);
        spool_close(p->spool);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return r;
    }
    *ret = p;
    return 0;
}

PACER_API void pacer_finish(pacer_t *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    bool was_finished = p->finished;
    if (!was_finished)
        model_finish(p->model);
    p->finished = true;
    pthread_mutex_unlock(&p->mu);
    if (was_finished)
        return;
    writer_flush(p->writer); /* every record written and spooled */
    /* no record can follow now: let the uploader deliver and stop */
    uploader *u = __atomic_exchange_n(&p->uploader, NULL, __ATOMIC_ACQ_REL);
    uploader_free(u, UPLOAD_DRAIN_MS, &p->final_upload);
}

PACER_API void pacer_free(pacer_t *p)
{
    if (!p)
        return;
    pacer_finish(p);
    writer_free(p->writer); /* joins the thread */
    spool_close(p->spool);
    pb_free(&p->spool_body);
    model_free(p->model);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static char *format_event(const pacer_event *ev, size_t *ret_len)
{
    char small[512];
    int n = pacer_event_format(ev, small, sizeof(small));
    if (n < 0)
        return NULL;
    char *line = malloc((size_t)n + 1);
    if (!line)
        return NULL;
    if ((size_t)n < sizeof(small))
        memcpy(line, small, (size_t)n + 1);
    else
        pacer_event_format(ev, line, (size_t)n + 1);
    if (n > 0 && line[n - 1] == '\n')
        line[--n] = '\0';
    *ret_len = (size_t)n;
    return line;
}

PACER_API int pacer_submit(pacer_t *p, const pacer_event *ev)
{
    if (!p || !ev)
        return -EINVAL;
    pacer_event e = *ev;
    pthread_mutex_lock(&p->mu);
    /* Stamped under the lock, so the model sees live events in time order
     * whichever thread they come from. */
    if (e.t_ns == 0 && !p->explicit_times)
        e.t_ns = pacer_now_ns();
    int r = p->finished ? -ESHUTDOWN : model_submit(p->model, &e);
    if (r == 0) {
        p->events++;
        ask_tick(p);
        if (p->raw_events) {
            size_t len;
            char *line = format_event(&e, &len);
            if (line)
                writer_push(p->writer, WRITER_EVENT, line, len);
        }
    }
    pthread_mutex_unlock(&p->mu);
    return r;
}

PACER_API int pacer_mark(pacer_t *p, pacer_event_type mark)
{
    if (mark < PACER_EV_LAUNCH || mark > PACER_EV_APP_CREATED)
        return -EINVAL;
    pacer_event ev = {.type = mark};
    return pacer_submit(p, &ev);
}

PACER_API int pacer_page_create(pacer_t *p, uint64_t page, const char *class_name, pacer_page_kind kind)
{
    pacer_event ev = {.type = PACER_EV_PAGE_CREATE, .page = page, .class_name = class_name, .kind = kind};
    return pacer_submit(p, &ev);
}

static int page_event(pacer_t *p, pacer_event_type type, uint64_t page)
{
    pacer_event ev = {.type = type, .page = page};
    return pacer_submit(p, &ev);
}

PACER_API int pacer_page_view_created(pacer_t *p, uint64_t page)
{
    return page_event(p, PACER_EV_PAGE_VIEW_CREATED, page);
}

PACER_API int pacer_page_draw(pacer_t *p, uint64_t page)
{
    return page_event(p, PACER_EV_PAGE_DRAW, page);
}

PACER_API int pacer_page_select(pacer_t *p, uint64_t page)
{
    return page_event(p, PACER_EV_PAGE_SELECT, page);
}

PACER_API int pacer_page_scroll(pacer_t *p, uint64_t page)
{
    return page_event(p, PACER_EV_PAGE_SCROLL, page);
}

PACER_API int pacer_page_destroy(pacer_t *p, uint64_t page)
{
    return page_event(p, PACER_EV_PAGE_DESTROY, page);
}

PACER_API int pacer_page_show(pacer_t *p, uint64_t page)
{
    return page_event(p, PACER_EV_PAGE_SHOW, page);
}

PACER_API int pacer_request_start(pacer_t *p, const char *url, uint64_t req)
{
    pacer_event ev = {.type = PACER_EV_API_START, .url = url, .req = req};
    return pacer_submit(p, &ev);
}

PACER_API int pacer_request_end(pacer_t *p, const char *url, uint64_t req, int status)
{
    pacer_event ev = {.type = PACER_EV_API_END, .url = url, .req = req, .status = status};
    return pacer_submit(p, &ev);
}

PACER_API int pacer_emit(pacer_t *p, const char *type, const char *fields_json)
{
    if (!p)
        return -EINVAL;
    int64_t now = pacer_now_ns();
    pthread_mutex_lock(&p->mu);
    int r = p->finished ? -ESHUTDOWN : model_emit(p->model, type, fields_json, now);
    pthread_mutex_unlock(&p->mu);
    return r;
}

PACER_API int pacer_submit_record(pacer_t *p, pacer_record *rec)
{
    if (!rec)
        return -EINVAL;
    if (!p || !pacer_record_type_of(rec)) {
        pacer_record_free(rec);
        return -EINVAL;
    }
    int64_t t = pacer_record_time(rec);
    pthread_mutex_lock(&p->mu);
    int r;
    if (p->finished) {
        pacer_record_free(rec);
        r = -ESHUTDOWN;
    } else {
        r = model_submit_record(p->model, rec, t ? t : pacer_now_ns());
    }
    pthread_mutex_unlock(&p->mu);
    return r;
}

PACER_API void pacer_set_config(pacer_t *p, pacer_config *cfg)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    model_set_config(p->model, cfg);
    atomic_fetch_add(&p->config_generation, 1);
    pthread_mutex_unlock(&p->mu);
}

PACER_API uint64_t pacer_config_generation(pacer_t *p)
{
    return p ? atomic_load(&p->config_generation) : 0;
}

PACER_API pacer_config *pacer_get_config(pacer_t *p)
{
    if (!p)
        return NULL;
    pthread_mutex_lock(&p->mu);
    pacer_config *cfg = pacer_config_ref(model_get_config(p->model));
    pthread_mutex_unlock(&p->mu);
    return cfg;
}

PACER_API int pacer_reload_config(pacer_t *p, const char *path, char **ret_error)
{
    if (!p || !path)
        return -EINVAL;
    pacer_config *cfg = pacer_config_load(path, ret_error);
    if (!cfg)
        return -EINVAL;
    pacer_set_config(p, cfg);
    pacer_config_unref(cfg);
    return 0;
}

PACER_API void pacer_flush(pacer_t *p)
{
    if (p)
        writer_flush(p->writer);
}

PACER_API void pacer_get_stats(pacer_t *p, pacer_stats *ret)
{
    memset(ret, 0, sizeof(*ret));
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    ret->events = p->events;
    ret->records = model_record_count(p->model);
    pthread_mutex_unlock(&p->mu);
    writer_stats ws;
    writer_get_stats(p->writer, &ws);
    ret->records_dropped = ws.dropped;
    ret->write_errors = ws.errors;
    uploader *u = __atomic_load_n(&p->uploader, __ATOMIC_ACQUIRE);
    if (u) {
        uploader_stats us;
        uploader_get_stats(u, &us);
        ret->batches_sent = us.batches_sent;
        ret->batches_refused = us.batches_refused;
        ret->upload_retries = us.retries;
        ret->configs_applied = us.configs;
        ret->upload_last_error = us.last_error;
        ret->records_rejected = us.rejected;
        snprintf(ret->upload_message, sizeof(ret->upload_message), "%s", us.message);
        ret->upload_grpc_status = us.grpc_status;
        snprintf(ret->upload_error, sizeof(ret->upload_error), "%s", us.error);
    } else {
        ret->batches_sent = p->final_upload.batches_sent;
        ret->batches_refused = p->final_upload.batches_refused;
        ret->upload_retries = p->final_upload.retries;
        ret->configs_applied = p->final_upload.configs;
        ret->upload_last_error = p->final_upload.last_error;
        ret->records_rejected = p->final_upload.rejected;
        snprintf(ret->upload_message, sizeof(ret->upload_message), "%s", p->final_upload.message);
        ret->upload_grpc_status = p->final_upload.grpc_status;
        snprintf(ret->upload_error, sizeof(ret->upload_error), "%s", p->final_upload.error);
    }
    ret->spool_errors = p->spool_errors;
}

/* The last failure as the server (or the way to it) gave it: "HTTP 400",
 * "gRPC UNAUTHENTICATED: unknown key", "connection failed". */
PACER_API void pacer_upload_failure(const pacer_stats *st, char *buf, size_t size)
{
    int g = st->upload_grpc_status;
    const char *name = grpc_status_name(g);
    if (g > 0 && name)
        snprintf(buf, size, "gRPC %s%s%s", name, st->upload_error[0] ? ": " : "", st->upload_error);
    else if (g > 0)
        snprintf(buf, size, "gRPC status %d%s%s", g, st->upload_error[0] ? ": " : "", st->upload_error);
    else if (st->upload_last_error)
        snprintf(buf, size, "HTTP %d", st->upload_last_error);
    else
        snprintf(buf, size, "connection failed");
}

/* ---- the process-wide default instance ---- */

static _Atomic(pacer_t *) default_instance;
static pthread_mutex_t default_mu = PTHREAD_MUTEX_INITIALIZER;

PACER_API int pacer_init(const pacer_options *opts, char **ret_error)
{
    pthread_mutex_lock(&default_mu);
    int r = -EALREADY;
    if (!atomic_load(&default_instance)) {
        pacer_t *p;
        r = pacer_new(opts, &p, ret_error);
        if (r == 0)
            atomic_store(&default_instance, p);
    }
    pthread_mutex_unlock(&default_mu);
    return r;
}

PACER_API pacer_t *pacer_default(void)
{
    return atomic_load(&default_instance);
}

PACER_API void pacer_shutdown(void)
{
    pthread_mutex_lock(&default_mu);
    pacer_finish(atomic_load(&default_instance));
    pthread_mutex_unlock(&default_mu);
}
