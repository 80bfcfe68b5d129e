/* Files of earlier schemas (sqlite_int.h, "upgrade").
 *
 * Schema 1: rollups in step with every row, a covering index per raw
 * table. Schema 2: one table per kind in commit order (rowids from 1),
 * rollups up to a mark per kind (rollup_marks), *_keys tables, trace_keys
 * and span_attr_keys keyed by those rowids. Schema 3 (this pacerd):
 * partitions (sqlite_int.h).
 *
 *   begin   (one transaction) the old marks kept in meta (upgrade_mark_K;
 *           schema 1: every row), the tables and indexes of the old rowids
 *           dropped (the *_keys tables, trace_keys, span_attr_keys,
 *           rollup_marks, the covering indexes), the tables of schema 3
 *           made;
 *   move    per table, chunks of CHUNK rows, each its own transaction:
 *           plain spans, logs and points of rowid r and day d become rowid
 *           part_base(d) + r, so that each day's rows keep their order and
 *           those the rollups held (r <= mark) come first — they set the
 *           day's rolled mark; a log or point keeps r as its position
 *           (the order it came in: arrivals, in runs of one day); the record tables' rows stay (their marks:
 *           rolled = the old mark, sealed = 0) and their days get a
 *           partition; the rows the rollups held also go into the sub-day
 *           rollups, which schema 2 did not have;
 *   finish  the plain spans' keys of every partition (up to rolled), the
 *           hot days (from the newest row), schema = 3.
 * The record rows are then sealed into blocks as any others are, in steps,
 * before pacerd answers (store_open). A cut-short upgrade goes on at the
 * next open: rows left below part_base(0) have not moved yet, and meta
 * upgrade_at_T says how far table T got.
 */
#include "sqlite_int.h"

#include <pacer/base/clock.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 50000

static int fail_msg(store *st, char **msg)
{
    if (msg && !*msg)
        *msg = sqlite3_mprintf("%s", sqlite3_errmsg(st->w));
    sqlite3_exec(st->w, "ROLLBACK", NULL, NULL, NULL);
    return -EIO;
}

static bool table_exists(sqlite3 *db, const char *name)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_schema WHERE name = ?1", -1, &s, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    bool r = sqlite3_step(s) == SQLITE_ROW;
    sqlite3_finalize(s);
    return r;
}

static int64_t query_int(sqlite3 *db, const char *sql, const char *text, int64_t dflt)
{
    sqlite3_stmt *s;
    int64_t v = dflt;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        return INT64_MIN;
    if (text)
        sqlite3_bind_text(s, 1, text, -1, SQLITE_STATIC);
    int r = sqlite3_step(s);
    if (r == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return r == SQLITE_ROW || r == SQLITE_DONE ? v : INT64_MIN;
}

int sqlite_upgrade_begin(store *st, char **msg)
{
    sqlite3 *db = st->w;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, msg) != SQLITE_OK)
        return -EIO;
    bool begun = table_exists(db, "meta") &&
                 query_int(db, "SELECT COUNT(*) FROM meta WHERE key LIKE 'upgrade_mark_%'", NULL, 0) > 0;
    if (!begun) {
        bool marks = table_exists(db, "rollup_marks");
        if (!table_exists(db, "meta") &&
            sqlite3_exec(db, "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID", NULL, NULL, msg) !=
                SQLITE_OK)
            return fail_msg(st, msg);
        for (enum store_kind k = 0; k < KIND_COUNT; k++) {
            const char *table = store_layout_table(store_layout_kind(k)->table)->name;
            int64_t mark = 0;
            if (marks)
                mark = query_int(db, "SELECT last_rowid FROM rollup_marks WHERE kind = ?1", store_layout_kind(k)->name, 0);
            else if (table_exists(db, table)) {
                char *sql = sqlite_store_sql("SELECT MAX(rowid) FROM %s", table);
                mark = sql ? query_int(db, sql, NULL, 0) : INT64_MIN;
                free(sql);
            }
            if (mark == INT64_MIN ||
                sqlite_store_exec_owned(db,
                                 sqlite_store_sql("INSERT OR REPLACE INTO meta(key, value) VALUES('upgrade_mark_%s', %" PRId64
                                           ")",
                                           store_layout_kind(k)->name, mark),
                                 msg) != SQLITE_OK)
                return fail_msg(st, msg);
        }
        static const char drops[] = "DROP TABLE IF EXISTS page_loads_keys; DROP TABLE IF EXISTS startups_keys;"
                                    "DROP TABLE IF EXISTS requests_keys; DROP TABLE IF EXISTS spans_keys;"
                                    "DROP TABLE IF EXISTS trace_keys; DROP TABLE IF EXISTS span_attr_keys;"
                                    "DROP TABLE IF EXISTS rollup_marks;";
        if (sqlite3_exec(db, drops, NULL, NULL, msg) != SQLITE_OK)
            return fail_msg(st, msg);
        for (enum store_kind k = 0; k < KIND_COUNT; k++) {
            const char *table = store_layout_table(store_layout_kind(k)->table)->name;
            if (sqlite_store_exec_owned(db, sqlite_store_sql("DROP INDEX IF EXISTS %s_app_ts; DROP INDEX IF EXISTS %s_scan", table, table),
                                 msg) != SQLITE_OK)
                return fail_msg(st, msg);
        }
    }
    if (sqlite_store_schema_create(db, msg) != SQLITE_OK || sqlite3_exec(db, "COMMIT", NULL, NULL, msg) != SQLITE_OK)
        return fail_msg(st, msg);
    return 0;
}

