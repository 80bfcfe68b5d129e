/* Unit tests of the page model's formulas (src/core/page.c), branch by
 * branch, against values computed by hand from seed 000's code. */
#include "page.h"
#include "url.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MS(x) ((int64_t)(x) * 1000000)

static const char xml[] =
    "<page id=\"Home\" tag=\"1\">\n"
    "  <api id=\"/api/config\"/>\n"
    "  <api id=\"/api/list\"/>\n"
    "</page>\n"
    "<page id=\"NoApi\" tag=\"0\"/>\n"
    "<page id=\"Full\"><api id=\"https://example.com/api/full?x=1\"/></page>\n";

static pacer_config *cfg;

static int setup(void **state)
{
    (void)state;
    char *err = NULL;
    cfg = pacer_config_parse(xml, sizeof(xml) - 1, &err);
    if (!cfg)
        fail_msg("config: %s", err);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    pacer_config_unref(cfg);
    return 0;
}

/* The model reduces a request URL to its path once per event. */
static bool api_start(page *p, const char *url, uint64_t req, int64_t t)
{
    const char *path;
    size_t len = url_path(url, &path);
    return page_on_api_start(p, path, len, req, t);
}

static bool api_end(page *p, const char *url, uint64_t req, int status, int64_t t)
{
    const char *path;
    size_t len = url_path(url, &path);
    return page_on_api_end(p, path, len, req, status, t);
}

static page *new_page(const char *cls, int64_t t)
{
    page *p = page_new(1, cls, PACER_PAGE_WINDOW, cfg, pacer_config_find_page(cfg, cls), t);
    assert_non_null(p);
    return p;
}

static int64_t get(bool (*fn)(const page *, int64_t *), const page *p)
{
    int64_t v = -12345;
    assert_true(fn(p, &v));
    return v;
}

static void assert_absent(bool (*fn)(const page *, int64_t *), const page *p)
{
    int64_t v;
    assert_false(fn(p, &v));
}

/* create 0, view 10, draw 50 (initial), config 60→160, list 70→200, draw 230 */
static void test_normal_page(void **state)
{
    (void)state;
    page *p = new_page("Home", MS(0));
    page_on_view_created(p, MS(10));
    assert_int_equal(page_on_draw(p, MS(50)), PAGE_DRAW_FIRST);
    assert_true(api_start(p, "/api/config", 1, MS(60)));
    assert_true(api_start(p, "/api/list", 2, MS(70)));
    assert_true(api_end(p, "/api/config", 1, 200, MS(160)));
    assert_false(page_all_apis_loaded(p));
    assert_int_equal(page_on_draw(p, MS(180)), 0); /* list still loading */
    assert_true(api_end(p, "/api/list", 2, 200, MS(200)));
    assert_int_equal(page_on_draw(p, MS(230)), PAGE_DRAW_REPORT);
    assert_int_equal(get(page_initial_draw_ns, p), MS(50));
    assert_int_equal(get(page_api_load_ns, p), MS(140));   /* 200 - 60 */
    assert_int_equal(get(page_final_draw_ns, p), MS(30));  /* 230 - 200 */
    assert_int_equal(get(page_total_ns, p), MS(230));
    assert_int_equal(page_on_draw(p, MS(300)), 0);         /* reported once */
    page_free(p);
}

static void test_no_api_page(void **state)
{
    (void)state;
    page *p = new_page("NoApi", MS(100));
    assert_false(page_has_apis(p));
    assert_int_equal(page_on_draw(p, MS(140)), PAGE_DRAW_FIRST | PAGE_DRAW_REPORT);
    assert_int_equal(get(page_initial_draw_ns, p), MS(40));
    assert_absent(page_api_load_ns, p);
    assert_absent(page_final_draw_ns, p);
    assert_int_equal(get(page_total_ns, p), MS(40)); /* total = initial draw */
    page_free(p);
}

static void test_unconfigured_window(void **state)
{
    (void)state;
    page *p = page_new(9, "SomeWindow", PACER_PAGE_WINDOW, cfg, -1, MS(0));
    assert_non_null(p);
    assert_false(page_has_apis(p));
    assert_false(api_start(p, "/api/config", 1, MS(1)));
    assert_int_equal(page_on_draw(p, MS(25)), PAGE_DRAW_FIRST | PAGE_DRAW_REPORT);
    assert_int_equal(get(page_total_ns, p), MS(25));
    page_free(p);
}

