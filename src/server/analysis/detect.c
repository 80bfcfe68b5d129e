/* The detectors (detect.h). */
#include "detect.h"
#include "store/store_attrs.h"

#include <pacer/base/array.h>
#include <pacer/base/hash.h>
#include <pacer/base/json.h>
#include <pacer/base/utf8.h>
#include <pacer/record.h>
#include <pacer/schema.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_KEY 1200
#define MAX_STACK 16       /* frames kept of a representative stack */
#define MAX_LOAD_REQUESTS 256 /* requests of one page load looked at */
#define SESSION_BUCKETS 16384

/* A request kept for the page loads. */
typedef struct kept_request {
    char *app, *session, *method, *pattern;
    int64_t start, end; /* ns */
    double ms;
    uint64_t session_hash;
    int next; /* in its session bucket, or -1 */
} kept_request;

/* A page load of the cycle, matched at detect_flush. */
typedef struct page_load {
    char *app, *version, *session, *page;
    int64_t start, end;
} page_load;

/* The frames record being gathered from its data points. */
typedef struct frames_rec {
    bool open;
    char *key; /* session, ts, attributes */
    char *app, *version, *session, *window;
    int64_t ts;
    double frames, frozen, delay_ms, max_frame_ms, levels[5];
    double slow_phases[5]; /* slow_phases_ms, by phase_names' order */
    bool has_phases;
} frames_rec;

/* A frame's phases (the frames record's slow_phases_ms), in the agent's order. */
static const char *const phase_names[5] = {"events", "update", "layout", "paint", "present"};

struct detector {
    const ana_config *cfg;
    occ_fn emit;
    void *ctx;
    kept_request *reqs; /* a ring of DETECT_REQUESTS */
    size_t n_reqs, head;
    int64_t kept_rowid; /* the last request row kept: a cycle read again (its write failed) keeps none twice */
    page_load *loads;
    size_t n_loads, cap_loads;
    frames_rec fr;
};

/* ---- columns ---- */

typedef struct cols {
    int ts, app, version, session;
} cols;

static cols common_cols(enum store_table t)
{
    return (cols){store_layout_col(t, SRC_COMMON, PACER_COMMON_TS), store_layout_col(t, SRC_COMMON, PACER_COMMON_APP),
                  store_layout_col(t, SRC_COMMON, PACER_COMMON_VERSION), store_layout_col(t, SRC_COMMON, PACER_COMMON_SESSION)};
}

static int field(enum store_table t, long f)
{
    return store_layout_col(t, SRC_FIELD, f);
}

void detect_columns(enum store_table t, bool want[STORE_MAX_COLS])
{
    memset(want, 0, STORE_MAX_COLS * sizeof *want);
    cols c = common_cols(t);
    int list[16];
    size_t n = 0;
    list[n++] = c.ts;
    list[n++] = c.app;
    list[n++] = c.version;
    list[n++] = c.session;
    switch (t) {
    case TABLE_PAGE_LOADS:
        list[n++] = field(t, PACER_PAGE_CLASS);
        list[n++] = field(t, PACER_PAGE_STATUS);
        list[n++] = field(t, PACER_PAGE_INITIAL_DRAW_MS);
        list[n++] = field(t, PACER_PAGE_API_LOAD_MS);
        list[n++] = field(t, PACER_PAGE_FINAL_DRAW_MS);
        list[n++] = field(t, PACER_PAGE_TOTAL_MS);
        break;
    case TABLE_STARTUPS:
        list[n++] = field(t, PACER_STARTUP_KIND);
        list[n++] = field(t, PACER_STARTUP_COLD_MS);
        list[n++] = field(t, PACER_STARTUP_WARM_MS);
        list[n++] = field(t, PACER_STARTUP_OUTLIER);
        list[n++] = field(t, PACER_STARTUP_MAIN_PAGE);
        break;
    case TABLE_REQUESTS:
        list[n++] = field(t, PACER_NET_METHOD);
        list[n++] = field(t, PACER_NET_URL);
        list[n++] = field(t, PACER_NET_STATUS);
        list[n++] = field(t, PACER_NET_TOTAL_MS);
        list[n++] = field(t, PACER_NET_BYTES_RECEIVED);
        list[n++] = field(t, PACER_NET_CONTENT_TYPE);
        list[n++] = field(t, PACER_NET_ERROR);
        list[n++] = field(t, PACER_NET_PAGE);
        list[n++] = store_layout_col(t, SRC_PATTERN, -1);
        list[n++] = store_layout_col(t, SRC_FAILED, -1);
        break;
    case TABLE_LOGS:
        list[n++] = store_layout_col(t, SRC_LOG_TYPE, -1);
        list[n++] = store_layout_col(t, SRC_BODY, -1);
        break;
    case TABLE_METRIC_POINTS:
        list[n++] = store_layout_col(t, SRC_METRIC_NAME, -1);
        list[n++] = store_layout_col(t, SRC_VALUE, -1);
        list[n++] = store_layout_col(t, SRC_INT_VALUE, -1);
        list[n++] = store_layout_col(t, SRC_ATTRIBUTES, -1);
        break;
    default: break;
    }
    for (size_t i = 0; i < n; i++)
        if (list[i] >= 0)
            want[list[i]] = true;
}

/* A text column as a C string (SQLite's texts are NUL-terminated), or NULL. */
static const char *text(const store_mark_row *r, int c)
{
    return c >= 0 && r->cols[c].type == SV_TEXT ? r->cols[c].p : NULL;
}

