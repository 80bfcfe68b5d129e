/* The rows that came after a mark, on SQLite (store.h, "the rows that
 * came after a mark"): the application layer's reads of the record tables.
 *
 * The rows after a mark, in the order they came, whatever the store did
 * with them since (sqlite_int.h):
 *   page loads, start-ups, requests: rowids are the commit order. The rows
 *     up to the table's sealed mark live in blocks (each names the lowest
 *     and highest rowid it holds: blocks_rows finds those of a range), the
 *     rest in the table. A range is read in steps of CHUNK rowids: the
 *     blocks that hold one, the wanted columns of its rows copied, sorted
 *     by rowid; then the table's rows after the sealed mark. Seals go on
 *     whatever the analysis has read, so a lagging or restarted analysis
 *     (marks in ana_marks, a SIGKILL anywhere) reads the same rows from
 *     wherever they are now, in one snapshot.
 *   logs, metric points: kept in the rowid range of their day; their
 *     order is the position the writer gave each row (runs in arrivals,
 *     written in the row's own transaction), so "after the mark" means
 *     positions here. A run is read as one rowid range of one day.
 * A read costs the rows it returns (plus, for sealed rows, the rest of the
 * blocks that hold them), whatever the size of the store.
 */
#include "sqlite_int.h"
#include "store/store_heap.h"

#include <pacer/base/array.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rowids of sealed rows read per step: about one seal's blocks at once. */
#define CHUNK 32768

static int64_t int_query(sqlite3 *db, const char *sql, enum store_table t, int *err)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
        *err = -EIO;
        return 0;
    }
    sqlite3_bind_int64(s, 1, t);
    int r = sqlite3_step(s);
    int64_t v = r == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    if (r != SQLITE_ROW && r != SQLITE_DONE)
        *err = -EIO;
    sqlite3_finalize(s);
    return v;
}

/* Prepares sql (sqlite3_mprintf's, freed here): 0, -ENOMEM when it is
 * NULL, -EIO. */
