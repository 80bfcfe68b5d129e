/* Records → a timeline (timeline.h), and its two writers.
 *
 * Where each record goes, in its run's process:
 *   startup  track "start-up": "cold start" from the launch to the later of
 *            the main page's first frame and its final draw, with one child
 *            per phase in order (launch → agent init → main → app created →
 *            first frame → main frame → full display), placed from the
 *            phases' CLOCK_MONOTONIC stamps around the record's wall time;
 *            a warm start: "warm start", creation → first frame;
 *   page     one track per page instance ("page ShopHomeWindow #1"): the
 *            page from its creation for total_ms, children "initial draw"
 *            (creation + initial_draw_ms) and "final draw" (its last
 *            final_draw_ms); the API load on the track below it
 *            ("… API load"), ending where the final draw begins, with each
 *            configured API and its time as arguments. A lazily shown page's
 *            wait is not in total_ms, so its phases are placed from its
 *            creation as the metrics count them;
 *   net      "requests" tracks, as many as requests overlap: "GET
 *            /api/list" from its start for total_ms;
 *   jank     "main loop": the busy iteration, with its page, fingerprint and
 *            innermost in-app frame.
 * Children are clamped into their parent and after their older sibling, so
 * that both formats' nesting rules hold whatever the numbers.
 */
#include "timeline.h"

#include <pacer/base/json.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static char *dupf(timeline *tl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *dupf(timeline *tl, const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0) {
        s = NULL;
        tl->oom = true;
    }
    va_end(ap);
    return s;
}

/* Room for element n of *arr, whose capacity is 16, then each power of two
 * reached. */
static bool grow(timeline *tl, void **arr, size_t n, size_t size)
{
    if (n != 0 && (n < 16 || (n & (n - 1)) != 0))
        return true;
    void *p = realloc(*arr, (n ? n * 2 : 16) * size);
    if (!p) {
        tl->oom = true;
        return false;
    }
    *arr = p;
    return true;
}

/* The path of a URL: after scheme://host, without query or fragment. */
static size_t path_of(const char *url, const char **ret)
{
    const char *p = strstr(url, "://");
    p = p ? strchr(p + 3, '/') : url;
    if (!p)
        p = "/";
    *ret = p;
    return strcspn(p, "?#");
}

static size_t process_of(timeline *tl, const pacer_record *r)
{
    const char *app = pacer_record_common(r, PACER_COMMON_APP);
    const char *version = pacer_record_common(r, PACER_COMMON_VERSION);
    const char *session = pacer_record_common(r, PACER_COMMON_SESSION);
    int64_t pid = pacer_record_pid(r);
    char key[600];
    snprintf(key, sizeof key, "%s\x1f%s\x1f%s\x1f%" PRId64, app ? app : "", version ? version : "",
             session ? session : "", pid);
    for (size_t i = 0; i < tl->n_processes; i++)
        if (strcmp(tl->processes[i].key, key) == 0)
            return i;
    if (!grow(tl, (void **)&tl->processes, tl->n_processes, sizeof *tl->processes))
        return (size_t)-1;
    tl_process *p = &tl->processes[tl->n_processes];
    p->key = strdup(key);
    p->pid = pid;
    p->name = dupf(tl, "%s%s%s (pid %" PRId64 ", session %.8s)", app ? app : "app", version ? " " : "",
                   version ? version : "", pid, session ? session : "-");
    if (!p->key || !p->name) {
        tl->oom = true;
        free(p->key);
        free(p->name);
        return (size_t)-1;
    }
    return tl->n_processes++;
}

/* A track of the process named `name`. lane: take the first such track free
 * at `start` (or make "name 2", "name 3"…); else the one track of that name. */
static size_t track_of(timeline *tl, size_t process, const char *name, int sort, bool lane, int64_t start,
                       int64_t end)
{
    int n = 0;
    for (size_t i = 0; i < tl->n_tracks; i++) {
        tl_track *t = &tl->tracks[i];
        if (t->process != process || t->sort != sort)
            continue;
        if (!lane && strcmp(t->name, name) == 0)
            return i;
        if (lane) {
            n++;
            if (t->busy_until <= start) {
                t->busy_until = end;
                return i;
            }
        }
    }
    if (!grow(tl, (void **)&tl->tracks, tl->n_tracks, sizeof *tl->tracks))
        return (size_t)-1;
    tl_track *t = &tl->tracks[tl->n_tracks];
    t->process = process;
    t->sort = sort;
    t->busy_until = end;
    t->name = lane && n ? dupf(tl, "%s %d", name, n + 1) : strdup(name);
    if (!t->name) {
        tl->oom = true;
        return (size_t)-1;
    }
    return tl->n_tracks++;
}