static double num(const store_mark_row *r, int c)
{
    if (c < 0)
        return NAN;
    const store_value *v = &r->cols[c];
    return v->type == SV_REAL ? v->d : v->type == SV_INT ? (double)v->i : NAN;
}

static int64_t integer(const store_mark_row *r, int c, int64_t def)
{
    return c >= 0 && r->cols[c].type == SV_INT ? r->cols[c].i : def;
}

/* ---- helpers ---- */

detector *detect_new(const ana_config *cfg, occ_fn emit, void *ctx)
{
    detector *d = calloc(1, sizeof *d);
    if (d)
        *d = (detector){.cfg = cfg, .emit = emit, .ctx = ctx, .reqs = calloc(DETECT_REQUESTS, sizeof *d->reqs)};
    if (d && !d->reqs) {
        free(d);
        return NULL;
    }
    return d; /* NULL when out of memory */
}

static void request_free(kept_request *q)
{
    free(q->app);
    free(q->session);
    free(q->method);
    free(q->pattern);
    memset(q, 0, sizeof *q);
}

static void frames_free(frames_rec *f)
{
    free(f->key);
    free(f->app);
    free(f->version);
    free(f->session);
    free(f->window);
    memset(f, 0, sizeof *f);
}

void detect_free(detector *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < DETECT_REQUESTS; i++)
        request_free(&d->reqs[i]);
    free(d->reqs);
    for (size_t i = 0; i < d->n_loads; i++) {
        free(d->loads[i].app);
        free(d->loads[i].version);
        free(d->loads[i].session);
        free(d->loads[i].page);
    }
    free(d->loads);
    frames_free(&d->fr);
    free(d);
}

static void example_common(jbuf *b, const char *session, const char *version, int64_t ts)
{
    jbuf_open(b, '{');
    if (session)
        jbuf_kv_str(b, "session", session);
    jbuf_kv_str(b, "version", version);
    jbuf_kv_i64(b, "ts", ts);
}

/* Emits o with b's text as its example (b closed and freed). */
static void emit_with(detector *d, occ *o, jbuf *b)
{
    jbuf_close(b, '}');
    o->example = b->failed ? NULL : b->data;
    d->emit(d->ctx, o);
    jbuf_free(b);
}

static occ base_occ(const store_mark_row *r, cols c, const char *kind, const char *key)
{
    const char *version = text(r, c.version);
    return (occ){.app = text(r, c.app), .version = version ? version : "unknown", .session = text(r, c.session),
                 .kind = kind, .key = key, .ts = integer(r, c.ts, 0), .total = 1, .value = NAN};
}

static bool has(double x)
{
    return !isnan(x);
}

/* ---- page loads and start-ups ---- */

static void slow(detector *d, const store_mark_row *r, cols c, const char *kind, const char *key, double v, double thr,
                 const char *page, const char *metric)
{
    if (!has(v))
        return;
    occ o = base_occ(r, c, kind, key);
    o.value = v;
    if (v >= thr) {
        o.count = 1;
        o.lost_ms = v - thr;
        o.affected = true;
        o.page = page;
        jbuf b;
        jbuf_init(&b);
        example_common(&b, o.session, o.version, o.ts);
        if (page)
            jbuf_kv_str(&b, "page", page);
        jbuf_kv_str(&b, "metric", metric);
        jbuf_kv_double(&b, "value_ms", v);
        jbuf_kv_double(&b, "threshold_ms", thr);
        o.example_value = v;
        emit_with(d, &o, &b);
        return;
    }
    d->emit(d->ctx, &o);
}

static void add_load(detector *d, const char *app, const char *version, const char *session, const char *page,
                     int64_t start, int64_t end)
{
    if (!ARRAY_GROW(d->loads, d->cap_loads, d->n_loads + 1, 256))
        return;
    page_load *l = &d->loads[d->n_loads];
    *l = (page_load){strdup(app), strdup(version), strdup(session), strdup(page), start, end};
    if (!l->app || !l->version || !l->session || !l->page) {
        free(l->app);
        free(l->version);
        free(l->session);
        free(l->page);
        return;
    }
    d->n_loads++;
}

static void page_row(detector *d, const store_mark_row *r)
{
    enum store_table t = TABLE_PAGE_LOADS;
    cols c = common_cols(t);
    const char *page = text(r, field(t, PACER_PAGE_CLASS)), *status = text(r, field(t, PACER_PAGE_STATUS));
    if (!page || !text(r, c.app) || (status && strcmp(status, "never_shown") == 0))
        return;
    const ana_thresholds *th = analysis_config_app(d->cfg, text(r, c.app));
    double total = num(r, field(t, PACER_PAGE_TOTAL_MS)), initial = num(r, field(t, PACER_PAGE_INITIAL_DRAW_MS));
    char key[MAX_KEY];
    snprintf(key, sizeof key, "%s total_ms", page);
    slow(d, r, c, "slow_page", key, total, th->slow_page_total_ms, page, "total_ms");
    snprintf(key, sizeof key, "%s initial_draw_ms", page);
    slow(d, r, c, "slow_page", key, initial, th->slow_page_initial_ms, page, "initial_draw_ms");
    const char *session = text(r, c.session);
    if (session && has(total)) {
        const char *version = text(r, c.version);
        int64_t ts = integer(r, c.ts, 0);
        add_load(d, text(r, c.app), version ? version : "unknown", session, page, ts,
                 ts + (int64_t)(total * 1e6) + 1000000);
    }
}

