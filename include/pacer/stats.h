/* The statistics of regression tests: pacer bench's gate (src/cli) and
 * pacerd's regressions between versions (src/server) share them. A
 * component of its own (src/stats/, libc and libm only).
 *
 * Everything here works on plain arrays of doubles (milliseconds), owns
 * nothing the caller passes in, and is deterministic: the only randomness
 * is a seeded generator the caller holds, so a run with the same samples
 * and the same seed prints the same figures.
 *
 *   median        the middle value; the mean of the two middle ones for an
 *                 even count
 *   MAD           median absolute deviation from the median (unscaled);
 *                 1.4826 × MAD estimates the standard deviation of a normal
 *                 sample and, unlike it, ignores a few wild runs
 *   bootstrap CI  percentile interval of the median (or of the difference of
 *                 two medians) over `resamples` resamples drawn with
 *                 replacement; the quantiles interpolate linearly between
 *                 order statistics (R's type 7)
 *   Mann–Whitney  U of the second sample = the number of pairs (x, y) with
 *                 y > x, ties counting one half. Without ties and with
 *                 nx·ny ≤ STATS_MWU_EXACT_MAX, p comes from U's exact null
 *                 distribution; otherwise from the normal approximation with
 *                 the tie correction of the variance and a continuity
 *                 correction of 0.5 (as scipy.stats.mannwhitneyu,
 *                 method="asymptotic", use_continuity=True)
 *   Wilcoxon      signed-rank test of paired differences y_i − x_i (the
 *                 runs of two builds that alternated): zeros are dropped,
 *                 ties take mid-ranks; W+ = the sum of the ranks of |d| of
 *                 the positive differences. Its exact null distribution is
 *                 that of the sign-flip permutations of the ranks: used
 *                 without ties for up to STATS_WSR_EXACT_MAX pairs, else the
 *                 normal approximation with the tie correction and a
 *                 continuity correction of 0.5 (as
 *                 scipy.stats.wilcoxon, method="approx", correction=True)
 *   Holm          Holm–Bonferroni adjusted p-values: the family-wise error
 *                 rate over all the metrics compared stays at most α
 *
 * Not thread-safe in the sense that a stats_rng is used by one thread.
 */
#ifndef PACER_STATS_H
#define PACER_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- a seeded generator (xoshiro256**, its state filled by splitmix64) ---- */

typedef struct stats_rng {
    uint64_t s[4];
} stats_rng;

void stats_rng_seed(stats_rng *rng, uint64_t seed);
uint64_t stats_rng_next(stats_rng *rng);
/* Uniform in [0, n), without modulo bias; n > 0. */
size_t stats_rng_below(stats_rng *rng, size_t n);

/* ---- one sample ---- */

/* The median of v (n values, any order); NAN when n is 0. Returns -ENOMEM
 * when a scratch copy cannot be made, else 0. */
int stats_median(const double *v, size_t n, double *ret);

/* The median of n sorted values (no allocation); NAN when n is 0. */
double stats_median_sorted(const double *sorted, size_t n);

/* The quantile q (0..1) of n sorted values, interpolated (type 7). */
double stats_quantile_sorted(const double *sorted, size_t n, double q);

typedef struct stats_summary {
    size_t n;
    double median, mad, min, max;
    double ci_lo, ci_hi; /* bootstrap 95 % interval of the median */
} stats_summary;

/* Summarises n values (n > 0). The interval takes `resamples` bootstrap
 * resamples from rng (at least 1). 0 or -ENOMEM. */
int stats_summarize(const double *v, size_t n, unsigned resamples, stats_rng *rng, stats_summary *ret);

/* ---- two samples ---- */

typedef struct stats_shift {
    double shift;        /* median(cur) − median(base) */
    double ci_lo, ci_hi; /* bootstrap 95 % interval of it */
} stats_shift;

/* The shift of the median from base to cur, each resampled on its own.
 * nb, nc > 0. 0 or -ENOMEM. */
