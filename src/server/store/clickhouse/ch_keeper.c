/* The ClickHouse store's keeper (ch_int.h), a thread of every instance:
 * it consolidates settled commit hours of `pending` into level-1 rollups
 * and finished commit days into level 2 (ch_store.c's top says
 * why that keeps each batch counted once), drops what retention and the
 * tiers no longer need, and measures the database for /metrics. Also
 * here: the winners of retried batches and the reading of pending's rows,
 * which queries (ch_read.c) share with consolidation.
 *
 * Slots are done in order (a level's watermark is its largest slot); two
 * instances may do the same slot at once and write the same rows twice:
 * readers keep one per slot.
 */
#include "ch_int.h"

#include <pacer/base/array.h>
#include <pacer/base/clock.h>
#include <pacer/base/hash.h>
#include <pacer/base/thread.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AGG_BUCKETS 4096


/* Winners: per batch named by pending rows of a retry, the attempt whose
 * rows count (ch_store.c's top). */
typedef struct winner {
    char *app, *batch;
    uint64_t att;
    bool fresh;
    uint32_t at;
} winner;

typedef struct winners {
    winner *w;
    size_t n, cap;
} winners;

static winner *winner_find(winners *ws, const char *app, const char *batch)
{
    for (size_t i = 0; i < ws->n; i++)
        if (strcmp(ws->w[i].app, app) == 0 && strcmp(ws->w[i].batch, batch) == 0)
            return &ws->w[i];
    return NULL;
}

static void winners_free(winners *ws)
{
    for (size_t i = 0; i < ws->n; i++) {
        free(ws->w[i].app);
        free(ws->w[i].batch);
    }
    free(ws->w);
    memset(ws, 0, sizeof *ws);
}

/* A committed attempt (att, fresh, at) of batch: is it a better winner? */
static void winner_offer(winners *ws, const char *app, const char *batch, uint64_t att, bool fresh, uint32_t at)
{
    winner *w = winner_find(ws, app, batch);
    if (!w) {
        if (!ARRAY_GROW(ws->w, ws->cap, ws->n + 1, 16))
            return;
        w = &ws->w[ws->n++];
        *w = (winner){strdup(app), strdup(batch), att, fresh, at};
        return;
    }
    bool better = fresh ? !w->fresh || att < w->att
                        : !w->fresh && (at < w->at || (at == w->at && att < w->att));
    if (better) {
        w->att = att;
        w->fresh = fresh;
        w->at = at;
    }
}

/* The winners of the batches in `names` ((app, batch) pairs, SQL filter
 * text), from every manifest: pending's and commits'. */
static int winners_load(ch_store *st, const char *filter, winners *ws)
{
    ch_reply rep;
    rb_reader rd;
    int r = ch_store_read_rowsf(st, &rep, &rd, "a query",
                                "SELECT app, batch, att, fresh, toUInt32(at) FROM pending WHERE kind = -1 AND (%s)"
                                " UNION ALL SELECT app, batch, att, fresh, at FROM commits WHERE (%s) FORMAT RowBinary",
                                filter, filter);
    if (r < 0)
        return r;
    while (rb_more(&rd)) {
        size_t al, bl;
        const char *a = rb_get_str(&rd, &al), *b = rb_get_str(&rd, &bl);
        uint64_t att = rb_get_u64(&rd);
        bool fresh = rb_get_u8(&rd) != 0;
        uint32_t at = rb_get_u32(&rd);
        if (rd.bad)
            break;
        char app[300], batch[300];
        snprintf(app, sizeof app, "%.*s", (int)al, a);
        snprintf(batch, sizeof batch, "%.*s", (int)bl, b);
        winner_offer(ws, app, batch, att, fresh, at);
    }
    bool bad = rd.bad;
    ch_client_reply_free(&rep);
    return bad ? -EIO : 0;
}

