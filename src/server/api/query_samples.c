/* Query API: GET /api/v1/samples?app=APP&version=V[&limit=N] (api.h).
 *
 * The stored page and start-up records of one version, for a regression
 * gate that compares a build with it (`pacer bench --baseline
 * server:VERSION`): each row comes back as a record of docs/records.md
 * with the fields that have a store column (the common ts, app, version,
 * session; a page's class, instance, kind, status, main and metrics; a
 * start-up's kind, metrics, outlier, main page), newest first, at most
 * `limit` of each type (default 10 000, at most 100 000), looked for among
 * the newest SCAN_MAX records of the app. "truncated": true says that
 * there may be more.
 */
#include "api.h"
#include "record_json.h"

#include <pacer/base/json.h>

#include <stdlib.h>
#include <string.h>

#define DEFAULT_LIMIT 10000
#define MAX_LIMIT 100000
#define SCAN_MAX 1000000

typedef struct samples_out {
    jbuf *b;
    const pacer_record_type *type;
} samples_out;

static void write_row(void *ctx, const store_row *row)
{
    samples_out *o = ctx;
    record_json_write(o->b, o->type, row, false);
}

void query_samples_handle(const api_ctx *d, const http_request *rq, http_response *rs)
{
    static const char *const known[] = {"app", "version", "limit", NULL};
    const char *app = NULL, *version = NULL;
    int64_t limit = DEFAULT_LIMIT;
    char err[256];
    int has_app = 0, has_version = 0;
    if (params_only(rq->query, known, err, sizeof err) < 0 ||
        (has_app = params_str(rq->query, "app", 256, &app, err, sizeof err)) < 0 ||
        (has_version = params_str(rq->query, "version", 256, &version, err, sizeof err)) < 0 ||
        params_int(rq->query, "limit", 1, MAX_LIMIT, &limit, err, sizeof err) < 0) {
        http_error(rs, 400, "%s", err);
        return;
    }
    if (!has_app || !has_version) {
        http_error(rs, 400, "app, version: required (/api/v1/samples?app=APP&version=V[&limit=N])");
        return;
    }
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    jbuf_kv_str(&b, "app", app);
    jbuf_kv_str(&b, "version", version);
    jbuf_kv_u64(&b, "limit", (uint64_t)limit);
    jbuf_key(&b, "records");
    jbuf_open(&b, '[');
    static const enum store_table tables[] = {TABLE_STARTUPS, TABLE_PAGE_LOADS};
    bool truncated = false;
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        samples_out o = {&b, store_layout_table(tables[i])->type};
        bool t = false;
        if (store_version_rows(d->store, tables[i], app, version, (size_t)limit, SCAN_MAX, write_row, &o, &t) < 0) {
            jbuf_free(&b);
            http_error(rs, 503, "the store could not be read");
            return;
        }
        truncated |= t;
    }
    jbuf_close(&b, ']');
    jbuf_kv_bool(&b, "truncated", truncated);
    jbuf_close(&b, '}');
    if (b.failed) {
        jbuf_free(&b);
        http_error(rs, 503, "out of memory");
        return;
    }
    http_json(rs, 200, &b);
}