int stats_shift_ci(const double *base, size_t nb, const double *cur, size_t nc, unsigned resamples,
                   stats_rng *rng, stats_shift *ret);

/* Largest nx·ny for which the exact distribution of U is used. */
#define STATS_MWU_EXACT_MAX 2500

typedef struct stats_mwu {
    double u;         /* U of y */
    double p_greater; /* one-sided: y tends to be larger than x */
    double p_less;    /* one-sided: y tends to be smaller */
    bool exact;       /* exact null distribution (no ties, nx·ny small) */
    bool ties;        /* some values occur more than once */
} stats_mwu;

/* The Mann–Whitney U test of x (the baseline) against y (the current
 * samples); nx, ny > 0. 0 or -ENOMEM. */
int stats_mann_whitney(const double *x, size_t nx, const double *y, size_t ny, stats_mwu *ret);

/* Largest number of non-zero differences for the exact signed-rank test. */
#define STATS_WSR_EXACT_MAX 200

typedef struct stats_wsr {
    double w_plus;    /* the sum of the ranks of the positive differences */
    size_t n;         /* non-zero differences */
    double p_greater; /* one-sided: the differences tend to be positive */
    double p_less;
    bool exact, ties;
} stats_wsr;

/* The Wilcoxon signed-rank test of n differences. 0 or -ENOMEM. */
int stats_wilcoxon(const double *d, size_t n, stats_wsr *ret);

/* The median of n differences (n > 0) and its bootstrap 95 % interval
 * (the differences resampled). 0 or -ENOMEM. */
int stats_paired_shift_ci(const double *d, size_t n, unsigned resamples, stats_rng *rng, stats_shift *ret);

/* The smallest one-sided p the exact test can give for samples of nx and
 * ny values (all of y above all of x): 1 / C(nx+ny, nx). When it is above
 * the level, no shift however large is significant. */
double stats_mwu_min_p(size_t nx, size_t ny);

/* Holm–Bonferroni: adj[i] is p[i] adjusted over the n p-values (at most 1;
 * reject hypothesis i at family-wise level α when adj[i] ≤ α). NAN entries
 * are not part of the family and stay NAN. 0 or -ENOMEM. */
int stats_holm(const double *p, size_t n, double *adj);

/* ---- the normal distribution ---- */

double stats_norm_cdf(double z);
/* The z with stats_norm_cdf(z) = p, 0 < p < 1 (to double precision). */
double stats_norm_quantile(double p);

/* ---- planning ---- */

/* A robust standard deviation of n values: 1.4826 × MAD, or the sample
 * standard deviation when the MAD is 0 (over half the values equal) and
 * they are not all equal. 0 for n < 2. -ENOMEM or 0. */
int stats_sigma(const double *v, size_t n, double *ret);

/* The smallest shift of the median that a one-sided Mann–Whitney test at
 * level alpha detects with probability `power`, for samples of nb and nc
 * values of a normal distribution with standard deviation sigma (the
 * t-test's figure divided by the square root of the U test's efficiency
 * there, 3/π). */
double stats_min_detectable(double sigma, size_t nb, size_t nc, double alpha, double power);

/* The same for the signed-rank test of n pairs whose differences spread
 * with sigma: (z_{1−α} + z_power) · sigma / sqrt(n) / sqrt(3/π); INFINITY
 * when even n positive differences (p = 2^−n) do not reach alpha. */
double stats_min_detectable_paired(double sigma, size_t n, double alpha, double power);

/* Pairs the signed-rank test needs to detect `shift` (and for 2^−n to
 * reach alpha). */
size_t stats_pairs_needed(double sigma, double shift, double alpha, double power);

/* How many runs on each side the same test needs to detect `shift`
 * (shift > 0): the normal figure, and at least enough for
 * stats_mwu_min_p to reach alpha. Saturates at SIZE_MAX / 2. */
size_t stats_runs_needed(double sigma, double shift, double alpha, double power);

#endif
