/* bench-upload: what the measured app spends to take its records from the
 * writer's JSON line to an OTLP request body, per record, the earlier path
 * against the present one, in the same run:
 *
 *   before  the spool keeps the JSON line; the uploader reads each line
 *           back as a record, writes the batch as OTLP JSON and converts
 *           that to protobuf (tests/unit/otlp_ref.c, the reference kept as
 *           it was, and otlp_json_to_proto);
 *   after   the writer thread encodes the typed record's OTLP item
 *           (otlp_spool_body) and the uploader puts items under their
 *           resources (otlp_request).
 *
 * Stages, each counted on its own: `encode` (the above), `gzip` of the
 * protobuf (the same bytes both ways: the bench checks), and `spool`, the
 * SQLite work of one batch (every record added, the batch read and acked)
 * in the form each path spools. The JSON line is formatted in both paths
 * (records file, log bodies) and is not counted.
 *
 * Workloads: batches of N records (default 500, the uploader's batch) of
 * one type each, with values as the model and the agent write them, and a
 * mix of all types by signal.
 *
 * Under callgrind (bench/upload/run.py), each stage runs once and is
 * dumped under its label: the instruction counts are exact and
 * repeatable. Natively it prints each
 * stage's thread CPU time per record, the median of RUNS runs.
 *
 * Usage: bench-upload [--callgrind] [N]
 */
#include "otlp.h"
#include "otlp_ref.h"
#include "record_int.h"
#include "spool.h"

#include <pacer/record.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_CALLGRIND
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_DUMP_STATS_AT(label) ((void)(label))
#endif

#define RUNS 11
#define BATCH_ID "0123456789abcdef0123456789abcdef"

static const char session[] = "6f1c2a9e40b14a3c9d2e7f8a1b3c5d7e";

static void set_common(pacer_record *r, int i)
{
    record_set_common(r, "shop", "1.4.2", session, 31337, INT64_C(1733400000000000000) + (int64_t)i * 7919003);
}

static int64_t ms(double v)
{
    return (int64_t)(v * 1e6);
}

/* ---- records as the model and the agent write them ---- */

static pacer_record *page(int i)
{
    static const char *const classes[] = {"ShopHomeWindow", "MerchantPage", "OrderListPage", "SettingsDialog"};
    pacer_record *r = pacer_record_new(PACER_RECORD_PAGE);
    set_common(r, i);
    pacer_record_set_str(r, PACER_PAGE_CLASS, classes[i % 4]);
    pacer_record_set_id(r, PACER_PAGE_INSTANCE, 0x55d4c3b2a000u + (uint64_t)i * 48);
    pacer_record_set_str(r, PACER_PAGE_KIND, i % 4 ? "page" : "window");
    pacer_record_set_str(r, PACER_PAGE_STATUS, "complete");
    if (i == 0)
        pacer_record_set_bool(r, PACER_PAGE_MAIN, true);
    pacer_record_set_ms(r, PACER_PAGE_INITIAL_DRAW_MS, ms(38.0 + i % 17) + 123457);
    pacer_record_set_ms(r, PACER_PAGE_API_LOAD_MS, ms(250.0 + i % 101) + 4021);
    pacer_record_set_ms(r, PACER_PAGE_FINAL_DRAW_MS, ms(11.0 + i % 7) + 500);
    pacer_record_set_ms(r, PACER_PAGE_TOTAL_MS, ms(310.0 + i % 113) + 77001);
    static const char *const urls[] = {"/api/config", "/api/list", "/api/merchant/{id}"};
    for (int k = 0; k < 2 + i % 2; k++) {
        pacer_record *a = pacer_record_add(r, PACER_PAGE_APIS);
        pacer_record_set_str(a, PACER_PAGE_API_URL, urls[k]);
        pacer_record_set_ms(a, PACER_PAGE_API_MS, ms(90.0 + (i * 7 + k) % 211) + 333);
        pacer_record_set_int(a, PACER_PAGE_API_STATUS, (i + k) % 29 ? 200 : 503);
    }
    return r;
}

