/* The percentile scan (store_scan) and the apps (store_apps).
 *
 * A range [from, to) is cut into pieces, each read from where it is
 * cheapest and exact:
 *   whole days            the daily rollups (rows up to each day's rolled
 *                         mark);
 *   a day the range cuts  its whole sub-day buckets, coarsest first (6 h,
 *                         then 1 h, then 10 min on a busy day), from the
 *                         sub-day rollups; what is left at each end (less
 *                         than the finest bucket) from the rows:
 *                         blocks up to the sealed mark, the table after it
 *                         (plain spans: spans_keys up to the rolled mark);
 *   every day             its rows after the rolled mark, from the table
 *                         (in no rollup yet).
 * A row of a cut day that the sub-day rollups do not hold (it came after
 * the day was cold: rowid > hourly) is read from the rows too, inside the
 * buckets as well (at most about half a seal of them per day: the day
 * then settles, sqlite_scan_settle below). Everything comes from one read
 * transaction: the rollups, the marks and the rows agree.
 *
 * A query over a month of 50 million page loads reads ~40 sketches per
 * (page, version) and a few thousand rows, whatever the size of the store.
 */
#include "sqlite_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct piece {
    int64_t lo, hi; /* [lo, hi) ns */
    int level;      /* of the sub-day rollups holding it, or -1: the rows */
} piece;

#define MAX_PIECES (4 * SUBDAY_LEVELS + 2)

typedef struct cut {
    int64_t day, lo, hi; /* the part [lo, hi) of the day in the range */
    piece p[MAX_PIECES];
    size_t n;
} cut;

static void cover(cut *c, int64_t a, int64_t b, int level, int levels)
{
    if (a >= b || c->n == MAX_PIECES)
        return;
    if (level == levels) {
        c->p[c->n++] = (piece){a, b, -1};
        return;
    }
    int64_t w = sqlite_store_subday_width_s[level] * 1000000000LL;
    int64_t lo = a / w + (a % w != 0), hi = b / w;
    if (lo >= hi) {
        cover(c, a, b, level + 1, levels);
        return;
    }
    c->p[c->n++] = (piece){lo * w, hi * w, level};
    cover(c, a, lo * w, level + 1, levels);
    cover(c, hi * w, b, level + 1, levels);
}

/* The piece of c holding ts. */
static const piece *piece_at(const cut *c, int64_t ts)
{
    for (size_t i = 0; i < c->n; i++)
        if (ts >= c->p[i].lo && ts < c->p[i].hi)
            return &c->p[i];
    return NULL;
}

/* Whether a row of a cut day is counted from the rows: in a piece of rows,
 * or one the rollups do not hold. */
static bool row_counts(const cut *c, const part_marks *pm, int64_t ts, int64_t rowid)
{
    const piece *p = piece_at(c, ts);
    if (!p)
        return false;
    return p->level < 0 || rowid > pm->rolled || (pm->hourly >= 0 && rowid > pm->hourly);
}

typedef struct scan {
    enum store_kind kind;
    const char *app, *version;
    int64_t from, to;
    const store_scan_cb *cb;
    cut cuts[2];
    size_t n_cuts;
    /* the columns a block row is read from */
    int name_cols[STORE_MAX_NAME_COLS];
    size_t n_name_cols;
    int version_col, failed_col, excluded_col, ts_col;
    int metric_cols[STORE_MAX_METRICS];
    bool want[STORE_MAX_COLS];
    const cut *cur;
    const part_marks *pm;
} scan;

static const cut *cut_of(const scan *sc, int64_t day)
{
    for (size_t i = 0; i < sc->n_cuts; i++)
        if (sc->cuts[i].day == day)
            return &sc->cuts[i];
    return NULL;
}

typedef struct sub_read {
    const scan *sc;
    const char *name;
    const int64_t *ids; /* the id of each of the kind's metrics (subday_metrics), -1: none */
    sketch *sk;
    bool bad;
} sub_read;

