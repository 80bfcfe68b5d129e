/* What the request handlers of pacerd share: the store, the credentials,
 * the figures and the limits. Built once by main.c; the credentials
 * reload themselves (auth.h), the rest is read-only while serving. */
#ifndef PACER_SERVER_PACERD_H
#define PACER_SERVER_PACERD_H

#include "auth.h"
#include "http.h"
#include "metrics.h"
#include "store.h"

typedef struct pacerd {
    store *store;
    auth *auth;
    server_metrics metrics;
    http_server *http; /* for /metrics */
    size_t max_body;         /* ingest bodies (--max-body: also the limit of a gzip body once inflated) */
    size_t max_config_bytes; /* PUT /v1/config */
    unsigned retention_days; /* ingest refuses what the store would drop at once (--retention-days) */
} pacerd;

/* The routes (router.c): http_app callbacks; ctx is the pacerd.
 *   preflight: the route, the credential and the key's limits, from the
 *              headers alone; OPTIONS and refusals are answered there;
 *   handle:    the route's handler, once the body is complete;
 *   done:      counts the answer, charges a key what it stored. */
http_plan pacerd_preflight(void *ctx, http_request *rq, http_response *rs, size_t *ret_max_body);
void pacerd_handle(void *ctx, const http_request *rq, http_response *rs);
void pacerd_done(void *ctx, const http_request *rq, const http_response *rs);

/* Endpoint handlers. app is the app whose key authenticated the request.
 * ingest_handle sets rs->items to the records it stored. */
void ingest_handle(pacerd *d, const char *app, const http_request *rq, http_response *rs);
void query_handle(pacerd *d, const http_request *rq, http_response *rs);
/* GET /api/v1/traces/{id}, /api/v1/spans/search, /api/v1/logs, /api/v1/metrics (read_api.c). True when
 * the path is one of them (and the answer is set). */
bool read_api_handle(pacerd *d, const http_request *rq, http_response *rs);
/* An error answer to an ingest request sent as protobuf becomes a
 * google.rpc.Status in protobuf, as OTLP/HTTP asks (ingest.c). */
void ingest_error_encoding(const http_request *rq, http_response *rs);
void samples_handle(pacerd *d, const http_request *rq, http_response *rs);
void config_get(pacerd *d, const char *app, const http_request *rq, http_response *rs);
void config_put(pacerd *d, const char *app, const http_request *rq, http_response *rs);

#endif
