/* pacerd's parts, wired by main.c and served by the router (router.c):
 * the store, the credentials, the figures, the contexts of ingest and of
 * the APIs, the dashboard's files and sessions, the application layer.
 * Built once at start; the credentials reload themselves (auth.h), the
 * rest is read-only while serving. */
#ifndef PACER_SERVER_PACERD_H
#define PACER_SERVER_PACERD_H

#include "analysis/analysis.h"
#include "analysis/analysis_config.h"
#include "analysis/deliver.h"
#include "analysis/issues_db.h"
#include "api/api.h"
#include "auth.h"
#include "grpc/grpc.h"
#include "http/http.h"
#include "ingest/ingest.h"
#include "metrics.h"
#include "session.h"
#include "store/store.h"
#include "web.h"

typedef struct pacerd {
    store *store;
    auth *auth;
    server_metrics metrics;
    http_server *http;  /* for /metrics */
    grpc_server *grpc;  /* the OTLP/gRPC front, or NULL */
    ingest_ctx ingest;  /* /v1/traces, /v1/logs, /v1/metrics */
    api_ctx api;        /* /api/v1/..., /v1/config/{app} */
    /* the dashboard */
    web_assets *web;       /* its files, or NULL when not installed */
    char web_looked[1024]; /* where they were looked for: "DIR, DIR" */
    sessions *sessions;
    bool tls;             /* HTTPS: session cookies are Secure */
    /* the application layer, or NULL where it runs on another instance */
    issues_db *issues;
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
http_plan router_preflight(void *ctx, http_request *rq, http_response *rs, size_t *ret_max_body);
void router_handle(void *ctx, const http_request *rq, http_response *rs);
void router_encode(void *ctx, const http_request *rq, http_response *rs);
void router_done(void *ctx, const http_request *rq, const http_response *rs);
void router_release(void *ctx, const http_request *rq);

/* The OTLP/gRPC front's callbacks (grpc_router.c; grpc_app): ctx is the
 * pacerd.
 *   preflight: the method, the key and its limits, from the headers;
 *   handle:    the Export, through the one ingest path;
 *   done:      charges a key what it stored, counts it;
 *   release:   a call that never reached the store is no longer on its
 *              way (store_coming). */
int grpc_router_preflight(void *ctx, grpc_call *call, grpc_reply *r);
void grpc_router_handle(void *ctx, const grpc_call *call, const uint8_t *msg, size_t len, grpc_reply *r);
void grpc_router_done(void *ctx, const grpc_call *call, const grpc_reply *r);
void grpc_router_release(void *ctx, grpc_call *call);

#endif
