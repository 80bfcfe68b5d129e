/* The statistics of pacer bench and pacerd (src/stats/stats.c) against reference
 * values.
 *
 * The Mann–Whitney p-values are scipy 1.10's (scipy.stats.mannwhitneyu(y,
 * x, alternative=..., method="exact" or "asymptotic", use_continuity=True)
 * on the arrays below, which numpy drew once with a fixed seed); the normal
 * quantiles are scipy.stats.norm's; the others are worked out by hand in
 * the comments. The bootstrap has no reference value to match: it is held
 * to its own definition (reproducible with a seed, a degenerate sample
 * gives a point) and to what it is for (its 95 % interval covers the true
 * median in about 95 % of samples).
 */
#include <pacer/stats.h>

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void assert_rel(double got, double want, double rel, const char *what)
{
    if (!(fabs(got - want) <= rel * fabs(want)))
        fail_msg("%s: %.17g, want %.17g (relative tolerance %g)", what, got, want, rel);
}

static void assert_abs(double got, double want, double tol, const char *what)
{
    if (!(fabs(got - want) <= tol))
        fail_msg("%s: %.17g, want %.17g (tolerance %g)", what, got, want, tol);
}

static const double ex15_x[] = {
    703.215, 694.061, 683.52, 674.877, 667.265, 690.224, 680.273, 679.534,
    687.336, 689.378, 662.679, 701.102, 665.678, 712.315, 697.087,
};
static const double ex15_y[] = {
    694.338, 716.116, 700.249, 708.291, 701.287, 713.158, 712.737, 689.112,
    692.65, 704.119, 697.48, 672.581, 724.313, 673.9, 675.021,
};
static const double ex8_12_x[] = {
    93.619, 102.824, 108.98, 98.823, 98.045, 100.87, 98.166, 100.412,
};
static const double ex8_12_y[] = {
    92.3, 100.191, 99.963, 85.823, 97.449, 98.815, 100.806, 93.92,
    91.36, 93.246, 100.74, 93.741,
};
static const double ties_x[] = {
    1.0, 4.0, 5.0, 8.0, 0.0, 3.0, 4.0, 5.0,
    7.0, 5.0, 7.0, 0.0, 2.0, 2.0, 5.0, 0.0,
    3.0, 2.0, 9.0, 0.0,
};
static const double ties_y[] = {
    8.0, 4.0, 10.0, 5.0, 2.0, 8.0, 3.0, 10.0,
    10.0, 6.0, 6.0, 8.0, 4.0, 7.0, 11.0, 4.0,
    7.0, 3.0, 9.0, 6.0, 9.0, 9.0, 11.0, 7.0,
    7.0,
};
static const double big_x[] = {
    58.7107, 44.7857, 54.8128, 47.3088, 49.6532, 49.8033, 48.0433, 56.6852,
    50.2847, 46.0368, 51.9397, 52.1372, 46.5576, 51.6068, 50.2069, 52.461,
    52.1366, 49.9747, 48.7752, 52.7311, 50.9396, 45.5322, 48.3654, 48.5501,
    49.2135, 56.8529, 48.8681, 51.432, 54.966, 51.511, 51.2956, 53.8939,
    50.5919, 50.5579, 52.0662, 51.2362, 47.9589, 46.5023, 49.6599, 54.194,
    49.3208, 53.4453, 51.2378, 49.0733, 42.0998, 50.6664, 49.1692, 45.1984,
    51.5435, 49.9237, 51.1252, 48.1868, 50.6061, 48.5803, 53.1948, 50.373,
    45.7924, 50.6429, 50.2029, 49.3897,
};
static const double big_y[] = {
    46.751, 53.9786, 48.6052, 55.5479, 48.8202, 50.8974, 50.6656, 51.2535,
    58.7302, 49.3051, 57.0084, 52.6704, 48.715, 54.5667, 53.3225, 53.6633,
    46.798, 52.3084, 49.5925, 50.3735, 50.4056, 50.922, 55.5713, 51.9353,
    45.2657, 54.5406, 51.0629, 51.1946, 45.32, 51.9993, 49.3031, 53.6669,
    52.1687, 53.2832, 49.6808, 45.312, 53.7064, 52.061, 49.8081, 49.1288,
    48.1432, 45.5124, 47.2684, 50.5897, 55.6284, 52.1595, 55.6143, 47.7705,
    54.57, 49.5516, 55.199, 54.4852, 50.9061, 51.2035, 54.4523, 48.4127,
    44.3113, 53.2508, 57.3374, 45.1114,
};

