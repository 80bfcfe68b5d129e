/* Sealing: the rows of the record tables that are in the rollups become
 * blocks; the traces of every span row that is in the rollups go into
 * trace_index (sqlite_int.h). And reading blocks back.
 *
 * A seal runs in the writer's transaction, after a rollup flush, once
 * SEAL_ROWS rows wait between the sealed and rolled marks (sqlite_store.c),
 * at most SEAL_BUDGET rows at once (a file upgraded from an earlier schema
 * is sealed in such steps when it opens). Per partition of a record table:
 * its rows (sealed, rolled] → blocks of at most BLOCK_ROWS rows of one app
 * and hour, each sorted by (ts, rowid) → table blocks; the rows deleted;
 * the mark moved. The late blocks of a cold day are merged when it settles
 * (sqlite_seal_blocks_merge). Per partition of plain spans: the trace entries only. All the
 * entries of one seal, sorted, are one run of trace_index, in chunks of
 * about CHUNK_ENTRIES (store_codec.h), about 12 bytes an entry: a seal of
 * 32 000 rows writes ~130 rows of trace_index.
 */
#include "sqlite_int.h"

#include <pacer/base/array.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_ROWS 1024
#define SEAL_BUDGET (4 * 32768)
#define CHUNK_ENTRIES 256

/* ---- copies of rows ---- */

typedef struct chunk {
    struct chunk *next;
    size_t used, size;
    char data[];
} chunk;

typedef struct pool {
    chunk *head;
} pool;

static void *pool_copy(pool *p, const void *src, size_t n)
{
    chunk *c = p->head;
    if (!c || c->size - c->used < n + 1) {
        /* 4 KiB first, doubling to 64 KiB: a seal holds hundreds of pools */
        size_t size = c ? (c->size < 32768 ? c->size * 2 : 65536) : 4096;
        if (size < n + 1)
            size = n + 1;
        c = malloc(sizeof *c + size);
        if (!c)
            return NULL;
        c->used = 0;
        c->size = size;
        c->next = p->head;
        p->head = c;
    }
    char *d = c->data + c->used;
    if (n)
        memcpy(d, src, n);
    d[n] = 0;
    c->used += n + 1;
    return d;
}

static void pool_free(pool *p)
{
    while (p->head) {
        chunk *c = p->head;
        p->head = c->next;
        free(c);
    }
}

/* ---- the trace entries of a seal ---- */

typedef struct entry {
    int64_t t, rid;
    int tbl;
} entry;

typedef struct entries {
    entry *e;
    size_t n, cap;
    int64_t day_hi;
} entries;

static int entry_add(entries *es, int64_t t, int tbl, int64_t rid, int64_t day)
{
    if (!ARRAY_GROW(es->e, es->cap, es->n + 1, 4096))
        return -ENOMEM;
    es->e[es->n++] = (entry){t, rid, tbl};
    if (day > es->day_hi)
        es->day_hi = day;
    return 0;
}

static int cmp_entry(const void *x, const void *y)
{
    const entry *a = x, *b = y;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->tbl != b->tbl)
        return a->tbl < b->tbl ? -1 : 1;
    return a->rid < b->rid ? -1 : a->rid > b->rid;
}


/* The sorted entries as chunks of run b; in the writer's transaction. */
static int trace_run_write(store *st, int64_t b, const entries *es)
{
    uint8_t *buf = malloc(10 + (CHUNK_ENTRIES + 64) * 24);
    if (!buf)
        return -ENOMEM;
    int r = 0;
    for (size_t i = 0; i < es->n && r == 0;) {
        /* a chunk: CHUNK_ENTRIES, then on to the end of that t */
        size_t j = i + CHUNK_ENTRIES < es->n ? i + CHUNK_ENTRIES : es->n;
        while (j < es->n && es->e[j].t == es->e[j - 1].t && j - i < CHUNK_ENTRIES + 64)
            j++;
        size_t o = 0;
        store_codec_put_uvarint(buf, &o, j - i);
        int64_t prev = es->e[i].t;
        for (size_t k = i; k < j; k++) {
            store_codec_put_uvarint(buf, &o, (uint64_t)(es->e[k].t - prev));
            prev = es->e[k].t;
            store_codec_put_uvarint(buf, &o, (uint64_t)es->e[k].tbl);
            for (int x = 0; x < 8; x++)
                buf[o++] = (uint8_t)((uint64_t)es->e[k].rid >> (8 * x));
        }
        sqlite3_stmt *s = st->st[ST_TRACE_ADD];
        sqlite3_bind_int64(s, 1, b);
        sqlite3_bind_int64(s, 2, es->e[i].t);
        sqlite3_bind_blob(s, 3, buf, (int)o, SQLITE_STATIC);
        r = sqlite_store_step_done(s);
        i = j;
    }
    free(buf);
    return r;
}