static tl_slice *add_slice(timeline *tl, size_t track, int depth, const char *category, int64_t start, int64_t end,
                           char *name)
{
    if (track == (size_t)-1 || !name || !grow(tl, (void **)&tl->slices, tl->n_slices, sizeof *tl->slices)) {
        free(name);
        return NULL;
    }
    tl_slice *s = &tl->slices[tl->n_slices++];
    memset(s, 0, sizeof *s);
    s->track = track;
    s->depth = depth;
    s->category = category;
    s->start_ns = start;
    s->end_ns = end < start ? start : end;
    s->name = name;
    return s;
}

static void arg_str(tl_slice *s, const char *key, const char *v)
{
    if (!s || !v || s->n_args == TL_MAX_ARGS)
        return;
    s->args[s->n_args++] = (tl_arg){.key = key, .type = 's', .s = strdup(v)};
}

static void arg_int(tl_slice *s, const char *key, int64_t v)
{
    if (s && s->n_args < TL_MAX_ARGS)
        s->args[s->n_args++] = (tl_arg){.key = key, .type = 'i', .i = v};
}

static void arg_ms(tl_slice *s, const char *key, const pacer_record *r, unsigned field)
{
    if (s && s->n_args < TL_MAX_ARGS && pacer_record_has(r, field))
        s->args[s->n_args++] = (tl_arg){.key = key, .type = 'd', .d = pacer_record_ms(r, field)};
}

static int64_t ms_ns(const pacer_record *r, unsigned field)
{
    return pacer_record_has(r, field) ? (int64_t)llround(pacer_record_ms(r, field) * 1e6) : 0;
}

/* ---- the record types ---- */

enum { SORT_STARTUP, SORT_PAGE, SORT_REQUESTS, SORT_JANK };

static void add_startup(timeline *tl, size_t proc, const pacer_record *r)
{
    int64_t ts = pacer_record_ts(r);
    const char *kind = pacer_record_str(r, PACER_STARTUP_KIND);
    const pacer_record *ph = pacer_record_has(r, PACER_STARTUP_PHASES) ? pacer_record_child(r, PACER_STARTUP_PHASES)
                                                                        : NULL;
    size_t track = track_of(tl, proc, "start-up", SORT_STARTUP, false, 0, 0);
    if (kind && strcmp(kind, "warm") == 0) {
        tl_slice *s = add_slice(tl, track, 0, "startup", ts, ts + ms_ns(r, PACER_STARTUP_WARM_MS),
                                dupf(tl, "warm start"));
        arg_ms(s, "warm_ms", r, PACER_STARTUP_WARM_MS);
        arg_str(s, "page", pacer_record_has(r, PACER_STARTUP_PAGE) ? pacer_record_str(r, PACER_STARTUP_PAGE) : NULL);
        return;
    }
    static const struct {
        unsigned field;
        const char *name;
    } phases[] = {
        {PACER_PHASE_LAUNCH, "launch"}, {PACER_PHASE_AGENT_INIT, "agent init"}, {PACER_PHASE_MAIN, "main"},
        {PACER_PHASE_APP_CREATED, "app created"}, {PACER_PHASE_FIRST_FRAME, "first frame"},
        {PACER_PHASE_MAIN_FRAME, "main frame"}, {PACER_PHASE_FULL_DISPLAY, "full display"},
    };
    int64_t end = ts + ms_ns(r, PACER_STARTUP_COLD_MS);
    int64_t full = ts + ms_ns(r, PACER_STARTUP_FULL_DISPLAY_MS);
    if (full > end)
        end = full;
    int64_t launch = ph && pacer_record_has(ph, PACER_PHASE_LAUNCH) ? pacer_record_int(ph, PACER_PHASE_LAUNCH) : 0;
    /* the phases, in order, where seen: a waterfall */
    int64_t at[8];
    const char *names[8];
    size_t n = 0;
    for (size_t i = 0; ph && launch && i < sizeof phases / sizeof phases[0]; i++)
        if (pacer_record_has(ph, phases[i].field)) {
            at[n] = ts + (pacer_record_int(ph, phases[i].field) - launch);
            names[n++] = phases[i].name;
            if (at[n - 1] > end)
                end = at[n - 1];
        }
    tl_slice *s = add_slice(tl, track, 0, "startup", ts, end, dupf(tl, "cold start"));
    arg_ms(s, "cold_ms", r, PACER_STARTUP_COLD_MS);
    arg_ms(s, "first_screen_ms", r, PACER_STARTUP_FIRST_SCREEN_MS);
    arg_ms(s, "app_cost_ms", r, PACER_STARTUP_APP_COST_MS);
    arg_ms(s, "full_display_ms", r, PACER_STARTUP_FULL_DISPLAY_MS);
    arg_str(s, "main_page",
            pacer_record_has(r, PACER_STARTUP_MAIN_PAGE) ? pacer_record_str(r, PACER_STARTUP_MAIN_PAGE) : NULL);
    for (size_t i = 0; i + 1 < n; i++)
        add_slice(tl, track, 1, "startup", at[i], at[i + 1], dupf(tl, "%s → %s", names[i], names[i + 1]));
}

