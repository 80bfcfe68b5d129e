/* pacer bench — a start-up and page-load regression gate.
 *
 * Runs an unmodified program N times under the agent, each run ended once
 * it gave what it is run for (bench_runner.h), turns each run's records
 * into samples (bench_samples.h), summarises them, and with a baseline —
 * a file saved earlier, pacerd's stored records of a version, or a second
 * build run in alternation (--vs) — decides per metric whether it
 * regressed (bench_compare.h). Reports: bench_report.h.
 *
 * Exit status: 0 no regression (or nothing to compare), 1 a regression,
 * 2 a usage error, a run that failed, or a baseline that cannot be read.
 *
 * Order of work: everything that can be checked is checked before the
 * first run (options, the config, the agent, the baseline: a bad baseline
 * file should not cost 15 runs first). The Xvfb display, when needed, is
 * started once and shared by every run.
 */
#include "commands.h"

#include "bench_args.h"
#include "bench_compare.h"
#include "bench_display.h"
#include "bench_env.h"
#include "bench_report.h"
#include "bench_runner.h"
#include "bench_samples.h"
#include "bench_server.h"
#include "launch.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "usage: pacer bench [OPTIONS] -- PROGRAM [ARGS...]\n"
    "       pacer bench --baseline FILE|server:VERSION --current FILE [OPTIONS]\n"
    "       pacer bench --baseline FILE|server:VERSION --min-detectable [--runs N]\n"
    "\n"
    "Runs PROGRAM (unmodified, under the pacer agent) several times, collects\n"
    "its start-up phases and the metrics of every page, and prints per metric the\n"
    "median, the MAD, a bootstrap 95 % interval of the median, min and max. With\n"
    "a baseline it compares, per metric, and fails (exit 1) when one got slower.\n"
    "\n"
    "Metrics: cold_ms, first_screen_ms, app_cost_ms, full_display_ms, warm_ms of\n"
    "the start-up; PAGE.initial_draw_ms, PAGE.api_load_ms, PAGE.final_draw_ms and\n"
    "PAGE.total_ms of each page class (PAGE[2].… for its second instance in a\n"
    "run, and so on; docs/records.md defines them all).\n"
    "\n"
    "Runs:\n"
    "  --runs N            measured runs (default 15); with --vs, N of each build\n"
    "  --warmup K          runs before those, whose samples are dropped (default 1,\n"
    "                      per build): the first run pays for cold disk caches\n"
    "  --config FILE       the page config, as for pacer run: the main page,\n"
    "                      splash windows, each page's APIs\n"
    "  --until COND        end each run when COND holds, instead of when the main\n"
    "                      page reported (its final draw). COND: main; exit (the\n"
    "                      program ends by itself, with status 0); PAGE (a record\n"
    "                      of that page class); PAGE:N (N of them); a start-up\n"
    "                      metric (e.g. full_display_ms); PAGE.FIELD (a record of\n"
    "                      PAGE with that metric). Repeatable: every one must hold.\n"
    "                      The program is then ended with SIGTERM (its process\n"
    "                      group; SIGKILL after 5 s)\n"
    "  --timeout S         a run that takes longer fails (default 60)\n"
    "  --vs 'OTHER ARGS'   the baseline build: runs alternate in pairs, OTHER\n"
    "                      PROGRAM, PROGRAM OTHER, OTHER PROGRAM…, and PROGRAM\n"
    "                      is compared with OTHER pair by pair (the i-th run of\n"
    "                      each), so a machine that gets busier slows both runs\n"
    "                      of a pair alike and drops out of their difference,\n"
    "                      and each side goes first as often as the other (what\n"
    "                      a run leaves behind slows the next one). Split into\n"
    "                      words as a shell does, quotes included, without\n"
    "                      expansions\n"
    "  --xvfb              run on a private Xvfb display even when one is set\n"
    "                      (default: only when neither DISPLAY nor WAYLAND_DISPLAY\n"
    "                      is set). There, pacer also sets GIO_USE_PROXY_RESOLVER=\n"
    "                      dummy, GTK_A11Y=none and NO_AT_BRIDGE=1 unless they are\n"
    "                      set: without a session bus, looking for one adds up to\n"
    "                      seconds of noise to the first request and window\n"
    "  --nice N            run the program and its Xvfb at niceness N (-20 to\n"
    "                      19; their scheduling group's too, where the kernel\n"
    "                      groups by session): below 0 the runs take the CPU\n"
    "                      from other work on a shared machine, which would\n"
    "                      otherwise show as noise. Below 0 needs root or\n"
    "                      CAP_SYS_NICE. Each run has a session of its own\n"
    "  --keep DIR          keep each run's records and output in DIR: r01.jsonl,\n"
    "                      r01.log, … (with --vs a01 for OTHER, b01 for PROGRAM;\n"
    "                      rw01 … for warm-ups); default: a temporary directory,\n"
    "                      removed at the end unless a run failed\n"
    "\n"
    "Metrics:\n"
    "  --metric PATTERN    only the metrics matching PATTERN (shell pattern, e.g.\n"
    "                      cold_ms or 'ShopHomeWindow.*'); repeatable\n"
    "\n"
    "Baselines:\n"
    "  --save FILE         write PROGRAM's samples and the environment (CPU model,\n"
    "                      kernel, GTK version, pacer version, and per run the\n"
    "                      load, CPU clock and CPU time) as JSON\n"
    "  --save-vs FILE      with --vs: write OTHER's samples too\n"
    "  --baseline FILE     compare with samples saved by --save\n"
    "  --baseline server:VERSION\n"
    "                      compare with the records pacerd stores for VERSION of\n"
    "                      the app (--app), each session one run; needs --server\n"
    "                      and the admin token\n"
    "  --current FILE      compare samples saved earlier instead of running\n"
    "                      anything\n"
    "  --paired            with --baseline FILE --current FILE from one --vs bench\n"
    "                      (--save-vs and --save): compare them pair by pair, as\n"
    "                      that bench did\n"
    "  --threshold PCT     a regression must shift the median by more than PCT %\n"
    "                      of the baseline's median (default 5)\n"
    "  --floor MS          … and by more than MS milliseconds (default 5)\n"
    "  --alpha A           significance: the one-sided test — Mann–Whitney U;\n"
    "                      paired, the Wilcoxon signed-rank test of the pairs'\n"
    "                      differences — Holm-adjusted over all metrics compared,\n"
    "                      must give p <= A (default 0.05: at most a 5 % chance\n"
    "                      that a build that changed nothing fails)\n"
    "  --seed N            seed of the bootstrap intervals (default 1)\n"
    "  --min-detectable    run nothing: print for each metric of the baseline the\n"
    "                      smallest shift --runs current runs would detect (80 %\n"
    "                      power), and how many runs its gate would need. Every\n"
    "                      comparison prints the same figure, and warns when a\n"
    "                      metric's noise hides shifts the size of its gate\n"
    "\n"
    "Reports:\n"
    "  --report-md FILE    a Markdown summary, for a CI comment\n"
    "  --junit FILE        JUnit XML: each metric a test case, failed when it\n"
    "                      regressed\n"
    "\n"
    "Server:\n"
    "  --server URL        pacerd: where a server: baseline comes from, and where\n"
    "                      the runs' records are sent when a key is given\n"
    "  --key-file FILE     the app's ingest key, on the file's first line (default:\n"
    "                      $PACER_KEY): the runs upload their records, as pacer run\n"
    "                      --server does\n"
    "  --token-file FILE   the admin token for a server: baseline, on its first\n"
    "                      line (default: $PACER_ADMIN_TOKEN)\n"
    "  --app NAME          app name (default: PROGRAM's name)\n"
    "  --app-version V     version of the records the runs write\n"
    "  --spool FILE        the upload spool (as pacer run)\n"
    "\n"
    "Exit status: 0 no regression, 1 a regression (the lines before say which\n"
    "metric, by how much, with its interval), 2 usage error, a failed run, or a\n"
    "baseline that cannot be read.\n";