/* ---- record tables → blocks ---- */

/* The rows of one app and hour waiting to become their next block, in
 * arrival order; sorted by (ts, rowid) when written. A block holds one
 * hour at most: rows that come out of time order (a batch spread over a
 * month) make blocks that each span their hour, not their day, so that
 * what a range cuts from an hour reads the blocks of that hour only. */
typedef struct pending {
    int64_t day, hour;
    char *app;
    uint64_t hash;
    size_t n, cap;
    store_value *vals; /* n rows of 1 + n_cols values */
    pool texts;
} pending;

#define HOUR_NS (3600 * 1000000000LL)

/* Room for at most this many rows in all: past it, the largest waiting
 * block is written and its room freed (a seal that spans many hours writes
 * smaller blocks). */
#define PENDING_ROWS 16384
#define MAX_PENDING 1024
#define PENDING_SLOTS 4096 /* the hash of (hour, app) → open[] */

typedef struct sealer {
    store *st;
    enum store_table table;
    size_t n_cols; /* the table's, without the rowid */
    int trace_col, ts_col;
    pending *open; /* MAX_PENDING */
    int *slots;    /* PENDING_SLOTS: 1 + index into open, 0: free */
    size_t n_open, held; /* held: the room for rows of all of them (their caps) */
    bool hold; /* a merge: write nothing until every row is read (-EAGAIN past the slots) */
    store_value *cols[BLOCK_MAX_COLS]; /* a block being written: [0] rowids, [1 + c] column c */
    entries *trace;
} sealer;

typedef struct sort_key {
    int64_t ts, rid;
    size_t row;
} sort_key;

static int cmp_keys(const void *x, const void *y)
{
    const sort_key *a = x, *b = y;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return a->rid < b->rid ? -1 : a->rid > b->rid;
}

/* The rows of pd as blocks of at most BLOCK_ROWS, sorted by (ts, rowid);
 * pd is empty afterwards. */
static int block_write(sealer *z, pending *pd)
{
    if (!pd->n)
        return 0;
    size_t w = 1 + z->n_cols, n = pd->n;
    int tsc = 1 + z->ts_col;
    /* sort the rows by (ts, rowid), unless they came so */
    sort_key *keys = malloc(n * sizeof *keys);
    if (!keys)
        return -ENOMEM;
    bool sorted = true;
    for (size_t i = 0; i < n; i++) {
        const store_value *ts = &pd->vals[i * w + tsc]; /* an INTEGER column: NOT NULL, always bound so */
        keys[i] = (sort_key){ts->type == SV_INT ? ts->i : 0, pd->vals[i * w].i, i};
        sorted = sorted && (!i || cmp_keys(&keys[i - 1], &keys[i]) <= 0);
    }
    if (!sorted)
        qsort(keys, n, sizeof *keys, cmp_keys);
    int r = 0;
    for (size_t at = 0; at < n && r == 0; at += BLOCK_ROWS) {
        size_t m = n - at < BLOCK_ROWS ? n - at : BLOCK_ROWS;
        int64_t t_lo = INT64_MAX, t_hi = INT64_MIN, r_lo = INT64_MAX, r_hi = INT64_MIN;
        for (size_t k = 0; k < m && r == 0; k++) {
            const store_value *row = pd->vals + keys[at + k].row * w;
            for (size_t c = 0; c < w; c++)
                z->cols[c][k] = row[c];
            int64_t ts = keys[at + k].ts, rid = row[0].i;
            t_lo = ts < t_lo ? ts : t_lo;
            t_hi = ts > t_hi ? ts : t_hi;
            r_lo = rid < r_lo ? rid : r_lo;
            r_hi = rid > r_hi ? rid : r_hi;
            const store_value *tid = &row[1 + z->trace_col];
            if (z->trace && tid->type == SV_BLOB && tid->n)
                r = entry_add(z->trace, sqlite_query_trace_key(tid->p, tid->n), (int)z->table, ts, pd->day);
        }
        uint8_t *data;
        size_t len;
        if (r == 0)
            r = block_encode((const store_value *const *)z->cols, w, m, &data, &len);
        if (r < 0)
            break;
        sqlite3_stmt *s = z->st->st[ST_BLOCK_ADD];
        sqlite3_bind_int64(s, 1, z->table);
        sqlite3_bind_int64(s, 2, pd->day);
        sqlite3_bind_text(s, 3, pd->app, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 4, t_lo);
        sqlite3_bind_int64(s, 5, t_hi);
        sqlite3_bind_int64(s, 6, r_lo);
        sqlite3_bind_int64(s, 7, r_hi);
        sqlite3_bind_int64(s, 8, (int64_t)m);
        sqlite3_bind_int64(s, 9, z->st->layout_id[z->table]);
        sqlite3_bind_blob(s, 10, data, (int)len, free);
        r = sqlite_store_step_done(s);
    }
    free(keys);
    pd->n = 0;
    pool_free(&pd->texts);
    return r;
}

