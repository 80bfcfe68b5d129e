/* pacer report: the start-up section (records of type "startup", DESIGN §3.2).
 *
 * Cold and warm starts are summarised apart, since they measure different
 * spans. A start flagged `outlier` (launch -> app_created over the threshold)
 * is counted but kept out of every percentile, as Matrix does: one start after
 * a suspend would otherwise own p99.
 */
#include "report.h"
#include "report_fields.h"
#include "report_stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {"cold", "warm", NULL};

static const char *const cold_metrics[] = {"cold_ms", "first_screen_ms", "app_cost_ms", "full_display_ms", NULL};
static const char *const warm_metrics[] = {"warm_ms", NULL};
#define MAX_METRICS 4

typedef struct start_kind {
    const char *const *metric_names; /* NULL-terminated */
    size_t count;                    /* every start of this kind, outliers included */
    size_t outliers;
    report_samples metric[MAX_METRICS]; /* outliers excluded */
} start_kind;

typedef struct startup_summary {
    start_kind cold, warm;
} startup_summary;

static void *startup_new(void)
{
    startup_summary *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->cold.metric_names = cold_metrics;
    s->warm.metric_names = warm_metrics;
    return s;
}

static void startup_free(void *state)
{
    startup_summary *s = state;
    if (!s)
        return;
    for (size_t i = 0; i < MAX_METRICS; i++) {
        report_samples_release(&s->cold.metric[i]);
        report_samples_release(&s->warm.metric[i]);
    }
    free(s);
}

static int startup_check(json_t *rec, char *reason)
{
    int r;
    if ((r = report_check_enum(rec, "kind", 1, kind_names, reason)) < 0 ||
        (r = report_check_bool(rec, "outlier", 0, reason)) < 0 ||
        (r = report_check_object(rec, "phases", 0, reason)) < 0)
        return r;
    /* Every duration is checked whatever the kind: a cold record with a
     * malformed warm_ms is still malformed. */
    for (size_t i = 0; cold_metrics[i]; i++)
        if ((r = report_check_ms(rec, cold_metrics[i], reason)) < 0)
            return r;
    return report_check_ms(rec, "warm_ms", reason);
}

static int startup_add(void *state, json_t *rec, const report_options *opt)
{
    startup_summary *s = state;
    start_kind *k = strcmp(json_string_value(report_field(rec, "kind")), "cold") == 0 ? &s->cold : &s->warm;
    k->count++;
    if (json_is_true(report_field(rec, "outlier"))) {
        k->outliers++;
        return 0;
    }
    for (size_t i = 0; k->metric_names[i]; i++) {
        json_t *v = report_field(rec, k->metric_names[i]);
        int r;
        if (v && (r = report_samples_add(&k->metric[i], json_number_value(v))) < 0)
            return r;
    }
    return 0;
}

static void print_kind(FILE *out, const char *label, start_kind *k)
{
    fprintf(out, "\n%s starts: %zu (%zu outlier%s)\n", label, k->count, k->outliers, k->outliers == 1 ? "" : "s");
    report_metric_header(out, "metric (ms)");
    for (size_t i = 0; k->metric_names[i]; i++)
        report_metric_row(out, k->metric_names[i], &k->metric[i]);
}

static void startup_print_text(void *state, FILE *out, const report_options *opt)
{
    startup_summary *s = state;
    fprintf(out, "Start-up\n");
    if (s->cold.count == 0 && s->warm.count == 0) {
        fprintf(out, "  no start-up records\n");
        return;
    }
    print_kind(out, "cold", &s->cold);
    print_kind(out, "warm", &s->warm);
    fprintf(out, "\noutliers: %zu (excluded from the percentiles above)\n", s->cold.outliers + s->warm.outliers);
}

static json_t *kind_json(start_kind *k)
{
    json_t *o = json_object(), *metrics = json_object();
    int r = (o && metrics) ? 0 : -ENOMEM;
    for (size_t i = 0; r == 0 && k->metric_names[i]; i++)
        r = report_json_set(metrics, k->metric_names[i], report_metric_json(&k->metric[i]));
    if (r == 0)
        r = report_json_set(o, "count", json_integer((json_int_t)k->count));
    if (r == 0)
        r = report_json_set(o, "outliers", json_integer((json_int_t)k->outliers));
    if (r == 0) {
        r = report_json_set(o, "metrics", metrics);
        metrics = NULL;
    }
    json_decref(metrics);
    if (r < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *startup_to_json(void *state, const report_options *opt)
{
    startup_summary *s = state;
    json_t *o = json_object();
    if (!o)
        return NULL;
    int r = report_json_set(o, "cold", kind_json(&s->cold));
    if (r == 0)
        r = report_json_set(o, "warm", kind_json(&s->warm));
    if (r == 0)
        r = report_json_set(o, "outliers", json_integer((json_int_t)(s->cold.outliers + s->warm.outliers)));
    if (r < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

const report_section report_startup_section = {
    .type = "startup",
    .json_key = "startup",
    .state_new = startup_new,
    .state_free = startup_free,
    .check = startup_check,
    .add = startup_add,
    .print_text = startup_print_text,
    .to_json = startup_to_json,
};