int ch_keeper_pending_rows(ch_store *st, const char *where,
                    void (*cb)(void *ctx, const ch_srow *row, uint64_t att, const char *batch, bool fresh,
                               uint32_t at),
                    void *ctx)
{
    /* first pass: the batches of retries, whose winners are needed */
    ch_reply rep;
    rb_reader rd;
    int r = ch_store_read_rowsf(st, &rep, &rd, "a query",
                                "SELECT att, toUInt32(at), batch, fresh, " CH_SKETCH_COLUMNS
                                " FROM pending WHERE %s FORMAT RowBinary",
                                where);
    if (r < 0)
        return r;
    jbuf filter;
    jbuf_init(&filter);
    bool any = false;
    ch_srow row;
    while (rb_more(&rd)) {
        (void)rb_get_u64(&rd);
        (void)rb_get_u32(&rd);
        size_t bl;
        const char *b = rb_get_str(&rd, &bl);
        (void)rb_get_u8(&rd);
        char batch[300];
        snprintf(batch, sizeof batch, "%.*s", (int)bl, b);
        if (!ch_layout_read_srow(&rd, &row))
            break;
        if (row.kind >= 0 && batch[0]) {
            jbuf_puts(&filter, any ? " OR " : "");
            jbuf_puts(&filter, "(app = ");
            ch_store_sql_str(&filter, row.app);
            jbuf_puts(&filter, " AND batch = ");
            ch_store_sql_str(&filter, batch);
            jbuf_puts(&filter, ")");
            any = true;
        }
        ch_layout_srow_reset(&row);
    }
    winners ws = {0};
    if (rd.bad || filter.failed)
        r = -EIO;
    else if (any)
        r = winners_load(st, filter.data, &ws);
    jbuf_free(&filter);
    rb_reader_init(&rd, rep.body, rep.len);
    while (r == 0 && rb_more(&rd)) {
        uint64_t att = rb_get_u64(&rd);
        uint32_t at = rb_get_u32(&rd);
        size_t bl;
        const char *b = rb_get_str(&rd, &bl);
        bool fresh = rb_get_u8(&rd) != 0;
        char batch[300];
        snprintf(batch, sizeof batch, "%.*s", (int)bl, b);
        if (!ch_layout_read_srow(&rd, &row)) {
            r = -EIO;
            break;
        }
        bool counts = true;
        if (row.kind >= 0 && batch[0]) {
            winner *w = winner_find(&ws, row.app, batch);
            counts = w && w->att == att;
        }
        if (counts)
            cb(ctx, &row, att, batch, fresh, at);
        ch_layout_srow_reset(&row);
    }
    winners_free(&ws);
    ch_client_reply_free(&rep);
    return r;
}

/* Merging rows into groups (consolidation): keyed by everything but the
 * counts and the sketch. */
typedef struct cgroup {
    struct cgroup *next;
    uint64_t hash;
    ch_srow row;
    char *app, *version, *name;
} cgroup;

typedef struct cgroups {
    cgroup *slots[AGG_BUCKETS];
    size_t n;
    bool oom;
} cgroups;

static void cgroups_add(cgroups *g, const ch_srow *row)
{
    uint64_t h = fnv1a64(FNV1A64_INIT, &row->kind, 1);
    h = fnv1a64(h, row->app, strlen(row->app) + 1);
    h = fnv1a64(h, row->version, strlen(row->version) + 1);
    h = fnv1a64(h, row->name, strlen(row->name) + 1);
    h = fnv1a64(h, &row->grain, 1);
    h = fnv1a64(h, &row->t, sizeof row->t);
    cgroup **slot = &g->slots[h % AGG_BUCKETS];
    cgroup *c;
    for (c = *slot; c; c = c->next)
        if (c->hash == h && c->row.kind == row->kind && c->row.grain == row->grain && c->row.t == row->t &&
            strcmp(c->name, row->name) == 0 && strcmp(c->app, row->app) == 0 && strcmp(c->version, row->version) == 0)
            break;
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c || !(c->app = strdup(row->app)) || !(c->version = strdup(row->version)) ||
            !(c->name = strdup(row->name))) {
            if (c) {
                free(c->app);
                free(c->version);
            }
            free(c);
            g->oom = true;
            return;
        }
        c->hash = h;
        c->row = *row;
        c->row.owned = NULL; /* its own copies, below */
        c->row.app = c->app;
        c->row.version = c->version;
        c->row.name = c->name;
        c->row.cnt = c->row.failed = 0;
        for (size_t i = 0; i < STORE_MAX_METRICS; i++)
            sketch_init(&c->row.m[i]);
        c->next = *slot;
        *slot = c;
        g->n++;
    }
    c->row.cnt += row->cnt;
    c->row.failed += row->failed;
    for (size_t i = 0; i < STORE_MAX_METRICS; i++)
        if (row->m[i].count && sketch_merge(&c->row.m[i], &row->m[i]) < 0)
            g->oom = true;
}

static void cgroups_free(cgroups *g)
{
    for (size_t b = 0; b < AGG_BUCKETS; b++)
        for (cgroup *c = g->slots[b], *next; c; c = next) {
            next = c->next;
            ch_layout_srow_reset(&c->row);
            free(c->app);
            free(c->version);
            free(c->name);
            free(c);
        }
    memset(g, 0, sizeof *g);
}

/* rollups' columns as consolidation fills them */
#define ROLLUP_COLUMNS "lvl, slot, rday, " CH_SKETCH_COLUMNS

