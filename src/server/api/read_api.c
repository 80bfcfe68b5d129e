/* The read APIs (api.h; docs/server.md, "Reading data back"):
 *
 *   GET /api/v1/traces/{traceId}   every span of a trace, with its events
 *   GET /api/v1/spans/search       plain spans by app, version, name,
 *                                  attributes, duration, time
 *   GET /api/v1/logs               log records by app, severity, time, text
 *   GET /api/v1/metrics            data points of a metric by attributes
 *
 * Query parameters are parsed strictly, here: a parameter the endpoint does
 * not take, a number out of range or with trailing text, text that is not
 * UTF-8 or holds a NUL, a parameter given twice (other than attr) — each
 * answers 400 naming the parameter. The store bounds every answer
 * (store.h, "reading rows back"); a "next" cursor continues it.
 */
#include "ingest/otlp.h"
#include "api.h"

#include <pacer/base/utf8.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_LIMIT 100
#define MAX_LIMIT 1000
#define MAX_TEXT 1024

/* The parameters of one request, checked. */
typedef struct rparams {
    const char *const *allowed; /* NULL-terminated */
    char bad[300];              /* the first problem, or "" */
    char *app, *version, *name, *text, *cursor, *limit, *from, *to, *from_ns, *to_ns, *min_ms, *max_ms, *severity;
    size_t n_attrs;
    char *attr_keys[STORE_MAX_FILTERS], *attr_values[STORE_MAX_FILTERS];
} rparams;

static void rparams_free(rparams *p)
{
    char **all[] = {&p->app, &p->version, &p->name, &p->text, &p->cursor, &p->limit, &p->from, &p->to,
                    &p->from_ns, &p->to_ns, &p->min_ms, &p->max_ms, &p->severity};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(*all[i]);
    for (size_t i = 0; i < p->n_attrs; i++) {
        free(p->attr_keys[i]);
        free(p->attr_values[i]);
    }
}

static void set_bad(rparams *p, const char *fmt, const char *name)
{
    if (!p->bad[0])
        snprintf(p->bad, sizeof p->bad, fmt, name);
}

static char **slot_of(rparams *p, const char *key, size_t kl)
{
    static const char *const names[] = {"app", "version", "name", "text", "cursor", "limit", "from", "to",
                                        "from_ns", "to_ns", "min_ms", "max_ms", "severity"};
    char **slots[] = {&p->app, &p->version, &p->name, &p->text, &p->cursor, &p->limit, &p->from, &p->to,
                      &p->from_ns, &p->to_ns, &p->min_ms, &p->max_ms, &p->severity};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == kl && memcmp(names[i], key, kl) == 0)
            return slots[i];
    return NULL;
}

static bool on_param(void *ctx, const char *key, size_t kl, const char *value, size_t vl)
{
    rparams *p = ctx;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(kl > 40 ? 40 : kl), key);
    if (!utf8_valid(key, kl) || memchr(key, 0, kl)) {
        set_bad(p, "a parameter name is not valid UTF-8%s", "");
        return false;
    }
    bool allowed = false;
    for (size_t i = 0; p->allowed[i]; i++)
        allowed |= strlen(p->allowed[i]) == kl && memcmp(p->allowed[i], key, kl) == 0;
    if (!allowed) {
        set_bad(p, "%s: not a parameter of this endpoint (see docs/server.md)", name);
        return false;
    }
    if (vl > MAX_TEXT || memchr(value, 0, vl) || !utf8_valid(value, vl)) {
        set_bad(p, "%s: expected UTF-8 text of at most 1024 bytes, without NUL", name);
        return false;
    }
    if (kl == 4 && memcmp(key, "attr", 4) == 0) {
        const char *eq = memchr(value, '=', vl);
        if (!eq || eq == value) {
            set_bad(p, "%s: expected KEY=VALUE", name);
            return false;
        }
        if (p->n_attrs == STORE_MAX_FILTERS) {
            set_bad(p, "%s: at most 8 attribute filters", name);
            return false;
        }
        p->attr_keys[p->n_attrs] = strndup(value, (size_t)(eq - value));
        p->attr_values[p->n_attrs] = strndup(eq + 1, vl - (size_t)(eq + 1 - value));
        p->n_attrs++;
        return true;
    }
    char **slot = slot_of(p, key, kl);
    if (!slot)
        return true;
    if (*slot) {
        set_bad(p, "%s: given twice", name);
        return false;
    }
    *slot = strndup(value, vl);
    return true;
}

/* An integer in [min, max], all of the text. */
static bool int_in(const char *s, int64_t min, int64_t max, int64_t *ret)
{
    if (!s || !*s || strspn(s, "-0123456789") != strlen(s))
        return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return false;
    *ret = v;
    return true;
}

