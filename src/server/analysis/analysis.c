/* The application layer's thread (analysis.h).
 *
 * A cycle keeps what it read in memory only until its write: deltas per
 * (candidate, version) — figures to add, new affected sessions, evidence —
 * and per (app, version) — records, times, sessions. Both are bounded by
 * the rows of one cycle (cycle-records per source).
 */
#include "analysis.h"
#include "detect.h"
#include "issue_details.h"
#include "lifecycle.h"
#include "regress.h"
#include "issues_db.h"

#include <pacer/base/array.h>
#include <pacer/base/clock.h>
#include <pacer/base/hash.h>
#include <pacer/base/thread.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 4096
#define MAX_CANDIDATES 10000 /* per app: beyond, new candidates are not followed */
#define MAX_OPEN 2000        /* open issues of an app judged again per cycle */
#define MAX_SESSIONS_PER_DELTA 100000
#define PRUNE_CYCLES 1000 /* retention (issues_db_prune) every this many cycles */

static const struct {
    enum store_table table;
    enum store_filter filter;
    const char *mark;
} sources[] = {
    /* requests before page loads: a load is matched with the requests read before it */
    {TABLE_REQUESTS, STORE_ROWS_ALL, "requests"},
    {TABLE_PAGE_LOADS, STORE_ROWS_ALL, "page_loads"},
    {TABLE_STARTUPS, STORE_ROWS_ALL, "startups"},
    {TABLE_LOGS, STORE_ROWS_PACER_LOGS, "logs"},
    {TABLE_METRIC_POINTS, STORE_ROWS_FRAMES, "metric_points"},
};
#define N_SOURCES (sizeof sources / sizeof sources[0])

/* ---- a set of 64-bit hashes (what a cycle has seen) ---- */

typedef struct hset {
    uint64_t *slots;
    size_t mask, n;
} hset;

/* Adds x: true when it was new. */
static bool hset_add(hset *s, uint64_t x)
{
    if (!x)
        x = 1;
    if (!s->slots || s->n + 1 > (s->mask + 1) / 2) {
        size_t cap = s->slots ? 2 * (s->mask + 1) : 4096;
        uint64_t *g = calloc(cap, sizeof *g);
        if (!g)
            return false;
        for (size_t i = 0; s->slots && i <= s->mask; i++)
            if (s->slots[i]) {
                size_t k = hash_u64(s->slots[i]) & (cap - 1);
                while (g[k])
                    k = (k + 1) & (cap - 1);
                g[k] = s->slots[i];
            }
        free(s->slots);
        s->slots = g;
        s->mask = cap - 1;
    }
    size_t k = hash_u64(x) & s->mask;
    while (s->slots[k]) {
        if (s->slots[k] == x)
            return false;
        k = (k + 1) & s->mask;
    }
    s->slots[k] = x;
    s->n++;
    return true;
}

static uint64_t hash_strs(const char *a, const char *b, const char *c)
{
    uint64_t h = fnv1a64(FNV1A64_INIT, a, strlen(a) + 1);
    h = fnv1a64(h, b, strlen(b) + 1);
    return fnv1a64(h, c ? c : "", c ? strlen(c) : 0);
}

/* ---- deltas ---- */

/* a + b in whole nanoseconds: time lost is summed over occurrences and
 * cycles, and a cycle may read what another read in two (ClickHouse's read
 * lag); integer sums come out the same in any order, doubles do not */
static double add_ms(double a, double b)
{
    if (!isfinite(a) || !isfinite(b) || fabs(a) > 1e12 || fabs(b) > 1e12)
        return a + b;
    return (double)(llround(a * 1e6) + llround(b * 1e6)) / 1e6;
}

typedef struct delta {
    struct delta *next;
    uint64_t h;
    char id[ISSUE_ID_LEN + 1];
    char *app, *kind, *key, *version, *fingerprint;
    int64_t count, total, first_ns, last_ns;
    double lost_ms;
    sketch values;
    char **sessions;
    size_t n_sessions, cap_sessions;
    iss_details det;
    /* a regression test's outcome: replaces the version's figures */
    bool replace, qualifies;
    int64_t check_a, check_b, affected;
} delta;