/* scipy.stats.wilcoxon(d, alternative=..., method="exact") on d1, and
 * method="approx", zero_method="wilcox", correction=True on d2 (zeros and ties) */
static const double d1[] = {
    -8.039, -18.487, 3.033, 16.409, 30.721, 10.194, -3.053, -7.696, 22.975, 40.696, 13.455, -16.667, -11.165, 40.0,
    12.058,
};
static const double d2[] = {
    4.0, 4.0, -2.0, 0.0, 2.0, 1.0, 2.0, 3.0, 2.0, -3.0, 5.0, 2.0, 5.0, -1.0, 0.0,
    4.0, -2.0, -3.0, 0.0, 3.0, -2.0, 4.0, 0.0, -1.0, 1.0, 5.0, 4.0, 4.0, -1.0, -3.0,
};

static void test_median_mad_quantile(void **state)
{
    (void)state;
    double m;
    const double odd[] = {4, 100, 1, 3, 2};
    assert_int_equal(stats_median(odd, 5, &m), 0);
    assert_abs(m, 3, 0, "median of 1 2 3 4 100");
    const double even[] = {4, 1, 3, 2};
    assert_int_equal(stats_median(even, 4, &m), 0);
    assert_abs(m, 2.5, 0, "median of 1 2 3 4");
    assert_int_equal(stats_median(even, 0, &m), 0);
    assert_true(isnan(m));

    stats_rng rng;
    stats_rng_seed(&rng, 1);
    stats_summary s;
    /* 1 2 3 4 100: deviations from 3 are 2 1 0 1 97, their median 1 */
    assert_int_equal(stats_summarize(odd, 5, 200, &rng, &s), 0);
    assert_int_equal(s.n, 5);
    assert_abs(s.median, 3, 0, "median");
    assert_abs(s.mad, 1, 0, "MAD of 1 2 3 4 100");
    assert_abs(s.min, 1, 0, "min");
    assert_abs(s.max, 100, 0, "max");
    /* 1 2 3 4: deviations from 2.5 are 1.5 .5 .5 1.5, their median 1 */
    assert_int_equal(stats_summarize(even, 4, 200, &rng, &s), 0);
    assert_abs(s.mad, 1, 0, "MAD of 1 2 3 4");

    /* numpy.percentile([1, 2, 3, 4], [2.5, 97.5, 50]) = 1.075 3.925 2.5 */
    const double sorted[] = {1, 2, 3, 4};
    assert_abs(stats_quantile_sorted(sorted, 4, 0.025), 1.075, 1e-12, "q 0.025");
    assert_abs(stats_quantile_sorted(sorted, 4, 0.975), 3.925, 1e-12, "q 0.975");
    assert_abs(stats_quantile_sorted(sorted, 4, 0.5), 2.5, 1e-12, "q 0.5");
    assert_abs(stats_quantile_sorted(sorted, 4, 1), 4, 0, "q 1");
    assert_abs(stats_quantile_sorted(sorted, 1, 0.3), 1, 0, "q of one value");
}