static bool number_in(const char *s, double min, double max, double *ret)
{
    if (!s || !*s || strspn(s, "+-0123456789.eE") != strlen(s))
        return false;
    char *end;
    double v = strtod(s, &end);
    if (*end || !isfinite(v) || v < min || v > max)
        return false;
    *ret = v;
    return true;
}

#define MAX_UNIX_S 9223372035LL /* the last second whose ns fit in 63 bits */

/* from/to (unix seconds) or from_ns/to_ns; [from, to). */
static void parse_range(rparams *p, int64_t *from, int64_t *to)
{
    int64_t v;
    *from = 0;
    *to = INT64_MAX;
    if (p->from && p->from_ns)
        set_bad(p, "%s: give from or from_ns, not both", "from");
    if (p->to && p->to_ns)
        set_bad(p, "%s: give to or to_ns, not both", "to");
    if (p->from && !(int_in(p->from, 0, MAX_UNIX_S, &v) && (*from = v * 1000000000LL, true)))
        set_bad(p, "%s: expected unix seconds (an integer from 0)", "from");
    if (p->to && !(int_in(p->to, 0, MAX_UNIX_S, &v) && (*to = v * 1000000000LL, true)))
        set_bad(p, "%s: expected unix seconds (an integer from 0)", "to");
    if (p->from_ns && !int_in(p->from_ns, 0, INT64_MAX, from))
        set_bad(p, "%s: expected unix nanoseconds (an integer from 0)", "from_ns");
    if (p->to_ns && !int_in(p->to_ns, 0, INT64_MAX, to))
        set_bad(p, "%s: expected unix nanoseconds (an integer from 0)", "to_ns");
}

static void parse_page(rparams *p, store_cursor *after, size_t *limit)
{
    int64_t v;
    *limit = DEFAULT_LIMIT;
    if (p->limit) {
        if (int_in(p->limit, 1, MAX_LIMIT, &v))
            *limit = (size_t)v;
        else
            set_bad(p, "%s: expected an integer from 1 to 1000", "limit");
    }
    after->set = false;
    if (p->cursor) {
        const char *dot = strchr(p->cursor, '.');
        char ts[32];
        size_t n = dot ? (size_t)(dot - p->cursor) : 0;
        if (!dot || n == 0 || n >= sizeof ts) {
            set_bad(p, "%s: expected the \"next\" value of an earlier answer (TS.ROW)", "cursor");
            return;
        }
        memcpy(ts, p->cursor, n);
        ts[n] = 0;
        if (!int_in(ts, 0, INT64_MAX, &after->ts) || !int_in(dot + 1, 0, INT64_MAX, &after->row))
            set_bad(p, "%s: expected the \"next\" value of an earlier answer (TS.ROW)", "cursor");
        else
            after->set = true;
    }
}

static void parse_params(const http_request *rq, rparams *p, const char *const *allowed)
{
    memset(p, 0, sizeof *p);
    p->allowed = allowed;
    http_args(rq, on_param, p);
    if (!p->bad[0] && (!p->app || !*p->app))
        set_bad(p, "%s: required", "app");
}

static bool finish_params(rparams *p, http_response *rs)
{
    if (!p->bad[0])
        return true;
    http_error(rs, 400, "%s", p->bad);
    return false;
}

static void trace_query(const api_ctx *d, const char *id, http_response *rs)
{
    uint8_t tid[16];
    if (strlen(id) != 32 || strspn(id, "0123456789abcdefABCDEF") != 32 || !otlp_parse_id(id, tid, 16)) {
        http_error(rs, 400, "trace id: expected 32 hex digits, not all zero (/api/v1/traces/ID)");
        return;
    }
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    jbuf_kv_str(&b, "traceId", id);
    size_t n = 0;
    int r = store_trace(d->store, tid, &b, &n);
    jbuf_close(&b, '}');
    if (r < 0) {
        jbuf_free(&b);
        http_error(rs, 503, "the store could not be read");
        return;
    }
    if (n == 0) {
        jbuf_free(&b);
        http_error(rs, 404, "no span of trace %s is stored", id);
        return;
    }
    http_json(rs, 200, &b);
}

static void answer(http_response *rs, jbuf *b, int r)
{
    jbuf_close(b, '}');
    api_answer(rs, b, r, "the store could not be read");
}

/* The attribute filters of the parameters into a query's. */
static size_t attr_filters(const rparams *p, store_attr_filter *out)
{
    for (size_t i = 0; i < p->n_attrs; i++)
        out[i] = (store_attr_filter){p->attr_keys[i], p->attr_values[i]};
    return p->n_attrs;
}

