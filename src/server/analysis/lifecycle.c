/* Judging candidates: issue or not, status, grade, title, deliveries
 * (lifecycle.h). */
#include "lifecycle.h"
#include "issue_details.h"
#include "issue_json.h"

#include <pacer/base/array.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DAY_NS (86400LL * 1000000000LL)

int lifecycle_set_app(lc_context *c, const char *app)
{
    if (c->versions && strcmp(c->app, app) == 0)
        return 0;
    free(c->versions);
    c->versions = NULL;
    c->n_versions = 0;
    snprintf(c->app, sizeof c->app, "%s", app);
    c->t = analysis_config_app(c->cfg, app);
    int r = issues_db_versions(c->db, app, &c->versions, &c->n_versions);
    c->newest_ns = 0;
    for (size_t i = 0; i < c->n_versions; i++)
        if (c->versions[i].last_ns > c->newest_ns)
            c->newest_ns = c->versions[i].last_ns;
    if (r == 0 && !c->versions)
        c->versions = calloc(1, sizeof *c->versions); /* loaded, none */
    return r;
}

void lifecycle_free(lc_context *c)
{
    free(c->versions);
    c->versions = NULL;
    c->n_versions = 0;
}

static const iss_version *version_of(const lc_context *c, const char *version)
{
    for (size_t i = 0; version && i < c->n_versions; i++)
        if (strcmp(c->versions[i].version, version) == 0)
            return &c->versions[i];
    return NULL;
}

static int64_t rank_of(const lc_context *c, const char *version)
{
    const iss_version *v = version_of(c, version);
    return v ? analysis_config_version_rank(c->t, v->version, v->seq) : -1;
}

static bool is_regression(const char *kind)
{
    return strcmp(kind, "page_regression") == 0 || strcmp(kind, "startup_regression") == 0;
}

/* The threshold of a p90 kind's candidate, or NAN. */
static double p90_threshold(const ana_thresholds *t, const char *kind, const char *key)
{
    size_t n = strlen(key);
    if (strcmp(kind, "slow_page") == 0) {
        if (n > 9 && strcmp(key + n - 9, " total_ms") == 0)
            return t->slow_page_total_ms;
        if (n > 16 && strcmp(key + n - 16, " initial_draw_ms") == 0)
            return t->slow_page_initial_ms;
    }
    if (strcmp(kind, "slow_startup") == 0)
        return strcmp(key, "cold") == 0 ? t->slow_cold_ms : t->slow_warm_ms;
    if (strcmp(kind, "slow_request") == 0)
        return t->slow_request_ms;
    return NAN;
}

static bool qualifies(const ana_thresholds *t, const char *kind, const char *key, const iss_vstat *v)
{
    if (strcmp(kind, "frozen_frames") == 0)
        return (double)v->count >= t->frozen_frames_min;
    if (strcmp(kind, "net_error") == 0)
        return (double)v->count >= t->net_error_min && (double)v->count >= t->net_error_rate * (double)v->total;
    double thr = p90_threshold(t, kind, key);
    if (!isnan(thr))
        return (double)v->values.count >= t->percentile_min_samples && sketch_quantile(&v->values, 0.9) >= thr;
    return v->count > 0;
}

typedef struct rows {
    iss_vstat *v;
    size_t n, cap;
    bool failed;
} rows;

static bool take_row(void *ctx, const iss_vstat *v)
{
    rows *r = ctx;
    if (!ARRAY_GROW(r->v, r->cap, r->n + 1, 8)) {
        r->failed = true;
        return false;
    }
    iss_vstat *x = &r->v[r->n++];
    *x = *v;
    sketch_init(&x->values);
    if (sketch_merge(&x->values, &v->values) < 0)
        r->failed = true;
    return !r->failed;
}