static uint64_t pending_hash(int64_t hour, const char *app)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)hour;
    for (const unsigned char *p = (const unsigned char *)app; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return h ^ (h >> 29);
}

/* The slot of (hour, app) in z->slots: its entry, or the free one where it
 * would go. */
static int *pending_slot(sealer *z, int64_t hour, const char *app, uint64_t h)
{
    for (size_t i = h % PENDING_SLOTS;; i = (i + 1) % PENDING_SLOTS) {
        int *sl = &z->slots[i];
        if (!*sl)
            return sl;
        const pending *pd = &z->open[*sl - 1];
        if (pd->hash == h && pd->hour == hour && strcmp(pd->app, app) == 0)
            return sl;
    }
}

/* Room for one more row of (hour, app): its pending rows, or a new slot
 * (when all are taken, the largest is written and reused). */
static pending *pending_of(sealer *z, int64_t ts, const char *app, int *ret)
{
    *ret = 0;
    int64_t hour = ts < 0 ? 0 : ts / HOUR_NS;
    uint64_t h = pending_hash(hour, app);
    int *sl = pending_slot(z, hour, app, h);
    pending *pd = *sl ? &z->open[*sl - 1] : NULL;
    if (!pd && z->hold && z->n_open == MAX_PENDING) {
        *ret = -EAGAIN;
        return NULL;
    }
    if (!pd && z->n_open < MAX_PENDING) {
        pd = &z->open[z->n_open++];
        *pd = (pending){.day = day_of_ts(ts), .hour = hour, .hash = h};
        if (!(pd->app = strdup(app))) {
            *ret = -ENOMEM;
            return NULL;
        }
        *sl = (int)z->n_open;
    }
    if (z->held >= PENDING_ROWS && !z->hold) {
        /* out of room: every waiting block is written, and its room freed */
        for (size_t i = 0; i < z->n_open; i++) {
            pending *o = &z->open[i];
            if ((*ret = block_write(z, o)) < 0)
                return NULL;
            free(o->vals);
            o->vals = NULL;
            o->cap = 0;
        }
        z->held = 0;
    }
    if (!pd) {
        /* out of slots: the largest waiting block is written, its slot reused */
        pending *big = &z->open[0];
        for (size_t i = 1; i < z->n_open; i++)
            if (z->open[i].n > big->n)
                big = &z->open[i];
        if ((*ret = block_write(z, big)) < 0)
            return NULL;
        free(big->app); /* the slot table is rebuilt without it */
        pool_free(&big->texts);
        store_value *vals = big->vals;
        size_t cap = big->cap;
        *big = (pending){.day = day_of_ts(ts), .hour = hour, .hash = h, .vals = vals, .cap = cap};
        if (!(big->app = strdup(app))) {
            *ret = -ENOMEM;
            return NULL;
        }
        memset(z->slots, 0, PENDING_SLOTS * sizeof *z->slots);
        for (size_t i = 0; i < z->n_open; i++)
            *pending_slot(z, z->open[i].hour, z->open[i].app, z->open[i].hash) = (int)i + 1;
        pd = big;
    }
    size_t had = pd->cap;
    if (!array_grow(&pd->vals, &pd->cap, pd->n + 1, (1 + z->n_cols) * sizeof *pd->vals, 8)) { /* a row a slot */
        *ret = -ENOMEM;
        return NULL;
    }
    z->held += pd->cap - had;
    return pd;
}

