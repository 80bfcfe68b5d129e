/* What the request handlers of pacerd share: the store, the credentials,
 * the figures and the limits. Built once by main.c; the credentials
 * reload themselves (auth.h), the rest is read-only while serving. */
#ifndef PACER_SERVER_PACERD_H
#define PACER_SERVER_PACERD_H

#include "analysis/analysis.h"
#include "analysis/analysis_config.h"
#include "auth.h"
#include "ingest/clean.h"
#include "analysis/deliver.h"
#include "http/http.h"
#include "metrics.h"
#include "session.h"
#include "store/store.h"
#include "web.h"
#include "analysis/store_issues.h"

typedef struct pacerd {
    store *store;
    store *state; /* the application layer's tables: store on SQLite, --state's file on ClickHouse */
    auth *auth;
    server_metrics metrics;
    http_server *http; /* for /metrics */
    size_t max_body;         /* ingest bodies (--max-body: also the limit of a gzip body once inflated) */
    size_t max_config_bytes; /* PUT /v1/config */
    unsigned retention_days; /* ingest refuses what the store would drop at once (--retention-days) */
    /* the dashboard */
    web_assets *web;       /* its files, or NULL when not installed */
    char web_looked[1024]; /* where they were looked for: "DIR, DIR" */
    sessions *sessions;
    bool tls;             /* HTTPS: session cookies are Secure */
    /* the application layer */
    const ana_config *acfg;
    clean_limits clean;   /* ingest's cleaning, from acfg */
    issues_store *issues; /* its hooks on the store, the cleaning counts */
    analysis *analysis;
    deliver *deliver;
} pacerd;

/* The routes (router.c): http_app callbacks; ctx is the pacerd.
 *   preflight: the route, the credential and the key's limits, from the
 *              headers alone; OPTIONS and refusals are answered there;
 *   handle:    the route's handler, once the body is complete;
 *   encode:    every answer of an ingest route in OTLP/HTTP's shape;
 *   done:      counts the answer, charges a key what it stored;
 *   release:   the request ends: an upload that never reached the store
 *              is no longer on its way (store_coming). */
http_plan pacerd_preflight(void *ctx, http_request *rq, http_response *rs, size_t *ret_max_body);
void pacerd_handle(void *ctx, const http_request *rq, http_response *rs);
void pacerd_encode(void *ctx, const http_request *rq, http_response *rs);
void pacerd_done(void *ctx, const http_request *rq, const http_response *rs);
void pacerd_release(void *ctx, const http_request *rq);

/* Endpoint handlers. app is the app whose key authenticated the request.
 * ingest_handle sets rs->items to the records it stored; *coming (may be
 * NULL) is true while the request counts as on its way to the store
 * (store_coming), and it clears it as it submits. */
void ingest_handle(pacerd *d, const char *app, const http_request *rq, http_response *rs, bool *coming);
void query_handle(pacerd *d, const http_request *rq, http_response *rs);
/* The percentiles of kind over [from, to) (ns; INT64_MIN / INT64_MAX: no
 * bound), per group name (only: that name alone, or NULL), written into
 * out as the list /api/v1/pages (startup, requests, spans) answers: 0,
 * -EIO (the store) or -ENOMEM (query.c). */
int query_groups(pacerd *d, enum store_kind kind, const char *app, const char *version, int64_t from, int64_t to,
                 const char *only, jbuf *out);
/* GET /api/v1/traces/{id}, /api/v1/spans/search, /api/v1/logs, /api/v1/metrics (read_api.c). True when
 * the path is one of them (and the answer is set). */
bool read_api_handle(pacerd *d, const http_request *rq, http_response *rs);
/* malloc's thresholds for ingest (ingest.c): once, before any thread
 * starts. */
void ingest_malloc_setup(void);
/* An error answer (4xx, 5xx) to an ingest request, whoever made it,
 * becomes what OTLP/HTTP asks for: a google.rpc.Status in the request's
 * encoding and with its Content-Type (JSON when the request is in neither),
 * with a google.rpc.BadRequest for a 400, and Retry-After on 429 and 503
 * (1 s when none was set). Success answers are left as ingest_handle made
 * them (ingest.c). */
void ingest_encode_answer(const http_request *rq, http_response *rs);
void samples_handle(pacerd *d, const http_request *rq, http_response *rs);
/* The dashboard's reads: /api/v1/series, histogram, page_loads, startups,
 * request_stats, jank, frames (query_dash.c). True when the path is one
 * of them (and the answer is set). */
bool dash_handle(pacerd *d, const http_request *rq, http_response *rs);
/* GET /api/v1/schema: the words the other answers use (schema_api.c).
 * True when the path is it (and the answer is set). */
bool schema_api_handle(pacerd *d, const http_request *rq, http_response *rs);
/* /api/v1/issues, /api/v1/issues/{id} (GET, PATCH), /api/v1/cleaning
 * (issues_api.c). True when the path is one of them (and the answer is set). */
bool issues_api_handle(pacerd *d, const http_request *rq, http_response *rs);
/* The application layer's series of /metrics into b (issues_metrics in router.c). */
void issues_metrics_render(pacerd *d, jbuf *b);
void config_get(pacerd *d, const char *app, const http_request *rq, http_response *rs);
void config_put(pacerd *d, const char *app, const http_request *rq, http_response *rs);

#endif
