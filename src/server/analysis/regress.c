/* Regressions between two versions (regress.h): the pairs to compare,
 * their stored samples, the test, an outcome per page class and start-up
 * kind. */
#include "regress.h"

#include <pacer/base/array.h>
#include <pacer/base/clock.h>
#include <pacer/base/strmap.h>
#include <pacer/record.h>
#include <pacer/schema.h>
#include <pacer/stats.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLES 10000 /* raw values per version and type for a regression test */
#define SAMPLES_SCAN 1000000
#define RETEST_NS (60LL * 1000000000LL) /* a pair compared is tested again a minute later at the earliest */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* grew from `from` to `to` by at least min-percent and min-ms */
static bool grew(double from, double to, const regress_limits *lim)
{
    double d = to - from;
    return d >= lim->min_ms && d >= from * lim->min_percent / 100.0;
}

int regress_run(regress_case *cases, size_t n, const regress_limits *lim)
{
    double *p = calloc(n ? n : 1, sizeof *p), *adj = calloc(n ? n : 1, sizeof *adj);
    if (!p || !adj) {
        free(p);
        free(adj);
        return -ENOMEM;
    }
    int r = 0;
    for (size_t i = 0; i < n; i++)
        p[i] = adj[i] = NAN;
    for (size_t i = 0; i < n && r == 0; i++) {
        regress_case *c = &cases[i];
        c->compared = c->flagged = false;
        c->p = c->p_adjusted = NAN;
        if (c->n_base < lim->min_samples || c->n_cur < lim->min_samples)
            continue;
        qsort(c->base, c->n_base, sizeof *c->base, cmp_double);
        qsort(c->cur, c->n_cur, sizeof *c->cur, cmp_double);
        c->p50_base = stats_quantile_sorted(c->base, c->n_base, 0.5);
        c->p50_cur = stats_quantile_sorted(c->cur, c->n_cur, 0.5);
        c->p90_base = stats_quantile_sorted(c->base, c->n_base, 0.9);
        c->p90_cur = stats_quantile_sorted(c->cur, c->n_cur, 0.9);
        stats_mwu u;
        if ((r = stats_mann_whitney(c->base, c->n_base, c->cur, c->n_cur, &u)) < 0)
            break;
        c->compared = true;
        c->p = p[i] = u.p_greater;
    }
    if (r == 0)
        r = stats_holm(p, n, adj);
    for (size_t i = 0; i < n && r == 0; i++) {
        regress_case *c = &cases[i];
        if (!c->compared)
            continue;
        c->p_adjusted = adj[i];
        c->flagged = adj[i] <= lim->alpha &&
                     (grew(c->p50_base, c->p50_cur, lim) || grew(c->p90_base, c->p90_cur, lim));
    }
    free(p);
    free(adj);
    return r;
}

/* ---- a pair of versions ---- */

typedef struct sample_set {
    /* per (name, metric): values; per name: sessions */
    struct series {
        char name[257];
        const char *metric;
        double *v;
        size_t n, cap;
        int64_t first_ns, last_ns;
    } *s;
    size_t n, cap;
    struct named_sessions {
        char name[257];
        int64_t n;
    } *sessions;
    size_t n_sessions, cap_sessions;
    strmap seen; /* (name, session) */
    bool oom;
} sample_set;

static const long page_metrics[] = {PACER_PAGE_INITIAL_DRAW_MS, PACER_PAGE_API_LOAD_MS, PACER_PAGE_FINAL_DRAW_MS,
                                    PACER_PAGE_TOTAL_MS};
static const long startup_metrics[] = {PACER_STARTUP_COLD_MS, PACER_STARTUP_FIRST_SCREEN_MS,
                                       PACER_STARTUP_APP_COST_MS, PACER_STARTUP_FULL_DISPLAY_MS,
                                       PACER_STARTUP_WARM_MS};

