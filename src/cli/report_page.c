/* pacer report: the page section (records of type "page", DESIGN §3.1).
 *
 * Per page class: how many records, how many of each status, the four page
 * metrics, and per API URL the request times and failures. A record reports
 * one page instance; a metric it lacks (e.g. api_load_ms of a page without
 * APIs) is simply not counted, so each metric has its own n.
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

static const char *const status_names[] = {"complete", "deadline_exceeded", "abandoned", "incomplete", NULL};
#define N_STATUS 4

static const char *const kind_names[] = {"window", "page", NULL};

static const char *const metric_names[] = {"initial_draw_ms", "api_load_ms", "final_draw_ms", "total_ms"};
#define N_METRICS 4

typedef struct page_api {
    char *name; /* the URL; first member, see report_index.h */
    size_t calls;
    size_t failures;
    report_samples ms;
} page_api;

typedef struct page_class {
    char *name; /* the page class; first member, see report_index.h */
    size_t count;
    size_t status[N_STATUS];
    report_samples metric[N_METRICS];
    report_index apis;
} page_class;

typedef struct page_summary {
    report_index classes;
} page_summary;

static void *page_new(void)
{
    return calloc(1, sizeof(page_summary));
}

static void api_release(void *item)
{
    report_samples_release(&((page_api *)item)->ms);
}

static void class_release(void *item)
{
    page_class *c = item;
    for (size_t i = 0; i < N_METRICS; i++)
        report_samples_release(&c->metric[i]);
    report_index_release(&c->apis, api_release);
}

static void page_free(void *state)
{
    page_summary *s = state;
    if (!s)
        return;
    report_index_release(&s->classes, class_release);
    free(s);
}

static int check_api(json_t *api, size_t i, char *reason)
{
    char inner[REPORT_REASON_MAX];
    int r;
    if (!json_is_object(api)) {
        snprintf(reason, REPORT_REASON_MAX, "apis[%zu] is not an object", i);
        return -EINVAL;
    }
    if ((r = report_check_string(api, "url", 1, inner)) < 0 || (r = report_check_ms(api, "ms", inner)) < 0 ||
        (r = report_check_integer(api, "status", 0, inner)) < 0) {
        snprintf(reason, REPORT_REASON_MAX, "apis[%zu]: %.200s", i, inner);
        return r;
    }
    return 0;
}

static int page_check(json_t *rec, char *reason)
{
    int r;
    if ((r = report_check_string(rec, "page", 1, reason)) < 0 ||
        (r = report_check_integer(rec, "instance", 0, reason)) < 0 ||
        (r = report_check_enum(rec, "kind", 0, kind_names, reason)) < 0 ||
        (r = report_check_enum(rec, "status", 1, status_names, reason)) < 0 ||
        (r = report_check_bool(rec, "main", 0, reason)) < 0)
        return r;
    for (size_t i = 0; i < N_METRICS; i++)
        if ((r = report_check_ms(rec, metric_names[i], reason)) < 0)
            return r;
    if ((r = report_check_array(rec, "apis", 0, reason)) < 0)
        return r;
    json_t *apis = report_field(rec, "apis");
    for (size_t i = 0; i < json_array_size(apis); i++)
        if ((r = check_api(json_array_get(apis, i), i, reason)) < 0)
            return r;
    return 0;
}

