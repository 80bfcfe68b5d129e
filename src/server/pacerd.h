/* What the request handlers of pacerd share: the store, the credentials and
 * the limits. Built once by main.c; read-only while serving. */
#ifndef PACER_SERVER_PACERD_H
#define PACER_SERVER_PACERD_H

#include "auth.h"
#include "http.h"
#include "store.h"

typedef struct pacerd {
    store *store;
    auth *auth;
    size_t max_config_bytes;
    size_t max_body; /* --max-body: also the limit of a gzip body once inflated */
} pacerd;

/* Routes one request (router.c): authenticates it and calls the handler of
 * its endpoint. An http_handler; ctx is the pacerd. */
void pacerd_route(void *ctx, const http_request *rq, http_response *rs);

/* Endpoint handlers. app is the app whose key authenticated the request. */
void ingest_handle(pacerd *d, const char *app, const http_request *rq, http_response *rs);
void query_handle(pacerd *d, const http_request *rq, http_response *rs);
/* GET /api/v1/traces/{id}, /api/v1/spans/search, /api/v1/logs, /api/v1/metrics (read_api.c). True when
 * the path is one of them (and the answer is set). */
bool read_api_handle(pacerd *d, const http_request *rq, http_response *rs);
/* An error answer to an ingest request sent as protobuf becomes a
 * google.rpc.Status in protobuf, as OTLP/HTTP asks (ingest.c). */
void ingest_error_encoding(const http_request *rq, http_response *rs);
void config_get(pacerd *d, const char *app, const http_request *rq, http_response *rs);
void config_put(pacerd *d, const char *app, const http_request *rq, http_response *rs);

#endif