static void sample_add(sample_set *set, const char *name, const char *metric, double v, int64_t ts)
{
    struct series *x = NULL;
    for (size_t i = 0; i < set->n && !x; i++)
        if (set->s[i].metric == metric && strcmp(set->s[i].name, name) == 0)
            x = &set->s[i];
    if (!x) {
        if (!ARRAY_GROW(set->s, set->cap, set->n + 1, 16)) {
            set->oom = true;
            return;
        }
        x = &set->s[set->n++];
        memset(x, 0, sizeof *x);
        snprintf(x->name, sizeof x->name, "%s", name);
        x->metric = metric;
    }
    if (!ARRAY_GROW(x->v, x->cap, x->n + 1, 64)) {
        set->oom = true;
        return;
    }
    x->v[x->n++] = v;
    if (!x->first_ns || ts < x->first_ns)
        x->first_ns = ts;
    if (ts > x->last_ns)
        x->last_ns = ts;
}

static void sample_session(sample_set *set, const char *name, const char *session)
{
    if (!session)
        return;
    struct named_sessions *x = NULL;
    for (size_t i = 0; i < set->n_sessions && !x; i++)
        if (strcmp(set->sessions[i].name, name) == 0)
            x = &set->sessions[i];
    if (!x) {
        if (!ARRAY_GROW(set->sessions, set->cap_sessions, set->n_sessions + 1, 16)) {
            set->oom = true;
            return;
        }
        x = &set->sessions[set->n_sessions++];
        memset(x, 0, sizeof *x);
        snprintf(x->name, sizeof x->name, "%s", name);
    }
    char small[600];
    size_t size = strlen(name) + strlen(session) + 2;
    char *key = size <= sizeof small ? small : malloc(size);
    size_t len = key ? strmap_key(key, size, (const char *const[]){name, session}, 2) : 0;
    void **v = len ? strmap_put(&set->seen, key, len, NULL) : NULL;
    if (key != small)
        free(key);
    if (!v) {
        set->oom = true;
        return;
    }
    if (!*v) {
        *v = set; /* seen */
        x->n++;
    }
}

static void sample_free(sample_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        free(set->s[i].v);
    free(set->s);
    free(set->sessions);
    strmap_free(&set->seen, NULL);
    memset(set, 0, sizeof *set);
}

static const char *metric_name(enum store_table t, long f)
{
    return pacer_record_type_get(t == TABLE_PAGE_LOADS ? PACER_RECORD_PAGE : PACER_RECORD_STARTUP)
        ->shape->fields[f].name;
}

typedef struct sample_ctx {
    sample_set *set;
    enum store_table table;
} sample_ctx;

static void on_sample(void *ctx, const store_row *row)
{
    sample_ctx *sc = ctx;
    enum store_table t = sc->table;
    int ct = store_layout_col(t, SRC_COMMON, PACER_COMMON_TS), cs = store_layout_col(t, SRC_COMMON, PACER_COMMON_SESSION);
    int64_t ts = ct >= 0 && row->cols[ct].type == SV_INT ? row->cols[ct].i : 0;
    const char *session = cs >= 0 && row->cols[cs].type == SV_TEXT ? row->cols[cs].p : NULL;
    const long *metrics;
    size_t nm;
    int cn;
    if (t == TABLE_PAGE_LOADS) {
        int st = store_layout_col(t, SRC_FIELD, PACER_PAGE_STATUS);
        if (st < 0 || row->cols[st].type != SV_TEXT || strcmp(row->cols[st].p, "complete") != 0)
            return;
        cn = store_layout_col(t, SRC_FIELD, PACER_PAGE_CLASS);
        metrics = page_metrics;
        nm = sizeof page_metrics / sizeof *page_metrics;
    } else {
        int out = store_layout_col(t, SRC_FIELD, PACER_STARTUP_OUTLIER);
        if (out >= 0 && row->cols[out].type == SV_INT && row->cols[out].i)
            return;
        cn = store_layout_col(t, SRC_FIELD, PACER_STARTUP_KIND);
        metrics = startup_metrics;
        nm = sizeof startup_metrics / sizeof *startup_metrics;
    }
    if (cn < 0 || row->cols[cn].type != SV_TEXT)
        return;
    const char *name = row->cols[cn].p;
    if (t == TABLE_STARTUPS && strcmp(name, "cold") != 0 && strcmp(name, "warm") != 0)
        return;
    bool any = false;
    for (size_t k = 0; k < nm; k++) {
        int c = store_layout_col(t, SRC_FIELD, metrics[k]);
        if (c < 0 || row->cols[c].type != SV_REAL)
            continue;
        sample_add(sc->set, name, metric_name(t, metrics[k]), row->cols[c].d, ts);
        any = true;
    }
    if (any)
        sample_session(sc->set, name, session);
}