/* The answer's object begun, {"app":APP, …, once the parameters were
 * good (else the 400 is set): false then. */
static bool begin(rparams *p, http_response *rs, jbuf *b, const char *app)
{
    if (!finish_params(p, rs))
        return false;
    jbuf_init(b);
    jbuf_open(b, '{');
    jbuf_kv_str(b, "app", app);
    return true;
}

static void spans_query(const api_ctx *d, const http_request *rq, http_response *rs)
{
    static const char *const allowed[] = {"app", "version", "name", "attr", "min_ms", "max_ms", "from", "to",
                                          "from_ns", "to_ns", "limit", "cursor", NULL};
    rparams p;
    parse_params(rq, &p, allowed);
    store_span_query q = {.app = p.app, .version = p.version, .name = p.name, .min_ms = NAN, .max_ms = NAN};
    parse_range(&p, &q.from_ns, &q.to_ns);
    parse_page(&p, &q.after, &q.limit);
    if (p.min_ms && !number_in(p.min_ms, 0, 1e15, &q.min_ms))
        set_bad(&p, "%s: expected a number of milliseconds from 0", "min_ms");
    if (p.max_ms && !number_in(p.max_ms, 0, 1e15, &q.max_ms))
        set_bad(&p, "%s: expected a number of milliseconds from 0", "max_ms");
    q.n_attrs = attr_filters(&p, q.attrs);
    jbuf b;
    if (begin(&p, rs, &b, q.app))
        answer(rs, &b, store_search_spans(d->store, &q, &b));
    rparams_free(&p);
}

static int severity_of(const char *s)
{
    static const char *const levels[] = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"};
    for (int i = 0; i < 6; i++)
        if (strcasecmp(s, levels[i]) == 0)
            return 1 + 4 * i;
    int64_t v;
    return int_in(s, 0, 24, &v) ? (int)v : -1;
}

static void logs_query(const api_ctx *d, const http_request *rq, http_response *rs)
{
    static const char *const allowed[] = {"app", "severity", "text", "from", "to", "from_ns", "to_ns", "limit",
                                          "cursor", NULL};
    rparams p;
    parse_params(rq, &p, allowed);
    store_log_query q = {.app = p.app, .text = p.text && *p.text ? p.text : NULL};
    parse_range(&p, &q.from_ns, &q.to_ns);
    parse_page(&p, &q.after, &q.limit);
    if (p.severity && (q.min_severity = severity_of(p.severity)) < 0)
        set_bad(&p, "%s: expected 0-24 or TRACE, DEBUG, INFO, WARN, ERROR, FATAL", "severity");
    jbuf b;
    if (begin(&p, rs, &b, q.app))
        answer(rs, &b, store_search_logs(d->store, &q, &b));
    rparams_free(&p);
}

static void metrics_query(const api_ctx *d, const http_request *rq, http_response *rs)
{
    static const char *const allowed[] = {"app", "name", "attr", "from", "to", "from_ns", "to_ns", "limit",
                                          "cursor", NULL};
    rparams p;
    parse_params(rq, &p, allowed);
    store_point_query q = {.app = p.app, .name = p.name};
    parse_range(&p, &q.from_ns, &q.to_ns);
    parse_page(&p, &q.after, &q.limit);
    if (!p.name || !*p.name)
        set_bad(&p, "%s: required (the metric's name)", "name");
    q.n_attrs = attr_filters(&p, q.attrs);
    jbuf b;
    if (begin(&p, rs, &b, q.app)) {
        jbuf_kv_str(&b, "name", q.name);
        answer(rs, &b, store_search_points(d->store, &q, &b));
    }
    rparams_free(&p);
}

static bool any_param(void *ctx, const char *key, size_t kl, const char *value, size_t vl)
{
    *(bool *)ctx = true;
    return false;
}

bool read_api_handle(const api_ctx *d, const http_request *rq, http_response *rs)
{
    const char *path = rq->path;
    if (strncmp(path, "/api/v1/traces/", 15) == 0) {
        bool any = false;
        http_args(rq, any_param, &any);
        if (any)
            http_error(rs, 400, "/api/v1/traces/ID takes no parameters");
        else
            trace_query(d, path + 15, rs);
    } else if (strcmp(path, "/api/v1/spans/search") == 0) {
        spans_query(d, rq, rs);
    } else if (strcmp(path, "/api/v1/logs") == 0) {
        logs_query(d, rq, rs);
    } else if (strcmp(path, "/api/v1/metrics") == 0) {
        metrics_query(d, rq, rs);
    } else {
        return false;
    }
    return true;
}
