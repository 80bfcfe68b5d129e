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
} pacerd;

/* Routes one request (router.c): authenticates it and calls the handler of
 * its endpoint. An http_handler; ctx is the pacerd. */
void pacerd_route(void *ctx, const http_request *rq, http_response *rs);

/* Endpoint handlers. app is the app whose key authenticated the request. */
void ingest_handle(pacerd *d, const char *app, const http_request *rq, http_response *rs);
void query_handle(pacerd *d, const http_request *rq, http_response *rs);
void samples_handle(pacerd *d, const http_request *rq, http_response *rs);
void config_get(pacerd *d, const char *app, const http_request *rq, http_response *rs);
void config_put(pacerd *d, const char *app, const http_request *rq, http_response *rs);

#endif
