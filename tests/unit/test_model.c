/* The model through the public API: which pages are tracked, when and how
 * they report, the record fields, config swaps and custom records. */
#include "records.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static const char shop_xml[] =
    "<pacer>\n"
    "  <page id=\"HomeWindow\" tag=\"1\"><api id=\"/api/config\"/><api id=\"/api/list\"/></page>\n"
    "  <page id=\"MerchantPage\"><api id=\"/api/test1\"/></page>\n"
    "  <splash id=\"SplashWindow\"/>\n"
    "  <thresholds page-deadline-ms=\"1000\"/>\n"
    "</pacer>\n";

#define S PACER_EV_API_START
#define E PACER_EV_API_END

static void assert_ms(json_t *rec, const char *key, double want)
{
    double got = rec_num(rec, key);
    if (got < want - 0.0005 || got > want + 0.0005)
        fail_msg("%s = %.3f, want %.3f", key, got, want);
}

static void test_record_fields(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, shop_xml);
    ev_create(p, 0, 1, "HomeWindow", PACER_PAGE_WINDOW);
    ev_at(p, 10, PACER_EV_PAGE_VIEW_CREATED, 1);
    ev_api(p, 20, S, "http://127.0.0.1:9/api/config", 1, 0);
    ev_at(p, 40, PACER_EV_PAGE_DRAW, 1);
    ev_api(p, 120, E, "http://127.0.0.1:9/api/config", 1, 200);
    ev_api(p, 125, S, "http://127.0.0.1:9/api/list?page=1", 2, 0);
    ev_api(p, 425.5, E, "http://127.0.0.1:9/api/list?page=1", 2, 200);
    ev_at(p, 440, PACER_EV_PAGE_DRAW, 1);
    pacer_free(p);

    assert_int_equal(rec_count(&c, "page"), 1);
    json_t *r = rec_find(&c, "page", "page", "HomeWindow", 0);
    assert_non_null(r);
    assert_string_equal(rec_str(r, "app"), "test");
    assert_string_equal(rec_str(r, "version"), "1.0");
    assert_string_equal(rec_str(r, "session"), "s1");
    assert_true(rec_num(r, "pid") > 0);
    assert_true(rec_num(r, "ts") > 0);
    assert_int_equal((int)rec_num(r, "instance"), 1);
    assert_string_equal(rec_str(r, "kind"), "window");
    assert_string_equal(rec_str(r, "status"), "complete");
    assert_true(json_is_true(json_object_get(r, "main")));
    assert_ms(r, "initial_draw_ms", 40);
    assert_ms(r, "api_load_ms", 405.5);
    assert_ms(r, "final_draw_ms", 14.5);
    assert_ms(r, "total_ms", 440);
    json_t *apis = json_object_get(r, "apis");
    assert_int_equal(json_array_size(apis), 2);
    assert_string_equal(rec_str(json_array_get(apis, 0), "url"), "/api/config");
    assert_ms(json_array_get(apis, 0), "ms", 100);
    assert_int_equal((int)rec_num(json_array_get(apis, 0), "status"), 200);
    assert_ms(json_array_get(apis, 1), "ms", 300.5);
    rec_capture_clear(&c);
}

/* Events stamped before their submitter took the instance lock may arrive
 * after later ones (a request ending on a worker thread while the GTK
 * thread draws): the model never lets time run backwards. */
