/* pacer report: the leaks section (records of type "leak", DESIGN §3.5).
 *
 * Leaks are grouped by signature (the same page leaking the same types, or
 * the same allocation stack: the key the server clusters on), in two
 * lists: the app's, and the rest (origin "library": a known leak of GTK or
 * another library; "unknown": native blocks without a stack), which are
 * reported but not counted as the app's. Per group: how many records,
 * sessions and versions; for object leaks the page, the leaked types (of
 * the first record) and the objects retained in all; for native leaks the
 * blocks and bytes in all; and where: the top in-app frame of the
 * allocation stack, or of the first reference kept (--leaks=refs), or of
 * the first creation stack. Groups print by records, then by bytes.
 *
 * The schema lets a leak record go without its page (object) or its sizes
 * (native); the report cannot place such a record, so it rejects it
 * (leak_check).
 */
#include "report.h"
#include "report_fields.h"
#include "report_index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NAMES 64 /* sessions or versions kept per group for counting */

typedef struct names {
    char *v[MAX_NAMES];
    size_t n;
    bool more; /* past MAX_NAMES: the count is a lower bound */
} names;

typedef struct leak_group {
    char *name; /* the signature; first member, see report_index.h */
    char *kind, *origin, *known, *page, *types, *where;
    size_t records;
    int64_t retained, blocks, bytes;
    names sessions, versions;
} leak_group;

typedef struct leak_summary {
    report_index groups;
} leak_summary;

static const char app_origin[] = "app", native_kind[] = "native";

static void *leak_new(void)
{
    return calloc(1, sizeof(leak_summary));
}

static void names_release(names *n)
{
    for (size_t i = 0; i < n->n; i++)
        free(n->v[i]);
}

static void group_release(void *item)
{
    leak_group *g = item;
    free(g->kind), free(g->origin), free(g->known), free(g->page), free(g->types), free(g->where);
    names_release(&g->sessions);
    names_release(&g->versions);
}

static void leak_free(void *state)
{
    leak_summary *s = state;
    if (!s)
        return;
    report_index_release(&s->groups, group_release);
    free(s);
}

static int leak_check(const pacer_record *rec, char *reason)
{
    bool native = strcmp(pacer_record_str(rec, PACER_LEAK_KIND), native_kind) == 0;
    unsigned need = native ? PACER_LEAK_BYTES : PACER_LEAK_PAGE;
    if (pacer_record_has(rec, need) && (!native || pacer_record_has(rec, PACER_LEAK_COUNT)))
        return 0;
    snprintf(reason, REPORT_REASON_MAX, "a %s leak without \"%s\"", native ? "native" : "object",
             report_field_name(PACER_RECORD_LEAK, pacer_record_has(rec, need) ? PACER_LEAK_COUNT : need));
    return -EINVAL;
}

static int names_add(names *n, const char *s)
{
    if (!s)
        return 0;
    for (size_t i = 0; i < n->n; i++)
        if (strcmp(n->v[i], s) == 0)
            return 0;
    if (n->n == MAX_NAMES) {
        n->more = true;
        return 0;
    }
    return (n->v[n->n] = strdup(s)) ? (n->n++, 0) : -ENOMEM;
}

static int keep(char **slot, const char *s)
{
    if (*slot || !s)
        return 0;
    return (*slot = strdup(s)) ? 0 : -ENOMEM;
}

/* "function (file:line)" of the first in-app frame of a stack list, or of
 * its first frame; NULL when the list is empty. */
static char *frame_text(const pacer_record *first)
{
    const pacer_record *pick = NULL;
    for (const pacer_record *f = first; f && !pick; f = pacer_record_next(f))
        if (pacer_record_int(f, PACER_STACK_IN_APP))
            pick = f;
    if (!pick)
        pick = first;
    if (!pick)
        return NULL;
    const char *fn = pacer_record_str(pick, PACER_STACK_FUNCTION);
    const char *file = pacer_record_str(pick, PACER_STACK_FILE);
    char *s = NULL;
    if (file) {
        const char *base = strrchr(file, '/');
        if (asprintf(&s, "%s (%s:%lld)", fn, base ? base + 1 : file,
                     (long long)pacer_record_int(pick, PACER_STACK_LINE)) < 0)
            s = NULL;
    } else {
        s = strdup(fn);
    }
    return s;
}

