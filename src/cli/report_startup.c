/* pacer report: the start-up section (records of type "startup", DESIGN §3.2).
 *
 * Starts are summarised per kind (the values the schema allows for the kind
 * field: cold, warm), since the kinds measure different spans. A start
 * flagged outlier (launch -> app_created over the threshold) is counted but
 * kept out of every percentile, as Matrix does: one start after a suspend
 * would otherwise own p99.
 *
 * Which metrics a kind has: the fields the schema flags PACER_FIELD_METRIC
 * that its records carry (a cold start measures its phases from the
 * launch, a warm start one span), in schema order. A kind without records
 * shows none.
 */
#include "report.h"
#include "report_fields.h"
#include "report_stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct start_kind {
    const char *name;                /* the kind, in the summary's kinds */
    size_t count;                    /* every start of this kind, outliers included */
    size_t outliers;
    bool has[PACER_STARTUP_N_FIELDS]; /* the metric fields its records carry */
    report_samples metric[PACER_STARTUP_N_FIELDS]; /* by field; outliers excluded */
} start_kind;

typedef struct startup_summary {
    report_values kinds; /* the values of the kind field */
    start_kind *kind;    /* kinds.n of them, in the same order */
} startup_summary;

static const pacer_field *startup_field(unsigned field)
{
    return &report_shape(PACER_RECORD_STARTUP)->fields[field];
}

static void startup_free(void *state);

static void *startup_new(void)
{
    startup_summary *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    if (report_values_init(&s->kinds, startup_field(PACER_STARTUP_KIND)) < 0 ||
        !(s->kind = calloc(s->kinds.n, sizeof(*s->kind)))) {
        startup_free(s);
        return NULL;
    }
    for (size_t k = 0; k < s->kinds.n; k++)
        s->kind[k].name = s->kinds.v[k];
    return s;
}

static void startup_free(void *state)
{
    startup_summary *s = state;
    if (!s)
        return;
    for (size_t k = 0; s->kind && k < s->kinds.n; k++)
        for (size_t f = 0; f < PACER_STARTUP_N_FIELDS; f++)
            report_samples_release(&s->kind[k].metric[f]);
    free(s->kind);
    report_values_release(&s->kinds);
    free(s);
}

static int startup_add(void *state, const pacer_record *rec, const report_options *opt)
{
    startup_summary *s = state;
    long i = report_values_find(&s->kinds, pacer_record_str(rec, PACER_STARTUP_KIND));
    if (i < 0)
        return 0; /* the schema requires the kind and one of the list: not reached */
    start_kind *k = &s->kind[i];
    k->count++;
    bool outlier = pacer_record_int(rec, PACER_STARTUP_OUTLIER);
    k->outliers += outlier;
    double v;
    int r;
    for (unsigned f = 0; f < PACER_STARTUP_N_FIELDS; f++) {
        if (!(startup_field(f)->flags & PACER_FIELD_METRIC) || !report_number(rec, f, &v))
            continue;
        k->has[f] = true;
        if (!outlier && (r = report_samples_add(&k->metric[f], v)) < 0)
            return r;
    }
    return 0;
}

static size_t outliers(const startup_summary *s)
{
    size_t n = 0;
    for (size_t k = 0; k < s->kinds.n; k++)
        n += s->kind[k].outliers;
    return n;
}

static void print_kind(FILE *out, start_kind *k)
{
    fprintf(out, "\n%s starts: %zu (%zu outlier%s)\n", k->name, k->count, k->outliers, k->outliers == 1 ? "" : "s");
    report_metric_header(out, "metric (ms)");
    for (unsigned f = 0; f < PACER_STARTUP_N_FIELDS; f++)
        if (k->has[f])
            report_metric_row(out, startup_field(f)->name, &k->metric[f]);
}

static void startup_print_text(void *state, FILE *out, const report_options *opt)
{
    startup_summary *s = state;
    fprintf(out, "Start-up\n");
    size_t starts = 0;
    for (size_t k = 0; k < s->kinds.n; k++)
        starts += s->kind[k].count;
    if (starts == 0) {
        fprintf(out, "  no start-up records\n");
        return;
    }
    for (size_t k = 0; k < s->kinds.n; k++)
        print_kind(out, &s->kind[k]);
    fprintf(out, "\noutliers: %zu (excluded from the percentiles above)\n", outliers(s));
}

static void kind_json(jbuf *out, start_kind *k)
{
    jbuf_open(out, '{');
    jbuf_kv_u64(out, "count", k->count);
    jbuf_kv_u64(out, "outliers", k->outliers);
    jbuf_key(out, "metrics");
    jbuf_open(out, '{');
    for (unsigned f = 0; f < PACER_STARTUP_N_FIELDS; f++)
        if (k->has[f]) {
            jbuf_key(out, startup_field(f)->name);
            report_metric_json(out, &k->metric[f]);
        }
    jbuf_close(out, '}');
    jbuf_close(out, '}');
}

static void startup_to_json(void *state, jbuf *out, const report_options *opt)
{
    startup_summary *s = state;
    jbuf_open(out, '{');
    for (size_t k = 0; k < s->kinds.n; k++) {
        jbuf_key(out, s->kind[k].name);
        kind_json(out, &s->kind[k]);
    }
    jbuf_kv_u64(out, "outliers", outliers(s));
    jbuf_close(out, '}');
}

const report_section report_startup_section = {
    .type = PACER_RECORD_STARTUP,
    .json_key = "startup",
    .state_new = startup_new,
    .state_free = startup_free,
    .add = startup_add,
    .print_text = startup_print_text,
    .to_json = startup_to_json,
};