typedef struct bench_opts {
    size_t runs, warmup;
    const char *config, *vs, *save, *save_vs, *baseline, *current, *keep;
    const char **until_text;
    size_t n_until;
    const char **metrics;
    size_t n_metrics;
    bool xvfb, min_detectable;
    int timeout_s;
    bool nice_set;
    int nice;
    bench_gate gate;
    const char *report_md, *junit;
    const char *server, *key_file, *token_file, *app, *version, *spool;
    char **prog;
} bench_opts;

static int bad_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "pacer bench: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(pacer bench --help lists the options)\n");
    return 2;
}

static bool parse_size(const char *s, size_t min, size_t max, size_t *ret)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
        return false;
    *ret = (size_t)v;
    return true;
}

static bool parse_double(const char *s, double min, double max, double *ret)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= min && v <= max))
        return false;
    *ret = v;
    return true;
}

static int push(const char ***list, size_t *n, const char *v)
{
    const char **l = realloc(*list, (*n + 1) * sizeof(**list));
    if (!l)
        return -ENOMEM;
    l[(*n)++] = v;
    *list = l;
    return 0;
}

static int parse_options(int argc, char **argv, bench_opts *o)
{
    *o = (bench_opts){.runs = 15, .warmup = 1, .timeout_s = 60};
    o->gate = (bench_gate){.threshold_pct = 5, .floor_ms = 5, .alpha = 0.05, .power = 0.8, .resamples = 2000,
                           .seed = 1, .min_samples = 4};
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-')
            break; /* PROGRAM without "--" */
        if (strcmp(a, "--xvfb") == 0) {
            o->xvfb = true;
            continue;
        }
        if (strcmp(a, "--min-detectable") == 0) {
            o->min_detectable = true;
            continue;
        }
        if (strcmp(a, "--key") == 0) {
            fprintf(stderr, "pacer bench: %s\n", CLI_NO_KEY_IN_ARGV);
            return 2;
        }
        if (strcmp(a, "--paired") == 0) {
            o->gate.paired = true;
            continue;
        }
        static const char *const with_value[] = {
            "--runs", "--warmup", "--config", "--until", "--timeout", "--vs", "--nice", "--keep", "--metric", "--save",
            "--save-vs", "--baseline", "--current", "--threshold", "--floor", "--alpha", "--seed", "--report-md",
            "--junit", "--server", "--key-file", "--token-file", "--app", "--app-version", "--spool", NULL};
        bool known = false;
        for (size_t k = 0; with_value[k] && !known; k++)
            known = strcmp(a, with_value[k]) == 0;
        if (!known)
            return bad_usage("unknown option '%s'", a);
        if (i + 1 >= argc || !argv[i + 1][0])
            return bad_usage("%s needs a value", a);
        const char *v = argv[++i];
        size_t sz;
        if (strcmp(a, "--runs") == 0) {
            if (!parse_size(v, 1, 10000, &o->runs))
                return bad_usage("--runs: expected a count from 1 to 10000, not '%s'", v);
        } else if (strcmp(a, "--warmup") == 0) {
            if (!parse_size(v, 0, 1000, &o->warmup))
                return bad_usage("--warmup: expected a count from 0 to 1000, not '%s'", v);
        } else if (strcmp(a, "--timeout") == 0) {
            if (!parse_size(v, 1, 86400, &sz))
                return bad_usage("--timeout: expected seconds from 1 to 86400, not '%s'", v);
            o->timeout_s = (int)sz;
        } else if (strcmp(a, "--nice") == 0) {
            char *end;
            long n = strtol(v, &end, 10);
            if (!*v || *end || n < -20 || n > 19)
                return bad_usage("--nice: expected a niceness from -20 to 19, not '%s'", v);
            o->nice_set = true;
            o->nice = (int)n;
        } else if (strcmp(a, "--threshold") == 0) {
            if (!parse_double(v, 0, 1000, &o->gate.threshold_pct))
                return bad_usage("--threshold: expected a percentage from 0 to 1000, not '%s'", v);
        } else if (strcmp(a, "--floor") == 0) {
            if (!parse_double(v, 0, 1e7, &o->gate.floor_ms))
                return bad_usage("--floor: expected milliseconds (0 or more), not '%s'", v);
        } else if (strcmp(a, "--alpha") == 0) {
            if (!parse_double(v, 1e-12, 0.5, &o->gate.alpha))
                return bad_usage("--alpha: expected a probability above 0 and at most 0.5, not '%s'", v);
        } else if (strcmp(a, "--seed") == 0) {
            if (!parse_size(v, 0, SIZE_MAX, &sz))
                return bad_usage("--seed: expected a non-negative integer, not '%s'", v);
            o->gate.seed = (uint64_t)sz;
        } else if (strcmp(a, "--until") == 0) {
            if (push(&o->until_text, &o->n_until, v) < 0)
                return bad_usage("%s", "out of memory");
        } else if (strcmp(a, "--metric") == 0) {
            if (push(&o->metrics, &o->n_metrics, v) < 0)
                return bad_usage("%s", "out of memory");
        } else {
            const char **slot = strcmp(a, "--config") == 0       ? &o->config
                                : strcmp(a, "--vs") == 0         ? &o->vs
                                : strcmp(a, "--keep") == 0       ? &o->keep
                                : strcmp(a, "--save") == 0       ? &o->save
                                : strcmp(a, "--save-vs") == 0    ? &o->save_vs
                                : strcmp(a, "--baseline") == 0   ? &o->baseline
                                : strcmp(a, "--current") == 0    ? &o->current
                                : strcmp(a, "--report-md") == 0  ? &o->report_md
                                : strcmp(a, "--junit") == 0      ? &o->junit
                                : strcmp(a, "--server") == 0     ? &o->server
                                : strcmp(a, "--key-file") == 0   ? &o->key_file
                                : strcmp(a, "--token-file") == 0 ? &o->token_file
                                : strcmp(a, "--app") == 0        ? &o->app
                                : strcmp(a, "--app-version") == 0 ? &o->version
                                                                 : &o->spool;
            *slot = v;
        }
    }
    o->prog = i < argc ? argv + i : NULL;
    o->gate.planned_runs = o->runs;

    bool runs_something = !o->current && !o->min_detectable;
    if (o->current && o->prog)
        return bad_usage("%s", "--current compares saved samples: give no PROGRAM with it");
    if (o->min_detectable && (o->prog || o->current || o->vs))
        return bad_usage("%s", "--min-detectable runs nothing: give it a --baseline, no PROGRAM, --current or --vs");
    if ((o->current || o->min_detectable) && !o->baseline)
        return bad_usage("%s", o->current ? "--current needs a --baseline to compare with"
                                           : "--min-detectable needs a --baseline");
    if (runs_something && !o->prog)
        return bad_usage("%s", "no program given: pacer bench [OPTIONS] -- PROGRAM [ARGS...]");
    if (o->vs && o->baseline)
        return bad_usage("%s", "--vs and --baseline: choose one (with --vs, OTHER is the baseline)");
    if (o->gate.paired && !o->current)
        return bad_usage("%s", "--paired is for --baseline FILE --current FILE (with --vs, runs are paired anyway)");
    if (o->save_vs && !o->vs)
        return bad_usage("%s", "--save-vs saves OTHER's samples: it needs --vs");
    if (o->baseline && strncmp(o->baseline, "server:", 7) == 0 && (!o->server || !o->baseline[7]))
        return bad_usage("%s", o->baseline[7] ? "--baseline server:VERSION needs --server URL"
                                               : "--baseline server: needs a VERSION after the colon");
    if (!runs_something && (o->config || o->n_until || o->keep || o->xvfb || o->save || o->key_file || o->spool ||
                            o->nice_set))
        return bad_usage("%s", "--config, --until, --keep, --xvfb, --nice, --save, --key-file and --spool concern runs, "
                               "and this runs nothing");
    return 0;
}

