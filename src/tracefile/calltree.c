/* Events -> calls. One shadow stack per thread.
 *
 *   ENTER    push a frame.
 *   EXIT     with an address (version 1 files): pop the frame of that
 *            function. Frames above it never got their exit (a dropped
 *            event, or a longjmp the runtime could not see): they end here
 *            too, marked unwound. An exit with no frame of its function on
 *            the stack (its enter was dropped, or came before tracing
 *            started) is ignored. Without (version 2): pop the innermost
 *            frame; with none open, it is ignored.
 *   LOST     a gap (events dropped mid-call): every open frame ends here,
 *            unwound; the calls after it start a new stack.
 *   LONGJMP  every frame whose sp is below the jump's target ends here
 *            (sp compared modulo 2^sp_bits, as a signed difference).
 *   end      frames still open end at the thread's last timestamp, unwound.
 *
 * Timestamps are made monotonic per thread (version 1: a signal that
 * interrupts a hook between its reservation and its clock read can be a
 * few ns out of order).
 *
 * Filters decide which frames are *shown* (reported via on_begin/on_end):
 *   filter     a frame is in scope when its function matches or an
 *              ancestor's did (uftrace's -F);
 *   max_depth  at most that many in-scope frames deep;
 *   min_ns     a candidate is shown once it has lasted min_ns. It is then
 *              older than every candidate above it, so parents are always
 *              shown before their children and on_begin keeps time order:
 *              a streaming exporter can write it straight out.
 * A hidden callee's time stays in its shown caller's self time.
 */
#include <pacer/trace.h>

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node {
    pt_frame f;
    bool cand;
};

struct tstate {
    pt_thread_info info;
    char *name;
    struct node **raw;   /* frames, stable addresses, reused */
    size_t n, cap;
    pt_frame **shown;
    size_t nshown, shown_cap;
    size_t first_pending; /* lowest candidate not shown yet, or n */
    uint64_t last_ns;
};

struct tree {
    const pt_tree_options *opt;
    const pt_tree_ops *ops;
    void *ud;
    pt_symbols *syms;
    uint32_t pid;
    uint32_t sp_bits;
    struct tstate **threads;
    size_t nthreads;
    size_t last;
    int err;
};

static struct tstate *thread_of(struct tree *t, uint32_t tid)
{
    if (t->last < t->nthreads && t->threads[t->last]->info.tid == tid)
        return t->threads[t->last];
    for (size_t i = 0; i < t->nthreads; i++) {
        if (t->threads[i]->info.tid == tid) {
            t->last = i;
            return t->threads[i];
        }
    }
    struct tstate **n = realloc(t->threads, (t->nthreads + 1) * sizeof *n);
    struct tstate *s = calloc(1, sizeof *s);
    if (!n || !s) {
        free(s);
        if (n)
            t->threads = n;
        t->err = -ENOMEM;
        return NULL;
    }
    t->threads = n;
    s->info.pid = t->pid;
    s->info.tid = tid;
    s->info.name = "";
    t->threads[t->nthreads] = s;
    t->last = t->nthreads++;
    return s;
}

static void show(struct tree *t, struct tstate *s, struct node *nd)
{
    if (s->nshown == s->shown_cap) {
        size_t cap = s->shown_cap ? s->shown_cap * 2 : 64;
        pt_frame **n = realloc(s->shown, cap * sizeof *n);
        if (!n) {
            t->err = -ENOMEM;
            return;
        }
        s->shown = n;
        s->shown_cap = cap;
    }
    nd->f.shown = true;
    nd->f.depth = (uint32_t)s->nshown;
    s->shown[s->nshown++] = &nd->f;
    if (t->ops->on_begin)
        t->ops->on_begin(t->ud, &s->info, s->shown, s->nshown);
}

static void promote(struct tree *t, struct tstate *s, uint64_t ns)
{
    while (s->first_pending < s->n) {
        struct node *nd = s->raw[s->first_pending];
        if (nd->cand && !nd->f.shown) {
            if (ns - nd->f.begin_ns < t->opt->min_ns)
                return;
            show(t, s, nd);
        }
        s->first_pending++;
    }
}

static void pop(struct tree *t, struct tstate *s, uint64_t ns, bool unwound)
{
    struct node *nd = s->raw[s->n - 1];
    nd->f.end_ns = ns;
    nd->f.unwound = unwound;
    if (nd->f.shown) {
        if (t->ops->on_end)
            t->ops->on_end(t->ud, &s->info, s->shown, s->nshown);
        s->nshown--;
        if (s->nshown > 0)
            s->shown[s->nshown - 1]->child_ns += ns - nd->f.begin_ns;
    }
    s->n--;
    if (s->first_pending > s->n)
        s->first_pending = s->n;
}