static void test_time_never_runs_backwards(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, shop_xml);
    ev_create(p, 0, 1, "HomeWindow", PACER_PAGE_WINDOW);
    ev_at(p, 5, PACER_EV_PAGE_DRAW, 1);
    ev_api(p, 20, S, "http://h/api/config", 1, 0);
    ev_api(p, 15, E, "http://h/api/config", 1, 200); /* stamped before the start arrived */
    ev_api(p, 30, S, "http://h/api/list", 2, 0);
    ev_at(p, 100, PACER_EV_PAGE_DRAW, 1);          /* the GTK thread draws... */
    ev_api(p, 90, E, "http://h/api/list", 2, 200); /* ...then a request stamped earlier arrives */
    ev_at(p, 120, PACER_EV_PAGE_DRAW, 1);          /* the draw after the data: the final one */
    pacer_free(p);

    json_t *r = rec_find(&c, "page", "page", "HomeWindow", 0);
    assert_non_null(r);
    json_t *apis = json_object_get(r, "apis");
    assert_ms(json_array_get(apis, 0), "ms", 0);  /* not -5 */
    assert_ms(json_array_get(apis, 1), "ms", 70); /* 30 → 100, the time it arrived */
    assert_ms(r, "api_load_ms", 80);
    assert_ms(r, "final_draw_ms", 20);            /* the draw at 100 preceded the data */
    assert_ms(r, "total_ms", 120);
    rec_capture_clear(&c);
}

static void test_no_api_window_omits_absent_fields(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, NULL);
    ev_create(p, 0, 5, "AboutWindow", PACER_PAGE_WINDOW);
    ev_at(p, 33, PACER_EV_PAGE_DRAW, 5);
    pacer_free(p);
    json_t *r = rec_find(&c, "page", "page", "AboutWindow", 0);
    assert_non_null(r);
    assert_ms(r, "initial_draw_ms", 33);
    assert_ms(r, "total_ms", 33);
    assert_false(rec_has(r, "api_load_ms"));
    assert_false(rec_has(r, "final_draw_ms"));
    assert_false(rec_has(r, "apis"));
    /* zero config: the first window is the main one */
    assert_true(json_is_true(json_object_get(r, "main")));
    rec_capture_clear(&c);
}

static void test_two_instances_measured_separately(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, shop_xml);
    ev_create(p, 0, 100, "MerchantPage", PACER_PAGE_PAGE);
    ev_create(p, 5, 200, "MerchantPage", PACER_PAGE_PAGE);
    ev_api(p, 10, S, "/api/test1", 1, 0);   /* both pages: NONE → LOADING */
    ev_at(p, 20, PACER_EV_PAGE_DRAW, 100);
    ev_at(p, 25, PACER_EV_PAGE_DRAW, 200);
    ev_api(p, 60, E, "/api/test1", 1, 200);
    ev_at(p, 70, PACER_EV_PAGE_DRAW, 200);
    ev_at(p, 90, PACER_EV_PAGE_DRAW, 100);
    pacer_free(p);
    assert_int_equal(rec_count(&c, "page"), 2);
    json_t *a = rec_find(&c, "page", NULL, NULL, 0);
    json_t *b = rec_find(&c, "page", NULL, NULL, 1);
    assert_int_equal((int)rec_num(a, "instance"), 200); /* finished first */
    assert_ms(a, "total_ms", 65);
    assert_ms(a, "initial_draw_ms", 20);
    assert_ms(a, "final_draw_ms", 10);
    assert_int_equal((int)rec_num(b, "instance"), 100);
    assert_ms(b, "total_ms", 90);
    assert_ms(b, "final_draw_ms", 30);
    assert_string_equal(rec_str(b, "kind"), "page");
    assert_false(json_is_true(json_object_get(b, "main")));
    rec_capture_clear(&c);
}

static void test_requests_before_create_do_not_count(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, shop_xml);
    ev_api(p, 0, S, "/api/test1", 1, 0);
    ev_create(p, 5, 100, "MerchantPage", PACER_PAGE_PAGE);
    ev_api(p, 10, E, "/api/test1", 1, 200);   /* not this page's request */
    ev_at(p, 20, PACER_EV_PAGE_DRAW, 100);
    ev_api(p, 30, S, "/api/test1", 2, 0);
    ev_api(p, 80, E, "/api/test1", 2, 200);
    ev_at(p, 85, PACER_EV_PAGE_DRAW, 100);
    pacer_free(p);
    json_t *r = rec_find(&c, "page", "page", "MerchantPage", 0);
    assert_ms(r, "api_load_ms", 50);
    assert_ms(r, "total_ms", 80);
    rec_capture_clear(&c);
}

