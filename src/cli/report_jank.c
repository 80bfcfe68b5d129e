/* pacer report: the main-loop jank section (records of type "jank",
 * DESIGN §3.3).
 *
 * Janks are grouped by fingerprint (the same stuck code, across runs and
 * builds); records without one (no stack captured) form the group "-".
 * Per group: count, hangs, p50 and max of duration_ms, the page of the
 * longest, and its top in-app frames ("function (file:line)"), up to
 * TOP_FRAMES. Groups print most frequent first.
 */
#include "report.h"
#include "report_fields.h"
#include "report_index.h"
#include "report_stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TOP_FRAMES 3

static const char *const kind_names[] = {"jank", "hang", NULL};

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

static int jank_check(json_t *rec, char *reason)
{
    int r;
    if ((r = report_check_enum(rec, "kind", 1, kind_names, reason)) < 0 ||
        (r = report_check_string(rec, "fingerprint", 0, reason)) < 0 ||
        (r = report_check_string(rec, "page", 0, reason)) < 0 ||
        (r = report_check_array(rec, "stack", 0, reason)) < 0)
        return r;
    if (!report_field(rec, "duration_ms")) {
        snprintf(reason, REPORT_REASON_MAX, "field \"duration_ms\" is missing");
        return -EINVAL;
    }
    if ((r = report_check_ms(rec, "duration_ms", reason)) < 0)
        return r;
    json_t *stack = report_field(rec, "stack");
    for (size_t i = 0; i < json_array_size(stack); i++) {
        json_t *f = json_array_get(stack, i);
        char inner[REPORT_REASON_MAX];
        if (!json_is_object(f) || report_check_string(f, "function", 1, inner) < 0 ||
            report_check_string(f, "file", 0, inner) < 0 || report_check_integer(f, "line", 0, inner) < 0) {
            snprintf(reason, REPORT_REASON_MAX, "stack[%zu] is not a frame with a function", i);
            return -EINVAL;
        }
    }
    return 0;
}

static char *frame_text(json_t *f)
{
    const char *fn = json_string_value(report_field(f, "function"));
    json_t *file = report_field(f, "file");
    char *s = NULL;
    if (file) {
        const char *base = strrchr(json_string_value(file), '/');
        base = base ? base + 1 : json_string_value(file);
        if (asprintf(&s, "%s (%s:%lld)", fn, base, (long long)json_integer_value(report_field(f, "line"))) < 0)
            s = NULL;
    } else {
        s = strdup(fn);
    }
    return s;
}

static int jank_add(void *state, json_t *rec, const report_options *opt)
{
    jank_summary *s = state;
    json_t *fp = report_field(rec, "fingerprint");
    jank_group *g = report_index_get(&s->groups, fp ? json_string_value(fp) : "-", sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->count++;
    if (strcmp(json_string_value(report_field(rec, "kind")), "hang") == 0)
        g->hangs++;
    double ms = json_number_value(report_field(rec, "duration_ms"));
    if (g->count == 1 || ms > g->max_ms) {
        g->max_ms = ms;
        free(g->page);
        json_t *page = report_field(rec, "page");
        g->page = page ? strdup(json_string_value(page)) : NULL;
        for (size_t i = 0; i < TOP_FRAMES; i++) {
            free(g->top[i]);
            g->top[i] = NULL;
        }
        /* in-app frames first; without any, the topmost frames */
        json_t *stack = report_field(rec, "stack");
        size_t n = 0;
        for (int pass = 0; pass < 2 && n == 0; pass++)
            for (size_t i = 0; i < json_array_size(stack) && n < TOP_FRAMES; i++) {
                json_t *f = json_array_get(stack, i);
                if (pass == 0 && !json_is_true(report_field(f, "in_app")))
                    continue;
                if (!(g->top[n++] = frame_text(f)))
                    return -ENOMEM;
            }
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

static json_t *jank_to_json(void *state, const report_options *opt)
{
    jank_summary *s = state;
    json_t *arr = json_array();
    if (!arr)
        return NULL;
    jank_group **g = sorted(s);
    for (size_t i = 0; i < s->groups.n; i++) {
        json_t *top = json_array();
        for (size_t k = 0; top && k < TOP_FRAMES && g[i]->top[k]; k++)
            if (json_array_append_new(top, json_string(g[i]->top[k])) < 0) {
                json_decref(top);
                top = NULL;
            }
        json_t *o = top ? json_pack("{s:s,s:I,s:I,s:f,s:f,s:o,s:o}", "fingerprint", g[i]->name, "count",
                                    (json_int_t)g[i]->count, "hangs", (json_int_t)g[i]->hangs, "p50_ms",
                                    report_samples_pct(&g[i]->ms, 50), "max_ms", g[i]->max_ms, "page",
                                    g[i]->page ? json_string(g[i]->page) : json_null(), "top_frames", top)
                        : NULL;
        if (!o || json_array_append_new(arr, o) < 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

const report_section report_jank_section = {
    .type = "jank",
    .json_key = "jank",
    .state_new = jank_new,
    .state_free = jank_free,
    .check = jank_check,
    .add = jank_add,
    .print_text = jank_print_text,
    .to_json = jank_to_json,
};
