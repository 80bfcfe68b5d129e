/* The ten-minute rollups of a busy day (store_options.fine_day_rows, here
 * 200 instead of 500 000), through pacerd's own ingest and query handlers
 * in this process: a day of 400 page loads makes the next day fine; its
 * 4 000 loads and then late ones of the first day are answered for ranges
 * that cut the fine day at 10-minute, hour and 6-hour boundaries and in
 * between — counts and min/max exactly, p50/p90/p99 within the sketches'
 * 1 % of the exact values computed here. */
#include "api/api.h"
#include "ingest/ingest.h"
#include "store/sqlite/sqlite_store.h"

#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <sqlite3.h>

#define DAY (86400LL * 1000000000LL)
#define MIN (60LL * 1000000000LL)
static const int64_t T0 = 1700006400LL * 1000000000LL; /* a UTC midnight */

typedef struct load {
    int64_t ts;
    double total;
} load;

static load loads[8000];
static size_t n_loads;
/* what pacerd gives its ingest and query handlers */
static struct {
    store *store;
    ingest_ctx ingest;
    api_ctx api;
} d;

static void send(const int64_t *ts, size_t n, unsigned *seed)
{
    size_t cap = 512 + n * 400;
    char *body = malloc(cap);
    size_t o = (size_t)snprintf(body, cap,
                                "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\","
                                "\"value\":{\"stringValue\":\"shop\"}}]},\"scopeSpans\":[{\"spans\":[");
    for (size_t i = 0; i < n; i++) {
        double total = round(exp(4.5 + 1.2 * ((double)rand_r(seed) / RAND_MAX - 0.5) * 2) * 1000) / 1000;
        loads[n_loads++] = (load){ts[i], total};
        o += (size_t)snprintf(body + o, cap - o,
                              "%s{\"traceId\":\"%08x%08x%08x%08x\",\"spanId\":\"%08x%08x\",\"name\":\"Home\","
                              "\"startTimeUnixNano\":\"%lld\",\"endTimeUnixNano\":\"%lld\",\"attributes\":["
                              "{\"key\":\"pacer.type\",\"value\":{\"stringValue\":\"page\"}},"
                              "{\"key\":\"pacer.page\",\"value\":{\"stringValue\":\"Home\"}},"
                              "{\"key\":\"pacer.total_ms\",\"value\":{\"doubleValue\":%.3f}}]}",
                              i ? "," : "", rand_r(seed), rand_r(seed), rand_r(seed), rand_r(seed) | 1, rand_r(seed),
                              rand_r(seed) | 1, (long long)ts[i], (long long)(ts[i] + (int64_t)(total * 1e6)), total);
    }
    o += (size_t)snprintf(body + o, cap - o, "]}]}]}");
    http_header_field headers[] = {{"Content-Type", "application/json"}};
    http_request rq = {.method = "POST", .version = "HTTP/1.1", .path = "/v1/traces", .body = body, .body_len = o,
                       .headers = headers, .n_headers = 1};
    http_response rs = {0};
    ingest_http_handle(&d.ingest, "shop", &rq, &rs, NULL);
    assert_int_equal(rs.status, 200);
    assert_memory_equal(rs.body, "{}", 2);
    free(rs.body);
    free(body);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* /api/v1/pages over [lo, hi) against the loads sent. */
static void check(int64_t lo, int64_t hi)
{
    char q[128];
    snprintf(q, sizeof q, "app=shop&from=%lld&to=%lld", (long long)(lo / 1000000000), (long long)(hi / 1000000000));
    params p;
    char err[256];
    assert_int_equal(params_parse(q, strlen(q), &p, err, sizeof err), 0);
    http_request rq = {.method = "GET", .version = "HTTP/1.1", .path = "/api/v1/pages", .query = &p};
    http_response rs = {0};
    query_handle(&d.api, &rq, &rs);
    assert_int_equal(rs.status, 200);
    json_error_t je;
    json_t *answer = json_loadb(rs.body, rs.len, 0, &je);
    assert_non_null(answer);
    double *want = malloc(n_loads * sizeof *want);
    size_t n = 0;
    for (size_t i = 0; i < n_loads; i++)
        if (loads[i].ts >= lo && loads[i].ts < hi)
            want[n++] = loads[i].total;
    qsort(want, n, sizeof *want, cmp_double);
    json_t *pages = json_object_get(answer, "pages");
    if (!n) {
        assert_int_equal(json_array_size(pages), 0);
    } else {
        assert_int_equal(json_array_size(pages), 1);
        json_t *page = json_array_get(pages, 0);
        json_t *tot = json_object_get(json_object_get(page, "metrics"), "total_ms");
        if ((size_t)json_integer_value(json_object_get(page, "count")) != n)
            fail_msg("%s: count %lld, want %zu", q, (long long)json_integer_value(json_object_get(page, "count")), n);
        assert_true(fabs(json_real_value(json_object_get(tot, "min")) - want[0]) < 1e-9);
        assert_true(fabs(json_real_value(json_object_get(tot, "max")) - want[n - 1]) < 1e-9);
        static const struct {
            const char *name;
            double q;
        } qs[] = {{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}};
        for (size_t k = 0; k < 3; k++) {
            double got = json_real_value(json_object_get(tot, qs[k].name));
            double exact = want[(size_t)(qs[k].q * (double)(n - 1))];
            if (fabs(got - exact) > 0.01 * exact + 1e-9)
                fail_msg("%s: %s %.3f, exact %.3f", q, qs[k].name, got, exact);
        }
    }
    json_decref(answer);
    free(want);
    free(rs.body);
    params_free(&p);
}

static void test_ten_minute_rollups_of_a_busy_day(void **state)
{
    (void)state;
    char dir[] = "/tmp/pacerd-fine-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/p.db", dir);
    store_options o = {.readers = 1, .rollup_lag_ms = 0, .seal_rows = 50, .fine_day_rows = 200};
    d.store = d.ingest.store = d.api.store = sqlite_store_open(path, &o, err, sizeof err);
    assert_non_null(d.store);
    d.ingest.max_body = 16 << 20;
    d.ingest.clean = (clean_limits){86400000, 3600LL * 1000000000LL}; /* pacerd's defaults */
    unsigned seed = 9;
    int64_t ts[1000];
    /* day 0: 400 loads, then day 1 (fine: the day before had 400 >= 200) */
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < 200; i++)
            ts[i] = T0 + (int64_t)(rand_r(&seed) % 86400) * 1000000000LL + rand_r(&seed) % 1000000000;
        send(ts, 200, &seed);
    }
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < 1000; i++)
            ts[i] = T0 + DAY + (int64_t)(rand_r(&seed) % 86400) * 1000000000LL + rand_r(&seed) % 1000000000;
        send(ts, 1000, &seed);
    }
    /* late ones of day 1 after day 2 came: cold, read from the blocks */
    ts[0] = T0 + 2 * DAY + 5;
    send(ts, 1, &seed);
    for (int i = 0; i < 300; i++)
        ts[i] = T0 + DAY + (int64_t)(rand_r(&seed) % 86400) * 1000000000LL;
    send(ts, 300, &seed);
    /* the fine day's partition, and its ten-minute buckets */
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT day, fine, hourly IS NOT NULL FROM partitions WHERE tbl = 0"
                                            " ORDER BY day", -1, &s, NULL), SQLITE_OK);
    int fine[3] = {-1, -1, -1}, cold[3] = {-1, -1, -1};
    while (sqlite3_step(s) == SQLITE_ROW) {
        int64_t day = sqlite3_column_int64(s, 0) - T0 / DAY;
        assert_true(day >= 0 && day < 3);
        fine[day] = sqlite3_column_int(s, 1);
        cold[day] = sqlite3_column_int(s, 2);
    }
    sqlite3_finalize(s);
    assert_int_equal(fine[0], 0);
    assert_int_equal(fine[1], 1);
    assert_int_equal(cold[1], 1);
    assert_int_equal(cold[2], 0);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM subday WHERE width = 600", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_true(sqlite3_column_int64(s, 0) > 100);
    sqlite3_finalize(s);
    sqlite3_close(db);
    /* ranges that cut the fine day */
    const int64_t d1 = T0 + DAY;
    static const int64_t cuts[][2] = {
        {20, 40},          /* two ten-minute buckets */
        {25, 47},          /* buckets and minutes at each end */
        {61, 119},         /* inside an hour, across its buckets */
        {3, 1437},         /* 6 h, hours, ten-minute buckets and minutes */
        {361, 721},        /* 6 h bucket edges, a minute off */
        {0, 1440},         /* the whole day */
        {1381, 1440 + 77}, /* into day 2 */
        {-500, 33},        /* from day 0 */
    };
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++)
        check(d1 + cuts[k][0] * MIN, d1 + cuts[k][1] * MIN);
    /* the same after a restart (the groups rebuilt from the file) */
    store_close(d.store);
    d.store = d.ingest.store = d.api.store = sqlite_store_open(path, &o, err, sizeof err);
    assert_non_null(d.store);
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++)
        check(d1 + cuts[k][0] * MIN, d1 + cuts[k][1] * MIN);
    store_close(d.store);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* Records of a day that come after its day, in no order of time (an
 * import, the spools of many devices): the day is cold from its first
 * record, and made when the day before held nothing (not fine). Its late
 * records settle into the sub-day rollups as they come; once it holds 200
 * (fine_day_rows) it gets the ten-minute level, from all its blocks. */