/* Where an object leak comes from: the first kept reference, else the
 * first creation stack. */
static char *object_where(const pacer_record *rec)
{
    for (const pacer_record *o = pacer_record_child(rec, PACER_LEAK_OBJECTS); o; o = pacer_record_next(o)) {
        const pacer_record *ref = pacer_record_child(o, PACER_LEAKOBJ_REFS);
        if (ref && pacer_record_child(ref, PACER_LEAKREF_STACK)) {
            char *f = frame_text(pacer_record_child(ref, PACER_LEAKREF_STACK));
            char *s = NULL;
            if (f && asprintf(&s, "kept by %s", f) < 0)
                s = NULL;
            free(f);
            return s;
        }
    }
    for (const pacer_record *o = pacer_record_child(rec, PACER_LEAK_OBJECTS); o; o = pacer_record_next(o)) {
        if (pacer_record_child(o, PACER_LEAKOBJ_CREATED)) {
            char *f = frame_text(pacer_record_child(o, PACER_LEAKOBJ_CREATED));
            char *s = NULL;
            if (f && asprintf(&s, "created at %s", f) < 0)
                s = NULL;
            free(f);
            return s;
        }
    }
    return NULL;
}

/* "GtkLabel ×1, GtkBox ×2" */
static char *types_text(const pacer_record *rec)
{
    size_t len = 0;
    for (const pacer_record *t = pacer_record_child(rec, PACER_LEAK_TYPES); t; t = pacer_record_next(t))
        len += strlen(pacer_record_str(t, PACER_LEAKTYPE_TYPE)) + 32;
    char *s = malloc(len + 1);
    if (!s)
        return NULL;
    s[0] = '\0';
    size_t at = 0;
    for (const pacer_record *t = pacer_record_child(rec, PACER_LEAK_TYPES); t; t = pacer_record_next(t))
        at += (size_t)snprintf(s + at, len + 1 - at, "%s%s x%lld", at ? ", " : "", pacer_record_str(t, PACER_LEAKTYPE_TYPE),
                               (long long)pacer_record_int(t, PACER_LEAKTYPE_COUNT));
    return s;
}

static int leak_add(void *state, const pacer_record *rec, const report_options *opt)
{
    leak_summary *s = state;
    const char *page = pacer_record_str(rec, PACER_LEAK_PAGE);
    if (opt->page && (!page || strcmp(opt->page, page) != 0))
        return 0;
    leak_group *g = report_index_get(&s->groups, pacer_record_str(rec, PACER_LEAK_SIGNATURE), sizeof(*g));
    if (!g)
        return -ENOMEM;
    bool native = strcmp(pacer_record_str(rec, PACER_LEAK_KIND), native_kind) == 0;
    g->records++;
    g->retained += pacer_record_int(rec, PACER_LEAK_RETAINED);
    g->blocks += pacer_record_int(rec, PACER_LEAK_COUNT);
    g->bytes += pacer_record_int(rec, PACER_LEAK_BYTES);
    int r = 0;
    if (r == 0)
        r = keep(&g->kind, pacer_record_str(rec, PACER_LEAK_KIND));
    if (r == 0)
        r = keep(&g->origin, pacer_record_str(rec, PACER_LEAK_ORIGIN));
    if (r == 0)
        r = keep(&g->known, pacer_record_str(rec, PACER_LEAK_KNOWN_LEAK));
    if (r == 0)
        r = keep(&g->page, page);
    if (r == 0 && !native && !g->types && !(g->types = types_text(rec)))
        r = -ENOMEM;
    /* a kept reference says more than a creation stack */
    if (r == 0 && (!g->where || (!native && strncmp(g->where, "kept by", 7) != 0))) {
        char *w = native ? frame_text(pacer_record_child(rec, PACER_LEAK_STACK)) : object_where(rec);
        if (w && (!g->where || strncmp(w, "kept by", 7) == 0)) {
            free(g->where);
            g->where = w;
        } else {
            free(w);
        }
    }
    if (r == 0)
        r = names_add(&g->sessions, pacer_record_common(rec, PACER_COMMON_SESSION));
    if (r == 0)
        r = names_add(&g->versions, pacer_record_common(rec, PACER_COMMON_VERSION));
    return r;
}