static void add_page(timeline *tl, size_t proc, const pacer_record *r)
{
    int64_t ts = pacer_record_ts(r);
    const char *page = pacer_record_str(r, PACER_PAGE_CLASS);
    char name[300];
    snprintf(name, sizeof name, "page %s #%" PRIu64, page ? page : "?",
             pacer_record_has(r, PACER_PAGE_INSTANCE) ? pacer_record_u64(r, PACER_PAGE_INSTANCE) : 0);
    int64_t initial = ms_ns(r, PACER_PAGE_INITIAL_DRAW_MS), api = ms_ns(r, PACER_PAGE_API_LOAD_MS);
    int64_t final = ms_ns(r, PACER_PAGE_FINAL_DRAW_MS), total = ms_ns(r, PACER_PAGE_TOTAL_MS);
    if (!total)
        total = initial;
    int64_t end = ts + total;
    size_t track = track_of(tl, proc, name, SORT_PAGE, false, 0, 0);
    tl_slice *s = add_slice(tl, track, 0, "page", ts, end, dupf(tl, "%s", page ? page : "page"));
    arg_str(s, "status", pacer_record_str(r, PACER_PAGE_STATUS));
    arg_ms(s, "total_ms", r, PACER_PAGE_TOTAL_MS);
    arg_ms(s, "initial_draw_ms", r, PACER_PAGE_INITIAL_DRAW_MS);
    arg_ms(s, "api_load_ms", r, PACER_PAGE_API_LOAD_MS);
    arg_ms(s, "final_draw_ms", r, PACER_PAGE_FINAL_DRAW_MS);
    int64_t initial_end = ts + initial > end ? end : ts + initial;
    if (pacer_record_has(r, PACER_PAGE_INITIAL_DRAW_MS))
        add_slice(tl, track, 1, "page", ts, initial_end, dupf(tl, "initial draw"));
    if (pacer_record_has(r, PACER_PAGE_FINAL_DRAW_MS)) {
        int64_t fstart = end - final < initial_end ? initial_end : end - final;
        add_slice(tl, track, 1, "page", fstart, end, dupf(tl, "final draw"));
    }
    if (pacer_record_has(r, PACER_PAGE_API_LOAD_MS)) {
        int64_t api_end = pacer_record_has(r, PACER_PAGE_FINAL_DRAW_MS) ? end - final : end;
        int64_t api_start = api_end - api < ts ? ts : api_end - api;
        char tname[320];
        snprintf(tname, sizeof tname, "%s API load", name);
        size_t t2 = track_of(tl, proc, tname, SORT_PAGE, false, 0, 0);
        tl_slice *a = add_slice(tl, t2, 0, "page", api_start, api_end, dupf(tl, "API load"));
        arg_ms(a, "api_load_ms", r, PACER_PAGE_API_LOAD_MS);
        /* each configured API: "URL: MS ms, status S" */
        size_t k = 0;
        static const char *const keys[] = {"api 1", "api 2", "api 3", "api 4", "api 5", "api 6", "api 7", "api 8"};
        for (const pacer_record *e = pacer_record_has(r, PACER_PAGE_APIS) ? pacer_record_child(r, PACER_PAGE_APIS) : NULL;
             e && k < 8; e = pacer_record_next(e), k++) {
            char v[400];
            int o = snprintf(v, sizeof v, "%s", pacer_record_str(e, PACER_PAGE_API_URL));
            if (pacer_record_has(e, PACER_PAGE_API_MS))
                o += snprintf(v + o, sizeof v - (size_t)o, ": %.3f ms", pacer_record_ms(e, PACER_PAGE_API_MS));
            if (pacer_record_has(e, PACER_PAGE_API_STATUS))
                snprintf(v + o, sizeof v - (size_t)o, ", status %" PRId64, pacer_record_int(e, PACER_PAGE_API_STATUS));
            arg_str(a, keys[k], v);
        }
    }
}