/* The sub-day rollups of the rows [lo, hi) of kind k that the rollups
 * held (rowid <= mark), before they move. */
static int subday_of_chunk(store *st, enum store_kind k, int64_t lo, int64_t hi, int64_t mark)
{
    char *sql = sqlite_store_raw_select(k, "WHERE rowid >= ?1 AND rowid < ?2 AND rowid <= ?3");
    sqlite3_stmt *s;
    int r = sql ? sqlite3_prepare_v2(st->w, sql, -1, &s, NULL) : SQLITE_NOMEM;
    free(sql);
    if (r != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(s, 1, lo);
    sqlite3_bind_int64(s, 2, hi);
    sqlite3_bind_int64(s, 3, mark);
    size_t nm = store_layout_kind(k)->n_metrics;
    int e = 0;
    while (e == 0 && (r = sqlite3_step(s)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(s, 0);
        if (!name)
            continue;
        double m[STORE_MAX_METRICS];
        for (size_t j = 0; j < nm; j++)
            m[j] = sqlite3_column_type(s, 3 + (int)j) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 3 + (int)j);
        int c = 3 + (int)nm;
        e = sqlite_store_rollup_row(st, k, (const char *)sqlite3_column_text(s, c + 2),
                             (const char *)sqlite3_column_text(s, c + 1), name, sqlite3_column_int64(s, c), false,
                             store_part_levels(false),
                             sqlite3_column_int(s, 1) != 0, sqlite3_column_int(s, 2) != 0, m);
    }
    sqlite3_finalize(s);
    if (e < 0 || (r != SQLITE_DONE && r != SQLITE_ROW))
        return -EIO;
    return sqlite_store_groups_write(st);
}

/* A step's transaction ended: committed when r is SQLITE_OK, the groups
 * written. 1 (a step done), or fail_msg's failure. */
static int step_done(store *st, sqlite3 *db, int r, char **msg)
{
    if (r == SQLITE_OK)
        r = sqlite3_exec(db, "COMMIT", NULL, NULL, msg);
    sqlite_store_groups_written(st);
    return r == SQLITE_OK ? 1 : fail_msg(st, msg);
}

/* The next chunk of a record table's rows, which keep their rowids:
 * their days' partitions, their sub-day rollups. 1 when one was done, 0
 * when none is left, -EIO. */
static int record_chunk(store *st, enum store_table t, char **msg)
{
    sqlite3 *db = st->w;
    const store_table_desc *td = store_layout_table(t);
    const char *kind = store_layout_kind(td->kind)->name;
    char key[64], mark_key[64];
    snprintf(key, sizeof key, "upgrade_at_%s", td->name);
    snprintf(mark_key, sizeof mark_key, "upgrade_mark_%s", kind);
    int64_t done = query_int(db, "SELECT value FROM meta WHERE key = ?1", key, 0);
    int64_t mark = query_int(db, "SELECT value FROM meta WHERE key = ?1", mark_key, 0);
    char *sql = sqlite_store_sql("SELECT MIN(rowid) FROM %s WHERE rowid > %" PRId64, td->name, done);
    int64_t lo = sql && done != INT64_MIN && mark != INT64_MIN ? query_int(db, sql, NULL, -1) : INT64_MIN;
    free(sql);
    if (lo == INT64_MIN)
        return fail_msg(st, msg);
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, msg) != SQLITE_OK)
        return -EIO;
    int r = sqlite_store_exec_owned(db,
                             sqlite_store_sql("INSERT OR IGNORE INTO table_marks(tbl, rolled, sealed) VALUES(%d, %" PRId64
                                       ", 0)",
                                       (int)t, mark),
                             msg);
    if (lo < 0) {
        if (r == SQLITE_OK)
            r = sqlite3_exec(db, "COMMIT", NULL, NULL, msg);
        return r == SQLITE_OK ? 0 : fail_msg(st, msg);
    }
    int64_t hi = lo + CHUNK;
    const int64_t day = STORE_DAY_NS;
    if (r == SQLITE_OK)
        r = sqlite_store_exec_owned(db,
                             sqlite_store_sql("INSERT INTO partitions(tbl, day, rolled, sealed, hourly, rows)"
                                       " SELECT %d, ts / %" PRId64 ", MAX(rowid), 0, NULL, COUNT(*) FROM %s"
                                       " WHERE rowid >= %" PRId64 " AND rowid < %" PRId64 " GROUP BY 2"
                                       " ON CONFLICT(tbl, day) DO UPDATE SET rolled = MAX(rolled, excluded.rolled),"
                                       " rows = rows + excluded.rows",
                                       (int)t, day, td->name, lo, hi),
                             msg);
    if (r == SQLITE_OK && subday_of_chunk(st, td->kind, lo, hi, mark) < 0)
        r = SQLITE_ERROR;
    if (r == SQLITE_OK)
        r = sqlite_store_exec_owned(db,
                             sqlite_store_sql("INSERT OR REPLACE INTO meta(key, value) VALUES('%s', %" PRId64 ")", key,
                                       hi - 1),
                             msg);
    return step_done(st, db, r, msg);
}