static pacer_record *net(int i)
{
    pacer_record *r = pacer_record_new(PACER_RECORD_NET);
    char url[128];
    set_common(r, i);
    snprintf(url, sizeof url, "https://api.shop.example:8443/api/items/%d?lang=en&page=%d", 1000 + i * 13, i % 9);
    pacer_record_set_str(r, PACER_NET_LIB, i % 3 ? "soup" : "curl");
    pacer_record_set_str(r, PACER_NET_METHOD, i % 5 ? "GET" : "POST");
    pacer_record_set_str(r, PACER_NET_URL, url);
    pacer_record_set_int(r, PACER_NET_STATUS, i % 31 ? 200 : 404);
    pacer_record_set_ms(r, PACER_NET_TOTAL_MS, ms(40.0 + i % 300) + 12345);
    if (i % 4 == 0) {
        pacer_record_set_ms(r, PACER_NET_DNS_MS, ms(1.5) + i);
        pacer_record_set_ms(r, PACER_NET_CONNECT_MS, ms(3.25) + i);
        pacer_record_set_ms(r, PACER_NET_TLS_MS, ms(9.0) + i);
    } else {
        pacer_record_set_null(r, PACER_NET_DNS_MS);
        pacer_record_set_null(r, PACER_NET_CONNECT_MS);
        pacer_record_set_null(r, PACER_NET_TLS_MS);
    }
    pacer_record_set_ms(r, PACER_NET_FIRST_BYTE_MS, ms(30.0 + i % 200) + 999);
    pacer_record_set_int(r, PACER_NET_BYTES_SENT, 412 + i % 50);
    pacer_record_set_int(r, PACER_NET_BYTES_RECEIVED, 1800 + (i * 37) % 90000);
    pacer_record_set_str(r, PACER_NET_CONTENT_TYPE, "application/json; charset=utf-8");
    pacer_record_set_null(r, PACER_NET_ERROR);
    pacer_record_set_str(r, PACER_NET_PAGE, "OrderListPage");
    if (i % 7 == 0)
        pacer_record_add_str(r, PACER_NET_CLASSES, "slow");
    else
        pacer_record_set_empty(r, PACER_NET_CLASSES);
    return r;
}

static pacer_record *startup(int i)
{
    pacer_record *r = pacer_record_new(PACER_RECORD_STARTUP);
    set_common(r, i);
    pacer_record_set_str(r, PACER_STARTUP_KIND, "cold");
    pacer_record_set_ms(r, PACER_STARTUP_COLD_MS, ms(620.0 + i % 97) + 4567);
    pacer_record_set_ms(r, PACER_STARTUP_FIRST_SCREEN_MS, ms(210.0 + i % 31) + 891);
    pacer_record_set_ms(r, PACER_STARTUP_APP_COST_MS, ms(80.0 + i % 13) + 12);
    pacer_record_set_ms(r, PACER_STARTUP_FULL_DISPLAY_MS, ms(980.0 + i % 211) + 3);
    pacer_record_set_bool(r, PACER_STARTUP_OUTLIER, false);
    pacer_record_set_str(r, PACER_STARTUP_MAIN_PAGE, "ShopHomeWindow");
    pacer_record *ph = pacer_record_add(r, PACER_STARTUP_PHASES);
    int64_t t = INT64_C(1733400000000000000) + (int64_t)i * 7919003;
    static const unsigned phases[] = {PACER_PHASE_LAUNCH, PACER_PHASE_AGENT_INIT, PACER_PHASE_MAIN,
                                      PACER_PHASE_APP_CREATED, PACER_PHASE_FIRST_FRAME, PACER_PHASE_MAIN_FRAME,
                                      PACER_PHASE_FULL_DISPLAY};
    for (size_t k = 0; k < sizeof phases / sizeof phases[0]; k++)
        pacer_record_set_int(ph, phases[k], t + (int64_t)k * 91234567);
    return r;
}