static void add_net(timeline *tl, size_t proc, const pacer_record *r)
{
    int64_t ts = pacer_record_ts(r), end = ts + ms_ns(r, PACER_NET_TOTAL_MS);
    const char *url = pacer_record_str(r, PACER_NET_URL), *path = url;
    size_t n = url ? path_of(url, &path) : 0;
    const char *method = pacer_record_has(r, PACER_NET_METHOD) ? pacer_record_str(r, PACER_NET_METHOD) : "GET";
    size_t track = track_of(tl, proc, "requests", SORT_REQUESTS, true, ts, end);
    tl_slice *s = add_slice(tl, track, 0, "request", ts, end, dupf(tl, "%s %.*s", method, (int)n, path ? path : ""));
    arg_str(s, "url", url);
    if (pacer_record_has(r, PACER_NET_STATUS))
        arg_int(s, "status", pacer_record_int(r, PACER_NET_STATUS));
    arg_ms(s, "total_ms", r, PACER_NET_TOTAL_MS);
    arg_ms(s, "dns_ms", r, PACER_NET_DNS_MS);
    arg_ms(s, "connect_ms", r, PACER_NET_CONNECT_MS);
    arg_ms(s, "tls_ms", r, PACER_NET_TLS_MS);
    arg_ms(s, "first_byte_ms", r, PACER_NET_FIRST_BYTE_MS);
    arg_str(s, "page", pacer_record_has(r, PACER_NET_PAGE) ? pacer_record_str(r, PACER_NET_PAGE) : NULL);
    arg_str(s, "error", pacer_record_has(r, PACER_NET_ERROR) ? pacer_record_str(r, PACER_NET_ERROR) : NULL);
}

static void add_jank(timeline *tl, size_t proc, const pacer_record *r)
{
    int64_t ts = pacer_record_ts(r), end = ts + ms_ns(r, PACER_JANK_DURATION_MS);
    size_t track = track_of(tl, proc, "main loop", SORT_JANK, true, ts, end);
    const char *kind = pacer_record_str(r, PACER_JANK_KIND);
    tl_slice *s = add_slice(tl, track, 0, "jank", ts, end, dupf(tl, "%s", kind ? kind : "jank"));
    arg_ms(s, "duration_ms", r, PACER_JANK_DURATION_MS);
    arg_str(s, "page", pacer_record_has(r, PACER_JANK_PAGE) ? pacer_record_str(r, PACER_JANK_PAGE) : NULL);
    arg_str(s, "fingerprint",
            pacer_record_has(r, PACER_JANK_FINGERPRINT) ? pacer_record_str(r, PACER_JANK_FINGERPRINT) : NULL);
    for (const pacer_record *f = pacer_record_has(r, PACER_JANK_STACK) ? pacer_record_child(r, PACER_JANK_STACK) : NULL;
         f; f = pacer_record_next(f))
        if (pacer_record_has(f, PACER_STACK_IN_APP) && pacer_record_int(f, PACER_STACK_IN_APP)) {
            arg_str(s, "in-app frame", pacer_record_str(f, PACER_STACK_FUNCTION));
            break;
        }
}

void timeline_add(timeline *tl, const pacer_record *r)
{
    const pacer_record_type *t = pacer_record_type_of(r);
    size_t proc = t ? process_of(tl, r) : (size_t)-1;
    if (proc == (size_t)-1) {
        tl->skipped++;
        return;
    }
    switch (t->id) {
    case PACER_RECORD_STARTUP: add_startup(tl, proc, r); break;
    case PACER_RECORD_PAGE: add_page(tl, proc, r); break;
    case PACER_RECORD_NET: add_net(tl, proc, r); break;
    case PACER_RECORD_JANK: add_jank(tl, proc, r); break;
    default: tl->skipped++; break;
    }
}

