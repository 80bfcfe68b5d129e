/* Start-up model (DESIGN §3.2, seeds 000 and 002) through the public API:
 * cold start with and without splash, main page choice, warm start,
 * outliers and partial data. */
#include "records.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define W PACER_PAGE_WINDOW

static const char with_main_xml[] =
    "<page id=\"HomeWindow\" tag=\"1\"><api id=\"/api/config\"/></page>\n"
    "<splash id=\"SplashWindow\"/>\n";
static const char splash_only_xml[] = "<pacer><splash id=\"SplashWindow\"/></pacer>";

static void assert_ms(json_t *rec, const char *key, double want)
{
    double got = rec_num(rec, key);
    if (got < want - 0.0005 || got > want + 0.0005)
        fail_msg("%s = %.3f, want %.3f", key, got, want);
}

static json_t *cold(rec_capture *c)
{
    assert_int_equal(rec_count(c, "startup"), 1);
    json_t *r = rec_find(c, "startup", "kind", "cold", 0);
    assert_non_null(r);
    return r;
}

static void marks(pacer_t *p, double launch, double agent, double main_, double app)
{
    ev_at(p, launch, PACER_EV_LAUNCH, 0);
    ev_at(p, agent, PACER_EV_AGENT_INIT, 0);
    ev_at(p, main_, PACER_EV_MAIN, 0);
    if (app >= 0)
        ev_at(p, app, PACER_EV_APP_CREATED, 0);
}

static void test_cold_without_splash(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, with_main_xml);
    marks(p, 0, 2, 5, 50);
    ev_create(p, 60, 1, "HomeWindow", W);
    ev_at(p, 70, PACER_EV_PAGE_VIEW_CREATED, 1);
    ev_api(p, 80, PACER_EV_API_START, "/api/config", 1, 0);
    ev_at(p, 100, PACER_EV_PAGE_DRAW, 1);
    pacer_flush(p);
    assert_int_equal(rec_count(&c, "startup"), 0); /* waits for the full display */
    ev_api(p, 400, PACER_EV_API_END, "/api/config", 1, 200);
    ev_at(p, 420, PACER_EV_PAGE_DRAW, 1);
    pacer_free(p);
    json_t *r = cold(&c);
    assert_ms(r, "cold_ms", 100);
    assert_ms(r, "first_screen_ms", 100);
    assert_ms(r, "app_cost_ms", 50);
    assert_ms(r, "full_display_ms", 420);
    assert_false(json_is_true(json_object_get(r, "outlier")));
    assert_string_equal(rec_str(r, "main_page"), "HomeWindow");
    json_t *ph = json_object_get(r, "phases");
    assert_int_equal(json_integer_value(json_object_get(ph, "launch")), 0);
    assert_int_equal(json_integer_value(json_object_get(ph, "agent_init")), 2000000);
    assert_int_equal(json_integer_value(json_object_get(ph, "main")), 5000000);
    assert_int_equal(json_integer_value(json_object_get(ph, "app_created")), 50000000);
    assert_int_equal(json_integer_value(json_object_get(ph, "first_frame")), 100000000);
    assert_int_equal(json_integer_value(json_object_get(ph, "main_frame")), 100000000);
    assert_int_equal(json_integer_value(json_object_get(ph, "full_display")), 420000000);
    assert_true(json_is_true(json_object_get(rec_find(&c, "page", NULL, NULL, 0), "main")));
    rec_capture_clear(&c);
}

/* Matrix: the splash's first paint is the first screen; the cold start ends
 * at the main page's first paint and includes the splash. */
static void test_cold_with_splash(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, with_main_xml);
    marks(p, 0, 1, 3, 40);
    ev_create(p, 45, 1, "SplashWindow", W);
    ev_at(p, 80, PACER_EV_PAGE_DRAW, 1);
    ev_create(p, 300, 2, "HomeWindow", W);
    ev_at(p, 310, PACER_EV_PAGE_DESTROY, 1);
    ev_api(p, 320, PACER_EV_API_START, "/api/config", 1, 0);
    ev_at(p, 350, PACER_EV_PAGE_DRAW, 2);
    ev_api(p, 500, PACER_EV_API_END, "/api/config", 1, 200);
    ev_at(p, 510, PACER_EV_PAGE_DRAW, 2);
    pacer_free(p);
    json_t *r = cold(&c);
    assert_ms(r, "first_screen_ms", 80);
    assert_ms(r, "cold_ms", 350);
    assert_ms(r, "app_cost_ms", 40);
    assert_ms(r, "full_display_ms", 510);
    assert_string_equal(rec_str(r, "main_page"), "HomeWindow");
    assert_false(json_is_true(json_object_get(rec_find(&c, "page", "page", "SplashWindow", 0), "main")));
    /* closing the splash before the home window opened is no warm start */
    assert_null(rec_find(&c, "startup", "kind", "warm", 0));
    rec_capture_clear(&c);
}

