/* pacer bench: the verdict per metric (bench_compare.h). */
#include "bench_compare.h"

#include <pacer/base/hash.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *bench_verdict_name(bench_verdict v)
{
    switch (v) {
    case BENCH_OK:
        return "ok";
    case BENCH_REGRESSION:
        return "regression";
    case BENCH_IMPROVED:
        return "improved";
    case BENCH_TOO_FEW:
        return "too few samples";
    case BENCH_ONLY_BASE:
        return "only in the baseline";
    case BENCH_ONLY_CUR:
        return "not in the baseline";
    case BENCH_NO_BASE:
        return "-";
    }
    return "?";
}

void bench_result_release(bench_result *res)
{
    free(res->rows);
    *res = (bench_result){0};
}

static stats_rng rng_for(const bench_gate *g, const char *name, uint64_t side)
{
    stats_rng rng;
    stats_rng_seed(&rng, fnv1a64_str(name, g->seed * 0x9e3779b97f4a7c15ULL + side));
    return rng;
}

/* The values of metric `name` of set into a new array; *n how many (0 when
 * the set lacks it). -ENOMEM or 0. */
static int values_of(const bench_set *set, const char *name, double **ret, size_t *n)
{
    *ret = NULL;
    *n = 0;
    const bench_metric *m = set ? bench_set_find(set, name) : NULL;
    if (!m)
        return 0;
    double *v = malloc((set->n_runs ? set->n_runs : 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    *n = bench_metric_values(set, m, v);
    *ret = v;
    return 0;
}

/* The differences cur − base of metric `name` over the runs where both
 * have it (run k of each is a pair). -ENOMEM or 0. */
static int differences(const bench_set *base, const bench_set *cur, const char *name, double **ret, size_t *n)
{
    const bench_metric *mb = bench_set_find(base, name), *mc = bench_set_find(cur, name);
    size_t runs = base->n_runs < cur->n_runs ? base->n_runs : cur->n_runs;
    double *d = malloc((runs ? runs : 1) * sizeof(*d));
    if (!d)
        return -ENOMEM;
    *n = 0;
    for (size_t k = 0; mb && mc && k < runs; k++)
        if (!isnan(mb->v[k]) && !isnan(mc->v[k]))
            d[(*n)++] = mc->v[k] - mb->v[k];
    *ret = d;
    return 0;
}

/* The rows' names: the union of both sets' metrics, in metric order. */
static int collect_names(const bench_set *base, const bench_set *cur, bench_result *res)
{
    size_t nb = base ? base->n_metrics : 0, nc = cur ? cur->n_metrics : 0;
    res->rows = calloc(nb + nc + 1, sizeof(*res->rows));
    if (!res->rows)
        return -ENOMEM;
    size_t i = 0, j = 0;
    while (i < nb || j < nc) {
        int c = i >= nb ? 1 : j >= nc ? -1 : bench_metric_cmp(base->metrics[i].name, cur->metrics[j].name);
        bench_row *row = &res->rows[res->n++];
        row->name = c <= 0 ? base->metrics[i].name : cur->metrics[j].name;
        if (c <= 0)
            i++;
        if (c >= 0)
            j++;
    }
    return 0;
}

int bench_compare(const bench_set *base, const bench_set *cur, const bench_gate *g, bench_result *ret)
{
    *ret = (bench_result){0};
    int rc = collect_names(base, cur, ret);
    double *p = NULL, *pl = NULL, *adj = NULL, *adj_l = NULL;
    if (rc < 0)
        goto fail;
    size_t n = ret->n;
    p = malloc((n + 1) * sizeof(*p));
    pl = malloc((n + 1) * sizeof(*pl));
    adj = malloc((n + 1) * sizeof(*adj));
    adj_l = malloc((n + 1) * sizeof(*adj_l));
    if (!p || !pl || !adj || !adj_l) {
        rc = -ENOMEM;
        goto fail;
    }
    size_t family = 0;
    for (size_t i = 0; i < n; i++) {
        bench_row *row = &ret->rows[i];
        double *vb, *vc;
        size_t nb, nc;
        p[i] = pl[i] = NAN;
        if ((rc = values_of(base, row->name, &vb, &nb)) < 0 || (rc = values_of(cur, row->name, &vc, &nc)) < 0) {
            free(vb);
            goto fail;
        }
        row->has_base = nb > 0;
        row->has_cur = nc > 0;
        stats_rng rb = rng_for(g, row->name, 1), rcur = rng_for(g, row->name, 2), rs = rng_for(g, row->name, 3);
        if (row->has_base)
            rc = stats_summarize(vb, nb, g->resamples, &rb, &row->base);
        if (rc == 0 && row->has_cur)
            rc = stats_summarize(vc, nc, g->resamples, &rcur, &row->cur);
        /* the spread detectability is judged on: the baseline's, else the runs' own */
        if (rc == 0)
            rc = row->has_base ? stats_sigma(vb, nb, &row->sigma) : stats_sigma(vc, nc, &row->sigma);
        double ref = row->has_base ? row->base.median : row->cur.median;
        row->gate_ms = fmax(g->threshold_pct / 100 * fabs(ref), g->floor_ms);
        double *d = NULL;
        if (rc == 0 && g->paired && row->has_base && row->has_cur)
            rc = differences(base, cur, row->name, &d, &row->pairs);
        bool enough = g->paired ? row->pairs >= g->min_samples : nb >= g->min_samples && nc >= g->min_samples;
        if (rc == 0 && row->has_base && row->has_cur && enough) {
            if (g->paired) {
                rc = stats_paired_shift_ci(d, row->pairs, g->resamples, &rs, &row->shift);
                if (rc == 0)
                    rc = stats_wilcoxon(d, row->pairs, &row->wsr);
                if (rc == 0)
                    rc = stats_sigma(d, row->pairs, &row->sigma);
                p[i] = row->wsr.p_greater;
                pl[i] = row->wsr.p_less;
            } else {
                rc = stats_shift_ci(vb, nb, vc, nc, g->resamples, &rs, &row->shift);
                if (rc == 0)
                    rc = stats_mann_whitney(vb, nb, vc, nc, &row->mwu);
                p[i] = row->mwu.p_greater;
                pl[i] = row->mwu.p_less;
            }
            row->pct = row->base.median != 0 ? row->shift.shift / row->base.median * 100 : NAN;
            family++;
            row->verdict = BENCH_OK;
        } else if (row->has_base && row->has_cur) {
            row->verdict = BENCH_TOO_FEW;
        } else if (base && cur) {
            row->verdict = row->has_base ? BENCH_ONLY_BASE : BENCH_ONLY_CUR;
        } else {
            row->verdict = BENCH_NO_BASE;
        }
        free(vb);
        free(vc);
        free(d);
        if (rc < 0)
            goto fail;
    }
    if ((rc = stats_holm(p, n, adj)) < 0 || (rc = stats_holm(pl, n, adj_l)) < 0)
        goto fail;

    /* detectability at the Bonferroni level of the family (all metrics
     * with enough samples when there is nothing to compare) */
    size_t m = family;
    if (!base || !cur) {
        for (size_t i = 0; i < n; i++)
            m += (base ? ret->rows[i].base.n : ret->rows[i].cur.n) >= g->min_samples;
    }
    double level = g->alpha / (double)(m ? m : 1);
    for (size_t i = 0; i < n; i++) {
        bench_row *row = &ret->rows[i];
        row->p = adj[i];
        row->p_less = adj_l[i];
        size_t nb = row->base.n, nc = row->cur.n;
        if (!base)
            nb = nc; /* the runs again, as a baseline */
        if (!cur)
            nc = g->planned_runs;
        if (g->paired && row->has_base && row->has_cur) {
            row->detectable = row->pairs >= g->min_samples
                                  ? stats_min_detectable_paired(row->sigma, row->pairs, level, g->power)
                                  : NAN;
            row->noisy = row->detectable > row->gate_ms;
            if (row->noisy)
                row->runs_needed = stats_pairs_needed(row->sigma, row->gate_ms, level, g->power);
        } else if ((row->has_base || row->has_cur) && nb >= g->min_samples && nc >= g->min_samples) {
            /* too few runs for any p to reach the level: nothing is detectable */
            row->detectable = stats_mwu_min_p(nb, nc) > level ? INFINITY
                                                               : stats_min_detectable(row->sigma, nb, nc, level, g->power);
            row->noisy = row->detectable > row->gate_ms;
            if (row->noisy)
                row->runs_needed = stats_runs_needed(row->sigma, row->gate_ms, level, g->power);
        } else {
            row->detectable = NAN;
        }
        if (row->verdict == BENCH_OK) {
            ret->compared++;
            if (row->p <= g->alpha && row->shift.shift > row->gate_ms)
                row->verdict = BENCH_REGRESSION;
            else if (row->p_less <= g->alpha && -row->shift.shift > row->gate_ms)
                row->verdict = BENCH_IMPROVED;
        }
        ret->regressions += row->verdict == BENCH_REGRESSION;
        ret->improved += row->verdict == BENCH_IMPROVED;
        ret->noisy += row->noisy;
    }
    free(p);
    free(pl);
    free(adj);
    free(adj_l);
    return 0;
fail:
    free(p);
    free(pl);
    free(adj);
    free(adj_l);
    bench_result_release(ret);
    return rc;
}
