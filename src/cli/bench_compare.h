/* pacer bench: the verdict per metric.
 *
 * A metric regresses when, with at least min_samples values on each side:
 *   - the one-sided Mann–Whitney U test (current larger than baseline),
 *     Holm-adjusted over every metric compared, has p ≤ alpha; and
 *   - the shift of the median, current − baseline, is above the gate:
 *     threshold_pct of the baseline's median and floor_ms, whichever is
 *     larger.
 * It improved when the same holds the other way. Both conditions are
 * needed: a tiny but certain shift (a request that takes 300.9 ms instead
 * of 300.8) is not worth failing a build for, and a large one that noise
 * could explain is not evidence.
 *
 * Detectability: the smallest shift the comparison would find with
 * probability `power`, from the baseline's robust spread (1.4826 × MAD) and
 * both sample counts at the Bonferroni level alpha / metrics
 * (stats_min_detectable). A metric whose detectable shift is above its gate
 * is `noisy`: a regression of the size of the gate could pass unseen;
 * runs_needed says how many runs on each side would see it. With so few
 * runs that even samples that do not overlap at all give a p above the
 * level (stats_mwu_min_p), nothing is detectable (INFINITY).
 *
 * Paired runs (--vs: the two builds ran alternately, pair i being the
 * i-th run of each): the test is then the one-sided Wilcoxon signed-rank
 * test of the pair differences current − baseline (the exact sign-flip
 * permutation test of their ranks), the shift the median of the
 * differences and its interval a bootstrap of the pairs, and
 * detectability comes from the spread of the differences. A slowdown of
 * the machine that hits both runs of a pair cancels out of the
 * difference, which an unpaired test cannot use.
 *
 * Intervals are bootstrap intervals from a generator seeded with the seed
 * and the metric's name, so one metric's figures do not depend on which
 * others are there.
 */
#ifndef PACER_CLI_BENCH_COMPARE_H
#define PACER_CLI_BENCH_COMPARE_H

#include "bench_samples.h"
#include <pacer/stats.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bench_gate {
    double threshold_pct; /* default 5 */
    double floor_ms;      /* default 5 */
    double alpha;         /* family-wise, default 0.05 */
    double power;         /* for detectability, 0.8 */
    unsigned resamples;   /* bootstrap resamples, default 2000 */
    uint64_t seed;
    size_t min_samples;   /* fewer on a side: no verdict (default 4) */
    size_t planned_runs;  /* without current samples: the runs a comparison would have */
    bool paired;          /* base and cur ran alternately: run i of each is a pair */
} bench_gate;

typedef enum bench_verdict {
    BENCH_OK,
    BENCH_REGRESSION,
    BENCH_IMPROVED,
    BENCH_TOO_FEW,   /* fewer than min_samples on a side */
    BENCH_ONLY_BASE, /* the current runs lack it */
    BENCH_ONLY_CUR,  /* the baseline lacks it */
    BENCH_NO_BASE,   /* nothing to compare with: figures only */
} bench_verdict;

typedef struct bench_row {
    const char *name; /* into one of the sets */
    bool has_base, has_cur;
    stats_summary base, cur;
    stats_shift shift; /* with both sides */
    double pct;        /* shift / baseline median, % */
    stats_mwu mwu;     /* unpaired */
    stats_wsr wsr;     /* paired */
    size_t pairs;      /* paired: pairs where both runs have the metric */
    double p, p_less;  /* Holm-adjusted one-sided p-values; NAN when not compared */
    double gate_ms;    /* the smallest shift that fails */
    double sigma;      /* robust spread of the baseline (or of the current runs alone) */
    double detectable; /* see above */
    size_t runs_needed;
    bool noisy;
    bench_verdict verdict;
} bench_row;

typedef struct bench_result {
    bench_row *rows;
    size_t n;
    size_t compared, regressions, improved, noisy;
} bench_result;

/* Compares cur with base, metric by metric, in metric order (paired:
 * both must have as many runs). base NULL:
 * figures of cur only (detectability for as many runs again); cur NULL:
 * figures of base only (detectability for planned_runs current runs).
 * 0 or -ENOMEM. */
int bench_compare(const bench_set *base, const bench_set *cur, const bench_gate *g, bench_result *ret);

void bench_result_release(bench_result *res);

/* "regression", "ok", … */
const char *bench_verdict_name(bench_verdict v);

#endif
