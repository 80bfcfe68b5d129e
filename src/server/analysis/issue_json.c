/* Issues as JSON and Markdown (issue_json.h). */
#include "issue_json.h"
#include "issue_details.h"

#include <pacer/base/array.h>
#include <pacer/base/utf8.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first member key of the object json of type `type` that take
 * accepts. */
static bool ijson_find(const char *json, const char *key, jtype type, bool (*take)(void *ctx, const jvalue *v),
                       void *ctx)
{
    if (!json)
        return false;
    size_t len = strlen(json);
    char *buf = malloc(len + 1);
    if (!buf)
        return false;
    memcpy(buf, json, len + 1);
    jread r;
    jread_init(&r, buf, len, NULL, 0);
    bool found = false;
    const char *k;
    size_t kl;
    if (jread_enter_object(&r))
        while (!found && jread_member(&r, &k, &kl) > 0) {
            jvalue v;
            if (!jread_value(&r, &v))
                break;
            if (kl == strlen(key) && memcmp(k, key, kl) == 0 && v.type == type)
                found = take(ctx, &v);
        }
    free(buf);
    return found;
}

typedef struct text_out {
    char *out;
    size_t size;
} text_out;

static bool take_text(void *ctx, const jvalue *v)
{
    text_out *o = ctx;
    utf8_copy(o->out, o->size, v->s, v->len);
    return true;
}

static bool take_num(void *ctx, const jvalue *v)
{
    return jvalue_double(v, ctx);
}

bool issue_json_str(const char *json, const char *key, char *out, size_t size)
{
    text_out o = {out, size};
    return ijson_find(json, key, JT_STRING, take_text, &o);
}

bool issue_json_num(const char *json, const char *key, double *ret)
{
    return ijson_find(json, key, JT_NUMBER, take_num, ret);
}

const char *issue_json_value_unit(const char *kind)
{
    if (strcmp(kind, "large_image") == 0 || strcmp(kind, "large_payload") == 0)
        return "bytes";
    if (strcmp(kind, "n_plus_one") == 0)
        return "requests";
    if (strcmp(kind, "leak") == 0)
        return "bytes or objects";
    return "ms";
}

/* The version rows of an issue, with their place in the app's order. */
typedef struct vrow {
    iss_vstat v;
    int64_t rank, version_sessions;
} vrow;

typedef struct vrows {
    vrow *rows;
    size_t n, cap;
    bool oom;
} vrows;

static bool collect(void *ctx, const iss_vstat *v)
{
    vrows *r = ctx;
    if (!ARRAY_GROW(r->rows, r->cap, r->n + 1, 8)) {
        r->oom = true;
        return false;
    }
    vrow *x = &r->rows[r->n++];
    memset(x, 0, sizeof *x);
    x->v = *v;
    sketch_init(&x->v.values);
    if (sketch_merge(&x->v.values, &v->values) < 0)
        r->oom = true;
    return !r->oom;
}