static void rows_free(rows *r)
{
    for (size_t i = 0; i < r->n; i++)
        sketch_reset(&r->v[i].values);
    free(r->v);
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void set_text(char **slot, const char *s)
{
    char *copy = dup_or_null(s);
    free(*slot);
    *slot = copy;
}

/* "1.8 s", "512 ms" */
static void fmt_ms(char *out, size_t size, double ms)
{
    if (ms >= 1000)
        snprintf(out, size, "%.1f s", ms / 1000);
    else
        snprintf(out, size, "%.0f ms", ms);
}

static void fmt_bytes(char *out, size_t size, double b)
{
    if (b >= 1 << 20)
        snprintf(out, size, "%.1f MiB", b / (1 << 20));
    else if (b >= 1024)
        snprintf(out, size, "%.0f KiB", b / 1024);
    else
        snprintf(out, size, "%.0f bytes", b);
}

/* The title, from the kind, the key, the evidence and the last version's
 * figures. */
static void make_title(const lc_context *c, const iss_issue *i, const iss_details *det, const iss_vstat *last,
                       char *out, size_t size)
{
    const char *ex = det->example;
    char fn[256] = "", page[256] = "", a[64], b[64];
    issue_json_str(ex, "function", fn, sizeof fn);
    issue_json_str(ex, "page", page, sizeof page);
    double p90 = last && last->values.count ? sketch_quantile(&last->values, 0.9) : 0;
    double v;
    const char *k = i->kind;
    if (strcmp(k, "jank") == 0 || strcmp(k, "hang") == 0) {
        fmt_ms(a, sizeof a, last && last->values.count ? sketch_quantile(&last->values, 0.5) : det->example_value);
        snprintf(out, size, "%s in %s%s%s%s: p50 %s", strcmp(k, "jank") == 0 ? "Jank" : "Hang",
                 fn[0] ? fn : "code without a stack", page[0] ? " (" : "", page, page[0] ? ")" : "", a);
    } else if (strcmp(k, "leak") == 0) {
        double bytes = det->bytes;
        if (bytes > 0) {
            fmt_bytes(a, sizeof a, bytes);
            snprintf(out, size, "Native leak%s%s: %s in all", fn[0] ? " in " : "", fn, a);
        } else {
            snprintf(out, size, "Objects leaked by %s", page[0] ? page : "a page");
        }
    } else if (strcmp(k, "net_error") == 0) {
        double rate = last && last->total ? 100.0 * (double)last->count / (double)last->total : 0;
        snprintf(out, size, "%s fails: %.0f %% of requests in %s", i->key, rate, last ? last->version : "?");
    } else if (strcmp(k, "slow_request") == 0) {
        fmt_ms(a, sizeof a, p90);
        snprintf(out, size, "%s is slow: p90 %s", i->key, a);
    } else if (strcmp(k, "large_image") == 0 || strcmp(k, "large_payload") == 0) {
        fmt_bytes(a, sizeof a, last && last->values.count ? last->values.max : det->example_value);
        snprintf(out, size, "%s returns %s up to %s", i->key, strcmp(k, "large_image") == 0 ? "images" : "bodies", a);
    } else if (strcmp(k, "slow_page") == 0) {
        fmt_ms(a, sizeof a, p90);
        fmt_ms(b, sizeof b, p90_threshold(c->t, k, i->key));
        snprintf(out, size, "Slow page %s: p90 %s (threshold %s)", i->key, a, b);
    } else if (strcmp(k, "slow_startup") == 0) {
        fmt_ms(a, sizeof a, p90);
        fmt_ms(b, sizeof b, p90_threshold(c->t, k, i->key));
        snprintf(out, size, "Slow %s start: p90 %s (threshold %s)", i->key, a, b);
    } else if (strcmp(k, "frozen_frames") == 0) {
        snprintf(out, size, "Frozen frames in %s: %lld in %s", i->key, (long long)(last ? last->count : 0),
                 last ? last->version : "?");
    } else if (strcmp(k, "n_plus_one") == 0) {
        char method[32] = "", pattern[512] = "";
        issue_json_str(ex, "method", method, sizeof method);
        issue_json_str(ex, "pattern", pattern, sizeof pattern);
        snprintf(out, size, "N+1 requests: %s %s ×%.0f in one %s load", method, pattern, det->example_value,
                 page[0] ? page : "page");
    } else if (strcmp(k, "serial_requests") == 0) {
        fmt_ms(a, sizeof a, issue_json_num(ex, "saving_ms", &v) ? v : 0);
        snprintf(out, size, "Serial requests in %s: running them together would save %s", page[0] ? page : "a page", a);
    } else if (is_regression(k)) {
        char metric[64] = "", base[257] = "", cur[257] = "";
        double from = 0, to = 0;
        issue_json_str(ex, "metric", metric, sizeof metric);
        issue_json_str(ex, "baseline", base, sizeof base);
        issue_json_str(ex, "version", cur, sizeof cur);
        issue_json_num(ex, "p50_baseline", &from);
        issue_json_num(ex, "p50", &to);
        fmt_ms(a, sizeof a, from);
        fmt_ms(b, sizeof b, to);
        snprintf(out, size, "%s%s got slower in %s: %s p50 %s → %s (%s)",
                 strcmp(k, "page_regression") == 0 ? "" : "Start-up ", i->key, cur, metric, a, b, base);
    } else {
        snprintf(out, size, "%s %s", k, i->key);
    }
}

static void grade(const lc_context *c, const iss_vstat *last, char severity[16], jbuf *g)
{
    const iss_version *ver = version_of(c, last->version);
    int64_t sessions = ver ? ver->sessions : 0;
    if (sessions < last->sessions)
        sessions = last->sessions;
    double denom = sessions > 0 ? (double)sessions : 1;
    double share = (double)last->sessions / denom, per = last->lost_ms / denom;
    char rule[200];
    const ana_thresholds *t = c->t;
    enum iss_severity sev;
    if (per >= t->critical_ms) {
        sev = ISS_CRITICAL;
        snprintf(rule, sizeof rule, "%s: %.1f ms lost per session >= critical-ms-per-session %g", issues_db_severities[sev],
                 per, t->critical_ms);
    } else if (per >= t->major_ms) {
        sev = ISS_MAJOR;
        snprintf(rule, sizeof rule, "%s: %.1f ms lost per session >= major-ms-per-session %g", issues_db_severities[sev],
                 per, t->major_ms);
    } else if (share >= t->major_share) {
        sev = ISS_MAJOR;
        snprintf(rule, sizeof rule, "%s: %.1f %% of sessions affected >= major-share %g %%", issues_db_severities[sev],
                 100 * share, 100 * t->major_share);
    } else {
        sev = ISS_MINOR;
        snprintf(rule, sizeof rule, "%s: %.1f ms lost per session < %g and %.1f %% of sessions affected < %g %%",
                 issues_db_severities[sev], per, t->major_ms, 100 * share, 100 * t->major_share);
    }
    snprintf(severity, 16, "%s", issues_db_severities[sev]);
    jbuf_open(g, '{');
    jbuf_kv_str(g, "version", last->version);
    jbuf_kv_i64(g, "sessions", sessions);
    jbuf_kv_i64(g, "affected_sessions", last->sessions);
    jbuf_kv_double(g, "share", share);
    jbuf_kv_double(g, "lost_ms", last->lost_ms);
    jbuf_kv_double(g, "lost_ms_per_session", per);
    jbuf_kv_str(g, "formula", "lost_ms_per_session = lost_ms / sessions; share = affected_sessions / sessions");
    jbuf_kv_str(g, "rule", rule);
    jbuf_close(g, '}');
}

/* Queues one delivery per target for an event of issue i (saved). */
static int queue(lc_context *c, const iss_issue *i, const char *event, const char *previous_status,
                 const char *previous_severity)
{
    char key[64];
    snprintf(key, sizeof key, "%s-%lld", i->id, (long long)i->seq);
    for (size_t t = 0; t < c->n_targets; t++) {
        jbuf b;
        jbuf_init(&b);
        int r = 0;
        if (c->targets[t] == TARGET_KIND_WEBHOOK) {
            jbuf_open(&b, '{');
            jbuf_kv_str(&b, "event", event);
            jbuf_kv_str(&b, "idempotency_key", key);
            jbuf_kv_str(&b, "app", i->app);
            jbuf_kv_i64(&b, "at", c->now_ns / 1000000000LL);
            jbuf_kv_str(&b, "previous_status", previous_status);
            jbuf_kv_str(&b, "previous_severity", previous_severity);
            jbuf_key(&b, "issue");
            r = issue_json_write(c->db, c->cfg, i, &b);
            jbuf_close(&b, '}');
        } else {
            /* an issue tracker: a new issue, or a comment on the one filed */
            jbuf md;
            jbuf_init(&md);
            if (strcmp(event, "issue.new") != 0)
                jbuf_printf(&md, "pacer: this issue %s (%s → %s, %s → %s).\n\n",
                            strcmp(event, "issue.regressed") == 0 ? "regressed" : "changed severity", previous_status,
                            i->status, previous_severity, i->severity);
            r = issue_json_markdown(c->db, c->cfg, i, &md);
            jbuf_open(&b, '{');
            if (strcmp(event, "issue.new") == 0) {
                jbuf_kv_str(&b, "title", i->title);
                jbuf_key(&b, "labels");
                jbuf_open(&b, '[');
                char label[64];
                jbuf_str(&b, "pacer");
                snprintf(label, sizeof label, "kind:%s", i->kind);
                jbuf_str(&b, label);
                snprintf(label, sizeof label, "severity:%s", i->severity);
                jbuf_str(&b, label);
                jbuf_close(&b, ']');
            }
            jbuf_key(&b, "body");
            jbuf_strn(&b, md.data ? md.data : "", md.len);
            jbuf_close(&b, '}');
            if (md.failed)
                b.failed = true;
            jbuf_free(&md);
        }
        if (r == 0 && (b.failed || !b.data))
            r = -ENOMEM;
        if (r == 0)
            r = issues_db_delivery_add(c->db, (int)t, i->id, event, key, b.data);
        jbuf_free(&b);
        if (r < 0)
            return r;
        c->transitions++;
    }
    return 0;
}

int lifecycle_judge(lc_context *c, const char *id, const char *manual)
{
    iss_issue i = {0};
    int r = issues_db_issue_load(c->db, id, &i);
    if (r < 0)
        return r;
    if (!i.exists) {
        issues_db_issue_reset(&i);
        return -ENOENT;
    }
    if (manual && !i.status[0]) {
        issues_db_issue_reset(&i);
        return -ENOENT; /* a candidate, not an issue */
    }
    rows rs = {0};
    r = issues_db_vstat_each(c->db, id, take_row, &rs);
    if (r == 0 && rs.failed)
        r = -ENOMEM;
    int64_t count = 0, sessions = 0, first_ns = 0, last_ns = 0;
    const iss_vstat *first = NULL, *last = NULL;
    int64_t first_rank = 0, last_rank = 0;
    for (size_t k = 0; r == 0 && k < rs.n; k++) {
        iss_vstat *v = &rs.v[k];
        if (!is_regression(i.kind) && !v->qualifies && qualifies(c->t, i.kind, i.key, v)) {
            v->qualifies = true;
            r = issues_db_vstat_save(c->db, id, v);
        }
        count += v->count;
        sessions += v->sessions;
        if (!v->qualifies)
            continue;
        int64_t rank = rank_of(c, v->version);
        if (!first || rank < first_rank) {
            first = v;
            first_rank = rank;
        }
        if (!last || rank > last_rank) {
            last = v;
            last_rank = rank;
        }
        if (!first_ns || v->first_ns < first_ns)
            first_ns = v->first_ns;
        if (v->last_ns > last_ns)
            last_ns = v->last_ns;
    }
    if (r < 0 || !last) {
        rows_free(&rs);
        issues_db_issue_reset(&i);
        return r;
    }
    char old_status[16], old_severity[16];
    snprintf(old_status, sizeof old_status, "%s", i.status);
    snprintf(old_severity, sizeof old_severity, "%s", i.severity);
    const char *event = NULL;
    i.count = count;
    i.sessions = sessions;
    i.first_ns = first_ns;
    i.last_ns = last_ns;
    set_text(&i.first_version, first->version);
    set_text(&i.last_version, last->version);
    int64_t since = rank_of(c, i.since_version);
    if (manual) {
        snprintf(i.status, sizeof i.status, "%s", manual);
        set_text(&i.since_version, last->version);
    } else if (!i.status[0]) {
        snprintf(i.status, sizeof i.status, "new");
        set_text(&i.since_version, last->version);
        event = "issue.new";
    } else if (strcmp(i.status, "resolved") == 0 && last_rank > since) {
        snprintf(i.status, sizeof i.status, "regressed");
        set_text(&i.since_version, last->version);
        event = "issue.regressed";
    } else if ((strcmp(i.status, "new") == 0 || strcmp(i.status, "regressed") == 0) && last_rank > since) {
        snprintf(i.status, sizeof i.status, "ongoing");
        set_text(&i.since_version, last->version);
    }
    if (!manual && strcmp(i.status, "resolved") != 0) {
        /* resolved: later versions with enough sessions went without it, or days passed */
        int64_t clean = 0;
        for (size_t k = 0; k < c->n_versions; k++)
            if (analysis_config_version_rank(c->t, c->versions[k].version, c->versions[k].seq) > last_rank &&
                (double)c->versions[k].sessions >= c->t->resolve_sessions)
                clean++;
        if ((double)clean >= c->t->resolve_versions ||
            (double)(c->newest_ns - last_ns) >= c->t->resolve_days * (double)DAY_NS) {
            snprintf(i.status, sizeof i.status, "resolved");
            set_text(&i.since_version, last->version);
        }
    }
    jbuf g;
    jbuf_init(&g);
    grade(c, last, i.severity, &g);
    if (!g.failed)
        set_text(&i.grade, g.data);
    jbuf_free(&g);
    if (!event && old_severity[0] && strcmp(old_severity, i.severity) != 0 && strcmp(i.status, "resolved") != 0)
        event = "issue.severity";
    iss_details det = {0};
    (void)issue_details_parse(i.details, &det);
    char title[512];
    make_title(c, &i, &det, last, title, sizeof title);
    issue_details_free(&det);
    set_text(&i.title, title);
    if (event)
        i.seq++;
    i.updated_ns = c->now_ns;
    r = issues_db_issue_save(c->db, &i);
    if (r == 0 && event)
        r = queue(c, &i, event, old_status, old_severity);
    rows_free(&rs);
    issues_db_issue_reset(&i);
    return r;
}