/* ---- order ---- */

static int cmp_slice(const void *x, const void *y)
{
    const tl_slice *a = x, *b = y;
    if (a->track != b->track)
        return a->track < b->track ? -1 : 1;
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    if (a->depth != b->depth)
        return a->depth < b->depth ? -1 : 1;
    return a->end_ns > b->end_ns ? -1 : a->end_ns < b->end_ns;
}

void timeline_finish(timeline *tl)
{
    /* children keep to their parents: they are added right after them, so
     * sort each top slice with its children as one block */
    for (size_t i = 0; i < tl->n_slices; i++) {
        tl_slice *s = &tl->slices[i];
        if (s->depth != 0)
            continue;
        int64_t prev_end = s->start_ns;
        for (size_t k = i + 1; k < tl->n_slices && tl->slices[k].depth == 1 && tl->slices[k].track == s->track; k++) {
            tl_slice *c = &tl->slices[k];
            if (c->start_ns < prev_end)
                c->start_ns = prev_end;
            if (c->end_ns > s->end_ns)
                c->end_ns = s->end_ns;
            if (c->start_ns > c->end_ns)
                c->start_ns = c->end_ns;
            prev_end = c->end_ns;
        }
    }
    /* blocks of (top, children) in start order per track; a block keeps its
     * children right after its top slice since children start no earlier
     * and sort after it at equal starts */
    qsort(tl->slices, tl->n_slices, sizeof *tl->slices, cmp_slice);
}

void timeline_free(timeline *tl)
{
    for (size_t i = 0; i < tl->n_slices; i++) {
        free(tl->slices[i].name);
        for (size_t a = 0; a < tl->slices[i].n_args; a++)
            free(tl->slices[i].args[a].s);
    }
    for (size_t i = 0; i < tl->n_tracks; i++)
        free(tl->tracks[i].name);
    for (size_t i = 0; i < tl->n_processes; i++) {
        free(tl->processes[i].name);
        free(tl->processes[i].key);
    }
    free(tl->slices);
    free(tl->tracks);
    free(tl->processes);
    memset(tl, 0, sizeof *tl);
}

static int64_t origin(const timeline *tl)
{
    int64_t t0 = INT64_MAX;
    for (size_t i = 0; i < tl->n_slices; i++)
        if (tl->slices[i].start_ns < t0)
            t0 = tl->slices[i].start_ns;
    return t0 == INT64_MAX ? 0 : t0;
}

/* ---- Chrome trace event format (JSON) ---- */

