/* The ClickHouse store's writers (ch_int.h): the threads that take the
 * batches submitted and insert them, in attempts.
 *
 * An attempt is one group commit of one pacerd instance (a writer thread
 * takes every job queued, as SQLite's writer does): a random 64-bit id,
 * and these steps, each visible on its server before the next begins:
 *   1. begin: a row in `attempts` for each batch id of the group, and
 *      (at the same time: they do not depend on it) the raw rows, their
 *      origins and trace index rows;
 *   2. check: a batch id with another attempt's row is a retry; a retry
 *      some attempt already committed is a duplicate: answered so, and
 *      counted no more (its raw rows came again: readers keep one);
 *   3. commit: ONE insert into `pending` (one part, on one shard: atomic):
 *      manifests, then the rollup rows of the fresh batches summed, and
 *      those of each retry on their own (their batch named);
 *   4. the answer. (Consolidation copies the manifests into `commits`,
 *      where they stay when pending's partitions go.)
 * An attempt that passes its deadline (settle/2 after its begin) before 3
 * does not commit: its batches are answered 503 and sent again.
 *
 * Exactly once. Raw rows may be written twice (a retry after a crash or a
 * timeout): readers keep one row per identity. Rollups count a batch in
 * exactly one attempt, its winner:
 *   - at most one attempt has a batch fresh: the later of two checks sees
 *     the other's begin row (the begins of a batch are on one shard);
 *   - the winner is the fresh attempt if it committed, else the retry
 *     attempt that committed first (commit time, then id);
 *   - fresh rollup rows of a committed attempt always count; a retry's
 *     rows count when their attempt is the winner.
 * Until the fresh attempt commits (or passes its deadline) a committed
 * retry counts; when it commits, it counts instead: the same batch, the
 * same numbers (a batch id names one payload). A query never counts a
 * batch twice, and counts it once when some attempt of it committed.
 */
#include "ch_int.h"

#include <pacer/base/clock.h>
#include <pacer/base/hash.h>
#include <pacer/base/random.h>
#include <pacer/base/thread.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOUR_NS INT64_C(3600000000000)
#define GATHER_GAP_NS INT64_C(2000000) /* gather(): a request that came this recently may have company */

typedef struct ch_job {
    struct ch_job *next;
    const char *app, *batch_id, *endpoint;
    store_record *recs;
    size_t n, rejected, items;
    const store_tally *tallies;
    size_t n_tallies;
    int result;
    bool duplicate, done;
    bool retry; /* its batch id was begun by another attempt */
} ch_job;

/* ---- rollup rows ---- */

/* Groups of one attempt: rollup rows being summed in memory. */
typedef struct agg {
    struct agg *next;
    uint64_t hash;
    ch_srow row;
    const char *batch;  /* "" for the fresh batches' sum */
} agg;

#define AGG_BUCKETS 4096

typedef struct aggs {
    agg *slots[AGG_BUCKETS];
    size_t n;
    bool oom;
} aggs;

static agg *agg_get(aggs *a, int8_t kind, const char *app, const char *version, const char *name, int32_t t,
                    const char *batch)
{
    uint64_t h = fnv1a64(FNV1A64_INIT, &kind, 1);
    h = fnv1a64(h, app, strlen(app) + 1);
    h = fnv1a64(h, version, strlen(version) + 1);
    h = fnv1a64(h, name, strlen(name) + 1);
    h = fnv1a64(h, &t, sizeof t);
    h = fnv1a64(h, batch, strlen(batch) + 1);
    agg **slot = &a->slots[h % AGG_BUCKETS];
    for (agg *g = *slot; g; g = g->next)
        if (g->hash == h && g->row.kind == kind && g->row.t == t && strcmp(g->row.name, name) == 0 &&
            strcmp(g->row.app, app) == 0 && strcmp(g->row.version, version) == 0 && strcmp(g->batch, batch) == 0)
            return g;
    agg *g = calloc(1, sizeof *g);
    if (!g) {
        a->oom = true;
        return NULL;
    }
    g->hash = h;
    g->row = (ch_srow){.kind = kind, .app = app, .version = version, .name = name, .grain = CH_GRAIN_SLOT, .t = t};
    g->batch = batch;
    for (size_t i = 0; i < STORE_MAX_METRICS; i++)
        sketch_init(&g->row.m[i]);
    g->next = *slot;
    *slot = g;
    a->n++;
    return g;
}