static void test_a_day_busy_after_it_was_made_gets_ten_minute_rollups(void **state)
{
    (void)state;
    char dir[] = "/tmp/pacerd-fine-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/p.db", dir);
    store_options o = {.readers = 1, .rollup_lag_ms = 0, .seal_rows = 50, .fine_day_rows = 200};
    d.store = d.ingest.store = d.api.store = sqlite_store_open(path, &o, err, sizeof err);
    assert_non_null(d.store);
    d.ingest.max_body = 16 << 20;
    d.ingest.clean = (clean_limits){86400000, 3600LL * 1000000000LL}; /* pacerd's defaults */
    n_loads = 0;
    unsigned seed = 5;
    int64_t ts[100];
    ts[0] = T0 + 5 * DAY + 7; /* the hot day */
    send(ts, 1, &seed);
    for (int k = 0; k < 150; k++) { /* small requests: it settles before it is busy, and after */
        for (int i = 0; i < 20; i++)
            ts[i] = T0 + DAY + (int64_t)(rand_r(&seed) % 86400) * 1000000000LL + rand_r(&seed) % 1000000000;
        send(ts, 20, &seed);
    }
    ts[0] = T0 + 5 * DAY + 9;
    for (int k = 0; k < 60; k++)
        send(ts, 1, &seed); /* seals and settles what waits */
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT fine, hourly IS NOT NULL FROM partitions WHERE tbl = 0 AND day = ?1",
                                        -1, &s, NULL), SQLITE_OK);
    sqlite3_bind_int64(s, 1, T0 / DAY + 1);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(s, 0), 1);
    assert_int_equal(sqlite3_column_int(s, 1), 1);
    sqlite3_finalize(s);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT SUM(count) FROM subday WHERE width = 600 AND t >= ?1 AND t < ?2", -1,
                                        &s, NULL), SQLITE_OK);
    sqlite3_bind_int64(s, 1, (T0 + DAY) / (600 * 1000000000LL));
    sqlite3_bind_int64(s, 2, (T0 + 2 * DAY) / (600 * 1000000000LL));
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_true(sqlite3_column_int64(s, 0) > 2500); /* all but the last few late ones */
    sqlite3_finalize(s);
    sqlite3_close(db);
    const int64_t d1 = T0 + DAY;
    static const int64_t cuts[][2] = {{20, 40}, {25, 47}, {61, 119}, {3, 1437}, {361, 721}, {0, 1440}, {1381, 1517}};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++)
        check(d1 + cuts[k][0] * MIN, d1 + cuts[k][1] * MIN);
    store_close(d.store);
    d.store = d.ingest.store = d.api.store = sqlite_store_open(path, &o, err, sizeof err);
    assert_non_null(d.store);
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++)
        check(d1 + cuts[k][0] * MIN, d1 + cuts[k][1] * MIN);
    store_close(d.store);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_ten_minute_rollups_of_a_busy_day),
                                       cmocka_unit_test(test_a_day_busy_after_it_was_made_gets_ten_minute_rollups)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