/* The words of a command line joined by spaces, for messages and files. */
static char *join_words(char **argv)
{
    size_t n = 1;
    for (char **a = argv; *a; a++)
        n += strlen(*a) + 1;
    char *s = malloc(n);
    if (!s)
        return NULL;
    s[0] = 0;
    for (char **a = argv; *a; a++) {
        if (a != argv)
            strcat(s, " ");
        strcat(s, *a);
    }
    return s;
}

/* Reads a set saved by --save. NULL (printed) on failure. */
static bench_set *load_file(const char *what, const char *path)
{
    char *buf;
    size_t len;
    int r = bench_read_file(path, 256u << 20, &buf, &len);
    if (r < 0) {
        fprintf(stderr, "pacer bench: %s %s: %s\n", what, path, r == -EFBIG ? "larger than 256 MiB" : strerror(-r));
        return NULL;
    }
    bench_set *set = NULL;
    char err[512];
    if (bench_set_parse(buf, len, &set, err, sizeof(err)) < 0)
        fprintf(stderr, "pacer bench: %s %s: %s\n", what, path, err);
    free(buf);
    return set;
}

static bench_set *load_baseline(const bench_opts *o, const char *prog0)
{
    if (strncmp(o->baseline, "server:", 7) != 0)
        return load_file("--baseline", o->baseline);
    char *token = NULL;
    if (o->token_file) {
        if (!(token = cli_token_file("bench", o->token_file)))
            return NULL;
    } else if (getenv("PACER_ADMIN_TOKEN") && *getenv("PACER_ADMIN_TOKEN")) {
        token = strdup(getenv("PACER_ADMIN_TOKEN"));
    } else {
        fprintf(stderr, "pacer bench: --baseline %s needs pacerd's admin token: --token-file FILE or "
                        "$PACER_ADMIN_TOKEN\n", o->baseline);
        return NULL;
    }
    const char *app = o->app;
    if (!app && prog0) {
        app = strrchr(prog0, '/');
        app = app ? app + 1 : prog0;
    }
    if (!app) {
        fprintf(stderr, "pacer bench: --baseline %s: which app? give --app NAME\n", o->baseline);
        free(token);
        return NULL;
    }
    bench_set *set = NULL;
    char err[700];
    if (!token || bench_server_fetch(o->server, token, app, o->baseline + 7, &set, err, sizeof(err)) < 0) {
        fprintf(stderr, "pacer bench: --baseline %s: %s\n", o->baseline, token ? err : "out of memory");
        set = NULL;
    } else if (set->n_runs == 0) {
        fprintf(stderr, "pacer bench: --baseline %s: pacerd has no page or start-up records of app %s, version %s\n",
                o->baseline, app, o->baseline + 7);
        bench_set_free(set);
        set = NULL;
    }
    free(token);
    return set;
}

