/* The statistics of regression tests (pacer/stats.h): pacer bench's gate and
 * pacerd's version-to-version regressions.
 *
 * The exact null distribution of U. With the two samples pooled, sorted
 * and no ties, every one of the C(m+n, m) ways to label m values x and n
 * values y is equally likely under H0. Looking at the largest value: it is
 * a y with probability n/(m+n), and then beats all m x's; or an x, and
 * beats nothing. So, with P(m, n, u) the probability that U = u:
 *
 *     P(m, n, u) = n/(m+n) · P(m, n−1, u−m) + m/(m+n) · P(m−1, n, u)
 *     P(0, n, 0) = P(m, 0, 0) = 1
 *
 * Every term is a probability (no cancellation), and the tails the test
 * needs are sums of small positive numbers, so they keep their relative
 * precision down to the smallest p-value, 1/C(m+n, m). The table is filled
 * row by row in m, two rows of (n+1) × (mn+1) doubles: 2 MB at the limit
 * of 50 × 50.
 */
#include <pacer/stats.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- generator ---- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void stats_rng_seed(stats_rng *rng, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t stats_rng_next(stats_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

size_t stats_rng_below(stats_rng *rng, size_t n)
{
    /* Rejects the top partial block of 2^64 so every residue is equally likely. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % (uint64_t)n;
    uint64_t x;
    do
        x = stats_rng_next(rng);
    while (x >= limit);
    return (size_t)(x % (uint64_t)n);
}

/* ---- one sample ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double *sorted_copy(const double *v, size_t n)
{
    double *c = malloc((n ? n : 1) * sizeof(*c));
    if (!c)
        return NULL;
    if (n) {
        memcpy(c, v, n * sizeof(*c));
        qsort(c, n, sizeof(*c), cmp_double);
    }
    return c;
}

double stats_median_sorted(const double *sorted, size_t n)
{
    if (n == 0)
        return NAN;
    return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

int stats_median(const double *v, size_t n, double *ret)
{
    double *c = sorted_copy(v, n);
    if (!c)
        return -ENOMEM;
    *ret = stats_median_sorted(c, n);
    free(c);
    return 0;
}

double stats_quantile_sorted(const double *sorted, size_t n, double q)
{
    if (n == 0)
        return NAN;
    double h = (double)(n - 1) * q;
    size_t lo = (size_t)floor(h);
    if (lo + 1 >= n)
        return sorted[n - 1];
    return sorted[lo] + (h - (double)lo) * (sorted[lo + 1] - sorted[lo]);
}

/* The MAD of sorted values with median m, using scratch (n doubles). */
static double mad_of(const double *sorted, size_t n, double m, double *scratch)
{
    for (size_t i = 0; i < n; i++)
        scratch[i] = fabs(sorted[i] - m);
    qsort(scratch, n, sizeof(*scratch), cmp_double);
    return stats_median_sorted(scratch, n);
}

/* The median of one bootstrap resample of v into scratch (n doubles). */
static double resample_median(const double *v, size_t n, stats_rng *rng, double *scratch)
{
    for (size_t i = 0; i < n; i++)
        scratch[i] = v[stats_rng_below(rng, n)];
    qsort(scratch, n, sizeof(*scratch), cmp_double);
    return stats_median_sorted(scratch, n);
}

int stats_summarize(const double *v, size_t n, unsigned resamples, stats_rng *rng, stats_summary *ret)
{
    if (resamples < 1)
        resamples = 1;
    double *s = sorted_copy(v, n);
    double *scratch = malloc((n ? n : 1) * sizeof(*scratch));
    double *meds = malloc(resamples * sizeof(*meds));
    if (!s || !scratch || !meds) {
        free(s);
        free(scratch);
        free(meds);
        return -ENOMEM;
    }
    *ret = (stats_summary){.n = n, .median = NAN, .mad = NAN, .min = NAN, .max = NAN, .ci_lo = NAN, .ci_hi = NAN};
    if (n > 0) {
        ret->median = stats_median_sorted(s, n);
        ret->min = s[0];
        ret->max = s[n - 1];
        ret->mad = mad_of(s, n, ret->median, scratch);
        for (unsigned b = 0; b < resamples; b++)
            meds[b] = resample_median(s, n, rng, scratch);
        qsort(meds, resamples, sizeof(*meds), cmp_double);
        ret->ci_lo = stats_quantile_sorted(meds, resamples, 0.025);
        ret->ci_hi = stats_quantile_sorted(meds, resamples, 0.975);
    }
    free(s);
    free(scratch);
    free(meds);
    return 0;
}

/* ---- two samples ---- */

int stats_shift_ci(const double *base, size_t nb, const double *cur, size_t nc, unsigned resamples,
                   stats_rng *rng, stats_shift *ret)
{
    if (resamples < 1)
        resamples = 1;
    double mb, mc;
    double *scratch = malloc((nb > nc ? nb : nc) * sizeof(*scratch) + sizeof(double));
    double *d = malloc(resamples * sizeof(*d));
    if (!scratch || !d || stats_median(base, nb, &mb) < 0 || stats_median(cur, nc, &mc) < 0) {
        free(scratch);
        free(d);
        return -ENOMEM;
    }
    for (unsigned b = 0; b < resamples; b++) {
        double rb = resample_median(base, nb, rng, scratch);
        d[b] = resample_median(cur, nc, rng, scratch) - rb;
    }
    qsort(d, resamples, sizeof(*d), cmp_double);
    *ret = (stats_shift){.shift = mc - mb,
                         .ci_lo = stats_quantile_sorted(d, resamples, 0.025),
                         .ci_hi = stats_quantile_sorted(d, resamples, 0.975)};
    free(scratch);
    free(d);
    return 0;
}

typedef struct tagged {
    double v;
    int from_y;
} tagged;

static int cmp_tagged(const void *a, const void *b)
{
    return cmp_double(&((const tagged *)a)->v, &((const tagged *)b)->v);
}

/* P(U ≥ u) and P(U ≤ u) for U of the second of samples of sizes m and n
 * without ties, by the recurrence at the top of this file. u is an integer. */
static int exact_tails(size_t m, size_t n, double u, double *ret_ge, double *ret_le)
{
    size_t width = m * n + 1;
    double *prev = calloc((n + 1) * width, sizeof(double));
    double *row = calloc((n + 1) * width, sizeof(double));
    if (!prev || !row) {
        free(prev);
        free(row);
        return -ENOMEM;
    }
    /* row i = m' (0..m); within it, column j = n' (0..n), then u' (0..i*j) */
    for (size_t i = 0; i <= m; i++) {
        for (size_t j = 0; j <= n; j++) {
            double *p = row + j * width;
            memset(p, 0, width * sizeof(double));
            if (i == 0 || j == 0) {
                p[0] = 1;
                continue;
            }
            const double *left = row + (j - 1) * width; /* (i, j−1): the largest is a y */
            const double *up = prev + j * width;        /* (i−1, j): the largest is an x */
            double wy = (double)j / (double)(i + j), wx = (double)i / (double)(i + j);
            for (size_t k = 0; k <= i * j; k++)
                p[k] = (k >= i ? wy * left[k - i] : 0) + wx * up[k];
        }
        double *t = prev;
        prev = row;
        row = t;
    }
    const double *dist = prev + n * width; /* (m, n) */
    size_t uk = (size_t)u;
    double ge = 0, le = 0;
    for (size_t k = 0; k < width; k++) {
        if (k >= uk)
            ge += dist[k];
        if (k <= uk)
            le += dist[k];
    }
    free(prev);
    free(row);
    *ret_ge = ge > 1 ? 1 : ge;
    *ret_le = le > 1 ? 1 : le;
    return 0;
}

int stats_mann_whitney(const double *x, size_t nx, const double *y, size_t ny, stats_mwu *ret)
{
    size_t n = nx + ny;
    tagged *all = malloc(n * sizeof(*all));
    if (!all)
        return -ENOMEM;
    for (size_t i = 0; i < nx; i++)
        all[i] = (tagged){x[i], 0};
    for (size_t i = 0; i < ny; i++)
        all[nx + i] = (tagged){y[i], 1};
    qsort(all, n, sizeof(*all), cmp_tagged);

    /* mid-ranks; the rank sum of y; Σ (t³ − t) over groups of ties */
    double ry = 0, tie_sum = 0;
    bool ties = false;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && all[j].v == all[i].v)
            j++;
        double t = (double)(j - i), rank = ((double)(i + 1) + (double)j) / 2;
        if (j - i > 1) {
            ties = true;
            tie_sum += t * t * t - t;
        }
        for (size_t k = i; k < j; k++)
            if (all[k].from_y)
                ry += rank;
        i = j;
    }
    free(all);

    double m = (double)nx, k = (double)ny, nn = (double)n;
    double u = ry - k * (k + 1) / 2;
    *ret = (stats_mwu){.u = u, .ties = ties};
    if (!ties && nx * ny <= STATS_MWU_EXACT_MAX) {
        ret->exact = true;
        return exact_tails(nx, ny, u, &ret->p_greater, &ret->p_less);
    }
    double mean = m * k / 2;
    double var = m * k / 12 * ((nn + 1) - tie_sum / (nn * (nn - 1)));
    if (!(var > 0)) { /* every value equal: no evidence either way */
        ret->p_greater = ret->p_less = 1;
        return 0;
    }
    double sd = sqrt(var);
    ret->p_greater = 1 - stats_norm_cdf((u - mean - 0.5) / sd);
    ret->p_less = stats_norm_cdf((u - mean + 0.5) / sd);
    if (ret->p_greater > 1)
        ret->p_greater = 1;
    if (ret->p_less > 1)
        ret->p_less = 1;
    return 0;
}