/* A sealer of table t with its buffers (sealer_finish frees them, also
 * after a failure): 0 or -ENOMEM. */
static int sealer_init(sealer *z, store *st, enum store_table t)
{
    const store_table_desc *td = store_layout_table(t);
    *z = (sealer){.st = st, .table = t, .n_cols = td->n_cols, .trace_col = -1, .ts_col = st->ts_col[t]};
    for (size_t c = 0; c < td->n_cols; c++)
        if (td->cols[c].source == SRC_TRACE_ID)
            z->trace_col = (int)c;
    for (size_t c = 0; c <= z->n_cols; c++)
        if (!(z->cols[c] = malloc(BLOCK_ROWS * sizeof *z->cols[c])))
            return -ENOMEM;
    if (!(z->open = calloc(MAX_PENDING, sizeof *z->open)) || !(z->slots = calloc(PENDING_SLOTS, sizeof *z->slots)))
        return -ENOMEM;
    return 0;
}

/* The blocks still open written (when r is 0 and write), the sealer's
 * buffers freed: r, or block_write's failure. */
static int sealer_finish(sealer *z, int r, bool write)
{
    for (size_t i = 0; i < z->n_open; i++) {
        if (r == 0 && write)
            r = block_write(z, &z->open[i]);
        free(z->open[i].app);
        free(z->open[i].vals);
        pool_free(&z->open[i].texts);
    }
    for (size_t c = 0; c <= z->n_cols; c++)
        free(z->cols[c]);
    free(z->open);
    free(z->slots);
    return r;
}

/* Rows (lo, hi] of a record table → blocks of at most BLOCK_ROWS rows of
 * one app and hour; the rows deleted. The rows are read in rowid order and
 * each block sorted on its own: rows come roughly in time order; a batch
 * spread over many days gives small blocks, one per seal and hour, until
 * their day settles. */
static int seal_records(store *st, enum store_table t, int64_t lo, int64_t hi, entries *trace)
{
    const store_table_desc *td = store_layout_table(t);
    sealer z;
    int r = sealer_init(&z, st, t);
    z.trace = trace;
    int app_col = -1;
    for (size_t c = 0; c < td->n_cols; c++)
        if (td->cols[c].source == SRC_COMMON && td->cols[c].index == PACER_COMMON_APP)
            app_col = (int)c;
    char *sql = sqlite_store_sql("SELECT rowid, %s FROM %s WHERE rowid > ?1 AND rowid <= ?2", td->columns, td->name);
    sqlite3_stmt *s = NULL;
    if (r == 0 && (!sql || app_col < 0 || z.trace_col < 0 || sqlite3_prepare_v2(st->w, sql, -1, &s, NULL) != SQLITE_OK))
        r = -EIO;
    free(sql);
    if (r == 0) {
        sqlite3_bind_int64(s, 1, lo);
        sqlite3_bind_int64(s, 2, hi);
    }
    int sr = SQLITE_DONE;
    size_t w = 1 + z.n_cols;
    while (r == 0 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
        const char *app = (const char *)sqlite3_column_text(s, 1 + app_col);
        pending *pd = pending_of(&z, sqlite3_column_int64(s, 1 + z.ts_col), app ? app : "", &r);
        if (!pd)
            break;
        store_value *row = pd->vals + pd->n * w;
        for (size_t c = 0; c < w && r == 0; c++) {
            store_value v = sqlite_store_column_value(s, (int)c);
            if ((v.type == SV_TEXT || v.type == SV_BLOB) && !(v.p = pool_copy(&pd->texts, v.p, v.n)))
                r = -ENOMEM;
            row[c] = v;
        }
        pd->n++;
        if (r == 0 && pd->n == BLOCK_ROWS)
            r = block_write(&z, pd);
    }
    if (r == 0 && sr != SQLITE_DONE)
        r = -EIO;
    r = sealer_finish(&z, r, true);
    sqlite3_finalize(s);
    s = NULL;
    if (r == 0) {
        sql = sqlite_store_sql("DELETE FROM %s WHERE rowid > ?1 AND rowid <= ?2", td->name);
        if (!sql || sqlite3_prepare_v2(st->w, sql, -1, &s, NULL) != SQLITE_OK) {
            r = -EIO;
        } else {
            sqlite3_bind_int64(s, 1, lo);
            sqlite3_bind_int64(s, 2, hi);
            r = sqlite3_step(s) == SQLITE_DONE ? 0 : -EIO;
        }
        sqlite3_finalize(s);
        free(sql);
    }
    return r;
}