static int cmp_rank(const void *a, const void *b)
{
    const vrow *x = a, *y = b;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static void vrows_free(vrows *r)
{
    for (size_t i = 0; i < r->n; i++)
        sketch_reset(&r->rows[i].v.values);
    free(r->rows);
}

/* The issue's version rows, in the app's order. */
static int load_rows(sqlite3 *db, const ana_config *cfg, const iss_issue *i, vrows *out)
{
    memset(out, 0, sizeof *out);
    int r = issues_db_vstat_each(db, i->id, collect, out);
    if (r < 0 || out->oom) {
        vrows_free(out);
        return r < 0 ? r : -ENOMEM;
    }
    iss_version *vs;
    size_t nv;
    if ((r = issues_db_versions(db, i->app, &vs, &nv)) < 0) {
        vrows_free(out);
        return r;
    }
    const ana_thresholds *t = analysis_config_app(cfg, i->app);
    for (size_t k = 0; k < out->n; k++) {
        vrow *x = &out->rows[k];
        x->rank = INT64_MAX;
        for (size_t m = 0; m < nv; m++)
            if (strcmp(vs[m].version, x->v.version) == 0) {
                x->rank = analysis_config_version_rank(t, vs[m].version, vs[m].seq);
                x->version_sessions = vs[m].sessions;
            }
    }
    free(vs);
    qsort(out->rows, out->n, sizeof *out->rows, cmp_rank);
    return 0;
}

static bool is_regression(const char *kind)
{
    return strcmp(kind, "page_regression") == 0 || strcmp(kind, "startup_regression") == 0;
}

static void write_distribution(jbuf *b, const char *kind, const vrows *rows)
{
    sketch all;
    sketch_init(&all);
    for (size_t k = 0; k < rows->n; k++)
        (void)sketch_merge(&all, &rows->rows[k].v.values);
    if (all.count) {
        jbuf_key(b, "distribution");
        jbuf_open(b, '{');
        jbuf_kv_str(b, "unit", issue_json_value_unit(kind));
        jbuf_kv_i64(b, "count", (int64_t)all.count);
        jbuf_kv_double(b, "min", all.min);
        jbuf_kv_double(b, "p50", sketch_quantile(&all, 0.5));
        jbuf_kv_double(b, "p90", sketch_quantile(&all, 0.9));
        jbuf_kv_double(b, "p99", sketch_quantile(&all, 0.99));
        jbuf_kv_double(b, "max", all.max);
        jbuf_close(b, '}');
    }
    sketch_reset(&all);
}

static void write_evidence(jbuf *b, const iss_issue *i, const iss_details *det, const vrows *rows)
{
    jbuf_key(b, "evidence");
    jbuf_open(b, '{');
    jbuf_kv_str(b, "key", i->key);
    issue_details_members(det, b);
    if (!is_regression(i->kind))
        write_distribution(b, i->kind, rows);
    int64_t count = 0, total = 0;
    double lost = 0;
    for (size_t k = 0; k < rows->n; k++) {
        count += rows->rows[k].v.count;
        total += rows->rows[k].v.total;
        lost += rows->rows[k].v.lost_ms;
    }
    if (strcmp(i->kind, "net_error") == 0) {
        jbuf_kv_i64(b, "requests", total);
        jbuf_kv_i64(b, "errors", count);
        jbuf_kv_double(b, "error_rate", total ? (double)count / (double)total : 0);
    } else if (strcmp(i->kind, "slow_page") == 0 || strcmp(i->kind, "slow_request") == 0 ||
               strcmp(i->kind, "slow_startup") == 0 || strcmp(i->kind, "n_plus_one") == 0 ||
               strcmp(i->kind, "frozen_frames") == 0) {
        jbuf_kv_i64(b, strcmp(i->kind, "frozen_frames") == 0 ? "frames" : "measured", total);
        jbuf_kv_i64(b, strcmp(i->kind, "frozen_frames") == 0 ? "frozen_frames" : "over_threshold", count);
    }
    if (!is_regression(i->kind))
        jbuf_kv_double(b, "lost_ms", lost);
    jbuf_close(b, '}');
}

static void write_versions(jbuf *b, const vrows *rows)
{
    jbuf_key(b, "versions");
    jbuf_open(b, '[');
    for (size_t k = 0; k < rows->n; k++) {
        const iss_vstat *v = &rows->rows[k].v;
        jbuf_open(b, '{');
        jbuf_kv_str(b, "version", v->version);
        jbuf_kv_bool(b, "issue", v->qualifies);
        jbuf_kv_i64(b, "count", v->count);
        jbuf_kv_i64(b, "of", v->total);
        jbuf_kv_i64(b, "sessions", v->sessions);
        jbuf_kv_i64(b, "version_sessions", rows->rows[k].version_sessions);
        jbuf_kv_double(b, "lost_ms", v->lost_ms);
        if (v->first_ns)
            jbuf_kv_i64(b, "first_seen", v->first_ns / 1000000000LL);
        if (v->last_ns)
            jbuf_kv_i64(b, "last_seen", v->last_ns / 1000000000LL);
        if (v->values.count) {
            jbuf_kv_double(b, "p50", sketch_quantile(&v->values, 0.5));
            jbuf_kv_double(b, "p90", sketch_quantile(&v->values, 0.9));
        }
        jbuf_close(b, '}');
    }
    jbuf_close(b, ']');
}

static void kv_text(jbuf *b, const char *key, const char *s)
{
    if (s)
        jbuf_kv_str(b, key, s);
}

static void raw_member(jbuf *b, const char *key, const char *json)
{
    if (json && *json) {
        jbuf_key(b, key);
        jbuf_raw(b, json, strlen(json));
        b->need_comma = true; /* a value was written */
    }
}

/* What an issue's answers are made of: its version rows and its evidence
 * (facts_free frees them). 0 or -EIO, -ENOMEM. */
static int load_facts(sqlite3 *db, const ana_config *cfg, const iss_issue *i, vrows *rows, iss_details *det)
{
    *det = (iss_details){0};
    int r = load_rows(db, cfg, i, rows);
    if (r == 0)
        (void)issue_details_parse(i->details, det);
    return r;
}

static void facts_free(vrows *rows, iss_details *det)
{
    issue_details_free(det);
    vrows_free(rows);
}

int issue_json_write(sqlite3 *db, const ana_config *cfg, const iss_issue *i, jbuf *b)
{
    vrows rows;
    iss_details det;
    int r = load_facts(db, cfg, i, &rows, &det);
    if (r < 0)
        return r;
    jbuf_open(b, '{');
    jbuf_kv_str(b, "id", i->id);
    jbuf_kv_str(b, "app", i->app);
    jbuf_kv_str(b, "kind", i->kind);
    kv_text(b, "title", i->title);
    jbuf_kv_str(b, "severity", i->severity);
    jbuf_kv_str(b, "status", i->status);
    kv_text(b, "fingerprint", i->fingerprint);
    jbuf_kv_i64(b, "first_seen", i->first_ns / 1000000000LL);
    jbuf_kv_i64(b, "last_seen", i->last_ns / 1000000000LL);
    kv_text(b, "first_version", i->first_version);
    kv_text(b, "last_version", i->last_version);
    jbuf_kv_i64(b, "count", i->count);
    jbuf_kv_i64(b, "sessions", i->sessions);
    write_evidence(b, i, &det, &rows);
    raw_member(b, "grade", i->grade);
    write_versions(b, &rows);
    raw_member(b, "tracker", i->tracker);
    jbuf_close(b, '}');
    facts_free(&rows, &det);
    return 0;
}

int issue_json_write_id(sqlite3 *db, const ana_config *cfg, const char *id, jbuf *b)
{
    iss_issue i = {0};
    int r = issues_db_issue_load(db, id, &i);
    if (r == 0 && (!i.exists || !i.status[0]))
        r = -ENOENT;
    if (r == 0)
        r = issue_json_write(db, cfg, &i, b);
    issues_db_issue_reset(&i);
    return r;
}

/* ---- the issues API's answers ---- */

typedef struct listing {
    const ana_config *cfg;
    const iss_query *q;
    jbuf *out;
} listing;

static int list_rows(void *ctx, sqlite3 *db)
{
    listing *l = ctx;
    char ids[ISSUE_LIST_MAX][ISSUE_ID_LEN + 1];
    int64_t last[ISSUE_LIST_MAX];
    size_t n;
    bool more;
    if (l->q->limit > ISSUE_LIST_MAX)
        return -EINVAL;
    int r = issues_db_list(db, l->q, ids, last, &n, &more);
    if (r < 0)
        return r;
    jbuf_key(l->out, "issues");
    jbuf_open(l->out, '[');
    for (size_t i = 0; i < n && r == 0; i++)
        if ((r = issue_json_write_id(db, l->cfg, ids[i], l->out)) == -ENOENT)
            r = 0;
    jbuf_close(l->out, ']');
    if (r == 0 && more && n) {
        char cursor[64];
        snprintf(cursor, sizeof cursor, "%" PRId64 ".%s", last[n - 1], ids[n - 1]);
        jbuf_kv_str(l->out, "next", cursor);
    }
    return r;
}

int issue_json_list(issues_db *db, const ana_config *cfg, const iss_query *q, jbuf *b)
{
    listing l = {cfg, q, b};
    return issues_db_read(db, list_rows, &l);
}

typedef struct one {
    const ana_config *cfg;
    const char *id;
    jbuf *out;
} one;

static int one_row(void *ctx, sqlite3 *db)
{
    one *o = ctx;
    return issue_json_write_id(db, o->cfg, o->id, o->out);
}

int issue_json_one(issues_db *db, const ana_config *cfg, const char *id, jbuf *b)
{
    one o = {cfg, id, b};
    return issues_db_read(db, one_row, &o);
}

/* ---- Markdown ---- */

/* Text for a Markdown table cell or line: no newlines, '|' escaped. */
static void md_text(jbuf *b, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '\n' || *s == '\r')
            jbuf_raw(b, " ", 1);
        else if (*s == '|')
            jbuf_raw(b, "\\|", 2);
        else
            jbuf_raw(b, s, 1);
    }
}

