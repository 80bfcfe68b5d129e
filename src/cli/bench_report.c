/* pacer bench: what it prints and writes (bench_report.h). */
#include "bench_report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- warnings ---- */

typedef void (*warn_fn)(void *ctx, const char *text);

static double median_note(const bench_set *set, size_t offset, double *ret_min, double *ret_max)
{
    double *v = malloc((set->n_runs ? set->n_runs : 1) * sizeof(*v));
    size_t n = 0;
    *ret_min = INFINITY;
    *ret_max = -INFINITY;
    if (!v)
        return NAN;
    for (size_t k = 0; k < set->n_runs; k++) {
        double x = *(const double *)((const char *)&set->runs[k] + offset);
        if (isnan(x))
            continue;
        v[n++] = x;
        *ret_min = fmin(*ret_min, x);
        *ret_max = fmax(*ret_max, x);
    }
    double m = NAN;
    if (n && stats_median(v, n, &m) < 0)
        m = NAN;
    free(v);
    return m;
}

static void env_differs(const char *what, const char *b, const char *c, warn_fn warn,
                        void *ctx)
{
    if (!b || !c || strcmp(b, c) == 0)
        return;
    char text[700];
    snprintf(text, sizeof(text), "the baseline was taken with %s %.300s, these runs with %.300s", what, b, c);
    warn(ctx, text);
}

static void load_warnings(const bench_set *set, const char *side, warn_fn warn, void *ctx)
{
    if (!set || set->n_runs == 0)
        return;
    double lo, hi;
    char text[400];
    double bg = median_note(set, offsetof(bench_run, background), &lo, &hi);
    if (bg > BENCH_BUSY_WARN) {
        snprintf(text, sizeof(text),
                 "%s: other processes kept a median %.2f CPUs busy during the runs (up to %.2f): the figures are "
                 "noisier than on an idle machine",
                 side, bg, hi);
        warn(ctx, text);
    }
    double mhz = median_note(set, offsetof(bench_run, cpu_mhz), &lo, &hi);
    if (!isnan(mhz) && lo > 0 && hi / lo > 1.05) {
        snprintf(text, sizeof(text), "%s: the CPU clock changed between runs (%.0f to %.0f MHz)", side, lo, hi);
        warn(ctx, text);
    }
}

static void for_each_warning(const bench_report *r, warn_fn warn, void *ctx)
{
    if (r->base && r->cur) {
        const bench_env *b = &r->base->env, *c = &r->cur->env;
        env_differs("the CPU", b->cpu_model, c->cpu_model, warn, ctx);
        env_differs("kernel", b->kernel, c->kernel, warn, ctx);
        env_differs("GTK", b->gtk, c->gtk, warn, ctx);
        env_differs("pacer", b->pacer, c->pacer, warn, ctx);
        if (b->nice != c->nice) {
            char text[200];
            snprintf(text, sizeof(text), "the baseline ran at niceness %ld, these runs at %ld (--nice)", b->nice,
                     c->nice);
            warn(ctx, text);
        }
    }
    load_warnings(r->base, "baseline", warn, ctx);
    load_warnings(r->cur, r->base ? "current" : "runs", warn, ctx);
    for (size_t i = 0; i < r->res->n; i++) {
        const bench_row *row = &r->res->rows[i];
        if (!row->noisy)
            continue;
        char text[900];
        if (isinf(row->detectable))
            snprintf(text, sizeof(text),
                     "%s: too few runs for any shift to be significant at α %.3g over all metrics; about %zu %s "
                     "would see one of %.1f ms (its gate)",
                     row->name, r->gate->alpha, row->runs_needed,
                     r->gate->paired && row->has_base && row->has_cur ? "pairs" : "runs on each side", row->gate_ms);
        else if (r->gate->paired && row->has_base && row->has_cur)
            snprintf(text, sizeof(text),
                     "%s: the differences within its pairs spread (σ ≈ %.1f ms) and hide shifts below %.1f ms, above "
                     "its gate of %.1f ms; about %zu pairs would see one of %.1f ms",
                     row->name, row->sigma, row->detectable, row->gate_ms, row->runs_needed, row->gate_ms);
        else
            snprintf(text, sizeof(text),
                     "%s: the %s noise (σ ≈ %.1f ms) hides shifts below %.1f ms, above its gate of %.1f ms; "
                     "about %zu runs on each side would see one of %.1f ms",
                     row->name, row->has_base ? "baseline's" : "runs'", row->sigma, row->detectable, row->gate_ms,
                     row->runs_needed, row->gate_ms);
        warn(ctx, text);
    }
}

