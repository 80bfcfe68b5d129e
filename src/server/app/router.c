/* Routes, credentials and limits (pacerd.h): which handler answers a
 * request, once the credential grants it.
 *
 *   route                          methods              credential              runs on
 *   /healthz                       GET HEAD             none                    the I/O thread
 *   /metrics                       GET HEAD             admin                   the I/O thread
 *   /v1/traces, /v1/logs,          POST                 app key (rate, quota)   a worker
 *     /v1/metrics
 *   /v1/config/{app}               GET HEAD             app key of {app}, admin a worker
 *                                  PUT                  admin                   a worker
 *   /api/v1/...                    GET HEAD             admin                   a worker
 *   /api/v1/issues/{id}            GET HEAD PATCH       admin                   a worker
 *   /, /assets/...                 GET HEAD             none                    the I/O thread
 *   /auth/session                  GET HEAD             none                    the I/O thread
 *   /auth/login, /auth/logout      POST                 none (CSRF rules)       the I/O thread
 * The admin token is also a dashboard session (session.h): a request
 * with its cookie is the admin's, and one that changes something must
 * carry the session's CSRF token too (else 403).
 * OPTIONS on any of them (and OPTIONS *) answers 204 with Allow, without a
 * credential; another method 405 with Allow. Everything is decided on the
 * headers (router_preflight), so a refused request's body is never read:
 * 401 when no usable credential was sent, 403 when it does not grant the
 * endpoint, 429 with Retry-After when the key's rate or daily quota is
 * used up. Credentials are never echoed back nor logged. Routes other than
 * /api/v1 take no query parameters.
 */
#include "pacerd.h"

#include <pacer/base/clock.h>

#include <stdlib.h>
#include <string.h>

typedef struct route_state {
    enum route route;
    bool coming; /* an upload admitted on its headers, not yet submitted (store_coming) */
    auth_id id;
    const char *app; /* /v1/config/{app}: points into the path */
} route_state;

typedef struct route_def {
    enum route route;
    const char *allow;
} route_def;

static bool app_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 256)
        return false;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == '/' || (unsigned char)*s == 0x7f)
            return false;
    return true;
}

static route_def find_route(const char *path)
{
    if (strcmp(path, "/healthz") == 0)
        return (route_def){ROUTE_HEALTHZ, "GET, HEAD, OPTIONS"};
    if (strcmp(path, "/metrics") == 0)
        return (route_def){ROUTE_METRICS, "GET, HEAD, OPTIONS"};
    if (strcmp(path, "/v1/traces") == 0)
        return (route_def){ROUTE_TRACES, "POST, OPTIONS"};
    if (strcmp(path, "/v1/logs") == 0)
        return (route_def){ROUTE_LOGS, "POST, OPTIONS"};
    if (strcmp(path, "/v1/metrics") == 0)
        return (route_def){ROUTE_METRICS_INGEST, "POST, OPTIONS"};
    if (strncmp(path, "/v1/config/", 11) == 0 && app_name_ok(path + 11))
        return (route_def){ROUTE_CONFIG, "GET, HEAD, PUT, OPTIONS"};
    if (strncmp(path, "/api/v1/issues/", 15) == 0)
        return (route_def){ROUTE_QUERY, "GET, HEAD, PATCH, OPTIONS"};
    if (strncmp(path, "/api/v1/", 8) == 0)
        return (route_def){ROUTE_QUERY, "GET, HEAD, OPTIONS"};
    if (strcmp(path, "*") == 0)
        return (route_def){ROUTE_OPTIONS_ANY, "GET, HEAD, POST, PUT, PATCH, OPTIONS"};
    /* the dashboard: its files (web.c), its login and session (session.c) */
    if (web_path(path))
        return (route_def){ROUTE_WEB, "GET, HEAD, OPTIONS"};
    if (strcmp(path, "/auth/session") == 0)
        return (route_def){ROUTE_AUTH, "GET, HEAD, OPTIONS"};
    if (session_path(path))
        return (route_def){ROUTE_AUTH, "POST, OPTIONS"};
    return (route_def){ROUTE_UNKNOWN, NULL};
}

/* Whether method is in the Allow list (HEAD wherever GET is). */
static bool allowed(const char *allow, const char *method)
{
    size_t n = strlen(method);
    for (const char *p = allow; (p = strstr(p, method)); p += n)
        if ((p == allow || p[-1] == ' ') && (p[n] == ',' || p[n] == 0))
            return true;
    return false;
}

static bool is_ingest(enum route r)
{
    return r == ROUTE_TRACES || r == ROUTE_LOGS || r == ROUTE_METRICS_INGEST;
}

static http_plan refuse_credential(pacerd *d, http_response *rs, bool forbidden, const char *fmt, const char *arg)
{
    if (!forbidden)
        rs->challenge = true;
    metrics_reject(&d->metrics, forbidden ? MREJ_FORBIDDEN : MREJ_UNAUTHORIZED);
    http_error(rs, forbidden ? 403 : 401, fmt, arg);
    return HTTP_ANSWERED;
}