static void push(struct tree *t, struct tstate *s, uint64_t ns, uint64_t addr, uint64_t sp)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct node **n = realloc(s->raw, cap * sizeof *n);
        if (!n) {
            t->err = -ENOMEM;
            return;
        }
        memset(n + s->cap, 0, (cap - s->cap) * sizeof *n);
        s->raw = n;
        s->cap = cap;
    }
    if (!s->raw[s->n] && !(s->raw[s->n] = malloc(sizeof(struct node)))) {
        t->err = -ENOMEM;
        return;
    }
    struct node *parent = s->n ? s->raw[s->n - 1] : NULL;
    struct node *nd = s->raw[s->n];
    memset(nd, 0, sizeof *nd);
    nd->f.addr = addr;
    nd->f.begin_ns = ns;
    nd->f.sp = sp;
    nd->f.sym = t->syms ? pt_symbols_lookup(t->syms, addr) : NULL;

    const pt_tree_options *o = t->opt;
    nd->f.in_scope = !o->filter || (parent && parent->f.in_scope) ||
                     (nd->f.sym && fnmatch(o->filter, nd->f.sym->name, 0) == 0);
    /* in_scope is inherited, so the parent alone knows the depth. */
    uint32_t depth = parent && parent->f.in_scope ? parent->f.depth + 1 : 0;
    nd->f.depth = depth;
    nd->cand = nd->f.in_scope && (o->max_depth == 0 || depth < o->max_depth);
    s->n++;
    if (nd->cand) {
        if (o->min_ns == 0)
            show(t, s, nd);
        else if (s->first_pending >= s->n - 1)
            s->first_pending = s->n - 1;
    }
    if (s->first_pending > s->n)
        s->first_pending = s->n;
}

/* Signed difference a - b of two sp fields of `bits` bits. */
static int64_t sp_diff(uint64_t a, uint64_t b, uint32_t bits)
{
    uint64_t d = (a - b) << (64 - bits);
    return (int64_t)d >> (64 - bits);
}

static void on_event(struct tree *t, const pt_event *ev)
{
    struct tstate *s = thread_of(t, ev->tid);
    if (!s)
        return;
    if (ev->kind == PT_EV_THREAD) {
        char *n = strndup(ev->name, ev->name_len);
        if (n) {
            free(s->name);
            s->name = n;
            s->info.name = n;
        }
        return;
    }
    if (ev->kind == PT_EV_LOST) {
        if (ev->gap) {
            promote(t, s, s->last_ns);
            while (s->n > 0)
                pop(t, s, s->last_ns, true);
        }
        if (t->ops->on_lost)
            t->ops->on_lost(t->ud, &s->info, ev->count);
        return;
    }
    uint64_t ns = ev->ns < s->last_ns ? s->last_ns : ev->ns;
    s->last_ns = ns;
    promote(t, s, ns);
    switch (ev->kind) {
    case PT_EV_ENTER:
        push(t, s, ns, ev->addr, ev->sp);
        break;
    case PT_EV_EXIT: {
        size_t i = s->n;
        while (ev->addr && i > 0 && s->raw[i - 1]->f.addr != ev->addr)
            i--;
        if (i == 0)
            break; /* no frame of this function: its enter was not recorded */
        while (s->n > i)
            pop(t, s, ns, true);
        pop(t, s, ns, false);
        break;
    }
    case PT_EV_LONGJMP:
        while (s->n > 0 && sp_diff(s->raw[s->n - 1]->f.sp, ev->sp, t->sp_bits) < 0)
            pop(t, s, ns, true);
        break;
    default:
        break;
    }
}

int pt_tree_run(pt_reader *r, pt_symbols *syms, const pt_tree_options *opt, const pt_tree_ops *ops, void *ud)
{
    static const pt_tree_options none = {NULL, 0, 0};
    struct tree t = {0};
    t.opt = opt ? opt : &none;
    t.ops = ops;
    t.ud = ud;
    t.syms = syms;
    t.pid = pt_reader_header(r)->pid;
    t.sp_bits = pt_reader_header(r)->sp_bits;
    pt_event ev;
    int rc;
    while ((rc = pt_reader_next(r, &ev)) > 0 && t.err == 0)
        on_event(&t, &ev);
    for (size_t i = 0; i < t.nthreads; i++) {
        struct tstate *s = t.threads[i];
        promote(&t, s, s->last_ns);
        while (s->n > 0)
            pop(&t, s, s->last_ns, true);
        for (size_t k = 0; k < s->cap; k++)
            free(s->raw[k]);
        free(s->raw);
        free(s->shown);
        free(s->name);
        free(s);
    }
    free(t.threads);
    if (rc < 0)
        return rc;
    return t.err;
}