static void startup_row(detector *d, const store_mark_row *r)
{
    enum store_table t = TABLE_STARTUPS;
    cols c = common_cols(t);
    const char *kind = text(r, field(t, PACER_STARTUP_KIND));
    if (!kind || !text(r, c.app) || integer(r, field(t, PACER_STARTUP_OUTLIER), 0))
        return;
    const ana_thresholds *th = analysis_config_app(d->cfg, text(r, c.app));
    if (strcmp(kind, "cold") == 0)
        slow(d, r, c, "slow_startup", "cold", num(r, field(t, PACER_STARTUP_COLD_MS)), th->slow_cold_ms,
             text(r, field(t, PACER_STARTUP_MAIN_PAGE)), "cold_ms");
    else if (strcmp(kind, "warm") == 0)
        slow(d, r, c, "slow_startup", "warm", num(r, field(t, PACER_STARTUP_WARM_MS)), th->slow_warm_ms, NULL,
             "warm_ms");
}

/* ---- requests ---- */

static uint64_t session_hash(const char *app, const char *session)
{
    uint64_t h = fnv1a64(FNV1A64_INIT, app, strlen(app) + 1);
    return fnv1a64(h, session, strlen(session));
}

static void keep_request(detector *d, const char *app, const char *session, const char *method, const char *pattern,
                         int64_t end, double ms)
{
    if (!app || !session || !method || !pattern || !has(ms))
        return;
    size_t slot = (d->head + d->n_reqs) % DETECT_REQUESTS;
    if (d->n_reqs == DETECT_REQUESTS) {
        slot = d->head;
        d->head = (d->head + 1) % DETECT_REQUESTS;
    } else {
        d->n_reqs++;
    }
    kept_request *q = &d->reqs[slot];
    request_free(q);
    *q = (kept_request){strdup(app), strdup(session), strdup(method), strdup(pattern), end - (int64_t)(ms * 1e6),
                        end, ms, session_hash(app, session), -1};
}

static void request_row(detector *d, const store_mark_row *r, bool remember_only)
{
    enum store_table t = TABLE_REQUESTS;
    cols c = common_cols(t);
    const char *app = text(r, c.app), *method = text(r, field(t, PACER_NET_METHOD));
    const char *pattern = text(r, store_layout_col(t, SRC_PATTERN, -1));
    double ms = num(r, field(t, PACER_NET_TOTAL_MS));
    if (!app || !method || !pattern)
        return;
    if (r->mark > d->kept_rowid) {
        keep_request(d, app, text(r, c.session), method, pattern, integer(r, c.ts, 0), ms);
        d->kept_rowid = r->mark;
    }
    if (remember_only)
        return;
    const ana_thresholds *th = analysis_config_app(d->cfg, app);
    char key[MAX_KEY];
    snprintf(key, sizeof key, "%s %s", method, pattern);
    const char *page = text(r, field(t, PACER_NET_PAGE)), *error = text(r, field(t, PACER_NET_ERROR));
    const char *url = text(r, field(t, PACER_NET_URL)), *ctype = text(r, field(t, PACER_NET_CONTENT_TYPE));
    int64_t status = integer(r, field(t, PACER_NET_STATUS), 0);
    double bytes = num(r, field(t, PACER_NET_BYTES_RECEIVED));
    bool failed = integer(r, store_layout_col(t, SRC_FAILED, -1), 0) != 0;

    /* the request's own figures, for the examples */
#define REQUEST_EXAMPLE(b, o)                                                                                        \
    do {                                                                                                             \
        example_common(&b, (o).session, (o).version, (o).ts);                                                        \
        jbuf_kv_str(&b, "method", method);                                                                           \
        if (url)                                                                                                     \
            jbuf_kv_str(&b, "url", url);                                                                             \
        jbuf_kv_i64(&b, "status", status);                                                                           \
        if (has(ms))                                                                                                 \
            jbuf_kv_double(&b, "total_ms", ms);                                                                      \
        if (has(bytes))                                                                                              \
            jbuf_kv_i64(&b, "bytes_received", (int64_t)bytes);                                                       \
        if (ctype)                                                                                                   \
            jbuf_kv_str(&b, "content_type", ctype);                                                                  \
        if (error)                                                                                                   \
            jbuf_kv_str(&b, "error", error);                                                                         \
        if (page)                                                                                                    \
            jbuf_kv_str(&b, "page", page);                                                                           \
    } while (0)

    occ o = base_occ(r, c, "net_error", key);
    jbuf b;
    if (failed) {
        char outcome[128];
        if (status >= 400)
            snprintf(outcome, sizeof outcome, "HTTP %lld", (long long)status);
        else
            snprintf(outcome, sizeof outcome, "transport failure%s%.80s", error ? ": " : "", error ? error : "");
        o.count = 1;
        o.affected = true;
        o.lost_ms = has(ms) ? ms : 0;
        o.status = outcome;
        o.page = page;
        jbuf_init(&b);
        REQUEST_EXAMPLE(b, o);
        o.example_value = has(ms) ? ms : 0;
        emit_with(d, &o, &b);
    } else {
        d->emit(d->ctx, &o);
    }

    o = base_occ(r, c, "slow_request", key);
    o.value = ms;
    if (has(ms) && ms >= th->slow_request_ms) {
        o.count = 1;
        o.affected = true;
        o.lost_ms = ms - th->slow_request_ms;
        o.page = page;
        jbuf_init(&b);
        REQUEST_EXAMPLE(b, o);
        o.example_value = ms;
        emit_with(d, &o, &b);
    } else if (has(ms)) {
        d->emit(d->ctx, &o);
    }

    bool image = ctype && strncasecmp(ctype, "image/", 6) == 0;
    double limit = image ? th->large_image_bytes : th->large_payload_bytes;
    if (has(bytes) && bytes > limit) {
        o = base_occ(r, c, image ? "large_image" : "large_payload", key);
        o.count = 1;
        o.affected = true;
        o.value = bytes;
        /* the share of the transfer spent on the bytes over the limit */
        o.lost_ms = has(ms) ? ms * (bytes - limit) / bytes : 0;
        o.page = page;
        jbuf_init(&b);
        REQUEST_EXAMPLE(b, o);
        o.example_value = bytes;
        emit_with(d, &o, &b);
    }
#undef REQUEST_EXAMPLE
}