/* Moves the next chunk of table t's old rows into the ranges of their
 * days; 1 when one moved, 0 when none is left, -EIO. */
static int move_chunk(store *st, enum store_table t, char **msg)
{
    sqlite3 *db = st->w;
    const store_table_desc *td = store_layout_table(t);
    char *sql = sqlite_store_sql("SELECT MIN(rowid) FROM %s WHERE rowid < %" PRId64, td->name, part_base(0));
    int64_t lo = sql ? query_int(db, sql, NULL, -1) : INT64_MIN;
    free(sql);
    if (lo == INT64_MIN)
        return fail_msg(st, msg);
    if (lo < 0)
        return 0;
    int64_t hi = lo + CHUNK < part_base(0) ? lo + CHUNK : part_base(0);
    const int64_t day = STORE_DAY_NS, base = part_base(0);
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, msg) != SQLITE_OK)
        return -EIO;
    int r = SQLITE_OK;
    if (td->kind != KIND_NONE) {
        const char *kind = store_layout_kind(td->kind)->name;
        char key[64];
        snprintf(key, sizeof key, "upgrade_mark_%s", kind);
        int64_t mark = query_int(db, "SELECT value FROM meta WHERE key = ?1", key, 0);
        /* the day's rows the rollups held come first: they set rolled */
        r = sqlite_store_exec_owned(
            db,
            sqlite_store_sql("INSERT INTO partitions(tbl, day, rolled, sealed, hourly)"
                      " SELECT %d, ts / %" PRId64 ", MAX(CASE WHEN rowid <= %" PRId64 " THEN (ts / %" PRId64
                      " + 1) * %" PRId64 " + rowid ELSE (ts / %" PRId64 " + 1) * %" PRId64 " END),"
                      " (ts / %" PRId64 " + 1) * %" PRId64 ", NULL FROM %s WHERE rowid >= %" PRId64
                      " AND rowid < %" PRId64 " GROUP BY 2"
                      " ON CONFLICT(tbl, day) DO UPDATE SET rolled = MAX(rolled, excluded.rolled)",
                      (int)t, day, mark, day, base, day, base, day, base, td->name, lo, hi),
            msg);
        if (r == SQLITE_OK && subday_of_chunk(st, td->kind, lo, hi, mark) < 0)
            r = SQLITE_ERROR;
    }
    /* logs and points keep their order as positions: the old rowids, in
     * runs of one day (sqlite_int.h, "positions") */
    if (r == SQLITE_OK && store_has_positions(t))
        r = sqlite_store_exec_owned(db,
                             sqlite_store_sql("INSERT INTO arrivals(tbl, pos, n, off)"
                                       " SELECT %d, MAX(rowid), MAX(rowid) - MIN(rowid) + 1, (d + 1) * %" PRId64
                                       " FROM (SELECT rowid, ts / %" PRId64 " AS d, ROW_NUMBER() OVER (ORDER BY rowid)"
                                       " - ROW_NUMBER() OVER (PARTITION BY ts / %" PRId64 " ORDER BY rowid) AS g"
                                       " FROM %s WHERE rowid >= %" PRId64 " AND rowid < %" PRId64 ")"
                                       " GROUP BY d, g",
                                       (int)t, base, day, day, td->name, lo, hi),
                             msg);
    if (r == SQLITE_OK)
        r = sqlite_store_exec_owned(db,
                             sqlite_store_sql("INSERT INTO %s(rowid, %s) SELECT (ts / %" PRId64 " + 1) * %" PRId64
                                       " + rowid, %s FROM %s WHERE rowid >= %" PRId64 " AND rowid < %" PRId64
                                       " ORDER BY rowid;"
                                       "DELETE FROM %s WHERE rowid >= %" PRId64 " AND rowid < %" PRId64,
                                       td->name, td->columns, day, base, td->columns, td->name, lo, hi, td->name,
                                       lo, hi),
                             msg);
    return step_done(st, db, r, msg);
}

