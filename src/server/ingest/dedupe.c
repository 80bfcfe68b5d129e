/* The duplicate filter (dedupe.h).
 *
 * The record ids: an open-addressing set of 64-bit hashes (linear
 * probing, deletion by backward shift) and a ring of the committed ones in
 * the order they came, the oldest leaving first once `dedupe-records` are
 * held. Ids of a submit on its way are in the set already (a copy inside
 * one batch, or in a request submitted meanwhile, is found too) and listed
 * by their submit: its commit moves them into the ring, its failure takes
 * them out. One lock over all.
 */
#include "dedupe.h"

#include <pacer/base/hash.h>
#include <pacer/schema.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- the set ---- */

typedef struct idset {
    uint64_t *slots;
    size_t mask, used;
    uint64_t *ring; /* committed, oldest at head */
    size_t cap, head, n;
} idset;

static bool idset_init(idset *s, size_t cap)
{
    memset(s, 0, sizeof *s);
    if (!cap)
        return true;
    size_t slots = 1024;
    while (slots < 2 * cap + 1024)
        slots *= 2;
    s->slots = calloc(slots, sizeof *s->slots); /* pages are touched as the set fills */
    s->ring = malloc(cap * sizeof *s->ring);
    s->mask = slots - 1;
    s->cap = cap;
    return s->slots && s->ring;
}

static void idset_free(idset *s)
{
    free(s->slots);
    free(s->ring);
    memset(s, 0, sizeof *s);
}

static bool idset_has(const idset *s, uint64_t x)
{
    for (size_t i = hash_u64(x) & s->mask;; i = (i + 1) & s->mask) {
        if (!s->slots[i])
            return false;
        if (s->slots[i] == x)
            return true;
    }
}