static void test_unconfigured_inner_page_ignored(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, shop_xml);
    ev_create(p, 0, 1, "SettingsPage", PACER_PAGE_PAGE);
    ev_at(p, 10, PACER_EV_PAGE_DRAW, 1);
    ev_at(p, 12, PACER_EV_PAGE_DRAW, 77); /* never created */
    pacer_free(p);
    assert_int_equal(rec_count(&c, "page"), 0);
    rec_capture_clear(&c);
}

static void test_repeated_create_keeps_first(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, NULL);
    ev_create(p, 0, 1, "W", PACER_PAGE_WINDOW);
    ev_create(p, 50, 1, "W", PACER_PAGE_WINDOW);
    ev_at(p, 60, PACER_EV_PAGE_DRAW, 1);
    /* after destroy the id may be reused by a new instance */
    ev_at(p, 70, PACER_EV_PAGE_DESTROY, 1);
    ev_create(p, 100, 1, "W", PACER_PAGE_WINDOW);
    ev_at(p, 130, PACER_EV_PAGE_DRAW, 1);
    pacer_free(p);
    assert_int_equal(rec_count(&c, "page"), 2);
    assert_ms(rec_find(&c, "page", NULL, NULL, 0), "total_ms", 60);
    assert_ms(rec_find(&c, "page", NULL, NULL, 1), "total_ms", 30);
    rec_capture_clear(&c);
}

static void test_abandoned(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, shop_xml);
    ev_create(p, 0, 1, "HomeWindow", PACER_PAGE_WINDOW);
    ev_at(p, 30, PACER_EV_PAGE_DRAW, 1);
    ev_api(p, 40, S, "/api/config", 1, 0);
    ev_at(p, 100, PACER_EV_PAGE_DESTROY, 1);
    ev_api(p, 140, E, "/api/config", 1, 200);
    pacer_free(p);
    assert_int_equal(rec_count(&c, "page"), 1);
    json_t *r = rec_find(&c, "page", NULL, NULL, 0);
    assert_string_equal(rec_str(r, "status"), "abandoned");
    assert_ms(r, "initial_draw_ms", 30);
    assert_false(rec_has(r, "total_ms"));
    assert_false(rec_has(r, "api_load_ms"));
    json_t *api = json_array_get(json_object_get(r, "apis"), 0);
    assert_false(rec_has(api, "ms"));
    rec_capture_clear(&c);
}

/* page-deadline-ms is 1000 in shop_xml: the deadline passes while events of
 * other pages keep arriving. */
static void test_deadline_exceeded_by_later_event(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, shop_xml);
    ev_create(p, 0, 1, "HomeWindow", PACER_PAGE_WINDOW);
    ev_at(p, 30, PACER_EV_PAGE_DRAW, 1);
    ev_api(p, 40, S, "/api/config", 1, 0);
    ev_create(p, 999, 2, "OtherWindow", PACER_PAGE_WINDOW);
    assert_int_equal(rec_count(&c, "page"), 0);
    ev_at(p, 1000, PACER_EV_PAGE_DRAW, 2);
    pacer_flush(p);
    assert_int_equal(rec_count(&c, "page"), 2);
    json_t *r = rec_find(&c, "page", "page", "HomeWindow", 0);
    assert_string_equal(rec_str(r, "status"), "deadline_exceeded");
    /* reported once: a late end and draw change nothing */
    ev_api(p, 1100, E, "/api/config", 1, 200);
    ev_at(p, 1110, PACER_EV_PAGE_DRAW, 1);
    pacer_free(p);
    assert_int_equal(rec_count(&c, "page"), 2);
    rec_capture_clear(&c);
}