static int by_weight(const void *a, const void *b)
{
    const leak_group *x = *(leak_group *const *)a, *y = *(leak_group *const *)b;
    if (x->records != y->records)
        return x->records < y->records ? 1 : -1;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return strcmp(x->name, y->name);
}

static leak_group **sorted(leak_summary *s)
{
    leak_group **g = (leak_group **)report_index_sorted(&s->groups);
    qsort(g, s->groups.n, sizeof(*g), by_weight);
    return g;
}

static bool is_app(const leak_group *g)
{
    return strcmp(g->origin, app_origin) == 0;
}

static void print_group(FILE *out, const leak_group *g)
{
    if (strcmp(g->kind, native_kind) == 0)
        fprintf(out, "  %-16s %-6s %7zu %8zu  %lld bytes in %lld blocks\n", g->name, g->kind, g->records,
                g->sessions.n, (long long)g->bytes, (long long)g->blocks);
    else
        fprintf(out, "  %-16s %-6s %7zu %8zu  %s: %s (%lld retained)\n", g->name, g->kind, g->records,
                g->sessions.n, g->page, g->types ? g->types : "-", (long long)g->retained);
    if (!is_app(g))
        fprintf(out, "      %s%s%s\n", g->origin, g->known ? ": " : "", g->known ? g->known : "");
    if (g->where)
        fprintf(out, "      %s%s\n", strcmp(g->kind, native_kind) == 0 ? "at " : "", g->where);
}

static void leak_print_text(void *state, FILE *out, const report_options *opt)
{
    leak_summary *s = state;
    fprintf(out, "Leaks, by signature\n");
    if (s->groups.n == 0) {
        fprintf(out, "  no leak records\n");
        return;
    }
    leak_group **g = sorted(s);
    for (int pass = 0; pass < 2; pass++) {
        bool any = false;
        for (size_t i = 0; i < s->groups.n; i++) {
            if (is_app(g[i]) != (pass == 0))
                continue;
            if (!any) {
                fprintf(out, pass == 0 ? "  the app's:\n" : "  known and library leaks (not the app's):\n");
                fprintf(out, "  %-16s %-6s %7s %8s  %s\n", "signature", "kind", "records", "sessions", "what");
                any = true;
            }
            print_group(out, g[i]);
        }
        if (!any && pass == 0)
            fprintf(out, "  none of the app's\n");
    }
}

static void leak_to_json(void *state, jbuf *out, const report_options *opt)
{
    leak_summary *s = state;
    jbuf_open(out, '[');
    leak_group **g = sorted(s);
    for (size_t i = 0; i < s->groups.n; i++) {
        jbuf_open(out, '{');
        jbuf_kv_str(out, "signature", g[i]->name);
        jbuf_kv_str(out, "kind", g[i]->kind);
        jbuf_kv_str(out, "origin", g[i]->origin);
        if (g[i]->known)
            jbuf_kv_str(out, "known_leak", g[i]->known);
        jbuf_kv_u64(out, "records", g[i]->records);
        jbuf_kv_u64(out, "sessions", g[i]->sessions.n);
        jbuf_kv_u64(out, "versions", g[i]->versions.n);
        if (strcmp(g[i]->kind, native_kind) == 0) {
            jbuf_kv_u64(out, "blocks", (uint64_t)g[i]->blocks);
            jbuf_kv_u64(out, "bytes", (uint64_t)g[i]->bytes);
        } else {
            jbuf_kv_str(out, "page", g[i]->page);
            jbuf_kv_str(out, "types", g[i]->types ? g[i]->types : "");
            jbuf_kv_u64(out, "retained", (uint64_t)g[i]->retained);
        }
        if (g[i]->where)
            jbuf_kv_str(out, "where", g[i]->where);
        else
            jbuf_kv_null(out, "where");
        jbuf_close(out, '}');
    }
    jbuf_close(out, ']');
}

const report_section report_leaks_section = {
    .type = PACER_RECORD_LEAK,
    .json_key = "leaks",
    .state_new = leak_new,
    .state_free = leak_free,
    .check = leak_check,
    .add = leak_add,
    .print_text = leak_print_text,
    .to_json = leak_to_json,
};