int timeline_write_chrome(const timeline *tl, FILE *out)
{
    int64_t t0 = origin(tl);
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    jbuf_kv_str(&b, "displayTimeUnit", "ms");
    jbuf_key(&b, "otherData");
    jbuf_open(&b, '{');
    jbuf_kv_str(&b, "source", "pacer export");
    jbuf_kv_i64(&b, "origin_unix_ns", t0);
    jbuf_close(&b, '}');
    jbuf_key(&b, "traceEvents");
    jbuf_open(&b, '[');
    for (size_t p = 0; p < tl->n_processes; p++) {
        jbuf_open(&b, '{');
        jbuf_kv_str(&b, "ph", "M");
        jbuf_kv_str(&b, "name", "process_name");
        jbuf_kv_i64(&b, "pid", (int64_t)p + 1);
        jbuf_key(&b, "args");
        jbuf_open(&b, '{');
        jbuf_kv_str(&b, "name", tl->processes[p].name);
        jbuf_close(&b, '}');
        jbuf_close(&b, '}');
    }
    for (size_t t = 0; t < tl->n_tracks; t++) {
        for (int m = 0; m < 2; m++) {
            jbuf_open(&b, '{');
            jbuf_kv_str(&b, "ph", "M");
            jbuf_kv_str(&b, "name", m ? "thread_sort_index" : "thread_name");
            jbuf_kv_i64(&b, "pid", (int64_t)tl->tracks[t].process + 1);
            jbuf_kv_i64(&b, "tid", (int64_t)t + 1);
            jbuf_key(&b, "args");
            jbuf_open(&b, '{');
            if (m)
                jbuf_kv_i64(&b, "sort_index", tl->tracks[t].sort * 100000 + (int64_t)t);
            else
                jbuf_kv_str(&b, "name", tl->tracks[t].name);
            jbuf_close(&b, '}');
            jbuf_close(&b, '}');
        }
    }
    for (size_t i = 0; i < tl->n_slices; i++) {
        const tl_slice *s = &tl->slices[i];
        jbuf_open(&b, '{');
        jbuf_kv_str(&b, "ph", "X");
        jbuf_kv_str(&b, "name", s->name);
        jbuf_kv_str(&b, "cat", s->category);
        jbuf_kv_i64(&b, "pid", (int64_t)tl->tracks[s->track].process + 1);
        jbuf_kv_i64(&b, "tid", (int64_t)s->track + 1);
        /* microseconds, to the nanosecond */
        jbuf_key(&b, "ts");
        jbuf_printf(&b, "%" PRId64 ".%03" PRId64, (s->start_ns - t0) / 1000, (s->start_ns - t0) % 1000);
        b.need_comma = true;
        jbuf_key(&b, "dur");
        jbuf_printf(&b, "%" PRId64 ".%03" PRId64, (s->end_ns - s->start_ns) / 1000, (s->end_ns - s->start_ns) % 1000);
        b.need_comma = true;
        jbuf_key(&b, "args");
        jbuf_open(&b, '{');
        for (size_t a = 0; a < s->n_args; a++) {
            const tl_arg *g = &s->args[a];
            if (g->type == 's')
                jbuf_kv_str(&b, g->key, g->s);
            else if (g->type == 'i')
                jbuf_kv_i64(&b, g->key, g->i);
            else
                jbuf_kv_double(&b, g->key, g->d);
        }
        jbuf_close(&b, '}');
        jbuf_close(&b, '}');
    }
    jbuf_close(&b, ']');
    jbuf_close(&b, '}');
    jbuf_raw(&b, "\n", 1);
    if (b.failed) {
        jbuf_free(&b);
        return -ENOMEM;
    }
    int r = fwrite(b.data, 1, b.len, out) == b.len ? 0 : -EIO;
    jbuf_free(&b);
    return r;
}

/* ---- Perfetto (perfetto.protos.Trace) ----
 *
 *   Trace.packet 1 = TracePacket { timestamp 8, trusted_packet_sequence_id 10,
 *     track_event 11, sequence_flags 13, track_descriptor 60 }
 *   TrackDescriptor { uuid 1, name 2, process 3 {pid 1, process_name 6},
 *     parent_uuid 5, child_ordering 11 (3 EXPLICIT), sibling_order_rank 12 }
 *   TrackEvent { debug_annotations 4, type 9 (1 begin, 2 end), track_uuid 11,
 *     categories 22, name 23 }
 *   DebugAnnotation { int_value 4, double_value 5, string_value 6, name 10 }
 * Each track is a sequence of its own (sequence id = its index + 1), its
 * descriptor first, its slices' begin and end packets in time order. */

typedef struct pbuf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} pbuf;