/* ---- the late blocks of a cold day, merged ---- */

/* At most this many rows are merged at once (all of them held: ~25 MiB). */
#define MERGE_MAX_ROWS 32768

static int on_merge(void *ctx, size_t n, const store_value *const *rows, const int64_t *rowids, const char *app)
{
    sealer *z = ctx;
    size_t w = 1 + z->n_cols;
    int r = 0;
    for (size_t i = 0; i < n && r == 0; i++) {
        const store_value *ts = &rows[z->ts_col][i];
        pending *pd = pending_of(z, ts->type == SV_INT ? ts->i : 0, app ? app : "", &r);
        if (!pd)
            return r;
        store_value *row = pd->vals + pd->n * w;
        row[0] = (store_value){.type = SV_INT, .i = rowids[i]};
        for (size_t c = 0; c < z->n_cols && r == 0; c++) {
            store_value v = rows[c][i];
            if ((v.type == SV_TEXT || v.type == SV_BLOB) && !(v.p = pool_copy(&pd->texts, v.p, v.n)))
                r = -ENOMEM;
            row[1 + c] = v;
        }
        pd->n++;
    }
    return r;
}

int sqlite_seal_blocks_merge(store *st, enum store_table t, int64_t day, int64_t after)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(st->w,
                           "SELECT COUNT(*), COALESCE(SUM(n), 0) FROM blocks WHERE tbl = ?1 AND day = ?2 AND r_hi > ?3",
                           -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(q, 1, t);
    sqlite3_bind_int64(q, 2, day);
    sqlite3_bind_int64(q, 3, after);
    int sr = sqlite3_step(q);
    int64_t blocks = sqlite3_column_int64(q, 0), rows = sqlite3_column_int64(q, 1);
    sqlite3_finalize(q);
    if (sr != SQLITE_ROW)
        return -EIO;
    /* merged they would not be fewer blocks, or too many rows to hold */
    if (blocks < 2 || rows / blocks >= BLOCK_ROWS / 2 || rows > MERGE_MAX_ROWS)
        return 0;
    sealer z;
    int r = sealer_init(&z, st, t);
    z.hold = true;
    if (r == 0 && z.trace_col < 0)
        r = -EIO;
    if (r == 0)
        r = sqlite_seal_blocks_read(st->w, t, NULL, day, day * STORE_DAY_NS, (day + 1) * STORE_DAY_NS, after, NULL, on_merge,
                              &z);
    bool write = r == 0;
    if (r == -EAGAIN)
        r = 0; /* more apps and hours than slots: left as they are */
    if (write) {
        if (sqlite3_prepare_v2(st->w, "DELETE FROM blocks WHERE tbl = ?1 AND day = ?2 AND r_hi > ?3", -1, &q, NULL) !=
            SQLITE_OK) {
            r = -EIO;
        } else {
            sqlite3_bind_int64(q, 1, t);
            sqlite3_bind_int64(q, 2, day);
            sqlite3_bind_int64(q, 3, after);
            r = sqlite3_step(q) == SQLITE_DONE ? 0 : -EIO;
            sqlite3_finalize(q);
        }
    }
    return sealer_finish(&z, r, write);
}

/* Plain spans (lo, hi] of a day: their trace entries. */
static int seal_spans(store *st, int64_t day, int64_t lo, int64_t hi, entries *trace)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->w,
                           "SELECT pacer_trace_key(trace_id), rowid FROM spans WHERE rowid > ?1 AND rowid <= ?2"
                           " AND trace_id IS NOT NULL",
                           -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(s, 1, lo);
    sqlite3_bind_int64(s, 2, hi);
    int r, e = 0;
    while ((r = sqlite3_step(s)) == SQLITE_ROW && e == 0)
        if (sqlite3_column_type(s, 0) != SQLITE_NULL)
            e = entry_add(trace, sqlite3_column_int64(s, 0), TABLE_SPANS, sqlite3_column_int64(s, 1), day);
    sqlite3_finalize(s);
    return e < 0 ? e : r == SQLITE_DONE || r == SQLITE_ROW ? 0 : -EIO;
}

