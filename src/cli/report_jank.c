/* pacer report: the main-loop jank section (records of type "jank",
 * DESIGN §3.3).
 *
 * Janks are grouped by fingerprint (the same stuck code, across runs and
 * builds); records without one (no stack captured) form the group "-".
 * Per group: count, hangs, p50 and max of the busy time, the page of the
 * longest, and its top in-app frames ("function (file:line)"), up to
 * TOP_FRAMES. Groups print most frequent first.
 *
 * The schema lets a jank record go without its duration; the report cannot
 * place such a record in a group's times, so it rejects it (jank_check).
 */
#include "report.h"
#include "report_fields.h"
#include "report_index.h"
#include "report_stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TOP_FRAMES 3

/* The kind of a jank that reached hang-ms: one of the kind field's values. */
static const char hang_kind[] = "hang";

typedef struct jank_group {
    char *name; /* the fingerprint; first member, see report_index.h */
    size_t count, hangs;
    report_samples ms;
    double max_ms;
    char *page;
    char *top[TOP_FRAMES]; /* of the longest */
} jank_group;

typedef struct jank_summary {
    report_index groups;
} jank_summary;

static void *jank_new(void)
{
    return calloc(1, sizeof(jank_summary));
}

static void group_release(void *item)
{
    jank_group *g = item;
    report_samples_release(&g->ms);
    free(g->page);
    for (size_t i = 0; i < TOP_FRAMES; i++)
        free(g->top[i]);
}

static void jank_free(void *state)
{
    jank_summary *s = state;
    if (!s)
        return;
    report_index_release(&s->groups, group_release);
    free(s);
}

static int jank_check(const pacer_record *rec, char *reason)
{
    if (pacer_record_has(rec, PACER_JANK_DURATION_MS))
        return 0;
    snprintf(reason, REPORT_REASON_MAX, "missing field \"%s\" (a number of milliseconds)",
             report_field_name(PACER_RECORD_JANK, PACER_JANK_DURATION_MS));
    return -EINVAL;
}

static char *frame_text(const pacer_record *f)
{
    const char *fn = pacer_record_str(f, PACER_STACK_FUNCTION);
    const char *file = pacer_record_str(f, PACER_STACK_FILE);
    char *s = NULL;
    if (file) {
        const char *base = strrchr(file, '/');
        base = base ? base + 1 : file;
        if (asprintf(&s, "%s (%s:%lld)", fn, base, (long long)pacer_record_int(f, PACER_STACK_LINE)) < 0)
            s = NULL;
    } else {
        s = strdup(fn);
    }
    return s;
}

/* Keeps the page and top frames of rec, the group's new longest. */
static int keep_longest(jank_group *g, const pacer_record *rec)
{
    free(g->page);
    const char *page = pacer_record_str(rec, PACER_JANK_PAGE);
    g->page = NULL;
    if (page && !(g->page = strdup(page)))
        return -ENOMEM;
    for (size_t i = 0; i < TOP_FRAMES; i++) {
        free(g->top[i]);
        g->top[i] = NULL;
    }
    /* in-app frames first; without any, the topmost frames */
    size_t n = 0;
    for (int pass = 0; pass < 2 && n == 0; pass++)
        for (const pacer_record *f = pacer_record_child(rec, PACER_JANK_STACK); f && n < TOP_FRAMES;
             f = pacer_record_next(f)) {
            if (pass == 0 && !pacer_record_int(f, PACER_STACK_IN_APP))
                continue;
            if (!(g->top[n++] = frame_text(f)))
                return -ENOMEM;
        }
    return 0;
}

static int jank_add(void *state, const pacer_record *rec, const report_options *opt)
{
    jank_summary *s = state;
    const char *fp = pacer_record_str(rec, PACER_JANK_FINGERPRINT);
    jank_group *g = report_index_get(&s->groups, fp ? fp : "-", sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->count++;
    if (strcmp(pacer_record_str(rec, PACER_JANK_KIND), hang_kind) == 0)
        g->hangs++;
    double ms = pacer_record_ms(rec, PACER_JANK_DURATION_MS);
    if (g->count == 1 || ms > g->max_ms) {
        g->max_ms = ms;
        int r = keep_longest(g, rec);
        if (r < 0)
            return r;
    }
    return report_samples_add(&g->ms, ms);
}

static int by_count(const void *a, const void *b)
{
    const jank_group *x = *(jank_group *const *)a, *y = *(jank_group *const *)b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return strcmp(x->name, y->name);
}

static jank_group **sorted(jank_summary *s)
{
    jank_group **g = (jank_group **)report_index_sorted(&s->groups);
    qsort(g, s->groups.n, sizeof(*g), by_count);
    for (size_t i = 0; i < s->groups.n; i++)
        report_samples_sort(&g[i]->ms);
    return g;
}

static void jank_print_text(void *state, FILE *out, const report_options *opt)
{
    jank_summary *s = state;
    fprintf(out, "Main-loop jank, by fingerprint\n");
    if (s->groups.n == 0) {
        fprintf(out, "  no jank records\n");
        return;
    }
    jank_group **g = sorted(s);
    fprintf(out, "  %-16s %7s %7s %9s %9s  %s\n", "fingerprint", "count", "hangs", "p50 ms", "max ms", "page");
    for (size_t i = 0; i < s->groups.n; i++) {
        fprintf(out, "  %-16s %7zu %7zu %9.1f %9.1f  %s\n", g[i]->name, g[i]->count, g[i]->hangs,
                report_samples_pct(&g[i]->ms, 50), g[i]->max_ms, g[i]->page ? g[i]->page : "-");
        for (size_t k = 0; k < TOP_FRAMES && g[i]->top[k]; k++)
            fprintf(out, "      %s %s\n", k ? "  " : "at", g[i]->top[k]);
    }
}

static void jank_to_json(void *state, jbuf *out, const report_options *opt)
{
    jank_summary *s = state;
    jbuf_open(out, '[');
    jank_group **g = sorted(s);
    for (size_t i = 0; i < s->groups.n; i++) {
        jbuf_open(out, '{');
        jbuf_kv_str(out, "fingerprint", g[i]->name);
        jbuf_kv_u64(out, "count", g[i]->count);
        jbuf_kv_u64(out, "hangs", g[i]->hangs);
        report_json_number(out, "p50_ms", report_samples_pct(&g[i]->ms, 50));
        report_json_number(out, "max_ms", g[i]->max_ms);
        if (g[i]->page)
            jbuf_kv_str(out, "page", g[i]->page);
        else
            jbuf_kv_null(out, "page");
        jbuf_key(out, "top_frames");
        jbuf_open(out, '[');
        for (size_t k = 0; k < TOP_FRAMES && g[i]->top[k]; k++)
            jbuf_str(out, g[i]->top[k]);
        jbuf_close(out, ']');
        jbuf_close(out, '}');
    }
    jbuf_close(out, ']');
}

const report_section report_jank_section = {
    .type = PACER_RECORD_JANK,
    .json_key = "jank",
    .state_new = jank_new,
    .state_free = jank_free,
    .check = jank_check,
    .add = jank_add,
    .print_text = jank_print_text,
    .to_json = jank_to_json,
};