static void aggs_free(aggs *a)
{
    for (size_t b = 0; b < AGG_BUCKETS; b++)
        for (agg *g = a->slots[b], *next; g; g = next) {
            next = g->next;
            ch_layout_srow_reset(&g->row);
            free(g);
        }
    memset(a, 0, sizeof *a);
}

static void agg_add(aggs *a, const store_record *rec, const char *batch)
{
    const char *version = rec->version ? rec->version : "";
    int64_t slot = rec->ts_ns / CH_SLOT_NS;
    if (slot > INT32_MAX)
        slot = INT32_MAX;
    agg *g = agg_get(a, (int8_t)rec->kind, rec->app, version, rec->name, (int32_t)slot, batch);
    if (!g)
        return;
    g->row.cnt++;
    g->row.failed += rec->failed;
    if (rec->excluded)
        return;
    for (size_t i = 0, n = store_layout_kind(rec->kind)->n_metrics; i < n; i++)
        if (!isnan(rec->metrics[i]) && sketch_add(&g->row.m[i], rec->metrics[i]) == -ENOMEM)
            a->oom = true; /* negative values are left out, as SQLite's rollups do */
}

/* pending's columns as the writer fills them (at: the server's now()). */
#define PENDING_COLUMNS "att, rday, batch, fresh, " CH_SKETCH_COLUMNS

static void pending_head(rb_buf *b, uint64_t att, uint32_t rday, const char *batch, bool fresh)
{
    rb_u64(b, att);
    rb_u32(b, rday);
    rb_str(b, batch, strlen(batch));
    rb_u8(b, fresh);
}

static void aggs_write(const aggs *a, uint64_t att, uint32_t rday, rb_buf *b)
{
    for (size_t k = 0; k < AGG_BUCKETS; k++)
        for (const agg *g = a->slots[k]; g; g = g->next) {
            pending_head(b, att, rday, g->batch, !g->batch[0]);
            ch_layout_write_srow(b, &g->row);
        }
}

/* ---- the writer ---- */

static uint64_t rid_of(const ch_job *j, uint64_t att, size_t job_index, size_t rec_index)
{
    uint64_t h = FNV1A64_INIT;
    if (j->batch_id) {
        h = fnv1a64(h, j->app, strlen(j->app) + 1);
        h = fnv1a64(h, j->batch_id, strlen(j->batch_id) + 1);
        h = fnv1a64(h, j->endpoint ? j->endpoint : "", j->endpoint ? strlen(j->endpoint) + 1 : 1);
    } else {
        h = fnv1a64(h, &att, sizeof att);
        h = fnv1a64(h, &job_index, sizeof job_index);
    }
    return hash_u64(fnv1a64(h, &rec_index, sizeof rec_index));
}

static uint64_t origin_key(const store_origin *o)
{
    return o ? (o->hash ? o->hash : 1) : 0;
}

/* Whether the origin (which: 0 resource, 1 scope) was written on rday by
 * this instance; marks it. */
static bool origin_seen(ch_store *st, int which, uint64_t id, uint32_t rday)
{
    pthread_mutex_lock(&st->olock);
    if (st->origin_day != rday) {
        memset(st->origin_seen, 0, sizeof st->origin_seen);
        st->origin_day = rday;
    }
    uint64_t key = hash_u64(id * 2 + (uint64_t)which) | 1;
    uint64_t *slot = &st->origin_seen[key % 4096];
    bool seen = *slot == key;
    *slot = key;
    pthread_mutex_unlock(&st->olock);
    return seen;
}

static void origin_forget(ch_store *st)
{
    pthread_mutex_lock(&st->olock);
    memset(st->origin_seen, 0, sizeof st->origin_seen);
    pthread_mutex_unlock(&st->olock);
}

/* "(app = 'a' AND batch IN ('x', 'y')) OR …" of the jobs with batch ids
 * (that match `want`, or all). */