/* ---- text ---- */

static const char *test_name(const bench_gate *g)
{
    return g->paired ? "one-sided Wilcoxon signed-rank test of the alternating runs' differences"
                     : "one-sided Mann–Whitney U test";
}

static void env_line(FILE *out, const char *side, const bench_set *set)
{
    if (!set)
        return;
    const bench_env *e = &set->env;
    double lo, hi;
    double mhz = median_note(set, offsetof(bench_run, cpu_mhz), &lo, &hi);
    fprintf(out, "  %-9s %s", side, e->cpu_model ? e->cpu_model : "CPU unknown");
    if (e->cpus)
        fprintf(out, ", %ld CPU%s", e->cpus, e->cpus == 1 ? "" : "s");
    if (!isnan(mhz))
        fprintf(out, " at %.0f MHz", mhz);
    if (e->kernel)
        fprintf(out, ", Linux %s", e->kernel);
    if (e->gtk)
        fprintf(out, ", GTK %s", e->gtk);
    if (e->pacer)
        fprintf(out, ", pacer %s", e->pacer);
    if (e->nice)
        fprintf(out, ", nice %ld", e->nice);
    if (e->source)
        fprintf(out, " (%s)", e->source);
    fprintf(out, "\n");
    double l1 = median_note(set, offsetof(bench_run, load1), &lo, &hi);
    double blo, bhi;
    double bg = median_note(set, offsetof(bench_run, background), &blo, &bhi);
    if (!isnan(l1) || !isnan(bg)) {
        fprintf(out, "  %-9s", "");
        if (!isnan(l1))
            fprintf(out, " load %.2f–%.2f", lo, hi);
        if (!isnan(bg))
            fprintf(out, "%s other processes busy %.2f–%.2f CPUs (median %.2f)", isnan(l1) ? "" : ";", blo, bhi, bg);
        fprintf(out, "\n");
    }
}

static int name_width(const bench_result *res)
{
    int w = 24;
    for (size_t i = 0; i < res->n; i++)
        if ((int)strlen(res->rows[i].name) > w)
            w = (int)strlen(res->rows[i].name);
    return w > 60 ? 60 : w;
}

static void fmt_p(char *buf, size_t size, double p)
{
    if (isnan(p))
        snprintf(buf, size, "-");
    else if (p < 0.0001)
        snprintf(buf, size, "<0.0001");
    else
        snprintf(buf, size, "%.4f", p);
}

static void print_warning(void *ctx, const char *text)
{
    fprintf(ctx, "warning: %s\n", text);
}

static void print_regression_line(FILE *out, const bench_row *row, const bench_gate *g)
{
    fprintf(out,
            "%s %s: %+.1f ms (%+.1f %%), 95 %% CI %+.1f … %+.1f ms; baseline %.1f ms, now %.1f ms; "
            "p = %.2g (Holm, %s), gate %.1f ms\n",
            row->verdict == BENCH_REGRESSION ? "REGRESSION" : "improved", row->name, row->shift.shift, row->pct,
            row->shift.ci_lo, row->shift.ci_hi, row->base.median, row->cur.median,
            row->verdict == BENCH_REGRESSION ? row->p : row->p_less,
            g->paired ? "paired signed-rank" : "Mann–Whitney U", row->gate_ms);
}