static void pput(pbuf *b, const void *src, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void pvarint(pbuf *b, uint64_t v)
{
    uint8_t o[10];
    size_t n = 0;
    do {
        o[n++] = (uint8_t)(v & 0x7f) | (v > 0x7f ? 0x80 : 0);
        v >>= 7;
    } while (v);
    pput(b, o, n);
}

static void pkey(pbuf *b, unsigned num, int wt)
{
    pvarint(b, (uint64_t)num << 3 | (unsigned)wt);
}

static void pfield_varint(pbuf *b, unsigned num, uint64_t v)
{
    pkey(b, num, 0);
    pvarint(b, v);
}

static void pfield_bytes(pbuf *b, unsigned num, const void *p, size_t n)
{
    pkey(b, num, 2);
    pvarint(b, n);
    pput(b, p, n);
}

static void pfield_str(pbuf *b, unsigned num, const char *s)
{
    pfield_bytes(b, num, s, strlen(s));
}

static void pfield_msg(pbuf *b, unsigned num, pbuf *sub)
{
    pfield_bytes(b, num, sub->p, sub->n);
    b->oom |= sub->oom;
    sub->n = 0;
}

static uint64_t process_uuid(size_t p)
{
    return 0x7061636572000000ull + p + 1; /* "pacer" */
}

static uint64_t track_uuid(size_t t)
{
    return 0x7061636572800000ull + t + 1;
}

/* Writes one packet (the content of b as TracePacket) to out. */
static int emit(pbuf *b, pbuf *packet, FILE *out)
{
    pbuf frame = {0};
    pfield_msg(&frame, 1, packet);
    int r = frame.oom || b->oom ? -ENOMEM : fwrite(frame.p, 1, frame.n, out) == frame.n ? 0 : -EIO;
    free(frame.p);
    return r;
}

static int slice_event(const timeline *tl, size_t i, bool begin, int64_t t0, pbuf *pk, pbuf *ev, pbuf *an, FILE *out)
{
    const tl_slice *s = &tl->slices[i];
    pfield_varint(pk, 8, (uint64_t)((begin ? s->start_ns : s->end_ns) - t0));
    pfield_varint(pk, 10, s->track + 1);
    pfield_varint(ev, 9, begin ? 1 : 2);
    pfield_varint(ev, 11, track_uuid(s->track));
    if (begin) {
        pfield_str(ev, 22, s->category);
        pfield_str(ev, 23, s->name);
        for (size_t a = 0; a < s->n_args; a++) {
            const tl_arg *g = &s->args[a];
            pfield_str(an, 10, g->key);
            if (g->type == 's') {
                pfield_str(an, 6, g->s);
            } else if (g->type == 'i') {
                pfield_varint(an, 4, (uint64_t)g->i);
            } else {
                uint64_t bits;
                memcpy(&bits, &g->d, 8);
                pkey(an, 5, 1);
                uint8_t le[8];
                for (int k = 0; k < 8; k++)
                    le[k] = (uint8_t)(bits >> (8 * k));
                pput(an, le, 8);
            }
            pfield_msg(ev, 4, an);
        }
    }
    pfield_msg(pk, 11, ev);
    return emit(pk, pk, out);
}

int timeline_write_perfetto(const timeline *tl, FILE *out)
{
    int64_t t0 = origin(tl);
    pbuf pk = {0}, td = {0}, sub = {0}, ev = {0}, an = {0};
    int r = 0;
    for (size_t p = 0; p < tl->n_processes && r == 0; p++) {
        pfield_varint(&td, 1, process_uuid(p));
        pfield_varint(&sub, 1, (uint64_t)(p + 1));
        pfield_str(&sub, 6, tl->processes[p].name);
        pfield_msg(&td, 3, &sub);
        pfield_varint(&td, 11, 3); /* children in sibling_order_rank order */
        pfield_varint(&pk, 10, 0x10000 + p);
        pfield_msg(&pk, 60, &td);
        r = emit(&pk, &pk, out);
    }
    size_t i = 0;
    for (size_t t = 0; t < tl->n_tracks && r == 0; t++) {
        pfield_varint(&td, 1, track_uuid(t));
        pfield_str(&td, 2, tl->tracks[t].name);
        pfield_varint(&td, 5, process_uuid(tl->tracks[t].process));
        pfield_varint(&td, 12, (uint64_t)tl->tracks[t].sort * 100000 + t);
        pfield_varint(&pk, 10, t + 1);
        pfield_varint(&pk, 13, 1); /* SEQ_INCREMENTAL_STATE_CLEARED */
        pfield_msg(&pk, 60, &td);
        r = emit(&pk, &pk, out);
        /* the track's slices (sorted by track, then time): begin, and end
         * when the next top slice starts or the track ends */
        size_t open_top = (size_t)-1, open_child = (size_t)-1;
        for (; i < tl->n_slices && tl->slices[i].track == t && r == 0; i++) {
            const tl_slice *s = &tl->slices[i];
            if (open_child != (size_t)-1) {
                r = slice_event(tl, open_child, false, t0, &pk, &ev, &an, out);
                open_child = (size_t)-1;
            }
            if (s->depth == 0 && open_top != (size_t)-1 && r == 0) {
                r = slice_event(tl, open_top, false, t0, &pk, &ev, &an, out);
                open_top = (size_t)-1;
            }
            if (r == 0)
                r = slice_event(tl, i, true, t0, &pk, &ev, &an, out);
            if (s->depth == 0)
                open_top = i;
            else
                open_child = i;
        }
        if (open_child != (size_t)-1 && r == 0)
            r = slice_event(tl, open_child, false, t0, &pk, &ev, &an, out);
        if (open_top != (size_t)-1 && r == 0)
            r = slice_event(tl, open_top, false, t0, &pk, &ev, &an, out);
    }
    free(pk.p);
    free(td.p);
    free(sub.p);
    free(ev.p);
    free(an.p);
    return r;
}