typedef struct vdelta {
    struct vdelta *next, *in_order; /* its bucket; the cycle's versions in the order they came */
    uint64_t h;
    char *app, *version;
    int64_t records, first_ns, last_ns;
    size_t came;  /* its place in the order the cycle's versions came */
    bool pages; /* page loads or start-ups: regressions to test */
    char **sessions;
    size_t n_sessions, cap_sessions;
} vdelta;

typedef struct cycle {
    const ana_config *cfg;
    delta *deltas[BUCKETS];
    vdelta *versions[BUCKETS];
    vdelta *first_version, **last_version; /* in the order they came */
    size_t n_versions;
    hset seen;
    int64_t marks[N_SOURCES];
    uint64_t rows;
    int64_t behind;
    bool oom;
} cycle;

static bool push_str(char ***list, size_t *n, size_t *cap, const char *s)
{
    if (!ARRAY_GROW(*list, *cap, *n + 1, 8))
        return false;
    if (!((*list)[*n] = strdup(s)))
        return false;
    (*n)++;
    return true;
}

static delta *delta_get(cycle *cy, const char *id, const char *app, const char *kind, const char *key,
                        const char *version)
{
    uint64_t h = hash_strs(id, version, NULL);
    delta **slot = &cy->deltas[h % BUCKETS];
    for (delta *d = *slot; d; d = d->next)
        if (d->h == h && strcmp(d->id, id) == 0 && strcmp(d->version, version) == 0)
            return d;
    delta *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->h = h;
    snprintf(d->id, sizeof d->id, "%s", id);
    d->app = strdup(app);
    d->kind = strdup(kind);
    d->key = strdup(key);
    d->version = strdup(version);
    sketch_init(&d->values);
    if (!d->app || !d->kind || !d->key || !d->version) {
        free(d->app);
        free(d->kind);
        free(d->key);
        free(d->version);
        free(d);
        return NULL;
    }
    d->next = *slot;
    *slot = d;
    return d;
}

static void delta_free(delta *d)
{
    free(d->app);
    free(d->kind);
    free(d->key);
    free(d->version);
    free(d->fingerprint);
    for (size_t i = 0; i < d->n_sessions; i++)
        free(d->sessions[i]);
    free(d->sessions);
    sketch_reset(&d->values);
    issue_details_free(&d->det);
    free(d);
}

static vdelta *vdelta_get(cycle *cy, const char *app, const char *version)
{
    uint64_t h = hash_strs(app, version, NULL);
    vdelta **slot = &cy->versions[h % BUCKETS];
    for (vdelta *v = *slot; v; v = v->next)
        if (v->h == h && strcmp(v->app, app) == 0 && strcmp(v->version, version) == 0)
            return v;
    vdelta *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->h = h;
    v->app = strdup(app);
    v->version = strdup(version);
    if (!v->app || !v->version) {
        free(v->app);
        free(v->version);
        free(v);
        return NULL;
    }
    v->next = *slot;
    *slot = v;
    if (!cy->last_version)
        cy->last_version = &cy->first_version;
    *cy->last_version = v;
    cy->last_version = &v->in_order;
    v->came = cy->n_versions++;
    return v;
}

static void cycle_free(cycle *cy)
{
    for (size_t b = 0; b < BUCKETS; b++) {
        for (delta *d = cy->deltas[b], *n; d; d = n) {
            n = d->next;
            delta_free(d);
        }
        for (vdelta *v = cy->versions[b], *n; v; v = n) {
            n = v->next;
            free(v->app);
            free(v->version);
            for (size_t i = 0; i < v->n_sessions; i++)
                free(v->sessions[i]);
            free(v->sessions);
            free(v);
        }
    }
    free(cy->seen.slots);
    memset(cy, 0, sizeof *cy);
}