/* ---- jank and leaks ---- */

static void stack_json(jbuf *b, const pacer_record *r, unsigned field_index, const char **ret_function,
                       const char **ret_module)
{
    jbuf_key(b, "stack");
    jbuf_open(b, '[');
    size_t n = 0;
    for (const pacer_record *f = pacer_record_child(r, field_index); f && n < MAX_STACK; f = pacer_record_next(f), n++) {
        jbuf_open(b, '{');
        const char *fn = pacer_record_str(f, PACER_STACK_FUNCTION), *mod = pacer_record_str(f, PACER_STACK_MODULE);
        bool in_app = pacer_record_has(f, PACER_STACK_IN_APP) && pacer_record_int(f, PACER_STACK_IN_APP);
        if (fn)
            jbuf_kv_str(b, "function", fn);
        if (mod)
            jbuf_kv_str(b, "module", mod);
        if (pacer_record_str(f, PACER_STACK_FILE))
            jbuf_kv_str(b, "file", pacer_record_str(f, PACER_STACK_FILE));
        if (pacer_record_has(f, PACER_STACK_LINE))
            jbuf_kv_i64(b, "line", pacer_record_int(f, PACER_STACK_LINE));
        jbuf_kv_bool(b, "in_app", in_app);
        jbuf_close(b, '}');
        if (in_app && fn && ret_function && !*ret_function) {
            *ret_function = fn;
            *ret_module = mod;
        }
    }
    jbuf_close(b, ']');
}

#define PROFILE_TOP 5
#define PROFILE_EXAMPLE_MAX (16 * 1024)

#define PROFILE_HINTS 64    /* frames of a jank's stack looked up for its profile's */
#define PROFILE_NAMES 64    /* distinct frames (and frame → leaf pairs) of one profile counted */

typedef struct prof_count {
    char name[128];
    char leaf[128]; /* pairs: the leaf under name */
    int64_t n;
} prof_count;

/* Adds n to (name, leaf) in list (*n_list of at most PROFILE_NAMES);
 * leaf NULL for a frame's own count. */
static void prof_add(prof_count *list, size_t *n_list, const char *name, size_t len, const char *leaf,
                     size_t leaf_len, int64_t n)
{
    char nm[128], lf[128] = "";
    utf8_copy(nm, sizeof nm, name, len);
    if (leaf)
        utf8_copy(lf, sizeof lf, leaf, leaf_len);
    size_t k = 0;
    while (k < *n_list && (strcmp(list[k].name, nm) != 0 || strcmp(list[k].leaf, lf) != 0))
        k++;
    if (k == *n_list) {
        if (*n_list == PROFILE_NAMES)
            return;
        memcpy(list[k].name, nm, sizeof nm);
        memcpy(list[k].leaf, lf, sizeof lf);
        list[k].n = 0;
        (*n_list)++;
    }
    list[k].n += n;
}

/* The jank's stack as hints for its profile's frames (profile_frames.h):
 * each named frame's function cut at '.' or '@', as the profile's are. */
static size_t profile_hints(const pacer_record *rec, profile_frames_hint *out)
{
    size_t n = 0;
    for (const pacer_record *f = pacer_record_child(rec, PACER_JANK_STACK); f && n < PROFILE_HINTS;
         f = pacer_record_next(f)) {
        const char *fn = pacer_record_str(f, PACER_STACK_FUNCTION);
        if (!fn || !*fn || (fn[0] == '0' && fn[1] == 'x'))
            continue;
        out[n++] = (profile_frames_hint){.function = fn,
                                         .len = strcspn(fn, ".@"),
                                         .module = pacer_record_str(f, PACER_STACK_MODULE),
                                         .in_app = pacer_record_has(f, PACER_STACK_IN_APP) &&
                                                   pacer_record_int(f, PACER_STACK_IN_APP)};
    }
    return n;
}

/* The profile of a jank (folded stacks, "f;g;h COUNT" per line): its
 * samples, the frames its lines are charged to with the most samples
 * (profile_top: the innermost frame of each line not in a system or
 * toolkit library, profile_frames.h; with the leaf most of them ended in
 * when that is another frame), and the lines themselves, whole lines up
 * to PROFILE_EXAMPLE_MAX (profile), into the example. */