static int seal_mark(store *st, enum store_table t, int64_t day, int64_t sealed, int64_t rolled)
{
    if (!ARRAY_GROW(st->seal_marks, st->cap_seal_marks, st->n_seal_marks + 1, 64))
        return -ENOMEM;
    st->seal_marks[st->n_seal_marks++] = (struct seal_mark){t, day, sealed};
    sqlite3_stmt *s;
    if (day < 0) {
        s = st->st[ST_TM_SAVE];
        sqlite3_bind_int64(s, 1, t);
        sqlite3_bind_int64(s, 2, rolled);
        sqlite3_bind_int64(s, 3, sealed);
    } else {
        s = st->st[ST_PART_SEALED];
        sqlite3_bind_int64(s, 1, t);
        sqlite3_bind_int64(s, 2, day);
        sqlite3_bind_int64(s, 3, sealed);
    }
    return sqlite_store_step_done(s);
}

int sqlite_seal(store *st)
{
    st->n_seal_marks = 0;
    st->seal_count = 0;
    /* what waits, as this transaction has it: the record tables' marks, the
     * plain spans' partitions */
    struct { int t; int64_t day, rolled, sealed; } todo[TABLE_COUNT + 1024];
    size_t n = 0;
    sqlite3_stmt *q;
    int r = 0, sr;
    if (sqlite3_prepare_v2(st->w, "SELECT tbl, -1, rolled, sealed FROM table_marks WHERE sealed < rolled UNION ALL"
                                  " SELECT tbl, day, rolled, sealed FROM partitions WHERE tbl = ?1 AND sealed < rolled",
                           -1, &q, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(q, 1, TABLE_SPANS);
    while ((sr = sqlite3_step(q)) == SQLITE_ROW && n < sizeof todo / sizeof todo[0])
        todo[n++] = (typeof(todo[0])){sqlite3_column_int(q, 0), sqlite3_column_int64(q, 1), sqlite3_column_int64(q, 2),
                                      sqlite3_column_int64(q, 3)};
    sqlite3_finalize(q);
    if (sr != SQLITE_DONE && sr != SQLITE_ROW)
        return -EIO;
    entries trace = {0};
    size_t budget = SEAL_BUDGET;
    for (size_t i = 0; i < n && r == 0 && budget; i++) {
        enum store_table t = (enum store_table)todo[i].t;
        if (t < 0 || t >= TABLE_COUNT || store_layout_table(t)->kind == KIND_NONE || (todo[i].day < 0) != store_is_record(t))
            continue;
        int64_t hi = todo[i].rolled;
        if ((uint64_t)(hi - todo[i].sealed) > budget)
            hi = todo[i].sealed + (int64_t)budget;
        r = store_is_record(t) ? seal_records(st, t, todo[i].sealed, hi, &trace)
                               : seal_spans(st, todo[i].day, todo[i].sealed, hi, &trace);
        if (r == 0)
            r = seal_mark(st, t, todo[i].day, hi, todo[i].rolled);
        st->seal_count += (size_t)(hi - todo[i].sealed);
        budget -= (size_t)(hi - todo[i].sealed) < budget ? (size_t)(hi - todo[i].sealed) : budget;
    }
    if (r == 0 && trace.n) {
        qsort(trace.e, trace.n, sizeof *trace.e, cmp_entry);
        r = trace_run_write(st, st->trace_run + 1, &trace);
        if (r == 0) {
            sqlite3_stmt *s = st->st[ST_TRACE_RUN];
            sqlite3_bind_int64(s, 1, st->trace_run + 1);
            sqlite3_bind_int64(s, 2, trace.day_hi);
            r = sqlite_store_step_done(s);
        }
    }
    free(trace.e);
    if (r < 0)
        st->n_seal_marks = 0;
    st->seal_run_used = r == 0 && trace.n;
    return r;
}

void sqlite_seal_done(store *st)
{
    for (size_t i = 0; i < st->n_seal_marks; i++) {
        const struct seal_mark *m = &st->seal_marks[i];
        if (m->day < 0) {
            st->tm[m->table].sealed = m->sealed;
            continue;
        }
        part *p = sqlite_store_part_find(st, m->table, m->day);
        if (p)
            p->sealed = m->sealed;
    }
    st->seal_rows = st->seal_rows > st->seal_count ? st->seal_rows - st->seal_count : 0;
    if (st->seal_run_used)
        st->trace_run++;
    st->n_seal_marks = 0;
    st->seal_count = 0;
    st->seal_run_used = false;
}

/* ---- reading blocks ---- */

/* The current layout's column of each column of a block layout. */
typedef struct layout_map {
    int64_t id;
    size_t n;                  /* the block's columns, without the rowid */
    int to[BLOCK_MAX_COLS];    /* current column of block column 1 + i, or -1 */
} layout_map;

static int layout_load(sqlite3 *db, enum store_table t, int64_t id, layout_map *m)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT columns FROM block_layouts WHERE id = ?1", -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(s, 1, id);
    int r = sqlite3_step(s) == SQLITE_ROW ? 0 : -EIO;
    m->id = id;
    m->n = 0;
    const store_table_desc *td = store_layout_table(t);
    if (r == 0) {
        const char *p = (const char *)sqlite3_column_text(s, 0);
        while (p && *p && m->n < BLOCK_MAX_COLS - 1) {
            const char *e = strstr(p, ", ");
            size_t len = e ? (size_t)(e - p) : strlen(p);
            int to = -1;
            for (size_t c = 0; c < td->n_cols; c++)
                if (strlen(td->cols[c].name) == len && memcmp(td->cols[c].name, p, len) == 0)
                    to = (int)c;
            m->to[m->n++] = to;
            p = e ? e + 2 : p + len;
        }
    }
    sqlite3_finalize(s);
    return r;
}

static int blocks_decode(sqlite3 *db, sqlite3_stmt *s, enum store_table t, const bool *want_cols, block_rows_fn fn,
                         void *ctx);

int sqlite_seal_blocks_read(sqlite3 *db, enum store_table t, const char *app, int64_t day, int64_t from, int64_t to,
                      int64_t min_rowid, const bool *want_cols, block_rows_fn fn, void *ctx)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db,
                           "SELECT layout, data, app FROM blocks WHERE tbl = ?1 AND day = ?2 AND app = ?3"
                           " AND t_lo < ?5 AND t_hi >= ?4 AND r_hi > ?6",
                           -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_stmt *any = NULL;
    if (!app && sqlite3_prepare_v2(db,
                                   "SELECT layout, data, app FROM blocks WHERE tbl = ?1 AND day = ?2"
                                   " AND t_lo < ?5 AND t_hi >= ?4 AND r_hi > ?6",
                                   -1, &any, NULL) != SQLITE_OK) {
        sqlite3_finalize(s);
        return -EIO;
    }
    if (any) {
        sqlite3_finalize(s);
        s = any;
    } else {
        sqlite3_bind_text(s, 3, app, -1, SQLITE_STATIC);
    }
    sqlite3_bind_int64(s, 1, t);
    sqlite3_bind_int64(s, 2, day);
    sqlite3_bind_int64(s, 4, from);
    sqlite3_bind_int64(s, 5, to);
    sqlite3_bind_int64(s, 6, min_rowid);
    return blocks_decode(db, s, t, want_cols, fn, ctx);
}