static void on_occ(void *ctx, const occ *o)
{
    cycle *cy = *(cycle **)ctx; /* the analysis's cycle in progress */
    if (!o->app || !o->version || !o->kind || !o->key)
        return;
    char id[ISSUE_ID_LEN + 1];
    issues_db_id(o->app, o->kind, o->key, id);
    delta *d = delta_get(cy, id, o->app, o->kind, o->key, o->version);
    if (!d) {
        cy->oom = true;
        return;
    }
    d->count += o->count;
    d->total += o->total;
    d->lost_ms = add_ms(d->lost_ms, o->lost_ms);
    if (!isnan(o->value) && o->value >= 0)
        (void)sketch_add(&d->values, o->value);
    if (o->count > 0) {
        if (!d->first_ns || o->ts < d->first_ns)
            d->first_ns = o->ts;
        if (o->ts > d->last_ns)
            d->last_ns = o->ts;
    }
    if (o->affected && o->session && d->n_sessions < MAX_SESSIONS_PER_DELTA &&
        hset_add(&cy->seen, hash_strs(id, o->version, o->session)))
        if (!push_str(&d->sessions, &d->n_sessions, &d->cap_sessions, o->session))
            cy->oom = true;
    if (o->fingerprint && !d->fingerprint)
        d->fingerprint = strdup(o->fingerprint);
    if (o->page && o->count > 0)
        issue_details_count(d->det.pages, &d->det.n_pages, o->page, o->count);
    if (o->status)
        issue_details_count(d->det.statuses, &d->det.n_statuses, o->status, o->count);
    if (o->profile)
        issue_details_profile(&d->det, o->profile, o->profile_hints, o->n_profile_hints);
    for (int k = 0; k < 5; k++)
        d->det.levels[k] += o->levels[k];
    d->det.bytes += o->bytes;
    if (o->example)
        issue_details_example(&d->det, o->example, o->example_value);
}

/* ---- the thread ---- */

struct analysis {
    issues_db *db; /* its tables */
    store *records; /* the store whose rows it reads */
    const ana_config *cfg;
    const enum target_kind *targets;
    size_t n_targets;
    void (*kick)(void *ctx);
    void *kick_ctx;
    detector *det;
    cycle *cur; /* the cycle reading rows (the detectors' occurrences go to it) */
    bool primed; /* the kept requests were filled from before the marks */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping;
    analysis_stats stats;
};

typedef struct reading {
    analysis *a;
    cycle *cy;
    enum store_table table;
    bool pages;
} reading;

static bool on_row(void *ctx, const store_mark_row *row)
{
    reading *rd = ctx;
    cycle *cy = rd->cy;
    cy->rows++;
    enum store_table t = row->table;
    int ca = store_layout_col(t, SRC_COMMON, PACER_COMMON_APP), cv = store_layout_col(t, SRC_COMMON, PACER_COMMON_VERSION);
    int cs = store_layout_col(t, SRC_COMMON, PACER_COMMON_SESSION), ct = store_layout_col(t, SRC_COMMON, PACER_COMMON_TS);
    const char *app = ca >= 0 && row->cols[ca].type == SV_TEXT ? row->cols[ca].p : NULL;
    if (!app)
        return true;
    const char *version = cv >= 0 && row->cols[cv].type == SV_TEXT ? row->cols[cv].p : "unknown";
    const char *session = cs >= 0 && row->cols[cs].type == SV_TEXT ? row->cols[cs].p : NULL;
    int64_t ts = ct >= 0 && row->cols[ct].type == SV_INT ? row->cols[ct].i : 0;
    vdelta *v = vdelta_get(cy, app, version);
    if (!v) {
        cy->oom = true;
        return false;
    }
    v->records++;
    if (!v->first_ns || ts < v->first_ns)
        v->first_ns = ts;
    if (ts > v->last_ns)
        v->last_ns = ts;
    v->pages |= t == TABLE_PAGE_LOADS || t == TABLE_STARTUPS;
    if (session && *session && hset_add(&cy->seen, hash_strs("\001version", app, version) ^ hash_strs(session, "", "")))
        if (!push_str(&v->sessions, &v->n_sessions, &v->cap_sessions, session))
            cy->oom = true;
    detect_row(rd->a->det, row);
    return !cy->oom;
}

static bool on_old_request(void *ctx, const store_mark_row *row)
{
    detect_remember(ctx, row);
    return true;
}

/* The marks of the sources, from the issue tables. */
static int read_marks(void *ctx, sqlite3 *db)
{
    int64_t *marks = ctx;
    for (size_t s = 0; s < N_SOURCES; s++)
        if (issues_db_mark_get(db, sources[s].mark, &marks[s]) < 0)
            return -EIO;
    return 0;
}