static void profile_json(jbuf *b, const pacer_record *rec, const profile_frames_hint *hints, size_t n_hints)
{
    const char *text = pacer_record_str(rec, PACER_JANK_PROFILE);
    if (!text || !*text)
        return;
    if (pacer_record_has(rec, PACER_JANK_PROFILE_SAMPLES))
        jbuf_kv_i64(b, "profile_samples", pacer_record_int(rec, PACER_JANK_PROFILE_SAMPLES));
    prof_count top[PROFILE_NAMES], pairs[PROFILE_NAMES];
    size_t n_top = 0, n_pairs = 0, cut = 0;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        profile_frames_line pl;
        if (profile_frames_read(line, len, hints, n_hints, &pl)) {
            prof_add(top, &n_top, pl.frame, pl.frame_len, NULL, 0, pl.count);
            if (pl.leaf != pl.frame)
                prof_add(pairs, &n_pairs, pl.frame, pl.frame_len, pl.leaf, pl.leaf_len, pl.count);
        }
        size_t upto = (size_t)(line - text) + len;
        if (upto <= PROFILE_EXAMPLE_MAX)
            cut = upto;
        line = end ? end + 1 : line + len;
    }
    jbuf_key(b, "profile_top");
    jbuf_open(b, '[');
    for (size_t shown = 0; shown < PROFILE_TOP; shown++) {
        size_t best = n_top;
        for (size_t k = 0; k < n_top; k++)
            if (top[k].n > 0 && (best == n_top || top[k].n > top[best].n))
                best = k;
        if (best == n_top)
            break;
        jbuf_open(b, '{');
        jbuf_kv_str(b, "function", top[best].name);
        jbuf_kv_i64(b, "samples", top[best].n);
        /* where it was when sampled, most often, when not in itself */
        size_t leaf = n_pairs;
        for (size_t k = 0; k < n_pairs; k++)
            if (strcmp(pairs[k].name, top[best].name) == 0 && (leaf == n_pairs || pairs[k].n > pairs[leaf].n))
                leaf = k;
        if (leaf < n_pairs) {
            jbuf_kv_str(b, "leaf", pairs[leaf].leaf);
            jbuf_kv_i64(b, "leaf_samples", pairs[leaf].n);
        }
        jbuf_close(b, '}');
        top[best].n = -top[best].n; /* shown */
    }
    jbuf_close(b, ']');
    char *kept = strndup(text, cut);
    if (kept) {
        jbuf_kv_str(b, "profile", kept);
        free(kept);
    }
}

static void jank_row(detector *d, const store_mark_row *r, const pacer_record *rec)
{
    cols c = common_cols(TABLE_LOGS);
    const char *kind = pacer_record_str(rec, PACER_JANK_KIND);
    if (!kind || (strcmp(kind, "jank") != 0 && strcmp(kind, "hang") != 0) || !pacer_record_has(rec, PACER_JANK_DURATION_MS))
        return;
    double ms = pacer_record_ms(rec, PACER_JANK_DURATION_MS);
    const char *fp = pacer_record_str(rec, PACER_JANK_FINGERPRINT), *page = pacer_record_str(rec, PACER_JANK_PAGE);
    int64_t fpv = pacer_record_has(rec, PACER_JANK_FINGERPRINT_VERSION)
                      ? pacer_record_int(rec, PACER_JANK_FINGERPRINT_VERSION) : 1;
    char key[MAX_KEY], shown[64];
    if (fp) {
        snprintf(key, sizeof key, "v%lld:%s", (long long)fpv, fp);
        snprintf(shown, sizeof shown, "%s", fp);
    } else {
        snprintf(key, sizeof key, "nostack:%s", page ? page : "(no page)");
    }
    occ o = base_occ(r, c, kind, key);
    o.fingerprint = fp ? shown : NULL;
    o.count = 1;
    o.value = ms;
    o.lost_ms = ms; /* the main loop answered nothing meanwhile */
    o.affected = true;
    o.page = page;
    jbuf b;
    jbuf_init(&b);
    example_common(&b, o.session, o.version, o.ts);
    jbuf_kv_double(&b, "duration_ms", ms);
    if (page)
        jbuf_kv_str(&b, "page", page);
    if (pacer_record_str(rec, PACER_JANK_STACK_METHOD))
        jbuf_kv_str(&b, "stack_method", pacer_record_str(rec, PACER_JANK_STACK_METHOD));
    const char *fn = NULL, *mod = NULL;
    stack_json(&b, rec, PACER_JANK_STACK, &fn, &mod);
    if (fn)
        jbuf_kv_str(&b, "function", fn);
    if (mod)
        jbuf_kv_str(&b, "module", mod);
    profile_frames_hint hints[PROFILE_HINTS];
    size_t n_hints = profile_hints(rec, hints);
    profile_json(&b, rec, hints, n_hints);
    o.profile = pacer_record_str(rec, PACER_JANK_PROFILE);
    o.profile_hints = hints;
    o.n_profile_hints = n_hints;
    o.example_value = ms;
    emit_with(d, &o, &b);
}

