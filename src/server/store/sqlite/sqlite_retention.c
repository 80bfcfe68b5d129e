/* Retention and the WAL (sqlite_int.h).
 *
 * --retention-days N keeps the raw records of the last N UTC days (and of
 * today): the partitions of older days are dropped — their blocks, their
 * rows (one range of rowids per table), the plain spans' keys, their
 * sub-day rollups, the trace runs that name no later day — and so is their
 * row in partitions. The daily rollups stay (they answer whole days) until
 * --rollup-retention-days, when given. Each step deletes a bounded amount
 * in its own transaction (a few thousand blocks or STEP_ROWS rows), run by
 * the writer between groups of jobs, so that ingest never waits long; a
 * day of 2 million page loads goes in about a hundred steps. A step runs
 * only when no row waits for the rollups (right after a rollup flush), so
 * that no part in memory points at rows it drops.
 *
 * The WAL. The writer does not checkpoint (wal_autocheckpoint=0): after a
 * commit that leaves more than WAL_CHECKPOINT_PAGES in the WAL it wakes
 * the checkpointer thread, which copies the WAL back into the database
 * with a connection of its own (PASSIVE: it waits for nobody, the writer
 * goes on). The writer's next transaction after a complete checkpoint
 * starts the WAL again from its beginning and cuts the file down to
 * journal_size_limit. When readers keep a checkpoint from completing and
 * the WAL passes WAL_RESTART_PAGES, the checkpointer waits for them
 * (RESTART), so that the WAL stays bounded.
 */
#include "sqlite_int.h"

#include <pacer/base/clock.h>
#include <pacer/base/thread.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEP_ROWS 20000
#define STEP_BLOCKS 256

/* Runs sql with ?1, ?2 bound (values < INT64_MIN + 1: not bound); returns
 * the rows it changed, or -1. */
static int64_t exec_changes(sqlite3 *db, const char *sql, int64_t a, int64_t b, const char *text)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        return -1;
    if (a != INT64_MIN)
        sqlite3_bind_int64(s, 1, a);
    if (b != INT64_MIN)
        sqlite3_bind_int64(s, 2, b);
    if (text)
        sqlite3_bind_text(s, 3, text, -1, SQLITE_STATIC);
    int r = sqlite3_step(s);
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? sqlite3_changes(db) : -1;
}

/* The apps that have plain spans' keys, one after the other. */
static int next_app(sqlite3 *db, const char *table, const char *after, char *out, size_t size)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT app FROM %s WHERE app > ?3 ORDER BY app LIMIT 1", table);
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(s, 3, after, -1, SQLITE_STATIC);
    int r = sqlite3_step(s);
    if (r == SQLITE_ROW)
        snprintf(out, size, "%s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return r == SQLITE_ROW ? 1 : r == SQLITE_DONE ? 0 : -1;
}

/* One bounded step of dropping the days before `horizon` (raw) and before
 * `rollup_horizon` (daily rollups). Returns the rows it deleted (0: nothing
 * is left), or -1. */
