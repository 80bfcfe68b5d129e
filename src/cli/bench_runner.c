/* pacer bench: one measured run of a program (bench_runner.h). */
#include "bench_runner.h"

#include "bench_env.h"

#include <pacer/base/clock.h>
#include <pacer/record.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

volatile sig_atomic_t bench_interrupted;

#define POLL_MS 20
#define TERM_GRACE_MS 5000
#define MAX_LINE (8u << 20)

const char *bench_until_text(const bench_until *u, char *buf, size_t size)
{
    const char *field = u->kind == BENCH_UNTIL_METRIC
                            ? pacer_record_type_get(u->startup ? PACER_RECORD_STARTUP : PACER_RECORD_PAGE)
                                  ->shape->fields[u->field]
                                  .name
                            : "";
    switch (u->kind) {
    case BENCH_UNTIL_MAIN:
        snprintf(buf, size, "record of the main page");
        break;
    case BENCH_UNTIL_EXIT:
        snprintf(buf, size, "exit of its own");
        break;
    case BENCH_UNTIL_PAGE:
        if (u->count == 1)
            snprintf(buf, size, "record of %s", u->page);
        else
            snprintf(buf, size, "%u records of %s", u->count, u->page);
        break;
    case BENCH_UNTIL_METRIC:
        if (u->startup)
            snprintf(buf, size, "start-up record with %s", field);
        else
            snprintf(buf, size, "record of %s with %s", u->page, field);
        break;
    }
    return buf;
}

/* ---- what one run has seen ---- */

typedef struct run_state {
    const bench_runner *r;
    pid_t pid;
    bench_collect *collect;
    unsigned *seen;  /* per condition: records that counted */
    bool *met;       /* per condition */
    size_t bad;      /* lines of the program's pid that did not parse */
    char first_bad[256];
    int fd;          /* the records file, once it exists */
    char *line;      /* a partial line */
    size_t line_len, line_cap;
    bool line_dropped; /* the current line outgrew MAX_LINE: skipped to its end */
    int error;       /* -ENOMEM */
    size_t records;  /* of the program's pid */
} run_state;

static bool all_met(const run_state *s)
{
    size_t n = s->r->n_until ? s->r->n_until : 1;
    for (size_t i = 0; i < n; i++)
        if (!s->met[i])
            return false;
    return true;
}

static const bench_until *cond(const run_state *s, size_t i)
{
    static const bench_until main_page = {.kind = BENCH_UNTIL_MAIN};
    return s->r->n_until ? &s->r->until[i] : &main_page;
}

static void take_record(run_state *s, const pacer_record *rec)
{
    const pacer_record_type *t = pacer_record_type_of(rec);
    size_t n = s->r->n_until ? s->r->n_until : 1;
    for (size_t i = 0; t && i < n; i++) {
        const bench_until *u = cond(s, i);
        bool counts = false;
        switch (u->kind) {
        case BENCH_UNTIL_MAIN:
            counts = t->id == PACER_RECORD_PAGE && pacer_record_int(rec, PACER_PAGE_MAIN);
            break;
        case BENCH_UNTIL_EXIT:
            break;
        case BENCH_UNTIL_PAGE:
            counts = t->id == PACER_RECORD_PAGE && strcmp(pacer_record_str(rec, PACER_PAGE_CLASS), u->page) == 0;
            break;
        case BENCH_UNTIL_METRIC:
            if (u->startup)
                counts = t->id == PACER_RECORD_STARTUP && pacer_record_has(rec, u->field);
            else
                counts = t->id == PACER_RECORD_PAGE &&
                         strcmp(pacer_record_str(rec, PACER_PAGE_CLASS), u->page) == 0 &&
                         pacer_record_has(rec, u->field);
            break;
        }
        if (counts && ++s->seen[i] >= (u->kind == BENCH_UNTIL_PAGE ? u->count : 1))
            s->met[i] = true;
    }
    if (bench_collect_record(s->collect, rec) < 0)
        s->error = -ENOMEM;
}