static void idset_delete(idset *s, uint64_t x)
{
    size_t i = hash_u64(x) & s->mask;
    while (s->slots[i] && s->slots[i] != x)
        i = (i + 1) & s->mask;
    if (!s->slots[i])
        return;
    /* backward shift: later entries of the run move up where their probe allows */
    size_t j = i;
    for (;;) {
        s->slots[i] = 0;
        for (;;) {
            j = (j + 1) & s->mask;
            if (!s->slots[j]) {
                s->used--;
                return;
            }
            size_t home = hash_u64(s->slots[j]) & s->mask;
            /* j's entry may fill i unless its home lies cyclically in (i, j] */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        s->slots[i] = s->slots[j];
        i = j;
    }
}

static void ring_pop(idset *s)
{
    idset_delete(s, s->ring[s->head]);
    s->head = (s->head + 1) % s->cap;
    s->n--;
}

/* Adds x, an id on its way (x not in the set): false when the set is
 * full of ids on their way (a submit larger than the set: its rest is not
 * tracked). */
static bool idset_add_pending(idset *s, uint64_t x)
{
    while (s->used + 1 > (s->mask + 1) / 4 * 3 && s->n)
        ring_pop(s);
    if (s->used + 1 > (s->mask + 1) / 4 * 3)
        return false;
    size_t i = hash_u64(x) & s->mask;
    while (s->slots[i])
        i = (i + 1) & s->mask;
    s->slots[i] = x;
    s->used++;
    return true;
}

/* Ids on their way: committed, they join the ring; else they go. */
static void idset_settle(idset *s, const uint64_t *ids, size_t n, bool committed)
{
    for (size_t k = 0; k < n; k++) {
        uint64_t x = ids[k];
        if (!committed) {
            idset_delete(s, x);
            continue;
        }
        if (s->n == s->cap)
            ring_pop(s);
        s->ring[(s->head + s->n) % s->cap] = x;
        s->n++;
    }
}

/* A committed id (filling the set at start). */
static void idset_add(idset *s, uint64_t x)
{
    if (!s->cap || idset_has(s, x) || !idset_add_pending(s, x))
        return;
    idset_settle(s, &x, 1, true);
}

/* ---- record ids ---- */

static size_t value_len(const store_value *v)
{
    if (v->type == SV_TEXT)
        return v->n ? v->n : strlen(v->p);
    return v->type == SV_BLOB ? v->n : 0;
}

static uint64_t mix_value(uint64_t h, const store_value *v)
{
    uint64_t n = value_len(v);
    h = fnv1a64(h, &v->type, sizeof v->type);
    if (v->type == SV_INT)
        return fnv1a64(h, &v->i, sizeof v->i);
    h = fnv1a64(h, &n, sizeof n);
    return n ? fnv1a64(h, v->p, n) : h;
}

/* The columns a record id is made of, per table (layout indexes; -1: none). */
typedef struct id_cols {
    int app, session, ts, a, b; /* spans: a trace id, b span id; logs: a type, b body; points: a name, b attributes */
} id_cols;

static id_cols id_cols_find(enum store_table t)
{
    id_cols c = {store_layout_col(t, SRC_COMMON, PACER_COMMON_APP), store_layout_col(t, SRC_COMMON, PACER_COMMON_SESSION),
                 store_layout_col(t, SRC_COMMON, PACER_COMMON_TS), -1, -1};
    switch (t) {
    case TABLE_PAGE_LOADS:
    case TABLE_STARTUPS:
    case TABLE_REQUESTS:
        c.a = store_layout_col(t, SRC_TRACE_ID, -1);
        c.b = store_layout_col(t, SRC_SPAN_ID, -1);
        break;
    case TABLE_LOGS:
        c.a = store_layout_col(t, SRC_LOG_TYPE, -1);
        c.b = store_layout_col(t, SRC_BODY, -1);
        break;
    case TABLE_METRIC_POINTS:
        c.a = store_layout_col(t, SRC_METRIC_NAME, -1);
        c.b = store_layout_col(t, SRC_ATTRIBUTES, -1);
        break;
    default: break;
    }
    return c;
}

static id_cols id_cols_table[TABLE_COUNT];
static pthread_once_t id_cols_once = PTHREAD_ONCE_INIT;

static void id_cols_init(void)
{
    for (enum store_table t = 0; t < TABLE_COUNT; t++)
        id_cols_table[t] = id_cols_find(t);
}

/* The columns of table t's record ids, found once (ingest looks them up
 * for every record). */
static id_cols id_cols_of(enum store_table t)
{
    pthread_once(&id_cols_once, id_cols_init);
    return id_cols_table[t];
}

static bool text_is(const store_value *v, const char *s)
{
    return v->type == SV_TEXT && value_len(v) == strlen(s) && memcmp(v->p, s, strlen(s)) == 0;
}

static bool text_starts(const store_value *v, const char *s)
{
    return v->type == SV_TEXT && value_len(v) >= strlen(s) && memcmp(v->p, s, strlen(s)) == 0;
}

/* The id of a record (its columns as the layout orders them), or 0 for
 * one that is not pacer's. */
static uint64_t record_id(enum store_table t, const store_value *cols)
{
    id_cols c = id_cols_of(t);
    if (c.a < 0 || c.b < 0 || c.app < 0)
        return 0;
    uint64_t h = fnv1a64(FNV1A64_INIT, &t, sizeof t);
    h = mix_value(h, &cols[c.app]);
    if (t == TABLE_LOGS || t == TABLE_METRIC_POINTS) {
        if (t == TABLE_LOGS ? !(text_is(&cols[c.a], "jank") || text_is(&cols[c.a], "leak"))
                            : !text_starts(&cols[c.a], "pacer."))
            return 0;
        h = mix_value(h, &cols[c.session]);
        h = mix_value(h, &cols[c.ts]);
    }
    h = mix_value(h, &cols[c.a]);
    h = mix_value(h, &cols[c.b]);
    return h ? h : 1;
}

/* ---- the filter ---- */

struct dedupe {
    pthread_mutex_t lock;
    idset ids;
};

dedupe *dedupe_new(size_t records)
{
    dedupe *dd = calloc(1, sizeof *dd);
    if (!dd)
        return NULL;
    pthread_mutex_init(&dd->lock, NULL);
    if (!idset_init(&dd->ids, records)) {
        dedupe_free(dd);
        return NULL;
    }
    return dd;
}

void dedupe_free(dedupe *dd)
{
    if (!dd)
        return;
    idset_free(&dd->ids);
    pthread_mutex_destroy(&dd->lock);
    free(dd);
}

static bool fill_row(void *ctx, const store_mark_row *row)
{
    dedupe *dd = ctx;
    uint64_t id = record_id(row->table, row->cols);
    if (id) {
        pthread_mutex_lock(&dd->lock);
        idset_add(&dd->ids, id);
        pthread_mutex_unlock(&dd->lock);
    }
    return true;
}

int dedupe_fill(dedupe *dd, store *st)
{
    static const enum store_table tables[] = {TABLE_PAGE_LOADS, TABLE_STARTUPS, TABLE_REQUESTS, TABLE_LOGS,
                                              TABLE_METRIC_POINTS};
    static const enum store_filter filters[] = {STORE_ROWS_ALL, STORE_ROWS_ALL, STORE_ROWS_ALL,
                                                STORE_ROWS_PACER_LOGS, STORE_ROWS_PACER_POINTS};
    if (!dd->ids.cap)
        return 0;
    int64_t share = (int64_t)(dd->ids.cap / 5), lasts[TABLE_COUNT];
    int r = store_marks_last(st, lasts);
    for (size_t k = 0; r == 0 && k < sizeof tables / sizeof tables[0]; k++) {
        int64_t last = lasts[tables[k]];
        id_cols c = id_cols_of(tables[k]);
        bool want[STORE_MAX_COLS] = {false};
        int cols[] = {c.app, c.session, c.ts, c.a, c.b};
        for (size_t i = 0; i < 5; i++)
            if (cols[i] >= 0)
                want[cols[i]] = true;
        r = store_rows_after(st, tables[k], filters[k], last > share ? last - share : 0, last, want, fill_row, dd);
    }
    return r;
}

void dedupe_check(dedupe *dd, const store_record *recs, size_t n, bool *copy, uint64_t **ret, size_t *ret_n)
{
    *ret = NULL;
    *ret_n = 0;
    memset(copy, 0, n * sizeof *copy);
    if (!dd->ids.cap || !n)
        return;
    uint64_t *held = malloc(n * sizeof *held);
    size_t n_held = 0;
    pthread_mutex_lock(&dd->lock);
    for (size_t i = 0; i < n && held; i++) {
        uint64_t id = record_id(recs[i].table, recs[i].cols);
        if (!id)
            continue;
        if (idset_has(&dd->ids, id))
            copy[i] = true;
        else if (idset_add_pending(&dd->ids, id))
            held[n_held++] = id;
    }
    pthread_mutex_unlock(&dd->lock);
    *ret = held;
    *ret_n = n_held;
}

void dedupe_settle(dedupe *dd, uint64_t *ids, size_t n, bool committed)
{
    if (n) {
        pthread_mutex_lock(&dd->lock);
        idset_settle(&dd->ids, ids, n, committed);
        pthread_mutex_unlock(&dd->lock);
    }
    free(ids);
}
