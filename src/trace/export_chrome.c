/* Chrome trace JSON (the "Trace Event Format"), read by chrome://tracing,
 * ui.perfetto.dev and speedscope. One complete event ("ph":"X") per shown
 * call, written when the call ends, so the export streams: memory does not
 * grow with the trace. Timestamps are microseconds with ns decimals. Thread
 * and process names come last, as metadata events. */
#include "trace_read.h"

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
    struct named *names;
    size_t nnames;
};

/* Writes s as a JSON string body (without quotes). */
static void json_str(FILE *out, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
}

static void sep(struct chrome *c)
{
    fputs(c->first ? "\n" : ",\n", c->out);
    c->first = false;
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
    uint64_t dur = f->end_ns - f->begin_ns;
    sep(c);
    fputs("{\"name\":\"", c->out);
    if (f->sym)
        json_str(c->out, f->sym->name);
    else
        fprintf(c->out, "0x%" PRIx64, f->addr);
    fprintf(c->out, "\",\"cat\":\"function\",\"ph\":\"X\",\"ts\":%" PRIu64 ".%03u,\"dur\":%" PRIu64 ".%03u,\"pid\":%u,\"tid\":%u",
            f->begin_ns / 1000, (unsigned)(f->begin_ns % 1000), dur / 1000, (unsigned)(dur % 1000), t->pid, t->tid);
    if (f->sym && f->sym->file) {
        fputs(",\"args\":{\"file\":\"", c->out);
        json_str(c->out, f->sym->file);
        fprintf(c->out, ":%d\"}", f->sym->line);
    }
    fputc('}', c->out);
    note_thread(c, t);
}

int pt_export_chrome(const char *dir, const pt_output_options *opt, FILE *out, char *err, size_t errlen)
{
    struct chrome c = {out, true, NULL, 0};
    pt_tree_ops ops = {NULL, on_end, NULL};
    pt_walk_stats st;
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", out);
    int rc = pt_recording_walk(dir, &opt->tree, &ops, NULL, &c, &st, err, errlen);
    for (size_t i = 0; i < c.nnames; i++) {
        sep(&c);
        fprintf(out, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":\"",
                c.names[i].pid, c.names[i].tid);
        json_str(out, c.names[i].name);
        fputs("\"}}", out);
        free(c.names[i].name);
    }
    free(c.names);
    fputs("\n]}\n", out);
    if (rc == 0 && ferror(out)) {
        snprintf(err, errlen, "writing the export failed");
        rc = -EIO;
    }
    return rc;
}
