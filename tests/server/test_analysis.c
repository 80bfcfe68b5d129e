/* The application layer's pure parts: its settings file, the cleaning
 * rules, the regression test between versions (no false alarm in 20 tries
 * of identical distributions; a 150 ms slower page found), an issue's
 * gathered evidence as JSON. */
#include "analysis/analysis_config.h"
#include "ingest/clean.h"
#include "analysis/issue_details.h"
#include "analysis/issue_json.h"
#include "analysis/profile_frames.h"
#include "analysis/regress.h"

#include <pacer/base/utf8.h>
#include <pacer/stats.h>

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- settings ---- */

static int parse(const char *text, ana_config *c, char *err)
{
    return analysis_config_parse(text, strlen(text), "analysis.conf", c, err, 256);
}

static void expect_error(const char *text, const char *msg)
{
    ana_config c;
    char err[256] = "";
    if (parse(text, &c, err) != -EINVAL)
        fail_msg("%s: parsed", text);
    assert_string_equal(err, msg);
    /* freed and back to the defaults */
    assert_int_equal(c.n_apps, 0);
    assert_true(c.all.slow_page_total_ms == 2500);
}

static void test_config_defaults_and_sections(void **state)
{
    (void)state;
    ana_config c;
    analysis_config_defaults(&c);
    assert_true(c.interval_ms == 2000 && c.max_duration_ms == 86400000 && c.max_clock_skew_s == 3600);
    assert_true(c.all.slow_cold_ms == 5000 && c.all.slow_warm_ms == 2000 && c.all.regression_min_samples == 30);
    assert_true(c.all.regression_min_percent == 10 && c.all.regression_min_ms == 16);
    char err[256];
    assert_int_equal(parse("# pacerd\n  interval-ms = 250\r\nslow-page-total-ms=3000\n\n[app shop]\n"
                           "version-order = 1.0  1.1 2.0\nslow-page-total-ms = 2000.5\n[app tools]\nnet-error-rate = 0.5\n",
                           &c, err),
                     0);
    assert_true(c.interval_ms == 250);
    assert_true(c.all.slow_page_total_ms == 3000);
    assert_int_equal(c.n_apps, 2);
    const ana_thresholds *shop = analysis_config_app(&c, "shop"), *tools = analysis_config_app(&c, "tools");
    assert_true(shop->slow_page_total_ms == 2000.5);
    assert_true(tools->slow_page_total_ms == 3000); /* the server-wide value given before its section */
    assert_true(tools->net_error_rate == 0.5);
    assert_ptr_equal(analysis_config_app(&c, "other"), &c.all);
    assert_int_equal(shop->n_versions, 3);
    assert_string_equal(shop->versions[2], "2.0");
    /* a listed version by its place; others after, by first-seen order */
    assert_int_equal(analysis_config_version_rank(shop, "1.1", 7), 1);
    assert_int_equal(analysis_config_version_rank(shop, "3.0", 5), 3 + 5);
    assert_int_equal(analysis_config_version_rank(tools, "1.0", 2), 2);
    analysis_config_free(&c);
    assert_int_equal(c.n_apps, 0);
}

static void test_config_errors(void **state)
{
    (void)state;
    expect_error("slow-page-total-ms = fast\n",
                 "analysis.conf:1: slow-page-total-ms: expected a number from 1 to 86400000");
    expect_error("\n\nnet-error-min = 2.5\n", "analysis.conf:3: net-error-min: expected an integer from 1 to 1000000000");
    expect_error("net-error-rate = 2\n", "analysis.conf:1: net-error-rate: expected a number from 0 to 1");
    expect_error("net-error-rate = -0.1\n", "analysis.conf:1: net-error-rate: expected a number from 0 to 1");
    expect_error("net-error-rate = 1e-3\n", "analysis.conf:1: net-error-rate: expected a number from 0 to 1");
    expect_error("bogus = 1\n", "analysis.conf:1: unknown setting \"bogus\" (docs/server.md lists them)");
    expect_error("[app shop]\ninterval-ms = 100\n",
                 "analysis.conf:2: interval-ms is the server's: set it before any [app] section");
    expect_error("version-order = 1 2\n", "analysis.conf:1: version-order belongs in an [app NAME] section");
    expect_error("[app shop]\n[app shop]\n", "analysis.conf:2: [app shop] is given twice");
    expect_error("[app]\n", "analysis.conf:1: expected a section [app NAME]");
    expect_error("[application shop]\n", "analysis.conf:1: expected a section [app NAME]");
    expect_error("[app shop\n", "analysis.conf:1: expected a section [app NAME]");
    expect_error("[app shop]\nversion-order = 1.0 1.0\n", "analysis.conf:2: version-order: 1.0 is given twice");
    expect_error("[app shop]\nversion-order =\n",
                 "analysis.conf:2: version-order: expected the versions, oldest first, separated by spaces");
    expect_error("slow-page-total-ms\n",
                 "analysis.conf:1: expected NAME = VALUE, a [app NAME] section or a # comment");
    expect_error("a\xff = 1\n", "analysis.conf:1: not UTF-8 text");
    char nul[] = "x = 1";
    ana_config c;
    char err[256];
    nul[1] = 0;
    assert_int_equal(analysis_config_parse(nul, 5, "f", &c, err, sizeof err), -EINVAL);
    assert_string_equal(err, "f:1: not UTF-8 text");
}