static void cgroups_write(const cgroups *g, uint8_t lvl, uint32_t slot, uint32_t rday, rb_buf *b)
{
    for (size_t k = 0; k < AGG_BUCKETS; k++)
        for (const cgroup *c = g->slots[k]; c; c = c->next) {
            rb_u8(b, lvl);
            rb_u32(b, slot);
            rb_u32(b, rday);
            ch_layout_write_srow(b, &c->row);
        }
}

typedef struct unit_ctx {
    cgroups g;
    rb_buf manifests;
} unit_ctx;

static void on_unit_row(void *ctx, const ch_srow *row, uint64_t att, const char *batch, bool fresh, uint32_t at)
{
    unit_ctx *u = ctx;
    if (row->kind < 0) {
        rb_str(&u->manifests, row->app, strlen(row->app));
        rb_str(&u->manifests, batch, strlen(batch));
        rb_u64(&u->manifests, att);
        rb_u8(&u->manifests, fresh);
        rb_u32(&u->manifests, at);
        rb_u32(&u->manifests, (uint32_t)(at / 86400));
        return;
    }
    cgroups_add(&u->g, row);
}

static int mark_slot(ch_store *st, uint8_t lvl, uint32_t slot)
{
    char sql[160];
    snprintf(sql, sizeof sql, "INSERT INTO slots (lvl, slot) VALUES (%u, %u)", lvl, slot);
    ch_reply rep;
    int r = ch_store_write(st, sql, NULL, 0, &rep);
    if (r == 0)
        ch_client_reply_free(&rep);
    return r;
}

static int insert_rows(ch_store *st, const char *sql, rb_buf *b)
{
    if (b->failed)
        return -ENOMEM;
    if (!b->len)
        return 0;
    ch_reply rep;
    int r = ch_store_write(st, sql, b->p, b->len, &rep);
    if (r == 0)
        ch_client_reply_free(&rep);
    return r;
}

/* Level 1: commit hour u (of unit_s seconds). */
static int consolidate_unit(ch_store *st, uint32_t u)
{
    unit_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    rb_init(&c->manifests);
    char where[160];
    snprintf(where, sizeof where, "toUInt32(at) >= %" PRIu64 " AND toUInt32(at) < %" PRIu64,
             (uint64_t)u * (uint64_t)st->unit_s, (uint64_t)(u + 1) * (uint64_t)st->unit_s);
    int r = ch_keeper_pending_rows(st, where, on_unit_row, c);
    rb_buf b;
    rb_init(&b);
    if (r == 0 && c->g.oom)
        r = -ENOMEM;
    if (r == 0) {
        cgroups_write(&c->g, 1, u, (uint32_t)((uint64_t)u * (uint64_t)st->unit_s / 86400), &b);
        r = insert_rows(st, "INSERT INTO rollups (" ROLLUP_COLUMNS ") FORMAT RowBinary", &b);
    }
    if (r == 0)
        r = insert_rows(st, "INSERT INTO commits (app, batch, att, fresh, at, rday) FORMAT RowBinary", &c->manifests);
    if (r == 0)
        r = mark_slot(st, 1, u);
    rb_free(&b);
    rb_free(&c->manifests);
    cgroups_free(&c->g);
    free(c);
    return r;
}

/* Level 2: commit day d (of day_s seconds): its level-1 slots, one copy
 * of each (a slot consolidated twice has its rows twice: sorted by key
 * and slot, the copies are neighbours), merged by 10 minutes, hour and day
 * of data. */
static int consolidate_day(ch_store *st, uint32_t d)
{
    uint64_t per = (uint64_t)(st->day_s / st->unit_s);
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT slot, " CH_SKETCH_COLUMNS " FROM rollups WHERE lvl = 1 AND slot >= %" PRIu64 " AND slot < %" PRIu64
             " ORDER BY kind, app, version, name, grain, t, slot FORMAT RowBinary",
             (uint64_t)d * per, (uint64_t)(d + 1) * per);
    ch_reply rep;
    int r = ch_store_read(st, sql, &rep, "consolidation");
    if (r < 0)
        return r;
    cgroups *g = calloc(1, sizeof *g);
    if (!g) {
        ch_client_reply_free(&rep);
        return -ENOMEM;
    }
    ch_srows s;
    ch_layout_srows_begin(&s, rep.body, rep.len);
    int got;
    while ((got = ch_layout_srows_next(&s)) > 0) {
        cgroups_add(g, &s.row); /* by 10 minutes of data */
        ch_srow coarse = s.row;
        coarse.grain = CH_GRAIN_HOUR;
        coarse.t = s.row.t / CH_SLOTS_PER_HOUR; /* t >= 0: slots since the epoch */
        cgroups_add(g, &coarse);
        coarse.grain = CH_GRAIN_DAY;
        coarse.t = s.row.t / CH_SLOTS_PER_DAY;
        cgroups_add(g, &coarse);
    }
    ch_layout_srows_end(&s);
    if (got < 0)
        r = got;
    ch_client_reply_free(&rep);
    rb_buf b;
    rb_init(&b);
    if (r == 0 && g->oom)
        r = -ENOMEM;
    if (r == 0) {
        cgroups_write(g, 2, d, (uint32_t)((uint64_t)d * (uint64_t)st->day_s / 86400), &b);
        r = insert_rows(st, "INSERT INTO rollups (" ROLLUP_COLUMNS ") FORMAT RowBinary", &b);
    }
    if (r == 0)
        r = mark_slot(st, 2, d);
    rb_free(&b);
    cgroups_free(g);
    free(g);
    return r;
}