static void test_mwu_exact_by_hand(void **state)
{
    (void)state;
    stats_mwu r;
    /* y above all of x: U = 9, and only 1 of the C(6,3) = 20 labellings
     * gives it: p = 0.05 one-sided */
    const double x[] = {1, 2, 3}, y[] = {4, 5, 6};
    assert_int_equal(stats_mann_whitney(x, 3, y, 3, &r), 0);
    assert_true(r.exact);
    assert_false(r.ties);
    assert_abs(r.u, 9, 0, "U");
    assert_rel(r.p_greater, 0.05, 1e-12, "p_greater");
    assert_rel(r.p_less, 1, 1e-12, "p_less");

    /* 15 below 15: the smallest p of 15 vs 15, 1 / C(30,15) = 1/155117520 */
    double lo[15], hi[15];
    for (int i = 0; i < 15; i++) {
        lo[i] = i;
        hi[i] = 100 + i;
    }
    assert_int_equal(stats_mann_whitney(lo, 15, hi, 15, &r), 0);
    assert_true(r.exact);
    assert_abs(r.u, 225, 0, "U");
    assert_rel(r.p_greater, 1.0 / 155117520.0, 1e-9, "smallest p of 15 vs 15");
    assert_int_equal(stats_mann_whitney(hi, 15, lo, 15, &r), 0);
    assert_abs(r.u, 0, 0, "U");
    assert_rel(r.p_less, 1.0 / 155117520.0, 1e-9, "smallest p_less");
    assert_rel(r.p_greater, 1, 1e-12, "p_greater");
}

static void test_mwu_scipy(void **state)
{
    (void)state;
    stats_mwu r;
    assert_int_equal(stats_mann_whitney(ex15_x, N(ex15_x), ex15_y, N(ex15_y), &r), 0);
    assert_true(r.exact);
    assert_abs(r.u, 164, 0, "U (15 vs 15)");
    assert_rel(r.p_greater, 0.016471820849121362, 1e-9, "exact p_greater (15 vs 15)");
    assert_rel(r.p_less, 0.98525176266355941, 1e-9, "exact p_less (15 vs 15)");

    assert_int_equal(stats_mann_whitney(ex8_12_x, N(ex8_12_x), ex8_12_y, N(ex8_12_y), &r), 0);
    assert_true(r.exact);
    assert_abs(r.u, 24, 0, "U (8 vs 12)");
    assert_rel(r.p_greater, 0.97131062951496372, 1e-9, "exact p_greater (8 vs 12)");
    assert_rel(r.p_less, 0.034547908232118757, 1e-9, "exact p_less (8 vs 12)");

    /* ties: the normal approximation with the tie-corrected variance */
    assert_int_equal(stats_mann_whitney(ties_x, N(ties_x), ties_y, N(ties_y), &r), 0);
    assert_false(r.exact);
    assert_true(r.ties);
    assert_abs(r.u, 401.5, 0, "U with ties");
    assert_rel(r.p_greater, 0.00026570012055233407, 1e-9, "p_greater with ties");
    assert_rel(r.p_less, 0.99975608458766108, 1e-9, "p_less with ties");

    /* 60 × 60 = 3600 pairs, past the exact limit: normal, no ties */
    assert_int_equal(stats_mann_whitney(big_x, N(big_x), big_y, N(big_y), &r), 0);
    assert_false(r.exact);
    assert_false(r.ties);
    assert_abs(r.u, 2100, 0, "U (60 vs 60)");
    assert_rel(r.p_greater, 0.057979064755285095, 1e-9, "p_greater (60 vs 60)");
    assert_rel(r.p_less, 0.94262707937175394, 1e-9, "p_less (60 vs 60)");

    /* all equal: no evidence, and no division by a zero variance */
    const double same[] = {5, 5, 5, 5};
    assert_int_equal(stats_mann_whitney(same, 4, same, 4, &r), 0);
    assert_abs(r.p_greater, 1, 0, "p of equal samples");
    assert_abs(r.p_less, 1, 0, "p of equal samples");
}

/* Under H0 the exact test rejects at most α of the time: drawn from one
 * distribution, 15 vs 15, 2000 times. */