void bench_report_text(const bench_report *r, FILE *out)
{
    const bench_result *res = r->res;
    const bench_gate *g = r->gate;
    int w = name_width(res);
    size_t runs = r->cur ? r->cur->n_runs : 0;
    if (r->cur)
        fprintf(out, "pacer bench: %s: %zu run%s", r->cur_label, runs, runs == 1 ? "" : "s");
    else
        fprintf(out, "pacer bench: baseline %s: %zu runs", r->base_label, r->base->n_runs);
    if (r->warmup)
        fprintf(out, " after %zu warm-up", r->warmup);
    if (r->cur && r->base)
        fprintf(out, ", against %s (%zu runs)", r->base_label, r->base->n_runs);
    fprintf(out, "\n");
    env_line(out, r->base && r->cur ? "baseline" : r->base ? "runs" : "", r->base);
    env_line(out, r->base ? "current" : "runs", r->cur);
    fprintf(out, "\n");

    char p[16];
    if (!r->base || !r->cur) {
        fprintf(out, "%-*s %5s %9s %8s %21s %9s %9s %10s\n", w, "metric (ms)", "n", "median", "MAD",
                "95% CI of median", "min", "max", r->cur ? "detectable" : "detect.");
        for (size_t i = 0; i < res->n; i++) {
            const bench_row *row = &res->rows[i];
            const stats_summary *s = r->cur ? &row->cur : &row->base;
            fprintf(out, "%-*s %5zu %9.1f %8.1f [%8.1f, %8.1f] %9.1f %9.1f", w, row->name, s->n, s->median, s->mad,
                    s->ci_lo, s->ci_hi, s->min, s->max);
            if (isnan(row->detectable))
                fprintf(out, " %10s\n", "-");
            else
                fprintf(out, " %10.1f%s\n", row->detectable, row->noisy ? " !" : "");
        }
        if (!r->cur)
            fprintf(out,
                    "\ndetectable: the smallest shift of the median that %zu current runs against this baseline "
                    "would find (power %.0f %%, α %.2g over %s metrics); '!': above the metric's gate\n",
                    g->planned_runs, g->power * 100, g->alpha, "all");
        else
            fprintf(out,
                    "\ndetectable: the smallest shift of the median a comparison of as many runs again would find "
                    "(power %.0f %%, α %.2g over all metrics); '!': above the metric's gate (%.3g %%, %.3g ms)\n",
                    g->power * 100, g->alpha, g->threshold_pct, g->floor_ms);
    } else {
        fprintf(out, "%-*s %7s %9s %9s %9s %8s %21s %8s %8s  %s\n", w, "metric (ms)", "n", "baseline", "current",
                "shift", "%", "95% CI of shift", "p", "detect.", "verdict");
        for (size_t i = 0; i < res->n; i++) {
            const bench_row *row = &res->rows[i];
            char n[24];
            snprintf(n, sizeof(n), "%zu/%zu", row->base.n, row->cur.n);
            fprintf(out, "%-*s %7s", w, row->name, n);
            if (row->has_base)
                fprintf(out, " %9.1f", row->base.median);
            else
                fprintf(out, " %9s", "-");
            if (row->has_cur)
                fprintf(out, " %9.1f", row->cur.median);
            else
                fprintf(out, " %9s", "-");
            if (isnan(row->p)) {
                fprintf(out, " %9s %8s %21s %8s", "-", "-", "-", "-");
            } else {
                fmt_p(p, sizeof(p), row->verdict == BENCH_IMPROVED ? row->p_less : row->p);
                fprintf(out, " %+9.1f %+7.1f%% [%+8.1f, %+8.1f] %8s", row->shift.shift, row->pct, row->shift.ci_lo,
                        row->shift.ci_hi, p);
            }
            if (isnan(row->detectable))
                fprintf(out, " %8s", "-");
            else
                fprintf(out, " %8.1f", row->detectable);
            fprintf(out, "  %s%s\n", row->verdict == BENCH_REGRESSION ? "REGRESSION" : bench_verdict_name(row->verdict),
                    row->noisy ? " (noisy)" : "");
        }
        fprintf(out,
                "\nA metric regresses when the %s (Holm-adjusted over the %zu metric%s compared) gives p ≤ %.3g and "
                "the shift (%s) is above %.3g %% of the baseline's median and %.3g ms.\n",
                test_name(g), res->compared, res->compared == 1 ? "" : "s", g->alpha,
                g->paired ? "the median of the differences within pairs" : "current median − baseline median",
                g->threshold_pct, g->floor_ms);
    }
    fprintf(out, "\n");
    for (size_t i = 0; i < res->n; i++)
        if (res->rows[i].verdict == BENCH_REGRESSION || res->rows[i].verdict == BENCH_IMPROVED)
            print_regression_line(out, &res->rows[i], g);
    for_each_warning(r, print_warning, out);
    if (r->base && r->cur) {
        if (res->regressions)
            fprintf(out, "pacer bench: %zu regression%s among %zu metrics compared\n", res->regressions,
                    res->regressions == 1 ? "" : "s", res->compared);
        else
            fprintf(out, "pacer bench: no regression among %zu metric%s compared%s\n", res->compared,
                    res->compared == 1 ? "" : "s", res->improved ? " (some improved)" : "");
    }
}

