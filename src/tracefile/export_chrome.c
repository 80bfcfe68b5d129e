/* Chrome trace JSON (the "Trace Event Format"), read by chrome://tracing,
 * ui.perfetto.dev and speedscope. One complete event ("ph":"X") per shown
 * call, written when the call ends, so the export streams: memory does not
 * grow with the trace. Timestamps are microseconds with ns decimals. Thread
 * and process names come last, as metadata events.
 *
 * The parts of an event that depend only on its function (the name and the
 * file:line, escaped by base's JSON writer, jbuf) are built once per
 * function and kept in a table; per event only the numbers are formatted.
 * One event per line; the document around them (header, the separators
 * between events, the closing brackets) is written here. */
#include <pacer/base/json.h>
#include <pacer/trace.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct named {
    uint32_t pid, tid;
    char *name;
};

/* An event's text before its "ts" value and after its "tid" value. */
struct fn_text {
    uint64_t key; /* symbol pointer, or the address when there is none */
    char *head, *tail;
};

struct chrome {
    FILE *out;
    bool first;
    int err;
    struct named *names;
    size_t nnames, last_name;
    struct fn_text *fns; /* open addressing, cap a power of two; per process */
    size_t nfns, cap;
};

/* Writes one event (b, then freed) to the document. */
static void emit(struct chrome *c, jbuf *b)
{
    if (b->failed) {
        c->err = -ENOMEM;
    } else {
        fputs(c->first ? "\n" : ",\n", c->out);
        fwrite(b->data, 1, b->len, c->out);
        c->first = false;
    }
    jbuf_free(b);
}

static void note_thread(struct chrome *c, const pt_thread_info *t)
{
    for (size_t i = 0; i < c->nnames; i++) {
        if (c->names[i].pid == t->pid && c->names[i].tid == t->tid) {
            c->last_name = i;
            if (strcmp(c->names[i].name, t->name) != 0) {
                char *n = strdup(t->name);
                if (n) {
                    free(c->names[i].name);
                    c->names[i].name = n;
                }
            }
            return;
        }
    }
    struct named *n = realloc(c->names, (c->nnames + 1) * sizeof *n);
    if (!n)
        return;
    c->names = n;
    n[c->nnames].pid = t->pid;
    n[c->nnames].tid = t->tid;
    n[c->nnames].name = strdup(t->name);
    if (n[c->nnames].name)
        c->last_name = c->nnames++;
}

static void forget_fns(struct chrome *c)
{
    for (size_t i = 0; i < c->cap; i++) {
        free(c->fns[i].head);
        free(c->fns[i].tail);
    }
    free(c->fns);
    c->fns = NULL;
    c->nfns = c->cap = 0;
}

/* Symbols belong to one process: a new process starts a new table. */
static void on_process(void *ud, const struct pt_file_header *h)
{
    (void)h;
    forget_fns(ud);
}

static size_t fn_slot(const struct chrome *c, uint64_t key)
{
    size_t i = (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 20) & (c->cap - 1);
    while (c->fns[i].head && c->fns[i].key != key)
        i = (i + 1) & (c->cap - 1);
    return i;
}

/* The cached text of f's function, built on first use; NULL when out of
 * memory. */