static bool batch_filter(jbuf *q, ch_job *list, bool only_retries)
{
    bool any = false;
    jbuf_puts(q, "(");
    for (ch_job *j = list; j; j = j->next) {
        if (!j->batch_id || (only_retries && !j->retry))
            continue;
        jbuf_puts(q, any ? " OR " : "");
        jbuf_puts(q, "(app = ");
        ch_store_sql_str(q, j->app);
        jbuf_puts(q, " AND batch = ");
        ch_store_sql_str(q, j->batch_id);
        jbuf_puts(q, ")");
        any = true;
    }
    jbuf_puts(q, ")");
    return any;
}

static ch_job *job_of(ch_job *list, const char *app, size_t al, const char *batch, size_t bl)
{
    for (ch_job *j = list; j; j = j->next)
        if (j->batch_id && strlen(j->app) == al && memcmp(j->app, app, al) == 0 && strlen(j->batch_id) == bl &&
            memcmp(j->batch_id, batch, bl) == 0)
            return j;
    return NULL;
}

/* Step 2: which batches are retries (another attempt began them) and,
 * of those, which duplicates (another attempt committed them). */
static int check(ch_store *st, ch_job *list, uint64_t att, ch_reply *rep)
{
    bool ids = false;
    for (ch_job *j = list; j; j = j->next)
        ids |= j->batch_id != NULL;
    if (!ids)
        return 0;
    int r;
    jbuf q;
    jbuf_init(&q);
    jbuf_printf(&q, "SELECT app, batch FROM attempts WHERE att != %" PRIu64 " AND ", att);
    batch_filter(&q, list, false);
    jbuf_puts(&q, " GROUP BY app, batch FORMAT RowBinary");
    r = q.failed ? -ENOMEM : ch_client_query(st->ch, q.data, NULL, 0, NULL, rep);
    jbuf_free(&q);
    if (r < 0)
        return r;
    rb_reader rd;
    rb_reader_init(&rd, rep->body, rep->len);
    bool retries = false;
    while (rb_more(&rd)) {
        size_t al, bl;
        const char *a = rb_get_str(&rd, &al), *bt = rb_get_str(&rd, &bl);
        ch_job *j = rd.bad ? NULL : job_of(list, a, al, bt, bl);
        if (j)
            retries = j->retry = true;
    }
    ch_client_reply_free(rep);
    if (rd.bad) {
        snprintf(rep->error, sizeof rep->error, "%s: a bad answer to the batch check", ch_client_url(st->ch)->shown);
        return -EIO;
    }
    if (!retries)
        return 0;
    /* a retry some attempt committed: a duplicate */
    jbuf_init(&q);
    jbuf_puts(&q, "SELECT app, batch FROM commits WHERE ");
    batch_filter(&q, list, true);
    jbuf_puts(&q, " UNION ALL SELECT app, batch FROM pending WHERE kind = -1 AND ");
    batch_filter(&q, list, true);
    jbuf_puts(&q, " FORMAT RowBinary");
    r = q.failed ? -ENOMEM : ch_client_query(st->ch, q.data, NULL, 0, NULL, rep);
    jbuf_free(&q);
    if (r < 0)
        return r;
    rb_reader_init(&rd, rep->body, rep->len);
    while (rb_more(&rd)) {
        size_t al, bl;
        const char *a = rb_get_str(&rd, &al), *bt = rb_get_str(&rd, &bl);
        ch_job *j = rd.bad ? NULL : job_of(list, a, al, bt, bl);
        if (j)
            j->duplicate = true;
    }
    ch_client_reply_free(rep);
    return 0;
}

/* Steps 1 and 3 at once: the begin rows, and the raw rows, origins and
 * trace index of every job but a batch twice in the group. (Those of a
 * batch the check then finds committed are written again: readers keep
 * one row per identity.) */