/* The rows of each source after its mark, at most cycle-records each. */
static int read_rows(reading *rd, const int64_t *marks)
{
    analysis *a = rd->a;
    cycle *cy = rd->cy;
    int64_t last[TABLE_COUNT];
    if (store_marks_last(a->records, last) < 0)
        return -EIO;
    for (size_t s = 0; s < N_SOURCES; s++) {
        enum store_table t = sources[s].table;
        enum store_filter f = sources[s].filter;
        int64_t mark = marks[s];
        if (mark > last[t])
            mark = last[t]; /* a file restored from a backup */
        bool want[STORE_MAX_COLS];
        detect_columns(t, want);
        if (t == TABLE_REQUESTS && !a->primed) {
            /* the requests of page loads still to come, after a restart */
            int64_t from;
            if (store_marks_step(a->records, t, STORE_ROWS_ALL, mark, mark, -DETECT_REQUESTS, &from) < 0 ||
                store_rows_after(a->records, t, STORE_ROWS_ALL, from, mark, want, on_old_request, a->det) < 0)
                return -EIO;
            a->primed = true;
        }
        int64_t upto = mark;
        if (last[t] > mark && store_marks_step(a->records, t, f, mark, last[t], (long)a->cfg->cycle_records, &upto) < 0)
            return -EIO;
        rd->table = t;
        if (store_rows_after(a->records, t, f, mark, upto, want, on_row, rd) < 0)
            return -EIO;
        if (cy->oom)
            return -ENOMEM;
        cy->marks[s] = upto;
        int64_t behind;
        if (store_marks_behind(a->records, t, f, upto, last[t], &behind) < 0)
            return -EIO;
        cy->behind += behind;
    }
    detect_flush(a->det);
    return cy->oom ? -ENOMEM : 0;
}

/* ---- the write ---- */

typedef struct writing {
    analysis *a;
    cycle *cy;
    bool regression; /* the second write: regression outcomes, no marks */
    uint64_t transitions;
    int64_t issues[4]; /* by status, once written */
    bool counted;
} writing;

/* A candidate's row, made when new (within the app's limit). false: not followed. */
static int ensure_candidate(sqlite3 *db, const delta *d, iss_issue *i)
{
    int r = issues_db_issue_load(db, d->id, i);
    if (r < 0 || i->exists)
        return r;
    int64_t n = issues_db_candidates(db, d->app);
    if (n < 0)
        return (int)n;
    if (n >= MAX_CANDIDATES)
        return 1;
    i->app = strdup(d->app);
    i->kind = strdup(d->kind);
    i->key = strdup(d->key);
    if (!i->app || !i->kind || !i->key)
        return -ENOMEM;
    i->exists = true;
    return 0;
}

static int apply_delta(sqlite3 *db, const delta *d)
{
    iss_issue i = {0};
    int r = ensure_candidate(db, d, &i);
    if (r != 0) {
        issues_db_issue_reset(&i);
        return r < 0 ? r : 0;
    }
    iss_vstat v;
    issues_db_vstat_init(&v);
    bool found;
    r = issues_db_vstat_load(db, d->id, d->version, &v, &found);
    if (r == 0 && d->replace) {
        bool was = v.qualifies;
        sketch_reset(&v.values);
        v.count = d->count;
        v.total = d->total;
        v.lost_ms = add_ms(0, d->lost_ms);
        v.sessions = d->affected;
        v.first_ns = d->first_ns;
        v.last_ns = d->last_ns;
        v.qualifies = was || d->qualifies; /* a regression once found stays found */
        v.check_a = d->check_a;
        v.check_b = d->check_b;
    } else if (r == 0) {
        v.count += d->count;
        v.total += d->total;
        v.lost_ms = add_ms(v.lost_ms, d->lost_ms);
        if (d->count > 0) {
            if (!v.first_ns || (d->first_ns && d->first_ns < v.first_ns))
                v.first_ns = d->first_ns;
            if (d->last_ns > v.last_ns)
                v.last_ns = d->last_ns;
        }
        r = sketch_merge(&v.values, &d->values);
        for (size_t k = 0; r == 0 && k < d->n_sessions; k++) {
            int added = issues_db_session_add(db, d->id, d->version, d->sessions[k]);
            if (added < 0)
                r = added;
            else
                v.sessions += added;
        }
    }
    if (r == 0)
        r = issues_db_vstat_save(db, d->id, &v);
    issues_db_vstat_reset(&v);
    if (r == 0) {
        iss_details det = {0};
        (void)issue_details_parse(i.details, &det);
        if (d->replace) { /* the latest test's figures */
            free(det.example);
            det.example = NULL;
        }
        issue_details_merge(&det, &d->det);
        jbuf b;
        jbuf_init(&b);
        issue_details_json(&det, &b);
        issue_details_free(&det);
        if (b.failed) {
            r = -ENOMEM;
        } else {
            free(i.details);
            i.details = jbuf_steal(&b, NULL);
        }
        jbuf_free(&b);
        if (d->fingerprint && !i.fingerprint)
            i.fingerprint = strdup(d->fingerprint);
        if (r == 0)
            r = issues_db_issue_save(db, &i);
    }
    issues_db_issue_reset(&i);
    return r;
}

