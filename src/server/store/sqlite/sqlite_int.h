/* What the SQLite store's files share beyond store.h.
 *
 *   sqlite_store.c      open, the writer thread, its jobs, the rollup
 *                       groups, the marks of each partition, the
 *                       connections
 *   sqlite_seal.c       rows in the rollups → blocks and the trace index;
 *                       reading blocks back
 *   sqlite_scan.c       the percentile scan, the apps
 *   sqlite_retention.c  dropping old partitions; keeping the WAL small
 *   sqlite_upgrade.c    files of earlier schemas
 *   sqlite_query.c      the read APIs; sqlite_samples.c the samples
 *   sqlite_newest.c     the dashboard's newest rows
 *   sqlite_marks.c      the rows after a mark, for the analysis
 *
 * Partitions: the rows of a UTC day. What a table keeps, and its marks
 * (rowids up to which the rows are somewhere else too):
 *   plain spans, logs, metric points: the rows of day d have rowids in
 *     [part_base(d), part_base(d + 1)), handed out in commit order, so
 *     that a commit appends to the end of each day it touches and a day is
 *     one range of rowids, dropped whole. Per day of plain spans (table
 *     partitions): rolled — the rows up to it are in the rollups, in
 *     spans_keys and span_attrs; sealed — in trace_index (<= rolled);
 *   page loads, start-ups, requests (the record tables): the rows of every
 *     day in commit order, rowids from 1, as they wait to be sealed; once
 *     sealed they live in blocks per app and hour (table blocks) and are
 *     gone from the table. Per table (table_marks): rolled — the rows up
 *     to it are in the rollups; sealed — in blocks and trace_index.
 *     A commit appends to one place whatever the days of its rows.
 * And per day of every table of a rollup kind (partitions.hourly): NULL
 * while the day is hot — the sub-day rollups hold its rows up to rolled;
 * once cold, the rows up to this rowid (those that came while it was hot,
 * and the late ones of the day up to the sealed mark when it last
 * settled: sqlite_scan_settle).
  */
#ifndef PACER_SERVER_STORE_INT_H
#define PACER_SERVER_STORE_INT_H

#include "store/store.h"
#include "store/store_backend.h"
#include "store/store_dash.h"
#include "sqlite_store.h"
#include "store/block.h"
#include "store/store_codec.h"
#include "store/health.h"

#include <pthread.h>
#include <sqlite3.h>

#define PART_SHIFT 40
/* The first rowid of day d's range, less one: the mark that holds no row. */
static inline int64_t part_base(int64_t day)
{
    return (day + 1) * ((int64_t)1 << PART_SHIFT);
}

static inline int64_t day_of_ts(int64_t ts_ns)
{
    return ts_ns < 0 ? 0 : ts_ns / STORE_DAY_NS;
}

/* A table whose rows wait in commit order to be sealed into blocks. */
static inline bool store_is_record(enum store_table t)
{
    return t == TABLE_PAGE_LOADS || t == TABLE_STARTUPS || t == TABLE_REQUESTS;
}

/* Sub-day rollups: their bucket widths in seconds, coarsest first. A range
 * that cuts a day reads the buckets it holds whole, then the raw rows of
 * what is left (less than the finest width at each end). */
#define SUBDAY_LEVELS 3
extern const int64_t sqlite_store_subday_width_s[SUBDAY_LEVELS];

/* The sub-day levels of a day: 6 h and 1 h, and 10 min when the day is
 * `fine` (partitions.fine: the day before it was busy). */
static inline int store_part_levels(bool fine)
{
    return fine ? 3 : 2;
}
#define DAY_WIDTH_S 86400

/* A (table, day) as the writer knows it. */
typedef struct part {
    struct part *next;         /* in its hash bucket */
    struct part *touched_next; /* on the list of plain spans' parts with rows after rolled */
    enum store_table table;
    int64_t day;
    int64_t last;   /* the last rowid handed out to the day */
    int64_t rolled, sealed; /* plain spans, as committed */
    int64_t hourly; /* as committed: -1 for NULL */
    bool fine;      /* with ten-minute rollups (partitions.fine) */
    int64_t rows;   /* rows stored for the day (partitions.rows; in the rollups: as of the last flush) */
    int64_t late;   /* a cold day of a record table: its rows after hourly, about (sqlite_scan_settle) */
    bool touched;
} part;

/* The marks of a record table (sqlite_int.h, "partitions"). */
typedef struct table_marks {
    int64_t last, rolled, sealed;
} table_marks;

#define PART_BUCKETS 1024

typedef struct group group;

