/* pacerd's own figures and GET /metrics (Prometheus text format 0.0.4).
 *
 * Counted here: requests by route and status, what the router refused and
 * why, records stored by signal (with a spans/s rate over the last 10 s),
 * credential reloads. Read from their owners at each scrape: the HTTP
 * layer's (connections, rejects, queue, queue wait, bodies in flight), the
 * store's (health, transactions and their latency, failures by cause, file
 * sizes, free disk, the cleaning counts), the application layer's
 * (analysis cycles, issues, deliveries) and the process's resident memory.
 * docs/server.md lists every series.
 */
#ifndef PACER_SERVER_METRICS_H
#define PACER_SERVER_METRICS_H

#include "analysis/analysis.h"
#include "analysis/deliver.h"
#include "grpc/grpc.h"
#include "http/http.h"
#include "ingest/clean.h"
#include "store/store.h"

#include <pacer/base/json.h>

#include <pthread.h>
#include <stdint.h>

/* The routes, as /metrics labels them. */
enum route {
    ROUTE_NONE, /* refused before a route was known */
    ROUTE_HEALTHZ,
    ROUTE_METRICS,
    ROUTE_TRACES,
    ROUTE_LOGS,
    ROUTE_METRICS_INGEST,
    ROUTE_CONFIG,
    ROUTE_QUERY, /* /api/v1/... */
    ROUTE_WEB,   /* the dashboard's files: /, /assets/... */
    ROUTE_AUTH,  /* the dashboard's login: /auth/... */
    ROUTE_OPTIONS_ANY,
    ROUTE_UNKNOWN, /* 404 */
    ROUTE_COUNT
};

/* Refusals made above the HTTP layer. */
enum metrics_reject {
    MREJ_UNAUTHORIZED,   /* 401 */
    MREJ_FORBIDDEN,      /* 403 */
    MREJ_RATE_LIMIT,     /* 429: the key's rate */
    MREJ_QUOTA,          /* 429: the key's daily quota */
    MREJ_STORE_QUEUE,    /* 429: --max-queue records wait for the writer */
    MREJ_STORE_FAILED,   /* 503: the store could not commit or read */
    MREJ_COUNT
};

#define METRICS_STATUSES 18
#define METRICS_WINDOW_S 10

typedef struct server_metrics {
    pthread_mutex_t lock;
    uint64_t requests[ROUTE_COUNT][METRICS_STATUSES];
    uint64_t rejects[MREJ_COUNT];
    uint64_t records[3]; /* spans, log records, data points: both fronts */
    uint64_t grpc_records[3]; /* of which the OTLP/gRPC front stored */
    uint64_t reloads, reload_failures;
    /* spans stored in each of the last seconds (mono second) */
    int64_t window_s[METRICS_WINDOW_S];
    uint64_t window_spans[METRICS_WINDOW_S];
    int64_t started_ns; /* mono */
} server_metrics;

void metrics_init(server_metrics *m);
void metrics_destroy(server_metrics *m);
void metrics_request(server_metrics *m, enum route r, unsigned status);
void metrics_reject(server_metrics *m, enum metrics_reject why);
/* records stored by an ingest route */
void metrics_stored(server_metrics *m, enum route r, uint64_t n);
/* records stored by the OTLP/gRPC front: signal 0 spans, 1 log records,
 * 2 data points */
void metrics_grpc_stored(server_metrics *m, int signal, uint64_t n);
void metrics_reload(server_metrics *m, bool ok);

/* What a scrape reads from the figures' owners. */
typedef struct metrics_sources {
    const http_stats *http;
    const grpc_stats *grpc; /* NULL: no OTLP/gRPC front */
    const store_stats *store;
    const store_health *health;
    size_t n_keys;
    const uint64_t *cleaned;         /* per enum clean_reason; NULL: the application layer runs elsewhere */
    const analysis_stats *analysis;  /* or NULL */
    const deliver_stats *deliveries; /* or NULL */
} metrics_sources;

/* The text of /metrics into b. */
void metrics_render(server_metrics *m, jbuf *b, const metrics_sources *src);

#endif