static void test_end_of_input_incomplete_vs_deadline(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, shop_xml);
    ev_create(p, 0, 1, "MerchantPage", PACER_PAGE_PAGE);
    ev_create(p, 500, 2, "MerchantPage", PACER_PAGE_PAGE);
    ev_at(p, 1200, PACER_EV_PAGE_DRAW, 2); /* page 1's deadline (1000) passed */
    pacer_free(p);
    json_t *r1 = NULL, *r2 = NULL;
    for (size_t i = 0; i < rec_count(&c, "page"); i++) {
        json_t *r = rec_find(&c, "page", NULL, NULL, i);
        if ((int)rec_num(r, "instance") == 1)
            r1 = r;
        else
            r2 = r;
    }
    assert_string_equal(rec_str(r1, "status"), "deadline_exceeded");
    assert_string_equal(rec_str(r2, "status"), "incomplete");
    assert_ms(r2, "initial_draw_ms", 700);
    rec_capture_clear(&c);
}

static json_t *page_by_instance(rec_capture *c, int instance)
{
    for (size_t i = 0; i < rec_count(c, "page"); i++) {
        json_t *r = rec_find(c, "page", NULL, NULL, i);
        if ((int)rec_num(r, "instance") == instance)
            return r;
    }
    return NULL;
}

/* A source that sends page_show: a deadline runs from the show (1000 ms in
 * shop_xml), a page never shown has none and ends as never_shown, whether
 * destroyed or still there at the end. */
static void test_never_shown_and_deadline_from_show(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, shop_xml);
    ev_create(p, 0, 1, "HomeWindow", PACER_PAGE_WINDOW);
    ev_create(p, 5, 2, "AboutDialog", PACER_PAGE_WINDOW);   /* never shown, destroyed */
    ev_create(p, 6, 3, "ShortcutsWindow", PACER_PAGE_WINDOW); /* never shown, alive at the end */
    ev_create(p, 7, 4, "PrefsWindow", PACER_PAGE_WINDOW);   /* shown late, never finishes */
    ev_at(p, 10, PACER_EV_PAGE_SHOW, 1);
    ev_at(p, 30, PACER_EV_PAGE_DRAW, 1);
    ev_api(p, 40, S, "/api/config", 1, 0);
    ev_at(p, 900, PACER_EV_PAGE_SHOW, 4);
    ev_api(p, 1500, S, "/api/other", 2, 0); /* page 1's deadline (10 + 1000) passed */
    pacer_flush(p);
    assert_int_equal(rec_count(&c, "page"), 1);
    assert_string_equal(rec_str(page_by_instance(&c, 1), "status"), "deadline_exceeded");
    ev_at(p, 1600, PACER_EV_PAGE_DESTROY, 2);
    ev_api(p, 1850, S, "/api/other", 3, 0); /* page 4: 900 + 1000 not reached */
    pacer_flush(p);
    assert_int_equal(rec_count(&c, "page"), 2);
    assert_string_equal(rec_str(page_by_instance(&c, 2), "status"), "never_shown");
    ev_api(p, 1901, S, "/api/other", 4, 0);
    pacer_flush(p);
    assert_int_equal(rec_count(&c, "page"), 3);
    assert_string_equal(rec_str(page_by_instance(&c, 4), "status"), "deadline_exceeded");
    pacer_free(p);
    assert_int_equal(rec_count(&c, "page"), 4);
    json_t *r3 = page_by_instance(&c, 3);
    assert_string_equal(rec_str(r3, "status"), "never_shown");
    assert_false(rec_has(r3, "initial_draw_ms"));
    rec_capture_clear(&c);
}

/* A page that was shown and left unfinished at the end is incomplete, as
 * before; its sibling destroyed unseen is never_shown. */
static void test_shown_then_unfinished_is_incomplete(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, shop_xml);
    ev_create(p, 0, 1, "MerchantPage", PACER_PAGE_PAGE);
    ev_create(p, 1, 2, "MerchantPage", PACER_PAGE_PAGE);
    ev_at(p, 10, PACER_EV_PAGE_SHOW, 1);
    ev_at(p, 20, PACER_EV_PAGE_DESTROY, 2);
    ev_at(p, 30, PACER_EV_PAGE_DRAW, 1);
    ev_api(p, 40, S, "/api/test1", 1, 0);
    pacer_free(p);
    assert_string_equal(rec_str(page_by_instance(&c, 1), "status"), "incomplete");
    assert_string_equal(rec_str(page_by_instance(&c, 2), "status"), "never_shown");
    rec_capture_clear(&c);
}