enum job_type { JOB_RECORDS, JOB_CONFIG, JOB_CALL };

typedef struct job {
    struct job *next;
    enum job_type type;
    const store_batch *b; /* JOB_RECORDS */
    size_t n;             /* its records, for the queue's bound */
    const char *app, *xml; /* JOB_CONFIG */
    size_t xml_len;
    int64_t version;
    int (*fn)(void *ctx, sqlite3 *db); /* JOB_CALL */
    void *fn_ctx;
    int fn_result;
    int result;
    bool duplicate, done;
} job;

enum stmt_id { ST_TM_SAVE, ST_BEGIN, ST_COMMIT, ST_ROLLBACK, ST_BATCH, ST_PROBE, ST_CONFIG_PUT, ST_CONFIG_VERSION,
               ST_LOAD_COUNT, ST_LOAD_SKETCH, ST_SAVE_COUNT, ST_SAVE_SKETCH, ST_LOAD_SUB, ST_SAVE_SUB,
               ST_PART_LOAD, ST_PART_ADD, ST_DAY_ROWS, ST_PART_ROWS, ST_PART_ROLLED, ST_PART_SEALED, ST_PART_FREEZE, ST_PART_FREEZE_AT, ST_PART_HOURLY, ST_BLOCK_ADD,
               ST_TRACE_ADD, ST_TRACE_RUN, ST_META_SET, ST_ARRIVAL_ADD, ST_TALLY_ADD, ST_COUNT };

#define GROUP_BUCKETS 8192

struct store {
    const store_backend *backend; /* first: store.c dispatches through it (store_backend.h) */
    char *path;
    sqlite3 *w;
    sqlite3_stmt *st[ST_COUNT];
    sqlite3_stmt *insert[TABLE_COUNT];
    sqlite3_stmt *last_rowid[TABLE_COUNT]; /* the largest rowid of a day's range */
    sqlite3_stmt *fill_keys, *fill_attrs;  /* spans_keys, span_attrs from a range of spans */
    sqlite3_stmt *origin_find[2], *origin_add[2]; /* resources, scopes */
    struct {
        uint64_t hash;
        int64_t id;
    } origin_cache[2][1024]; /* hash → id, of committed rows */
    int origin_col[TABLE_COUNT][2]; /* the resource_id, scope_id column of each table, or -1 */
    int ts_col[TABLE_COUNT];        /* the ts column of each table */
    int64_t layout_id[TABLE_COUNT]; /* block_layouts.id of the record tables' columns */
    int64_t metric_id[KIND_COUNT][STORE_MAX_METRICS]; /* subday_metrics.id of each kind's metrics */
    int64_t retention_days, rollup_retention_days;
    pthread_t writer;
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    job *head, *tail;
    size_t queued_items, max_queued;
    bool stopping;
    /* the tallies (store.h) of every app, by reason, as committed: /metrics
     * reads them without a query */
    pthread_mutex_t tlock;
    struct tally_total {
        char reason[48];
        uint64_t count;
    } totals[32];
    size_t n_totals;
    /* positions (sqlite_int.h, "positions"): the last handed out, as
     * committed after each transaction, and the transaction's open run */
    int64_t pos[TABLE_COUNT];
    struct pos_run {
        int64_t pos, n, off;
    } run[TABLE_COUNT];
    /* rollup groups (sqlite_store.c) */
    group *groups[GROUP_BUCKETS];
    size_t n_groups;
    group *dirty;
    /* partitions (sqlite_store.c) */
    table_marks tm[TABLE_COUNT]; /* of the record tables */
    part *parts[PART_BUCKETS];
    size_t n_parts;
    part *touched;
    int64_t hot_day;   /* days from this one on are hot (meta 'hot_day'); moved on by the job of a newer row */
    int64_t newest_ts; /* the latest row time seen, at most a little ahead of the clock */
    size_t lag_rows;   /* rows after the rolled marks */
    size_t seal_rows;  /* rows between sealed and rolled marks */
    size_t seal_at;    /* seal when this many wait (store_options.seal_rows) */
    size_t settle_at;  /* a cold day's late rows that make it settle: seal_at / 2 */
    size_t fine_at;    /* a day this busy gives the next ten-minute rollups (store_options.fine_day_rows) */
    int64_t lag_ns;
    int64_t lag_since_ns; /* when (mono_ns) the oldest row not in the rollups was committed; 0: none */
    bool need_replay;     /* the groups and parts in memory are lost: rebuild them before the next job */
    int64_t trace_run;    /* trace_index.b of the last run */
    /* what the running seal did, for sqlite_seal_done after its COMMIT */
    struct seal_mark {
        enum store_table table;
        int64_t day, sealed; /* day -1: a record table's mark */
    } *seal_marks;
    size_t n_seal_marks, cap_seal_marks, seal_count;
    bool seal_run_used;
    /* retention (sqlite_retention.c) */
    int64_t retention_checked_ns; /* mono: when the horizon was last looked at */
    bool retention_due;           /* there is something older than the horizons to drop */
    /* health (store_health_get): a probe row is committed when asked */
    health_state health;
    bool probe_wanted;
    uint64_t probe_gen; /* probes done */
    pthread_cond_t probed;
    int64_t txn_since_ns; /* mono: when the writer's running transaction began; 0: none */
    /* the WAL: a checkpointer thread copies it back when it grows (sqlite_retention.c) */
    int wal_frames; /* after the writer's last commit (atomic) */
    int page_bytes; /* the database's page size */
    pthread_t ckpt;
    sqlite3 *ckpt_db;
    pthread_mutex_t ckpt_lock;
    pthread_cond_t ckpt_wake;
    bool ckpt_wanted, ckpt_stop, ckpt_running;
    /* readers */
    pthread_mutex_t rlock;
    pthread_cond_t rfree;
    sqlite3 **readers;
    size_t n_readers, n_free;
    sqlite3 **free_readers;
};

