/* pacer trace report: where the time went.
 *
 * Per function: calls, total time (inclusive; a recursive function counts
 * only its outermost activation, so total never exceeds wall time) and self
 * time (total minus shown callees). Tables: all threads of a process
 * together, then each thread. Memory grows with distinct (thread, function)
 * pairs, not with the trace.
 */
#include <pacer/trace.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct fstat {
    uint32_t pid, tid; /* tid 0: all threads of pid */
    uint64_t addr;
    const pt_sym *sym; /* valid while the process is walked; copied below */
    char *label;
    uint64_t calls, total_ns, self_ns;
    uint32_t active;
    bool used;
};

struct tinfo {
    uint32_t pid, tid;
    char *name;
    uint64_t calls, first_ns, last_ns, lost;
};

struct report {
    struct fstat *tab;
    size_t cap, n;
    struct tinfo *threads;
    size_t nthreads;
    uint64_t calls, lost, unwound;
    int err;
};

static size_t fslot(struct report *r, uint32_t pid, uint32_t tid, uint64_t addr)
{
    uint64_t h = (addr ^ ((uint64_t)pid << 32 | tid)) * UINT64_C(0x9E3779B97F4A7C15);
    size_t i = (size_t)(h >> 17) & (r->cap - 1);
    while (r->tab[i].used && !(r->tab[i].addr == addr && r->tab[i].pid == pid && r->tab[i].tid == tid))
        i = (i + 1) & (r->cap - 1);
    return i;
}

/* Finds or adds the row; adding may move every row (pointers from earlier
 * calls are then stale). */
static struct fstat *fget(struct report *r, uint32_t pid, uint32_t tid, uint64_t addr)
{
    if (r->cap) {
        size_t i = fslot(r, pid, tid, addr);
        if (r->tab[i].used)
            return &r->tab[i];
    }
    if (r->n * 2 >= r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 1024;
        struct fstat *old = r->tab;
        size_t oldcap = r->cap;
        struct fstat *tab = calloc(cap, sizeof *tab);
        if (!tab) {
            r->err = -ENOMEM;
            return NULL;
        }
        r->tab = tab;
        r->cap = cap;
        for (size_t i = 0; i < oldcap; i++)
            if (old[i].used)
                r->tab[fslot(r, old[i].pid, old[i].tid, old[i].addr)] = old[i];
        free(old);
    }
    size_t i = fslot(r, pid, tid, addr);
    r->tab[i].used = true;
    r->tab[i].pid = pid;
    r->tab[i].tid = tid;
    r->tab[i].addr = addr;
    r->n++;
    return &r->tab[i];
}

static struct tinfo *tget(struct report *r, const pt_thread_info *t)
{
    for (size_t i = 0; i < r->nthreads; i++)
        if (r->threads[i].pid == t->pid && r->threads[i].tid == t->tid)
            return &r->threads[i];
    struct tinfo *n = realloc(r->threads, (r->nthreads + 1) * sizeof *n);
    if (!n) {
        r->err = -ENOMEM;
        return NULL;
    }
    r->threads = n;
    struct tinfo *ti = &n[r->nthreads++];
    memset(ti, 0, sizeof *ti);
    ti->pid = t->pid;
    ti->tid = t->tid;
    return ti;
}

static char *label_of(const pt_frame *f)
{
    char buf[1024];
    if (!f->sym)
        snprintf(buf, sizeof buf, "0x%" PRIx64, f->addr);
    else if (f->sym->file)
        snprintf(buf, sizeof buf, "%s (%s:%d)", f->sym->name, f->sym->file, f->sym->line);
    else if (f->sym->module)
        snprintf(buf, sizeof buf, "%s (%s)", f->sym->name, f->sym->module);
    else
        snprintf(buf, sizeof buf, "%s", f->sym->name);
    return strdup(buf);
}

static void on_begin(void *ud, const pt_thread_info *t, pt_frame *const *stack, size_t n)
{
    struct report *r = ud;
    const pt_frame *f = stack[n - 1];
    struct fstat *s = fget(r, t->pid, t->tid, f->addr);
    if (s)
        s->active++;
}

static void on_end(void *ud, const pt_thread_info *t, pt_frame *const *stack, size_t n)
{
    struct report *r = ud;
    const pt_frame *f = stack[n - 1];
    uint64_t dur = f->end_ns - f->begin_ns;
    uint64_t self = dur >= f->child_ns ? dur - f->child_ns : 0;
    struct fstat *s = fget(r, t->pid, t->tid, f->addr);
    struct fstat *all = fget(r, t->pid, 0, f->addr);
    struct tinfo *ti = tget(r, t);
    if (!s || !all || !ti)
        return;
    s = fget(r, t->pid, t->tid, f->addr); /* adding `all` may have moved it */
    bool outermost = s->active <= 1;
    if (s->active)
        s->active--;
    for (int k = 0; k < 2; k++) {
        struct fstat *x = k ? all : s;
        x->calls++;
        x->self_ns += self;
        if (outermost)
            x->total_ns += dur;
        if (!x->label)
            x->label = label_of(f);
    }
    r->calls++;
    if (f->unwound)
        r->unwound++;
    ti->calls++;
    if (!ti->first_ns || f->begin_ns < ti->first_ns)
        ti->first_ns = f->begin_ns;
    if (f->end_ns > ti->last_ns)
        ti->last_ns = f->end_ns;
    if (!ti->name || strcmp(ti->name, t->name) != 0) {
        free(ti->name);
        ti->name = strdup(t->name);
    }
}

