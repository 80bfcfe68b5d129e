/* The issues API (api.h; docs/server.md, "Issues API"), admin token:
 *
 *   GET   /api/v1/issues?app=A[&status=S][&kind=K][&severity=V][&version=X][&limit=N][&cursor=C]
 *         the app's issues, the most recently seen first; status, kind and
 *         severity take one value or a comma-separated list
 *   GET   /api/v1/issues/{id}
 *   PATCH /api/v1/issues/{id}   {"status":"resolved"} or {"status":"ongoing"}
 *   GET   /api/v1/cleaning?app=A   records kept out of the statistics, by reason
 *
 * Parameters are strict, as everywhere in /api/v1 (params.h): an unknown
 * one, a value given twice, a number out of range, an unknown status, kind
 * or severity answer 400 naming the parameter.
 */
#include "api.h"
#include "analysis/issue_json.h"

#include <pacer/base/json.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_LIMIT 50
#define MAX_LIMIT ISSUE_LIST_MAX
#define MAX_PATCH 4096


static const char *known(const char *const *list, const char *s, size_t n)
{
    for (size_t i = 0; list[i]; i++)
        if (strlen(list[i]) == n && memcmp(list[i], s, n) == 0)
            return list[i];
    return NULL;
}

/* A comma-separated list of known values into out (max entries, then
 * NULL). -EINVAL with "NAME: ..." in err. */
static int value_list(const params *q, const char *name, const char *const *allowed, const char **out, size_t max,
                      char *err, size_t err_size)
{
    const param *p = params_find(q, name);
    out[0] = NULL;
    if (!p)
        return 0;
    size_t n = 0;
    const char *s = p->value;
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        const char *v = known(allowed, s, len);
        if (!v || n == max) {
            size_t o = (size_t)snprintf(err, err_size, "%s: expected %s of", name, n == max ? "at most a few" : "one or more");
            for (size_t i = 0; allowed[i] && o < err_size; i++)
                o += (size_t)snprintf(err + o, err_size - o, "%s %s", i ? "," : "", allowed[i]);
            if (o < err_size)
                snprintf(err + o, err_size - o, ", separated by commas");
            return -EINVAL;
        }
        out[n++] = v;
        out[n] = NULL;
        if (!comma)
            return 0;
        s = comma + 1;
    }
}