http_plan router_preflight(void *ctx, http_request *rq, http_response *rs, size_t *ret_max_body)
{
    pacerd *d = ctx;
    route_state *st = calloc(1, sizeof *st);
    if (!st) {
        rs->retry_after = 1;
        http_error(rs, 503, "out of memory");
        return HTTP_ANSWERED;
    }
    rq->state = st;
    route_def def = find_route(rq->path);
    st->route = def.route;
    *ret_max_body = 0;
    if (def.route == ROUTE_UNKNOWN) {
        if (strncmp(rq->path, "/v1/config/", 11) == 0)
            http_error(rs, 404, "expected /v1/config/APP (APP: 1-256 bytes, no spaces, control characters or '/')");
        else
            http_error(rs, 404, "no such endpoint: %.200s", rq->path);
        return HTTP_ANSWERED;
    }
    if (strcmp(rq->method, "OPTIONS") == 0) {
        rs->status = 204;
        rs->allow = def.allow;
        return HTTP_ANSWERED;
    }
    if (def.route == ROUTE_OPTIONS_ANY || !allowed(def.allow, rq->method)) {
        rs->allow = def.allow;
        http_error(rs, 405, "%.200s: the methods are %s", rq->path, def.allow);
        return HTTP_ANSWERED;
    }
    bool get = strcmp(rq->method, "GET") == 0 || strcmp(rq->method, "HEAD") == 0;

    const char *token = auth_bearer(http_header(rq, "Authorization"));
    bool cookie = false;
    const char *csrf_why = NULL;
    if (session_identify(d->sessions, d->auth, rq, &st->id, &cookie, &csrf_why) < 0 &&
        strcmp(rq->path, "/auth/login") != 0)
        return refuse_credential(d, rs, true, "%s", csrf_why);
    enum auth_who who = st->id.who;
    http_plan plan = HTTP_QUEUED;
    switch (def.route) {
    case ROUTE_HEALTHZ:
        plan = HTTP_INLINE;
        break;
    case ROUTE_METRICS:
        if (who != AUTH_ADMIN)
            return refuse_credential(d, rs, who == AUTH_KEY, "%s", "/metrics takes the admin token: "
                                                                   "Authorization: Bearer TOKEN");
        plan = HTTP_INLINE;
        break;
    case ROUTE_TRACES:
    case ROUTE_LOGS:
    case ROUTE_METRICS_INGEST: {
        if (who != AUTH_KEY) {
            return refuse_credential(d, rs, who == AUTH_ADMIN, "%s",
                                     who == AUTH_ADMIN ? "ingest takes an app key, not the admin token"
                                     : token           ? "unknown key"
                                                       : "send the app's key: Authorization: Bearer KEY");
        }
        unsigned retry;
        char why[256];
        if (auth_limit(d->auth, st->id.key_id, &retry, why, sizeof why) < 0) {
            metrics_reject(&d->metrics, strstr(why, "daily") ? MREJ_QUOTA : MREJ_RATE_LIMIT);
            rs->retry_after = (int)retry;
            http_error(rs, 429, "%s: retry after %u s", why, retry);
            return HTTP_ANSWERED;
        }
        *ret_max_body = __atomic_load_n(&d->ingest.max_body, __ATOMIC_RELAXED); /* a reload may change it */
        st->coming = true;
        store_coming(d->store, 1);
        break;
    }
    case ROUTE_CONFIG:
        st->app = rq->path + 11;
        if (who == AUTH_NONE)
            return refuse_credential(d, rs, false, "%s", token ? "unknown token"
                                                               : "send a token: Authorization: Bearer TOKEN");
        if (get && who == AUTH_KEY && strcmp(st->id.app, st->app) != 0)
            return refuse_credential(d, rs, true, "%s", "this key is for another app");
        if (!get && who != AUTH_ADMIN)
            return refuse_credential(d, rs, true, "%s", "changing a config takes the admin token");
        if (!get)
            *ret_max_body = d->api.max_config_bytes;
        break;
    case ROUTE_QUERY:
        if (who != AUTH_ADMIN)
            return refuse_credential(d, rs, who == AUTH_KEY, "%s",
                                     "queries take the admin token: Authorization: Bearer TOKEN");
        if (!get)
            *ret_max_body = 4096; /* PATCH /api/v1/issues/{id} */
        return HTTP_QUEUED; /* query.c checks its parameters */
    case ROUTE_WEB:
        plan = HTTP_INLINE; /* from memory */
        break;
    case ROUTE_AUTH:
        plan = HTTP_INLINE;
        if (strcmp(rq->path, "/auth/login") == 0)
            *ret_max_body = 8192;
        break;
    default:
        break;
    }
    char err[256];
    static const char *const none[] = {NULL};
    if (params_only(rq->query, none, err, sizeof err) < 0) {
        http_error(rs, 400, "%s", err);
        return HTTP_ANSWERED;
    }
    return plan;
}