/* The server's clock (what `at` uses), in seconds. */
static int server_now(ch_store *st, uint64_t *ret)
{
    ch_reply rep;
    int r = ch_client_query(st->ch, "SELECT toUInt32(now()) FORMAT TabSeparated", NULL, 0, NULL, &rep);
    if (r < 0)
        return r;
    *ret = strtoull(rep.body, NULL, 10);
    ch_client_reply_free(&rep);
    return 0;
}

/* The slot of a level (fn: "max" or "min"), or -1 when it has none. */
static int level_slot(ch_store *st, int lvl, const char *fn, int64_t *ret)
{
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT count(), %s(slot) FROM slots WHERE lvl = %d FORMAT TabSeparated", fn, lvl);
    ch_reply rep;
    int r = ch_client_query(st->ch, sql, NULL, 0, NULL, &rep);
    if (r < 0)
        return r;
    long long n = 0, m = 0;
    sscanf(rep.body, "%lld\t%lld", &n, &m);
    ch_client_reply_free(&rep);
    *ret = n ? m : -1;
    return 0;
}

/* max(slot) of a level, or -1. */
static int level_mark(ch_store *st, int lvl, int64_t *ret)
{
    return level_slot(st, lvl, "max", ret);
}

/* The first slot of level 1, or -1. */
static int first_slot(ch_store *st, int64_t *ret)
{
    return level_slot(st, 1, "min", ret);
}

static int keep_once(ch_store *st)
{
    uint64_t now;
    int r = server_now(st, &now);
    int64_t w1, w2;
    if (r == 0)
        r = level_mark(st, 1, &w1);
    if (r == 0 && w1 < 0) {
        /* nothing consolidated yet: start before the first commit */
        ch_reply rep;
        char sql[160];
        snprintf(sql, sizeof sql, "SELECT count(), min(toUInt32(at)) FROM pending FORMAT TabSeparated");
        r = ch_client_query(st->ch, sql, NULL, 0, NULL, &rep);
        if (r == 0) {
            long long n = 0, first = 0;
            sscanf(rep.body, "%lld\t%lld", &n, &first);
            ch_client_reply_free(&rep);
            if (!n)
                return 0;
            w1 = first / st->unit_s - 1;
        }
    }
    /* level 1: every hour that has settled, in order, a bounded number per round */
    for (int i = 0; r == 0 && i < 48; i++) {
        uint64_t u = (uint64_t)(w1 + 1);
        if ((u + 1) * (uint64_t)st->unit_s + (uint64_t)st->settle_s > now)
            break;
        r = consolidate_unit(st, (uint32_t)u);
        if (r == 0)
            w1 = (int64_t)u;
    }
    if (r == 0)
        r = level_mark(st, 2, &w2);
    int64_t per = st->day_s / st->unit_s;
    if (r == 0 && w2 < 0) {
        /* none yet: the day before the first hour's */
        int64_t first;
        r = first_slot(st, &first);
        w2 = first < 0 ? w1 / per : first / per - 1;
    }
    /* level 2: days whose hours are all in level 1 */
    for (int i = 0; r == 0 && i < 8; i++) {
        int64_t d = w2 + 1;
        if ((d + 1) * per - 1 > w1)
            break;
        r = consolidate_day(st, (uint32_t)d);
        if (r == 0)
            w2 = d;
    }
    return r;
}

/* The database's size on the first node (for /metrics, which must not
 * wait for ClickHouse). */