/* ---- Markdown ---- */

/* Writes s for a Markdown table cell: | and the characters Markdown acts
 * on are escaped, line breaks become spaces. */
static void md_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (strchr("|\\`*_[]<>#", *s))
            fputc('\\', out);
        fputc(*s == '\n' || *s == '\r' ? ' ' : *s, out);
    }
}

static void md_warning(void *ctx, const char *text)
{
    FILE *out = ctx;
    fputs("- ", out);
    md_text(out, text);
    fputc('\n', out);
}

static void count_warning(void *ctx, const char *text)
{
    (*(size_t *)ctx)++;
}

static void md_env_row(FILE *out, const char *what, const char *b, const char *c, bool both)
{
    fprintf(out, "| %s | ", what);
    md_text(out, b ? b : "-");
    if (both) {
        fputs(" | ", out);
        md_text(out, c ? c : "-");
    }
    fputs(" |\n", out);
}

int bench_report_markdown(const bench_report *r, FILE *out)
{
    const bench_result *res = r->res;
    const bench_gate *g = r->gate;
    bool compare = r->base && r->cur;
    if (compare && res->regressions)
        fprintf(out, "### pacer bench: %zu regression%s\n\n", res->regressions, res->regressions == 1 ? "" : "s");
    else if (compare)
        fprintf(out, "### pacer bench: no regression\n\n");
    else
        fprintf(out, "### pacer bench\n\n");
    fputs("`", out);
    for (const char *s = r->cur ? r->cur_label : r->base_label; *s; s++)
        fputc(*s == '`' ? '\'' : *s, out);
    fprintf(out, "`: %zu runs", r->cur ? r->cur->n_runs : r->base->n_runs);
    if (compare) {
        fprintf(out, " against ");
        md_text(out, r->base_label);
        fprintf(out, " (%zu runs)", r->base->n_runs);
    }
    fprintf(out, ".\n\n");
    if (compare) {
        fprintf(out, "| metric | baseline (ms) | current (ms) | shift | 95 %% CI of the shift (ms) | p | verdict |\n");
        fprintf(out, "|---|---:|---:|---:|---:|---:|---|\n");
        for (size_t i = 0; i < res->n; i++) {
            const bench_row *row = &res->rows[i];
            fputs("| ", out);
            md_text(out, row->name);
            fputs(" | ", out);
            if (row->has_base)
                fprintf(out, "%.1f", row->base.median);
            fputs(" | ", out);
            if (row->has_cur)
                fprintf(out, "%.1f", row->cur.median);
            fputs(" | ", out);
            char p[16];
            if (!isnan(row->p)) {
                fmt_p(p, sizeof(p), row->verdict == BENCH_IMPROVED ? row->p_less : row->p);
                fprintf(out, "%+.1f ms (%+.1f %%) | %+.1f … %+.1f | %s", row->shift.shift, row->pct, row->shift.ci_lo,
                        row->shift.ci_hi, p);
            } else {
                fputs(" | | ", out);
            }
            fprintf(out, " | %s%s%s |\n", row->verdict == BENCH_REGRESSION ? "**" : "", bench_verdict_name(row->verdict),
                    row->verdict == BENCH_REGRESSION ? "**" : "");
        }
        fprintf(out,
                "\nA metric regresses when the %s (Holm-adjusted over the %zu metric%s compared) gives p ≤ %.3g and "
                "the shift (%s) is above %.3g %% of the baseline's median and %.3g ms.\n",
                test_name(g), res->compared, res->compared == 1 ? "" : "s", g->alpha,
                g->paired ? "the median of the differences within pairs" : "current median − baseline median",
                g->threshold_pct, g->floor_ms);
    } else {
        fprintf(out, "| metric | n | median (ms) | MAD | 95 %% CI of the median | min | max |\n");
        fprintf(out, "|---|---:|---:|---:|---:|---:|---:|\n");
        for (size_t i = 0; i < res->n; i++) {
            const bench_row *row = &res->rows[i];
            const stats_summary *s = r->cur ? &row->cur : &row->base;
            fputs("| ", out);
            md_text(out, row->name);
            fprintf(out, " | %zu | %.1f | %.1f | %.1f … %.1f | %.1f | %.1f |\n", s->n, s->median, s->mad, s->ci_lo,
                    s->ci_hi, s->min, s->max);
        }
    }
    size_t warnings = 0;
    for_each_warning(r, count_warning, &warnings);
    if (warnings) {
        fputs("\n**Warnings**\n\n", out);
        for_each_warning(r, md_warning, out);
    }

    fprintf(out, "\n<details><summary>Environment</summary>\n\n");
    const bench_env *b = r->base ? &r->base->env : NULL, *c = r->cur ? &r->cur->env : NULL;
    if (compare)
        fprintf(out, "| | baseline | current |\n|---|---|---|\n");
    else
        fprintf(out, "| | |\n|---|---|\n");
    const bench_env *one = c ? c : b;
    char cpus_b[24] = "", cpus_c[24] = "";
    if (b && b->cpus)
        snprintf(cpus_b, sizeof(cpus_b), "%ld", b->cpus);
    if (c && c->cpus)
        snprintf(cpus_c, sizeof(cpus_c), "%ld", c->cpus);
    md_env_row(out, "program", compare ? b->program : one->program, compare ? c->program : NULL, compare);
    md_env_row(out, "CPU", compare ? b->cpu_model : one->cpu_model, compare ? c->cpu_model : NULL, compare);
    md_env_row(out, "CPUs", compare ? cpus_b : (c ? cpus_c : cpus_b), cpus_c, compare);
    md_env_row(out, "kernel", compare ? b->kernel : one->kernel, compare ? c->kernel : NULL, compare);
    md_env_row(out, "GTK", compare ? b->gtk : one->gtk, compare ? c->gtk : NULL, compare);
    md_env_row(out, "pacer", compare ? b->pacer : one->pacer, compare ? c->pacer : NULL, compare);
    char nice_b[24] = "", nice_c[24] = "";
    if (b)
        snprintf(nice_b, sizeof(nice_b), "%ld", b->nice);
    if (c)
        snprintf(nice_c, sizeof(nice_c), "%ld", c->nice);
    md_env_row(out, "niceness", compare ? nice_b : (c ? nice_c : nice_b), nice_c, compare);
    md_env_row(out, "source", compare ? b->source : one->source, compare ? c->source : NULL, compare);
    fprintf(out, "\n</details>\n");
    fflush(out);
    return ferror(out) ? -EIO : 0;
}