static int write_rows(ch_store *st, ch_job *list, uint64_t att, uint32_t rday, int64_t ins, ch_reply *rep)
{
    rb_buf rows[TABLE_COUNT], origins, tix, begins, cleaned;
    for (int t = 0; t < TABLE_COUNT; t++)
        rb_init(&rows[t]);
    rb_init(&cleaned);
    rb_init(&origins);
    rb_init(&tix);
    rb_init(&begins);
    for (ch_job *j = list; j; j = j->next)
        if (j->batch_id && !j->duplicate) {
            rb_str(&begins, j->app, strlen(j->app));
            rb_str(&begins, j->batch_id, strlen(j->batch_id));
            rb_u64(&begins, att);
            rb_u32(&begins, rday);
        }
    size_t ji = 0;
    for (ch_job *j = list; j; j = j->next, ji++) {
        if (j->duplicate)
            continue;
        /* the tallies, one row each (counted once per identity: a batch
         * written twice by two attempts counts once) */
        for (size_t k = 0; k < j->n_tallies; k++) {
            const store_tally *tl = &j->tallies[k];
            rb_str(&cleaned, j->app, strlen(j->app));
            rb_str(&cleaned, tl->reason, strlen(tl->reason));
            rb_u64(&cleaned, rid_of(j, att, ji, k));
            rb_i64(&cleaned, tl->ts_ns);
            rb_u32(&cleaned, rday);
        }
        for (size_t i = 0; i < j->n; i++) {
            const store_record *rec = &j->recs[i];
            const ch_table *t = ch_layout_table(rec->table);
            ch_layout_encode_row(t, rec, rid_of(j, att, ji, i), rday, &rows[rec->table]);
            rb_i64(&rows[rec->table], ins++);
            const store_origin *os[2] = {rec->resource, rec->scope};
            for (int w = 0; w < 2; w++) {
                uint64_t id = origin_key(os[w]);
                if (!id || origin_seen(st, w, id, rday))
                    continue;
                rb_u8(&origins, (uint8_t)w);
                rb_u64(&origins, id);
                rb_str(&origins, os[w]->json, strlen(os[w]->json));
                rb_u32(&origins, rday);
            }
            if (t->trace_col >= 0 && store_layout_table(rec->table)->kind != KIND_NONE) {
                const store_value *tv = &rec->cols[t->trace_col];
                const uint8_t *tid = tv->type == SV_BLOB && tv->n == 16 ? tv->p : NULL;
                if (tid) {
                    rb_u16(&tix, (uint16_t)(tid[0] << 8 | tid[1])); /* 24 bits: store_ch_read.c */
                    rb_u8(&tix, tid[2]);
                    rb_u8(&tix, (uint8_t)rec->table);
                    rb_str(&tix, rec->app, strlen(rec->app));
                    int64_t ts = rec->cols[t->ts_col].type == SV_INT ? rec->cols[t->ts_col].i : 0;
                    rb_u32(&tix, (uint32_t)(int32_t)(ts / HOUR_NS));
                    rb_u32(&tix, rday);
                }
            }
        }
    }
    int r = 0;
    bool oom = origins.failed || tix.failed || begins.failed || cleaned.failed;
    for (int t = 0; t < TABLE_COUNT; t++)
        oom |= rows[t].failed;
    if (oom)
        r = -ENOMEM;
    /* every insert at once: none depends on another (the commit waits for all) */
    ch_request rq[TABLE_COUNT + 4];
    char sqls[TABLE_COUNT][4096];
    size_t n = 0;
    if (begins.len)
        rq[n++] = (ch_request){"INSERT INTO attempts (app, batch, att, rday) FORMAT RowBinary", begins.p, begins.len};
    if (origins.len)
        rq[n++] = (ch_request){"INSERT INTO origins (which, id, json, rday) FORMAT RowBinary", origins.p, origins.len};
    for (enum store_table t = 0; t < TABLE_COUNT; t++)
        if (rows[t].len) {
            snprintf(sqls[t], sizeof sqls[t], "INSERT INTO %s (%s, ins) FORMAT RowBinary", ch_layout_table(t)->name,
                     ch_layout_table(t)->columns);
            rq[n++] = (ch_request){sqls[t], rows[t].p, rows[t].len};
        }
    if (tix.len)
        rq[n++] = (ch_request){"INSERT INTO trace_index (th, tl, tbl, app, hour, rday) FORMAT RowBinary", tix.p, tix.len};
    if (cleaned.len)
        rq[n++] = (ch_request){"INSERT INTO cleaned (app, reason, rid, ts, rday) FORMAT RowBinary", cleaned.p,
                               cleaned.len};
    ch_reply reps[TABLE_COUNT + 4];
    if (r == 0 && n) {
        r = ch_client_query_many(st->ch, n, rq, ch_store_settings(st), reps);
        for (size_t i = 0; i < n; i++) {
            if (r < 0 && reps[i].error[0] && !rep->error[0])
                *rep = reps[i]; /* the first failure's reason */
            ch_client_reply_free(&reps[i]);
        }
        if (r < 0 && origins.len)
            origin_forget(st);
    }
    for (int t = 0; t < TABLE_COUNT; t++)
        rb_free(&rows[t]);
    rb_free(&origins);
    rb_free(&tix);
    rb_free(&begins);
    rb_free(&cleaned);
    if (r == -ENOMEM)
        snprintf(rep->error, sizeof rep->error, "out of memory");
    return r;
}

