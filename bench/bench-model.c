/* bench-model: the cost of one page or request event through the model,
 * via the public API (lock, timestamp, model update, record formatting when a
 * page finishes, hand-off to the writer thread).
 *
 * Floor, measured in the same run: what any thread-safe, timestamped event
 * must pay at least: an uncontended mutex lock/unlock plus one
 * clock_gettime(CLOCK_MONOTONIC).
 *
 * Prints medians over RUNS runs, and ratios to the floor.
 */
#include <pacer/pacer.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RUNS 11
#define PAGES 20000

static const char config_xml[] =
    "<page id=\"HomeWindow\" tag=\"1\"><api id=\"/api/config\"/><api id=\"/api/list\"/></page>"
    "<page id=\"MerchantPage\"><api id=\"/api/test1\"/></page>";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

static pacer_t *new_instance(void)
{
    pacer_options o = {.app_name = "bench", .queue_limit = 1 << 22};
    pacer_t *p;
    if (pacer_new(&o, &p, NULL) < 0) {
        fprintf(stderr, "bench-model: pacer_new failed\n");
        exit(1);
    }
    pacer_config *cfg = pacer_config_parse(config_xml, sizeof(config_xml) - 1, NULL);
    pacer_set_config(p, cfg);
    pacer_config_unref(cfg);
    return p;
}

/* A whole page life: 12 events, one page record. Returns ns per event. */
static double run_page_lifecycle(void)
{
    pacer_t *p = new_instance();
    uint64_t events = 0;
    double t0 = now_s();
    for (uint64_t i = 1; i <= PAGES; i++) {
        uint64_t id = 0x1000 + i;
        pacer_page_create(p, id, "MerchantPage", PACER_PAGE_PAGE);
        pacer_page_view_created(p, id);
        pacer_page_select(p, id);
        pacer_page_scroll(p, id);
        pacer_page_draw(p, id);
        pacer_request_start(p, "http://127.0.0.1:8080/api/test1?m=1", i);
        pacer_page_draw(p, id);
        pacer_request_start(p, "http://127.0.0.1:8080/api/other", i + 1000000);
        pacer_request_end(p, "http://127.0.0.1:8080/api/other", i + 1000000, 200);
        pacer_request_end(p, "http://127.0.0.1:8080/api/test1?m=1", i, 200);
        pacer_page_draw(p, id);
        pacer_page_destroy(p, id);
        events += 12;
    }
    double dt = now_s() - t0;
    pacer_free(p);
    return dt * 1e9 / (double)events;
}

/* Request events while 16 pages are measuring (each is offered the URL). */
static double run_requests_with_live_pages(void)
{
    pacer_t *p = new_instance();
    for (uint64_t id = 1; id <= 16; id++)
        pacer_page_create(p, id, id == 1 ? "HomeWindow" : "MerchantPage",
                          id == 1 ? PACER_PAGE_WINDOW : PACER_PAGE_PAGE);
    const uint64_t n = 200000;
    double t0 = now_s();
    for (uint64_t i = 0; i < n; i += 2) {
        pacer_request_start(p, "http://127.0.0.1:8080/api/unrelated?x=1", i + 100);
        pacer_request_end(p, "http://127.0.0.1:8080/api/unrelated?x=1", i + 100, 200);
    }
    double dt = now_s() - t0;
    pacer_free(p);
    return dt * 1e9 / (double)n;
}

static double run_floor(void)
{
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    const uint64_t n = 2000000;
    volatile int64_t sink = 0;
    double t0 = now_s();
    for (uint64_t i = 0; i < n; i++) {
        pthread_mutex_lock(&mu);
        sink += pacer_now_ns();
        pthread_mutex_unlock(&mu);
    }
    double dt = now_s() - t0;
    (void)sink;
    return dt * 1e9 / (double)n;
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    double life[RUNS], req[RUNS], floor_[RUNS];
    for (int r = 0; r < RUNS; r++) {
        floor_[r] = run_floor();
        life[r] = run_page_lifecycle();
        req[r] = run_requests_with_live_pages();
    }
    double f = median(floor_, RUNS), l = median(life, RUNS), q = median(req, RUNS);
    printf("model: ns per event through pacer_submit (median of %d runs)\n", RUNS);
    printf("  %-44s %8.1f ns\n", "floor: mutex lock/unlock + clock_gettime", f);
    printf("  %-44s %8.1f ns   %5.1fx floor\n", "page lifecycle mix (12 events, 1 record)", l, l / f);
    printf("  %-44s %8.1f ns   %5.1fx floor\n", "request event, 16 pages measuring", q, q / f);
    return 0;
}