/* P(W+ ≥ w) and P(W+ ≤ w) for n ranks 1..n without ties: each subset of
 * ranks is equally likely, 2^−n; the number of subsets with sum k follows
 * c(i, k) = c(i−1, k) + c(i−1, k−i), kept as probabilities (halved per
 * rank) so nothing overflows and every term stays positive. */
static int wsr_exact_tails(size_t n, double w, double *ret_ge, double *ret_le)
{
    size_t top = n * (n + 1) / 2;
    double *p = calloc(top + 1, sizeof(double));
    if (!p)
        return -ENOMEM;
    p[0] = 1;
    for (size_t i = 1; i <= n; i++) {
        size_t hi = i * (i + 1) / 2;
        for (size_t k = hi + 1; k-- > 0;)
            p[k] = 0.5 * (p[k] + (k >= i ? p[k - i] : 0));
    }
    size_t wk = (size_t)w;
    double ge = 0, le = 0;
    for (size_t k = 0; k <= top; k++) {
        if (k >= wk)
            ge += p[k];
        if (k <= wk)
            le += p[k];
    }
    free(p);
    *ret_ge = ge > 1 ? 1 : ge;
    *ret_le = le > 1 ? 1 : le;
    return 0;
}

typedef struct signed_abs {
    double a;
    int positive;
} signed_abs;