/* Step 4: the commit, one insert. */
static int commit(ch_store *st, ch_job *list, uint64_t att, uint32_t rday, ch_reply *rep)
{
    aggs *a = calloc(1, sizeof *a);
    rb_buf b;
    rb_init(&b);
    if (!a) {
        snprintf(rep->error, sizeof rep->error, "out of memory");
        return -ENOMEM;
    }
    for (ch_job *j = list; j; j = j->next) {
        if (j->duplicate)
            continue;
        if (j->batch_id) {
            pending_head(&b, att, rday, j->batch_id, !j->retry);
            ch_srow m = {.kind = -1, .app = j->app, .version = "", .name = "", .cnt = j->items};
            ch_layout_write_srow(&b, &m);
        }
        const char *scope = j->retry ? j->batch_id : "";
        for (size_t i = 0; i < j->n; i++)
            if (j->recs[i].kind != KIND_NONE && j->recs[i].name && j->recs[i].app)
                agg_add(a, &j->recs[i], scope);
    }
    aggs_write(a, att, rday, &b);
    int r = a->oom || b.failed ? -ENOMEM : 0;
    if (r == 0 && b.len)
        r = ch_store_write(st, "INSERT INTO pending (" PENDING_COLUMNS ") FORMAT RowBinary", b.p, b.len, rep);
    if (r == 0 && b.len)
        ch_client_reply_free(rep);
    aggs_free(a);
    free(a);
    rb_free(&b);
    if (r == -ENOMEM)
        snprintf(rep->error, sizeof rep->error, "out of memory");
    return r;
}