static void test_config_swap_keeps_snapshot(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, shop_xml);
    ev_create(p, 0, 1, "MerchantPage", PACER_PAGE_PAGE);
    const char *xml2 = "<page id=\"MerchantPage\"><api id=\"/api/v2\"/></page>";
    char *err = NULL;
    pacer_config *cfg2 = pacer_config_parse(xml2, strlen(xml2), &err);
    assert_non_null(cfg2);
    pacer_set_config(p, cfg2);
    pacer_config_unref(cfg2);
    ev_create(p, 1, 2, "MerchantPage", PACER_PAGE_PAGE);
    ev_api(p, 10, S, "/api/test1", 1, 0);
    ev_api(p, 11, S, "/api/v2", 2, 0);
    ev_api(p, 50, E, "/api/test1", 1, 200);
    ev_api(p, 60, E, "/api/v2", 2, 200);
    ev_at(p, 70, PACER_EV_PAGE_DRAW, 1);
    ev_at(p, 70, PACER_EV_PAGE_DRAW, 2);
    pacer_free(p);
    json_t *a = rec_find(&c, "page", NULL, NULL, 0);
    json_t *b = rec_find(&c, "page", NULL, NULL, 1);
    assert_string_equal(rec_str(json_array_get(json_object_get(a, "apis"), 0), "url"), "/api/test1");
    assert_ms(a, "api_load_ms", 40);
    assert_string_equal(rec_str(json_array_get(json_object_get(b, "apis"), 0), "url"), "/api/v2");
    assert_ms(b, "api_load_ms", 49);
    rec_capture_clear(&c);
}

/* pacer_get_config hands out the config in force, as a new reference that
 * outlives a later swap. */
static void test_get_config_follows_swaps(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, shop_xml);
    pacer_config *a = pacer_get_config(p);
    assert_non_null(a);
    assert_int_equal(pacer_config_jank_ms(a), PACER_DEFAULT_JANK_MS);
    const char *xml2 = "<pacer><thresholds jank-ms=\"250\" hang-ms=\"900\"/></pacer>";
    pacer_config *cfg2 = pacer_config_parse(xml2, strlen(xml2), NULL);
    assert_non_null(cfg2);
    pacer_set_config(p, cfg2);
    pacer_config_unref(cfg2);
    pacer_config *b = pacer_get_config(p);
    assert_int_equal(pacer_config_jank_ms(b), 250);
    assert_int_equal(pacer_config_hang_ms(b), 900);
    assert_int_equal(pacer_config_jank_ms(a), PACER_DEFAULT_JANK_MS); /* the old snapshot is intact */
    pacer_config_unref(a);
    pacer_config_unref(b);
    assert_null(pacer_get_config(NULL));
    pacer_free(p);
    rec_capture_clear(&c);
}

static void test_emit_custom_record(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, NULL);
    assert_int_equal(pacer_emit(p, "net", "\"url\":\"/x\",\"ms\":1.5"), 0);
    assert_int_equal(pacer_emit(p, "", NULL), -EINVAL);
    assert_int_equal(pacer_emit(p, "net", "{\"a\":1}"), -EINVAL);
    assert_int_equal(pacer_emit(p, "net", "\"a\":1\n"), -EINVAL);
    assert_int_equal(pacer_emit(p, "mark", NULL), 0);
    pacer_free(p);
    json_t *r = rec_find(&c, "net", NULL, NULL, 0);
    assert_non_null(r);
    assert_string_equal(rec_str(r, "url"), "/x");
    assert_string_equal(rec_str(r, "app"), "test");
    assert_non_null(rec_find(&c, "mark", NULL, NULL, 0));
    assert_int_equal(c.bad, 0);
    rec_capture_clear(&c);
}