static pacer_record *jank(int i)
{
    static const char *const fns[] = {"g_main_context_iterate", "g_main_loop_run", "gtk_widget_snapshot",
                                      "shop_list_model_sort", "compare_items", "g_utf8_collate",
                                      "gtk_list_view_update", "shop_window_refresh"};
    pacer_record *r = pacer_record_new(PACER_RECORD_JANK);
    char buf[64];
    set_common(r, i);
    pacer_record_set_str(r, PACER_JANK_KIND, i % 10 ? "jank" : "hang");
    pacer_record_set_ms(r, PACER_JANK_DURATION_MS, ms(120.0 + i % 900) + 4242);
    pacer_record_set_str(r, PACER_JANK_PAGE, "OrderListPage");
    pacer_record_set_str(r, PACER_JANK_STACK_STATUS, "captured");
    pacer_record_set_str(r, PACER_JANK_STACK_METHOD, "syscall");
    snprintf(buf, sizeof buf, "%016llx", 0x9e3779b97f4a7c15ull * (unsigned long long)(i % 23 + 1));
    pacer_record_set_str(r, PACER_JANK_FINGERPRINT, buf);
    pacer_record_set_int(r, PACER_JANK_FINGERPRINT_VERSION, 2);
    pacer_record_set_bool(r, PACER_JANK_STACK_TRUNCATED, false);
    for (int k = 0; k < 12; k++) {
        pacer_record *f = pacer_record_add(r, PACER_JANK_STACK);
        bool app = k % 3 == 1;
        snprintf(buf, sizeof buf, "0x%llx", 0x7f3a12000000ull + (unsigned long long)(k * 4099 + i % 17));
        pacer_record_set_str(f, PACER_STACK_ADDRESS, buf);
        pacer_record_set_str(f, PACER_STACK_MODULE, app ? "shop-app" : k % 2 ? "libgtk-4.so.1" : "libglib-2.0.so.0");
        snprintf(buf, sizeof buf, "0x%x", 0x1a2b0 + k * 977);
        pacer_record_set_str(f, PACER_STACK_OFFSET, buf);
        pacer_record_set_str(f, PACER_STACK_FUNCTION, fns[(k + i) % 8]);
        if (app) {
            pacer_record_set_str(f, PACER_STACK_FILE, "src/order_list.c");
            pacer_record_set_int(f, PACER_STACK_LINE, 100 + k * 11);
        }
        pacer_record_set_bool(f, PACER_STACK_IN_APP, app);
    }
    return r;
}

static pacer_record *frames(int i)
{
    pacer_record *r = pacer_record_new(PACER_RECORD_FRAMES);
    set_common(r, i);
    pacer_record_set_str(r, PACER_FRAMES_WINDOW, "ShopHomeWindow");
    pacer_record_set_id(r, PACER_FRAMES_INSTANCE, 0x55d4c3b2a000u);
    pacer_record_set_bool(r, PACER_FRAMES_FINAL, i % 8 == 7);
    pacer_record_set_int(r, PACER_FRAMES_FRAMES, 300 + i % 60);
    pacer_record_set_int(r, PACER_FRAMES_SLOW, i % 9);
    pacer_record_set_int(r, PACER_FRAMES_FROZEN, i % 50 == 0);
    pacer_record_set_int(r, PACER_FRAMES_DROPPED_FRAMES, i % 13);
    pacer_record_set_ms(r, PACER_FRAMES_DELAY_MS, ms(i % 9 * 4.1) + 17);
    pacer_record_set_ms(r, PACER_FRAMES_MAX_FRAME_MS, ms(16.0 + i % 40) + 5);
    pacer_record_set_ms(r, PACER_FRAMES_REFRESH_MS, 16666667);
    pacer_record_set_ms(r, PACER_FRAMES_SPAN_MS, ms(5000.0) + i);
    pacer_record *l = pacer_record_add(r, PACER_FRAMES_LEVELS);
    pacer_record_set_int(l, PACER_LEVEL_BEST, 290 + i % 60);
    pacer_record_set_int(l, PACER_LEVEL_NORMAL, i % 9);
    pacer_record_set_int(l, PACER_LEVEL_MIDDLE, i % 4);
    pacer_record_set_int(l, PACER_LEVEL_HIGH, 0);
    pacer_record_set_int(l, PACER_LEVEL_FROZEN, i % 50 == 0);
    return r;
}

/* ---- one workload: a batch of one signal ---- */

typedef struct workload {
    const char *name;
    pacer_signal signal;
    size_t n;
    pacer_record **recs;
    char **lines;     /* the writer's JSON lines */
    size_t line_bytes;
} workload;

static void add(workload *w, pacer_record *r)
{
    size_t len;
    w->recs = realloc(w->recs, (w->n + 1) * sizeof *w->recs);
    w->lines = realloc(w->lines, (w->n + 1) * sizeof *w->lines);
    w->recs[w->n] = r;
    w->lines[w->n] = pacer_record_format(r, &len);
    if (!w->lines[w->n])
        abort();
    w->line_bytes += len;
    w->n++;
}