/* ---- connections (sqlite_store.c) ---- */

/* A read-only connection of the pool, waiting for a free one; give it back
 * with sqlite_store_reader_put. Any thread. */
sqlite3 *sqlite_store_reader_get(store *st);
void sqlite_store_reader_put(store *st, sqlite3 *db);

/* SQL functions of the store, on every connection:
 * pacer_attr_hash(KEYVALUE_JSON) → store_attrs_hash of it, or NULL for a
 * value that is not a string, integer, double or bool; pacer_trace_key. */
int sqlite_query_register_functions(sqlite3 *db);

/* trace_index's key of a trace: its first 4 bytes, as a non-negative
 * integer (pacer_trace_key(BLOB) in SQL). The row's own trace id tells
 * the few that share a key apart. */
int64_t sqlite_query_trace_key(const uint8_t *trace_id, size_t n);

/* The failure that db saw last, classed (health.h). */
void sqlite_store_error_capture(sqlite3 *db, store_error *ret);
/* What a read that returned r found: a block that does not decode
 * (-EBADMSG) is corruption as much as a page SQLite cannot read. */
void sqlite_store_read_error(sqlite3 *db, int r, store_error *ret);

/* Text of one statement (the caller frees it), or NULL when out of memory. */
char *sqlite_store_sql(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Runs sql (and frees it); SQLITE_NOMEM for NULL. */
int sqlite_store_exec_owned(sqlite3 *db, char *sql, char **msg);

/* Steps a statement that returns no row, resets it and clears its
 * bindings. 0 or -EIO. */
int sqlite_store_step_done(sqlite3_stmt *s);

/* The SELECT of a kind's raw rows: name, failed, excluded, the n metrics,
 * then ts, version ('' for none), app, rowid; `where` follows FROM. */
char *sqlite_store_raw_select(enum store_kind kind, const char *where);

/* A column of the current row of s as a store_value (texts and blobs
 * borrowed from s until its next step). */
store_value sqlite_store_column_value(sqlite3_stmt *s, int c);

/* ---- the partitions of a table, as a reader sees them ---- */

typedef struct part_marks {
    int64_t day, rolled, sealed, hourly; /* hourly: -1 for NULL (hot) */
    bool fine;                           /* with ten-minute rollups */
    int64_t last;                        /* a record table's day: its last row as of the last flush */
} part_marks;

/* The partitions of table t with day in [d_lo, d_hi], ascending (newest
 * first when desc), into a malloc'd array; for a record table, rolled and
 * sealed are the table's. 0 or -EIO / -ENOMEM. */
int sqlite_store_parts_read(sqlite3 *db, enum store_table t, int64_t d_lo, int64_t d_hi, bool desc, part_marks **ret,
                     size_t *ret_n);

/* ---- the writer's steps (sqlite_store.c, sqlite_seal.c, sqlite_retention.c) ---- */

/* Moves the rows of every record table between the sealed and rolled
 * marks into blocks, and indexes their traces and those of plain spans,
 * in the writer's open transaction. After its COMMIT: sqlite_seal_done. */
int sqlite_seal(store *st);
void sqlite_seal_done(store *st);

/* Keeps the parts of days before the retention horizon and the rollups
 * before the rollup horizon shrinking: one bounded step (its own
 * transaction) when anything is due. Writer thread, outside a
 * transaction. 0 or -EIO. */
int sqlite_retention_step(store *st);

/* How often the retention horizons are looked at when nothing is due. */
#define RETENTION_CHECK_NS (60LL * 1000000000LL)

/* Wakes the checkpointer when the WAL has grown past its bound (writer
 * thread, after a commit). */
void sqlite_retention_wal_check(store *st);
/* Starts and stops the checkpointer thread (store_open, store_close). */
int sqlite_retention_wal_start(store *st);
void sqlite_retention_wal_stop(store *st);

/* The part of (t, day) in memory, loaded or added (with its row in
 * partitions) when needed; NULL on failure. Writer thread, in a
 * transaction. */
part *sqlite_store_part_get(store *st, enum store_table t, int64_t day);
/* The part of (t, day) when in memory, else NULL. */
part *sqlite_store_part_find(store *st, enum store_table t, int64_t day);
/* Forgets the parts in memory (they are loaded again from the file). */
void sqlite_store_parts_drop(store *st);

/* ---- blocks, as readers see them (sqlite_seal.c) ---- */

/* The rows of the blocks of table t, app (NULL: any), day, that overlap
 * [from, to) of their time (ts) — each block whole: the caller filters —
 * and, when min_rowid >= 0, hold a row after min_rowid. rows[c][i] is
 * column c of row i, in the table's layout order (store_layout_columns),
 * rowids[i] its rowid; all borrowed until fn returns. fn returns 0 to go
 * on, anything else stops and is returned. */
typedef int (*block_rows_fn)(void *ctx, size_t n, const store_value *const *rows, const int64_t *rowids,
                             const char *app);
/* A cold day of a record table settles: its rows after the hourly mark,
 * up to the table's sealed mark (all of them in blocks), are added to the
 * sub-day groups, and the mark moves there (partitions.hourly, in the
 * writer's transaction; the groups are written by the flush that called
 * it); their blocks are merged (sqlite_seal_blocks_merge). A day that has become
 * busy since it was made (store_options.fine_day_rows: records that came
 * in no order of time, the day made before its records) gets its
 * ten-minute rollups then, from all its blocks, once. Writer thread; 0 or
 * -EIO, -EBADMSG, -ENOMEM. */
int sqlite_scan_settle(store *st, part *p);
/* The blocks of (t, day) that hold rows after rowid `after` (a cold day's
 * late ones: small, a seal's share of each hour) merged into blocks of one
 * app and hour, sorted, of up to 1 024 rows; left as they are when that
 * would not make fewer, or holds too many rows at once. In the writer's
 * transaction; 0 or -EIO, -EBADMSG, -ENOMEM. */
int sqlite_seal_blocks_merge(store *st, enum store_table t, int64_t day, int64_t after);

int sqlite_seal_blocks_read(sqlite3 *db, enum store_table t, const char *app, int64_t day, int64_t from, int64_t to,
                      int64_t min_rowid, const bool *want_cols, block_rows_fn fn, void *ctx);

/* The statement of a record table's rows not sealed yet, of one app and
 * part of a day: a rowid range (at most a seal and a rollup batch of
 * rows), the rest filtered. ?1 the rowid after which to look, ?2 app, ?3
 * from, ?4 to. sqlite3_free it. */
char *sqlite_seal_unsealed_sql(enum store_table t);
/* The partitions of record table t with day in [d_lo, d_hi], newest
 * first (sqlite_store_parts_read), and the statement of their rows not sealed
 * (sqlite_seal_unsealed_sql), for sqlite_seal_day_rows: 0 or -EIO, -ENOMEM; the caller
 * frees *ret and finalizes *ret_unsealed. */
int sqlite_seal_days_open(sqlite3 *db, enum store_table t, int64_t d_lo, int64_t d_hi, part_marks **ret, size_t *ret_n,
                    sqlite3_stmt **ret_unsealed);
/* The rows of record table t of app and of the day of p with ts in [lo,
 * hi): the day's blocks that overlap it (each whole: the caller filters),
 * then its rows not sealed yet (those up to its last row as of the last
 * flush, and any after the rolled mark), one by one; to fn as
 * sqlite_seal_blocks_read gives them. unsealed: sqlite_seal_unsealed_sql's statement.
 * 0, or what fn returned, or -EIO. */
int sqlite_seal_day_rows(sqlite3 *db, sqlite3_stmt *unsealed, enum store_table t, const char *app, const part_marks *p,
                   int64_t lo, int64_t hi, const bool *want, block_rows_fn fn, void *ctx);

/* The blocks of record table t that hold rows with rowid in (after, upto]
 * — each block whole, its rows in no order of rowid: the caller filters
 * and sorts — through the index blocks_rows. As sqlite_seal_blocks_read. */
#define STORE_BLOCKS_ROWIDS_SQL \
    "SELECT layout, data, app FROM blocks WHERE tbl = ?1 AND r_hi > ?2 AND r_lo <= ?3"
int sqlite_seal_blocks_rowids(sqlite3 *db, enum store_table t, int64_t after, int64_t upto, const bool *want_cols,
                        block_rows_fn fn, void *ctx);

/* ---- positions: the commit order of logs and metric points ----
 *
 * The rows of logs and metric points are kept in the rowid range of
 * their day, so that a day is dropped whole; rowid order is not the order
 * they came in. Each row is also given a position, 1, 2, 3… in commit
 * order per table, written as runs (table arrivals): positions (pos - n,
 * pos] are the rows at rowid position + off, one run per day a commit
 * adds to (a run per row only when a commit's rows alternate days). What
 * reads "the rows that came after" (the application layer,
 * sqlite_marks.c) reads runs of positions; a run stays until the
 * reader forgets it (store_marks_forget), and means nothing once its day is
 * dropped. */
static inline bool store_has_positions(enum store_table t)
{
    return t == TABLE_LOGS || t == TABLE_METRIC_POINTS;
}
#define STORE_ARRIVALS_SQL "SELECT pos, n, off FROM arrivals WHERE tbl = ?1 AND pos > ?2 ORDER BY pos"

/* The backend's operations (store_backend.h), where sqlite_store.c does
 * not keep them: its scan in sqlite_scan.c, its read APIs in
 * sqlite_query.c, sqlite_samples.c and sqlite_newest.c. */
extern const store_backend sqlite_store_backend;
store_newest_fn sqlite_newest;              /* sqlite_newest.c */
store_explain_fn sqlite_newest_explain;
store_trace_fn sqlite_query_trace;          /* sqlite_query.c */
store_search_spans_fn sqlite_query_search_spans;
store_search_logs_fn sqlite_query_search_logs;
store_search_points_fn sqlite_query_search_points;
store_explain_fn sqlite_query_explain;
store_version_rows_fn sqlite_samples_version_rows; /* sqlite_samples.c */
store_scan_fn sqlite_scan;            /* sqlite_scan.c */
store_apps_fn sqlite_scan_apps;
/* the rows after a mark (sqlite_marks.c): rowids of the record tables,
 * positions of logs and metric points */
store_marks_last_fn sqlite_marks_last;
store_marks_step_fn sqlite_marks_step;
store_marks_behind_fn sqlite_marks_behind;
store_rows_after_fn sqlite_marks_rows;
store_marks_forget_fn sqlite_marks_forget;

/* ---- upgrade (sqlite_upgrade.c) ---- */

/* A file of schema 1 or 2 becomes one of schema 3 (partitions, blocks), in
 * two halves: sqlite_upgrade_begin, before the writer's statements are
 * prepared, drops what schema 3 makes anew and creates its tables;
 * sqlite_upgrade_finish then moves the rows into the partitions of their
 * days and builds what goes with them. Either may have been cut short (a
 * SIGKILL): the next open goes on. The writer's connection, nothing else
 * open. 0, or -EIO with a message in *msg (sqlite3_free it). */
int sqlite_upgrade_begin(store *st, char **msg);
int sqlite_upgrade_finish(store *st, char **msg);

/* Adds a row to the rollup groups: its day's when daily, its buckets of
 * the first `subday` sub-day levels (sqlite_store.c). 0 or -EIO. Writer
 * thread. */
int sqlite_store_rollup_row(store *st, enum store_kind kind, const char *app, const char *version, const char *name,
                     int64_t ts, bool daily, int subday, bool failed, bool excluded, const double *metrics);
/* The same, into the sub-day levels [from, to) only. */
int sqlite_store_rollup_levels(store *st, enum store_kind kind, const char *app, const char *version, const char *name,
                        int64_t ts, int from, int to, bool failed, bool excluded, const double *metrics);
/* Writes the dirty groups, in the writer's transaction; after its
 * COMMIT, sqlite_store_groups_written. */
int sqlite_store_groups_write(store *st);
void sqlite_store_groups_written(store *st);

/* Creates the tables of schema 3 that are missing (sqlite_store.c). */
int sqlite_store_schema_create(sqlite3 *db, char **msg);

#endif
