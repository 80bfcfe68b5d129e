/* The query benchmark's ClickHouse data set, made without the HTTP ingest
 * (which would take hours for 100 M spans on two cores): page records as
 * pacer's SDK sends them (random trace ids, each span id its trace id's low
 * half), encoded by the store's own code (store_ch_layout.c)
 * and inserted straight into the tables pacerd made, with their trace index
 * rows and each session's resource; the rollups pacerd's consolidation
 * would have written by now (level 2 per past day, by 10 minutes, hour and
 * day; level 1 per hour of today, by 10 minutes; the slots marked), summed
 * by the store's own sketch code.
 *
 *   chfill --url URL --rows N [--days 30] [--pages 20] [--versions 2] [--chunk 500000]
 *
 * Sessions of 20 page loads, 30 s apart, starting anywhere in the last
 * --days days before the current hour; values log-normal as the load
 * generator's (pagespans.h), with 3 decimals. Prints "rows=N seconds=S".
 */
#include "store/clickhouse/ch_int.h"

#include <pacer/base/clock.h>
#include <pacer/base/hash.h>

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HOUR_NS INT64_C(3600000000000)
#define DAY_NS (24 * HOUR_NS)
#define LOADS_PER_SESSION 20
#define MAX_PAGES 64
#define MAX_VERSIONS 8

static uint64_t mix(uint64_t n, uint64_t salt)
{
    return hash_u64(n * 0x9e3779b97f4a7c15ULL + salt * 0xbf58476d1ce4e5b9ULL + 1);
}

static double unit(uint64_t h)
{
    return ((double)(h >> 11) + 0.5) / 9007199254740992.0;
}

static double lognormal(uint64_t n, uint64_t salt, double median, double sigma)
{
    double z = sqrt(-2 * log(unit(mix(n, salt)))) * cos(2 * M_PI * unit(mix(n, salt + 1)));
    return round(median * exp(sigma * z) * 1000) / 1000; /* 3 decimals, as the load generator's %.3f */
}

typedef struct group {
    uint64_t cnt;
    sketch m[4];
} group;

static int col_of(const store_table_desc *d, enum store_source src, const char *field)
{
    for (size_t i = 0; i < d->n_cols; i++)
        if (d->cols[i].source == src && (!field || (d->cols[i].field && strcmp(d->cols[i].field->name, field) == 0)))
            return (int)i;
    return -1;
}

static int insert(ch_client *c, const char *sql, rb_buf *b)
{
    if (!b->len)
        return 0;
    ch_reply rep;
    int r = b->failed ? -1 : ch_client_query(c, sql, b->p, b->len, NULL, &rep);
    if (r < 0)
        fprintf(stderr, "chfill: %s\n", b->failed ? "out of memory" : rep.error);
    else
        ch_client_reply_free(&rep);
    b->len = 0;
    return r;
}