static int fetch(store *st, const char *app, const char *version, sample_set *pages, sample_set *starts)
{
    bool truncated;
    sample_ctx p = {pages, TABLE_PAGE_LOADS}, s = {starts, TABLE_STARTUPS};
    int r = store_version_rows(st, TABLE_PAGE_LOADS, app, version, SAMPLES, SAMPLES_SCAN, on_sample, &p, &truncated);
    if (r == 0)
        r = store_version_rows(st, TABLE_STARTUPS, app, version, SAMPLES, SAMPLES_SCAN, on_sample, &s, &truncated);
    return r < 0 ? r : pages->oom || starts->oom ? -ENOMEM : 0;
}

static const struct series *series_of(const sample_set *set, const char *name, const char *metric)
{
    for (size_t i = 0; i < set->n; i++)
        if (set->s[i].metric == metric && strcmp(set->s[i].name, name) == 0)
            return &set->s[i];
    return NULL;
}

static int64_t sessions_of(const sample_set *set, const char *name)
{
    for (size_t i = 0; i < set->n_sessions; i++)
        if (strcmp(set->sessions[i].name, name) == 0)
            return set->sessions[i].n;
    return 0;
}

/* The outcome of one name (a page class, a start-up kind). */
static int outcome(const regress_pair *p, const char *kind, const char *name, regress_case *cases, size_t n,
                   const sample_set *cur_set, const ana_thresholds *t,
                   int (*cb)(void *ctx, const regress_outcome *o), void *ctx)
{
    bool flagged = false, compared = false;
    double shift = 0;
    int64_t n_cur = 0, n_base = 0, first = 0, last = 0;
    const regress_case *worst = NULL;
    for (size_t k = 0; k < n; k++) {
        regress_case *c = &cases[k];
        if (strcmp(c->name, name) != 0 || !c->compared)
            continue;
        compared = true;
        if ((int64_t)c->n_cur > n_cur)
            n_cur = (int64_t)c->n_cur;
        if ((int64_t)c->n_base > n_base)
            n_base = (int64_t)c->n_base;
        if (c->flagged) {
            flagged = true;
            if (!worst || c->p50_cur - c->p50_base > shift) {
                shift = c->p50_cur - c->p50_base;
                worst = c;
            }
        }
        const struct series *s = series_of(cur_set, name, c->metric);
        if (s) {
            if (!first || s->first_ns < first)
                first = s->first_ns;
            if (s->last_ns > last)
                last = s->last_ns;
        }
    }
    if (!compared)
        return 0;
    if (!worst) /* the largest shift, for the figures shown */
        for (size_t k = 0; k < n; k++)
            if (cases[k].compared && strcmp(cases[k].name, name) == 0 &&
                (!worst || cases[k].p50_cur - cases[k].p50_base > worst->p50_cur - worst->p50_base))
                worst = &cases[k];
    regress_outcome o = {.pair = p,
                         .kind = kind,
                         .name = name,
                         .flagged = flagged,
                         .n_cur = n_cur,
                         .n_base = n_base,
                         .affected = sessions_of(cur_set, name),
                         .lost_ms = flagged && shift > 0 ? shift * (double)n_cur : 0,
                         .first_ns = first,
                         .last_ns = last};
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    jbuf_kv_str(&b, kind[0] == 'p' ? "page" : "kind", name);
    jbuf_kv_str(&b, "baseline", p->base);
    jbuf_kv_str(&b, "version", p->cur);
    jbuf_kv_bool(&b, "flagged", flagged);
    jbuf_kv_str(&b, "metric", worst->metric);
    jbuf_kv_double(&b, "p50_baseline", worst->p50_base);
    jbuf_kv_double(&b, "p50", worst->p50_cur);
    jbuf_kv_str(&b, "test", "one-sided Mann-Whitney U on the stored raw values, Holm-adjusted over the pair's cases");
    jbuf_kv_double(&b, "alpha", t->regression_alpha);
    jbuf_kv_double(&b, "min_percent", t->regression_min_percent);
    jbuf_kv_double(&b, "min_ms", t->regression_min_ms);
    jbuf_key(&b, "metrics");
    jbuf_open(&b, '[');
    for (size_t k = 0; k < n; k++) {
        regress_case *c = &cases[k];
        if (strcmp(c->name, name) != 0 || !c->compared)
            continue;
        jbuf_open(&b, '{');
        jbuf_kv_str(&b, "metric", c->metric);
        jbuf_kv_i64(&b, "n_baseline", (int64_t)c->n_base);
        jbuf_kv_i64(&b, "n", (int64_t)c->n_cur);
        jbuf_kv_double(&b, "p50_baseline", c->p50_base);
        jbuf_kv_double(&b, "p50", c->p50_cur);
        jbuf_kv_double(&b, "p90_baseline", c->p90_base);
        jbuf_kv_double(&b, "p90", c->p90_cur);
        jbuf_kv_double(&b, "shift_p50_ms", c->p50_cur - c->p50_base);
        jbuf_kv_double(&b, "shift_p90_ms", c->p90_cur - c->p90_base);
        jbuf_kv_double(&b, "p", c->p);
        jbuf_kv_double(&b, "p_adjusted", c->p_adjusted);
        jbuf_kv_bool(&b, "flagged", c->flagged);
        jbuf_close(&b, '}');
    }
    jbuf_close(&b, ']');
    jbuf_close(&b, '}');
    o.evidence = b.failed ? NULL : b.data;
    int r = cb(ctx, &o);
    jbuf_free(&b);
    return r;
}

