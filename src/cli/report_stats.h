/* pacer report: samples of one metric and their percentiles.
 *
 * Percentiles are nearest-rank: with the n values sorted ascending, the p-th
 * percentile is the value at 1-based rank ceil(p/100 * n). It is always one of
 * the measured values, never an interpolation; for the values 1..100 p50 is 50,
 * p90 is 90 and p99 is 99. The rank is computed in integers, so no floating
 * point rounding can move it.
 */
#ifndef PACER_CLI_REPORT_STATS_H
#define PACER_CLI_REPORT_STATS_H

#include <jansson.h>

#include <stddef.h>
#include <stdio.h>

typedef struct report_samples {
    double *v;
    size_t n, cap;
    int sorted;
} report_samples;

/* Appends one value. Returns 0, or -ENOMEM (the samples are unchanged). */
int report_samples_add(report_samples *s, double value);

/* Sorts the values ascending; cheap when already sorted. */
void report_samples_sort(report_samples *s);

/* The nearest-rank percentile `pct` (1..100) of sorted, non-empty samples. */
double report_samples_pct(const report_samples *s, unsigned pct);

/* Frees the values; the struct itself belongs to the caller and is left empty. */
void report_samples_release(report_samples *s);

/* Width of the name column in metric tables. */
#define REPORT_NAME_WIDTH 18

/* Prints the header of a metric table (name, n, p50, p90, p99, max), indented. */
void report_metric_header(FILE *out, const char *first_column);

/* Prints one metric row; "-" stands for percentiles of an empty metric. Sorts s. */
void report_metric_row(FILE *out, const char *name, report_samples *s);

/* Returns {"n":..,"p50":..,"p90":..,"p99":..,"max":..} (null values when
 * empty) as a new reference, or NULL when out of memory. Sorts s. */
json_t *report_metric_json(report_samples *s);

/* Sets obj[key] = value, taking the reference to value. Returns 0, or -ENOMEM
 * when value is NULL or the set fails (value is released either way). */
int report_json_set(json_t *obj, const char *key, json_t *value);

#endif