/* Judges the touched candidates and the open issues of the touched apps. */
static int judge_all(writing *w, sqlite3 *db)
{
    cycle *cy = w->cy;
    lc_context lc = {.db = db, .cfg = w->a->cfg, .targets = w->a->targets, .n_targets = w->a->n_targets,
                     .now_ns = wall_ns()};
    hset judged = {0};
    int r = 0;
    for (size_t b = 0; b < BUCKETS && r == 0; b++)
        for (delta *d = cy->deltas[b]; d && r == 0; d = d->next) {
            if (!hset_add(&judged, hash_strs(d->id, "", "")))
                continue;
            if ((r = lifecycle_set_app(&lc, d->app)) == 0 && (r = lifecycle_judge(&lc, d->id, NULL)) == -ENOENT)
                r = 0; /* not followed (the app's limit) */
        }
    char (*open_ids)[ISSUE_ID_LEN + 1] = malloc(MAX_OPEN * sizeof *open_ids);
    if (!open_ids)
        r = -ENOMEM;
    for (size_t b = 0; b < BUCKETS && r == 0; b++)
        for (vdelta *v = cy->versions[b]; v && r == 0; v = v->next) {
            if (!hset_add(&judged, hash_strs("\001app", v->app, "")))
                continue;
            size_t n;
            if ((r = issues_db_open_ids(db, v->app, open_ids, MAX_OPEN, &n)) < 0 || (r = lifecycle_set_app(&lc, v->app)) < 0)
                break;
            for (size_t k = 0; k < n && r == 0; k++)
                if (hset_add(&judged, hash_strs(open_ids[k], "", "")))
                    r = lifecycle_judge(&lc, open_ids[k], NULL);
        }
    w->transitions += lc.transitions;
    lifecycle_free(&lc);
    free(open_ids);
    free(judged.slots);
    return r == -ENOENT ? 0 : r;
}

/* A version new to the app takes the next place in first-seen order: the
 * versions of one cycle by their earliest record, then as they came. */
static int cmp_first_seen(const void *a, const void *b)
{
    const vdelta *x = *(vdelta *const *)a, *y = *(vdelta *const *)b;
    if (x->first_ns != y->first_ns)
        return x->first_ns < y->first_ns ? -1 : 1;
    return x->came < y->came ? -1 : x->came > y->came;
}

static int write_cycle(void *ctx, sqlite3 *db)
{
    writing *w = ctx;
    cycle *cy = w->cy;
    int r = 0;
    vdelta **order = calloc(cy->n_versions ? cy->n_versions : 1, sizeof *order);
    if (!order)
        return -ENOMEM;
    size_t n = 0;
    for (vdelta *v = cy->first_version; v; v = v->in_order)
        order[n++] = v;
    qsort(order, n, sizeof *order, cmp_first_seen);
    for (size_t k = 0; k < n && r == 0; k++) {
        vdelta *v = order[k];
        {
            r = issues_db_version_touch(db, v->app, v->version, v->first_ns, NULL, v->records);
            if (r == 0 && v->last_ns != v->first_ns)
                r = issues_db_version_touch(db, v->app, v->version, v->last_ns, NULL, 0);
            for (size_t m = 0; m < v->n_sessions && r == 0; m++)
                r = issues_db_version_touch(db, v->app, v->version, v->first_ns, v->sessions[m], 0);
        }
    }
    free(order);
    for (size_t b = 0; b < BUCKETS && r == 0; b++)
        for (delta *d = cy->deltas[b]; d && r == 0; d = d->next)
            r = apply_delta(db, d);
    for (size_t s = 0; s < N_SOURCES && r == 0 && !w->regression; s++)
        r = issues_db_mark_set(db, sources[s].mark, cy->marks[s]);
    if (r == 0)
        r = judge_all(w, db);
    if (r == 0 && !w->regression && w->a->stats.cycles % PRUNE_CYCLES == 0)
        r = issues_db_prune(db, wall_ns());
    int64_t counts[5];
    if (r == 0 && issues_db_status_counts(db, counts) == 0) {
        memcpy(w->issues, counts, sizeof w->issues);
        w->counted = true;
    }
    return r;
}