static int save_set(const char *what, const char *path, const bench_set *set)
{
    size_t len;
    char *text = bench_set_format(set, &len);
    FILE *f = text ? fopen(path, "w") : NULL;
    int ok = f && fwrite(text, 1, len, f) == len;
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok)
        fprintf(stderr, "pacer bench: %s %s: %s\n", what, path, text ? strerror(errno) : "out of memory");
    free(text);
    return ok ? 0 : -1;
}

static int write_report(const char *what, const char *path, const bench_report *rep,
                        int (*fn)(const bench_report *, FILE *))
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "pacer bench: %s %s: %s\n", what, path, strerror(errno));
        return -1;
    }
    int r = fn(rep, f);
    if (fclose(f) != 0 || r < 0) {
        fprintf(stderr, "pacer bench: %s %s: cannot write it\n", what, path);
        return -1;
    }
    return 0;
}

static void on_signal(int sig)
{
    bench_interrupted = 1;
}

/* Everything a bench of programs holds, released by bench_cleanup. */
typedef struct bench_work {
    bench_display display;
    char workdir[PATH_MAX];
    bool temp_workdir;
    char **labels;
    size_t n_labels;
    bench_runner runner;
    bench_until *until;
    size_t n_until;
    char *agent;
    char *key; /* the ingest key the runs upload with, or NULL */
    bool failed; /* a run failed: its files stay, for a look */
} bench_work;