static int cmp_signed_abs(const void *x, const void *y)
{
    return cmp_double(&((const signed_abs *)x)->a, &((const signed_abs *)y)->a);
}

int stats_wilcoxon(const double *d, size_t n, stats_wsr *ret)
{
    signed_abs *v = malloc((n ? n : 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (d[i] != 0)
            v[m++] = (signed_abs){fabs(d[i]), d[i] > 0};
    qsort(v, m, sizeof(*v), cmp_signed_abs);
    double w = 0, tie_sum = 0;
    bool ties = false;
    for (size_t i = 0; i < m;) {
        size_t j = i + 1;
        while (j < m && v[j].a == v[i].a)
            j++;
        double t = (double)(j - i), rank = ((double)(i + 1) + (double)j) / 2;
        if (j - i > 1) {
            ties = true;
            tie_sum += t * t * t - t;
        }
        for (size_t k = i; k < j; k++)
            if (v[k].positive)
                w += rank;
        i = j;
    }
    free(v);
    *ret = (stats_wsr){.w_plus = w, .n = m, .ties = ties, .p_greater = 1, .p_less = 1};
    if (m == 0)
        return 0;
    if (!ties && m <= STATS_WSR_EXACT_MAX) {
        ret->exact = true;
        return wsr_exact_tails(m, w, &ret->p_greater, &ret->p_less);
    }
    double nn = (double)m;
    double mean = nn * (nn + 1) / 4;
    double var = nn * (nn + 1) * (2 * nn + 1) / 24 - tie_sum / 48;
    if (!(var > 0))
        return 0;
    double sd = sqrt(var);
    ret->p_greater = 1 - stats_norm_cdf((w - mean - 0.5) / sd);
    ret->p_less = stats_norm_cdf((w - mean + 0.5) / sd);
    return 0;
}

int stats_paired_shift_ci(const double *d, size_t n, unsigned resamples, stats_rng *rng, stats_shift *ret)
{
    if (resamples < 1)
        resamples = 1;
    double med;
    double *scratch = malloc((n ? n : 1) * sizeof(*scratch));
    double *meds = malloc(resamples * sizeof(*meds));
    if (!scratch || !meds || stats_median(d, n, &med) < 0) {
        free(scratch);
        free(meds);
        return -ENOMEM;
    }
    for (unsigned b = 0; b < resamples; b++)
        meds[b] = resample_median(d, n, rng, scratch);
    qsort(meds, resamples, sizeof(*meds), cmp_double);
    *ret = (stats_shift){.shift = med,
                         .ci_lo = stats_quantile_sorted(meds, resamples, 0.025),
                         .ci_hi = stats_quantile_sorted(meds, resamples, 0.975)};
    free(scratch);
    free(meds);
    return 0;
}

double stats_mwu_min_p(size_t nx, size_t ny)
{
    return exp(lgamma((double)nx + 1) + lgamma((double)ny + 1) - lgamma((double)(nx + ny) + 1));
}

typedef struct indexed_p {
    double p;
    size_t i;
} indexed_p;

static int cmp_indexed(const void *a, const void *b)
{
    return cmp_double(&((const indexed_p *)a)->p, &((const indexed_p *)b)->p);
}

int stats_holm(const double *p, size_t n, double *adj)
{
    indexed_p *s = malloc((n ? n : 1) * sizeof(*s));
    if (!s)
        return -ENOMEM;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        adj[i] = NAN;
        if (!isnan(p[i]))
            s[m++] = (indexed_p){p[i], i};
    }
    qsort(s, m, sizeof(*s), cmp_indexed);
    double running = 0;
    for (size_t k = 0; k < m; k++) {
        double a = (double)(m - k) * s[k].p;
        if (a > 1)
            a = 1;
        if (a > running)
            running = a;
        adj[s[k].i] = running;
    }
    free(s);
    return 0;
}

/* ---- normal distribution ---- */

double stats_norm_cdf(double z)
{
    return 0.5 * erfc(-z / M_SQRT2);
}

double stats_norm_quantile(double p)
{
    if (!(p > 0 && p < 1))
        return p <= 0 ? -INFINITY : INFINITY;
    /* Bisection on the CDF: 200 halvings of [-40, 40] reach the spacing of
     * doubles; cheap next to everything else a bench does. */
    double lo = -40, hi = 40;
    for (int i = 0; i < 200 && hi - lo > 0; i++) {
        double mid = (lo + hi) / 2;
        if (mid == lo || mid == hi)
            break;
        if (stats_norm_cdf(mid) < p)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

/* ---- planning ---- */

int stats_sigma(const double *v, size_t n, double *ret)
{
    *ret = 0;
    if (n < 2)
        return 0;
    double *s = sorted_copy(v, n);
    double *scratch = malloc(n * sizeof(*scratch));
    if (!s || !scratch) {
        free(s);
        free(scratch);
        return -ENOMEM;
    }
    double med = stats_median_sorted(s, n);
    double mad = mad_of(s, n, med, scratch);
    if (mad > 0) {
        *ret = 1.4826 * mad;
    } else {
        double mean = 0, ss = 0;
        for (size_t i = 0; i < n; i++)
            mean += s[i];
        mean /= (double)n;
        for (size_t i = 0; i < n; i++)
            ss += (s[i] - mean) * (s[i] - mean);
        *ret = sqrt(ss / (double)(n - 1));
    }
    free(s);
    free(scratch);
    return 0;
}

/* (z_{1−α} + z_{power}) / sqrt(3/π) */
static double detect_factor(double alpha, double power)
{
    return (stats_norm_quantile(1 - alpha) + stats_norm_quantile(power)) / sqrt(3 / M_PI);
}

double stats_min_detectable(double sigma, size_t nb, size_t nc, double alpha, double power)
{
    if (nb == 0 || nc == 0)
        return INFINITY;
    return detect_factor(alpha, power) * sigma * sqrt(1 / (double)nb + 1 / (double)nc);
}

double stats_min_detectable_paired(double sigma, size_t n, double alpha, double power)
{
    if (n == 0 || ldexp(1, -(int)(n > 1000 ? 1000 : n)) > alpha)
        return INFINITY;
    return detect_factor(alpha, power) * sigma / sqrt((double)n);
}

size_t stats_pairs_needed(double sigma, double shift, double alpha, double power)
{
    double n = 0;
    if (sigma > 0) {
        double r = detect_factor(alpha, power) * sigma / shift;
        n = ceil(r * r);
        if (n >= (double)(SIZE_MAX / 2))
            return SIZE_MAX / 2;
    }
    size_t k = (size_t)n;
    if (k < 1)
        k = 1;
    while (ldexp(1, -(int)k) > alpha && k < 1000)
        k++;
    return k;
}

size_t stats_runs_needed(double sigma, double shift, double alpha, double power)
{
    double n = 0;
    if (sigma > 0) {
        double r = detect_factor(alpha, power) * sigma / shift;
        n = ceil(2 * r * r);
        if (n >= (double)(SIZE_MAX / 2))
            return SIZE_MAX / 2;
    }
    size_t k = (size_t)n;
    if (k < 1)
        k = 1;
    while (stats_mwu_min_p(k, k) > alpha && k < 1000)
        k++;
    return k;
}