static void test_splash_without_main_tag(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, splash_only_xml);
    ev_at(p, 0, PACER_EV_LAUNCH, 0);
    ev_create(p, 10, 1, "SplashWindow", W);
    ev_at(p, 20, PACER_EV_PAGE_DRAW, 1);
    ev_create(p, 100, 2, "ListWindow", W);
    ev_at(p, 130, PACER_EV_PAGE_DRAW, 2);
    pacer_free(p);
    json_t *r = cold(&c);
    assert_ms(r, "first_screen_ms", 20);
    assert_ms(r, "cold_ms", 130);
    assert_ms(r, "full_display_ms", 130); /* no APIs: the first draw is full */
    assert_ms(r, "app_cost_ms", 10);      /* no GApplication: first window */
    assert_string_equal(rec_str(r, "main_page"), "ListWindow");
    rec_capture_clear(&c);
}

static void test_zero_config_first_window_is_main(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, NULL);
    marks(p, 0, 1, 2, -1);
    ev_create(p, 30, 7, "GtkWindow", W);
    ev_create(p, 31, 8, "GtkWindow", W);
    ev_at(p, 55, PACER_EV_PAGE_DRAW, 8);
    ev_at(p, 60, PACER_EV_PAGE_DRAW, 7);
    pacer_free(p);
    json_t *r = cold(&c);
    assert_ms(r, "app_cost_ms", 30);
    assert_ms(r, "first_screen_ms", 55);
    assert_ms(r, "cold_ms", 60); /* the first window, not the first to draw */
    rec_capture_clear(&c);
}

static void test_main_tag_on_inner_page(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, "<page id=\"FeedPage\" tag=\"1\"/>");
    ev_at(p, 0, PACER_EV_LAUNCH, 0);
    ev_create(p, 10, 1, "MainWindow", W);
    ev_create(p, 12, 2, "FeedPage", PACER_PAGE_PAGE);
    ev_at(p, 40, PACER_EV_PAGE_DRAW, 1);
    ev_at(p, 42, PACER_EV_PAGE_DRAW, 2);
    pacer_free(p);
    json_t *r = cold(&c);
    assert_ms(r, "first_screen_ms", 40);
    assert_ms(r, "cold_ms", 42);
    assert_string_equal(rec_str(r, "main_page"), "FeedPage");
    rec_capture_clear(&c);
}

/* Matrix warm start: all windows closed in a live process, a new one opens:
 * warm = its creation → its first paint. */
static void test_warm_start(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, NULL);
    ev_at(p, 0, PACER_EV_LAUNCH, 0);
    ev_create(p, 10, 1, "MainWindow", W);
    ev_at(p, 50, PACER_EV_PAGE_DRAW, 1);
    ev_create(p, 60, 2, "PrefsWindow", W);
    ev_at(p, 70, PACER_EV_PAGE_DRAW, 2);
    ev_at(p, 1000, PACER_EV_PAGE_DESTROY, 1);
    ev_create(p, 1100, 3, "MainWindow", W); /* Prefs still open: not warm */
    ev_at(p, 1120, PACER_EV_PAGE_DRAW, 3);
    ev_at(p, 2000, PACER_EV_PAGE_DESTROY, 2);
    ev_at(p, 2000, PACER_EV_PAGE_DESTROY, 3);
    ev_create(p, 5000, 4, "MainWindow", W);
    ev_at(p, 5010, PACER_EV_PAGE_VIEW_CREATED, 4);
    ev_at(p, 5045.5, PACER_EV_PAGE_DRAW, 4);
    ev_at(p, 5100, PACER_EV_PAGE_DRAW, 4);
    pacer_free(p);
    assert_int_equal(rec_count(&c, "startup"), 2);
    json_t *w = rec_find(&c, "startup", "kind", "warm", 0);
    assert_non_null(w);
    assert_ms(w, "warm_ms", 45.5);
    assert_string_equal(rec_str(w, "page"), "MainWindow");
    assert_false(json_is_true(json_object_get(w, "outlier")));
    json_t *ph = json_object_get(w, "phases");
    assert_int_equal(json_integer_value(json_object_get(ph, "create")), 5000000000LL);
    assert_int_equal(json_integer_value(json_object_get(ph, "first_frame")), 5045500000LL);
    assert_ms(rec_find(&c, "startup", "kind", "cold", 0), "cold_ms", 50);
    rec_capture_clear(&c);
}