/* cursor: "LASTSEEN_NS.ID" */
static bool parse_cursor(const char *c, iss_query *q)
{
    const char *dot = strchr(c, '.');
    if (!dot || dot == c || strlen(dot + 1) != ISSUE_ID_LEN || (size_t)(dot - c) > 19)
        return false;
    int64_t ns = 0;
    for (const char *p = c; p < dot; p++) {
        if (*p < '0' || *p > '9')
            return false;
        ns = ns * 10 + (*p - '0');
    }
    for (const char *p = dot + 1; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    q->before_ns = ns;
    memcpy(q->before_id, dot + 1, ISSUE_ID_LEN + 1);
    return true;
}

static void list_issues(const api_ctx *d, const http_request *rq, http_response *rs)
{
    static const char *const names[] = {"app", "status", "kind", "severity", "version", "limit", "cursor", NULL};
    char err[512];
    iss_query q = {0};
    int64_t limit = DEFAULT_LIMIT;
    const char *cursor = NULL;
    int has_app;
    if (params_only(rq->query, names, err, sizeof err) < 0 ||
        (has_app = params_str(rq->query, "app", 256, &q.app, err, sizeof err)) < 0 ||
        params_str(rq->query, "version", 256, &q.version, err, sizeof err) < 0 ||
        params_int(rq->query, "limit", 1, MAX_LIMIT, &limit, err, sizeof err) < 0 ||
        params_str(rq->query, "cursor", 64, &cursor, err, sizeof err) < 0 ||
        value_list(rq->query, "status", issues_db_statuses, q.statuses, 7, err, sizeof err) < 0 ||
        value_list(rq->query, "kind", issues_db_kinds, q.kinds, 15, err, sizeof err) < 0 ||
        value_list(rq->query, "severity", issues_db_severities, q.severities, ISS_N_SEVERITIES, err, sizeof err) < 0) {
        http_error(rs, 400, "%s", err);
        return;
    }
    if (!has_app) {
        http_error(rs, 400, "app: required (GET /api/v1/issues?app=APP)");
        return;
    }
    if (cursor && !parse_cursor(cursor, &q)) {
        http_error(rs, 400, "cursor: not a cursor this endpoint gave (\"next\")");
        return;
    }
    q.limit = (size_t)limit;
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    jbuf_kv_str(&b, "app", q.app);
    int r = issue_json_list(d->issues, d->acfg, &q, &b);
    jbuf_close(&b, '}');
    api_answer(rs, &b, r, "the store could not be read: retry later");
}

static void answer_issue(const api_ctx *d, const char *id, http_response *rs)
{
    jbuf b;
    jbuf_init(&b);
    int r = issue_json_one(d->issues, d->acfg, id, &b);
    if (r == -ENOENT) {
        jbuf_free(&b);
        http_error(rs, 404, "no issue %s", id);
        return;
    }
    api_answer(rs, &b, r, "the store could not be read: retry later");
}

/* The body of a PATCH: {"status": "resolved" | "ongoing"} and nothing else. */
static const char *patch_status(const http_request *rq, char *err, size_t err_size)
{
    if (rq->body_len > MAX_PATCH) {
        snprintf(err, err_size, "the body is larger than %d bytes", MAX_PATCH);
        return NULL;
    }
    char buf[MAX_PATCH + 1];
    memcpy(buf, rq->body, rq->body_len);
    jread r;
    jread_init(&r, buf, rq->body_len, NULL, JREAD_NO_NUL);
    const char *status = NULL;
    if (!jread_enter_object(&r)) {
        snprintf(err, err_size, "expected a JSON object {\"status\": \"resolved\"}");
        return NULL;
    }
    const char *k;
    size_t kl;
    int m;
    while ((m = jread_member(&r, &k, &kl)) > 0) {
        jvalue v;
        if (!(kl == 6 && memcmp(k, "status", 6) == 0)) {
            snprintf(err, err_size, "%.*s: not a member a PATCH takes (only \"status\")", (int)(kl > 40 ? 40 : kl), k);
            return NULL;
        }
        if (!jread_value(&r, &v))
            break;
        static const char *const settable[] = {"resolved", "ongoing", NULL};
        if (v.type != JT_STRING || !(status = known(settable, v.s, v.len))) {
            snprintf(err, err_size, "status: expected \"resolved\" or \"ongoing\"");
            return NULL;
        }
    }
    if (m < 0 || !jread_end(&r, "object")) {
        snprintf(err, err_size, "invalid JSON at byte %zu: %s", r.error_at, r.message);
        return NULL;
    }
    if (!status)
        snprintf(err, err_size, "status: required ({\"status\": \"resolved\"})");
    return status;
}

static bool id_ok(const char *s)
{
    if (strlen(s) != ISSUE_ID_LEN)
        return false;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return false;
    return true;
}

static void reason_json(void *ctx, const char *reason, uint64_t count, int64_t last_ns)
{
    jbuf *b = ctx;
    jbuf_open(b, '{');
    jbuf_kv_str(b, "reason", reason);
    jbuf_kv_i64(b, "count", (int64_t)count);
    jbuf_kv_i64(b, "last_seen", last_ns / 1000000000LL);
    jbuf_close(b, '}');
}

static void clean_answer(const api_ctx *d, const http_request *rq, http_response *rs)
{
    static const char *const names[] = {"app", NULL};
    char err[256];
    const char *app = NULL;
    int has;
    if (params_only(rq->query, names, err, sizeof err) < 0 ||
        (has = params_str(rq->query, "app", 256, &app, err, sizeof err)) < 0) {
        http_error(rs, 400, "%s", err);
        return;
    }
    if (!has) {
        http_error(rs, 400, "app: required (GET /api/v1/cleaning?app=APP)");
        return;
    }
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    jbuf_kv_str(&b, "app", app);
    /* the store's tallies: ingest's cleaning counts (every instance's, on
     * a shared store) */
    jbuf_key(&b, "reasons");
    jbuf_open(&b, '[');
    int r = store_tallies(d->store, app, reason_json, &b);
    jbuf_close(&b, ']');
    jbuf_close(&b, '}');
    api_answer(rs, &b, r, "the store could not be read: retry later");
}

bool issues_api_handle(const api_ctx *d, const http_request *rq, http_response *rs)
{
    bool patch = strcmp(rq->method, "PATCH") == 0;
    if (!d->issues && (strcmp(rq->path, "/api/v1/cleaning") == 0 || strcmp(rq->path, "/api/v1/issues") == 0 ||
                       strncmp(rq->path, "/api/v1/issues/", 15) == 0)) {
        http_error(rs, 501, "the application layer (issues, cleaning counts) runs on the %s instance given "
                   "--state, not this one", store_backend_name(d->store));
        return true;
    }
    if (strcmp(rq->path, "/api/v1/cleaning") == 0) {
        clean_answer(d, rq, rs);
        return true;
    }
    if (strcmp(rq->path, "/api/v1/issues") == 0) {
        list_issues(d, rq, rs);
        return true;
    }
    if (strncmp(rq->path, "/api/v1/issues/", 15) != 0)
        return false;
    const char *id = rq->path + 15;
    char err[256];
    static const char *const none[] = {NULL};
    if (params_only(rq->query, none, err, sizeof err) < 0) {
        http_error(rs, 400, "%s", err);
        return true;
    }
    if (!id_ok(id)) {
        http_error(rs, 404, "expected /api/v1/issues/ID (ID: 16 lowercase hex digits, as the list gives it)");
        return true;
    }
    if (!patch) {
        answer_issue(d, id, rs);
        return true;
    }
    const char *status = patch_status(rq, err, sizeof err);
    if (!status) {
        http_error(rs, 400, "%s", err);
        return true;
    }
    int r = d->analysis ? analysis_set_status(d->analysis, id, status) : -EIO;
    if (r == -ENOENT)
        http_error(rs, 404, "no issue %s", id);
    else if (r < 0)
        http_error(rs, 503, "the store could not commit the change: retry later");
    else
        answer_issue(d, id, rs);
    return true;
}
