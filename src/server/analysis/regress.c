/* Regressions between two versions (regress.h). */
#include "regress.h"

#include <pacer/stats.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* grew from `from` to `to` by at least min-percent and min-ms */
static bool grew(double from, double to, const regress_limits *lim)
{
    double d = to - from;
    return d >= lim->min_ms && d >= from * lim->min_percent / 100.0;
}

int regress_run(regress_case *cases, size_t n, const regress_limits *lim)
{
    double *p = calloc(n ? n : 1, sizeof *p), *adj = calloc(n ? n : 1, sizeof *adj);
    if (!p || !adj) {
        free(p);
        free(adj);
        return -ENOMEM;
    }
    int r = 0;
    for (size_t i = 0; i < n; i++)
        p[i] = adj[i] = NAN;
    for (size_t i = 0; i < n && r == 0; i++) {
        regress_case *c = &cases[i];
        c->compared = c->flagged = false;
        c->p = c->p_adjusted = NAN;
        if (c->n_base < lim->min_samples || c->n_cur < lim->min_samples)
            continue;
        qsort(c->base, c->n_base, sizeof *c->base, cmp_double);
        qsort(c->cur, c->n_cur, sizeof *c->cur, cmp_double);
        c->p50_base = stats_quantile_sorted(c->base, c->n_base, 0.5);
        c->p50_cur = stats_quantile_sorted(c->cur, c->n_cur, 0.5);
        c->p90_base = stats_quantile_sorted(c->base, c->n_base, 0.9);
        c->p90_cur = stats_quantile_sorted(c->cur, c->n_cur, 0.9);
        stats_mwu u;
        if ((r = stats_mann_whitney(c->base, c->n_base, c->cur, c->n_cur, &u)) < 0)
            break;
        c->compared = true;
        c->p = p[i] = u.p_greater;
    }
    if (r == 0)
        r = stats_holm(p, n, adj);
    for (size_t i = 0; i < n && r == 0; i++) {
        regress_case *c = &cases[i];
        if (!c->compared)
            continue;
        c->p_adjusted = adj[i];
        c->flagged = adj[i] <= lim->alpha &&
                     (grew(c->p50_base, c->p50_cur, lim) || grew(c->p90_base, c->p90_cur, lim));
    }
    free(p);
    free(adj);
    return r;
}
