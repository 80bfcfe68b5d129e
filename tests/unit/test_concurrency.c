/* Concurrency: request events from many threads while pages draw, records
 * are emitted and the config is swapped. Every page must report exactly
 * once, complete, with every API accounted for; no event may be lost. */
#include "records.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define N_CLASSES 16
#define INSTANCES 4
#define N_PAGES (N_CLASSES * INSTANCES)
#define APIS 4
#define REQ_THREADS 8
#define ROUNDS 50 /* repetitions of the whole scenario */

static pacer_t *P;
static pacer_config *CFG;
static atomic_int stop_drawing;
static atomic_uint_fast64_t submitted;

static void submit_ok(int r)
{
    if (r != 0)
        fail_msg("submit failed: %d", r);
    atomic_fetch_add(&submitted, 1);
}

static void *requester(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int cls = t; cls < N_CLASSES; cls += REQ_THREADS) {
        for (int a = 0; a < APIS; a++) {
            char url[64];
            snprintf(url, sizeof(url), "http://127.0.0.1/p%d/%c?n=%d", cls, 'a' + a, a);
            uint64_t req = (uint64_t)cls * 100 + (uint64_t)a + 1;
            submit_ok(pacer_request_start(P, url, req));
            submit_ok(pacer_request_start(P, "/unrelated", 999999)); /* noise */
            submit_ok(pacer_request_end(P, url, req, 200));
        }
    }
    return NULL;
}

static void *drawer(void *arg)
{
    (void)arg;
    do { /* at least one pass, however fast the requesters are */
        for (int i = 0; i < N_PAGES; i++)
            submit_ok(pacer_page_draw(P, (uint64_t)i + 1));
        pacer_emit(P, "tick", "\"n\":1");
    } while (!atomic_load(&stop_drawing));
    return NULL;
}

static void *swapper(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_drawing))
        pacer_set_config(P, CFG);
    return NULL;
}

static void test_requests_from_many_threads(void **state)
{
    (void)state;
    char xml[8192];
    size_t n = 0;
    for (int cls = 0; cls < N_CLASSES; cls++) {
        n += (size_t)snprintf(xml + n, sizeof(xml) - n, "<page id=\"P%d\">", cls);
        for (int a = 0; a < APIS; a++)
            n += (size_t)snprintf(xml + n, sizeof(xml) - n, "<api id=\"/p%d/%c\"/>", cls, 'a' + a);
        n += (size_t)snprintf(xml + n, sizeof(xml) - n, "</page>\n");
    }
    char *err = NULL;
    CFG = pacer_config_parse(xml, n, &err);
    if (!CFG)
        fail_msg("config: %s", err);

    for (int round = 0; round < ROUNDS; round++) {
        rec_capture c;
        rec_capture_init(&c);
        pacer_options o = {.app_name = "conc", .on_record = rec_capture_fn, .user_data = &c};
        assert_int_equal(pacer_new(&o, &P, NULL), 0);
        pacer_set_config(P, CFG);
        atomic_store(&submitted, 0);
        atomic_store(&stop_drawing, 0);

        for (int i = 0; i < N_PAGES; i++) {
            char cls[16];
            snprintf(cls, sizeof(cls), "P%d", i % N_CLASSES);
            submit_ok(pacer_page_create(P, (uint64_t)i + 1, cls, PACER_PAGE_PAGE));
            submit_ok(pacer_page_view_created(P, (uint64_t)i + 1));
        }
        pthread_t req[REQ_THREADS], draw, swap;
        pthread_create(&draw, NULL, drawer, NULL);
        pthread_create(&swap, NULL, swapper, NULL);
        for (int t = 0; t < REQ_THREADS; t++)
            pthread_create(&req[t], NULL, requester, (void *)(intptr_t)t);
        for (int t = 0; t < REQ_THREADS; t++)
            pthread_join(req[t], NULL);
        atomic_store(&stop_drawing, 1);
        pthread_join(draw, NULL);
        pthread_join(swap, NULL);
        for (int i = 0; i < N_PAGES; i++) /* the draw after the last API */
            submit_ok(pacer_page_draw(P, (uint64_t)i + 1));

        pacer_stats st;
        pacer_get_stats(P, &st);
        assert_int_equal(st.events, atomic_load(&submitted));
        pacer_free(P);

        assert_int_equal(c.bad, 0);
        assert_int_equal(rec_count(&c, "page"), N_PAGES);
        int seen[N_PAGES] = {0};
        for (int i = 0; i < N_PAGES; i++) {
            json_t *r = rec_find(&c, "page", NULL, NULL, (size_t)i);
            int inst = (int)rec_num(r, "instance");
            assert_true(inst >= 1 && inst <= N_PAGES);
            seen[inst - 1]++;
            assert_string_equal(rec_str(r, "status"), "complete");
            json_t *apis = json_object_get(r, "apis");
            assert_int_equal(json_array_size(apis), APIS);
            for (size_t a = 0; a < APIS; a++)
                assert_int_equal((int)rec_num(json_array_get(apis, a), "status"), 200);
            assert_true(rec_num(r, "api_load_ms") >= 0);
            /* APIs that all finished before the first draw leave no final
             * draw; then total is the initial draw (seed 000) */
            if (rec_has(r, "final_draw_ms"))
                assert_true(rec_num(r, "final_draw_ms") >= 0);
            else
                assert_true(rec_num(r, "total_ms") == rec_num(r, "initial_draw_ms"));
            assert_true(rec_num(r, "total_ms") >= rec_num(r, "initial_draw_ms"));
        }
        for (int i = 0; i < N_PAGES; i++)
            assert_int_equal(seen[i], 1);
        assert_true(rec_count(&c, "tick") > 0);
        rec_capture_clear(&c);
    }
    pacer_config_unref(CFG);
}

