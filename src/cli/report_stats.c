/* pacer report: samples of one metric and their nearest-rank percentiles. */
#include "report_stats.h"

#include <errno.h>
#include <stdlib.h>

int report_samples_add(report_samples *s, double value)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        double *v = realloc(s->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    /* Appending in order keeps the "sorted" flag true for the common case of
     * a single value, and costs nothing to track. */
    if (s->n > 0 && value < s->v[s->n - 1])
        s->sorted = 0;
    else if (s->n == 0)
        s->sorted = 1;
    s->v[s->n++] = value;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void report_samples_sort(report_samples *s)
{
    if (s->sorted || s->n < 2) {
        s->sorted = 1;
        return;
    }
    qsort(s->v, s->n, sizeof(*s->v), cmp_double);
    s->sorted = 1;
}

double report_samples_pct(const report_samples *s, unsigned pct)
{
    /* rank = ceil(pct * n / 100), 1-based, clamped to 1..n. */
    size_t rank = (pct * s->n + 99) / 100;
    if (rank < 1)
        rank = 1;
    if (rank > s->n)
        rank = s->n;
    return s->v[rank - 1];
}

void report_samples_release(report_samples *s)
{
    free(s->v);
    *s = (report_samples){0};
}

void report_metric_header(FILE *out, const char *first_column)
{
    fprintf(out, "  %-*s %7s %9s %9s %9s %9s\n", REPORT_NAME_WIDTH, first_column, "n", "p50", "p90", "p99",
            "max");
}

void report_metric_row(FILE *out, const char *name, report_samples *s)
{
    fprintf(out, "  %-*s %7zu", REPORT_NAME_WIDTH, name, s->n);
    if (s->n == 0) {
        fprintf(out, " %9s %9s %9s %9s\n", "-", "-", "-", "-");
        return;
    }
    report_samples_sort(s);
    fprintf(out, " %9.1f %9.1f %9.1f %9.1f\n", report_samples_pct(s, 50), report_samples_pct(s, 90),
            report_samples_pct(s, 99), s->v[s->n - 1]);
}

int report_json_set(json_t *obj, const char *key, json_t *value)
{
    if (!value)
        return -ENOMEM;
    return json_object_set_new(obj, key, value) == 0 ? 0 : -ENOMEM;
}

json_t *report_metric_json(report_samples *s)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int r = report_json_set(o, "n", json_integer((json_int_t)s->n));
    if (s->n == 0) {
        if (r == 0)
            r = report_json_set(o, "p50", json_null());
        if (r == 0)
            r = report_json_set(o, "p90", json_null());
        if (r == 0)
            r = report_json_set(o, "p99", json_null());
        if (r == 0)
            r = report_json_set(o, "max", json_null());
    } else {
        report_samples_sort(s);
        if (r == 0)
            r = report_json_set(o, "p50", json_real(report_samples_pct(s, 50)));
        if (r == 0)
            r = report_json_set(o, "p90", json_real(report_samples_pct(s, 90)));
        if (r == 0)
            r = report_json_set(o, "p99", json_real(report_samples_pct(s, 99)));
        if (r == 0)
            r = report_json_set(o, "max", json_real(s->v[s->n - 1]));
    }
    if (r < 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}