static void workload_free(workload *w)
{
    for (size_t i = 0; i < w->n; i++) {
        pacer_record_free(w->recs[i]);
        free(w->lines[i]);
    }
    free(w->recs);
    free(w->lines);
}

/* What each path leaves: the request's protobuf. */
typedef struct result {
    uint8_t *pb;
    size_t len;
    size_t json_len;   /* before: the OTLP JSON written and read again */
    spool_batch batch; /* after: the spooled bodies */
} result;

static void before_encode(const workload *w, result *out)
{
    size_t jl, skipped;
    char *json = ref_otlp_encode(w->signal, w->lines, w->n, BATCH_ID, 0, &jl, &skipped);
    out->pb = json ? otlp_json_to_proto(w->signal, json, jl, &out->len) : NULL;
    out->json_len = jl;
    free(json);
}

static void after_encode(const workload *w, result *out)
{
    spool_batch *b = &out->batch;
    memset(b, 0, sizeof *b);
    b->signal = w->signal;
    b->form = SPOOL_OTLP;
    memcpy(b->id, BATCH_ID, sizeof BATCH_ID);
    b->records = malloc(w->n * sizeof *b->records);
    b->lens = malloc(w->n * sizeof *b->lens);
    pbuf body = {0};
    /* the writer thread, per record (the spool keeps a copy of the body) */
    for (size_t i = 0; i < w->n; i++) {
        if (otlp_spool_body(w->recs[i], w->lines[i], strlen(w->lines[i]), &body) < 0)
            abort();
        b->records[b->n] = malloc(body.len + 1);
        memcpy(b->records[b->n], body.p, body.len);
        b->lens[b->n++] = body.len;
    }
    pb_free(&body);
    /* the uploader thread, per batch */
    out->pb = otlp_request(b, 0, false, &out->len, NULL);
}

static size_t gzip(const result *r)
{
    size_t zl;
    uint8_t *z = otlp_gzip(r->pb, r->len, &zl);
    if (!z)
        abort();
    free(z);
    return zl;
}

/* The SQLite work of a batch in one form: every record added, the batch
 * read and acked, in a spool of its own. */
static char spool_path[64];

static void spool_stage(const workload *w, spool_form form, const result *after)
{
    spool *s;
    char *err = NULL;
    unlink(spool_path);
    if (spool_open(spool_path, 0, &s, &err) < 0) {
        fprintf(stderr, "bench-upload: %s\n", err);
        exit(1);
    }
    for (size_t i = 0; i < w->n; i++) {
        const char *body = form == SPOOL_OTLP ? after->batch.records[i] : w->lines[i];
        size_t len = form == SPOOL_OTLP ? after->batch.lens[i] : strlen(w->lines[i]);
        if (spool_add(s, w->signal, form, body, len) < 0)
            abort();
    }
    spool_batch b;
    if (spool_next_batch(s, w->signal, w->n, &b) != 1 || b.n != w->n || spool_ack(s, &b) < 0)
        abort();
    spool_batch_clear(&b);
    spool_close(s);
}