static int64_t drop_step(store *st, int64_t horizon, int64_t rollup_horizon)
{
    sqlite3 *db = st->w;
    int64_t n = 0;
    char app[1024], prev[1024];
    if (horizon != INT64_MIN) {
        /* blocks of the record tables */
        for (enum store_table t = 0; t < TABLE_COUNT && n == 0; t++)
            if (store_layout_table(t)->type)
                n = exec_changes(db,
                                 "DELETE FROM blocks WHERE id IN (SELECT id FROM blocks WHERE tbl = ?1 AND day < ?2"
                                 " LIMIT 256)",
                                 t, horizon, NULL);
        /* a record table's rows not sealed yet (at most a seal's worth, of
         * any day: those of the old days) */
        for (enum store_table t = 0; t < TABLE_COUNT && n == 0; t++) {
            if (!store_is_record(t))
                continue;
            char sql[256];
            snprintf(sql, sizeof sql,
                     "DELETE FROM %s WHERE rowid IN (SELECT rowid FROM %s WHERE rowid > ?1 AND ts < ?2 LIMIT %d)",
                     store_layout_table(t)->name, store_layout_table(t)->name, STEP_ROWS);
            n = exec_changes(db, sql, st->tm[t].sealed, horizon * STORE_DAY_NS, NULL);
        }
        /* rows of the tables cut by day: one range of rowids */
        for (enum store_table t = 0; t < TABLE_COUNT && n == 0; t++) {
            if (store_is_record(t))
                continue;
            char sql[200];
            snprintf(sql, sizeof sql, "DELETE FROM %s WHERE rowid IN (SELECT rowid FROM %s WHERE rowid <= ?1 LIMIT %d)",
                     store_layout_table(t)->name, store_layout_table(t)->name, STEP_ROWS);
            n = exec_changes(db, sql, part_base(horizon), INT64_MIN, NULL);
        }
        /* plain spans' keys and attributes, per app */
        prev[0] = 0;
        while (n == 0 && next_app(db, "spans_keys", prev, app, sizeof app) == 1) {
            n = exec_changes(db,
                             "DELETE FROM spans_keys WHERE app = ?3 AND ts < ?2 AND ts <= COALESCE((SELECT ts FROM"
                             " spans_keys WHERE app = ?3 AND ts < ?2 ORDER BY ts LIMIT 1 OFFSET 20000), ?2)",
                             INT64_MIN, horizon * STORE_DAY_NS, app);
            snprintf(prev, sizeof prev, "%s", app);
        }
        prev[0] = 0;
        while (n == 0 && next_app(db, "span_attrs", prev, app, sizeof app) == 1) {
            n = exec_changes(db,
                             "DELETE FROM span_attrs WHERE app = ?3 AND day = (SELECT MIN(day) FROM span_attrs"
                             " WHERE app = ?3) AND day < ?2 AND h <= COALESCE((SELECT h FROM span_attrs WHERE app = ?3"
                             " AND day = (SELECT MIN(day) FROM span_attrs WHERE app = ?3) ORDER BY h LIMIT 1"
                             " OFFSET 20000), 9223372036854775807)",
                             INT64_MIN, horizon, app);
            snprintf(prev, sizeof prev, "%s", app);
        }
        /* trace runs that name no day from the horizon on */
        if (n == 0)
            n = exec_changes(db,
                             "DELETE FROM trace_index WHERE id IN (SELECT id FROM trace_index WHERE b ="
                             " (SELECT MIN(b) FROM trace_runs WHERE day_hi < ?2) LIMIT 256)",
                             INT64_MIN, horizon, NULL);
        if (n == 0)
            n = exec_changes(db, "DELETE FROM trace_runs WHERE b = (SELECT MIN(b) FROM trace_runs WHERE day_hi < ?2)",
                             INT64_MIN, horizon, NULL);
        /* sub-day rollups */
        for (size_t l = 0; l < SUBDAY_LEVELS && n == 0; l++) {
            int64_t t = horizon * DAY_WIDTH_S / sqlite_store_subday_width_s[l];
            n = exec_changes(db, "DELETE FROM subday WHERE width = ?1 AND t < ?2", sqlite_store_subday_width_s[l], t, NULL);
        }
        if (n == 0)
            n = exec_changes(db, "DELETE FROM partitions WHERE day < ?2", INT64_MIN, horizon, NULL);
    }
    if (rollup_horizon != INT64_MIN && n == 0) {
        n = exec_changes(db, "DELETE FROM rollup_counts WHERE day < ?2", INT64_MIN, rollup_horizon, NULL);
        if (n == 0)
            n = exec_changes(db, "DELETE FROM rollup_sketches WHERE day < ?2", INT64_MIN, rollup_horizon, NULL);
    }
    return n;
}

int sqlite_retention_step(store *st)
{
    if (!st->retention_days && !st->rollup_retention_days)
        return 0;
    int64_t now = mono_ns();
    if (!st->retention_due && now - st->retention_checked_ns < RETENTION_CHECK_NS)
        return 0;
    if (st->lag_rows)
        return 0; /* rows wait for the rollups: after the next flush */
    st->retention_checked_ns = now;
    int64_t today = wall_ns() / STORE_DAY_NS;
    int64_t horizon = st->retention_days ? today - (int64_t)st->retention_days : INT64_MIN;
    int64_t rollup_horizon = st->rollup_retention_days ? today - (int64_t)st->rollup_retention_days : INT64_MIN;
    int64_t t0 = mono_ns();
    st->txn_since_ns = t0;
    if (sqlite_store_step_done(st->st[ST_BEGIN]) < 0)
        return -EIO;
    int64_t n = drop_step(st, horizon, rollup_horizon);
    int r = n < 0 ? -EIO : sqlite_store_step_done(st->st[ST_COMMIT]);
    store_error err;
    if (r < 0)
        sqlite_store_error_capture(st->w, &err);
    health_write(&st->health, r < 0 ? &err : NULL, HEALTH_OTHER, mono_ns() - t0, NULL, 0, 0);
    st->txn_since_ns = 0;
    if (r < 0) {
        sqlite_store_step_done(st->st[ST_ROLLBACK]);
        return r;
    }
    st->retention_due = n > 0;
    /* the parts of dropped days */
    for (size_t b = 0; horizon != INT64_MIN && b < PART_BUCKETS; b++)
        for (part **pp = &st->parts[b]; *pp;) {
            part *p = *pp;
            if (p->day < horizon && !p->touched) {
                *pp = p->next;
                free(p);
                st->n_parts--;
            } else {
                pp = &p->next;
            }
        }
    sqlite_retention_wal_check(st);
    return 0;
}