/* A record event: the record as instrumentation would have submitted it at
 * the event's time, with the instance's common fields; page and start-up
 * records, records of the wrong shape and objects without a type are
 * refused. */
static void test_record_event(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, NULL);
    static const char jank[] = "{\"type\":\"jank\",\"kind\":\"jank\",\"duration_ms\":812.5,\"page\":\"W\","
                               "\"fingerprint\":\"00aa00bb00cc00dd\",\"stack\":[{\"function\":\"f\",\"in_app\":true}],"
                               "\"app\":\"ignored\"}";
    pacer_event ev = {.t_ns = 2000000, .type = PACER_EV_RECORD, .record = jank, .record_len = strlen(jank)};
    assert_int_equal(pacer_submit(p, &ev), 0);
    static const char *const bad[] = {
        "{\"type\":\"page\",\"page\":\"W\"}", "{\"type\":\"startup\",\"kind\":\"cold\"}",
        "{\"type\":\"jank\",\"duration_ms\":\"long\"}", "{\"duration_ms\":1}", "{\"type\":\"net\",\"total_ms\":-1}",
        "{\"type\":\"net\"", "{\"type\":\"\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ev.record = bad[i];
        ev.record_len = strlen(bad[i]);
        if (pacer_submit(p, &ev) != -EINVAL)
            fail_msg("record event %s was taken", bad[i]);
    }
    ev.record = NULL;
    ev.record_len = 0;
    assert_int_equal(pacer_submit(p, &ev), -EINVAL);
    pacer_free(p);
    assert_int_equal(rec_count(&c, "jank"), 1);
    json_t *r = rec_find(&c, "jank", NULL, NULL, 0);
    assert_string_equal(rec_str(r, "app"), "test");
    assert_string_equal(rec_str(r, "fingerprint"), "00aa00bb00cc00dd");
    assert_true(rec_num(r, "duration_ms") == 812.5);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(r, "stack"), 0), "function")),
                        "f");
    /* ts: the event's time on the wall clock, like every record of the run */
    assert_true(json_integer_value(json_object_get(r, "ts")) > 1600000000LL * 1000000000LL);
    assert_int_equal(rec_count(&c, "page"), 0);
    assert_int_equal(c.bad, 0);
    rec_capture_clear(&c);
}

static void test_invalid_events_rejected(void **state)
{
    (void)state;
    rec_capture c;
    pacer_t *p = test_pacer_new(&c, NULL);
    pacer_event ev = {.t_ns = 1, .type = PACER_EV_PAGE_CREATE, .page = 1};
    assert_int_equal(pacer_submit(p, &ev), -EINVAL); /* no class */
    ev = (pacer_event){.t_ns = 1, .type = PACER_EV_API_START};
    assert_int_equal(pacer_submit(p, &ev), -EINVAL); /* no url */
    ev = (pacer_event){.t_ns = 1, .type = (pacer_event_type)99};
    assert_int_equal(pacer_submit(p, &ev), -EINVAL);
    assert_int_equal(pacer_mark(p, PACER_EV_PAGE_DRAW), -EINVAL);
    pacer_stats st;
    pacer_get_stats(p, &st);
    assert_int_equal(st.events, 0);
    pacer_free(p);
    rec_capture_clear(&c);
}