static void unlink_spool(void)
{
    char p[96];
    unlink(spool_path);
    snprintf(p, sizeof p, "%s-wal", spool_path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", spool_path);
    unlink(p);
}

static double thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void result_clear(result *r)
{
    free(r->pb);
    spool_batch_clear(&r->batch);
    memset(r, 0, sizeof *r);
}

/* Starts a counted stage: what ran since the last one is dumped apart,
 * under a label run.py leaves out. (Everything is collected and stages
 * are cut by dumps: with collection toggled off, callgrind still counts
 * calls, and a dump does not reset the count of a call that cost
 * nothing, so the next stage would count it.) */
#define STAGE_BEGIN() CALLGRIND_DUMP_STATS_AT("-")

/* Runs one workload: under callgrind each stage once, dumped under
 * "<workload>/<path>/<stage>"; natively RUNS times, medians printed. */
static void run(workload *w, bool callgrind)
{
    result before = {0}, after = {0};
    before_encode(w, &before);
    after_encode(w, &after);
    if (!before.pb || !after.pb || before.len != after.len || memcmp(before.pb, after.pb, before.len) != 0) {
        fprintf(stderr, "bench-upload: %s: the two paths' requests differ\n", w->name);
        exit(1);
    }
    size_t body_bytes = 0;
    for (size_t i = 0; i < after.batch.n; i++)
        body_bytes += after.batch.lens[i];
    size_t gz = gzip(&after);
    printf("bytes %s %zu %zu %zu %zu %zu %zu\n", w->name, w->n, w->line_bytes, body_bytes, after.len, gz,
           before.json_len);
    result_clear(&before);
    result_clear(&after);

    char label[96];
    if (callgrind) {
        /* encode, gzip, spool: each path's stage between two toggles */
        for (int path = 0; path < 2; path++) {
            const char *pn = path ? "after" : "before";
            result r = {0};
            STAGE_BEGIN();
            if (path)
                after_encode(w, &r);
            else
                before_encode(w, &r);
            snprintf(label, sizeof label, "%s/%s/encode", w->name, pn);
            CALLGRIND_DUMP_STATS_AT(label);
            STAGE_BEGIN();
            gzip(&r);
            snprintf(label, sizeof label, "%s/%s/gzip", w->name, pn);
            CALLGRIND_DUMP_STATS_AT(label);
            if (!path)
                after_encode(w, &after); /* the bodies the after path spools */
            STAGE_BEGIN();
            spool_stage(w, path ? SPOOL_OTLP : SPOOL_JSON, &after);
            snprintf(label, sizeof label, "%s/%s/spool", w->name, pn);
            CALLGRIND_DUMP_STATS_AT(label);
            result_clear(&r);
        }
        result_clear(&after);
        return;
    }
    double t[2][3][RUNS];
    after_encode(w, &after);
    for (int k = 0; k < RUNS; k++) {
        for (int path = 0; path < 2; path++) {
            result r = {0};
            double t0 = thread_ns();
            if (path)
                after_encode(w, &r);
            else
                before_encode(w, &r);
            double t1 = thread_ns();
            gzip(&r);
            double t2 = thread_ns();
            spool_stage(w, path ? SPOOL_OTLP : SPOOL_JSON, &after);
            double t3 = thread_ns();
            t[path][0][k] = (t1 - t0) / (double)w->n;
            t[path][1][k] = (t2 - t1) / (double)w->n;
            t[path][2][k] = (t3 - t2) / (double)w->n;
            result_clear(&r);
        }
    }
    static const char *const stages[] = {"encode", "gzip", "spool"};
    for (int path = 0; path < 2; path++)
        for (int s = 0; s < 3; s++) {
            qsort(t[path][s], RUNS, sizeof(double), cmp_double);
            printf("cpu %s/%s/%s %.0f\n", w->name, path ? "after" : "before", stages[s], t[path][s][RUNS / 2]);
        }
    result_clear(&after);
}

int main(int argc, char **argv)
{
    bool callgrind = false;
    size_t n = 500;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--callgrind") == 0)
            callgrind = true;
        else
            n = (size_t)strtoul(argv[i], NULL, 10);
    }
    if (!n) {
        fprintf(stderr, "usage: bench-upload [--callgrind] [RECORDS]\n");
        return 2;
    }
    snprintf(spool_path, sizeof spool_path, "/tmp/pacer-bench-upload-%d.db", (int)getpid());
    static pacer_record *(*const make[])(int) = {page, net, startup, jank, frames};
    static const char *const names[] = {"page", "net", "startup", "jank", "frames"};
    for (size_t k = 0; k < 5; k++) {
        workload w = {.name = names[k]};
        for (size_t i = 0; i < n; i++)
            add(&w, make[k]((int)i));
        w.signal = otlp_signal_of(w.recs[0]);
        run(&w, callgrind);
        workload_free(&w);
    }
    /* a run's traces as the demo's are: mostly pages and their requests */
    workload mix = {.name = "traces-mix", .signal = PACER_SIGNAL_TRACES};
    for (size_t i = 0; i < n; i++)
        add(&mix, i % 3 == 2 ? page((int)i) : i == 0 ? startup(0) : net((int)i));
    run(&mix, callgrind);
    workload_free(&mix);
    unlink_spool();
    return 0;
}