/* APIs finish before the first draw: the first draw finishes the page. */
static void test_apis_done_before_first_draw(void **state)
{
    (void)state;
    page *p = new_page("Home", MS(0));
    api_start(p, "/api/config", 1, MS(5));
    api_start(p, "/api/list", 2, MS(6));
    api_end(p, "/api/list", 2, 200, MS(20));
    api_end(p, "/api/config", 1, 200, MS(30));
    page_on_view_created(p, MS(35));
    assert_int_equal(page_on_draw(p, MS(40)), PAGE_DRAW_FIRST | PAGE_DRAW_REPORT);
    assert_int_equal(get(page_initial_draw_ns, p), MS(40));
    assert_int_equal(get(page_api_load_ns, p), MS(25)); /* 30 - 5 */
    assert_absent(page_final_draw_ns, p);
    assert_int_equal(get(page_total_ns, p), MS(40));
    page_free(p);
}

/* Lazy page: built at 0..10, shown (selected + scrolled to) at 1000. */
static void test_lazy_page_selected_and_scrolled(void **state)
{
    (void)state;
    page *p = new_page("Full", MS(0));
    page_on_view_created(p, MS(10));
    page_on_select(p, MS(1000));
    page_on_scroll(p, MS(1000));
    assert_int_equal(page_on_draw(p, MS(1030)), PAGE_DRAW_FIRST);
    api_start(p, "/api/full", 7, MS(1040));
    api_end(p, "/api/full", 7, 200, MS(1240));
    assert_int_equal(page_on_draw(p, MS(1260)), PAGE_DRAW_REPORT);
    /* initial: 1030 - 0 - (1000 - 10) = 40 */
    assert_int_equal(get(page_initial_draw_ns, p), MS(40));
    assert_int_equal(get(page_api_load_ns, p), MS(200));
    /* scroll (1000) is before api end: no correction, 1260 - 1240 */
    assert_int_equal(get(page_final_draw_ns, p), MS(20));
    /* total: 1260 - 0 - (1000 - 10) = 270 */
    assert_int_equal(get(page_total_ns, p), MS(270));
    page_free(p);
}

/* Scrolled to after its data arrived: the final draw waits for the scroll. */
static void test_scroll_after_api_end(void **state)
{
    (void)state;
    page *p = new_page("Full", MS(0));
    page_on_view_created(p, MS(10));
    api_start(p, "/api/full", 7, MS(12));
    assert_int_equal(page_on_draw(p, MS(30)), PAGE_DRAW_FIRST);
    api_end(p, "/api/full", 7, 200, MS(100));
    page_on_scroll(p, MS(500));
    page_on_select(p, MS(500));
    assert_int_equal(page_on_draw(p, MS(520)), PAGE_DRAW_REPORT);
    assert_int_equal(get(page_initial_draw_ns, p), MS(30)); /* scroll after initial draw */
    /* final: 520 - 100 - (500 - 100) = 20 */
    assert_int_equal(get(page_final_draw_ns, p), MS(20));
    /* total: 520 - 0 - (500 - 10) = 30 */
    assert_int_equal(get(page_total_ns, p), MS(30));
    page_free(p);
}

/* Boundaries of the corrections: scroll == initial draw end subtracts,
 * selected == final draw end does not (≤ vs < in the seed). */
static void test_correction_boundaries(void **state)
{
    (void)state;
    page *p = new_page("Full", MS(0));
    page_on_view_created(p, MS(10));
    page_on_scroll(p, MS(50));
    page_on_draw(p, MS(50));
    assert_int_equal(get(page_initial_draw_ns, p), MS(10)); /* 50 - (50 - 10) */
    page_free(p);

    p = new_page("Full", MS(0));
    page_on_view_created(p, MS(10));
    api_start(p, "/api/full", 1, MS(11));
    page_on_draw(p, MS(20));
    api_end(p, "/api/full", 1, 200, MS(40));
    page_on_select(p, MS(60));
    page_on_draw(p, MS(60));
    assert_int_equal(get(page_total_ns, p), MS(60)); /* selected == final: no correction */
    page_free(p);

    /* selection before the view existed: no correction either */
    p = new_page("NoApi", MS(0));
    page_on_select(p, MS(2));
    page_on_view_created(p, MS(10));
    page_on_scroll(p, MS(5));
    page_on_draw(p, MS(30));
    assert_int_equal(get(page_initial_draw_ns, p), MS(30));
    assert_int_equal(get(page_total_ns, p), MS(30));
    page_free(p);
}

static void test_failed_request_counts_as_end(void **state)
{
    (void)state;
    page *p = new_page("Home", MS(0));
    page_on_draw(p, MS(10));
    api_start(p, "/api/config", 1, MS(20));
    api_start(p, "/api/list", 2, MS(20));
    assert_true(api_end(p, "/api/config", 1, 0, MS(50)));   /* transport failure */
    assert_true(api_end(p, "/api/list", 2, 500, MS(80)));   /* server error */
    assert_true(page_all_apis_loaded(p));
    assert_int_equal(page_on_draw(p, MS(90)), PAGE_DRAW_REPORT);
    assert_int_equal(get(page_api_load_ns, p), MS(60));
    assert_int_equal(p->apis[0].status, 0);
    assert_int_equal(p->apis[1].status, 500);
    page_free(p);
}