static int run_group(ch_store *st, ch_job *list, ch_reply *rep)
{
    int64_t t0 = mono_ns();
    uint64_t att = random_u64() | 1;
    /* the group's rows take consecutive write marks from the wall clock,
     * after those of this instance's previous groups */
    size_t n_recs = 0;
    for (ch_job *j = list; j; j = j->next)
        n_recs += j->n;
    int64_t now = wall_ns(), ins = __atomic_load_n(&st->ins_next, __ATOMIC_RELAXED), base;
    do
        base = ins > now ? ins : now;
    while (!__atomic_compare_exchange_n(&st->ins_next, &ins, base + (int64_t)n_recs, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
    uint32_t rday = (uint32_t)(base / STORE_DAY_NS);
    memset(rep, 0, sizeof *rep);
    /* a batch sent twice into the same group is stored by its first job */
    for (ch_job *j = list; j; j = j->next)
        for (ch_job *k = list; j->batch_id && k != j; k = k->next)
            if (k->batch_id && strcmp(k->batch_id, j->batch_id) == 0 && strcmp(k->app, j->app) == 0)
                j->duplicate = true;
    int r = write_rows(st, list, att, rday, base, rep);
    if (r == 0)
        r = check(st, list, att, rep);
    /* past the deadline, a commit could come after the consolidation of
     * a retry's hour: this attempt gives up (its batches come again) */
    if (r == 0 && mono_ns() - t0 > st->settle_s * INT64_C(1000000000) / 2) {
        snprintf(rep->error, sizeof rep->error, "%s: the attempt took longer than %" PRId64 " s: not committed",
                 ch_client_url(st->ch)->shown, st->settle_s / 2);
        r = -ETIMEDOUT;
    }
    if (r == 0)
        r = commit(st, list, att, rday, rep);
    return r;
}

/* Every part ClickHouse writes is two files per column of each table a
 * group inserts into, merged again later: a group of many requests costs
 * it hardly more than a group of one. So a writer lets the queue fill
 * before it takes it: while requests are on their way (being read and
 * decoded, store_coming) or one came within the last 2 ms, until the first
 * has waited --clickhouse-gather, enough records wait, or every thread
 * that could bring one is waiting here already (called with st->lock
 * held). */
static void gather(ch_store *st)
{
    if (st->gather_ns <= 0)
        return;
    int64_t start = mono_ns(), last = start;
    uint64_t seen = st->arrived;
    while (st->head && !st->stopping && st->waiting_items < st->gather_items &&
           (!st->submitters || st->jobs_in < st->submitters)) {
        int64_t now = mono_ns();
        if (st->arrived != seen) {
            seen = st->arrived;
            last = now;
        }
        int64_t until = st->coming > 0 ? start + st->gather_ns : last + GATHER_GAP_NS;
        if (until > start + st->gather_ns)
            until = start + st->gather_ns;
        if (now >= until)
            break;
        cond_wait_until(&st->wake, &st->lock, until);
    }
}

void ch_writer_coming(store *s, int delta)
{
    ch_store *st = (ch_store *)s;
    pthread_mutex_lock(&st->lock);
    st->coming += delta;
    if (delta < 0) {
        st->arrived++; /* it submits next: the quiet gap starts again */
        pthread_cond_broadcast(&st->wake);
    }
    pthread_mutex_unlock(&st->lock);
}

void *ch_writer_main(void *arg)
{
    ch_store *st = arg;
    pthread_mutex_lock(&st->lock);
    for (;;) {
        while (!st->head && !st->stopping)
            pthread_cond_wait(&st->wake, &st->lock);
        if (!st->head)
            break;
        gather(st);
        if (!st->head)
            continue; /* another writer took them */
        ch_job *list = st->head;
        st->head = st->tail = NULL;
        st->waiting_items = 0;
        pthread_mutex_unlock(&st->lock);

        int64_t t0 = mono_ns();
        ch_reply rep;
        int r = run_group(st, list, &rep);
        store_error err;
        if (r < 0)
            ch_store_error_of(&rep, &err);
        uint64_t rows[TABLE_COUNT] = {0}, duplicates = 0;
        for (ch_job *j = list; j && r == 0; j = j->next) {
            duplicates += j->duplicate;
            for (size_t i = 0; !j->duplicate && i < j->n; i++)
                rows[j->recs[i].table]++;
        }
        uint64_t stored = 0;
        for (size_t t = 0; t < TABLE_COUNT; t++)
            stored += rows[t];
        health_write(&st->health, r < 0 ? &err : NULL, stored ? HEALTH_BATCH : HEALTH_OTHER, mono_ns() - t0, rows,
                     duplicates, 0);

        pthread_mutex_lock(&st->lock);
        for (ch_job *j = list; j; j = j->next) {
            j->result = r < 0 ? -EIO : 0;
            if (r < 0)
                j->duplicate = false;
            st->queued_items -= j->n;
            st->jobs_in--;
            j->done = true;
        }
        pthread_cond_broadcast(&st->done);
    }
    pthread_mutex_unlock(&st->lock);
    return NULL;
}

int ch_writer_submit(store *s, const store_batch *b, bool *ret_duplicate)
{
    ch_store *st = (ch_store *)s;
    size_t n = b->n;
    ch_job j = {.app = b->app, .batch_id = b->batch_id, .endpoint = b->endpoint, .recs = b->recs, .n = n,
                .rejected = b->rejected, .items = b->items, .tallies = b->tallies, .n_tallies = b->n_tallies};
    pthread_mutex_lock(&st->lock);
    if (st->stopping) {
        pthread_mutex_unlock(&st->lock);
        return -ESHUTDOWN;
    }
    if (n && st->queued_items && st->queued_items + n > st->max_queued) {
        pthread_mutex_unlock(&st->lock);
        return -EAGAIN;
    }
    st->queued_items += n;
    st->waiting_items += n;
    st->jobs_in++;
    st->arrived++;
    int64_t t0 = mono_ns();
    if (st->tail)
        st->tail->next = &j;
    else
        st->head = &j;
    st->tail = &j;
    pthread_cond_broadcast(&st->wake); /* a gathering writer counts arrivals */
    while (!j.done)
        pthread_cond_wait(&st->done, &st->lock);
    pthread_mutex_unlock(&st->lock);
    health_submit(&st->health, mono_ns() - t0);
    *ret_duplicate = j.duplicate;
    return j.result;
}