int sqlite_seal_blocks_rowids(sqlite3 *db, enum store_table t, int64_t after, int64_t upto, const bool *want_cols,
                        block_rows_fn fn, void *ctx)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, STORE_BLOCKS_ROWIDS_SQL, -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(s, 1, t);
    sqlite3_bind_int64(s, 2, after);
    sqlite3_bind_int64(s, 3, upto);
    return blocks_decode(db, s, t, want_cols, fn, ctx);
}

/* The blocks s selects (layout, data, app), decoded one at a time for fn;
 * finalizes s. */
static int blocks_decode(sqlite3 *db, sqlite3_stmt *s, enum store_table t, const bool *want_cols, block_rows_fn fn,
                         void *ctx)
{
    const store_table_desc *td = store_layout_table(t);
    layout_map map = {.id = -1};
    store_value *vals = NULL, *rowv = NULL, *nulls = NULL;
    const store_value *rows[STORE_MAX_COLS];
    int64_t *rowids = NULL;
    size_t cap = 0;
    block_arena arena = {0};
    int r = 0, sr;
    while (r == 0 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t layout = sqlite3_column_int64(s, 0);
        if (layout != map.id && layout_load(db, t, layout, &map) < 0) {
            r = -EIO;
            break;
        }
        block_reader br;
        if (block_open(&br, sqlite3_column_blob(s, 1), (size_t)sqlite3_column_bytes(s, 1)) < 0 ||
            br.n_cols != map.n + 1) {
            r = -EBADMSG;
            break;
        }
        if (br.n_rows > cap) {
            cap = br.n_rows;
            free(vals);
            free(rowv);
            free(nulls);
            free(rowids);
            vals = malloc(cap * td->n_cols * sizeof *vals);
            rowv = malloc(cap * sizeof *rowv);
            nulls = calloc(cap, sizeof *nulls);
            rowids = malloc(cap * sizeof *rowids);
            if (!vals || !rowv || !nulls || !rowids) {
                r = -ENOMEM;
                break;
            }
        }
        for (size_t c = 0; c < td->n_cols; c++)
            rows[c] = nulls; /* SV_NULL is 0: a column the block does not have */
        for (size_t i = 0; i < map.n && r == 0; i++) {
            int c = map.to[i];
            if (c < 0 || (want_cols && !want_cols[c]))
                continue;
            r = block_column(&br, 1 + i, vals + (size_t)c * cap, &arena);
            rows[c] = vals + (size_t)c * cap;
        }
        if (r == 0)
            r = block_column(&br, 0, rowv, &arena);
        for (size_t i = 0; r == 0 && i < br.n_rows; i++) {
            if (rowv[i].type != SV_INT)
                r = -EBADMSG;
            else
                rowids[i] = rowv[i].i;
        }
        if (r == 0)
            r = fn(ctx, br.n_rows, rows, rowids, (const char *)sqlite3_column_text(s, 2));
        block_arena_free(&arena);
    }
    if (r == 0 && sr != SQLITE_DONE)
        r = -EIO;
    sqlite3_finalize(s);
    free(vals);
    free(rowv);
    free(nulls);
    free(rowids);
    block_arena_free(&arena);
    return r;
}