/* ---- cleaning ---- */

static void test_clean_rules(void **state)
{
    (void)state;
    clean_limits l = {86400000, 3600LL * 1000000000LL};
    assert_int_equal(clean_duration(&l, 0), CLEAN_OK);
    assert_int_equal(clean_duration(&l, 86400000), CLEAN_OK);
    assert_int_equal(clean_duration(&l, 86400000.5), CLEAN_OVER_A_DAY);
    assert_int_equal(clean_duration(&l, -0.001), CLEAN_NEGATIVE);
    assert_int_equal(clean_duration(&l, NAN), CLEAN_NON_FINITE);
    assert_int_equal(clean_duration(&l, -INFINITY), CLEAN_NON_FINITE);
    int64_t now = 1796148889LL * 1000000000LL;
    assert_int_equal(clean_time(&l, now + 3600LL * 1000000000LL, now), CLEAN_OK);
    assert_int_equal(clean_time(&l, now + 3601LL * 1000000000LL, now), CLEAN_CLOCK_SKEW);
    assert_int_equal(clean_time(&l, 946684800LL * 1000000000LL - 1, now), CLEAN_CLOCK_SKEW);
    assert_int_equal(clean_time(&l, 1700000000LL * 1000000000LL, now), CLEAN_OK); /* an old spool: fine */
    assert_int_equal(clean_time(&l, INT64_MAX, INT64_MAX - 5), CLEAN_OK);          /* no overflow */
    assert_int_equal(clean_page(50, 5, 60), CLEAN_OK);
    assert_int_equal(clean_page(60.9, NAN, 60), CLEAN_OK); /* within the rounding tolerance */
    assert_int_equal(clean_page(62, NAN, 60), CLEAN_PHASE_ORDER);
    assert_int_equal(clean_page(NAN, 70, 60), CLEAN_PHASE_ORDER);
    assert_int_equal(clean_page(NAN, NAN, NAN), CLEAN_OK);
    assert_int_equal(clean_startup(200, 600, 1100), CLEAN_OK);
    assert_int_equal(clean_startup(700, 600, NAN), CLEAN_PHASE_ORDER);
    assert_int_equal(clean_startup(NAN, 1200, 1100), CLEAN_PHASE_ORDER);
    static const char *const names[CLEAN_COUNT] = {"", "negative_duration", "non_finite", "over_a_day", "clock_skew",
                                                   "phase_order", "duplicate", "startup_outlier"};
    for (int k = 0; k < CLEAN_COUNT; k++)
        assert_string_equal(clean_reason_name((enum clean_reason)k), names[k]);
}

/* ---- regressions ---- */