/* A reader over a copy of the example (the reader writes into its text):
 * the copy, for the caller to free, or NULL without an example or memory. */
static char *read_example(const char *example, jread *r)
{
    if (!example)
        return NULL;
    size_t len = strlen(example);
    char *buf = malloc(len + 1);
    if (!buf)
        return NULL;
    memcpy(buf, example, len + 1);
    jread_init(r, buf, len, NULL, 0);
    return buf;
}

/* The frames of a stack (a JSON array in the example) as lines of a code block. */
static void md_stack(jbuf *b, const char *example)
{
    jread r;
    char *buf = read_example(example, &r);
    if (!buf)
        return;
    const char *k;
    size_t kl;
    bool any = false;
    if (jread_enter_object(&r))
        while (jread_member(&r, &k, &kl) > 0) {
            if (!(kl == 5 && memcmp(k, "stack", 5) == 0 && jread_peek(&r) == JT_ARRAY)) {
                jvalue v;
                if (!jread_value(&r, &v))
                    break;
                continue;
            }
            jread_enter_array(&r);
            while (jread_element(&r) > 0 && jread_enter_object(&r)) {
                char fn[256] = "?", mod[256] = "", file[512] = "";
                int64_t line = 0;
                bool in_app = false;
                const char *fk;
                size_t fkl;
                while (jread_member(&r, &fk, &fkl) > 0) {
                    jvalue v;
                    if (!jread_value(&r, &v))
                        break;
                    if (v.type == JT_STRING && fkl == 8 && memcmp(fk, "function", 8) == 0)
                        utf8_copy(fn, sizeof fn, v.s, v.len);
                    else if (v.type == JT_STRING && fkl == 6 && memcmp(fk, "module", 6) == 0)
                        utf8_copy(mod, sizeof mod, v.s, v.len);
                    else if (v.type == JT_STRING && fkl == 4 && memcmp(fk, "file", 4) == 0)
                        utf8_copy(file, sizeof file, v.s, v.len);
                    else if (fkl == 4 && memcmp(fk, "line", 4) == 0)
                        jvalue_int64(&v, &line);
                    else if (fkl == 6 && memcmp(fk, "in_app", 6) == 0)
                        in_app = v.type == JT_TRUE;
                }
                if (!any)
                    jbuf_puts(b, "\n```\n");
                any = true;
                jbuf_printf(b, "%s %s", in_app ? "*" : " ", fn);
                if (mod[0])
                    jbuf_printf(b, " (%s)", mod);
                if (file[0])
                    jbuf_printf(b, " %s:%lld", file, (long long)line);
                jbuf_raw(b, "\n", 1);
            }
            break;
        }
    if (any)
        jbuf_puts(b, "```\n(* the app's own code)\n");
    free(buf);
}

