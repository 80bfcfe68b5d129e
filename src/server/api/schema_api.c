/* GET /api/v1/schema (api.h; docs/server.md, "The dashboard's reads"):
 * the words pacerd's other answers use, from the tables that make them,
 * so that a reader (the dashboard) keeps no list of its own to drift:
 *
 *   issues   severities from the most severe, statuses and kinds, as
 *            grading gives them and the issues API filters by them
 *            (issues_db.h);
 *   groups   per group kind of the percentile queries (page, startup,
 *            request, span: what /api/v1/series and histogram call
 *            "kind"), the metrics their answers hold under "metrics", in
 *            order, with the unit and meaning of each — the METRIC fields
 *            of the record schema (include/pacer/schema.h), as the store's
 *            layout took them (store_kind).
 *
 * It takes no parameter.
 */
#include "api.h"
#include "analysis/issues_db.h"

#include <pacer/base/json.h>

#include <string.h>

static void list(jbuf *b, const char *key, const char *const *words)
{
    jbuf_key(b, key);
    jbuf_open(b, '[');
    for (size_t i = 0; words[i]; i++)
        jbuf_str(b, words[i]);
    jbuf_close(b, ']');
}

bool schema_api_handle(const api_ctx *d, const http_request *rq, http_response *rs)
{
    (void)d;
    if (strcmp(rq->path, "/api/v1/schema") != 0)
        return false;
    static const char *const none[] = {NULL};
    char err[256];
    if (params_only(rq->query, none, err, sizeof err) < 0) {
        http_error(rs, 400, "%s", err);
        return true;
    }
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    jbuf_key(&b, "issues");
    jbuf_open(&b, '{');
    list(&b, "severities", issues_db_severities);
    list(&b, "statuses", issues_db_statuses);
    list(&b, "kinds", issues_db_kinds);
    jbuf_close(&b, '}');
    jbuf_key(&b, "groups");
    jbuf_open(&b, '{');
    for (enum store_kind k = 0; k < KIND_COUNT; k++) {
        const store_kind_desc *kd = store_layout_kind(k);
        jbuf_key(&b, kd->name);
        jbuf_open(&b, '{');
        jbuf_key(&b, "metrics");
        jbuf_open(&b, '[');
        for (size_t m = 0; m < kd->n_metrics; m++) {
            const pacer_field *f = kd->metric_fields[m];
            jbuf_open(&b, '{');
            jbuf_kv_str(&b, "name", kd->metrics[m]);
            jbuf_kv_str(&b, "unit", f && f->unit ? f->unit : "");
            jbuf_kv_str(&b, "meaning", f && f->meaning ? f->meaning : "");
            jbuf_close(&b, '}');
        }
        jbuf_close(&b, ']');
        jbuf_close(&b, '}');
    }
    jbuf_close(&b, '}');
    jbuf_close(&b, '}');
    http_json(rs, 200, &b);
    return true;
}