int sqlite_upgrade_finish(store *st, char **msg)
{
    sqlite3 *db = st->w;
    for (enum store_table t = 0; t < TABLE_COUNT; t++) {
        int r;
        while ((r = store_is_record(t) ? record_chunk(st, t, msg) : move_chunk(st, t, msg)) == 1)
            sqlite_retention_wal_check(st);
        if (r < 0)
            return r;
    }
    /* the plain spans' keys, up to each day's rolled mark */
    part_marks *parts;
    size_t np;
    if (sqlite_store_parts_read(db, TABLE_SPANS, 0, INT64_MAX, false, &parts, &np) < 0)
        return fail_msg(st, msg);
    for (size_t i = 0; i < np; i++) {
        if (parts[i].rolled == part_base(parts[i].day))
            continue;
        int r = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, msg) == SQLITE_OK ? 0 : -EIO;
        sqlite3_stmt *fills[2] = {st->fill_keys, st->fill_attrs};
        for (int f = 0; f < 2 && r == 0; f++) {
            sqlite3_bind_int64(fills[f], 1, part_base(parts[i].day));
            sqlite3_bind_int64(fills[f], 2, parts[i].rolled);
            if (f == 1)
                sqlite3_bind_int64(fills[f], 3, parts[i].day);
            r = sqlite_store_step_done(fills[f]);
        }
        if (r == 0)
            r = sqlite3_exec(db, "COMMIT", NULL, NULL, msg) == SQLITE_OK ? 0 : -EIO;
        if (r < 0) {
            free(parts);
            return fail_msg(st, msg);
        }
        sqlite_retention_wal_check(st);
    }
    free(parts);
    /* hot: the newest row's day (not past the clock) */
    int64_t newest = 0;
    for (enum store_kind k = 0; k < KIND_COUNT; k++) {
        char *sql = sqlite_store_sql("SELECT MAX(ts) FROM %s", store_layout_table(store_layout_kind(k)->table)->name);
        int64_t v = sql ? query_int(db, sql, NULL, 0) : INT64_MIN;
        free(sql);
        if (v == INT64_MIN)
            return fail_msg(st, msg);
        newest = v > newest ? v : newest;
    }
    int64_t now = wall_ns();
    if (newest > now + 3600LL * 1000000000LL)
        newest = now + 3600LL * 1000000000LL;
    int64_t hot = day_of_ts(newest);
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, msg) != SQLITE_OK ||
        sqlite_store_exec_owned(db,
                         sqlite_store_sql("UPDATE partitions SET hourly = rolled WHERE tbl = %d AND day < %" PRId64
                                   " AND hourly IS NULL;"
                                   "UPDATE partitions SET hourly = (SELECT rolled FROM table_marks AS m"
                                   " WHERE m.tbl = partitions.tbl) WHERE tbl <> %d AND day < %" PRId64
                                   " AND hourly IS NULL;"
                                   "INSERT OR REPLACE INTO meta(key, value) VALUES('hot_day', %" PRId64 ");"
                                   "DELETE FROM meta WHERE key LIKE 'upgrade_mark_%%' OR key LIKE 'upgrade_at_%%'"
                                   " OR key IN ('kinds', 'indexes');"
                                   "INSERT OR REPLACE INTO meta(key, value) VALUES('schema', '3')",
                                   (int)TABLE_SPANS, hot, (int)TABLE_SPANS, hot, hot),
                         msg) != SQLITE_OK ||
        sqlite3_exec(db, "COMMIT", NULL, NULL, msg) != SQLITE_OK)
        return fail_msg(st, msg);
    return 0;
}