/* ---- the WAL ---- */

#define WAL_CHECKPOINT_PAGES 4096 /* 64 MiB of 16 KiB pages */
#define WAL_RESTART_PAGES (4 * WAL_CHECKPOINT_PAGES)

static int wal_hook(void *ctx, sqlite3 *db, const char *name, int frames)
{
    (void)db;
    (void)name;
    store *st = ctx;
    __atomic_store_n(&st->wal_frames, frames, __ATOMIC_RELAXED);
    return SQLITE_OK;
}

void sqlite_retention_wal_check(store *st)
{
    if (__atomic_load_n(&st->wal_frames, __ATOMIC_RELAXED) < WAL_CHECKPOINT_PAGES || !st->ckpt_db)
        return;
    pthread_mutex_lock(&st->ckpt_lock);
    if (!st->ckpt_wanted) {
        st->ckpt_wanted = true;
        pthread_cond_signal(&st->ckpt_wake);
    }
    pthread_mutex_unlock(&st->ckpt_lock);
}

static void *checkpointer_main(void *arg)
{
    store *st = arg;
    pthread_mutex_lock(&st->ckpt_lock);
    for (;;) {
        while (!st->ckpt_wanted && !st->ckpt_stop)
            pthread_cond_wait(&st->ckpt_wake, &st->ckpt_lock);
        if (st->ckpt_stop)
            break;
        st->ckpt_wanted = false;
        pthread_mutex_unlock(&st->ckpt_lock);
        int log = 0, done = 0;
        /* a connection learns that the file is in WAL mode by reading it */
        sqlite3_exec(st->ckpt_db, "SELECT 1 FROM sqlite_schema LIMIT 1", NULL, NULL, NULL);
        int r = sqlite3_wal_checkpoint_v2(st->ckpt_db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
        if (r == SQLITE_OK && done < log && log >= WAL_RESTART_PAGES)
            sqlite3_wal_checkpoint_v2(st->ckpt_db, NULL, SQLITE_CHECKPOINT_RESTART, &log, &done);
        pthread_mutex_lock(&st->ckpt_lock);
    }
    pthread_mutex_unlock(&st->ckpt_lock);
    return NULL;
}

int sqlite_retention_wal_start(store *st)
{
    sqlite3_wal_hook(st->w, wal_hook, st);
    if (sqlite3_open_v2(st->path, &st->ckpt_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        sqlite3_close(st->ckpt_db);
        st->ckpt_db = NULL;
        return -EIO;
    }
    sqlite3_busy_timeout(st->ckpt_db, 5000);
    pthread_mutex_init(&st->ckpt_lock, NULL);
    pthread_cond_init(&st->ckpt_wake, NULL);
    if (thread_start(&st->ckpt, "pacerd-ckpt", checkpointer_main, st) < 0) {
        sqlite3_close(st->ckpt_db);
        st->ckpt_db = NULL;
        return -EIO;
    }
    st->ckpt_running = true;
    return 0;
}

void sqlite_retention_wal_stop(store *st)
{
    if (!st->ckpt_running)
        return;
    pthread_mutex_lock(&st->ckpt_lock);
    st->ckpt_stop = true;
    pthread_cond_signal(&st->ckpt_wake);
    pthread_mutex_unlock(&st->ckpt_lock);
    pthread_join(st->ckpt, NULL);
    sqlite3_close(st->ckpt_db);
    st->ckpt_db = NULL;
    st->ckpt_running = false;
}