static void bench_cleanup(bench_work *w)
{
    bench_display_stop(&w->display);
    bool remove = w->temp_workdir && !w->failed;
    for (size_t i = 0; i < w->n_labels; i++) {
        if (remove)
            bench_runner_clean(&w->runner, w->labels[i]);
        free(w->labels[i]);
    }
    free(w->labels);
    if (remove)
        rmdir(w->workdir);
    else if (w->temp_workdir)
        fprintf(stderr, "pacer bench: the runs' records and output are kept in %s\n", w->workdir);
    for (size_t i = 0; i < w->n_until; i++)
        free(w->until[i].page);
    free(w->until);
    free(w->agent);
    cli_key_free(w->key);
}

static int one_run(bench_work *w, char **prog, const char *label, bench_set *set)
{
    char **labels = realloc(w->labels, (w->n_labels + 1) * sizeof(*labels));
    if (!labels)
        return -1;
    w->labels = labels;
    if (!(w->labels[w->n_labels] = strdup(label)))
        return -1;
    w->n_labels++;
    if (bench_runner_run(&w->runner, prog, label, set) < 0)
        return -1;
    return 0;
}

/* Runs the warm-ups and the measured runs. With --vs (A = other) each pair
 * holds one run of each, in the order A B, B A, A B, ...: both sides go
 * first equally often, so what a run leaves behind (the previous app's
 * teardown, caches, the X server's cleanup) slows each side alike, as a
 * machine that gets busier does. 0, or -1 (printed). */