static void on_lost(void *ud, const pt_thread_info *t, uint64_t count)
{
    struct report *r = ud;
    struct tinfo *ti = tget(r, t);
    if (ti)
        ti->lost += count;
    r->lost += count;
}

static int by_total(const void *a, const void *b)
{
    const struct fstat *x = *(const struct fstat *const *)a, *y = *(const struct fstat *const *)b;
    return x->total_ns < y->total_ns ? 1 : x->total_ns > y->total_ns ? -1 : (x->addr > y->addr) - (x->addr < y->addr);
}

static int by_self(const void *a, const void *b)
{
    const struct fstat *x = *(const struct fstat *const *)a, *y = *(const struct fstat *const *)b;
    return x->self_ns < y->self_ns ? 1 : x->self_ns > y->self_ns ? -1 : (x->addr > y->addr) - (x->addr < y->addr);
}

static void table(FILE *out, struct fstat **rows, size_t n, unsigned top, int (*cmp)(const void *, const void *))
{
    qsort(rows, n, sizeof *rows, cmp);
    fprintf(out, "  %12s %12s %10s  %s\n", "total ms", "self ms", "calls", "function");
    for (size_t i = 0; i < n && i < top; i++)
        fprintf(out, "  %12.3f %12.3f %10" PRIu64 "  %s\n", rows[i]->total_ns / 1e6, rows[i]->self_ns / 1e6,
                rows[i]->calls, rows[i]->label ? rows[i]->label : "?");
}

/* Rows of (pid, tid); tid 0 = all threads of pid. */
static size_t select_rows(struct report *r, struct fstat **rows, uint32_t pid, uint32_t tid)
{
    size_t n = 0;
    for (size_t i = 0; i < r->cap; i++)
        if (r->tab[i].used && r->tab[i].pid == pid && r->tab[i].tid == tid && r->tab[i].calls)
            rows[n++] = &r->tab[i];
    return n;
}

int pt_report(const char *dir, const pt_output_options *opt, FILE *out, char *err, size_t errlen)
{
    struct report r = {0};
    pt_tree_ops ops = {on_begin, on_end, on_lost};
    pt_walk_stats st;
    int rc = pt_recording_walk(dir, &opt->tree, &ops, NULL, &r, &st, err, errlen);
    if (rc == 0 && r.err)
        snprintf(err, errlen, "out of memory"), rc = r.err;
    if (rc < 0)
        goto done;
    unsigned top = opt->top ? opt->top : 20;

    fprintf(out, "pacer trace report: %s\n", dir);
    fprintf(out, "  %u process%s, %zu thread%s, %" PRIu64 " calls shown, %" PRIu64 " events, %.2f bytes/event on disk\n",
            st.processes, st.processes == 1 ? "" : "es", r.nthreads, r.nthreads == 1 ? "" : "s", r.calls, st.events,
            st.events ? (double)st.bytes / (double)st.events : 0.0);
    if (opt->tree.filter || opt->tree.max_depth || opt->tree.min_ns)
        fprintf(out, "  filters: pattern %s, max depth %u, min %" PRIu64 " ns\n",
                opt->tree.filter ? opt->tree.filter : "(all)", opt->tree.max_depth, opt->tree.min_ns);
    if (st.incomplete)
        fprintf(out, "  warning: %u trace file%s did not end cleanly (process killed?): calls after the last flush are missing\n",
                st.incomplete, st.incomplete == 1 ? "" : "s");
    if (r.lost)
        fprintf(out, "  warning: %" PRIu64 " events were dropped while recording (buffers full, or a signal handler that ran while its thread switched buffers or, without rseq, inside a hook)\n",
                r.lost);
    if (r.unwound)
        fprintf(out, "  %" PRIu64 " calls ended without returning (longjmp, exit, or still running at the end)\n", r.unwound);
    if (st.events == 0)
        fprintf(out, "  no function events: was the program built with -finstrument-functions?\n");

    struct fstat **rows = malloc((r.n + 1) * sizeof *rows);
    if (!rows) {
        rc = -ENOMEM;
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    uint32_t last_pid = 0;
    for (size_t t = 0; t < r.nthreads; t++) {
        struct tinfo *ti = &r.threads[t];
        if (ti->pid != last_pid) {
            last_pid = ti->pid;
            size_t n = select_rows(&r, rows, ti->pid, 0);
            fprintf(out, "\nProcess %u: top functions by total time (all threads)\n", ti->pid);
            table(out, rows, n, top, by_total);
            fprintf(out, "\nProcess %u: top functions by self time (all threads)\n", ti->pid);
            table(out, rows, n, top, by_self);
        }
    }
    for (size_t t = 0; t < r.nthreads; t++) {
        struct tinfo *ti = &r.threads[t];
        size_t n = select_rows(&r, rows, ti->pid, ti->tid);
        fprintf(out, "\nThread %u (%s) of process %u: %" PRIu64 " calls over %.3f ms", ti->tid,
                ti->name ? ti->name : "?", ti->pid, ti->calls, (ti->last_ns - ti->first_ns) / 1e6);
        if (ti->lost)
            fprintf(out, ", %" PRIu64 " events lost", ti->lost);
        fprintf(out, "\n");
        table(out, rows, n, top, by_total);
    }
    free(rows);
done:
    for (size_t i = 0; i < r.cap; i++)
        free(r.tab[i].label);
    free(r.tab);
    for (size_t t = 0; t < r.nthreads; t++)
        free(r.threads[t].name);
    free(r.threads);
    return rc;
}