/* A frozen window's dominant phase, from the example. */
static void md_phase(jbuf *b, const char *example)
{
    jread r;
    char *buf = read_example(example, &r);
    if (!buf)
        return;
    const char *k;
    size_t kl;
    if (jread_enter_object(&r))
        while (jread_member(&r, &k, &kl) > 0) {
            jvalue v;
            if (!jread_value(&r, &v))
                break;
            if (v.type == JT_STRING && kl == 14 && memcmp(k, "dominant_phase", 14) == 0) {
                char phase[64];
                utf8_copy(phase, sizeof phase, v.s, v.len);
                jbuf_puts(b, "\n**Slow frames' time** went most to `");
                md_text(b, phase);
                jbuf_puts(b, "` (frame phases: events, update, layout, paint, present).\n");
            }
        }
    free(buf);
}

int issue_json_markdown(sqlite3 *db, const ana_config *cfg, const iss_issue *i, jbuf *b)
{
    vrows rows;
    iss_details det;
    int r = load_facts(db, cfg, i, &rows, &det);
    if (r < 0)
        return r;
    jbuf_puts(b, "**");
    md_text(b, i->title);
    jbuf_puts(b, "**\n\n");
    jbuf_printf(b, "| | |\n|---|---|\n| app | %s |\n| kind | `%s` |\n| severity | **%s** |\n| status | %s |\n",
                i->app, i->kind, i->severity, i->status);
    if (i->fingerprint)
        jbuf_printf(b, "| fingerprint | `%s` |\n", i->fingerprint);
    jbuf_puts(b, "| key | ");
    md_text(b, i->key);
    jbuf_printf(b, " |\n| versions | %s … %s |\n| occurrences | %lld in %lld sessions |\n| pacer id | `%s` |\n",
                i->first_version ? i->first_version : "?", i->last_version ? i->last_version : "?",
                (long long)i->count, (long long)i->sessions, i->id);
    double v;
    if (i->grade && issue_json_num(i->grade, "lost_ms_per_session", &v)) {
        double share = 0, sessions = 0, affected = 0, lost = 0;
        issue_json_num(i->grade, "share", &share);
        issue_json_num(i->grade, "sessions", &sessions);
        issue_json_num(i->grade, "affected_sessions", &affected);
        issue_json_num(i->grade, "lost_ms", &lost);
        char version[257] = "", rule[256] = "";
        issue_json_str(i->grade, "version", version, sizeof version);
        issue_json_str(i->grade, "rule", rule, sizeof rule);
        jbuf_printf(b, "\n**Grade** (version %s): %.0f of %.0f sessions affected (%.1f %%), %.1f ms lost in all, "
                       "%.1f ms per session: %s.\n",
                    version, affected, sessions, 100 * share, lost, v, rule);
    }
    if (det.n_pages) {
        jbuf_puts(b, "\n**Pages**: ");
        for (size_t k = 0; k < det.n_pages; k++) {
            jbuf_printf(b, "%s`", k ? ", " : "");
            md_text(b, det.pages[k].name);
            jbuf_printf(b, "` (%lld)", (long long)det.pages[k].n);
        }
        jbuf_raw(b, "\n", 1);
    }
    if (det.n_statuses) {
        jbuf_puts(b, "\n**Outcomes**: ");
        for (size_t k = 0; k < det.n_statuses; k++) {
            jbuf_printf(b, "%s", k ? ", " : "");
            md_text(b, det.statuses[k].name);
            jbuf_printf(b, " (%lld)", (long long)det.statuses[k].n);
        }
        jbuf_raw(b, "\n", 1);
    }
    md_stack(b, det.example);
    md_phase(b, det.example);
    if (det.n_profile_top) {
        /* the occurrences' profiles merged: the frames their samples are
         * charged to (the app's innermost, profile_frames.h), most first,
         * each with the leaf most of them were in when that is another */
        int64_t all = 0;
        bool shown[ISS_MAX_COUNTERS + 1] = {false};
        for (size_t k = 0; k < det.n_profile_top; k++)
            all += det.profile_top[k].n;
        jbuf_printf(b, "\n**Profile** (%lld samples of the stack while it was stuck, all occurrences): where the "
                       "app was, its innermost frame outside the system and toolkit libraries: ",
                    (long long)all);
        for (size_t n = 0; n < 5 && n < det.n_profile_top; n++) {
            size_t best = det.n_profile_top;
            for (size_t k = 0; k < det.n_profile_top; k++)
                if (!shown[k] && (best == det.n_profile_top || det.profile_top[k].n > det.profile_top[best].n))
                    best = k;
            shown[best] = true;
            const iss_counter *top = &det.profile_top[best];
            jbuf_printf(b, "%s`", n ? ", " : "");
            md_text(b, top->name);
            jbuf_puts(b, "`");
            /* its leaf: the "FRAME → LEAF" with the most samples */
            char prefix[ISS_MAX_NAME];
            issue_details_leaf_key(prefix, sizeof prefix, top->name, strlen(top->name), "", 0);
            size_t pl = strlen(prefix), leaf = det.n_profile_leaves;
            for (size_t k = 0; k < det.n_profile_leaves; k++)
                if (strncmp(det.profile_leaves[k].name, prefix, pl) == 0 &&
                    (leaf == det.n_profile_leaves || det.profile_leaves[k].n > det.profile_leaves[leaf].n))
                    leaf = k;
            if (leaf < det.n_profile_leaves) {
                jbuf_puts(b, " → `");
                md_text(b, det.profile_leaves[leaf].name + pl);
                jbuf_puts(b, "`");
            }
            jbuf_printf(b, " (%lld, %.0f %%)", (long long)top->n, all ? 100.0 * (double)top->n / (double)all : 0.0);
        }
        jbuf_raw(b, "\n", 1);
    }
    if (det.example) {
        jbuf_puts(b, "\n<details><summary>Representative occurrence</summary>\n\n```json\n");
        jbuf_puts(b, det.example);
        jbuf_puts(b, "\n```\n</details>\n");
    }
    jbuf_puts(b, "\n| version | issue | count | of | sessions | lost ms |\n|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < rows.n; k++) {
        const iss_vstat *x = &rows.rows[k].v;
        jbuf_puts(b, "| ");
        md_text(b, x->version);
        jbuf_printf(b, " | %s | %lld | %lld | %lld | %.1f |\n", x->qualifies ? "yes" : "no", (long long)x->count,
                    (long long)x->total, (long long)x->sessions, x->lost_ms);
    }
    jbuf_puts(b, "\nFiled by pacerd.\n");
    facts_free(&rows, &det);
    return 0;
}