static int run_all(bench_work *w, const bench_opts *o, char **prog, char **other, bench_set *cur, bench_set *vs)
{
    char label[32];
    size_t total = (o->warmup + o->runs) * (other ? 2 : 1);
    bench_set *drop = bench_set_new();
    if (!drop)
        return -1;
    size_t done = 0;
    int rc = 0;
    bool tty = isatty(2);
    for (size_t k = 0; k < o->warmup + o->runs && rc == 0; k++) {
        bool warm = k < o->warmup;
        size_t num = warm ? k + 1 : k - o->warmup + 1;
        bool flip = other && !warm && num % 2 == 0; /* PROGRAM first in even-numbered pairs */
        for (int step = other ? 0 : 1; step < 2 && rc == 0; step++) {
            int side = flip ? 1 - step : step;
            snprintf(label, sizeof(label), "%s%s%02zu", side ? (other ? "b" : "r") : "a", warm ? "w" : "", num);
            ++done;
            if (tty) {
                fprintf(stderr, "\rpacer bench: run %zu of %zu (%s)   ", done, total,
                        warm ? "warm-up" : side ? (other ? "PROGRAM" : "measured") : "OTHER");
                fflush(stderr);
            }
            rc = one_run(w, side ? prog : other, label, warm ? drop : side ? cur : vs);
        }
    }
    if (tty)
        fprintf(stderr, "\r%*s\r", 60, "");
    bench_set_free(drop);
    return rc;
}