static void test_no_warm_before_cold_finished(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, NULL);
    ev_at(p, 0, PACER_EV_LAUNCH, 0);
    ev_create(p, 10, 1, "W", W);
    ev_at(p, 20, PACER_EV_PAGE_DESTROY, 1); /* closed before it ever drew */
    ev_create(p, 30, 2, "W", W);
    ev_at(p, 45, PACER_EV_PAGE_DRAW, 2);
    pacer_free(p);
    assert_null(rec_find(&c, "startup", "kind", "warm", 0));
    /* the first window closed before it drew: the next one is the main page */
    json_t *r = cold(&c);
    assert_ms(r, "cold_ms", 45);
    assert_ms(r, "full_display_ms", 45);
    assert_ms(r, "first_screen_ms", 45);
    rec_capture_clear(&c);

    /* the main page abandoned after it drew: the cold start ends there,
     * without a full display */
    p = test_pacer_new(&c, "<page id=\"Home\" tag=\"1\"><api id=\"/a\"/></page>");
    ev_at(p, 0, PACER_EV_LAUNCH, 0);
    ev_create(p, 10, 1, "Home", W);
    ev_at(p, 30, PACER_EV_PAGE_DRAW, 1);
    ev_at(p, 50, PACER_EV_PAGE_DESTROY, 1);
    pacer_flush(p);
    r = cold(&c);
    assert_ms(r, "cold_ms", 30);
    assert_false(rec_has(r, "full_display_ms"));
    pacer_free(p);
    rec_capture_clear(&c);
}

static void test_outlier(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, NULL);
    marks(p, 0, 1, 2, 30001);
    ev_create(p, 30010, 1, "W", W);
    ev_at(p, 30050, PACER_EV_PAGE_DRAW, 1);
    pacer_free(p);
    json_t *r = cold(&c);
    assert_true(json_is_true(json_object_get(r, "outlier")));
    assert_ms(r, "cold_ms", 30050);
    rec_capture_clear(&c);

    p = test_pacer_new(&c, NULL);
    marks(p, 0, 1, 2, 30000); /* exactly 30 s: not an outlier */
    pacer_free(p);
    assert_false(json_is_true(json_object_get(cold(&c), "outlier")));
    rec_capture_clear(&c);
}

static void test_without_launch_mark(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, NULL);
    ev_at(p, 5, PACER_EV_MAIN, 0);
    ev_create(p, 10, 1, "W", W);
    ev_at(p, 20, PACER_EV_PAGE_DRAW, 1);
    pacer_free(p);
    json_t *r = cold(&c);
    assert_false(rec_has(r, "cold_ms"));
    assert_false(rec_has(r, "app_cost_ms"));
    json_t *ph = json_object_get(r, "phases");
    assert_int_equal(json_integer_value(json_object_get(ph, "main_frame")), 20000000);
    rec_capture_clear(&c);
}

static void test_nothing_no_startup_record(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, NULL);
    ev_api(p, 1, PACER_EV_API_START, "/x", 1, 0);
    pacer_free(p);
    assert_int_equal(rec_count(&c, "startup"), 0);
    rec_capture_clear(&c);
}

static void test_marks_first_wins(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, NULL);
    ev_at(p, 0, PACER_EV_LAUNCH, 0);
    ev_at(p, 10, PACER_EV_APP_CREATED, 0);
    ev_at(p, 20, PACER_EV_APP_CREATED, 0);
    ev_at(p, 25, PACER_EV_LAUNCH, 0);
    ev_create(p, 30, 1, "W", W);
    ev_at(p, 40, PACER_EV_PAGE_DRAW, 1);
    pacer_free(p);
    json_t *r = cold(&c);
    assert_ms(r, "app_cost_ms", 10);
    assert_ms(r, "cold_ms", 40);
    rec_capture_clear(&c);
}

/* A launch that hands off to a running instance: a handoff record, no cold
 * start; one that opens a window after all is a cold start as before. */