/* ---- JUnit XML ---- */

/* Writes s as XML character data or an attribute value: the five
 * entities, and characters XML 1.0 cannot hold as U+FFFD's bytes. */
static void xml_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        case '\'':
            fputs("&apos;", out);
            break;
        default:
            if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
                fputs("\xef\xbf\xbd", out);
            else
                fputc(c, out);
        }
    }
}

static void xml_property(FILE *out, const char *name, const char *value)
{
    if (!value)
        return;
    fprintf(out, "      <property name=\"%s\" value=\"", name);
    xml_text(out, value);
    fputs("\"/>\n", out);
}

/* The class of a test case: pacer.bench.startup, pacer.bench.page.CLASS. */
static void xml_classname(FILE *out, const char *metric)
{
    const char *dot = strrchr(metric, '.');
    if (!dot) {
        fputs("pacer.bench.startup", out);
        return;
    }
    char cls[600];
    snprintf(cls, sizeof(cls), "pacer.bench.page.%.*s", (int)(dot - metric), metric);
    xml_text(out, cls);
}

int bench_report_junit(const bench_report *r, FILE *out)
{
    const bench_result *res = r->res;
    bool compare = r->base && r->cur;
    size_t skipped = 0;
    for (size_t i = 0; i < res->n; i++)
        skipped += compare && (res->rows[i].verdict == BENCH_TOO_FEW || res->rows[i].verdict == BENCH_ONLY_BASE ||
                               res->rows[i].verdict == BENCH_ONLY_CUR);
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(out, "<testsuites name=\"pacer bench\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"%zu\">\n",
            res->n, res->regressions, skipped);
    fputs("  <testsuite name=\"pacer bench: ", out);
    xml_text(out, r->cur ? r->cur_label : r->base_label);
    fprintf(out, "\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"%zu\">\n", res->n, res->regressions,
            skipped);
    const bench_set *set = r->cur ? r->cur : r->base;
    char cpus[24];
    snprintf(cpus, sizeof(cpus), "%ld", set->env.cpus);
    fputs("    <properties>\n", out);
    xml_property(out, "program", set->env.program);
    xml_property(out, "cpu_model", set->env.cpu_model);
    xml_property(out, "cpus", set->env.cpus ? cpus : NULL);
    xml_property(out, "kernel", set->env.kernel);
    xml_property(out, "gtk", set->env.gtk);
    xml_property(out, "pacer", set->env.pacer);
    char nice[24];
    snprintf(nice, sizeof(nice), "%ld", set->env.nice);
    xml_property(out, "nice", nice);
    if (compare)
        xml_property(out, "baseline", r->base_label);
    fputs("    </properties>\n", out);
    for (size_t i = 0; i < res->n; i++) {
        const bench_row *row = &res->rows[i];
        fputs("    <testcase classname=\"", out);
        xml_classname(out, row->name);
        fputs("\" name=\"", out);
        xml_text(out, row->name);
        double t = row->has_cur ? row->cur.median : row->base.median;
        fprintf(out, "\" time=\"%.6f\">\n", t / 1000);
        char text[1200];
        if (row->verdict == BENCH_REGRESSION) {
            snprintf(text, sizeof(text),
                     "%s: %+.1f ms (%+.1f %%), 95 %% CI %+.1f … %+.1f ms; baseline %.1f ms, now %.1f ms; p = %.2g",
                     row->name, row->shift.shift, row->pct, row->shift.ci_lo, row->shift.ci_hi, row->base.median,
                     row->cur.median, row->p);
            fputs("      <failure type=\"regression\" message=\"", out);
            xml_text(out, text);
            fputs("\">", out);
            xml_text(out, text);
            fprintf(out, " (gate %.1f ms)</failure>\n", row->gate_ms);
        } else if (compare && (row->verdict == BENCH_TOO_FEW || row->verdict == BENCH_ONLY_BASE ||
                               row->verdict == BENCH_ONLY_CUR)) {
            fputs("      <skipped message=\"", out);
            xml_text(out, bench_verdict_name(row->verdict));
            fputs("\"/>\n", out);
        }
        if (compare && !isnan(row->p))
            snprintf(text, sizeof(text),
                     "baseline median %.3f ms (n %zu, MAD %.3f), current median %.3f ms (n %zu, MAD %.3f), shift %+.3f ms "
                     "(95 %% CI %+.3f … %+.3f), p %.3g, verdict %s",
                     row->base.median, row->base.n, row->base.mad, row->cur.median, row->cur.n, row->cur.mad,
                     row->shift.shift, row->shift.ci_lo, row->shift.ci_hi, row->p, bench_verdict_name(row->verdict));
        else {
            const stats_summary *s = row->has_cur ? &row->cur : &row->base;
            snprintf(text, sizeof(text), "median %.3f ms (n %zu, MAD %.3f, 95 %% CI %.3f … %.3f, min %.3f, max %.3f)",
                     s->median, s->n, s->mad, s->ci_lo, s->ci_hi, s->min, s->max);
        }
        fputs("      <system-out>", out);
        xml_text(out, text);
        fputs("</system-out>\n    </testcase>\n", out);
    }
    fputs("  </testsuite>\n</testsuites>\n", out);
    fflush(out);
    return ferror(out) ? -EIO : 0;
}
