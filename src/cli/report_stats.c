/* pacer report: samples of one metric and their nearest-rank percentiles. */
#include "report_stats.h"

#include <errno.h>
#include <stdio.h>
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

void report_json_number(jbuf *out, const char *key, double v)
{
    /* jbuf_double writes the shortest text that reads back as its value:
     * for a value rounded to 15 digits, those 15 digits or fewer. */
    char text[32];
    snprintf(text, sizeof(text), "%.15g", v);
    jbuf_kv_double(out, key, strtod(text, NULL));
}

void report_json_pct(jbuf *out, const char *key, const report_samples *s, unsigned pct)
{
    if (s->n == 0)
        jbuf_kv_null(out, key);
    else
        report_json_number(out, key, report_samples_pct(s, pct));
}

void report_metric_json(jbuf *out, report_samples *s)
{
    report_samples_sort(s);
    jbuf_open(out, '{');
    jbuf_kv_u64(out, "n", s->n);
    report_json_pct(out, "p50", s, 50);
    report_json_pct(out, "p90", s, 90);
    report_json_pct(out, "p99", s, 99);
    report_json_pct(out, "max", s, 100);
    jbuf_close(out, '}');
}
