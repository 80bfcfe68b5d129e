/* pacer report: the page section (records of type "page", DESIGN §3.1).
 *
 * Per page class: how many records, how many of each status (the values the
 * schema allows for it, in its order), every page metric (the fields the
 * schema flags PACER_FIELD_METRIC), and per API URL the request times and
 * failures. A record reports one page instance; a metric it lacks (e.g. the
 * API load time of a page without APIs) is simply not counted, so each
 * metric has its own n.
 *
 * An API call counts as failed when its HTTP status is >= 400, <= 0, or
 * absent: the last two mean no response arrived (an error or a request that
 * never finished).
 */
#include "report.h"
#include "report_fields.h"
#include "report_index.h"
#include "report_stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct page_api {
    char *name; /* the URL; first member, see report_index.h */
    size_t calls;
    size_t failures;
    report_samples ms;
} page_api;

typedef struct page_class {
    char *name; /* the page class; first member, see report_index.h */
    size_t count;
    report_samples metric[PACER_PAGE_N_FIELDS]; /* by field; only metrics are filled */
    report_index apis;
    size_t status[]; /* by the status's index in the schema's list */
} page_class;

typedef struct page_summary {
    report_index classes;
    report_values status; /* the values of the status field */
} page_summary;

static const pacer_field *page_field(unsigned field)
{
    return &report_shape(PACER_RECORD_PAGE)->fields[field];
}

static bool is_metric(unsigned field)
{
    return page_field(field)->flags & PACER_FIELD_METRIC;
}

static void page_free(void *state);

static void *page_new(void)
{
    page_summary *s = calloc(1, sizeof(*s));
    if (s && report_values_init(&s->status, page_field(PACER_PAGE_STATUS)) < 0) {
        page_free(s);
        return NULL;
    }
    return s;
}

static void api_release(void *item)
{
    report_samples_release(&((page_api *)item)->ms);
}

static void class_release(void *item)
{
    page_class *c = item;
    for (size_t i = 0; i < PACER_PAGE_N_FIELDS; i++)
        report_samples_release(&c->metric[i]);
    report_index_release(&c->apis, api_release);
}

static void page_free(void *state)
{
    page_summary *s = state;
    if (!s)
        return;
    report_index_release(&s->classes, class_release);
    report_values_release(&s->status);
    free(s);
}

