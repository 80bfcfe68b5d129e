/* Regressions between two versions of an app (docs/server.md,
 * "Regressions"): for each page class and metric, and each start-up kind
 * and metric, the stored raw values of version N against those of the
 * version before it.
 *
 * A case is compared when each side has at least min-samples values. The
 * test is the one-sided Mann–Whitney U test (src/stats: exact without ties
 * for small samples, else the normal approximation with the tie
 * correction) of "N's values tend to be larger"; the p-values of all the
 * cases of one pair of versions are Holm-adjusted, so that two versions
 * drawn from the same distributions flag any case with probability at most
 * alpha. A case is flagged when its adjusted p is at most alpha and its p50
 * or its p90 grew by at least min-percent of the earlier figure and
 * min-ms. Quantiles are of the raw values (type 7, interpolated).
 */
#ifndef PACER_SERVER_REGRESS_H
#define PACER_SERVER_REGRESS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct regress_case {
    /* in */
    const char *name;   /* "ShopHomeWindow", "cold" */
    const char *metric; /* "total_ms" */
    double *base, *cur; /* the values (sorted by regress_run) */
    size_t n_base, n_cur;
    /* out */
    bool compared;      /* both sides had enough values */
    double p50_base, p50_cur, p90_base, p90_cur;
    double p, p_adjusted; /* one-sided p, Holm-adjusted over the compared cases */
    bool flagged;
} regress_case;

typedef struct regress_limits {
    size_t min_samples;
    double min_percent, min_ms, alpha;
} regress_limits;

/* Tests every case (sorting their values in place). 0 or -ENOMEM. */
int regress_run(regress_case *cases, size_t n, const regress_limits *lim);

#endif