static void test_mwu_false_positive_rate(void **state)
{
    (void)state;
    stats_rng rng;
    stats_rng_seed(&rng, 42);
    int rejected = 0, trials = 2000;
    for (int t = 0; t < trials; t++) {
        double x[15], y[15];
        for (int i = 0; i < 15; i++) {
            x[i] = (double)(stats_rng_next(&rng) >> 11);
            y[i] = (double)(stats_rng_next(&rng) >> 11);
        }
        stats_mwu r;
        assert_int_equal(stats_mann_whitney(x, 15, y, 15, &r), 0);
        assert_true(r.exact);
        rejected += r.p_greater <= 0.05;
    }
    /* expected ≤ 100; the binomial sd is ~10 */
    if (rejected > 130 || rejected < 60)
        fail_msg("rejected %d of %d at α = 0.05", rejected, trials);
}

static void test_wilcoxon(void **state)
{
    (void)state;
    stats_wsr r;
    assert_int_equal(stats_wilcoxon(d1, N(d1), &r), 0);
    assert_true(r.exact);
    assert_int_equal(r.n, 15);
    assert_abs(r.w_plus, 84, 0, "W+ of d1");
    assert_rel(r.p_greater, 0.09381103515625, 1e-12, "exact p_greater of d1");
    assert_rel(r.p_less, 0.91558837890625, 1e-12, "exact p_less of d1");

    assert_int_equal(stats_wilcoxon(d2, N(d2), &r), 0);
    assert_false(r.exact);
    assert_true(r.ties);
    assert_int_equal(r.n, 26); /* 4 zeros dropped */
    assert_abs(r.w_plus, 270, 0, "W+ of d2");
    assert_rel(r.p_greater, 0.008186103778236517, 1e-9, "p_greater of d2");
    assert_rel(r.p_less, 0.99236787753188294, 1e-9, "p_less of d2");

    /* all positive: p = 2^-n; n = 3 by hand: only {1,2,3} sums to 6 of 8 subsets */
    const double up[] = {1, 2, 3};
    assert_int_equal(stats_wilcoxon(up, 3, &r), 0);
    assert_abs(r.w_plus, 6, 0, "W+");
    assert_rel(r.p_greater, 0.125, 1e-12, "1/8");
    assert_rel(r.p_less, 1, 1e-12, "p_less");
    double up15[15];
    for (int i = 0; i < 15; i++)
        up15[i] = 10 + i;
    assert_int_equal(stats_wilcoxon(up15, 15, &r), 0);
    assert_rel(r.p_greater, 1.0 / 32768, 1e-12, "2^-15");

    const double zeros[] = {0, 0, 0};
    assert_int_equal(stats_wilcoxon(zeros, 3, &r), 0);
    assert_int_equal(r.n, 0);
    assert_abs(r.p_greater, 1, 0, "no differences, no evidence");

    /* the paired shift is the median difference: 3 of 1 2 3 4 5 ... and its interval holds it */
    stats_rng rng;
    stats_rng_seed(&rng, 5);
    stats_shift sh;
    assert_int_equal(stats_paired_shift_ci(d1, N(d1), 1000, &rng, &sh), 0);
    assert_abs(sh.shift, 10.194, 1e-12, "median of d1");
    assert_true(sh.ci_lo <= sh.shift && sh.shift <= sh.ci_hi);

    /* planning: (z_0.95 + z_0.8) / sqrt(3/π) · 10 / sqrt(15) = 6.5699… (9.2911 · sqrt(15/2) / sqrt(15)) */
    assert_rel(stats_min_detectable_paired(10, 15, 0.05, 0.8), 9.291113168688966 / sqrt(2), 1e-9,
               "paired detectable");
    assert_true(isinf(stats_min_detectable_paired(10, 4, 0.05, 0.8))); /* 2^-4 > 0.05 */
    /* ((z_0.95 + z_0.8) / sqrt(3/π) · 10 / 5)^2 = 25.9 → 26 */
    assert_int_equal(stats_pairs_needed(10, 5, 0.05, 0.8), 26);
    assert_int_equal(stats_pairs_needed(0, 5, 0.01, 0.8), 7); /* 2^-7 < 0.01 < 2^-6 */
}

/* Under H0 (differences symmetric about 0) the exact signed-rank test
 * rejects at most α of the time. */