static void leak_row(detector *d, const store_mark_row *r, const pacer_record *rec)
{
    cols c = common_cols(TABLE_LOGS);
    const char *sig = pacer_record_str(rec, PACER_LEAK_SIGNATURE), *origin = pacer_record_str(rec, PACER_LEAK_ORIGIN);
    const char *kind = pacer_record_str(rec, PACER_LEAK_KIND), *page = pacer_record_str(rec, PACER_LEAK_PAGE);
    if (!sig || !kind || (origin && strcmp(origin, "library") == 0))
        return; /* a known leak of a library is not the app's to fix */
    occ o = base_occ(r, c, "leak", sig);
    o.fingerprint = sig;
    o.affected = true;
    o.page = page;
    bool native = strcmp(kind, "native") == 0;
    int64_t n = native ? pacer_record_int(rec, PACER_LEAK_COUNT) : pacer_record_int(rec, PACER_LEAK_RETAINED);
    o.count = 1;
    o.bytes = native ? (double)pacer_record_int(rec, PACER_LEAK_BYTES) : 0;
    o.value = native ? o.bytes : (double)n;
    jbuf b;
    jbuf_init(&b);
    example_common(&b, o.session, o.version, o.ts);
    jbuf_kv_str(&b, "kind", kind);
    if (origin)
        jbuf_kv_str(&b, "origin", origin);
    if (page)
        jbuf_kv_str(&b, "page", page);
    if (native) {
        jbuf_kv_i64(&b, "count", n);
        jbuf_kv_i64(&b, "bytes", (int64_t)o.bytes);
        const char *fn = NULL, *mod = NULL;
        stack_json(&b, rec, PACER_LEAK_STACK, &fn, &mod);
        if (fn)
            jbuf_kv_str(&b, "function", fn);
    } else {
        jbuf_kv_i64(&b, "retained", n);
        jbuf_key(&b, "types");
        jbuf_open(&b, '[');
        size_t k = 0;
        for (const pacer_record *e = pacer_record_child(rec, PACER_LEAK_TYPES); e && k < 16; e = pacer_record_next(e), k++) {
            jbuf_open(&b, '{');
            if (pacer_record_str(e, PACER_LEAKTYPE_TYPE))
                jbuf_kv_str(&b, "type", pacer_record_str(e, PACER_LEAKTYPE_TYPE));
            jbuf_kv_i64(&b, "count", pacer_record_int(e, PACER_LEAKTYPE_COUNT));
            jbuf_close(&b, '}');
        }
        jbuf_close(&b, ']');
    }
    o.example_value = o.value;
    emit_with(d, &o, &b);
}

static void log_row(detector *d, const store_mark_row *r)
{
    const char *body = text(r, store_layout_col(TABLE_LOGS, SRC_BODY, -1));
    if (!body || !text(r, common_cols(TABLE_LOGS).app))
        return;
    pacer_record *rec;
    if (pacer_record_parse(body, strlen(body), &rec, NULL, 0) < 0)
        return; /* not a record line (another sender's log with the same type) */
    const pacer_record_type *rt = pacer_record_type_of(rec);
    if (rt && rt->id == PACER_RECORD_JANK)
        jank_row(d, r, rec);
    else if (rt && rt->id == PACER_RECORD_LEAK)
        leak_row(d, r, rec);
    pacer_record_free(rec);
}

/* ---- frames ---- */

typedef struct attr_find {
    const char *key;
    char value[256];
} attr_find;

static bool on_attr(void *ctx, const store_attr *a)
{
    attr_find *f = ctx;
    if (a->type != SA_STRING || !a->len || a->key_len != strlen(f->key) || memcmp(a->key, f->key, a->key_len) != 0)
        return true;
    utf8_copy(f->value, sizeof f->value, a->text, a->len);
    return false;
}

/* The first non-empty string value of attribute `key` in an OTLP KeyValue
 * list (JSON), into out. */
static bool attr_string(const char *json, const char *key, char *out, size_t size)
{
    attr_find f = {key, ""};
    if (json)
        store_attrs_each(json, strlen(json), on_attr, &f);
    if (!f.value[0])
        return false;
    snprintf(out, size, "%s", f.value);
    return true;
}

static void frames_emit(detector *d)
{
    frames_rec *f = &d->fr;
    if (!f->open || !f->window || !f->app)
        goto out;
    char key[MAX_KEY];
    snprintf(key, sizeof key, "%s", f->window);
    occ o = {.app = f->app, .version = f->version ? f->version : "unknown", .session = f->session,
             .kind = "frozen_frames", .key = key, .ts = f->ts, .value = NAN};
    o.total = (int64_t)f->frames;
    if (f->frozen > 0) {
        o.count = (int64_t)f->frozen;
        o.lost_ms = f->delay_ms;
        o.value = f->max_frame_ms;
        o.affected = true;
        o.page = f->window;
        for (int k = 0; k < 5; k++)
            o.levels[k] = (int64_t)f->levels[k];
        jbuf b;
        jbuf_init(&b);
        example_common(&b, o.session, o.version, o.ts);
        jbuf_kv_str(&b, "window", f->window);
        jbuf_kv_i64(&b, "frames", (int64_t)f->frames);
        jbuf_kv_i64(&b, "frozen", (int64_t)f->frozen);
        jbuf_kv_double(&b, "max_frame_ms", f->max_frame_ms);
        jbuf_kv_double(&b, "delay_ms", f->delay_ms);
        if (f->has_phases) {
            /* where the slow frames' time went, and the phase that took most */
            int dom = 0;
            jbuf_key(&b, "slow_phases_ms");
            jbuf_open(&b, '{');
            for (int k = 0; k < 5; k++) {
                jbuf_kv_double(&b, phase_names[k], f->slow_phases[k]);
                if (f->slow_phases[k] > f->slow_phases[dom])
                    dom = k;
            }
            jbuf_close(&b, '}');
            if (f->slow_phases[dom] > 0)
                jbuf_kv_str(&b, "dominant_phase", phase_names[dom]);
        }
        o.example_value = f->max_frame_ms;
        emit_with(d, &o, &b);
    } else if (o.total > 0) {
        d->emit(d->ctx, &o);
    }
out:
    frames_free(f);
}