static void healthz(pacerd *d, http_response *rs)
{
    store_health h;
    /* the store answers from its last transactions; a probe, when there
     * was none for a second, is waited for at most 50 ms */
    store_health_get(d->store, 50, &h);
    if (h.fault == STORE_OK) {
        http_json_text(rs, 200, "{\"status\":\"ok\"}");
        return;
    }
    static const char *const names[STORE_FAULT_COUNT] = {"ok", "disk_full", "read_only", "corrupt", "io", "stuck"};
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    jbuf_kv_str(&b, "status", names[h.fault]);
    jbuf_kv_str(&b, "error", h.reason);
    jbuf_kv_i64(&b, "since", h.since_ns / 1000000000LL);
    jbuf_close(&b, '}');
    http_json(rs, 503, &b);
}

/* A tally of the store (its cleaning counts) into its reason's slot. */
static void add_cleaned(void *ctx, const char *reason, uint64_t count, int64_t last_ns)
{
    (void)last_ns;
    uint64_t *cleaned = ctx;
    for (int k = 1; k < CLEAN_COUNT; k++)
        if (strcmp(reason, clean_reason_name((enum clean_reason)k)) == 0)
            cleaned[k] = count;
}

static void metrics_page(pacerd *d, http_response *rs)
{
    http_stats hs;
    store_stats ss;
    store_health h;
    http_get_stats(d->http, &hs);
    store_get_stats(d->store, &ss);
    store_health_get(d->store, 0, &h);
    grpc_stats gs;
    if (d->grpc)
        grpc_get_stats(d->grpc, &gs);
    metrics_sources src = {&hs, d->grpc ? &gs : NULL, &ss, &h, auth_n_keys(d->auth), NULL, NULL, NULL};
    uint64_t cleaned[CLEAN_COUNT] = {0};
    analysis_stats as;
    deliver_stats ds;
    if (d->issues) {
        store_tallies(d->store, NULL, add_cleaned, cleaned);
        src.cleaned = cleaned;
    }
    if (d->analysis) {
        analysis_get_stats(d->analysis, &as);
        src.analysis = &as;
    }
    if (d->deliver) {
        deliver_get_stats(d->deliver, &ds);
        src.deliveries = &ds;
    }
    jbuf b;
    jbuf_init(&b);
    metrics_render(&d->metrics, &b, &src);
    size_t len;
    char *text = jbuf_steal(&b, &len);
    if (!text) {
        http_error(rs, 503, "out of memory");
        return;
    }
    rs->status = 200;
    rs->body = text;
    rs->len = len;
    rs->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

void router_handle(void *ctx, const http_request *rq, http_response *rs)
{
    pacerd *d = ctx;
    route_state *st = rq->state;
    switch (st->route) {
    case ROUTE_HEALTHZ: healthz(d, rs); return;
    case ROUTE_METRICS: metrics_page(d, rs); return;
    case ROUTE_TRACES:
    case ROUTE_LOGS:
    case ROUTE_METRICS_INGEST:
        ingest_http_handle(&d->ingest, st->id.app, rq, rs, &st->coming);
        if (rs->status == 429)
            metrics_reject(&d->metrics, MREJ_STORE_QUEUE);
        else if (rs->status == 503)
            metrics_reject(&d->metrics, MREJ_STORE_FAILED);
        return;
    case ROUTE_CONFIG:
        if (strcmp(rq->method, "PUT") == 0)
            config_api_put(&d->api, st->app, rq, rs);
        else
            config_api_get(&d->api, st->app, rq, rs);
        if (rs->status == 503)
            metrics_reject(&d->metrics, MREJ_STORE_FAILED);
        return;
    case ROUTE_QUERY:
        if (strcmp(rq->path, "/api/v1/samples") == 0)
            query_samples_handle(&d->api, rq, rs);
        else if (!issues_api_handle(&d->api, rq, rs) && !read_api_handle(&d->api, rq, rs) &&
                 !query_dash_handle(&d->api, rq, rs))
            query_handle(&d->api, rq, rs);
        if (rs->status == 503)
            metrics_reject(&d->metrics, MREJ_STORE_FAILED);
        return;
    case ROUTE_WEB: web_serve(d->web, d->web_looked, rq, rs); return;
    case ROUTE_AUTH: session_handle(d->sessions, d->auth, d->tls, rq, rs); return;
    default: http_error(rs, 500, "internal error: no handler for this route"); return;
    }
}

void router_encode(void *ctx, const http_request *rq, http_response *rs)
{
    (void)ctx;
    const char *p = rq->path;
    if (p && (strcmp(p, "/v1/traces") == 0 || strcmp(p, "/v1/logs") == 0 || strcmp(p, "/v1/metrics") == 0))
        ingest_http_encode(rq, rs);
}

void router_done(void *ctx, const http_request *rq, const http_response *rs)
{
    pacerd *d = ctx;
    const route_state *st = rq->state;
    enum route r = st ? st->route : ROUTE_NONE;
    metrics_request(&d->metrics, r, rs->status);
    if (st && is_ingest(r) && rs->status == 200 && rs->items) {
        auth_charge(d->auth, st->id.key_id, rs->items);
        metrics_stored(&d->metrics, r, rs->items);
    }
}

void router_release(void *ctx, const http_request *rq)
{
    pacerd *d = ctx;
    route_state *st = rq->state;
    if (st && st->coming)
        store_coming(d->store, -1);
}