static void add_pair(regress_pairs *l, const char *app, const char *base, const char *cur, int64_t n_base,
                     int64_t n_cur)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->p[i].app, app) == 0 && strcmp(l->p[i].base, base) == 0 && strcmp(l->p[i].cur, cur) == 0)
            return;
    if (!ARRAY_GROW(l->p, l->cap, l->n + 1, 8))
        return;
    regress_pair *p = &l->p[l->n++];
    snprintf(p->app, sizeof p->app, "%s", app);
    snprintf(p->base, sizeof p->base, "%s", base);
    snprintf(p->cur, sizeof p->cur, "%s", cur);
    p->n_base = n_base;
    p->n_cur = n_cur;
}

int regress_pairs_due(sqlite3 *db, const ana_config *cfg, const char *app, const char *version, regress_pairs *out)
{
    iss_version *vs;
    size_t n;
    int r = issues_db_versions(db, app, &vs, &n);
    if (r < 0)
        return r;
    const ana_thresholds *t = analysis_config_app(cfg, app);
    const iss_version *me = NULL, *prev = NULL, *next = NULL;
    for (size_t k = 0; k < n; k++)
        if (strcmp(vs[k].version, version) == 0)
            me = &vs[k];
    int64_t rank = me ? analysis_config_version_rank(t, me->version, me->seq) : 0;
    for (size_t k = 0; me && k < n; k++) {
        int64_t rk = analysis_config_version_rank(t, vs[k].version, vs[k].seq);
        if (rk < rank && (!prev || rk > analysis_config_version_rank(t, prev->version, prev->seq)))
            prev = &vs[k];
        if (rk > rank && (!next || rk < analysis_config_version_rank(t, next->version, next->seq)))
            next = &vs[k];
    }
    regress_pairs all = {0};
    if (prev)
        add_pair(&all, app, prev->version, me->version, prev->records, me->records);
    if (next)
        add_pair(&all, app, me->version, next->version, me->records, next->records);
    free(vs);
    int64_t now = wall_ns();
    for (size_t i = 0; i < all.n && r == 0; i++) {
        regress_pair *p = &all.p[i];
        int64_t a, b, tested;
        if ((r = issues_db_pair_get(db, p->app, p->base, p->cur, &a, &b, &tested)) < 0)
            break;
        bool untested = !a && !b, grown = p->n_base >= 2 * a || p->n_cur >= 2 * b;
        if (untested || (grown && now - tested >= RETEST_NS))
            add_pair(out, p->app, p->base, p->cur, p->n_base, p->n_cur);
    }
    free(all.p);
    return r;
}