static int prepare_runs(bench_work *w, const bench_opts *o)
{
    int nr = o->nice_set ? bench_nice_probe(o->nice) : 0;
    if (nr < 0) {
        fprintf(stderr, "pacer bench: --nice %d: %s%s\n", o->nice, strerror(-nr),
                nr == -EACCES || nr == -EPERM ? " (a niceness below the current one needs root or CAP_SYS_NICE)" : "");
        return -1;
    }
    for (size_t i = 0; i < o->n_until; i++) {
        bench_until *u = realloc(w->until, (w->n_until + 1) * sizeof(*u));
        if (!u)
            return -1;
        w->until = u;
        char err[400];
        if (bench_parse_until(o->until_text[i], &w->until[w->n_until], err, sizeof(err)) < 0) {
            fprintf(stderr, "pacer bench: --until '%s': %s\n", o->until_text[i], err);
            return -1;
        }
        w->n_until++;
    }
    if (o->server) {
        int key_error = 0;
        w->key = cli_server_key("bench", o->key_file, &key_error);
        if (key_error)
            return -1;
    }
    /* the app a server: baseline is looked up by, named as pacer run's agent names a program */
    const char *app = o->app;
    if (!app) {
        app = strrchr(o->prog[0], '/');
        app = app ? app + 1 : o->prog[0];
    }
    launch_options lo = {.config = o->config, .app = app, .version = o->version, .server = w->key ? o->server : NULL,
                         .key = w->key, .spool = o->spool};
    if (launch_check("pacer bench", &lo, &w->agent) < 0)
        return -1;
    if (o->keep) {
        if (mkdir(o->keep, 0755) < 0 && errno != EEXIST) {
            fprintf(stderr, "pacer bench: --keep %s: %s\n", o->keep, strerror(errno));
            return -1;
        }
        if (!realpath(o->keep, w->workdir)) {
            fprintf(stderr, "pacer bench: --keep %s: %s\n", o->keep, strerror(errno));
            return -1;
        }
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(w->workdir, sizeof(w->workdir), "%s/pacer-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(w->workdir)) {
            fprintf(stderr, "pacer bench: cannot make a directory for the runs (%s): %s\n", w->workdir,
                    strerror(errno));
            return -1;
        }
        w->temp_workdir = true;
    }
    bool have_display = (getenv("DISPLAY") && *getenv("DISPLAY")) ||
                        (getenv("WAYLAND_DISPLAY") && *getenv("WAYLAND_DISPLAY"));
    if (o->xvfb || !have_display) {
        char err[300];
        if (bench_display_start(&w->display, o->nice_set, o->nice, err, sizeof(err)) < 0) {
            fprintf(stderr, "pacer bench: %s\n", err);
            return -1;
        }
    }
    w->runner = (bench_runner){.launch = lo,
                               .agent = w->agent,
                               .until = w->until,
                               .n_until = w->n_until,
                               .timeout_ms = o->timeout_s * 1000,
                               .workdir = w->workdir,
                               .display = w->display.pid ? w->display.name : NULL,
                               .headless = w->display.pid != 0,
                               .xvfb = w->display.pid,
                               .nice_set = o->nice_set,
                               .nice = o->nice};
    return 0;
}

static int fill_env(bench_set *set, char **prog, const bench_runner *r)
{
    char *text = join_words(prog);
    int rc = bench_env_probe(&set->env);
    rc |= bench_env_set(&set->env.program, text);
    rc |= bench_env_set(&set->env.source, "pacer bench runs");
    set->env.cpus = r->cpus;
    if (r->nice_set)
        set->env.nice = r->nice;
    free(text);
    return rc < 0 ? -1 : 0;
}