static int prepare_owned(sqlite3 *db, char *sql, sqlite3_stmt **ret)
{
    int r = sql ? sqlite3_prepare_v2(db, sql, -1, ret, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    return r == SQLITE_OK ? 0 : r == SQLITE_NOMEM ? -ENOMEM : -EIO;
}

/* The table's rows up to it are in blocks (0: none). */
static int64_t sealed_mark(sqlite3 *db, enum store_table t, int *err)
{
    return int_query(db, "SELECT sealed FROM table_marks WHERE tbl = ?1", t, err);
}

/* ---- rows of the table: a rowid range ---- */

typedef struct reader {
    enum store_table t;
    const bool *want;
    bool (*cb)(void *ctx, const store_mark_row *row);
    void *ctx;
    bool stopped;
} reader;

/* The rows of t with rowid in (lo, hi] that match filter, in rowid order,
 * each given as position rowid - off. */
static int table_rows(sqlite3 *db, reader *rd, enum store_filter filter, int64_t lo, int64_t hi, int64_t off)
{
    const store_table_desc *d = store_layout_table(rd->t);
    char cols[4096] = "rowid";
    size_t o = 5;
    int idx[STORE_MAX_COLS];
    size_t n = 0;
    for (size_t c = 0; c < d->n_cols && o < sizeof cols; c++)
        if (rd->want[c]) {
            o += (size_t)snprintf(cols + o, sizeof cols - o, ", %s", d->cols[c].name);
            idx[n++] = (int)c;
        }
    if (o >= sizeof cols)
        return -EINVAL;
    char *sql = sqlite3_mprintf("SELECT %s FROM %s WHERE rowid > ?1 AND rowid <= ?2%s ORDER BY rowid", cols, d->name,
                                store_layout_filter_sql(filter));
    sqlite3_stmt *s;
    int r = prepare_owned(db, sql, &s);
    if (r < 0)
        return r;
    sqlite3_bind_int64(s, 1, lo);
    sqlite3_bind_int64(s, 2, hi);
    store_mark_row row = {.table = rd->t};
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
        row.mark = sqlite3_column_int64(s, 0) - off;
        for (size_t k = 0; k < n; k++)
            row.cols[idx[k]] = sqlite_store_column_value(s, (int)k + 1);
        if (!rd->cb(rd->ctx, &row)) {
            rd->stopped = true;
            r = SQLITE_DONE;
            break;
        }
    }
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

/* ---- sealed rows: the blocks of a rowid range ---- */

typedef struct held {
    int64_t rowid;
    store_value *vals; /* the table's columns, those not wanted SV_NULL; texts after them */
} held;

typedef struct chunk {
    reader *rd;
    int64_t lo, hi;
    held *rows;
    size_t n, cap;
} chunk;

static int on_block(void *ctx, size_t n, const store_value *const *rows, const int64_t *rowids, const char *app)
{
    (void)app;
    chunk *c = ctx;
    size_t n_cols = store_layout_table(c->rd->t)->n_cols;
    store_value vals[STORE_MAX_COLS];
    for (size_t i = 0; i < n; i++) {
        if (rowids[i] <= c->lo || rowids[i] > c->hi)
            continue;
        for (size_t k = 0; k < n_cols; k++)
            vals[k] = c->rd->want[k] ? rows[k][i] : (store_value){.type = SV_NULL};
        store_value *v = store_heap_copy(vals, n_cols);
        if (!v)
            return -ENOMEM;
        if (!ARRAY_GROW(c->rows, c->cap, c->n + 1, 1024)) {
            free(v);
            return -ENOMEM;
        }
        c->rows[c->n++] = (held){rowids[i], v};
    }
    return 0;
}

static int cmp_held(const void *x, const void *y)
{
    const held *a = x, *b = y;
    return a->rowid < b->rowid ? -1 : a->rowid > b->rowid;
}

/* The sealed rows of t with rowid in (after, upto], in rowid order. */
static int sealed_rows(sqlite3 *db, reader *rd, int64_t after, int64_t upto)
{
    chunk c = {.rd = rd};
    int r = 0;
    size_t n_cols = store_layout_table(rd->t)->n_cols;
    for (int64_t lo = after; lo < upto && r == 0 && !rd->stopped; lo += CHUNK) {
        c.lo = lo;
        c.hi = upto - lo > CHUNK ? lo + CHUNK : upto;
        c.n = 0;
        r = sqlite_seal_blocks_rowids(db, rd->t, c.lo, c.hi, rd->want, on_block, &c);
        if (r == 0)
            qsort(c.rows, c.n, sizeof *c.rows, cmp_held);
        store_mark_row row = {.table = rd->t};
        for (size_t i = 0; i < c.n; i++) {
            if (r == 0 && !rd->stopped) {
                row.mark = c.rows[i].rowid;
                memcpy(row.cols, c.rows[i].vals, n_cols * sizeof *row.cols);
                if (!rd->cb(rd->ctx, &row))
                    rd->stopped = true;
            }
            free(c.rows[i].vals);
        }
    }
    free(c.rows);
    return r;
}

/* ---- the reads ---- */

/* fn's reads in one snapshot of a read connection, told to the health. */
static int in_snapshot(store *st, int (*fn)(sqlite3 *db, void *ctx), void *ctx, const char *what)
{
    sqlite3 *db = sqlite_store_reader_get(st);
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    int r = fn(db, ctx);
    store_error err;
    if (r < 0)
        sqlite_store_read_error(db, r, &err);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    health_read(&st->health, r < 0 && r != -EINVAL ? &err : NULL, what);
    sqlite_store_reader_put(st, db);
    return r;
}

typedef struct rows_q {
    enum store_table t;
    enum store_filter filter;
    int64_t after, upto;
    const bool *want;
    bool (*cb)(void *ctx, const store_mark_row *row);
    void *ctx;
} rows_q;

static int rows_in(sqlite3 *db, void *ctx)
{
    rows_q *q = ctx;
    reader rd = {q->t, q->want, q->cb, q->ctx, false};
    int64_t after = q->after, upto = q->upto;
    int err = 0;
    if (store_is_record(q->t)) {
        if (q->filter != STORE_ROWS_ALL)
            return -EINVAL;
        int64_t sealed = sealed_mark(db, q->t, &err);
        if (err)
            return err;
        int r = 0;
        if (after < sealed)
            r = sealed_rows(db, &rd, after, upto < sealed ? upto : sealed);
        if (r == 0 && !rd.stopped && upto > sealed)
            r = table_rows(db, &rd, q->filter, after > sealed ? after : sealed, upto, 0);
        return r;
    }
    if (!store_has_positions(q->t))
        return -EINVAL;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, STORE_ARRIVALS_SQL, -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(s, 1, q->t);
    sqlite3_bind_int64(s, 2, after);
    int r = 0, sr = SQLITE_DONE;
    while (r == 0 && !rd.stopped && (sr = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t pos = sqlite3_column_int64(s, 0), n = sqlite3_column_int64(s, 1), off = sqlite3_column_int64(s, 2);
        if (pos - n >= upto)
            break;
        int64_t lo = pos - n > after ? pos - n : after, hi = pos < upto ? pos : upto;
        r = table_rows(db, &rd, q->filter, lo + off, hi + off, off);
    }
    if (r == 0 && !rd.stopped && sr != SQLITE_ROW && sr != SQLITE_DONE)
        r = -EIO;
    sqlite3_finalize(s);
    return r;
}

int sqlite_marks_rows(store *st, enum store_table t, enum store_filter filter, int64_t after, int64_t upto,
                      const bool want[STORE_MAX_COLS], bool (*cb)(void *ctx, const store_mark_row *row), void *ctx)
{
    rows_q q = {t, filter, after, upto, want, cb, ctx};
    return in_snapshot(st, rows_in, &q, "a query");
}

/* The largest rowid (position) of t handed out so far (0 when none). */
static int last_of(sqlite3 *db, enum store_table t, int64_t *ret)
{
    int err = 0;
    *ret = 0;
    if (store_has_positions(t)) {
        *ret = int_query(db, "SELECT COALESCE(MAX(pos), 0) FROM arrivals WHERE tbl = ?1", t, &err);
        return err;
    }
    if (!store_is_record(t))
        return 0;
    int64_t sealed = sealed_mark(db, t, &err);
    if (err)
        return err;
    char *sql = sqlite3_mprintf("SELECT MAX(rowid) FROM %s", store_layout_table(t)->name);
    sqlite3_stmt *s;
    int r = prepare_owned(db, sql, &s);
    if (r < 0)
        return r;
    r = sqlite3_step(s);
    int64_t last = r == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_finalize(s);
    *ret = last > sealed ? last : sealed;
    return r == SQLITE_ROW ? 0 : -EIO;
}

static int lasts_in(sqlite3 *db, void *ctx)
{
    int64_t *ret = ctx;
    for (enum store_table t = 0; t < TABLE_COUNT; t++) {
        int r = last_of(db, t, &ret[t]);
        if (r < 0)
            return r;
    }
    return 0;
}

int sqlite_marks_last(store *st, int64_t ret[TABLE_COUNT])
{
    return in_snapshot(st, lasts_in, ret, "a query");
}

/* Marks are dense (rowids, positions): n rows on is the mark n on. */
int sqlite_marks_step(store *st, enum store_table t, enum store_filter filter, int64_t from, int64_t to, long n,
                      int64_t *ret)
{
    (void)st, (void)t, (void)filter;
    *ret = n > 0 ? (to - from > n ? from + n : to) : (from > -n ? from + n : 0);
    return 0;
}

int sqlite_marks_behind(store *st, enum store_table t, enum store_filter filter, int64_t after, int64_t last,
                        int64_t *ret)
{
    (void)st, (void)t, (void)filter;
    *ret = last - after;
    return 0;
}

static int forget_in(void *ctx, sqlite3 *db)
{
    const int64_t *a = ctx; /* table, upto */
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "DELETE FROM arrivals WHERE tbl = ?1 AND pos <= ?2", -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(s, 1, a[0]);
    sqlite3_bind_int64(s, 2, a[1]);
    int r = sqlite3_step(s) == SQLITE_DONE ? 0 : -EIO;
    sqlite3_finalize(s);
    return r;
}

int sqlite_marks_forget(store *st, enum store_table t, int64_t upto)
{
    if (!store_has_positions(t) || upto <= 0)
        return 0;
    int64_t a[2] = {t, upto};
    return sqlite_store_write(st, forget_in, a);
}