static void point_row(detector *d, const store_mark_row *r)
{
    enum store_table t = TABLE_METRIC_POINTS;
    cols c = common_cols(t);
    const char *name = text(r, store_layout_col(t, SRC_METRIC_NAME, -1));
    const char *attrs = text(r, store_layout_col(t, SRC_ATTRIBUTES, -1));
    const char *app = text(r, c.app), *session = text(r, c.session), *version = text(r, c.version);
    if (!name || !app)
        return;
    int64_t ts = integer(r, c.ts, 0);
    char key[2048];
    snprintf(key, sizeof key, "%s\n%s\n%lld\n%s", app, session ? session : "", (long long)ts, attrs ? attrs : "");
    frames_rec *f = &d->fr;
    if (f->open && strcmp(f->key, key) != 0)
        frames_emit(d);
    if (!f->open) {
        char window[256];
        f->open = true;
        f->key = strdup(key);
        f->app = strdup(app);
        f->version = version ? strdup(version) : NULL;
        f->session = session ? strdup(session) : NULL;
        f->window = attr_string(attrs, "pacer.window", window, sizeof window) ? strdup(window) : NULL;
        f->ts = ts;
        if (!f->key || !f->app) {
            frames_free(f);
            return;
        }
    }
    double v = num(r, store_layout_col(t, SRC_INT_VALUE, -1));
    if (!has(v))
        v = num(r, store_layout_col(t, SRC_VALUE, -1));
    if (!has(v))
        return;
    static const char *const levels[5] = {"best", "normal", "middle", "high", "frozen"};
    const char *m = name + strlen("pacer.frames.");
    if (strcmp(m, "frames") == 0)
        f->frames = v;
    else if (strcmp(m, "frozen") == 0)
        f->frozen = v;
    else if (strcmp(m, "delay_ms") == 0)
        f->delay_ms = v;
    else if (strcmp(m, "max_frame_ms") == 0)
        f->max_frame_ms = v;
    else if (strncmp(m, "slow_phases_ms.", 15) == 0) {
        for (int k = 0; k < 5; k++)
            if (strcmp(m + 15, phase_names[k]) == 0) {
                f->slow_phases[k] = v;
                f->has_phases = true;
            }
    } else
        for (int k = 0; k < 5; k++)
            if (strncmp(m, "levels.", 7) == 0 && strcmp(m + 7, levels[k]) == 0)
                f->levels[k] = v;
}

void detect_row(detector *d, const store_mark_row *r)
{
    switch (r->table) {
    case TABLE_PAGE_LOADS: page_row(d, r); break;
    case TABLE_STARTUPS: startup_row(d, r); break;
    case TABLE_REQUESTS: request_row(d, r, false); break;
    case TABLE_LOGS: log_row(d, r); break;
    case TABLE_METRIC_POINTS: point_row(d, r); break;
    default: break;
    }
}

void detect_remember(detector *d, const store_mark_row *r)
{
    if (r->table == TABLE_REQUESTS)
        request_row(d, r, true);
}

/* ---- request patterns inside one page load ---- */

