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

#include <pacer/base/json.h>

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

/* Writes {"n":..,"p50":..,"p90":..,"p99":..,"max":..} (null values when
 * empty) as the next value of out. Sorts s. */
void report_metric_json(jbuf *out, report_samples *s);

/* Writes the member key: v with at most 15 significant digits. Values read
 * from records, and sums of them, then come back as written (13426.593,
 * not the 13426.592999999997 that adding their binary forms gives). */
void report_json_number(jbuf *out, const char *key, double v);

/* Writes the member key: the nearest-rank percentile `pct` of s, or null
 * when s is empty. s must be sorted. */
void report_json_pct(jbuf *out, const char *key, const report_samples *s, unsigned pct);

#endif