static const struct fn_text *fn_text(struct chrome *c, const pt_frame *f)
{
    uint64_t key = f->sym ? (uint64_t)(uintptr_t)f->sym : f->addr;
    if (c->cap) {
        struct fn_text *e = &c->fns[fn_slot(c, key)];
        if (e->head)
            return e;
    }
    if (c->nfns * 2 >= c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 1024;
        struct fn_text *n = calloc(cap, sizeof *n), *old = c->fns;
        if (!n)
            return NULL;
        size_t oldcap = c->cap;
        c->fns = n;
        c->cap = cap;
        for (size_t i = 0; i < oldcap; i++)
            if (old[i].head)
                c->fns[fn_slot(c, old[i].key)] = old[i];
        free(old);
    }
    char addr[32];
    const char *name = addr;
    if (f->sym)
        name = f->sym->name;
    else
        snprintf(addr, sizeof addr, "0x%" PRIx64, f->addr);
    jbuf h, t;
    jbuf_init(&h);
    jbuf_init(&t);
    jbuf_open(&h, '{');
    jbuf_kv_str(&h, "name", name);
    jbuf_kv_str(&h, "cat", "function");
    jbuf_kv_str(&h, "ph", "X");
    jbuf_key(&h, "ts");
    if (f->sym && f->sym->file) {
        char *file;
        if (asprintf(&file, "%s:%d", f->sym->file, f->sym->line) < 0)
            file = NULL;
        t.need_comma = true;
        jbuf_key(&t, "args");
        jbuf_open(&t, '{');
        jbuf_kv_str(&t, "file", file ? file : "");
        jbuf_close(&t, '}');
        free(file);
    }
    jbuf_raw(&t, "}", 1);
    if (h.failed || t.failed || !h.data || !t.data) {
        jbuf_free(&h);
        jbuf_free(&t);
        return NULL;
    }
    struct fn_text *e = &c->fns[fn_slot(c, key)];
    e->key = key;
    e->head = h.data;
    e->tail = t.data;
    c->nfns++;
    return e;
}

/* Writes v in decimal at p; returns the end. */
static char *put_u64(char *p, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* ns as microseconds with three exact decimals. */
static char *put_us(char *p, uint64_t ns)
{
    p = put_u64(p, ns / 1000);
    unsigned f = (unsigned)(ns % 1000);
    *p++ = '.';
    *p++ = (char)('0' + f / 100);
    *p++ = (char)('0' + f / 10 % 10);
    *p++ = (char)('0' + f % 10);
    return p;
}

static void on_end(void *ud, const pt_thread_info *t, pt_frame *const *stack, size_t n)
{
    struct chrome *c = ud;
    const pt_frame *f = stack[n - 1];
    const struct fn_text *ft = fn_text(c, f);
    if (!ft) {
        c->err = -ENOMEM;
        return;
    }
    char num[160], *p = num;
    p = put_us(p, f->begin_ns);
    memcpy(p, ",\"dur\":", 7);
    p = put_us(p + 7, f->end_ns - f->begin_ns);
    memcpy(p, ",\"pid\":", 7);
    p = put_u64(p + 7, t->pid);
    memcpy(p, ",\"tid\":", 7);
    p = put_u64(p + 7, t->tid);
    fputs(c->first ? "\n" : ",\n", c->out);
    fputs(ft->head, c->out);
    fwrite(num, 1, (size_t)(p - num), c->out);
    fputs(ft->tail, c->out);
    c->first = false;
    if (c->last_name >= c->nnames || c->names[c->last_name].tid != t->tid || c->names[c->last_name].pid != t->pid ||
        strcmp(c->names[c->last_name].name, t->name) != 0)
        note_thread(c, t);
}

int pt_export_chrome(const char *dir, const pt_output_options *opt, FILE *out, char *err, size_t errlen)
{
    struct chrome c = {out, true, 0, NULL, 0, 0, NULL, 0, 0};
    pt_tree_ops ops = {NULL, on_end, NULL};
    pt_walk_stats st;
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", out);
    int rc = pt_recording_walk(dir, &opt->tree, &ops, on_process, &c, &st, err, errlen);
    forget_fns(&c);
    for (size_t i = 0; i < c.nnames; i++) {
        jbuf b;
        jbuf_init(&b);
        jbuf_open(&b, '{');
        jbuf_kv_str(&b, "name", "thread_name");
        jbuf_kv_str(&b, "ph", "M");
        jbuf_kv_u64(&b, "pid", c.names[i].pid);
        jbuf_kv_u64(&b, "tid", c.names[i].tid);
        jbuf_key(&b, "args");
        jbuf_open(&b, '{');
        jbuf_kv_str(&b, "name", c.names[i].name);
        jbuf_close(&b, '}');
        jbuf_close(&b, '}');
        emit(&c, &b);
        free(c.names[i].name);
    }
    free(c.names);
    fputs("\n]}\n", out);
    if (rc == 0 && c.err) {
        snprintf(err, errlen, "out of memory");
        rc = c.err;
    }
    if (rc == 0 && ferror(out)) {
        snprintf(err, errlen, "writing the export failed");
        rc = -EIO;
    }
    return rc;
}
