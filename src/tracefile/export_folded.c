/* Folded stacks ("thread;caller;callee self_ns" per line), the input of
 * flamegraph.pl and speedscope. Each distinct stack is a node of a trie
 * (parent, function) kept in a hash table; a call adds its self time to its
 * node. Memory grows with distinct stacks, not with the trace. The values
 * are nanoseconds; they sum to the total time of the outermost calls. The
 * first element of every stack is the thread, "name-tid". */
#include <pacer/trace.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct snode {
    uint32_t parent; /* index + 1; 0 = none */
    uint32_t pid, tid;
    uint64_t addr;   /* 0 for a thread root */
    char *label;
    uint64_t self_ns;
};

struct folded {
    struct snode *nodes;
    size_t n, cap;
    uint32_t *tab; /* hash: node index + 1 */
    size_t tcap;
    int err;
};

static uint64_t hkey(uint32_t parent, uint32_t pid, uint32_t tid, uint64_t addr)
{
    uint64_t h = addr * UINT64_C(0x9E3779B97F4A7C15);
    h ^= ((uint64_t)parent << 32 | tid) * UINT64_C(0xC2B2AE3D27D4EB4F);
    h ^= pid;
    return h ^ (h >> 29);
}

static int rehash(struct folded *f, size_t tcap)
{
    uint32_t *tab = calloc(tcap, sizeof *tab);
    if (!tab)
        return -ENOMEM;
    for (size_t i = 0; i < f->n; i++) {
        struct snode *s = &f->nodes[i];
        size_t j = hkey(s->parent, s->pid, s->tid, s->addr) & (tcap - 1);
        while (tab[j])
            j = (j + 1) & (tcap - 1);
        tab[j] = (uint32_t)i + 1;
    }
    free(f->tab);
    f->tab = tab;
    f->tcap = tcap;
    return 0;
}

/* Finds or adds the node (parent, addr); returns index + 1, 0 on OOM. */
static uint32_t node(struct folded *f, uint32_t parent, uint32_t pid, uint32_t tid, uint64_t addr, const char *label)
{
    if ((f->n + 1) * 2 >= f->tcap && rehash(f, f->tcap ? f->tcap * 2 : 4096) < 0)
        return 0;
    size_t j = hkey(parent, pid, tid, addr) & (f->tcap - 1);
    while (f->tab[j]) {
        struct snode *s = &f->nodes[f->tab[j] - 1];
        if (s->parent == parent && s->addr == addr && s->tid == tid && s->pid == pid)
            return f->tab[j];
        j = (j + 1) & (f->tcap - 1);
    }
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 4096;
        struct snode *n = realloc(f->nodes, cap * sizeof *n);
        if (!n)
            return 0;
        f->nodes = n;
        f->cap = cap;
    }
    struct snode *s = &f->nodes[f->n];
    s->parent = parent;
    s->pid = pid;
    s->tid = tid;
    s->addr = addr;
    s->self_ns = 0;
    s->label = strdup(label);
    if (!s->label)
        return 0;
    f->tab[j] = (uint32_t)++f->n;
    return f->tab[j];
}

static void on_begin(void *ud, const pt_thread_info *t, pt_frame *const *stack, size_t n)
{
    struct folded *f = ud;
    pt_frame *fr = stack[n - 1];
    uint32_t parent;
    if (n > 1) {
        parent = stack[n - 2]->user;
    } else {
        char root[96];
        snprintf(root, sizeof root, "%s-%u", t->name[0] ? t->name : "thread", t->tid);
        parent = node(f, 0, t->pid, t->tid, 0, root);
    }
    char buf[32];
    const char *label = fr->sym ? fr->sym->name : buf;
    if (!fr->sym)
        snprintf(buf, sizeof buf, "0x%" PRIx64, fr->addr);
    fr->user = parent ? node(f, parent, t->pid, t->tid, fr->addr, label) : 0;
    if (!fr->user)
        f->err = -ENOMEM;
}

static void on_end(void *ud, const pt_thread_info *t, pt_frame *const *stack, size_t n)
{
    struct folded *f = ud;
    const pt_frame *fr = stack[n - 1];
    uint64_t dur = fr->end_ns - fr->begin_ns;
    if (fr->user)
        f->nodes[fr->user - 1].self_ns += dur >= fr->child_ns ? dur - fr->child_ns : 0;
}

/* Writes the path of node i (1-based), root first, without recursion (a
 * deep recursion in the trace must not become one here). Labels: ';' -> ':'
 * (the separator); spaces are kept (flamegraph.pl splits on the last). */
static int path(FILE *out, const struct folded *f, uint32_t i, uint32_t **buf, size_t *cap)
{
    size_t n = 0;
    for (uint32_t k = i; k; k = f->nodes[k - 1].parent) {
        if (n == *cap) {
            size_t c = *cap ? *cap * 2 : 256;
            uint32_t *b = realloc(*buf, c * sizeof *b);
            if (!b)
                return -ENOMEM;
            *buf = b;
            *cap = c;
        }
        (*buf)[n++] = k;
    }
    while (n-- > 0) {
        for (const char *p = f->nodes[(*buf)[n] - 1].label; *p; p++)
            fputc(*p == ';' ? ':' : *p == '\n' ? ' ' : *p, out);
        if (n)
            fputc(';', out);
    }
    return 0;
}

int pt_export_folded(const char *dir, const pt_output_options *opt, FILE *out, char *err, size_t errlen)
{
    struct folded f = {0};
    pt_tree_ops ops = {on_begin, on_end, NULL};
    pt_walk_stats st;
    int rc = pt_recording_walk(dir, &opt->tree, &ops, NULL, &f, &st, err, errlen);
    if (rc == 0 && f.err) {
        rc = f.err;
        snprintf(err, errlen, "out of memory");
    }
    if (rc == 0) {
        uint32_t *buf = NULL;
        size_t cap = 0;
        for (size_t i = 0; i < f.n && rc == 0; i++) {
            if (f.nodes[i].self_ns == 0)
                continue;
            rc = path(out, &f, (uint32_t)i + 1, &buf, &cap);
            fprintf(out, " %" PRIu64 "\n", f.nodes[i].self_ns);
        }
        free(buf);
        if (rc < 0)
            snprintf(err, errlen, "out of memory");
        if (rc == 0 && ferror(out)) {
            snprintf(err, errlen, "writing the export failed");
            rc = -EIO;
        }
    }
    for (size_t i = 0; i < f.n; i++)
        free(f.nodes[i].label);
    free(f.nodes);
    free(f.tab);
    return rc;
}