int regress_pairs_save(sqlite3 *db, const regress_pairs *l)
{
    for (size_t i = 0; i < l->n; i++) {
        const regress_pair *p = &l->p[i];
        if (issues_db_pair_set(db, p->app, p->base, p->cur, p->n_base, p->n_cur, wall_ns()) < 0)
            return -EIO;
    }
    return 0;
}

/* The cases of one kind (pages, start-ups) of a pair: each (name, metric)
 * both versions have, into cases from *n. */
static void add_cases(const sample_set *base, const sample_set *cur, regress_case *cases, size_t *n)
{
    for (size_t k = 0; k < base->n; k++) {
        const struct series *b = &base->s[k], *c = series_of(cur, b->name, b->metric);
        if (c)
            cases[(*n)++] = (regress_case){.name = b->name, .metric = b->metric, .base = b->v, .cur = c->v,
                                           .n_base = b->n, .n_cur = c->n};
    }
}

/* One outcome per name (a page class, a start-up kind) that has cases. */
static int kind_outcomes(const regress_pair *p, const char *kind, regress_case *cases, size_t n,
                         const sample_set *cur, const ana_thresholds *t,
                         int (*cb)(void *ctx, const regress_outcome *o), void *ctx)
{
    int r = 0;
    for (size_t k = 0; k < n && r == 0; k++) {
        bool first = true;
        for (size_t m = 0; m < k && first; m++)
            first = strcmp(cases[m].name, cases[k].name) != 0;
        if (first)
            r = outcome(p, kind, cases[k].name, cases, n, cur, t, cb, ctx);
    }
    return r;
}

int regress_test(store *records, const ana_thresholds *t, regress_pair *p,
                 int (*cb)(void *ctx, const regress_outcome *o), void *ctx)
{
    sample_set bp = {0}, bs = {0}, cp = {0}, cs = {0};
    int r = fetch(records, p->app, p->base, &bp, &bs);
    if (r == 0)
        r = fetch(records, p->app, p->cur, &cp, &cs);
    regress_case *cases = NULL;
    size_t n_pages = 0, n_starts = 0;
    if (r == 0 && bp.n + bs.n && !(cases = calloc(bp.n + bs.n, sizeof *cases)))
        r = -ENOMEM;
    if (r == 0 && cases) {
        /* pages first, then start-ups: one family, one Holm adjustment */
        add_cases(&bp, &cp, cases, &n_pages);
        n_starts = n_pages;
        add_cases(&bs, &cs, cases, &n_starts);
        n_starts -= n_pages;
        regress_limits lim = {(size_t)t->regression_min_samples, t->regression_min_percent, t->regression_min_ms,
                              t->regression_alpha};
        r = regress_run(cases, n_pages + n_starts, &lim);
        bool compared = false;
        for (size_t k = 0; k < n_pages + n_starts; k++)
            compared |= cases[k].compared;
        if (!compared)
            p->n_base = p->n_cur = 0; /* nothing to compare yet: look again at the next growth */
        if (r == 0)
            r = kind_outcomes(p, "page_regression", cases, n_pages, &cp, t, cb, ctx);
        if (r == 0)
            r = kind_outcomes(p, "startup_regression", cases + n_pages, n_starts, &cs, t, cb, ctx);
    }
    free(cases);
    sample_free(&bp);
    sample_free(&bs);
    sample_free(&cp);
    sample_free(&cs);
    return r;
}