/* A page load: lognormal around median ms. */
static double draw(stats_rng *rng, double median, double sigma)
{
    double u1 = ((double)(stats_rng_next(rng) >> 11) + 1) / 9007199254740993.0;
    double u2 = ((double)(stats_rng_next(rng) >> 11) + 1) / 9007199254740993.0;
    return median * exp(sigma * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
}

#define PAGES 4
#define METRICS 4

typedef struct family {
    regress_case cases[PAGES * METRICS];
    double values[PAGES * METRICS][2][200];
} family;

static const char *const page_names[PAGES] = {"Home", "Merchant", "Cart", "Search"};
static const char *const metric_names[METRICS] = {"initial_draw_ms", "api_load_ms", "final_draw_ms", "total_ms"};
static const double medians[METRICS] = {60, 300, 15, 380};

/* Two versions of PAGES pages × METRICS metrics, n loads each; version 2
 * adds shift_ms to `slower`'s api_load_ms and total_ms. */
static void make_family(family *f, uint64_t seed, size_t n, int slower, double shift_ms)
{
    stats_rng rng;
    stats_rng_seed(&rng, seed);
    for (int p = 0; p < PAGES; p++)
        for (int m = 0; m < METRICS; m++) {
            int k = p * METRICS + m;
            for (int side = 0; side < 2; side++)
                for (size_t i = 0; i < n; i++) {
                    double v = draw(&rng, medians[m] * (1 + 0.1 * p), 0.25);
                    if (side == 1 && p == slower && (m == 1 || m == 3))
                        v += shift_ms;
                    f->values[k][side][i] = v;
                }
            f->cases[k] = (regress_case){.name = page_names[p], .metric = metric_names[m],
                                         .base = f->values[k][0], .cur = f->values[k][1], .n_base = n, .n_cur = n};
        }
}

static const regress_limits limits = {30, 10, 16, 0.01};

static void test_no_false_alarm_in_20_tries(void **state)
{
    (void)state;
    family *f = malloc(sizeof *f);
    for (uint64_t seed = 1; seed <= 20; seed++) {
        make_family(f, seed, 40, -1, 0);
        assert_int_equal(regress_run(f->cases, PAGES * METRICS, &limits), 0);
        for (int k = 0; k < PAGES * METRICS; k++) {
            assert_true(f->cases[k].compared);
            if (f->cases[k].flagged)
                fail_msg("seed %d: %s %s flagged (p %g, adjusted %g, p50 %.1f -> %.1f)", (int)seed,
                         f->cases[k].name, f->cases[k].metric, f->cases[k].p, f->cases[k].p_adjusted,
                         f->cases[k].p50_base, f->cases[k].p50_cur);
        }
    }
    free(f);
}

static void test_a_slower_page_is_found_and_only_it(void **state)
{
    (void)state;
    family *f = malloc(sizeof *f);
    for (uint64_t seed = 1; seed <= 20; seed++) {
        make_family(f, seed, 40, 1, 150);
        assert_int_equal(regress_run(f->cases, PAGES * METRICS, &limits), 0);
        for (int k = 0; k < PAGES * METRICS; k++) {
            bool want = k == 1 * METRICS + 1 || k == 1 * METRICS + 3;
            if (f->cases[k].flagged != want)
                fail_msg("seed %d: %s %s flagged %d, want %d (p50 %.1f -> %.1f, adjusted p %g)", (int)seed,
                         f->cases[k].name, f->cases[k].metric, f->cases[k].flagged, want, f->cases[k].p50_base,
                         f->cases[k].p50_cur, f->cases[k].p_adjusted);
        }
        /* the figures: the shift of the median, both versions' p50 and p90 */
        regress_case *c = &f->cases[1 * METRICS + 3];
        assert_true(c->p50_cur - c->p50_base > 50 && c->p50_cur - c->p50_base < 250);
        assert_true(c->p90_cur > c->p90_base);
    }
    free(f);
}

static void test_too_few_or_too_small(void **state)
{
    (void)state;
    family *f = malloc(sizeof *f);
    /* 29 loads a side: nothing compared, however large the shift */
    make_family(f, 7, 29, 0, 1000);
    assert_int_equal(regress_run(f->cases, PAGES * METRICS, &limits), 0);
    for (int k = 0; k < PAGES * METRICS; k++)
        assert_false(f->cases[k].compared || f->cases[k].flagged);
    /* significant but under 16 ms: a 15 ms final draw 12 ms slower; and
     * over 16 ms but under 10 %: a 400 ms total 30 ms slower */
    static const double base_ms[2] = {15, 400}, shift_ms[2] = {12, 30};
    for (int k = 0; k < 2; k++) {
        stats_rng rng;
        stats_rng_seed(&rng, 11 + (uint64_t)k);
        static double b[200], c[200];
        for (int i = 0; i < 200; i++) {
            b[i] = draw(&rng, base_ms[k], 0.02);
            c[i] = draw(&rng, base_ms[k], 0.02) + shift_ms[k];
        }
        regress_case one = {.name = "Home", .metric = "m", .base = b, .cur = c, .n_base = 200, .n_cur = 200};
        assert_int_equal(regress_run(&one, 1, &limits), 0);
        assert_true(one.compared && one.p_adjusted < 1e-6);
        assert_false(one.flagged);
    }
    /* faster is never a regression */
    make_family(f, 10, 100, -1, 0);
    for (size_t i = 0; i < 100; i++)
        f->values[3][1][i] -= 200;
    assert_int_equal(regress_run(f->cases, PAGES * METRICS, &limits), 0);
    assert_false(f->cases[3].flagged);
    assert_true(f->cases[3].p > 0.5);
    free(f);
}

/* ---- evidence ---- */

static void test_details_round_trip(void **state)
{
    (void)state;
    iss_details d = {0}, back = {0};
    for (int i = 0; i < 20; i++) {
        char name[32];
        snprintf(name, sizeof name, "Page%d", i);
        issue_details_count(d.pages, &d.n_pages, name, i + 1);
    }
    assert_int_equal(d.n_pages, ISS_MAX_COUNTERS + 1);
    assert_string_equal(d.pages[ISS_MAX_COUNTERS].name, "(other)");
    assert_int_equal(d.pages[ISS_MAX_COUNTERS].n, 17 + 18 + 19 + 20);
    issue_details_count(d.statuses, &d.n_statuses, "HTTP 500", 2);
    issue_details_count(d.statuses, &d.n_statuses, "HTTP 500", 1);
    issue_details_count(d.statuses, &d.n_statuses, "transport failure: \"refused\"", 1);
    d.levels[4] = 3;
    d.bytes = 1024;
    issue_details_example(&d, "{\"duration_ms\":800,\"stack\":[{\"function\":\"f\"}]}", 800);
    issue_details_example(&d, "{\"duration_ms\":700}", 700); /* smaller: kept the first */
    jbuf b;
    jbuf_init(&b);
    issue_details_json(&d, &b);
    assert_int_equal(issue_details_parse(b.data, &back), 0);
    assert_int_equal(back.n_pages, d.n_pages);
    for (size_t i = 0; i < d.n_pages; i++) {
        assert_string_equal(back.pages[i].name, d.pages[i].name);
        assert_int_equal(back.pages[i].n, d.pages[i].n);
    }
    assert_int_equal(back.n_statuses, 2);
    assert_int_equal(back.statuses[0].n, 3);
    assert_string_equal(back.statuses[1].name, "transport failure: \"refused\"");
    assert_int_equal(back.levels[4], 3);
    assert_true(back.bytes == 1024);
    assert_string_equal(back.example, "{\"duration_ms\":800,\"stack\":[{\"function\":\"f\"}]}");
    assert_true(back.example_value == 800);
    /* merge: counts add up, the larger example wins */
    iss_details more = {0};
    issue_details_count(more.statuses, &more.n_statuses, "HTTP 500", 4);
    issue_details_example(&more, "{\"duration_ms\":900}", 900);
    issue_details_merge(&back, &more);
    assert_int_equal(back.statuses[0].n, 7);
    assert_string_equal(back.example, "{\"duration_ms\":900}");
    assert_int_equal(issue_details_parse("{\"pages\":[1]}", &more), -EINVAL);
    assert_null(more.example);
    assert_int_equal(issue_details_parse("not json", &more), -EINVAL);
    assert_int_equal(issue_details_parse(NULL, &more), 0);
    issue_details_free(&d);
    issue_details_free(&back);
    issue_details_free(&more);
    jbuf_free(&b);
}

/* A profile as the agent wrote it for tests/agent/jank-app --stall mixed
 * (half asleep in usleep, half busy reading the clock), and the frames of
 * its jank's stack (function cut at '.' or '@', module, in_app). */
static const char real_profile[] =
    "_start;__libc_start_main;__libc_start_call_main;main;g_application_run;g_main_context_iteration;"
    "libglib-2.0.so.0.7400.6+0x54a17;g_main_context_dispatch;libglib-2.0.so.0.7400.6+0x55179;one_stall;"
    "jank_app_stall_mixed;jank_app_mixed_sleep;usleep;__nanosleep;clock_nanosleep 60\n"
    "_start;__libc_start_main;__libc_start_call_main;main;g_application_run;g_main_context_iteration;"
    "libglib-2.0.so.0.7400.6+0x54a17;g_main_context_dispatch;libglib-2.0.so.0.7400.6+0x55179;one_stall;"
    "jank_app_stall_mixed;jank_app_mixed_busy;jank_app_busy_work;g_get_monotonic_time;clock_gettime;"
    "__vdso_clock_gettime 42\n"
    "_start;__libc_start_main;__libc_start_call_main;main;g_application_run;g_main_context_iteration;"
    "libglib-2.0.so.0.7400.6+0x54a17;g_main_context_dispatch;libglib-2.0.so.0.7400.6+0x55179;one_stall;"
    "jank_app_stall_mixed;jank_app_mixed_busy;jank_app_busy_work;g_get_monotonic_time 3\n"
    "_start;__libc_start_main;__libc_start_call_main;main;g_application_run;g_main_context_iteration;"
    "libglib-2.0.so.0.7400.6+0x54a17;g_main_context_dispatch;libglib-2.0.so.0.7400.6+0x55179;one_stall;"
    "jank_app_stall_mixed;jank_app_mixed_busy;jank_app_busy_work;g_get_monotonic_time;[plt] 2\n"
    "_start;__libc_start_main;__libc_start_call_main;main;g_application_run;g_main_context_iteration;"
    "libglib-2.0.so.0.7400.6+0x5498d;monitored_poll;__poll 1\n"
    "_start;__libc_start_main;__libc_start_call_main;main;g_application_run;g_main_context_iteration;"
    "libglib-2.0.so.0.7400.6+0x54a17;g_main_context_dispatch;libglib-2.0.so.0.7400.6+0x55179;one_stall;"
    "jank_app_stall_mixed;jank_app_mixed_busy;jank_app_busy_work;[plt] 1\n"
    "_start;__libc_start_main;__libc_start_call_main;main;g_application_run;g_main_context_iteration;"
    "libglib-2.0.so.0.7400.6+0x54a17;g_main_context_dispatch;libglib-2.0.so.0.7400.6+0x55179;one_stall;"
    "jank_app_stall_mixed;jank_app_mixed_busy;jank_app_busy_work;g_get_monotonic_time;clock_gettime 1";

#define HINT(f, m, a) {f, sizeof f - 1, m, a}
static const profile_frames_hint real_stack[] = {
    HINT("clock_nanosleep", "libc.so.6", false), HINT("__nanosleep", "libc.so.6", false),
    HINT("usleep", "libc.so.6", false), HINT("jank_app_mixed_sleep", "jank-app", true),
    HINT("jank_app_stall_mixed", "jank-app", true), HINT("one_stall", "jank-app", true),
    HINT("g_main_context_dispatch", "libglib-2.0.so.0.7400.6", false),
    HINT("g_main_context_iteration", "libglib-2.0.so.0.7400.6", false),
    HINT("g_application_run", "libgio-2.0.so.0.7400.6", false), HINT("main", "jank-app", true),
    HINT("__libc_start_call_main", "libc.so.6", false), HINT("__libc_start_main", "libc.so.6", false),
    HINT("_start", "jank-app", true),
};
#define N_REAL_STACK (sizeof real_stack / sizeof real_stack[0])

/* The frame a line is charged to: the innermost outside the system and
 * toolkit libraries, by the stack's modules, a MODULE+0x frame's, or the
 * name; the leaf when there is none; lines that are not folded stacks
 * read as nothing. */
static void test_profile_frames(void **state)
{
    (void)state;
    static const struct {
        const char *line;
        bool hints;
        const char *frame, *leaf;
        int64_t count;
    } cases[] = {
        /* the stack says usleep is libc's, jank_app_mixed_sleep the app's */
        {"main;one_stall;jank_app_mixed_sleep;usleep;__nanosleep;clock_nanosleep 60", true, "jank_app_mixed_sleep",
         "clock_nanosleep", 60},
        /* the agent's poll hook and GLib's unnamed frames are not the app: main is */
        {"_start;main;g_application_run;g_main_context_iteration;libglib-2.0.so.0.7400.6+0x5498d;monitored_poll;__poll 1",
         true, "main", "__poll", 1},
        /* without a stack: by name (GLib's g_, the C library's calls), [plt], the vDSO */
        {"main;jank_app_busy_work;g_get_monotonic_time;clock_gettime;__vdso_clock_gettime 42", false,
         "jank_app_busy_work", "__vdso_clock_gettime", 42},
        {"main;shop_load;g_file_load_contents;read 7", false, "shop_load", "read", 7},
        {"main;worker;[plt] 2", false, "worker", "[plt]", 2},
        /* an app function named in its own right at the top */
        {"main;shop_parse_catalog 9", false, "shop_parse_catalog", "shop_parse_catalog", 9},
        /* MODULE+0xOFFSET: the module says; a bare address says nothing */
        {"main;shop-app+0x1a2b;libQt6Core.so.6+0x99;0x7f00aa 4", false, "shop-app+0x1a2b", "0x7f00aa", 4},
        {"_start;__libc_start_main;libgtk-4.so.1+0x10;_ZN16QCoreApplication4execEv;poll 5", false, "poll", "poll", 5},
        /* a library the app brought (not a system or toolkit one) counts as its */
        {"main;libsoup-3.0.so.0+0x40;poll 3", false, "libsoup-3.0.so.0+0x40", "poll", 3},
        {"main;pthread_cond_wait;__futex_abstimed_wait_common 8", false, "main", "__futex_abstimed_wait_common", 8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        profile_frames_line pl;
        assert_true(profile_frames_read(cases[i].line, strlen(cases[i].line), cases[i].hints ? real_stack : NULL,
                                        cases[i].hints ? N_REAL_STACK : 0, &pl));
        char frame[128], leaf[128];
        snprintf(frame, sizeof frame, "%.*s", (int)pl.frame_len, pl.frame);
        snprintf(leaf, sizeof leaf, "%.*s", (int)pl.leaf_len, pl.leaf);
        assert_string_equal(frame, cases[i].frame);
        assert_string_equal(leaf, cases[i].leaf);
        assert_int_equal(pl.count, cases[i].count);
    }
    /* the stack overrides the name: an app's own g_ function, a libc call in a module the app ships */
    static const profile_frames_hint own[] = {HINT("g_app_refresh", "/opt/shop/bin/shop", true),
                                              HINT("read", "/opt/shop/lib/libshopio.so", false)};
    profile_frames_line pl;
    assert_true(profile_frames_read("main;g_app_refresh;g_list_sort 5", 32, own, 2, &pl));
    assert_int_equal(pl.frame_len, strlen("g_app_refresh"));
    assert_true(profile_frames_read("main;g_list_sort;read 5", 23, own, 2, &pl));
    assert_int_equal(pl.frame_len, 4); /* read */
    assert_true(profile_frames_system_module("/usr/lib/x86_64-linux-gnu/libglib-2.0.so.0", 42));
    assert_true(profile_frames_system_module("ld-linux-x86-64.so.2", 20));
    assert_false(profile_frames_system_module("/usr/bin/shop", 13));
    static const char *const bad[] = {"", "main", "main;f", "main;f x", "main;f -3", "main;f 1e3", " 5", "main;f 0",
                                      "main;f 1000000001", "main;f 99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(profile_frames_read(bad[i], strlen(bad[i]), NULL, 0, &pl));
    assert_false(profile_frames_read("main; 5", 7, NULL, 0, &pl)); /* an empty leaf */
}

/* Jank profiles in an issue's evidence: each folded line's count goes to
 * the frame it is charged to (profile_top), and to "FRAME → LEAF" when the
 * leaf is another (profile_leaves); the occurrences' profiles add up,
 * through a round trip and a merge; lines that do not read as folded
 * stacks count for nothing. */
static void test_details_profiles(void **state)
{
    (void)state;
    iss_details d = {0}, back = {0}, more = {0};
    issue_details_profile(&d, real_profile, real_stack, N_REAL_STACK);
    issue_details_profile(&d, "main;app_wait;app_parse 100\nnot a line\nmain;y -3\nmain;z 1e3\n", NULL, 0);
    assert_int_equal(d.n_profile_top, 4);
    assert_string_equal(d.profile_top[0].name, "jank_app_mixed_sleep");
    assert_int_equal(d.profile_top[0].n, 60);
    assert_string_equal(d.profile_top[1].name, "jank_app_busy_work");
    assert_int_equal(d.profile_top[1].n, 49);
    assert_string_equal(d.profile_top[2].name, "main");
    assert_int_equal(d.profile_top[2].n, 1);
    assert_string_equal(d.profile_top[3].name, "app_parse");
    assert_int_equal(d.profile_top[3].n, 100);
    jbuf b;
    jbuf_init(&b);
    issue_details_json(&d, &b);
    assert_non_null(strstr(b.data, "\"profile_top\":{\"jank_app_mixed_sleep\":60,\"jank_app_busy_work\":49,\"main\":1,"
                                   "\"app_parse\":100}"));
    assert_non_null(strstr(b.data, "\"profile_leaves\":{\"jank_app_mixed_sleep → clock_nanosleep\":60,"
                                   "\"jank_app_busy_work → __vdso_clock_gettime\":42,"
                                   "\"jank_app_busy_work → g_get_monotonic_time\":3,"
                                   "\"jank_app_busy_work → [plt]\":3,\"main → __poll\":1,"
                                   "\"jank_app_busy_work → clock_gettime\":1}"));
    assert_int_equal(issue_details_parse(b.data, &back), 0);
    issue_details_profile(&more, "main;one_stall;jank_app_mixed_sleep;usleep 40", real_stack, N_REAL_STACK);
    issue_details_merge(&back, &more);
    assert_int_equal(back.n_profile_top, 4);
    assert_int_equal(back.profile_top[0].n, 100);
    assert_int_equal(back.n_profile_leaves, 7);
    assert_string_equal(back.profile_leaves[6].name, "jank_app_mixed_sleep → usleep");
    assert_int_equal(back.profile_leaves[6].n, 40);
    issue_details_free(&d);
    issue_details_free(&back);
    issue_details_free(&more);
    jbuf_free(&b);
}

/* A name longer than a counter holds is cut on a character boundary, so
 * two names that differ only past the cut are one counter, and the counter
 * reads back as itself. */
static void test_details_long_names(void **state)
{
    (void)state;
    iss_details d = {0}, back = {0};
    char a[400], b2[400];
    size_t n = 0;
    while (n + 2 < 300) { /* "é" is two bytes: the cut falls inside one at an odd limit */
        a[n++] = (char)0xc3;
        a[n++] = (char)0xa9;
    }
    memcpy(b2, a, n);
    a[n] = 'x';
    b2[n] = 'y';
    a[n + 1] = b2[n + 1] = '\0';
    issue_details_count(d.pages, &d.n_pages, a, 1);
    issue_details_count(d.pages, &d.n_pages, b2, 2);
    assert_int_equal(d.n_pages, 1);
    assert_int_equal(d.pages[0].n, 3);
    size_t len = strlen(d.pages[0].name);
    assert_true(len < ISS_MAX_NAME && len % 2 == 0);
    jbuf b;
    jbuf_init(&b);
    issue_details_json(&d, &b);
    assert_null(strstr(b.data, "\\ufffd"));
    assert_int_equal(issue_details_parse(b.data, &back), 0);
    assert_int_equal(back.n_pages, 1);
    assert_string_equal(back.pages[0].name, d.pages[0].name);
    issue_details_free(&d);
    issue_details_free(&back);
    jbuf_free(&b);
}

/* A string read out of an issue's JSON into a smaller buffer (an example's
 * function, a grade's rule) is cut on a character boundary: the issue's
 * Markdown and its API answer never carry half a character. */
static void test_read_strings_cut_on_a_character(void **state)
{
    (void)state;
    char json[700] = "{\"function\":\"";
    size_t n = strlen(json);
    for (int i = 0; i < 300; i++) { /* "é": two bytes */
        json[n++] = (char)0xc3;
        json[n++] = (char)0xa9;
    }
    memcpy(json + n, "\"}", 3);
    char out[8];
    assert_true(issue_json_str(json, "function", out, sizeof out));
    assert_int_equal(strlen(out), 6);
    assert_true(utf8_valid(out, strlen(out)));
    assert_memory_equal(out, json + strlen("{\"function\":\""), 6);
    char whole[700];
    assert_true(issue_json_str(json, "function", whole, sizeof whole));
    assert_int_equal(strlen(whole), 600);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_defaults_and_sections),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_clean_rules),
        cmocka_unit_test(test_no_false_alarm_in_20_tries),
        cmocka_unit_test(test_a_slower_page_is_found_and_only_it),
        cmocka_unit_test(test_too_few_or_too_small),
        cmocka_unit_test(test_details_round_trip),
        cmocka_unit_test(test_profile_frames),
        cmocka_unit_test(test_details_profiles),
        cmocka_unit_test(test_details_long_names),
        cmocka_unit_test(test_read_strings_cut_on_a_character),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