static int cmp_start(const void *a, const void *b)
{
    const kept_request *x = *(kept_request *const *)a, *y = *(kept_request *const *)b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void load_patterns(detector *d, const page_load *l, kept_request **in, size_t n)
{
    const ana_thresholds *th = analysis_config_app(d->cfg, l->app);
    qsort(in, n, sizeof *in, cmp_start);
    /* n_plus_one: one (method, pattern) requested n-plus-one-count times or more */
    bool *done = calloc(n, sizeof *done);
    if (!done)
        return;
    for (size_t i = 0; i < n; i++) {
        if (done[i])
            continue;
        size_t same = 0;
        int64_t first = in[i]->start, last = in[i]->end;
        double longest = 0;
        for (size_t k = i; k < n; k++)
            if (!done[k] && strcmp(in[k]->method, in[i]->method) == 0 && strcmp(in[k]->pattern, in[i]->pattern) == 0) {
                done[k] = true;
                same++;
                if (in[k]->end > last)
                    last = in[k]->end;
                if (in[k]->ms > longest)
                    longest = in[k]->ms;
            }
        char key[MAX_KEY];
        snprintf(key, sizeof key, "%s %s %s", l->page, in[i]->method, in[i]->pattern);
        occ o = {.app = l->app, .version = l->version, .session = l->session, .kind = "n_plus_one", .key = key,
                 .ts = l->start, .total = 1, .value = (double)same};
        if ((double)same < th->n_plus_one_count) {
            d->emit(d->ctx, &o); /* a load that requested it fewer times */
            continue;
        }
        double span = (double)(last - first) / 1e6;
        o.count = 1;
        o.affected = true;
        o.page = l->page;
        /* what one request for all of them would have saved: the time the
         * load spent on them beyond the longest one */
        o.lost_ms = span > longest ? span - longest : 0;
        jbuf b;
        jbuf_init(&b);
        example_common(&b, o.session, o.version, o.ts);
        jbuf_kv_str(&b, "page", l->page);
        jbuf_kv_str(&b, "method", in[i]->method);
        jbuf_kv_str(&b, "pattern", in[i]->pattern);
        jbuf_kv_i64(&b, "requests", (int64_t)same);
        jbuf_kv_double(&b, "span_ms", span);
        jbuf_kv_double(&b, "longest_ms", longest);
        jbuf_kv_double(&b, "saving_ms", o.lost_ms);
        o.example_value = (double)same;
        emit_with(d, &o, &b);
    }
    free(done);

    /* serial_requests: the longest chain of requests of distinct patterns,
     * each at least serial-min-ms, each starting after the previous ended
     * (the earliest-ending first: the most that fit one after another) */
    kept_request *chain[MAX_LOAD_REQUESTS];
    size_t nc = 0;
    int64_t free_at = INT64_MIN;
    for (;;) {
        kept_request *best = NULL;
        for (size_t i = 0; i < n; i++) {
            kept_request *q = in[i];
            if (q->ms < th->serial_min_ms || q->start < free_at)
                continue;
            bool seen = false;
            for (size_t k = 0; k < nc && !seen; k++)
                seen = strcmp(chain[k]->pattern, q->pattern) == 0 && strcmp(chain[k]->method, q->method) == 0;
            if (!seen && (!best || q->end < best->end))
                best = q;
        }
        if (!best || nc == MAX_LOAD_REQUESTS)
            break;
        chain[nc++] = best;
        free_at = best->end;
    }
    if ((double)nc < th->serial_count)
        return;
    double sum = 0, longest = 0;
    const char *names[MAX_LOAD_REQUESTS];
    char texts[MAX_LOAD_REQUESTS][MAX_KEY / 4];
    for (size_t k = 0; k < nc; k++) {
        sum += chain[k]->ms;
        if (chain[k]->ms > longest)
            longest = chain[k]->ms;
        snprintf(texts[k], sizeof texts[k], "%s %s", chain[k]->method, chain[k]->pattern);
        names[k] = texts[k];
    }
    qsort(names, nc, sizeof *names, cmp_str);
    char key[MAX_KEY];
    size_t o_len = (size_t)snprintf(key, sizeof key, "%s ", l->page);
    for (size_t k = 0; k < nc && o_len < sizeof key; k++)
        o_len += (size_t)snprintf(key + o_len, sizeof key - o_len, "%s%s", k ? ", " : "", names[k]);
    occ o = {.app = l->app, .version = l->version, .session = l->session, .kind = "serial_requests", .key = key,
             .ts = l->start, .total = 1, .count = 1, .affected = true, .page = l->page};
    /* run together, they would have taken the longest of them */
    o.lost_ms = sum - longest;
    o.value = o.lost_ms;
    jbuf b;
    jbuf_init(&b);
    example_common(&b, o.session, o.version, o.ts);
    jbuf_kv_str(&b, "page", l->page);
    jbuf_key(&b, "requests");
    jbuf_open(&b, '[');
    for (size_t k = 0; k < nc; k++) {
        jbuf_open(&b, '{');
        jbuf_kv_str(&b, "method", chain[k]->method);
        jbuf_kv_str(&b, "pattern", chain[k]->pattern);
        jbuf_kv_double(&b, "start_ms", (double)(chain[k]->start - l->start) / 1e6);
        jbuf_kv_double(&b, "total_ms", chain[k]->ms);
        jbuf_close(&b, '}');
    }
    jbuf_close(&b, ']');
    jbuf_kv_double(&b, "serial_ms", sum);
    jbuf_kv_double(&b, "saving_ms", o.lost_ms);
    o.example_value = o.lost_ms;
    emit_with(d, &o, &b);
}

void detect_flush(detector *d)
{
    frames_emit(d);
    if (d->n_loads) {
        /* the kept requests by session */
        int *buckets = malloc(SESSION_BUCKETS * sizeof *buckets);
        if (buckets) {
            for (size_t i = 0; i < SESSION_BUCKETS; i++)
                buckets[i] = -1;
            for (size_t i = 0; i < d->n_reqs; i++) {
                size_t slot = (d->head + i) % DETECT_REQUESTS;
                kept_request *q = &d->reqs[slot];
                q->next = buckets[q->session_hash % SESSION_BUCKETS];
                buckets[q->session_hash % SESSION_BUCKETS] = (int)slot;
            }
            kept_request *in[MAX_LOAD_REQUESTS];
            for (size_t i = 0; i < d->n_loads; i++) {
                page_load *l = &d->loads[i];
                uint64_t h = session_hash(l->app, l->session);
                size_t n = 0;
                for (int k = buckets[h % SESSION_BUCKETS]; k >= 0 && n < MAX_LOAD_REQUESTS; k = d->reqs[k].next) {
                    kept_request *q = &d->reqs[k];
                    if (q->session_hash == h && q->start >= l->start && q->end <= l->end &&
                        strcmp(q->session, l->session) == 0 && strcmp(q->app, l->app) == 0)
                        in[n++] = q;
                }
                if (n)
                    load_patterns(d, l, in, n);
            }
            free(buckets);
        }
    }
    for (size_t i = 0; i < d->n_loads; i++) {
        free(d->loads[i].app);
        free(d->loads[i].version);
        free(d->loads[i].session);
        free(d->loads[i].page);
    }
    d->n_loads = 0;
}