/* ---- regressions (regress.c) ---- */

typedef struct pair_find {
    cycle *cy;
    const ana_config *cfg;
    regress_pairs *out;
} pair_find;

/* The pairs to test: those of each version with new page loads or
 * start-ups. */
static int find_pairs(void *ctx, sqlite3 *db)
{
    pair_find *pf = ctx;
    int r = 0;
    for (size_t b = 0; b < BUCKETS && r == 0; b++)
        for (vdelta *v = pf->cy->versions[b]; v && r == 0; v = v->next)
            if (v->pages)
                r = regress_pairs_due(db, pf->cfg, v->app, v->version, pf->out);
    return r;
}

static int save_pairs(void *ctx, sqlite3 *db)
{
    return regress_pairs_save(db, ctx);
}

/* A name's outcome (regress_test) as a delta that replaces the version's
 * figures. */
static int on_outcome(void *ctx, const regress_outcome *o)
{
    cycle *cy = ctx;
    const regress_pair *p = o->pair;
    char id[ISSUE_ID_LEN + 1];
    issues_db_id(p->app, o->kind, o->name, id);
    delta *d = delta_get(cy, id, p->app, o->kind, o->name, p->cur);
    if (!d)
        return -ENOMEM;
    d->replace = true;
    d->qualifies = o->flagged;
    d->count = o->n_cur;
    d->total = o->n_base;
    d->affected = o->affected;
    d->lost_ms = o->lost_ms;
    d->first_ns = o->first_ns;
    d->last_ns = o->last_ns;
    d->check_a = p->n_base;
    d->check_b = p->n_cur;
    if (o->evidence)
        issue_details_example(&d->det, o->evidence, 1);
    if (o->flagged)
        issue_details_count(d->det.pages, &d->det.n_pages, o->name, 1);
    return 0;
}

/* ---- a cycle ---- */

static void run_cycle(analysis *a)
{
    int64_t t0 = mono_ns();
    cycle cy = {.cfg = a->cfg};
    reading rd = {.a = a, .cy = &cy};
    a->cur = &cy;
    int64_t marks[N_SOURCES];
    int r = issues_db_read(a->db, read_marks, marks);
    if (r == 0)
        r = read_rows(&rd, marks);
    a->cur = NULL;
    writing w = {.a = a, .cy = &cy};
    if (r == 0)
        r = issues_db_write(a->db, write_cycle, &w);
    /* the rows read are the marks' now: what the store keeps to find them
     * again goes, but for the newest, which the duplicate filter reads at
     * start (its marks written first: a failure leaves more, never less) */
    for (size_t s = 0; s < N_SOURCES && r == 0; s++)
        store_marks_forget(a->records, sources[s].table, cy.marks[s] - (int64_t)a->cfg->dedupe_records);
    uint64_t rows = cy.rows;
    int64_t behind = cy.behind;
    regress_pairs pairs = {0};
    if (r == 0) {
        pair_find pf = {&cy, a->cfg, &pairs};
        cycle cy2 = {.cfg = a->cfg};
        if (issues_db_read(a->db, find_pairs, &pf) == 0 && pairs.n) {
            int rr = 0;
            for (size_t i = 0; i < pairs.n && rr == 0; i++)
                rr = regress_test(a->records, analysis_config_app(a->cfg, pairs.p[i].app), &pairs.p[i], on_outcome,
                                  &cy2);
            writing w2 = {.a = a, .cy = &cy2, .regression = true};
            if (rr == 0)
                rr = issues_db_write(a->db, write_cycle, &w2);
            if (rr == 0)
                rr = issues_db_write(a->db, save_pairs, &pairs);
            w.transitions += w2.transitions;
            if (w2.counted) {
                memcpy(w.issues, w2.issues, sizeof w.issues);
                w.counted = true;
            }
            if (rr < 0)
                r = rr;
        }
        cycle_free(&cy2);
    }
    free(pairs.p);
    cycle_free(&cy);
    pthread_mutex_lock(&a->lock);
    a->stats.cycles++;
    a->stats.failures += r < 0;
    a->stats.failures_in_a_row = r < 0 ? a->stats.failures_in_a_row + 1 : 0;
    a->stats.rows += rows;
    a->stats.behind = behind;
    a->stats.last_cycle_s = (double)(mono_ns() - t0) / 1e9;
    a->stats.transitions += w.transitions;
    if (w.counted)
        memcpy(a->stats.issues, w.issues, sizeof a->stats.issues);
    pthread_mutex_unlock(&a->lock);
    if (w.transitions && a->kick)
        a->kick(a->kick_ctx);
}