int main(int argc, char **argv)
{
    const char *url = NULL;
    long long rows = 0;
    int days = 30, pages = 20, versions = 2;
    long chunk = 500000;
    static const struct option opts[] = {{"url", 1, NULL, 'u'},  {"rows", 1, NULL, 'n'},     {"days", 1, NULL, 'd'},
                                         {"pages", 1, NULL, 'p'}, {"versions", 1, NULL, 'v'}, {"chunk", 1, NULL, 'c'},
                                         {0}};
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case 'u': url = optarg; break;
        case 'n': rows = atoll(optarg); break;
        case 'd': days = atoi(optarg); break;
        case 'p': pages = atoi(optarg); break;
        case 'v': versions = atoi(optarg); break;
        case 'c': chunk = atol(optarg); break;
        default: return 2;
        }
    }
    if (!url || rows <= 0 || days < 1 || pages < 1 || pages > MAX_PAGES || versions < 1 || versions > MAX_VERSIONS ||
        chunk < 1000) {
        fprintf(stderr, "usage: chfill --url URL --rows N [--days 30] [--pages 1-64] [--versions 1-8] [--chunk N]\n");
        return 2;
    }
    /* the tables, as pacerd makes them */
    char err[512];
    store_options so = {0};
    store *st = ch_store_open(url, &so, err, sizeof err);
    if (!st) {
        fprintf(stderr, "chfill: %s\n", err);
        return 1;
    }
    store_close(st);
    ch_url u;
    if (ch_client_url_parse(url, &u, err, sizeof err) < 0) {
        fprintf(stderr, "chfill: %s\n", err);
        return 1;
    }
    ch_client *c = ch_client_new(&u, 600000);
    ch_client_url_clear(&u);

    const ch_table *t = ch_layout_table(TABLE_PAGE_LOADS);
    const store_table_desc *d = store_layout_table(TABLE_PAGE_LOADS);
    int c_ts = col_of(d, SRC_COMMON, "ts"), c_app = col_of(d, SRC_COMMON, "app"),
        c_version = col_of(d, SRC_COMMON, "version"), c_session = col_of(d, SRC_COMMON, "session"),
        c_page = col_of(d, SRC_FIELD, "page"), c_instance = col_of(d, SRC_FIELD, "instance"),
        c_kind = col_of(d, SRC_FIELD, "kind"), c_status = col_of(d, SRC_FIELD, "status"),
        c_main = col_of(d, SRC_FIELD, "main"), c_failed = col_of(d, SRC_FAILED, NULL),
        c_trace = col_of(d, SRC_TRACE_ID, NULL), c_span = col_of(d, SRC_SPAN_ID, NULL),
        c_end = col_of(d, SRC_END_TS, NULL), c_name = col_of(d, SRC_SPAN_NAME, NULL),
        c_skind = col_of(d, SRC_SPAN_KIND, NULL), c_code = col_of(d, SRC_STATUS_CODE, NULL);
    static const char *const metric_names[4] = {"initial_draw_ms", "api_load_ms", "final_draw_ms", "total_ms"};
    int c_m[4];
    for (int i = 0; i < 4; i++)
        c_m[i] = col_of(d, SRC_FIELD, metric_names[i]);
    const store_kind_desc *kd = store_layout_kind(KIND_PAGE);
    int kind_metric[4]; /* the kind's index of each metric */
    for (int i = 0; i < 4; i++) {
        kind_metric[i] = -1;
        for (size_t k = 0; k < kd->n_metrics; k++)
            if (strcmp(kd->metrics[k], metric_names[i]) == 0)
                kind_metric[i] = (int)k;
    }

    int64_t hour_now = wall_ns() / HOUR_NS, end_ns = hour_now * HOUR_NS; /* data before the current hour */
    int64_t first_slot = (hour_now - (int64_t)days * 24 - 1) * CH_SLOTS_PER_HOUR;
    size_t n_slots = (size_t)(hour_now * CH_SLOTS_PER_HOUR - first_slot);
    size_t n_groups = n_slots * (size_t)pages * (size_t)versions;
    group *groups = calloc(n_groups, sizeof *groups);
    if (!groups)
        return 1;
    for (size_t k = 0; k < n_groups; k++)
        for (int m = 0; m < 4; m++)
            sketch_init(&groups[k].m[m]);
    char page_names[MAX_PAGES][16], span_names[MAX_PAGES][24], version_names[MAX_VERSIONS][16];
    for (int p = 0; p < pages; p++) {
        snprintf(page_names[p], sizeof page_names[p], "Page%d", p);
        snprintf(span_names[p], sizeof span_names[p], "page Page%d", p);
    }
    for (int v = 0; v < versions; v++)
        snprintf(version_names[v], sizeof version_names[v], "1.%d", v);

    rb_buf raw, tix, origins;
    rb_init(&raw);
    rb_init(&tix);
    rb_init(&origins);
    char raw_sql[4096];
    snprintf(raw_sql, sizeof raw_sql, "INSERT INTO page_loads (%s) FORMAT RowBinary", t->columns);
    static const char scope_json[] = "{\"name\":\"pacer\"}";
    store_origin scope = {scope_json, fnv1a64(FNV1A64_INIT, scope_json, sizeof scope_json - 1)};
    rb_u8(&origins, 1);
    rb_u64(&origins, scope.hash);
    rb_str(&origins, scope_json, sizeof scope_json - 1);
    rb_u32(&origins, (uint32_t)(end_ns / DAY_NS));
    int64_t t0 = mono_ns();
    for (long long n = 0; n < rows; n++) {
        uint64_t s = (uint64_t)(n / LOADS_PER_SESSION), i = (uint64_t)(n % LOADS_PER_SESSION);
        int v = (int)(mix(s, 1) % (uint64_t)versions);
        int p = (int)(mix((uint64_t)n, 2) % (uint64_t)pages);
        int64_t start = end_ns - (int64_t)(unit(mix(s, 3)) * (double)days * (double)DAY_NS);
        int64_t ts = start + (int64_t)i * 30000000000LL + (int64_t)(mix((uint64_t)n, 4) % 1000000000);
        if (ts >= end_ns)
            ts -= 30 * 60 * 1000000000LL * 2; /* a session running into the current hour: an hour earlier */
        double m[4];
        m[0] = lognormal((uint64_t)n, 10, 40 + p, 0.5);
        m[1] = lognormal((uint64_t)n, 20, 300 + 10 * p, 0.6);
        m[2] = lognormal((uint64_t)n, 30, 15, 0.4);
        m[3] = round((m[0] + m[1] + m[2]) * 1000) / 1000;
        char session[17], resource[256];
        snprintf(session, sizeof session, "%016" PRIx64, mix(s, 5));
        int rl = snprintf(resource, sizeof resource,
                          "{\"attributes\":[{\"key\":\"service.name\",\"value\":{\"stringValue\":\"bench\"}},"
                          "{\"key\":\"service.version\",\"value\":{\"stringValue\":\"%s\"}},"
                          "{\"key\":\"pacer.session\",\"value\":{\"stringValue\":\"%s\"}}]}",
                          version_names[v], session);
        store_origin res = {resource, fnv1a64(FNV1A64_INIT, resource, (size_t)rl)};
        uint8_t tid[16], sid[8];
        uint64_t h1 = mix((uint64_t)n, 6), h2 = mix((uint64_t)n, 7);
        for (int k = 0; k < 8; k++) {
            tid[k] = (uint8_t)(h1 >> (56 - 8 * k));
            tid[8 + k] = (uint8_t)(h2 >> (56 - 8 * k));
        }
        memcpy(sid, tid + 8, 8); /* the SDK's span id: the trace id's low half (core/otlp.c) */
        store_record rec = {.table = TABLE_PAGE_LOADS, .resource = &res, .scope = &scope, .kind = KIND_PAGE};
        for (size_t k = 0; k < d->n_cols; k++)
            rec.cols[k] = (store_value){.type = SV_NULL};
        rec.cols[c_ts] = (store_value){.type = SV_INT, .i = ts};
        rec.cols[c_app] = (store_value){.type = SV_TEXT, .p = "bench"};
        rec.cols[c_version] = (store_value){.type = SV_TEXT, .p = version_names[v]};
        rec.cols[c_session] = (store_value){.type = SV_TEXT, .p = session};
        rec.cols[c_page] = (store_value){.type = SV_TEXT, .p = page_names[p]};
        rec.cols[c_instance] = (store_value){.type = SV_INT, .i = (int64_t)i + 1};
        rec.cols[c_kind] = (store_value){.type = SV_TEXT, .p = "window"};
        rec.cols[c_status] = (store_value){.type = SV_TEXT, .p = "complete"};
        rec.cols[c_main] = (store_value){.type = SV_INT, .i = p == 0};
        for (int k = 0; k < 4; k++)
            rec.cols[c_m[k]] = (store_value){.type = SV_REAL, .d = m[k]};
        rec.cols[c_failed] = (store_value){.type = SV_INT, .i = 0};
        rec.cols[c_trace] = (store_value){.type = SV_BLOB, .p = tid, .n = 16};
        rec.cols[c_span] = (store_value){.type = SV_BLOB, .p = sid, .n = 8};
        rec.cols[c_end] = (store_value){.type = SV_INT, .i = ts + llround(m[3] * 1e6)};
        rec.cols[c_name] = (store_value){.type = SV_TEXT, .p = span_names[p]};
        rec.cols[c_skind] = (store_value){.type = SV_INT, .i = 1};
        rec.cols[c_code] = (store_value){.type = SV_INT, .i = 0};
        uint32_t rday = (uint32_t)(ts / DAY_NS);
        ch_layout_encode_row(t, &rec, 0, rday, &raw);
        rb_u16(&tix, (uint16_t)(tid[0] << 8 | tid[1])); /* 24 bits: store_ch_read.c */
        rb_u8(&tix, tid[2]);
        rb_u8(&tix, TABLE_PAGE_LOADS);
        rb_str(&tix, "bench", 5);
        rb_u32(&tix, (uint32_t)(ts / HOUR_NS));
        rb_u32(&tix, rday);
        if (i == 0) {
            rb_u8(&origins, 0);
            rb_u64(&origins, res.hash ? res.hash : 1);
            rb_str(&origins, resource, (size_t)rl);
            rb_u32(&origins, rday);
        }
        group *g = &groups[((size_t)(ts / CH_SLOT_NS - first_slot) * (size_t)pages + (size_t)p) * (size_t)versions +
                           (size_t)v];
        g->cnt++;
        for (int k = 0; k < 4; k++)
            if (kind_metric[k] >= 0)
                sketch_add(&g->m[kind_metric[k]], m[k]);
        if ((n + 1) % chunk == 0 || n + 1 == rows) {
            if (insert(c, raw_sql, &raw) < 0 ||
                insert(c, "INSERT INTO trace_index (th, tl, tbl, app, hour, rday) FORMAT RowBinary", &tix) < 0 ||
                insert(c, "INSERT INTO origins (which, id, json, rday) FORMAT RowBinary", &origins) < 0)
                return 1;
            fprintf(stderr, "\rchfill: %lld of %lld rows", n + 1, rows);
        }
    }
    fprintf(stderr, "\n");
    /* the rollups: past days in level 2 (by slot, hour and day), today's slots in level 1 */
    int64_t today = end_ns / DAY_NS;
    rb_buf b;
    rb_init(&b);
    for (int p = 0; p < pages; p++)
        for (int v = 0; v < versions; v++) {
            ch_srow coarse[2]; /* the hour and the day being summed */
            static const uint8_t grains[2] = {CH_GRAIN_HOUR, CH_GRAIN_DAY};
            static const int64_t per[2] = {CH_SLOTS_PER_HOUR, CH_SLOTS_PER_DAY};
            for (int k = 0; k < 2; k++) {
                coarse[k] = (ch_srow){.kind = KIND_PAGE, .app = "bench", .version = version_names[v],
                                      .name = page_names[p], .grain = grains[k], .t = -1};
                for (size_t m = 0; m < STORE_MAX_METRICS; m++)
                    sketch_init(&coarse[k].m[m]);
            }
            for (size_t i = 0; i <= n_slots; i++) {
                int64_t slot = first_slot + (int64_t)i;
                for (int k = 0; k < 2; k++) { /* an hour or a day ends: its row, in level 2 */
                    ch_srow *sum = &coarse[k];
                    if (sum->t >= 0 && (i == n_slots || slot / per[k] != sum->t)) {
                        if (sum->cnt && (sum->t * per[k]) / CH_SLOTS_PER_DAY < today) {
                            rb_u8(&b, 2);
                            rb_u32(&b, (uint32_t)((sum->t * per[k]) / CH_SLOTS_PER_DAY));
                            rb_u32(&b, (uint32_t)((sum->t * per[k]) / CH_SLOTS_PER_DAY));
                            ch_layout_write_srow(&b, sum);
                        }
                        ch_layout_srow_reset(sum);
                        sum->cnt = 0;
                    }
                    if (i < n_slots)
                        sum->t = (int32_t)(slot / per[k]);
                }
                if (i == n_slots)
                    break;
                group *g = &groups[(i * (size_t)pages + (size_t)p) * (size_t)versions + (size_t)v];
                if (!g->cnt)
                    continue;
                ch_srow row = {.kind = KIND_PAGE, .app = "bench", .version = version_names[v], .name = page_names[p],
                               .grain = CH_GRAIN_SLOT, .t = (int32_t)slot, .cnt = g->cnt};
                memcpy(row.m, g->m, sizeof g->m);
                for (size_t k = 4; k < STORE_MAX_METRICS; k++)
                    sketch_init(&row.m[k]);
                int64_t day = slot / CH_SLOTS_PER_DAY;
                bool past = day < today;
                rb_u8(&b, past ? 2 : 1);
                rb_u32(&b, (uint32_t)(past ? day : slot / CH_SLOTS_PER_HOUR)); /* level 1's slot: the commit hour */
                rb_u32(&b, (uint32_t)day);
                ch_layout_write_srow(&b, &row);
                for (int k = 0; k < 2; k++) {
                    coarse[k].cnt += g->cnt;
                    for (int m = 0; m < 4; m++)
                        sketch_merge(&coarse[k].m[m], &g->m[m]);
                }
            }
            for (int k = 0; k < 2; k++)
                ch_layout_srow_reset(&coarse[k]);
        }
    if (insert(c, "INSERT INTO rollups (lvl, slot, rday, " CH_SKETCH_COLUMNS ") FORMAT RowBinary", &b) < 0)
        return 1;
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO slots (lvl, slot) VALUES (1, %" PRId64 "), (2, %" PRId64 ")", hour_now - 1,
             today - 1);
    ch_reply rep;
    if (ch_client_query(c, sql, NULL, 0, NULL, &rep) < 0) {
        fprintf(stderr, "chfill: %s\n", rep.error);
        return 1;
    }
    ch_client_reply_free(&rep);
    printf("rows=%lld seconds=%.1f\n", rows, (double)(mono_ns() - t0) / 1e9);
    rb_free(&raw);
    rb_free(&tix);
    rb_free(&origins);
    rb_free(&b);
    for (size_t k = 0; k < n_groups; k++)
        for (int m = 0; m < 4; m++)
            sketch_reset(&groups[k].m[m]);
    free(groups);
    ch_client_free(c);
    return 0;
}