static void test_wilcoxon_false_positive_rate(void **state)
{
    (void)state;
    stats_rng rng;
    stats_rng_seed(&rng, 43);
    int rejected = 0, trials = 2000;
    for (int t = 0; t < trials; t++) {
        double d[15];
        for (int i = 0; i < 15; i++)
            d[i] = (double)(stats_rng_next(&rng) >> 11) - (double)(stats_rng_next(&rng) >> 11);
        stats_wsr r;
        assert_int_equal(stats_wilcoxon(d, 15, &r), 0);
        assert_true(r.exact);
        rejected += r.p_greater <= 0.05;
    }
    if (rejected > 130 || rejected < 60)
        fail_msg("rejected %d of %d at α = 0.05", rejected, trials);
}

static void test_holm(void **state)
{
    (void)state;
    /* sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → 0.06
     * (never below an earlier one) */
    const double p[] = {0.01, 0.04, 0.03, 0.005, NAN};
    double adj[5];
    assert_int_equal(stats_holm(p, 5, adj), 0);
    assert_abs(adj[0], 0.03, 1e-15, "holm 0.01");
    assert_abs(adj[1], 0.06, 1e-15, "holm 0.04");
    assert_abs(adj[2], 0.06, 1e-15, "holm 0.03");
    assert_abs(adj[3], 0.02, 1e-15, "holm 0.005");
    assert_true(isnan(adj[4]));
    const double big[] = {0.6, 0.9};
    assert_int_equal(stats_holm(big, 2, adj), 0);
    assert_abs(adj[0], 1, 0, "capped at 1");
    assert_abs(adj[1], 1, 0, "capped at 1");
}

static void test_normal(void **state)
{
    (void)state;
    assert_rel(stats_norm_quantile(0.975), 1.959963984540054, 1e-12, "z 0.975");
    assert_rel(stats_norm_quantile(0.99), 2.3263478740408408, 1e-12, "z 0.99");
    assert_rel(stats_norm_quantile(0.8), 0.8416212335729143, 1e-12, "z 0.8");
    assert_rel(stats_norm_quantile(0.025), -1.959963984540054, 1e-12, "z 0.025");
    assert_rel(stats_norm_cdf(-3), 0.0013498980316300933, 1e-12, "cdf -3");
    assert_rel(stats_norm_cdf(1.5), 0.9331927987311419, 1e-12, "cdf 1.5");
}

static void test_planning(void **state)
{
    (void)state;
    /* (z_0.95 + z_0.8) / sqrt(3/π) · 10 · sqrt(2/15) */
    assert_rel(stats_min_detectable(10, 15, 15, 0.05, 0.8), 9.291113168688966, 1e-9, "min detectable");
    /* 2 · ((z_0.95 + z_0.8) / sqrt(3/π) · 10 / 5)^2 = 51.8 → 52 */
    assert_int_equal(stats_runs_needed(10, 5, 0.05, 0.8), 52);
    /* no spread: as many runs as the exact test needs to reach α at all:
     * 1/C(6,3) = 0.05, 1/C(8,4) = 1/70; for 0.01, 1/C(10,5) = 1/252 */
    assert_int_equal(stats_runs_needed(0, 5, 0.05, 0.8), 3);
    assert_int_equal(stats_runs_needed(0, 5, 0.01, 0.8), 5);
    assert_rel(stats_mwu_min_p(3, 3), 0.05, 1e-12, "min p 3 vs 3");
    assert_rel(stats_mwu_min_p(15, 15), 1.0 / 155117520.0, 1e-9, "min p 15 vs 15");
    assert_rel(stats_mwu_min_p(4, 1), 0.2, 1e-12, "min p 4 vs 1");

    double sigma;
    const double v[] = {1, 2, 3, 4, 100}; /* MAD 1 */
    assert_int_equal(stats_sigma(v, 5, &sigma), 0);
    assert_abs(sigma, 1.4826, 1e-12, "sigma from the MAD");
    const double flat[] = {7, 7, 7, 7, 9}; /* MAD 0: the standard deviation, sqrt(3.2/4) */
    assert_int_equal(stats_sigma(flat, 5, &sigma), 0);
    assert_abs(sigma, sqrt(0.8), 1e-12, "sigma when the MAD is 0");
    assert_int_equal(stats_sigma(flat, 1, &sigma), 0);
    assert_abs(sigma, 0, 0, "sigma of one value");
}