static void *analysis_main(void *arg)
{
    analysis *a = arg;
    /* background work: when ingest and the analysis want the same CPU,
     * ingest gets it (the analysis catches up when there is room) */
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
    pthread_mutex_lock(&a->lock);
    while (!a->stopping) {
        pthread_mutex_unlock(&a->lock);
        run_cycle(a);
        pthread_mutex_lock(&a->lock);
        if (a->stats.behind > 0 && !a->stats.failures_in_a_row)
            continue; /* rows wait: the next cycle at once */
        int64_t until = mono_ns() + (int64_t)a->cfg->interval_ms * 1000000LL;
        while (!a->stopping && cond_wait_until(&a->wake, &a->lock, until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

analysis *analysis_start(issues_db *db, store *records, const ana_config *cfg, const enum target_kind *targets,
                         size_t n_targets, void (*kick)(void *ctx), void *kick_ctx)
{
    analysis *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    *a = (analysis){.db = db, .records = records, .cfg = cfg, .targets = targets, .n_targets = n_targets,
                    .kick = kick, .kick_ctx = kick_ctx};
    a->det = detect_new(cfg, on_occ, &a->cur);
    pthread_mutex_init(&a->lock, NULL);
    cond_init_monotonic(&a->wake);
    if (!a->det || thread_start(&a->thread, "pacerd-analyze", analysis_main, a) < 0) {
        detect_free(a->det);
        free(a);
        return NULL;
    }
    return a;
}

void analysis_stop(analysis *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    a->stopping = true;
    pthread_cond_signal(&a->wake);
    pthread_mutex_unlock(&a->lock);
    pthread_join(a->thread, NULL);
    detect_free(a->det);
    pthread_mutex_destroy(&a->lock);
    pthread_cond_destroy(&a->wake);
    free(a);
}

void analysis_get_stats(analysis *a, analysis_stats *ret)
{
    pthread_mutex_lock(&a->lock);
    *ret = a->stats;
    pthread_mutex_unlock(&a->lock);
}

typedef struct manual {
    analysis *a;
    const char *id, *status;
    uint64_t transitions;
} manual;

static int set_status(void *ctx, sqlite3 *db)
{
    manual *m = ctx;
    iss_issue i = {0};
    int r = issues_db_issue_load(db, m->id, &i);
    if (r == 0 && (!i.exists || !i.status[0]))
        r = -ENOENT;
    lc_context lc = {.db = db, .cfg = m->a->cfg, .targets = m->a->targets, .n_targets = m->a->n_targets,
                     .now_ns = wall_ns()};
    if (r == 0 && (r = lifecycle_set_app(&lc, i.app)) == 0)
        r = lifecycle_judge(&lc, m->id, m->status);
    m->transitions = lc.transitions;
    lifecycle_free(&lc);
    issues_db_issue_reset(&i);
    return r;
}

int analysis_set_status(analysis *a, const char *id, const char *status)
{
    manual m = {a, id, status, 0};
    int r = issues_db_write(a->db, set_status, &m);
    if (r == 0 && m.transitions && a->kick)
        a->kick(a->kick_ctx);
    return r;
}