static void test_raw_events_and_out_file(void **state)
{
    (void)state;
    char out[] = "/tmp/pacer-test-out-XXXXXX";
    char evs[] = "/tmp/pacer-test-ev-XXXXXX";
    int fd1 = mkstemp(out), fd2 = mkstemp(evs);
    assert_true(fd1 >= 0 && fd2 >= 0);
    close(fd1);
    close(fd2);
    pacer_options o = {.app_name = "t", .out_path = out, .raw_events_path = evs, .explicit_times = true};
    pacer_t *p;
    assert_int_equal(pacer_new(&o, &p, NULL), 0);
    ev_create(p, 0, 1, "W", PACER_PAGE_WINDOW);
    ev_at(p, 5, PACER_EV_PAGE_DRAW, 1);
    pacer_flush(p); /* records reach the file without waiting for the end */
    json_error_t jerr;
    json_t *r = json_load_file(out, JSON_DISABLE_EOF_CHECK, &jerr);
    assert_non_null(r);
    assert_string_equal(rec_str(r, "type"), "page");
    json_decref(r);
    pacer_free(p);
    FILE *f = fopen(evs, "r");
    char line[512];
    int n = 0;
    while (fgets(line, sizeof(line), f)) {
        pacer_event ev;
        char scratch[512], why[128];
        assert_int_equal(pacer_event_parse(line, strlen(line), scratch, &ev, why, sizeof(why)), 0);
        assert_int_equal(ev.type, n == 0 ? PACER_EV_PAGE_CREATE : PACER_EV_PAGE_DRAW);
        n++;
    }
    fclose(f);
    assert_int_equal(n, 2);
    unlink(out);
    unlink(evs);
    /* an output that cannot be opened is an error naming it */
    o.out_path = "/nonexistent-dir/x.jsonl";
    o.raw_events_path = NULL;
    char *err = NULL;
    assert_int_equal(pacer_new(&o, &p, &err), -ENOENT);
    assert_non_null(strstr(err, "/nonexistent-dir/x.jsonl"));
    free(err);
}

static void test_bad_config_path(void **state)
{
    (void)state;
    pacer_options o = {.config_path = "/nonexistent/pacer.xml"};
    pacer_t *p = NULL;
    char *err = NULL;
    assert_int_equal(pacer_new(&o, &p, &err), -EINVAL);
    assert_null(p);
    assert_non_null(strstr(err, "/nonexistent/pacer.xml"));
    free(err);
}

static void test_default_instance(void **state)
{
    (void)state;
    rec_capture c;
    rec_capture_init(&c);
    pacer_options o = {.app_name = "d", .on_record = rec_capture_fn, .user_data = &c};
    assert_null(pacer_default());
    assert_int_equal(pacer_init(&o, NULL), 0);
    assert_int_equal(pacer_init(&o, NULL), -EALREADY);
    pacer_t *p = pacer_default();
    assert_non_null(p);
    assert_int_equal(pacer_page_create(p, 1, "W", PACER_PAGE_WINDOW), 0);
    assert_int_equal(pacer_page_draw(p, 1), 0);
    pacer_shutdown();
    assert_int_equal(rec_count(&c, "page"), 1);
    assert_int_equal(pacer_page_draw(p, 1), -ESHUTDOWN); /* still safe to call */
    pacer_shutdown();
    rec_capture_clear(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_fields),
        cmocka_unit_test(test_no_api_window_omits_absent_fields),
        cmocka_unit_test(test_two_instances_measured_separately),
        cmocka_unit_test(test_requests_before_create_do_not_count),
        cmocka_unit_test(test_unconfigured_inner_page_ignored),
        cmocka_unit_test(test_repeated_create_keeps_first),
        cmocka_unit_test(test_abandoned),
        cmocka_unit_test(test_deadline_exceeded_by_later_event),
        cmocka_unit_test(test_end_of_input_incomplete_vs_deadline),
        cmocka_unit_test(test_never_shown_and_deadline_from_show),
        cmocka_unit_test(test_shown_then_unfinished_is_incomplete),
        cmocka_unit_test(test_config_swap_keeps_snapshot),
        cmocka_unit_test(test_get_config_follows_swaps),
        cmocka_unit_test(test_emit_custom_record),
        cmocka_unit_test(test_record_event),
        cmocka_unit_test(test_invalid_events_rejected),
        cmocka_unit_test(test_raw_events_and_out_file),
        cmocka_unit_test(test_bad_config_path),
        cmocka_unit_test(test_default_instance),
        cmocka_unit_test(test_time_never_runs_backwards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
