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

#include "analysis_config.h"
#include "issues_db.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* A pair of versions of an app to compare: base before cur in the app's
 * order (analysis_config_version_rank). */
typedef struct regress_pair {
    char app[257], base[257], cur[257];
    int64_t n_base, n_cur; /* records of each version now */
} regress_pair;

typedef struct regress_pairs {
    regress_pair *p;
    size_t n, cap;
} regress_pairs;

/* Adds to *out (once each) the pairs of `version` of app to test now:
 * with the version before it and the one after it, when nothing could be
 * compared yet, or either version doubled its records since the pair's
 * last test and a minute passed: a test on every cycle would look again
 * and again at the same data as it grows (each look a chance of a false
 * alarm), and a test reads up to 10 000 raw values of each version. The
 * versions and the pairs' last tests are the issue state's (db). */
int regress_pairs_due(sqlite3 *db, const ana_config *cfg, const char *app, const char *version, regress_pairs *out);
/* Keeps the record counts of the pairs tested, for the next
 * regress_pairs_due. 0 or -EIO. */
int regress_pairs_save(sqlite3 *db, const regress_pairs *l);

/* What the test of a pair says of one name (a page class, a start-up
 * kind) with a metric compared. */
typedef struct regress_outcome {
    const regress_pair *pair;
    const char *kind; /* "page_regression", "startup_regression" */
    const char *name;
    bool flagged;
    int64_t n_cur, n_base;     /* the most values of one metric compared, each side */
    int64_t affected;          /* sessions of cur with values of the name */
    double lost_ms;            /* flagged: the worst p50 shift times n_cur */
    int64_t first_ns, last_ns; /* cur's values' times */
    const char *evidence;      /* JSON: every metric compared, the test; NULL when out of memory */
} regress_outcome;

/* Tests a pair on both versions' stored raw values (store_version_rows:
 * complete page loads, cold and warm start-ups that are no outliers),
 * pages and start-ups one family of cases (one Holm adjustment): cb gets
 * each name's outcome, and a failure of cb (< 0) ends the test with it.
 * When no case had enough values on both sides, the pair's record counts
 * become 0: it is tested again as soon as either grows. */
int regress_test(store *records, const ana_thresholds *t, regress_pair *p,
                 int (*cb)(void *ctx, const regress_outcome *o), void *ctx);

#endif
