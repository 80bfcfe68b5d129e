/* pacer bench: what it prints and writes.
 *
 *   text      the terminal / CI log: the machine, a table of every metric,
 *             then one line per regression (metric, shift in ms and %, its
 *             95 % interval, both medians, p, the gate) and the warnings
 *   Markdown  the same for a CI comment (--report-md)
 *   JUnit     XML, each metric a test case that fails when it regressed and
 *             is skipped when it had too few samples or one side lacks it
 *             (--junit); the JUnit format of Jenkins, GitLab and GitHub
 *             reporters
 *
 * Warnings: the noisy metrics (bench_compare.h), a baseline taken on
 * another CPU model, kernel, GTK or pacer, other processes busy during the
 * runs (median above BENCH_BUSY_WARN CPUs), and a CPU clock that changed
 * between runs (by more than 5 %).
 */
#ifndef PACER_CLI_BENCH_REPORT_H
#define PACER_CLI_BENCH_REPORT_H

#include "bench_compare.h"

#include <stdio.h>

#define BENCH_BUSY_WARN 0.25

typedef struct bench_report {
    const bench_result *res;
    const bench_gate *gate;
    const bench_set *base, *cur; /* either may be NULL */
    const char *base_label;      /* e.g. "base.json", "server:1.4 (pacerd …)", "OTHER, interleaved" */
    const char *cur_label;       /* the program, or the file of --current */
    size_t warmup;               /* warm-up runs per side (not in the samples) */
} bench_report;

void bench_report_text(const bench_report *r, FILE *out);

/* 0, or -EIO when out could not be written. */
int bench_report_markdown(const bench_report *r, FILE *out);
int bench_report_junit(const bench_report *r, FILE *out);

#endif