static void measure(ch_store *st)
{
    jbuf q;
    jbuf_init(&q);
    jbuf_puts(&q, "SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = ");
    ch_store_sql_str(&q, ch_client_url(st->ch)->database);
    jbuf_puts(&q, " FORMAT TabSeparated");
    ch_reply rep;
    if (!q.failed && ch_client_query(st->ch, q.data, NULL, 0, NULL, &rep) == 0) {
        __atomic_store_n(&st->db_bytes, strtoll(rep.body, NULL, 10), __ATOMIC_RELAXED);
        ch_client_reply_free(&rep);
    }
    jbuf_free(&q);
}

/* Drops, on every node, the partitions (rday) below `below` of the local
 * tables named. */
static int drop_partitions(ch_store *st, const char *const *tables, size_t n, uint32_t below)
{
    int r = 0;
    for (size_t k = 0; k < st->n_nodes; k++)
        for (size_t i = 0; i < n; i++) {
            char local[96];
            ch_store_table_name(st, tables[i], local, sizeof local, true);
            jbuf q;
            jbuf_init(&q);
            jbuf_puts(&q, "SELECT DISTINCT partition FROM system.parts WHERE active AND database = ");
            ch_store_sql_str(&q, ch_client_url(st->ch)->database);
            jbuf_puts(&q, " AND table = ");
            ch_store_sql_str(&q, local);
            jbuf_puts(&q, " FORMAT TabSeparated");
            ch_reply rep;
            if (q.failed || ch_client_query(st->nodes[k], q.data, NULL, 0, NULL, &rep) < 0) {
                jbuf_free(&q);
                r = -EIO;
                continue;
            }
            jbuf_free(&q);
            for (const char *p = rep.body; *p;) {
                /* "20783", or "(20783,0)" for a raw table */
                size_t len = strcspn(p, "\n");
                unsigned long part = strtoul(p + (*p == '('), NULL, 10);
                if (part < below && len < 64) {
                    char sql[200];
                    snprintf(sql, sizeof sql, "ALTER TABLE %s DROP PARTITION %.*s", local, (int)len, p);
                    ch_reply dr;
                    if (ch_client_query(st->nodes[k], sql, NULL, 0, NULL, &dr) == 0)
                        ch_client_reply_free(&dr);
                    else
                        r = -EIO;
                }
                p += strcspn(p, "\n");
                p += *p == '\n';
            }
            ch_client_reply_free(&rep);
        }
    return r;
}

/* Pending rows two days older than what level 1 holds are in level 1
 * (their manifests in commits): their partitions go. With retention, so
 * does everything received before its window. */
static int tidy(ch_store *st)
{
    int64_t w1, w2;
    int r = ch_read_watermarks(st, &w1, &w2);
    if (r == 0 && w1 >= 0) {
        static const char *const pend[] = {"pending"};
        int64_t day = (w1 + 1) * st->unit_s / 86400 - 2;
        if (day > 0)
            r = drop_partitions(st, pend, 1, (uint32_t)day);
    }
    if (st->retention_days) {
        static const char *const all[] = {"page_loads", "startups", "requests", "spans", "logs", "metric_points",
                                          "origins", "trace_index", "attempts", "pending", "commits", "rollups"};
        int64_t today = wall_ns() / STORE_DAY_NS;
        if (today > st->retention_days && drop_partitions(st, all, sizeof all / sizeof all[0],
                                                          (uint32_t)(today - st->retention_days)) < 0)
            r = -EIO;
    }
    return r;
}


void *ch_keeper_main(void *arg)
{
    ch_store *st = arg;
    int64_t tick_ns = (st->unit_s < 40 ? st->unit_s / 4 + 1 : 10) * INT64_C(1000000000);
    bool failing = false;
    int64_t tidied = 0;
    pthread_mutex_lock(&st->lock);
    while (!st->stopping) {
        pthread_mutex_unlock(&st->lock);
        int r = keep_once(st);
        measure(st);
        /* partitions: every few minutes (a round of the keeper with a short slot: every round) */
        if (r == 0 && (mono_ns() - tidied > 300 * INT64_C(1000000000) || st->unit_s < 40)) {
            r = tidy(st);
            tidied = mono_ns();
        }
        if (r < 0 && !failing)
            ch_store_say(st, "store: consolidating the rollups failed (tried again in %" PRId64 " s; queries stay exact)",
                tick_ns / INT64_C(1000000000));
        else if (r == 0 && failing)
            ch_store_say(st, "store: consolidating the rollups works again");
        failing = r < 0;
        pthread_mutex_lock(&st->lock);
        if (!st->stopping)
            cond_wait_until(&st->keeper_wake, &st->lock, mono_ns() + tick_ns);
    }
    pthread_mutex_unlock(&st->lock);
    return NULL;
}