char *sqlite_seal_unsealed_sql(enum store_table t)
{
    const store_table_desc *d = store_layout_table(t);
    return sqlite3_mprintf("SELECT %s, rowid FROM %s WHERE rowid > ?1 AND app = ?2 AND ts >= ?3 AND ts < ?4",
                           d->columns, d->name);
}

int sqlite_seal_days_open(sqlite3 *db, enum store_table t, int64_t d_lo, int64_t d_hi, part_marks **ret, size_t *ret_n,
                    sqlite3_stmt **ret_unsealed)
{
    *ret_unsealed = NULL;
    int r = sqlite_store_parts_read(db, t, d_lo, d_hi, true, ret, ret_n);
    if (r < 0)
        return r;
    char *sql = sqlite_seal_unsealed_sql(t);
    if (!sql || sqlite3_prepare_v2(db, sql, -1, ret_unsealed, NULL) != SQLITE_OK) {
        sqlite3_free(sql);
        free(*ret);
        *ret = NULL;
        return -EIO;
    }
    sqlite3_free(sql);
    return 0;
}

int sqlite_seal_day_rows(sqlite3 *db, sqlite3_stmt *unsealed, enum store_table t, const char *app, const part_marks *p,
                   int64_t lo, int64_t hi, const bool *want, block_rows_fn fn, void *ctx)
{
    int r = sqlite_seal_blocks_read(db, t, app, p->day, lo, hi, -1, want, fn, ctx);
    if (r)
        return r;
    /* the day's rows not sealed: those up to its last row as of the last
     * flush, and any after the rolled mark */
    sqlite3_bind_int64(unsealed, 1, p->last > p->sealed ? p->sealed : p->rolled);
    sqlite3_bind_text(unsealed, 2, app, -1, SQLITE_STATIC);
    sqlite3_bind_int64(unsealed, 3, lo);
    sqlite3_bind_int64(unsealed, 4, hi);
    size_t n_cols = store_layout_table(t)->n_cols;
    store_value vals[STORE_MAX_COLS];
    const store_value *cols[STORE_MAX_COLS];
    for (size_t c = 0; c < n_cols; c++)
        cols[c] = &vals[c];
    int sr;
    while (r == 0 && (sr = sqlite3_step(unsealed)) == SQLITE_ROW) {
        for (size_t c = 0; c < n_cols; c++)
            vals[c] = sqlite_store_column_value(unsealed, (int)c);
        int64_t rowid = sqlite3_column_int64(unsealed, (int)n_cols);
        r = fn(ctx, 1, cols, &rowid, app);
    }
    if (r == 0 && sr != SQLITE_DONE)
        r = -EIO;
    sqlite3_reset(unsealed);
    return r;
}