/* A sketch of a rollup to the caller: as it is stored when it takes that,
 * else decoded. */
static bool give_sketch(const scan *sc, const char *name, size_t m, const uint8_t *p, size_t n, sketch *sk)
{
    if (sc->cb->sketch_encoded)
        return sc->cb->sketch_encoded(sc->cb->ctx, name, m, p, n) == 0;
    if (sketch_decode(sk, p, n) < 0)
        return false;
    sc->cb->sketch(sc->cb->ctx, name, m, sk);
    return true;
}

static void on_sub_sketch(void *ctx, int64_t id, const uint8_t *p, size_t n)
{
    sub_read *rd = ctx;
    for (size_t m = 0; m < store_layout_kind(rd->sc->kind)->n_metrics; m++)
        if (rd->ids[m] == id && !give_sketch(rd->sc, rd->name, m, p, n, rd->sk))
            rd->bad = true;
}

/* The ids of the kind's metrics in the sub-day rollups. */
static int metric_ids(sqlite3 *db, enum store_kind k, int64_t *ids)
{
    const store_kind_desc *kd = store_layout_kind(k);
    for (size_t m = 0; m < STORE_MAX_METRICS; m++)
        ids[m] = -1;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT id, metric FROM subday_metrics WHERE kind = ?1", -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(s, 1, kd->name, -1, SQLITE_STATIC);
    int r;
    while ((r = sqlite3_step(s)) == SQLITE_ROW)
        for (size_t m = 0; m < kd->n_metrics; m++)
            if (strcmp(kd->metrics[m], (const char *)sqlite3_column_text(s, 1)) == 0)
                ids[m] = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

/* Sketches and counts: of the days [lo, hi) (level < 0), or of the
 * sub-day buckets [lo, hi) of a level. */
static int scan_rollups(sqlite3 *db, const scan *sc, int level, int64_t lo, int64_t hi)
{
    static const char *const day_sql[2] = {
        "SELECT name, count, failed FROM rollup_counts WHERE kind = ?1 AND app = ?2 AND (?3 IS NULL OR version = ?3)"
        " AND day >= ?4 AND day < ?5",
        "SELECT name, metric, sketch FROM rollup_sketches WHERE kind = ?1 AND app = ?2"
        " AND (?3 IS NULL OR version = ?3) AND day >= ?4 AND day < ?5",
    };
    static const char sub_sql[] = "SELECT name, count, failed, sketches FROM subday WHERE kind = ?1 AND app = ?2"
                                  " AND width = ?6 AND t >= ?4 AND t < ?5 AND (?3 IS NULL OR version = ?3)";
    const store_kind_desc *kd = store_layout_kind(sc->kind);
    sketch sk;
    sketch_init(&sk);
    int64_t ids[STORE_MAX_METRICS];
    if (level >= 0 && metric_ids(db, sc->kind, ids) < 0)
        return -EIO;
    for (int q = 0; q < (level < 0 ? 2 : 1); q++) {
        sqlite3_stmt *s;
        if (sqlite3_prepare_v2(db, level < 0 ? day_sql[q] : sub_sql, -1, &s, NULL) != SQLITE_OK)
            return -EIO;
        sqlite3_bind_text(s, 1, kd->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, sc->app, -1, SQLITE_STATIC);
        if (sc->version)
            sqlite3_bind_text(s, 3, sc->version, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(s, 3);
        sqlite3_bind_int64(s, 4, lo);
        sqlite3_bind_int64(s, 5, hi);
        if (level >= 0)
            sqlite3_bind_int64(s, 6, sqlite_store_subday_width_s[level]);
        int r;
        while ((r = sqlite3_step(s)) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(s, 0);
            if (level >= 0) {
                sc->cb->count(sc->cb->ctx, name, (uint64_t)sqlite3_column_int64(s, 1),
                              (uint64_t)sqlite3_column_int64(s, 2));
                sub_read rd = {sc, name, ids, &sk, false};
                if (store_codec_subday_sketches(sqlite3_column_blob(s, 3), (size_t)sqlite3_column_bytes(s, 3), on_sub_sketch,
                                          &rd) < 0 ||
                    rd.bad) {
                    r = SQLITE_CORRUPT;
                    break;
                }
                continue;
            }
            if (q == 0) {
                sc->cb->count(sc->cb->ctx, name, (uint64_t)sqlite3_column_int64(s, 1),
                              (uint64_t)sqlite3_column_int64(s, 2));
                continue;
            }
            const char *metric = (const char *)sqlite3_column_text(s, 1);
            long m = -1;
            for (size_t i = 0; i < kd->n_metrics; i++)
                if (strcmp(kd->metrics[i], metric) == 0)
                    m = (long)i;
            if (m < 0)
                continue;
            if (!give_sketch(sc, name, (size_t)m, sqlite3_column_blob(s, 2), (size_t)sqlite3_column_bytes(s, 2), &sk)) {
                r = SQLITE_CORRUPT;
                break;
            }
        }
        sqlite3_finalize(s);
        if (r != SQLITE_DONE) {
            sketch_reset(&sk);
            return r == SQLITE_CORRUPT ? -EBADMSG : -EIO;
        }
    }
    sketch_reset(&sk);
    return 0;
}

static const part_marks *marks_of(const part_marks *parts, size_t n, int64_t day)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (parts[mid].day < day)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && parts[lo].day == day ? &parts[lo] : NULL;
}

/* Rows of the table after rowid `after`, of [lo, hi) and below rowid
 * `end`: each counted when after its rolled mark, or in a cut day where
 * the rollups do not hold it. parts: the partitions of the range (a
 * record table's rows are of any day; a plain span's of one). */
static int scan_table(sqlite3 *db, const scan *sc, const part_marks *parts, size_t np, int64_t after, int64_t end,
                      int64_t lo, int64_t hi)
{
    char *sql = sqlite_store_raw_select(sc->kind, "WHERE rowid > ?5 AND rowid < ?6 AND app = ?1 AND ts >= ?2 AND ts < ?3"
                                           " AND (?4 IS NULL OR version = ?4)");
    sqlite3_stmt *s;
    int pr = sql ? sqlite3_prepare_v2(db, sql, -1, &s, NULL) : SQLITE_NOMEM;
    free(sql);
    if (pr != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(s, 1, sc->app, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, lo);
    sqlite3_bind_int64(s, 3, hi);
    if (sc->version)
        sqlite3_bind_text(s, 4, sc->version, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 4);
    sqlite3_bind_int64(s, 5, after);
    sqlite3_bind_int64(s, 6, end);
    size_t n = store_layout_kind(sc->kind)->n_metrics;
    double m[STORE_MAX_METRICS];
    int r;
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(s, 0);
        int64_t ts = sqlite3_column_int64(s, 3 + (int)n), rowid = sqlite3_column_int64(s, 6 + (int)n);
        const part_marks *pm = np == 1 ? parts : marks_of(parts, np, day_of_ts(ts));
        if (!name || !pm)
            continue;
        const cut *c = cut_of(sc, pm->day);
        if (rowid <= pm->rolled && !(c && row_counts(c, pm, ts, rowid)))
            continue;
        for (size_t i = 0; i < n; i++)
            m[i] = sqlite3_column_type(s, 3 + (int)i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 3 + (int)i);
        sc->cb->raw(sc->cb->ctx, name, sqlite3_column_int(s, 1) != 0, sqlite3_column_int(s, 2) != 0, m);
    }
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

/* Plain spans of a cut day up to the rolled mark, from spans_keys: the
 * pieces of rows, and when the day is cold the late rows of the others. */
static int scan_keys(sqlite3 *db, const scan *sc, const part_marks *pm, const cut *c)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db,
                           "SELECT name, failed, m0, ts, rid FROM spans_keys WHERE app = ?1 AND ts >= ?2 AND ts < ?3"
                           " AND (?4 IS NULL OR version = ?4) AND rid > ?5 AND rid <= ?6",
                           -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    int r = SQLITE_DONE;
    for (size_t i = 0; i < c->n && r == SQLITE_DONE; i++) {
        const piece *p = &c->p[i];
        if (p->level >= 0 && pm->hourly < 0)
            continue;
        sqlite3_bind_text(s, 1, sc->app, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, p->lo);
        sqlite3_bind_int64(s, 3, p->hi);
        if (sc->version)
            sqlite3_bind_text(s, 4, sc->version, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(s, 4);
        sqlite3_bind_int64(s, 5, p->level < 0 ? INT64_MIN : pm->hourly);
        sqlite3_bind_int64(s, 6, pm->rolled);
        while ((r = sqlite3_step(s)) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(s, 0);
            double m = sqlite3_column_type(s, 2) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 2);
            if (name)
                sc->cb->raw(sc->cb->ctx, name, sqlite3_column_int(s, 1) != 0, false, &m);
        }
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

static double value_double(const store_value *v)
{
    return v->type == SV_REAL ? v->d : v->type == SV_INT ? (double)v->i : NAN;
}

static bool value_true(const store_value *v)
{
    return v->type == SV_INT ? v->i != 0 : v->type == SV_REAL ? v->d != 0 : false;
}

/* The group name of row i of a block (its name columns, as the SQL of
 * store_kind_desc.name_sql joins them); false when the row has none. */
static bool block_row_name(const scan *sc, const store_value *const *rows, size_t i, char *name, size_t size)
{
    size_t o = 0;
    for (size_t k = 0; k < sc->n_name_cols; k++) {
        const store_value *v = &rows[sc->name_cols[k]][i];
        if (v->type != SV_TEXT || o + v->n + 2 > size)
            return false; /* as SQL: a NULL part makes the name NULL, and the row no group's */
        if (k)
            name[o++] = ' ';
        memcpy(name + o, v->p, v->n);
        o += v->n;
    }
    name[o] = 0;
    return true;
}

/* The rows of one block. */
static int on_block(void *ctx, size_t n, const store_value *const *rows, const int64_t *rowids, const char *app)
{
    scan *sc = ctx;
    const store_kind_desc *kd = store_layout_kind(sc->kind);
    char name[2048];
    double m[STORE_MAX_METRICS];
    (void)app;
    for (size_t i = 0; i < n; i++) {
        const store_value *ts = &rows[sc->ts_col][i];
        if (ts->type != SV_INT || !row_counts(sc->cur, sc->pm, ts->i, rowids[i]))
            continue;
        if (sc->version) {
            const store_value *v = &rows[sc->version_col][i];
            if (v->type != SV_TEXT || strcmp(v->p, sc->version) != 0)
                continue;
        }
        if (!block_row_name(sc, rows, i, name, sizeof name))
            continue;
        for (size_t k = 0; k < kd->n_metrics; k++)
            m[k] = value_double(&rows[sc->metric_cols[k]][i]);
        bool excluded = sc->excluded_col >= 0 && value_true(&rows[sc->excluded_col][i]);
        sc->cb->raw(sc->cb->ctx, name, value_true(&rows[sc->failed_col][i]), excluded, m);
    }
    return 0;
}

/* The blocks of a cut day: per piece of rows, and when cold per piece of
 * the rollups for their late rows; a row is counted in its own piece only,
 * so that a block read for two pieces counts each row once. */
static int scan_blocks(sqlite3 *db, scan *sc, const part_marks *pm, const cut *c)
{
    sc->cur = c;
    sc->pm = pm;
    int r = 0;
    for (size_t i = 0; i < c->n && r == 0; i++) {
        const piece *p = &c->p[i];
        if (p->level >= 0 && (pm->hourly < 0 || pm->hourly >= pm->sealed))
            continue;
        cut one = {.day = c->day, .lo = p->lo, .hi = p->hi, .n = 1};
        one.p[0] = *p;
        sc->cur = &one;
        r = sqlite_seal_blocks_read(db, store_layout_kind(sc->kind)->table, sc->app, c->day, p->lo, p->hi,
                              p->level < 0 ? -1 : pm->hourly, sc->want, on_block, sc);
    }
    return r;
}

static int column_of(const store_table_desc *t, enum store_source src)
{
    for (size_t c = 0; c < t->n_cols; c++)
        if (t->cols[c].source == src)
            return (int)c;
    return -1;
}

/* The columns a block row of sc's kind is read from. */
static void scan_columns(scan *sc)
{
    const store_kind_desc *kd = store_layout_kind(sc->kind);
    const store_table_desc *td = store_layout_table(kd->table);
    sc->n_name_cols = kd->n_name_cols;
    memcpy(sc->name_cols, kd->name_cols, sizeof sc->name_cols);
    for (size_t c = 0; c < td->n_cols; c++)
        if (td->cols[c].source == SRC_COMMON && td->cols[c].index == PACER_COMMON_VERSION)
            sc->version_col = (int)c;
        else if (td->cols[c].source == SRC_COMMON && td->cols[c].index == PACER_COMMON_TS)
            sc->ts_col = (int)c;
    sc->failed_col = column_of(td, SRC_FAILED);
    sc->excluded_col = kd->excluded_col;
    memcpy(sc->metric_cols, kd->metric_cols, sizeof sc->metric_cols);
    sc->want[sc->version_col] = sc->want[sc->ts_col] = true;
    if (sc->failed_col >= 0)
        sc->want[sc->failed_col] = true;
    if (sc->excluded_col >= 0)
        sc->want[sc->excluded_col] = true;
    for (size_t i = 0; i < sc->n_name_cols; i++)
        sc->want[sc->name_cols[i]] = true;
    for (size_t i = 0; i < kd->n_metrics; i++)
        if (sc->metric_cols[i] >= 0)
            sc->want[sc->metric_cols[i]] = true;
}

int sqlite_scan(store *st, enum store_kind kind, const char *app, const char *version, int64_t from_ns,
               int64_t to_ns, const store_scan_cb *cb)
{
    const store_kind_desc *kd = store_layout_kind(kind);
    const store_table_desc *td = store_layout_table(kd->table);
    scan sc = {.kind = kind, .app = app, .version = version, .from = from_ns, .to = to_ns, .cb = cb};
    scan_columns(&sc);
    /* whole days [d_lo, d_hi) from the daily rollups; the days cut by from
     * and to in pieces */
    int64_t d_first = day_of_ts(from_ns), d_last = day_of_ts(to_ns - 1);
    int64_t d_lo = from_ns / STORE_DAY_NS + (from_ns % STORE_DAY_NS != 0);
    int64_t d_hi = to_ns == INT64_MAX ? INT64_MAX : to_ns / STORE_DAY_NS;
    if (from_ns % STORE_DAY_NS) {
        cut *c = &sc.cuts[sc.n_cuts++];
        c->day = d_first;
        c->lo = from_ns;
        c->hi = to_ns < (d_first + 1) * STORE_DAY_NS ? to_ns : (d_first + 1) * STORE_DAY_NS;
    }
    if (to_ns != INT64_MAX && to_ns % STORE_DAY_NS && !(sc.n_cuts && d_last == d_first)) {
        cut *c = &sc.cuts[sc.n_cuts++];
        c->day = d_last;
        c->lo = from_ns > d_last * STORE_DAY_NS ? from_ns : d_last * STORE_DAY_NS;
        c->hi = to_ns;
    }

    sqlite3 *db = sqlite_store_reader_get(st);
    int r = 0;
    /* one read transaction: rollups, marks and rows from the same snapshot */
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    part_marks *parts = NULL;
    size_t np = 0;
    bool unsealed = false;
    r = sqlite_store_parts_read(db, kd->table, d_first, d_last, false, &parts, &np);
    /* the pieces of each cut day, from the sub-day levels it has */
    for (size_t i = 0; i < sc.n_cuts && r == 0; i++) {
        const part_marks *pm = marks_of(parts, np, sc.cuts[i].day);
        cover(&sc.cuts[i], sc.cuts[i].lo, sc.cuts[i].hi, 0, store_part_levels(pm && pm->fine));
    }
    if (r == 0 && d_lo < d_hi)
        r = scan_rollups(db, &sc, -1, d_lo, d_hi);
    for (size_t i = 0; i < np && r == 0; i++) {
        const part_marks *pm = &parts[i];
        const cut *c = cut_of(&sc, pm->day);
        if (c) {
            for (size_t k = 0; k < c->n && r == 0; k++)
                if (c->p[k].level >= 0) {
                    int64_t w = sqlite_store_subday_width_s[c->p[k].level] * 1000000000LL;
                    r = scan_rollups(db, &sc, c->p[k].level, c->p[k].lo / w, c->p[k].hi / w);
                }
            if (r == 0)
                r = td->type ? scan_blocks(db, &sc, pm, c) : scan_keys(db, &sc, pm, c);
            /* a record table: the cut part's rows not sealed yet, up to rolled
             * (when the day has any), are read with those after rolled */
            if (store_is_record(kd->table) && pm->sealed < pm->rolled && pm->last > pm->sealed)
                unsealed = true;
        }
        /* plain spans: the day's rows after its rolled mark */
        if (r == 0 && !store_is_record(kd->table))
            r = scan_table(db, &sc, pm, 1, pm->rolled, part_base(pm->day + 1), c ? c->lo : from_ns,
                           c ? c->hi : to_ns);
    }
    /* a record table: its rows after rolled, of every day at once; from
     * sealed when a cut day has rows not sealed yet (each row counted
     * where it belongs: after rolled, or in a cut day's piece of rows) */
    if (r == 0 && np && store_is_record(kd->table))
        r = scan_table(db, &sc, parts, np, unsealed ? parts[0].sealed : parts[0].rolled, INT64_MAX, from_ns, to_ns);
    free(parts);
    store_error err;
    if (r < 0)
        sqlite_store_read_error(db, r, &err); /* before the COMMIT replaces it */
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    health_read(&st->health, r < 0 ? &err : NULL, "a query");
    sqlite_store_reader_put(st, db);
    return r;
}

/* ---- a cold day settles (writer thread) ---- */

typedef struct settle {
    scan sc;
    store *st;
    int64_t after, upto; /* the rows (after, upto] */
    int levels;
    int only;            /* >= 0: the rows up to after too, into this level only */
    int64_t fed;
} settle;

static int on_settle(void *ctx, size_t n, const store_value *const *rows, const int64_t *rowids, const char *app)
{
    settle *z = ctx;
    const scan *sc = &z->sc;
    const store_kind_desc *kd = store_layout_kind(sc->kind);
    char name[2048];
    double m[STORE_MAX_METRICS];
    for (size_t i = 0; i < n; i++) {
        const store_value *ts = &rows[sc->ts_col][i];
        bool old = rowids[i] <= z->after;
        if ((old && z->only < 0) || rowids[i] > z->upto || ts->type != SV_INT)
            continue;
        z->fed += !old;
        if (!block_row_name(sc, rows, i, name, sizeof name))
            continue; /* no group's: in no rollup (as sqlite_store_raw_select's NULL name) */
        const store_value *v = &rows[sc->version_col][i];
        for (size_t k = 0; k < kd->n_metrics; k++)
            m[k] = value_double(&rows[sc->metric_cols[k]][i]);
        bool excluded = sc->excluded_col >= 0 && value_true(&rows[sc->excluded_col][i]);
        if (sqlite_store_rollup_levels(z->st, sc->kind, app, v->type == SV_TEXT ? v->p : "", name, ts->i,
                                old ? z->only : 0, old ? z->only + 1 : z->levels,
                                value_true(&rows[sc->failed_col][i]), excluded, m) < 0)
            return -EIO;
    }
    return 0;
}

int sqlite_scan_settle(store *st, part *p)
{
    int64_t upto = st->tm[p->table].sealed;
    if (p->hourly < 0 || upto <= p->hourly)
        return 0;
    int64_t fed = 0;
    /* busy now: the ten-minute level of the rows before too */
    bool fine = p->fine || p->rows >= (int64_t)st->fine_at;
    for (enum store_kind k = 0; k < KIND_COUNT; k++) {
        if (store_layout_kind(k)->table != p->table)
            continue;
        settle z = {.sc = {.kind = k}, .st = st, .after = p->hourly, .upto = upto,
                    .levels = store_part_levels(fine), .only = fine && !p->fine ? store_part_levels(true) - 1 : -1};
        scan_columns(&z.sc);
        int r = sqlite_seal_blocks_read(st->w, p->table, NULL, p->day, p->day * STORE_DAY_NS, (p->day + 1) * STORE_DAY_NS,
                                  z.only >= 0 ? INT64_MIN : p->hourly, z.sc.want, on_settle, &z);
        if (r < 0)
            return r;
        fed = z.fed;
    }
    int r = sqlite_seal_blocks_merge(st, p->table, p->day, p->hourly);
    if (r < 0)
        return r;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->w, "UPDATE partitions SET hourly = ?3, fine = ?4 WHERE tbl = ?1 AND day = ?2", -1, &s,
                           NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(s, 1, p->table);
    sqlite3_bind_int64(s, 2, p->day);
    sqlite3_bind_int64(s, 3, upto);
    sqlite3_bind_int(s, 4, fine);
    r = sqlite3_step(s) == SQLITE_DONE ? 0 : -EIO;
    sqlite3_finalize(s);
    if (r < 0)
        return r;
    p->hourly = upto;
    p->fine = fine;
    p->late = p->late > fed ? p->late - fed : 0;
    return 0;
}

/* store_apps: the apps and versions of the rollups, and of the rows they do
 * not hold yet. */
int sqlite_scan_apps(store *st, void (*cb)(void *ctx, const char *app, const char *version), void *ctx)
{
    char sql[4096];
    size_t o = (size_t)snprintf(sql, sizeof sql, "SELECT app, version FROM rollup_counts");
    for (enum store_kind k = 0; k < KIND_COUNT && o < sizeof sql; k++) {
        enum store_table t = store_layout_kind(k)->table;
        if (store_is_record(t))
            o += (size_t)snprintf(sql + o, sizeof sql - o,
                                  " UNION SELECT app, COALESCE(version, '') FROM %s WHERE rowid >"
                                  " (SELECT COALESCE(MAX(rolled), 0) FROM table_marks WHERE tbl = %d)",
                                  store_layout_table(t)->name, (int)t);
        else
            o += (size_t)snprintf(sql + o, sizeof sql - o,
                                  " UNION SELECT t.app, COALESCE(t.version, '') FROM partitions AS p CROSS JOIN %s AS t"
                                  " ON t.rowid > p.rolled AND t.rowid < ((p.day + 2) << %d) WHERE p.tbl = %d",
                                  store_layout_table(t)->name, PART_SHIFT, (int)t);
    }
    if (o < sizeof sql)
        o += (size_t)snprintf(sql + o, sizeof sql - o, " ORDER BY 1, 2");
    if (o >= sizeof sql)
        return -ENOMEM;
    sqlite3 *db = sqlite_store_reader_get(st);
    sqlite3_stmt *s;
    int r = -EIO;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK) {
        int sr;
        while ((sr = sqlite3_step(s)) == SQLITE_ROW)
            cb(ctx, (const char *)sqlite3_column_text(s, 0), (const char *)sqlite3_column_text(s, 1));
        r = sr == SQLITE_DONE ? 0 : -EIO;
        sqlite3_finalize(s);
    }
    store_error err;
    if (r < 0)
        sqlite_store_error_capture(db, &err);
    health_read(&st->health, r < 0 ? &err : NULL, "a query");
    sqlite_store_reader_put(st, db);
    return r;
}