/* Live deadlines: a page that gets no event after it was shown is reported
 * deadline_exceeded by the writer's tick alone, and so is one made after a
 * quiet second in which no page measured (the tick then sleeps until an
 * event brings it forward). Liveness, up to 5 s each: no timing asserted. */
static void test_live_deadline_without_further_events(void **state)
{
    (void)state;
    static const char xml[] = "<pacer><page id=\"Slow\"/><thresholds page-deadline-ms=\"300\"/></pacer>";
    char *err = NULL;
    pacer_config *cfg = pacer_config_parse(xml, sizeof xml - 1, &err);
    if (!cfg)
        fail_msg("config: %s", err);
    rec_capture c;
    rec_capture_init(&c);
    pacer_options o = {.app_name = "live", .on_record = rec_capture_fn, .user_data = &c, .live_deadlines = true};
    assert_int_equal(pacer_new(&o, &P, NULL), 0);
    pacer_set_config(P, cfg);
    for (uint64_t page = 1; page <= 2; page++) {
        if (page == 2)
            usleep(1000000); /* no page measures: the tick has nothing due */
        submit_ok(pacer_page_create(P, page, "Slow", PACER_PAGE_WINDOW));
        submit_ok(pacer_page_view_created(P, page));
        size_t n = 0;
        for (int i = 0; i < 500 && n < page; i++) {
            usleep(10000);
            pthread_mutex_lock(&c.mu);
            n = rec_count(&c, "page");
            pthread_mutex_unlock(&c.mu);
        }
        assert_int_equal(n, page);
        pthread_mutex_lock(&c.mu);
        json_t *r = rec_find(&c, "page", NULL, NULL, page - 1);
        const char *status = rec_str(r, "status");
        pthread_mutex_unlock(&c.mu);
        assert_string_equal(status, "deadline_exceeded");
    }
    pacer_free(P);
    pacer_config_unref(cfg);
    rec_capture_clear(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests_from_many_threads),
        cmocka_unit_test(test_live_deadline_without_further_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
