/* Chrome trace JSON (the "Trace Event Format"), read by chrome://tracing,
 * ui.perfetto.dev and speedscope. One complete event ("ph":"X") per shown
 * call, written when the call ends, so the export streams: memory does not
 * grow with the trace. Timestamps are microseconds with ns decimals. Thread
 * and process names come last, as metadata events.
 *
 * Each event is built with base's JSON writer (jbuf) and written out whole,
 * one per line; the document around them (header, the separators between
 * events, the closing brackets) is written here. */
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

struct chrome {
    FILE *out;
    bool first;
    int err;
    struct named *names;
    size_t nnames;
};

/* A member jbuf has no writer for: nanoseconds as microseconds with three
 * exact decimals (a double would lose them on a long-running machine). */
static void kv_us(jbuf *b, const char *key, uint64_t ns)
{
    jbuf_key(b, key);
    jbuf_printf(b, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
    b->need_comma = true; /* a value was written: the next member needs ',' */
}

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
        c->nnames++;
}

static void on_end(void *ud, const pt_thread_info *t, pt_frame *const *stack, size_t n)
{
    struct chrome *c = ud;
    const pt_frame *f = stack[n - 1];
    char addr[32];
    const char *name = addr;
    if (f->sym)
        name = f->sym->name;
    else
        snprintf(addr, sizeof addr, "0x%" PRIx64, f->addr);
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    jbuf_kv_str(&b, "name", name);
    jbuf_kv_str(&b, "cat", "function");
    jbuf_kv_str(&b, "ph", "X");
    kv_us(&b, "ts", f->begin_ns);
    kv_us(&b, "dur", f->end_ns - f->begin_ns);
    jbuf_kv_u64(&b, "pid", t->pid);
    jbuf_kv_u64(&b, "tid", t->tid);
    if (f->sym && f->sym->file) {
        char *file;
        if (asprintf(&file, "%s:%d", f->sym->file, f->sym->line) < 0) {
            c->err = -ENOMEM;
            jbuf_free(&b);
            return;
        }
        jbuf_key(&b, "args");
        jbuf_open(&b, '{');
        jbuf_kv_str(&b, "file", file);
        jbuf_close(&b, '}');
        free(file);
    }
    jbuf_close(&b, '}');
    emit(c, &b);
    note_thread(c, t);
}

int pt_export_chrome(const char *dir, const pt_output_options *opt, FILE *out, char *err, size_t errlen)
{
    struct chrome c = {out, true, 0, NULL, 0};
    pt_tree_ops ops = {NULL, on_end, NULL};
    pt_walk_stats st;
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", out);
    int rc = pt_recording_walk(dir, &opt->tree, &ops, NULL, &c, &st, err, errlen);
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