static void test_handoff(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, NULL);
    marks(p, 0, 2, 5, -1);
    ev_at(p, 40, PACER_EV_HANDOFF, 0);
    pacer_free(p);
    assert_int_equal(rec_count(&c, "startup"), 1);
    json_t *r = rec_find(&c, "startup", "kind", "handoff", 0);
    assert_non_null(r);
    assert_ms(r, "handoff_ms", 40);
    assert_false(rec_has(r, "cold_ms"));
    json_t *ph = json_object_get(r, "phases");
    assert_int_equal((int64_t)json_integer_value(json_object_get(ph, "handoff")), 40000000);
    assert_int_equal((int64_t)json_integer_value(json_object_get(ph, "main")), 5000000);
    rec_capture_clear(&c);

    p = test_pacer_new(&c, NULL);
    marks(p, 0, 2, 5, -1);
    ev_at(p, 40, PACER_EV_HANDOFF, 0);
    ev_create(p, 60, 1, "W", W);
    ev_at(p, 80, PACER_EV_PAGE_DRAW, 1);
    pacer_free(p);
    json_t *r2 = cold(&c);
    assert_ms(r2, "cold_ms", 80);
    rec_capture_clear(&c);
}

/* A run without a toolkit adapter: no pages; the first frame a top-level
 * surface presented is the first and the main frame, and the cold record
 * is due at once, saying which display path gave it. */
static void test_cold_from_display_frame(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, NULL);
    marks(p, 0, 2, 5, -1);
    pacer_event ev = {.t_ns = 250000000, .type = PACER_EV_FIRST_FRAME, .source = "x11_image"};
    assert_int_equal(pacer_submit(p, &ev), 0);
    pacer_flush(p);
    json_t *r = cold(&c); /* written at the frame, not at the end */
    assert_ms(r, "cold_ms", 250);
    assert_ms(r, "first_screen_ms", 250);
    assert_string_equal(rec_str(r, "frame_source"), "x11_image");
    assert_null(json_object_get(r, "toolkit"));
    assert_null(json_object_get(r, "main_page"));
    assert_null(json_object_get(r, "app_cost_ms"));
    /* a second surface's first frame changes nothing */
    ev.t_ns = 300000000;
    assert_int_equal(pacer_submit(p, &ev), 0);
    pacer_free(p);
    assert_int_equal(rec_count(&c, "startup"), 1);
    rec_capture_clear(&c);
}

/* With a toolkit adapter the pages' draws give the frames: a display's
 * first frame is ignored once a window exists; the record names the
 * toolkit and says the first frame was a page's. */
static void test_toolkit_pages_win_over_display(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, NULL);
    marks(p, 0, 2, 5, 50);
    pacer_event tk = {.t_ns = 6000000, .type = PACER_EV_TOOLKIT, .class_name = "gtk3"};
    assert_int_equal(pacer_submit(p, &tk), 0);
    ev_create(p, 60, 1, "MainWindow", W);
    pacer_event ev = {.t_ns = 90000000, .type = PACER_EV_FIRST_FRAME, .source = "wayland"};
    assert_int_equal(pacer_submit(p, &ev), 0);
    ev_at(p, 100, PACER_EV_PAGE_DRAW, 1);
    pacer_free(p);
    json_t *r = cold(&c);
    assert_ms(r, "cold_ms", 100);
    assert_ms(r, "first_screen_ms", 100);
    assert_string_equal(rec_str(r, "frame_source"), "page");
    assert_string_equal(rec_str(r, "toolkit"), "gtk3");
    assert_string_equal(rec_str(r, "main_page"), "MainWindow");
    rec_capture_clear(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cold_without_splash),
        cmocka_unit_test(test_cold_from_display_frame),
        cmocka_unit_test(test_toolkit_pages_win_over_display),
        cmocka_unit_test(test_cold_with_splash),
        cmocka_unit_test(test_splash_without_main_tag),
        cmocka_unit_test(test_zero_config_first_window_is_main),
        cmocka_unit_test(test_main_tag_on_inner_page),
        cmocka_unit_test(test_warm_start),
        cmocka_unit_test(test_no_warm_before_cold_finished),
        cmocka_unit_test(test_outlier),
        cmocka_unit_test(test_without_launch_mark),
        cmocka_unit_test(test_nothing_no_startup_record),
        cmocka_unit_test(test_marks_first_wins),
        cmocka_unit_test(test_handoff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