static void take_line(run_state *s, const char *line, size_t len)
{
    if (len == 0)
        return;
    pacer_record *rec;
    char reason[256];
    int r = pacer_record_parse(line, len, &rec, reason, sizeof(reason));
    if (r == -ENOMEM) {
        s->error = -ENOMEM;
        return;
    }
    if (r < 0) {
        if (s->bad++ == 0)
            snprintf(s->first_bad, sizeof(s->first_bad), "%s", reason);
        return;
    }
    if (pacer_record_pid(rec) == s->pid) {
        s->records++;
        take_record(s, rec);
    }
    pacer_record_free(rec);
}

/* Reads what the agent appended since the last call. */
static void read_records(run_state *s, const char *path)
{
    if (s->fd < 0 && (s->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return; /* not written yet */
    char buf[65536];
    ssize_t got;
    while ((got = read(s->fd, buf, sizeof(buf))) > 0) {
        size_t start = 0;
        for (size_t i = 0; i < (size_t)got; i++) {
            if (buf[i] != '\n')
                continue;
            size_t piece = i - start;
            if (s->line_dropped) {
                s->line_dropped = false;
            } else if (s->line_len == 0) {
                take_line(s, buf + start, piece);
            } else if (s->line_len + piece <= MAX_LINE) {
                memcpy(s->line + s->line_len, buf + start, piece);
                take_line(s, s->line, s->line_len + piece);
            }
            s->line_len = 0;
            start = i + 1;
        }
        size_t rest = (size_t)got - start;
        if (rest == 0 || s->line_dropped)
            continue;
        if (s->line_len + rest > MAX_LINE) {
            s->line_dropped = true;
            s->line_len = 0;
            continue;
        }
        if (s->line_len + rest > s->line_cap) {
            size_t cap = s->line_cap ? s->line_cap : 65536;
            while (cap < s->line_len + rest)
                cap *= 2;
            char *l = realloc(s->line, cap);
            if (!l) {
                s->error = -ENOMEM;
                return;
            }
            s->line = l;
            s->line_cap = cap;
        }
        memcpy(s->line + s->line_len, buf + start, rest);
        s->line_len += rest;
    }
}

/* ---- the child ---- */

static void child(const bench_runner *r, char **prog, const char *records, const char *log)
{
    int own = bench_own_session(r->nice_set, r->nice);
    int null = open("/dev/null", O_RDONLY);
    int out = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (null >= 0)
        dup2(null, 0);
    if (out >= 0) {
        dup2(out, 1);
        dup2(out, 2);
    }
    if (r->display) {
        setenv("DISPLAY", r->display, 1);
        unsetenv("WAYLAND_DISPLAY");
    }
    if (r->headless) {
        /* A private display has no session bus: looking one up for the
         * system's proxy settings or the accessibility bus costs up to
         * seconds, at random, in the first request and window. */
        setenv("GIO_USE_PROXY_RESOLVER", "dummy", 0);
        setenv("GTK_A11Y", "none", 0);
        setenv("NO_AT_BRIDGE", "1", 0);
    }
    if (own < 0) {
        fprintf(stderr, "pacer bench: --nice %d: %s\n", r->nice, strerror(-own));
        _exit(126);
    }
    launch_options lo = r->launch;
    lo.out = records;
    if (launch_set_env("pacer bench", &lo, r->agent) < 0)
        _exit(126);
    _exit(launch_exec("pacer bench", prog));
}

/* ---- the run ---- */

static void print_log_tail(const char *log)
{
    FILE *f = fopen(log, "r");
    if (!f)
        return;
    /* the last 20 lines, from at most the last 8 KiB */
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    long from = size > 8192 ? size - 8192 : 0;
    fseek(f, from, SEEK_SET);
    char buf[8193];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    if (n == 0)
        return;
    int lines = 0;
    size_t start = n;
    while (start > 0 && lines <= 20)
        if (buf[--start] == '\n' && start != n - 1)
            lines++;
    const char *text = buf + start + (buf[start] == '\n');
    fprintf(stderr, "  the program's output (%s) ends:\n", log);
    for (const char *p = text; *p;) {
        size_t l = strcspn(p, "\n");
        fprintf(stderr, "    %.*s\n", (int)l, p);
        p += l + (p[l] == '\n');
    }
}

static void run_paths(const bench_runner *r, const char *label, char *records, char *log, size_t size)
{
    snprintf(records, size, "%s/%s.jsonl", r->workdir, label);
    snprintf(log, size, "%s/%s.log", r->workdir, label);
}

void bench_runner_clean(const bench_runner *r, const char *label)
{
    char records[PATH_MAX], log[PATH_MAX];
    run_paths(r, label, records, log, sizeof(records));
    unlink(records);
    unlink(log);
}

/* Ends the process group: SIGTERM, a grace period, SIGKILL. Returns the
 * pid's wait status and rusage. */
/* Signals the program's process group, or the program alone when its
 * group is not there yet (the child signalled before its setsid). */
static void signal_group(pid_t pid, int sig)
{
    if (kill(-pid, sig) < 0)
        kill(pid, sig);
}

static int stop_group(pid_t pid, int *status, struct rusage *ru)
{
    signal_group(pid, SIGTERM);
    for (int waited = 0; waited < TERM_GRACE_MS; waited += POLL_MS) {
        pid_t w = wait4(pid, status, WNOHANG, ru);
        if (w == pid)
            return 0;
        sleep_ms(POLL_MS);
    }
    signal_group(pid, SIGKILL);
    return wait4(pid, status, 0, ru) == pid ? 1 : -1;
}

static void describe_status(int status, char *buf, size_t size)
{
    if (WIFEXITED(status))
        snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, size, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(buf, size, "ended (wait status %d)", status);
}

int bench_runner_run(bench_runner *r, char **prog, const char *label, bench_set *set)
{
    char records[PATH_MAX], log[PATH_MAX];
    run_paths(r, label, records, log, sizeof(records));
    unlink(records); /* the agent appends: a file left by an earlier bench must not count */
    size_t n_cond = r->n_until ? r->n_until : 1;
    run_state s = {.r = r, .fd = -1};
    s.collect = bench_collect_new();
    s.seen = calloc(n_cond, sizeof(*s.seen));
    s.met = calloc(n_cond, sizeof(*s.met));
    int rc = -1;
    if (!s.collect || !s.seen || !s.met) {
        fprintf(stderr, "pacer bench: out of memory\n");
        goto out;
    }
    bool wants_exit = false;
    for (size_t i = 0; i < n_cond; i++)
        wants_exit |= cond(&s, i)->kind == BENCH_UNTIL_EXIT;

    bench_run notes = {.start_ns = wall_ns(), .load1 = bench_load1(), .cpu_mhz = bench_cpu_mhz()};
    bench_cpu_times t0 = bench_cpu_times_now();
    double self0 = bench_proc_cpu_ms(0), x0 = r->xvfb ? bench_proc_cpu_ms(r->xvfb) : 0;
    int64_t start = mono_ns();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "pacer bench: run %s: cannot fork: %s\n", label, strerror(errno));
        goto out;
    }
    if (pid == 0)
        child(r, prog, records, log);
    s.pid = pid;

    int status = 0;
    struct rusage ru = {0};
    bool exited = false, stopped = false, timed_out = false;
    int64_t deadline = start + (int64_t)r->timeout_ms * 1000000;
    size_t gtk_tried = 0;
    for (;;) {
        read_records(&s, records);
        if (!set->env.gtk && s.records > gtk_tried) {
            /* once it wrote a record, whatever GTK it uses is loaded */
            gtk_tried = s.records;
            set->env.gtk = bench_gtk_version(pid);
        }
        if (s.error)
            break;
        if (all_met(&s) && !wants_exit) {
            stop_group(pid, &status, &ru);
            stopped = true;
            break;
        }
        pid_t w = wait4(pid, &status, WNOHANG, &ru);
        if (w == pid) {
            exited = true;
            kill(-pid, SIGTERM); /* what it left running in its group */
            break;
        }
        if (bench_interrupted || mono_ns() >= deadline) {
            timed_out = !bench_interrupted;
            stop_group(pid, &status, &ru);
            break;
        }
        sleep_ms(POLL_MS);
    }
    int64_t end = mono_ns();
    bench_cpu_times t1 = bench_cpu_times_now();
    double self1 = bench_proc_cpu_ms(0), x1 = r->xvfb ? bench_proc_cpu_ms(r->xvfb) : 0;
    read_records(&s, records); /* what the agent wrote on its way out */
    if (exited && wants_exit)
        for (size_t i = 0; i < n_cond; i++)
            if (cond(&s, i)->kind == BENCH_UNTIL_EXIT)
                s.met[i] = true;

    char what[160], st[96];
    if (s.error) {
        fprintf(stderr, "pacer bench: run %s: out of memory\n", label);
        goto out;
    }
    if (bench_interrupted) {
        fprintf(stderr, "pacer bench: run %s: interrupted\n", label);
        goto out;
    }
    if (!all_met(&s)) {
        size_t i = 0;
        while (s.met[i])
            i++;
        bench_until_text(cond(&s, i), what, sizeof(what));
        if (timed_out && cond(&s, i)->kind == BENCH_UNTIL_EXIT) {
            fprintf(stderr, "pacer bench: run %s: the program did not exit within %d s (--timeout)\n", label,
                    r->timeout_ms / 1000);
        } else if (timed_out) {
            fprintf(stderr, "pacer bench: run %s: the program gave no %s within %d s (--timeout)\n", label, what,
                    r->timeout_ms / 1000);
        } else {
            describe_status(status, st, sizeof(st));
            fprintf(stderr, "pacer bench: run %s: the program %s before its %s\n", label, st, what);
        }
        if (s.bad)
            fprintf(stderr, "  %zu record line%s did not parse; the first: %s\n", s.bad, s.bad == 1 ? "" : "s",
                    s.first_bad);
        print_log_tail(log);
        goto out;
    }
    if (wants_exit && !stopped && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        describe_status(status, st, sizeof(st));
        fprintf(stderr, "pacer bench: run %s: the program %s\n", label, st);
        print_log_tail(log);
        goto out;
    }
    notes.wall_ms = (double)(end - start) / 1e6;
    notes.cpu_ms = (double)ru.ru_utime.tv_sec * 1e3 + (double)ru.ru_utime.tv_usec / 1e3 +
                   (double)ru.ru_stime.tv_sec * 1e3 + (double)ru.ru_stime.tv_usec / 1e3;
    notes.background = bench_background(t0, t1, r->cpus, notes.cpu_ms + (self1 - self0) + (x1 - x0), notes.wall_ms);
    long k = bench_set_add_run(set, &notes);
    long put = k >= 0 ? bench_collect_finish(s.collect, set, (size_t)k) : k;
    if (put < 0) {
        fprintf(stderr, "pacer bench: run %s: %s\n", label,
                put == -E2BIG ? "more runs or metrics than a set holds" : "out of memory");
        goto out;
    }
    if (put == 0) {
        fprintf(stderr, "pacer bench: run %s: the program wrote no start-up or page record (%s)\n", label,
                s.bad ? s.first_bad : "is it a GTK 4 program?");
        print_log_tail(log);
        goto out;
    }
    rc = 0;
out:
    if (s.fd >= 0)
        close(s.fd);
    free(s.line);
    free(s.seen);
    free(s.met);
    bench_collect_free(s.collect);
    return rc;
}