static int add_api(page_class *c, json_t *api)
{
    page_api *a = report_index_get(&c->apis, json_string_value(report_field(api, "url")), sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->calls++;
    json_t *status = report_field(api, "status");
    json_int_t code = status ? json_integer_value(status) : 0;
    if (code <= 0 || code >= 400)
        a->failures++;
    json_t *ms = report_field(api, "ms");
    if (ms)
        return report_samples_add(&a->ms, json_number_value(ms));
    return 0;
}

static int page_add(void *state, json_t *rec, const report_options *opt)
{
    page_summary *s = state;
    const char *name = json_string_value(report_field(rec, "page"));
    if (opt->page && strcmp(name, opt->page) != 0)
        return 0;

    page_class *c = report_index_get(&s->classes, name, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->count++;
    const char *status = json_string_value(report_field(rec, "status"));
    for (size_t i = 0; i < N_STATUS; i++)
        if (strcmp(status, status_names[i]) == 0)
            c->status[i]++;

    int r;
    for (size_t i = 0; i < N_METRICS; i++) {
        json_t *v = report_field(rec, metric_names[i]);
        if (v && (r = report_samples_add(&c->metric[i], json_number_value(v))) < 0)
            return r;
    }
    json_t *apis = report_field(rec, "apis");
    for (size_t i = 0; i < json_array_size(apis); i++)
        if ((r = add_api(c, json_array_get(apis, i))) < 0)
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
        for (size_t k = 0; k < N_STATUS; k++)
            fprintf(out, "%s%s %zu", k ? ", " : "", status_names[k], c->status[k]);
        fprintf(out, ")\n");
        report_metric_header(out, "metric (ms)");
        for (size_t k = 0; k < N_METRICS; k++)
            report_metric_row(out, metric_names[k], &c->metric[k]);
        if (c->apis.n > 0)
            print_apis(out, c);
    }
}

static json_t *api_json(page_api *a)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int r = report_json_set(o, "url", json_string(a->name));
    if (r == 0)
        r = report_json_set(o, "calls", json_integer((json_int_t)a->calls));
    if (r == 0)
        r = report_json_set(o, "n", json_integer((json_int_t)a->ms.n));
    if (a->ms.n > 0)
        report_samples_sort(&a->ms);
    if (r == 0)
        r = report_json_set(o, "p50", a->ms.n ? json_real(report_samples_pct(&a->ms, 50)) : json_null());
    if (r == 0)
        r = report_json_set(o, "p90", a->ms.n ? json_real(report_samples_pct(&a->ms, 90)) : json_null());
    if (r == 0)
        r = report_json_set(o, "failures", json_integer((json_int_t)a->failures));
    if (r < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *class_json(page_class *c)
{
    json_t *o = json_object(), *status = json_object(), *metrics = json_object(), *apis = json_array();
    int r = (o && status && metrics && apis) ? 0 : -ENOMEM;

    for (size_t k = 0; r == 0 && k < N_STATUS; k++)
        r = report_json_set(status, status_names[k], json_integer((json_int_t)c->status[k]));
    for (size_t k = 0; r == 0 && k < N_METRICS; k++)
        r = report_json_set(metrics, metric_names[k], report_metric_json(&c->metric[k]));
    page_api **list = (page_api **)report_index_sorted(&c->apis);
    for (size_t k = 0; r == 0 && k < c->apis.n; k++) {
        json_t *a = api_json(list[k]);
        r = (a && json_array_append_new(apis, a) == 0) ? 0 : -ENOMEM;
    }
    if (r == 0)
        r = report_json_set(o, "page", json_string(c->name));
    if (r == 0)
        r = report_json_set(o, "count", json_integer((json_int_t)c->count));
    if (r == 0) {
        r = report_json_set(o, "status", status);
        status = NULL;
    }
    if (r == 0) {
        r = report_json_set(o, "metrics", metrics);
        metrics = NULL;
    }
    if (r == 0) {
        r = report_json_set(o, "apis", apis);
        apis = NULL;
    }
    json_decref(status);
    json_decref(metrics);
    json_decref(apis);
    if (r < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *page_to_json(void *state, const report_options *opt)
{
    page_summary *s = state;
    json_t *arr = json_array();
    if (!arr)
        return NULL;
    page_class **classes = (page_class **)report_index_sorted(&s->classes);
    for (size_t i = 0; i < s->classes.n; i++) {
        json_t *c = class_json(classes[i]);
        if (!c || json_array_append_new(arr, c) < 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

const report_section report_page_section = {
    .type = "page",
    .json_key = "pages",
    .state_new = page_new,
    .state_free = page_free,
    .check = page_check,
    .add = page_add,
    .print_text = page_print_text,
    .to_json = page_to_json,
};