static void test_unconfigured_url_and_repeats_ignored(void **state)
{
    (void)state;
    page *p = new_page("Home", MS(0));
    assert_false(api_start(p, "/api/other", 1, MS(1)));
    assert_false(api_end(p, "/api/other", 1, 200, MS(2)));
    assert_true(api_start(p, "/api/config", 2, MS(10)));
    assert_false(api_start(p, "/api/config", 3, MS(11))); /* LOADING already */
    assert_false(api_end(p, "/api/list", 4, 200, MS(12)));  /* never started */
    assert_true(api_end(p, "/api/config", 2, 200, MS(20)));
    assert_false(api_start(p, "/api/config", 5, MS(21))); /* LOADED: once */
    assert_int_equal(p->api_load_start, MS(10));
    assert_int_equal(p->apis[0].end_ns, MS(20));
    page_free(p);
}

static void test_url_with_host_and_query(void **state)
{
    (void)state;
    page *p = new_page("Home", MS(0));
    assert_true(api_start(p, "http://127.0.0.1:8080/api/config?lang=en#top", 1, MS(1)));
    assert_true(api_start(p, "https://shop.example/api/list", 2, MS(2)));
    assert_true(api_end(p, "/api/config?other=1", 1, 200, MS(5)));
    assert_true(api_end(p, "//cdn.example/api/list", 2, 200, MS(9)));
    assert_int_equal(get(page_api_load_ns, p), MS(8));
    page_free(p);

    /* a configured full URL is matched on its path too */
    p = new_page("Full", MS(0));
    assert_string_equal(p->apis[0].path, "/api/full");
    assert_true(api_start(p, "http://localhost/api/full", 1, MS(1)));
    page_free(p);
}

/* With request ids on both sides, another request of the same URL does not
 * end this page's API; an unknown id (0) matches on the URL as the seed. */
static void test_request_ids(void **state)
{
    (void)state;
    page *p = new_page("Full", MS(0));
    api_start(p, "/api/full", 11, MS(1));
    assert_false(api_end(p, "/api/full", 12, 200, MS(5)));
    assert_true(api_end(p, "/api/full", 11, 200, MS(9)));
    page_free(p);
    p = new_page("Full", MS(0));
    api_start(p, "/api/full", 11, MS(1));
    assert_true(api_end(p, "/api/full", 0, 200, MS(9)));
    page_free(p);
}

/* APIs that started but never drew again: no final draw, no api_load if
 * not all ended. */
static void test_partial_metrics(void **state)
{
    (void)state;
    page *p = new_page("Home", MS(0));
    page_on_draw(p, MS(10));
    api_start(p, "/api/config", 1, MS(20));
    assert_absent(page_api_load_ns, p);
    assert_absent(page_final_draw_ns, p);
    assert_int_equal(get(page_total_ns, p), MS(10));
    page_free(p);
    p = new_page("Home", MS(0));
    assert_absent(page_initial_draw_ns, p);
    assert_absent(page_total_ns, p);
    page_free(p);
}

static void test_first_event_wins(void **state)
{
    (void)state;
    page *p = new_page("NoApi", MS(0));
    page_on_view_created(p, MS(5));
    page_on_view_created(p, MS(7));
    page_on_select(p, MS(8));
    page_on_select(p, MS(9));
    page_on_scroll(p, MS(8));
    page_on_scroll(p, MS(9));
    assert_int_equal(p->view_created, MS(5));
    assert_int_equal(p->selected, MS(8));
    assert_int_equal(p->scroll_to, MS(8));
    page_free(p);
}

static void test_deadline_from_config(void **state)
{
    (void)state;
    page *p = new_page("Home", MS(100));
    assert_int_equal(p->deadline_ns, MS(100) + (int64_t)PACER_DEFAULT_PAGE_DEADLINE_MS * 1000000);
    page_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normal_page),
        cmocka_unit_test(test_no_api_page),
        cmocka_unit_test(test_unconfigured_window),
        cmocka_unit_test(test_apis_done_before_first_draw),
        cmocka_unit_test(test_lazy_page_selected_and_scrolled),
        cmocka_unit_test(test_scroll_after_api_end),
        cmocka_unit_test(test_correction_boundaries),
        cmocka_unit_test(test_failed_request_counts_as_end),
        cmocka_unit_test(test_unconfigured_url_and_repeats_ignored),
        cmocka_unit_test(test_url_with_host_and_query),
        cmocka_unit_test(test_request_ids),
        cmocka_unit_test(test_partial_metrics),
        cmocka_unit_test(test_first_event_wins),
        cmocka_unit_test(test_deadline_from_config),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