static void test_bootstrap(void **state)
{
    (void)state;
    stats_rng a, b;
    stats_summary s1, s2;
    stats_rng_seed(&a, 7);
    stats_rng_seed(&b, 7);
    assert_int_equal(stats_summarize(ex15_x, 15, 1000, &a, &s1), 0);
    assert_int_equal(stats_summarize(ex15_x, 15, 1000, &b, &s2), 0);
    assert_true(s1.ci_lo == s2.ci_lo && s1.ci_hi == s2.ci_hi); /* same seed, same interval */
    assert_true(s1.ci_lo <= s1.median && s1.median <= s1.ci_hi);
    assert_true(s1.ci_lo >= s1.min && s1.ci_hi <= s1.max);
    stats_rng_seed(&b, 8);
    assert_int_equal(stats_summarize(ex15_x, 15, 1000, &b, &s2), 0);
    assert_true(s1.ci_lo != s2.ci_lo || s1.ci_hi != s2.ci_hi); /* another seed, other draws */

    const double same[] = {3, 3, 3, 3};
    assert_int_equal(stats_summarize(same, 4, 100, &a, &s1), 0);
    assert_abs(s1.ci_lo, 3, 0, "CI of a constant");
    assert_abs(s1.ci_hi, 3, 0, "CI of a constant");

    /* a shift of exactly +10: every resample's difference of medians of
     * the same values moved by 10 */
    double moved[15];
    for (int i = 0; i < 15; i++)
        moved[i] = ex15_x[i] + 10;
    stats_shift sh;
    assert_int_equal(stats_shift_ci(ex15_x, 15, moved, 15, 1000, &a, &sh), 0);
    assert_abs(sh.shift, 10, 1e-9, "shift");
    assert_true(sh.ci_lo < 10 && sh.ci_hi > 10);

    /* coverage: samples of 15 from uniform [500, 600) (true median 550) */
    int covered = 0, trials = 400;
    stats_rng gen;
    stats_rng_seed(&gen, 99);
    for (int t = 0; t < trials; t++) {
        double v[15];
        for (int i = 0; i < 15; i++)
            v[i] = 500 + 100 * (double)(stats_rng_next(&gen) >> 11) / 9007199254740992.0;
        assert_int_equal(stats_summarize(v, 15, 500, &a, &s1), 0);
        covered += s1.ci_lo <= 550 && 550 <= s1.ci_hi;
    }
    /* the percentile bootstrap of a median of 15 covers 93–97 % */
    if (covered < (int)(0.89 * trials) || covered > (int)(0.99 * trials))
        fail_msg("the 95 %% interval covered the median in %d of %d samples", covered, trials);
}

static void test_rng_below(void **state)
{
    (void)state;
    stats_rng rng;
    stats_rng_seed(&rng, 3);
    int count[3] = {0};
    for (int i = 0; i < 30000; i++) {
        size_t k = stats_rng_below(&rng, 3);
        assert_true(k < 3);
        count[k]++;
    }
    for (int k = 0; k < 3; k++)
        if (count[k] < 9500 || count[k] > 10500)
            fail_msg("value %d drawn %d times of 30000", k, count[k]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median_mad_quantile),
        cmocka_unit_test(test_mwu_exact_by_hand),
        cmocka_unit_test(test_mwu_scipy),
        cmocka_unit_test(test_mwu_false_positive_rate),
        cmocka_unit_test(test_wilcoxon),
        cmocka_unit_test(test_wilcoxon_false_positive_rate),
        cmocka_unit_test(test_holm),
        cmocka_unit_test(test_normal),
        cmocka_unit_test(test_planning),
        cmocka_unit_test(test_bootstrap),
        cmocka_unit_test(test_rng_below),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