static int bench(int argc, char **argv)
{
    bench_opts o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc;
    bench_work w = {0};
    bench_set *base = NULL, *cur = NULL, *vs = NULL;
    char **other = NULL;
    char *cur_label = NULL, *base_label = NULL;
    rc = 2;

    if (o.vs) {
        char err[200];
        if (bench_split_command(o.vs, &other, err, sizeof(err)) < 0) {
            fprintf(stderr, "pacer bench: --vs '%s': %s\n", o.vs, err);
            goto out;
        }
    }
    /* the baseline first: a bad one must not cost the runs */
    if (o.baseline && !(base = load_baseline(&o, o.prog ? o.prog[0] : NULL)))
        goto out;
    if (o.current && !(cur = load_file("--current", o.current)))
        goto out;
    if (o.gate.paired && o.current && base->n_runs != cur->n_runs) {
        fprintf(stderr, "pacer bench: --paired: the baseline has %zu runs and --current %zu; paired files come from one "
                        "--vs bench, with as many runs each\n", base->n_runs, cur->n_runs);
        goto out;
    }

    if (o.prog) {
        if (prepare_runs(&w, &o) < 0)
            goto out;
        bench_env tmp = {0};
        bench_env_probe(&tmp); /* after --nice */
        w.runner.cpus = tmp.cpus;
        free(tmp.cpu_model);
        free(tmp.kernel);
        free(tmp.pacer);
        struct sigaction sa = {.sa_handler = on_signal};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        cur = bench_set_new();
        vs = other ? bench_set_new() : NULL;
        if (!cur || (other && !vs)) {
            fprintf(stderr, "pacer bench: out of memory\n");
            goto out;
        }
        if (run_all(&w, &o, o.prog, other, cur, vs) < 0) {
            w.failed = true;
            goto out;
        }
        if (fill_env(cur, o.prog, &w.runner) < 0 || (vs && fill_env(vs, other, &w.runner) < 0)) {
            fprintf(stderr, "pacer bench: out of memory\n");
            goto out;
        }
        if (o.save && save_set("--save", o.save, cur) < 0)
            goto out;
        if (o.save_vs && save_set("--save-vs", o.save_vs, vs) < 0)
            goto out;
        if (vs) {
            base = vs;
            vs = NULL;
            o.gate.paired = true;
        }
        cur_label = join_words(o.prog);
    } else if (o.current) {
        cur_label = strdup(o.current);
    }
    if (o.vs && asprintf(&base_label, "'%s', run alternately", o.vs) < 0)
        base_label = NULL;
    else if (!o.vs && o.baseline)
        base_label = strdup(o.baseline);
    if ((cur && !cur_label) || (base && !base_label)) {
        fprintf(stderr, "pacer bench: out of memory\n");
        goto out;
    }

    if (base)
        bench_set_filter(base, o.metrics, o.n_metrics);
    if (cur)
        bench_set_filter(cur, o.metrics, o.n_metrics);
    if (o.n_metrics && ((cur && cur->n_metrics == 0) || (!cur && base->n_metrics == 0))) {
        fprintf(stderr, "pacer bench: no metric matches --metric %s%s\n", o.metrics[0],
                o.n_metrics > 1 ? " (or the others)" : "");
        goto out;
    }

    bench_result res;
    if (bench_compare(base, cur, &o.gate, &res) < 0) {
        fprintf(stderr, "pacer bench: out of memory\n");
        goto out;
    }
    bench_report rep = {.res = &res, .gate = &o.gate, .base = base, .cur = cur, .base_label = base_label,
                        .cur_label = cur_label, .warmup = o.prog ? o.warmup : 0};
    bench_report_text(&rep, stdout);
    fflush(stdout);
    int wrote = 0;
    if (o.report_md)
        wrote |= write_report("--report-md", o.report_md, &rep, bench_report_markdown);
    if (o.junit)
        wrote |= write_report("--junit", o.junit, &rep, bench_report_junit);
    rc = wrote < 0 ? 2 : res.regressions ? 1 : 0;
    bench_result_release(&res);
out:
    bench_cleanup(&w);
    bench_argv_free(other);
    bench_set_free(base);
    bench_set_free(cur);
    bench_set_free(vs);
    free(cur_label);
    free(base_label);
    free(o.until_text);
    free(o.metrics);
    return rc;
}

const cli_command cmd_bench = {"bench", "Run a program repeatedly and fail when start-up or a page got slower",
                               usage, bench};
