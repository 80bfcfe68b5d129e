/* The query and read APIs, the dashboard's reads, the issues API and the
 * config service: the handlers of /api/v1/... and /v1/config/{app}, and
 * what they work with. The router (app/router.c) has checked the route,
 * the method and the credential; each handler checks its parameters
 * (http/params.h) and answers. Any worker thread.
 */
#ifndef PACER_SERVER_API_H
#define PACER_SERVER_API_H

#include "analysis/analysis.h"
#include "analysis/analysis_config.h"
#include "analysis/issues_db.h"
#include "http/http.h"
#include "store/store.h"

#include <pacer/base/json.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the handlers work with; read-only while serving. */
typedef struct api_ctx {
    store *store;
    issues_db *issues;       /* the issue tables, or NULL: the application layer runs on another instance */
    analysis *analysis;      /* or NULL (likewise) */
    const ana_config *acfg;
    size_t max_config_bytes; /* PUT /v1/config */
} api_ctx;

/* The answer of a read (api.c): b (a complete JSON text) with 200, or
 * 503 naming why when r < 0 — "out of memory" for -ENOMEM or a JSON
 * text that could not be written, else `failed`. b is freed either way. */
void api_answer(http_response *rs, jbuf *b, int r, const char *failed);

/* GET /api/v1/{apps,pages,startup,requests,spans} (query.c). */
void query_handle(const api_ctx *d, const http_request *rq, http_response *rs);
/* The percentiles of kind over [from, to) (ns; INT64_MIN / INT64_MAX: no
 * bound), per group name (only: that name alone, or NULL), written into
 * out as the list /api/v1/pages (startup, requests, spans) answers: 0,
 * -EIO (the store) or -ENOMEM (query.c). */
int query_groups(const api_ctx *d, enum store_kind kind, const char *app, const char *version, int64_t from,
                 int64_t to, const char *only, jbuf *out);
/* GET /api/v1/traces/{id}, /api/v1/spans/search, /api/v1/logs, /api/v1/metrics (read_api.c). True when
 * the path is one of them (and the answer is set). */
bool read_api_handle(const api_ctx *d, const http_request *rq, http_response *rs);
/* GET /api/v1/samples (query_samples.c). */
void query_samples_handle(const api_ctx *d, const http_request *rq, http_response *rs);
/* The dashboard's reads: /api/v1/series, histogram, page_loads, startups,
 * request_stats, jank, frames (query_dash.c). True when the path is one
 * of them (and the answer is set). */
bool query_dash_handle(const api_ctx *d, const http_request *rq, http_response *rs);
/* GET /api/v1/schema: the words the other answers use (schema_api.c).
 * True when the path is it (and the answer is set). */
bool schema_api_handle(const api_ctx *d, const http_request *rq, http_response *rs);
/* /api/v1/issues, /api/v1/issues/{id} (GET, PATCH), /api/v1/cleaning
 * (issues_api.c). True when the path is one of them (and the answer is set). */
bool issues_api_handle(const api_ctx *d, const http_request *rq, http_response *rs);
/* GET, PUT /v1/config/{app} (config_api.c). */
void config_api_get(const api_ctx *d, const char *app, const http_request *rq, http_response *rs);
void config_api_put(const api_ctx *d, const char *app, const http_request *rq, http_response *rs);

#endif