static int add_api(page_class *c, const pacer_record *api)
{
    page_api *a = report_index_get(&c->apis, pacer_record_str(api, PACER_PAGE_API_URL), sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->calls++;
    int64_t code = pacer_record_int(api, PACER_PAGE_API_STATUS); /* 0 when absent */
    if (code <= 0 || code >= 400)
        a->failures++;
    if (pacer_record_has(api, PACER_PAGE_API_MS))
        return report_samples_add(&a->ms, pacer_record_ms(api, PACER_PAGE_API_MS));
    return 0;
}

static int page_add(void *state, const pacer_record *rec, const report_options *opt)
{
    page_summary *s = state;
    const char *name = pacer_record_str(rec, PACER_PAGE_CLASS);
    if (opt->page && strcmp(name, opt->page) != 0)
        return 0;

    page_class *c = report_index_get(&s->classes, name, sizeof(*c) + s->status.n * sizeof(c->status[0]));
    if (!c)
        return -ENOMEM;
    c->count++;
    long k = report_values_find(&s->status, pacer_record_str(rec, PACER_PAGE_STATUS));
    if (k >= 0)
        c->status[k]++;

    int r;
    double v;
    for (unsigned f = 0; f < PACER_PAGE_N_FIELDS; f++)
        if (is_metric(f) && report_number(rec, f, &v) && (r = report_samples_add(&c->metric[f], v)) < 0)
            return r;
    for (const pacer_record *api = pacer_record_child(rec, PACER_PAGE_APIS); api; api = pacer_record_next(api))
        if ((r = add_api(c, api)) < 0)
            return r;
    return 0;
}

static void print_apis(FILE *out, page_class *c)
{
    page_api **apis = (page_api **)report_index_sorted(&c->apis);
    int width = REPORT_NAME_WIDTH;
    for (size_t i = 0; i < c->apis.n; i++)
        if ((int)strlen(apis[i]->name) > width)
            width = (int)strlen(apis[i]->name);

    fprintf(out, "\n  %-*s %7s %7s %9s %9s %9s\n", width, "api", "calls", "n", "p50", "p90", "failures");
    for (size_t i = 0; i < c->apis.n; i++) {
        page_api *a = apis[i];
        fprintf(out, "  %-*s %7zu %7zu", width, a->name, a->calls, a->ms.n);
        if (a->ms.n == 0) {
            fprintf(out, " %9s %9s", "-", "-");
        } else {
            report_samples_sort(&a->ms);
            fprintf(out, " %9.1f %9.1f", report_samples_pct(&a->ms, 50), report_samples_pct(&a->ms, 90));
        }
        fprintf(out, " %9zu\n", a->failures);
    }
}

static void page_print_text(void *state, FILE *out, const report_options *opt)
{
    page_summary *s = state;
    fprintf(out, "Pages\n");
    if (s->classes.n == 0) {
        if (opt->page)
            fprintf(out, "  no page records of class %s\n", opt->page);
        else
            fprintf(out, "  no page records\n");
        return;
    }
    page_class **classes = (page_class **)report_index_sorted(&s->classes);
    for (size_t i = 0; i < s->classes.n; i++) {
        page_class *c = classes[i];
        fprintf(out, "\n%s: %zu record%s (", c->name, c->count, c->count == 1 ? "" : "s");
        size_t never_shown = 0;
        for (size_t k = 0, shown = 0; k < s->status.n; k++) {
            if (strcmp(s->status.v[k], "never_shown") == 0) {
                never_shown = c->status[k];
                continue;
            }
            fprintf(out, "%s%s %zu", shown++ ? ", " : "", s->status.v[k], c->status[k]);
        }
        /* built but never on screen: counted, not a failure */
        if (never_shown)
            fprintf(out, "; never shown %zu, not failures", never_shown);
        fprintf(out, ")\n");
        report_metric_header(out, "metric (ms)");
        for (unsigned f = 0; f < PACER_PAGE_N_FIELDS; f++)
            if (is_metric(f))
                report_metric_row(out, page_field(f)->name, &c->metric[f]);
        if (c->apis.n > 0)
            print_apis(out, c);
    }
}

static void api_json(jbuf *out, page_api *a)
{
    report_samples_sort(&a->ms);
    jbuf_open(out, '{');
    jbuf_kv_str(out, "url", a->name);
    jbuf_kv_u64(out, "calls", a->calls);
    jbuf_kv_u64(out, "n", a->ms.n);
    report_json_pct(out, "p50", &a->ms, 50);
    report_json_pct(out, "p90", &a->ms, 90);
    jbuf_kv_u64(out, "failures", a->failures);
    jbuf_close(out, '}');
}

static void class_json(jbuf *out, const page_summary *s, page_class *c)
{
    jbuf_open(out, '{');
    jbuf_kv_str(out, "page", c->name);
    jbuf_kv_u64(out, "count", c->count);
    jbuf_key(out, "status");
    jbuf_open(out, '{');
    for (size_t k = 0; k < s->status.n; k++)
        jbuf_kv_u64(out, s->status.v[k], c->status[k]);
    jbuf_close(out, '}');
    jbuf_key(out, "metrics");
    jbuf_open(out, '{');
    for (unsigned f = 0; f < PACER_PAGE_N_FIELDS; f++)
        if (is_metric(f)) {
            jbuf_key(out, page_field(f)->name);
            report_metric_json(out, &c->metric[f]);
        }
    jbuf_close(out, '}');
    jbuf_key(out, "apis");
    jbuf_open(out, '[');
    page_api **apis = (page_api **)report_index_sorted(&c->apis);
    for (size_t k = 0; k < c->apis.n; k++)
        api_json(out, apis[k]);
    jbuf_close(out, ']');
    jbuf_close(out, '}');
}

static void page_to_json(void *state, jbuf *out, const report_options *opt)
{
    page_summary *s = state;
    jbuf_open(out, '[');
    page_class **classes = (page_class **)report_index_sorted(&s->classes);
    for (size_t i = 0; i < s->classes.n; i++)
        class_json(out, s, classes[i]);
    jbuf_close(out, ']');
}

const report_section report_page_section = {
    .type = PACER_RECORD_PAGE,
    .json_key = "pages",
    .state_new = page_new,
    .state_free = page_free,
    .add = page_add,
    .print_text = page_print_text,
    .to_json = page_to_json,
};
