/* SQLite storage (store.h): the writer, the rollups, the partitions.
 *
 * Writer thread states, per group of jobs:
 *   take the queue → BEGIN → [advance the hot day] → run each job (records
 *   / probe / config / call; rows appended, groups in memory updated) →
 *   [rollup flush [→ seal]] → COMMIT → [the tallies' totals] →
 *   wake the submitters → [WAL check] → [a retention step, when one is
 *   due] (sqlite_retention.c).
 * A batch's tallies (store.h) are added to clean_counts with its records;
 * a call job (sqlite_store_write) runs its function in a savepoint of its
 * own.
 * Rollup flush, when LAG_ROWS rows wait, the oldest has waited
 * rollup_lag_ms (also without traffic) or the writer stops: move the
 * rolled marks to the last rows (each record table's, each touched day of
 * plain spans, filling spans_keys and span_attrs up to it) and write the
 * dirty groups — in the transaction of the jobs. Seal, when seal_at rows
 * lie between the sealed and rolled marks: those rows become blocks
 * (record tables) and trace_index chunks (sqlite_seal.c). Any failure
 * between BEGIN and COMMIT: ROLLBACK, drop the groups and the parts in
 * memory (they may hold rows that were not committed), fail every job of
 * the group, and rebuild them from the file before the next job
 * (groups_replay).
 *
 * Invariants (the marks: sqlite_int.h, "partitions"):
 *  1. Rowids grow with commit order: a record table's over all its rows
 *     (which it keeps only after its sealed mark, the rest being in
 *     blocks); the other tables' within the range of each day (part_base).
 *  2. rollup_counts and rollup_sketches hold exactly the rows up to the
 *     rolled marks; the sub-day rollups those of each day up to rolled
 *     while it is hot, up to its hourly mark once it is cold; spans_keys
 *     and span_attrs the plain spans up to rolled — each changes in the
 *     transaction that moves the mark.
 *  3. The groups in memory hold the rollups plus every row after the
 *     rolled marks; on open (e.g. after a SIGKILL) they are rebuilt from
 *     the file: rollups + those rows, each into the sub-day groups when
 *     its day is hot or its rowid at most the day's hourly mark.
 * A query (sqlite_scan.c) reads, in one snapshot: the whole days from the
 * daily rollups, the whole sub-day buckets of a cut day from the sub-day
 * rollups, the rest of a cut day from blocks and the tables, and the rows
 * after the rolled marks from the tables (rowid ranges: at most ~LAG_ROWS
 * rows plus one group).
 *
 * Hot and cold days. A row adds to the sub-day rollups when its day is
 * hot: the day of the newest row seen (at most an hour ahead of the
 * clock). When a job brings a newer day, the days before it are frozen at
 * their last row first (advance_hot). Late rows (a spool sent days later,
 * a bulk import) add to the daily rollups only, so that a batch spread
 * over a month does not rewrite every hourly rollup of the month; a range
 * that cuts such a day reads its late rows from the blocks.
 *
 * Why: every commit appends rows to one place per record table and to the
 * end of each day of the others, and changes nothing else; the rollups
 * and the plain spans' keys follow in batches of ~32 000 rows, each group
 * and each index page written once per batch; the record rows move into
 * blocks of ~60 bytes a row, sorted by time per app and day, which a range
 * reads without an index of its own.
 *
 * SQL text. The raw tables' columns, the kinds' names, metrics and group
 * names come from the layout (store.h, "the rows"; store_layout.c): every
 * statement that names them is made from it once, at open, or per query
 * from the same pieces. Values are always bound.
 */
#include "store/store.h"
#include "store/store_backend.h"
#include "store/health.h"
#include "sqlite_int.h"

#include <pacer/base/array.h>
#include <pacer/base/clock.h>
#include <pacer/base/hash.h>
#include <pacer/base/thread.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

const int64_t sqlite_store_subday_width_s[SUBDAY_LEVELS] = {21600, 3600, 600};

/* The server's own tables; the raw tables are made from the layout
 * (sqlite_store_schema_create). */
static const char FIXED_SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS batches(app TEXT NOT NULL, id TEXT NOT NULL, endpoint TEXT, received_ns INTEGER,"
    "  items INTEGER, rejected INTEGER, PRIMARY KEY(app, id)) WITHOUT ROWID;"
    /* the tallies of the batches (store.h), per (app, reason): ingest's
     * cleaning counts */
    "CREATE TABLE IF NOT EXISTS clean_counts(app TEXT NOT NULL, reason TEXT NOT NULL, count INTEGER NOT NULL,"
    "  last_ns INTEGER, PRIMARY KEY(app, reason)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS rollup_counts(kind TEXT NOT NULL, app TEXT NOT NULL, version TEXT NOT NULL,"
    "  name TEXT NOT NULL, day INTEGER NOT NULL, count INTEGER NOT NULL, failed INTEGER NOT NULL,"
    "  PRIMARY KEY(kind, app, version, name, day)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS rollup_sketches(kind TEXT NOT NULL, app TEXT NOT NULL, version TEXT NOT NULL,"
    "  name TEXT NOT NULL, metric TEXT NOT NULL, day INTEGER NOT NULL, sketch BLOB NOT NULL,"
    "  PRIMARY KEY(kind, app, version, name, metric, day)) WITHOUT ROWID;"
    /* the same per sub-day bucket (t = start (unix s) / width (s)), in one
     * row: the sketches of the group's metrics in one value (store_codec.h),
     * each under the id subday_metrics gives it */
    "CREATE TABLE IF NOT EXISTS subday(kind TEXT NOT NULL, app TEXT NOT NULL, width INTEGER NOT NULL,"
    "  t INTEGER NOT NULL, version TEXT NOT NULL, name TEXT NOT NULL, count INTEGER NOT NULL, failed INTEGER NOT NULL,"
    "  sketches BLOB, PRIMARY KEY(kind, app, width, t, version, name)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS subday_metrics(kind TEXT NOT NULL, id INTEGER NOT NULL, metric TEXT NOT NULL,"
    "  PRIMARY KEY(kind, id)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS configs(app TEXT NOT NULL, version INTEGER NOT NULL, etag TEXT NOT NULL,"
    "  xml TEXT NOT NULL, created_ns INTEGER, PRIMARY KEY(app, version)) WITHOUT ROWID;"
    /* the marks of the record tables and of each (table, day) of the
     * rollup kinds (sqlite_int.h) */
    "CREATE TABLE IF NOT EXISTS table_marks(tbl INTEGER PRIMARY KEY, rolled INTEGER NOT NULL, sealed INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS partitions(tbl INTEGER NOT NULL, day INTEGER NOT NULL, rolled INTEGER NOT NULL,"
    "  sealed INTEGER NOT NULL, hourly INTEGER, fine INTEGER NOT NULL DEFAULT 0, rows INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY(tbl, day)) WITHOUT ROWID;"
    /* rows of a record table, one app and day, as a block (block.h);
     * r_lo, r_hi: the lowest and highest rowid in it; layout names the
     * columns (block_layouts), so that a file keeps reading its blocks
     * after the schema gained a column */
    "CREATE TABLE IF NOT EXISTS blocks(id INTEGER PRIMARY KEY, tbl INTEGER NOT NULL, day INTEGER NOT NULL,"
    "  app TEXT NOT NULL, t_lo INTEGER NOT NULL, t_hi INTEGER NOT NULL, r_lo INTEGER NOT NULL, r_hi INTEGER NOT NULL,"
    "  n INTEGER NOT NULL, layout INTEGER NOT NULL, data BLOB NOT NULL);"
    /* which blocks a range needs, decided in the index alone */
    "CREATE INDEX IF NOT EXISTS blocks_at ON blocks(tbl, day, app, t_lo, t_hi, r_hi);"
    /* which blocks hold a range of rowids (the application layer reads the
     * rows that came after its marks, sqlite_int.h) */
    "CREATE INDEX IF NOT EXISTS blocks_rows ON blocks(tbl, r_hi, r_lo);"
    /* logs and metric points in commit order (sqlite_int.h, "positions") */
    "CREATE TABLE IF NOT EXISTS arrivals(tbl INTEGER NOT NULL, pos INTEGER NOT NULL, n INTEGER NOT NULL,"
    "  off INTEGER NOT NULL, PRIMARY KEY(tbl, pos)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS block_layouts(id INTEGER PRIMARY KEY, tbl INTEGER NOT NULL, columns TEXT NOT NULL);"
    /* each distinct resource and scope once (OTLP JSON); rows name them by id */
    "CREATE TABLE IF NOT EXISTS resources(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL, json TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS resources_hash ON resources(hash);"
    "CREATE TABLE IF NOT EXISTS scopes(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL, json TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS scopes_hash ON scopes(hash);"
    /* per sealed span row: its trace (t: the trace id's first 4 bytes,
     * pacer_trace_key), its table (enum store_table) and rid: a plain
     * span's rowid, a record's start time, which finds its block. One run
     * per seal (b), its entries sorted by t in chunks of ~256 (t_lo: the
     * first t of a chunk; a t is never split between two), so that a seal
     * writes a few rows, and a lookup reads one chunk per run
     * (sqlite_seal.c: the chunks' format) */
    "CREATE TABLE IF NOT EXISTS trace_index(id INTEGER PRIMARY KEY, b INTEGER NOT NULL, t_lo INTEGER NOT NULL,"
    "  data BLOB NOT NULL);"
    "CREATE INDEX IF NOT EXISTS trace_index_at ON trace_index(b, t_lo);"
    /* the newest day each run names: retention drops a run once it is gone */
    "CREATE TABLE IF NOT EXISTS trace_runs(b INTEGER PRIMARY KEY, day_hi INTEGER NOT NULL);"
    /* plain spans up to the rolled marks: by time, by name (span search) */
    "CREATE TABLE IF NOT EXISTS spans_keys(app TEXT NOT NULL, ts INTEGER NOT NULL, rid INTEGER NOT NULL,"
    "  version TEXT, name TEXT NOT NULL, failed INTEGER, m0 REAL, PRIMARY KEY(app, ts, rid)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS spans_keys_name ON spans_keys(app, name, ts);"
    /* per attribute of a plain span up to the rolled mark: store_attrs_hash(key, value) */
    "CREATE TABLE IF NOT EXISTS span_attrs(app TEXT NOT NULL, day INTEGER NOT NULL, h INTEGER NOT NULL,"
    "  ts INTEGER NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY(app, day, h, ts, rid)) WITHOUT ROWID;";

/* ---- SQL helpers ---- */

char *sqlite_store_sql(const char *fmt, ...)
{
    char *s;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}

int sqlite_store_exec_owned(sqlite3 *db, char *sql, char **msg)
{
    if (!sql)
        return SQLITE_NOMEM;
    int r = sqlite3_exec(db, sql, NULL, NULL, msg);
    free(sql);
    return r;
}

int sqlite_store_step_done(sqlite3_stmt *s)
{
    int r = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

store_value sqlite_store_column_value(sqlite3_stmt *s, int c)
{
    switch (sqlite3_column_type(s, c)) {
    case SQLITE_INTEGER: return (store_value){.type = SV_INT, .i = sqlite3_column_int64(s, c)};
    case SQLITE_FLOAT: return (store_value){.type = SV_REAL, .d = sqlite3_column_double(s, c)};
    case SQLITE_TEXT: {
        const void *p = sqlite3_column_text(s, c);
        return (store_value){.type = SV_TEXT, .p = p, .n = (size_t)sqlite3_column_bytes(s, c)};
    }
    case SQLITE_BLOB: {
        const void *p = sqlite3_column_blob(s, c);
        return (store_value){.type = SV_BLOB, .p = p ? p : "", .n = (size_t)sqlite3_column_bytes(s, c)};
    }
    default: return (store_value){.type = SV_NULL};
    }
}

static void bind_text(sqlite3_stmt *s, int i, const char *t)
{
    if (t)
        sqlite3_bind_text(s, i, t, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

void sqlite_store_error_capture(sqlite3 *db, store_error *ret)
{
    int code = db ? sqlite3_extended_errcode(db) : SQLITE_OK;
    ret->sys = db ? sqlite3_system_errno(db) : 0;
    switch (code & 0xff) {
    case SQLITE_OK: ret->kind = STORE_ERR_MEMORY; break; /* not SQLite's: pacerd's own allocation failed */
    case SQLITE_FULL: ret->kind = STORE_ERR_FULL; break;
    case SQLITE_READONLY: ret->kind = STORE_ERR_READ_ONLY; break;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: ret->kind = STORE_ERR_CORRUPT; break;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN: ret->kind = STORE_ERR_FILE; break;
    default: ret->kind = STORE_ERR_OTHER; break;
    }
    snprintf(ret->msg, sizeof ret->msg, "%s", code != SQLITE_OK ? sqlite3_errmsg(db) : "");
}

void sqlite_store_read_error(sqlite3 *db, int r, store_error *ret)
{
    if (r == -EBADMSG) {
        *ret = (store_error){.kind = STORE_ERR_CORRUPT};
        snprintf(ret->msg, sizeof ret->msg, "database disk image is malformed (a block of rows does not decode)");
        return;
    }
    sqlite_store_error_capture(db, ret);
}

/* ---- schema ---- */

/* A raw table: its columns from the layout; the generic ones without
 * rollups also an index on (app, ts). */
static char *table_sql(enum store_table tb)
{
    const store_table_desc *t = store_layout_table(tb);
    char cols[2048] = "";
    size_t o = 0;
    for (size_t i = 0; i < t->n_cols && o < sizeof cols; i++)
        o += (size_t)snprintf(cols + o, sizeof cols - o, "%s%s %s", i ? ", " : "", t->cols[i].name, t->cols[i].decl);
    if (o >= sizeof cols)
        return NULL;
    if (t->kind == KIND_NONE) /* metric points: also by name (the metric query) */
        return sqlite_store_sql("CREATE TABLE IF NOT EXISTS %s(%s);"
                         "CREATE INDEX IF NOT EXISTS %s_app_ts ON %s(app, ts);%s",
                         t->name, cols, t->name, t->name,
                         tb == TABLE_METRIC_POINTS
                             ? "CREATE INDEX IF NOT EXISTS metric_points_name ON metric_points(app, name, ts);"
                             : "");
    return sqlite_store_sql("CREATE TABLE IF NOT EXISTS %s(%s);", t->name, cols);
}

/* Adds to table t of a file made by an earlier pacerd the columns its layout
 * has and the file lacks: a field added to the record schema with a store
 * column. The rows already there hold NULL in it, so a NOT NULL of the
 * layout is not carried over. */
static int add_missing_columns(sqlite3 *db, enum store_table tb, char **msg)
{
    const store_table_desc *t = store_layout_table(tb);
    char *sql = sqlite_store_sql("SELECT name FROM pragma_table_info('%s')", t->name);
    sqlite3_stmt *s = NULL;
    int r = sql ? sqlite3_prepare_v2(db, sql, -1, &s, NULL) : SQLITE_NOMEM;
    free(sql);
    bool have[STORE_MAX_COLS] = {false};
    if (r == SQLITE_OK)
        while ((r = sqlite3_step(s)) == SQLITE_ROW)
            for (size_t c = 0; c < t->n_cols; c++)
                if (strcmp((const char *)sqlite3_column_text(s, 0), t->cols[c].name) == 0)
                    have[c] = true;
    sqlite3_finalize(s);
    if (r != SQLITE_DONE)
        return r;
    r = SQLITE_OK;
    for (size_t c = 0; c < t->n_cols && r == SQLITE_OK; c++) {
        if (have[c])
            continue;
        char decl[64];
        snprintf(decl, sizeof decl, "%s", t->cols[c].decl);
        char *nn = strstr(decl, " NOT NULL");
        if (nn)
            *nn = '\0';
        r = sqlite_store_exec_owned(db, sqlite_store_sql("ALTER TABLE %s ADD COLUMN %s %s", t->name, t->cols[c].name, decl), msg);
    }
    return r;
}

int sqlite_store_schema_create(sqlite3 *db, char **msg)
{
    int r = sqlite3_exec(db, FIXED_SCHEMA, NULL, NULL, msg);
    for (enum store_table t = 0; t < TABLE_COUNT && r == SQLITE_OK; t++) {
        r = sqlite_store_exec_owned(db, table_sql(t), msg);
        if (r == SQLITE_OK)
            r = add_missing_columns(db, t, msg);
    }
    return r;
}

/* The schema of the file: 0 for a new one, else meta 'schema'. */
static int file_schema(sqlite3 *db, int *ret)
{
    *ret = 0;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_schema WHERE name = 'meta'", -1, &s, NULL) != SQLITE_OK)
        return SQLITE_ERROR;
    bool have_meta = sqlite3_step(s) == SQLITE_ROW;
    sqlite3_finalize(s);
    if (!have_meta) {
        /* a file with raw tables but no meta is of the first schema */
        if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_schema WHERE name = 'page_loads'", -1, &s, NULL) != SQLITE_OK)
            return SQLITE_ERROR;
        *ret = sqlite3_step(s) == SQLITE_ROW ? 1 : 0;
        sqlite3_finalize(s);
        return SQLITE_OK;
    }
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema'", -1, &s, NULL) != SQLITE_OK)
        return SQLITE_ERROR;
    if (sqlite3_step(s) == SQLITE_ROW)
        *ret = atoi((const char *)sqlite3_column_text(s, 0));
    else
        *ret = 1;
    sqlite3_finalize(s);
    return SQLITE_OK;
}

/* ---- rollup groups (writer thread only) ---- */

#define GROUP_LIMIT 5000 /* clean groups kept in memory after a rollup flush */
/* Groups in memory at most: past this (records of very many days, or
 * names, in one group of jobs) the writer flushes in the middle of the
 * group, so that memory stays bounded whatever a client sends. */
#define GROUP_HARD_LIMIT 40000
/* Rollup lag: the dirty groups are written when this many rows wait, or
 * when the oldest has waited store_options.rollup_lag_ms (the writer wakes
 * for that even when no request comes). */
#define LAG_ROWS 32768
/* A day of a table gets ten-minute rollups when the day before held this
 * many records or more (unless store_options.fine_day_rows says otherwise):
 * below it, what a range cuts from an hour is a few
 * thousand records at most, and the buckets would cost more bytes than the
 * records. */
#define FINE_DAY_ROWS 500000

/* Rows between the sealed and rolled marks before they are sealed, unless
 * store_options.seal_rows says otherwise. */
#define SEAL_ROWS 32768

/* A rollup group: (kind, app, version, name) over one day (width
 * DAY_WIDTH_S, t the day) or one sub-day bucket (t = start s / width). */
struct group {
    struct group *next, *dirty_next;
    enum store_kind kind;
    char *app, *version, *name;
    int64_t width, t;
    uint64_t hash;
    uint64_t count, failed;
    bool dirty;
    sketch m[STORE_MAX_METRICS];
};

static uint64_t group_hash(enum store_kind kind, const char *app, const char *version, const char *name, int64_t width,
                           int64_t t)
{
    uint64_t h = FNV1A64_INIT;
    h = fnv1a64(h, &kind, sizeof kind);
    h = fnv1a64(h, app, strlen(app) + 1);
    h = fnv1a64(h, version, strlen(version) + 1);
    h = fnv1a64(h, name, strlen(name) + 1);
    h = fnv1a64(h, &width, sizeof width);
    return fnv1a64(h, &t, sizeof t);
}

static void group_free(group *g)
{
    for (size_t i = 0; i < STORE_MAX_METRICS; i++)
        sketch_reset(&g->m[i]);
    free(g->app);
    free(g->version);
    free(g->name);
    free(g);
}

static void groups_drop(store *st)
{
    for (size_t b = 0; b < GROUP_BUCKETS; b++) {
        while (st->groups[b]) {
            group *g = st->groups[b];
            st->groups[b] = g->next;
            group_free(g);
        }
    }
    st->n_groups = 0;
    st->dirty = NULL;
}

/* Binds a group's key: ?1 kind ?2 app ?3 version ?4 name, then ?5 day, or
 * ?5 width ?6 t. Returns the next free parameter. */
static int bind_group_key(sqlite3_stmt *s, const group *g)
{
    bind_text(s, 1, store_layout_kind(g->kind)->name);
    bind_text(s, 2, g->app);
    bind_text(s, 3, g->version);
    bind_text(s, 4, g->name);
    if (g->width == DAY_WIDTH_S) {
        sqlite3_bind_int64(s, 5, g->t);
        return 6;
    }
    sqlite3_bind_int64(s, 5, g->width);
    sqlite3_bind_int64(s, 6, g->t);
    return 7;
}

typedef struct sub_load {
    store *st;
    group *g;
    int failed;
} sub_load;

static void sub_loaded(void *ctx, int64_t id, const uint8_t *p, size_t n)
{
    sub_load *ld = ctx;
    const store_kind_desc *kd = store_layout_kind(ld->g->kind);
    for (size_t i = 0; i < kd->n_metrics; i++)
        if (ld->st->metric_id[ld->g->kind][i] == id && sketch_decode(&ld->g->m[i], p, n) < 0)
            ld->failed = 1;
}

/* Finds or loads a group. Returns NULL on allocation or read failure. */
static group *group_get(store *st, enum store_kind kind, const char *app, const char *version, const char *name,
                        int64_t width, int64_t t)
{
    uint64_t h = group_hash(kind, app, version, name, width, t);
    group **slot = &st->groups[h % GROUP_BUCKETS];
    for (group *g = *slot; g; g = g->next)
        if (g->hash == h && g->kind == kind && g->t == t && g->width == width && strcmp(g->name, name) == 0 &&
            strcmp(g->app, app) == 0 && strcmp(g->version, version) == 0)
            return g;
    group *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->kind = kind;
    g->width = width;
    g->t = t;
    g->hash = h;
    g->app = strdup(app);
    g->version = strdup(version);
    g->name = strdup(name);
    for (size_t i = 0; i < STORE_MAX_METRICS; i++)
        sketch_init(&g->m[i]);
    if (!g->app || !g->version || !g->name)
        goto fail;
    bool day = width == DAY_WIDTH_S;
    sqlite3_stmt *s = st->st[day ? ST_LOAD_COUNT : ST_LOAD_SUB];
    bind_group_key(s, g);
    int r = sqlite3_step(s);
    if (r == SQLITE_ROW) {
        g->count = (uint64_t)sqlite3_column_int64(s, 0);
        g->failed = (uint64_t)sqlite3_column_int64(s, 1);
        if (!day) {
            sub_load ld = {st, g, 0};
            if (store_codec_subday_sketches(sqlite3_column_blob(s, 2), (size_t)sqlite3_column_bytes(s, 2), sub_loaded, &ld) <
                    0 ||
                ld.failed)
                r = SQLITE_CORRUPT;
        }
    }
    sqlite3_reset(s);
    if (r != SQLITE_ROW && r != SQLITE_DONE)
        goto fail;
    if (!day)
        goto loaded;
    /* one primary-key lookup per metric: the key has the metric before the
     * day, so that a lookup by day alone would read every day of the name */
    s = st->st[ST_LOAD_SKETCH];
    for (size_t m = 0; m < store_layout_kind(kind)->n_metrics && r != SQLITE_CORRUPT; m++) {
        int p = bind_group_key(s, g);
        bind_text(s, p, store_layout_kind(kind)->metrics[m]);
        r = sqlite3_step(s);
        if (r == SQLITE_ROW && sketch_decode(&g->m[m], sqlite3_column_blob(s, 0), (size_t)sqlite3_column_bytes(s, 0)) < 0)
            r = SQLITE_CORRUPT;
        sqlite3_reset(s);
        if (r != SQLITE_ROW && r != SQLITE_DONE)
            break;
        r = SQLITE_DONE;
    }
    if (r != SQLITE_DONE)
        goto fail;
loaded:
    g->next = *slot;
    *slot = g;
    st->n_groups++;
    return g;
fail:
    group_free(g);
    return NULL;
}

static void group_add(store *st, group *g, bool failed, bool excluded, const double *metrics)
{
    g->count++;
    g->failed += failed;
    if (!excluded)
        for (size_t i = 0, n = store_layout_kind(g->kind)->n_metrics; i < n; i++)
            if (!isnan(metrics[i]))
                (void)sketch_add(&g->m[i], metrics[i]); /* negative values are left out */
    if (!g->dirty) {
        g->dirty = true;
        g->dirty_next = st->dirty;
        st->dirty = g;
    }
}

int sqlite_store_rollup_row(store *st, enum store_kind kind, const char *app, const char *version, const char *name,
                     int64_t ts, bool daily, int subday, bool failed, bool excluded, const double *metrics)
{
    group *g;
    if (daily) {
        if (!(g = group_get(st, kind, app, version ? version : "", name, DAY_WIDTH_S, day_of_ts(ts))))
            return -EIO;
        group_add(st, g, failed, excluded, metrics);
    }
    return sqlite_store_rollup_levels(st, kind, app, version, name, ts, 0, subday, failed, excluded, metrics);
}

int sqlite_store_rollup_levels(store *st, enum store_kind kind, const char *app, const char *version, const char *name,
                        int64_t ts, int from, int to, bool failed, bool excluded, const double *metrics)
{
    group *g;
    for (int l = from; l < to && l < SUBDAY_LEVELS; l++) {
        int64_t w = sqlite_store_subday_width_s[l];
        g = group_get(st, kind, app, version ? version : "", name, w, ts / (w * 1000000000LL));
        if (!g)
            return -EIO;
        group_add(st, g, failed, excluded, metrics);
    }
    return 0;
}


/* A sub-day group as one row: its count and its sketches in one value. */
static int subday_write(store *st, group *g)
{
    const store_kind_desc *kd = store_layout_kind(g->kind);
    uint8_t *enc[STORE_MAX_METRICS] = {NULL};
    size_t len[STORE_MAX_METRICS] = {0}, total = 10, n = 0;
    int r = 0;
    for (size_t i = 0; i < kd->n_metrics && r == 0; i++)
        if (g->m[i].count) {
            r = sketch_encode(&g->m[i], &enc[i], &len[i]);
            total += 20 + len[i];
            n++;
        }
    uint8_t *blob = r == 0 ? malloc(total) : NULL;
    if (r == 0 && !blob)
        r = -ENOMEM;
    size_t o = 0;
    if (r == 0) {
        store_codec_put_uvarint(blob, &o, n);
        for (size_t i = 0; i < kd->n_metrics; i++)
            if (enc[i]) {
                store_codec_put_uvarint(blob, &o, (uint64_t)st->metric_id[g->kind][i]);
                store_codec_put_uvarint(blob, &o, len[i]);
                memcpy(blob + o, enc[i], len[i]);
                o += len[i];
            }
    }
    for (size_t i = 0; i < kd->n_metrics; i++)
        free(enc[i]);
    if (r < 0)
        return r;
    sqlite3_stmt *s = st->st[ST_SAVE_SUB];
    int p = bind_group_key(s, g);
    sqlite3_bind_int64(s, p, (int64_t)g->count);
    sqlite3_bind_int64(s, p + 1, (int64_t)g->failed);
    sqlite3_bind_blob(s, p + 2, blob, (int)o, free);
    return sqlite_store_step_done(s);
}

int sqlite_store_groups_write(store *st)
{
    for (group *g = st->dirty; g; g = g->dirty_next) {
        bool day = g->width == DAY_WIDTH_S;
        if (!day) {
            if (subday_write(st, g) < 0)
                return -EIO;
            continue;
        }
        sqlite3_stmt *s = st->st[ST_SAVE_COUNT];
        int p = bind_group_key(s, g);
        sqlite3_bind_int64(s, p, (int64_t)g->count);
        sqlite3_bind_int64(s, p + 1, (int64_t)g->failed);
        if (sqlite_store_step_done(s) < 0)
            return -EIO;
        for (size_t i = 0; i < store_layout_kind(g->kind)->n_metrics; i++) {
            if (!g->m[i].count)
                continue;
            uint8_t *buf;
            size_t len;
            if (sketch_encode(&g->m[i], &buf, &len) < 0)
                return -ENOMEM;
            s = st->st[ST_SAVE_SKETCH];
            p = bind_group_key(s, g);
            bind_text(s, p, store_layout_kind(g->kind)->metrics[i]);
            sqlite3_bind_blob(s, p + 1, buf, (int)len, free);
            if (sqlite_store_step_done(s) < 0)
                return -EIO;
        }
    }
    return 0;
}

void sqlite_store_groups_written(store *st)
{
    for (group *g = st->dirty, *next; g; g = next) {
        next = g->dirty_next;
        g->dirty = false;
        g->dirty_next = NULL;
    }
    st->dirty = NULL;
    if (st->n_groups > GROUP_LIMIT)
        groups_drop(st); /* all written: reload on demand */
}

/* ---- partitions (writer thread only) ---- */

static size_t part_bucket(enum store_table t, int64_t day)
{
    return ((size_t)day * 31 + (size_t)t) % PART_BUCKETS;
}

void sqlite_store_parts_drop(store *st)
{
    for (size_t b = 0; b < PART_BUCKETS; b++) {
        for (part *p = st->parts[b], *next; p; p = next) {
            next = p->next;
            free(p);
        }
        st->parts[b] = NULL;
    }
    st->n_parts = 0;
    st->touched = NULL;
}

/* The largest rowid of t in the range of day (its base when none); of
 * the whole table for day -1 (0 when empty). */
static int last_rowid_of(store *st, enum store_table t, int64_t day, int64_t *ret)
{
    sqlite3_stmt *s = st->last_rowid[t];
    sqlite3_bind_int64(s, 1, day < 0 ? 0 : part_base(day));
    sqlite3_bind_int64(s, 2, day < 0 ? INT64_MAX : part_base(day + 1));
    int r = sqlite3_step(s);
    *ret = r == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL ? sqlite3_column_int64(s, 0)
                                                                       : day < 0 ? 0 : part_base(day);
    sqlite3_reset(s);
    return r == SQLITE_ROW ? 0 : -EIO;
}

part *sqlite_store_part_find(store *st, enum store_table t, int64_t day)
{
    for (part *p = st->parts[part_bucket(t, day)]; p; p = p->next)
        if (p->table == t && p->day == day)
            return p;
    return NULL;
}

part *sqlite_store_part_get(store *st, enum store_table t, int64_t day)
{
    part **slot = &st->parts[part_bucket(t, day)];
    for (part *p = *slot; p; p = p->next)
        if (p->table == t && p->day == day)
            return p;
    part *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->table = t;
    p->day = day;
    p->rolled = p->sealed = part_base(day);
    p->hourly = -1;
    if (!store_is_record(t) && last_rowid_of(st, t, day, &p->last) < 0)
        goto fail;
    if (store_layout_table(t)->kind != KIND_NONE) {
        sqlite3_stmt *s = st->st[ST_PART_LOAD];
        sqlite3_bind_int64(s, 1, t);
        sqlite3_bind_int64(s, 2, day);
        int r = sqlite3_step(s);
        if (r == SQLITE_ROW) {
            p->rolled = sqlite3_column_int64(s, 0);
            p->sealed = sqlite3_column_int64(s, 1);
            p->hourly = sqlite3_column_type(s, 2) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 2);
            p->fine = sqlite3_column_int(s, 3) != 0;
            p->rows = sqlite3_column_int64(s, 4);
            if (store_is_record(t)) /* rolled: the day's last row (its marks are the table's) */
                p->last = p->rolled;
        }
        sqlite3_reset(s);
        if (r == SQLITE_DONE) {
            /* a new day: hot unless the newest rows are past it already, or
             * it is more than a day ahead of them (a clock that is wrong: no
             * sub-day rollups for days nobody lives in yet); ten-minute
             * rollups when the day before was busy */
            if (day < st->hot_day || day > st->hot_day + 1)
                p->hourly = store_is_record(t) ? st->tm[t].last : part_base(day);
            s = st->st[ST_DAY_ROWS];
            sqlite3_bind_int64(s, 1, t);
            sqlite3_bind_int64(s, 2, day - 1);
            r = sqlite3_step(s);
            part *prev = sqlite_store_part_find(st, t, day - 1); /* its count in memory is newer */
            int64_t before = prev ? prev->rows : r == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
            p->fine = before >= (int64_t)st->fine_at;
            sqlite3_reset(s);
            if (r != SQLITE_ROW && r != SQLITE_DONE)
                goto fail;
            s = st->st[ST_PART_ADD];
            sqlite3_bind_int64(s, 1, t);
            sqlite3_bind_int64(s, 2, day);
            sqlite3_bind_int64(s, 3, part_base(day));
            if (p->hourly >= 0)
                sqlite3_bind_int64(s, 4, p->hourly);
            else
                sqlite3_bind_null(s, 4);
            sqlite3_bind_int(s, 5, p->fine);
            if (sqlite_store_step_done(s) < 0)
                goto fail;
        } else if (r != SQLITE_ROW) {
            goto fail;
        }
    }
    p->next = *slot;
    *slot = p;
    st->n_parts++;
    return p;
fail:
    free(p);
    return NULL;
}

static void part_touch(store *st, part *p)
{
    if (!p->touched) {
        p->touched = true;
        p->touched_next = st->touched;
        st->touched = p;
    }
}

int sqlite_store_parts_read(sqlite3 *db, enum store_table t, int64_t d_lo, int64_t d_hi, bool desc, part_marks **ret,
                     size_t *ret_n)
{
    *ret = NULL;
    *ret_n = 0;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db,
                           desc ? "SELECT day, rolled, sealed, hourly, fine FROM partitions WHERE tbl = ?1"
                                  " AND day >= ?2 AND day <= ?3 ORDER BY day DESC"
                                : "SELECT day, rolled, sealed, hourly, fine FROM partitions WHERE tbl = ?1"
                                  " AND day >= ?2 AND day <= ?3 ORDER BY day",
                           -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(s, 1, t);
    sqlite3_bind_int64(s, 2, d_lo);
    sqlite3_bind_int64(s, 3, d_hi);
    part_marks *a = NULL;
    size_t n = 0, cap = 0;
    int r;
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
        if (!ARRAY_GROW(a, cap, n + 1, 16)) {
            free(a);
            sqlite3_finalize(s);
            return -ENOMEM;
        }
        a[n++] = (part_marks){sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 2),
                              sqlite3_column_type(s, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 3),
                              sqlite3_column_int(s, 4) != 0, sqlite3_column_int64(s, 1)};
    }
    sqlite3_finalize(s);
    if (r != SQLITE_DONE) {
        free(a);
        return -EIO;
    }
    if (store_is_record(t) && n) {
        int64_t rolled = 0, sealed = 0;
        if (sqlite3_prepare_v2(db, "SELECT rolled, sealed FROM table_marks WHERE tbl = ?1", -1, &s, NULL) != SQLITE_OK) {
            free(a);
            return -EIO;
        }
        sqlite3_bind_int64(s, 1, t);
        r = sqlite3_step(s);
        if (r == SQLITE_ROW) {
            rolled = sqlite3_column_int64(s, 0);
            sealed = sqlite3_column_int64(s, 1);
        }
        sqlite3_finalize(s);
        if (r != SQLITE_ROW && r != SQLITE_DONE) {
            free(a);
            return -EIO;
        }
        for (size_t i = 0; i < n; i++) {
            a[i].last = a[i].rolled; /* a record table's day: its last row as of the last flush */
            a[i].rolled = rolled;
            a[i].sealed = sealed;
        }
    }
    *ret = a;
    *ret_n = n;
    return 0;
}

/* Writes the rolled marks of the touched parts (plain spans: their keys
 * first) and the dirty groups, in the writer's open transaction. After
 * its COMMIT: groups_flushed. */
static int groups_flush(store *st)
{
    int64_t settle_budget = 4 * (int64_t)st->settle_at;
    for (enum store_table t = 0; t < TABLE_COUNT; t++) {
        if (!store_is_record(t) || st->tm[t].last == st->tm[t].rolled)
            continue;
        sqlite3_stmt *s = st->st[ST_TM_SAVE];
        sqlite3_bind_int64(s, 1, t);
        sqlite3_bind_int64(s, 2, st->tm[t].last);
        sqlite3_bind_int64(s, 3, st->tm[t].sealed);
        if (sqlite_store_step_done(s) < 0)
            return -EIO;
    }
    for (part *p = st->touched; p; p = p->touched_next) {
        if (store_is_record(p->table)) {
            /* settle cold days, a few per flush: the groups of each are in
             * memory until the flush is written */
            if (p->hourly >= 0 && p->late >= (int64_t)st->settle_at && settle_budget > 0) {
                int64_t late = p->late;
                bool fine = p->fine;
                if (sqlite_scan_settle(st, p) < 0)
                    return -EIO;
                settle_budget -= late - p->late + (p->fine != fine ? p->rows : 0);
            }
            /* its marks are the table's: partitions.rolled holds the day's
             * last row, so that a reader knows whether the day has rows
             * not sealed yet */
            sqlite3_stmt *s = st->st[ST_PART_ROLLED];
            sqlite3_bind_int64(s, 1, p->table);
            sqlite3_bind_int64(s, 2, p->day);
            sqlite3_bind_int64(s, 3, p->last);
            sqlite3_bind_int64(s, 4, p->rows);
            if (sqlite_store_step_done(s) < 0)
                return -EIO;
            continue;
        }
        if (p->last == p->rolled)
            continue;
        if (p->table == TABLE_SPANS) {
            sqlite3_stmt *fills[2] = {st->fill_keys, st->fill_attrs};
            for (int f = 0; f < 2; f++) {
                sqlite3_bind_int64(fills[f], 1, p->rolled);
                sqlite3_bind_int64(fills[f], 2, p->last);
                if (f == 1)
                    sqlite3_bind_int64(fills[f], 3, p->day);
                if (sqlite_store_step_done(fills[f]) < 0)
                    return -EIO;
            }
        }
        sqlite3_stmt *s = st->st[ST_PART_ROLLED];
        sqlite3_bind_int64(s, 1, p->table);
        sqlite3_bind_int64(s, 2, p->day);
        sqlite3_bind_int64(s, 3, p->last);
        sqlite3_bind_int64(s, 4, p->rows);
        if (sqlite_store_step_done(s) < 0)
            return -EIO;
    }
    return sqlite_store_groups_write(st);
}

static void groups_flushed(store *st)
{
    sqlite_store_groups_written(st);
    for (enum store_table t = 0; t < TABLE_COUNT; t++)
        if (store_is_record(t)) {
            st->seal_rows += (size_t)(st->tm[t].last - st->tm[t].rolled);
            st->tm[t].rolled = st->tm[t].last;
        }
    for (part *p = st->touched, *next; p; p = next) {
        next = p->touched_next;
        if (!store_is_record(p->table)) {
            st->seal_rows += (size_t)(p->last - p->rolled);
            p->rolled = p->last;
        }
        p->touched = false;
        p->touched_next = NULL;
    }
    st->touched = NULL;
    st->lag_rows = 0;
    st->lag_since_ns = 0;
}

/* ---- writer ---- */

/* The id of a resource (which 0) or scope (1) in its table, added when
 * new; in the writer's transaction. 0 for none, -1 on failure. */
static int64_t origin_id(store *st, int which, const store_origin *o)
{
    if (!o)
        return 0;
    size_t slot = o->hash & 1023;
    if (st->origin_cache[which][slot].id && st->origin_cache[which][slot].hash == o->hash)
        return st->origin_cache[which][slot].id;
    int64_t id = -1;
    sqlite3_stmt *s = st->origin_find[which];
    sqlite3_bind_int64(s, 1, (int64_t)o->hash);
    sqlite3_bind_text(s, 2, o->json, -1, SQLITE_STATIC);
    int r = sqlite3_step(s);
    if (r == SQLITE_ROW)
        id = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    if (r == SQLITE_DONE) {
        s = st->origin_add[which];
        sqlite3_bind_int64(s, 1, (int64_t)o->hash);
        sqlite3_bind_text(s, 2, o->json, -1, SQLITE_STATIC);
        if (sqlite_store_step_done(s) == 0)
            id = sqlite3_last_insert_rowid(st->w);
    }
    if (id > 0) {
        st->origin_cache[which][slot].hash = o->hash;
        st->origin_cache[which][slot].id = id;
    }
    return id;
}

/* How far past the clock a row's time may move the newest time seen (the
 * hot days follow it): a client's clock that runs fast does not make the
 * days of everyone else cold. */
#define NEWEST_AHEAD_NS (3600LL * 1000000000LL)

/* Moves the hot days on to those of the newest row of the job, before
 * its rows are added: the days that stop being hot are frozen at their
 * last row (those rows are in the sub-day groups, on file or in memory;
 * what is not on file yet is after the rolled mark, which readers read
 * from the rows anyway). In the writer's transaction. */
static int advance_hot(store *st, const job *j, int64_t now_wall)
{
    int64_t newest = st->newest_ts;
    for (size_t i = 0; i < j->n; i++) {
        const store_record *rec = &j->b->recs[i];
        if (rec->kind == KIND_NONE)
            continue;
        const store_value *tsv = &rec->cols[st->ts_col[rec->table]];
        int64_t ts = tsv->type == SV_INT ? tsv->i : rec->ts_ns;
        if (ts > now_wall + NEWEST_AHEAD_NS)
            ts = now_wall + NEWEST_AHEAD_NS;
        if (ts > newest)
            newest = ts;
    }
    st->newest_ts = newest;
    int64_t hot = day_of_ts(newest);
    if (hot <= st->hot_day)
        return 0;
    /* record tables: every row of those days so far came while they were hot */
    sqlite3_stmt *s;
    for (enum store_table t = 0; t < TABLE_COUNT; t++) {
        if (!store_is_record(t))
            continue;
        s = st->st[ST_PART_FREEZE_AT];
        sqlite3_bind_int64(s, 1, t);
        sqlite3_bind_int64(s, 2, st->tm[t].last);
        sqlite3_bind_int64(s, 3, hot);
        if (sqlite_store_step_done(s) < 0)
            return -EIO;
    }
    /* plain spans: up to their rolled marks, and the touched ones up to their last row */
    s = st->st[ST_PART_FREEZE];
    sqlite3_bind_int64(s, 1, hot);
    sqlite3_bind_int64(s, 2, TABLE_SPANS);
    if (sqlite_store_step_done(s) < 0)
        return -EIO;
    for (size_t b = 0; b < PART_BUCKETS; b++)
        for (part *p = st->parts[b]; p; p = p->next) {
            if (p->day >= hot || store_layout_table(p->table)->kind == KIND_NONE)
                continue;
            if (p->hourly < 0 && store_is_record(p->table)) {
                p->hourly = st->tm[p->table].last;
            } else if (p->hourly < 0) {
                if (p->last > p->rolled) {
                    s = st->st[ST_PART_HOURLY];
                    sqlite3_bind_int64(s, 1, p->table);
                    sqlite3_bind_int64(s, 2, p->day);
                    sqlite3_bind_int64(s, 3, p->last);
                    if (sqlite_store_step_done(s) < 0)
                        return -EIO;
                }
                p->hourly = p->last;
            }
        }
    char v[24];
    snprintf(v, sizeof v, "%" PRId64, hot);
    s = st->st[ST_META_SET];
    bind_text(s, 1, "hot_day");
    sqlite3_bind_text(s, 2, v, -1, SQLITE_TRANSIENT);
    if (sqlite_store_step_done(s) < 0)
        return -EIO;
    st->hot_day = hot;
    return 0;
}

/* Writes the open run of positions of table t (sqlite_int.h, "positions"). */
static int run_write(store *st, enum store_table t)
{
    struct pos_run *u = &st->run[t];
    if (!u->n)
        return 0;
    sqlite3_stmt *s = st->st[ST_ARRIVAL_ADD];
    sqlite3_bind_int64(s, 1, t);
    sqlite3_bind_int64(s, 2, u->pos);
    sqlite3_bind_int64(s, 3, u->n);
    sqlite3_bind_int64(s, 4, u->off);
    u->n = 0;
    return sqlite_store_step_done(s);
}

/* Every open run, before the transaction commits. */
static int runs_write(store *st)
{
    for (enum store_table t = 0; t < TABLE_COUNT; t++)
        if (run_write(st, t) < 0)
            return -EIO;
    return 0;
}

/* A row of t at rowid takes the next position. */
static int position_add(store *st, enum store_table t, int64_t rowid)
{
    struct pos_run *u = &st->run[t];
    int64_t pos = st->pos[t] + 1;
    if (!u->n || u->off != rowid - pos) {
        if (run_write(st, t) < 0)
            return -EIO;
        u->off = rowid - pos;
    }
    u->pos = pos;
    u->n++;
    st->pos[t] = pos;
    return 0;
}

/* The last position of each table, as committed; no run open. */
static int positions_load(store *st)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->w, "SELECT COALESCE(MAX(pos), 0) FROM arrivals WHERE tbl = ?1", -1, &s, NULL) !=
        SQLITE_OK)
        return -EIO;
    int r = 0;
    for (enum store_table t = 0; t < TABLE_COUNT && r == 0; t++) {
        st->pos[t] = 0;
        st->run[t] = (struct pos_run){0, 0, 0};
        if (!store_has_positions(t))
            continue;
        sqlite3_bind_int64(s, 1, t);
        if (sqlite3_step(s) == SQLITE_ROW)
            st->pos[t] = sqlite3_column_int64(s, 0);
        else
            r = -EIO;
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    return r;
}

static int insert_record(store *st, const store_record *rec, int64_t now_wall)
{
    sqlite3_stmt *s = st->insert[rec->table];
    size_t n = store_layout_table(rec->table)->n_cols;
    const store_origin *origins[2] = {rec->resource, rec->scope};
    const store_value *tsv = &rec->cols[st->ts_col[rec->table]];
    int64_t ts = tsv->type == SV_INT ? tsv->i : rec->ts_ns;
    part *p = sqlite_store_part_get(st, rec->table, day_of_ts(ts));
    if (!p)
        return -EIO;
    for (int w = 0; w < 2; w++) {
        int c = st->origin_col[rec->table][w];
        if (c < 0)
            continue;
        int64_t id = origin_id(st, w, origins[w]);
        if (id < 0)
            return -EIO;
        if (id > 0)
            sqlite3_bind_int64(s, c + 2, id);
        else
            sqlite3_bind_null(s, c + 2);
    }
    int64_t rowid = store_is_record(rec->table) ? st->tm[rec->table].last + 1 : p->last + 1;
    sqlite3_bind_int64(s, 1, rowid);
    for (size_t i = 0; i < n; i++) {
        const store_value *v = &rec->cols[i];
        int c = (int)i + 2;
        if ((int)i == st->origin_col[rec->table][0] || (int)i == st->origin_col[rec->table][1])
            continue;
        switch (v->type) {
        case SV_NULL: sqlite3_bind_null(s, c); break;
        case SV_INT: sqlite3_bind_int64(s, c, v->i); break;
        case SV_REAL: sqlite3_bind_double(s, c, v->d); break;
        case SV_TEXT: sqlite3_bind_text(s, c, v->p, v->n ? (int)v->n : -1, SQLITE_STATIC); break;
        case SV_BLOB: sqlite3_bind_blob(s, c, v->p, (int)v->n, SQLITE_STATIC); break;
        }
    }
    int r = sqlite3_step(s);
    sqlite3_reset(s);
    if (r != SQLITE_DONE)
        return -EIO;
    p->last = rowid;
    if (store_is_record(rec->table))
        st->tm[rec->table].last = rowid;
    if (store_has_positions(rec->table) && position_add(st, rec->table, rowid) < 0)
        return -EIO;
    if (rec->kind == KIND_NONE)
        return 0;
    (void)now_wall;
    p->rows++;
    if (p->hourly >= 0)
        p->late++;
    part_touch(st, p);
    st->lag_rows++;
    return sqlite_store_rollup_row(st, rec->kind, rec->app, rec->version, rec->name, ts, true,
                            p->hourly < 0 ? store_part_levels(p->fine) : 0, rec->failed, rec->excluded, rec->metrics);
}

char *sqlite_store_raw_select(enum store_kind kind, const char *where)
{
    const store_kind_desc *kd = store_layout_kind(kind);
    return sqlite_store_sql("SELECT %s, failed, %s, %s, ts, COALESCE(version, ''), app, rowid FROM %s %s", kd->name_sql,
                     kd->excluded_sql, kd->metrics_sql, store_layout_table(kd->table)->name, where);
}

static int meta_int(sqlite3 *db, const char *key, int64_t *ret)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1", -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, key);
    int r = sqlite3_step(s);
    if (r == SQLITE_ROW)
        *ret = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return r == SQLITE_ROW || r == SQLITE_DONE ? 0 : -EIO;
}

/* Rebuilds the groups and parts in memory from the file: the rollups plus
 * every row after the rolled marks (rows committed but not yet in the
 * rollups: after a SIGKILL, or after a failed transaction dropped the
 * groups). Outside a transaction or inside the writer's; 0 or -EIO. */
/* The marks of the record tables, and the last rowid of each (its rows
 * after sealed are still there; none is below it). */
static int table_marks_load(store *st)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->w, "SELECT rolled, sealed FROM table_marks WHERE tbl = ?1", -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    int r = 0;
    for (enum store_table t = 0; t < TABLE_COUNT && r == 0; t++) {
        if (!store_is_record(t))
            continue;
        st->tm[t] = (table_marks){0, 0, 0};
        sqlite3_bind_int64(s, 1, t);
        int sr = sqlite3_step(s);
        if (sr == SQLITE_ROW) {
            st->tm[t].rolled = sqlite3_column_int64(s, 0);
            st->tm[t].sealed = sqlite3_column_int64(s, 1);
        } else if (sr != SQLITE_DONE) {
            r = -EIO;
        }
        sqlite3_reset(s);
        if (r == 0 && last_rowid_of(st, t, -1, &st->tm[t].last) < 0)
            r = -EIO;
        if (st->tm[t].last < st->tm[t].rolled)
            st->tm[t].last = st->tm[t].rolled;
    }
    sqlite3_finalize(s);
    return r == 0 ? positions_load(st) : r;
}

/* Adds the rows of statement s (sqlite_store_raw_select's columns, after a
 * rolled mark) to the groups: of part p (plain spans), or each of the part
 * of its day (a record table). */
static int replay_rows(store *st, enum store_kind k, sqlite3_stmt *s, part *p)
{
    enum store_table t = store_layout_kind(k)->table;
    size_t nm = store_layout_kind(k)->n_metrics;
    int r;
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(s, 0);
        int c = 3 + (int)nm;
        int64_t ts = sqlite3_column_int64(s, c), rowid = sqlite3_column_int64(s, c + 3);
        part *rp = p ? p : sqlite_store_part_get(st, t, day_of_ts(ts));
        if (!rp)
            return -EIO;
        rp->rows++;
        if (rp->hourly >= 0 && rowid > rp->hourly)
            rp->late++;
        part_touch(st, rp);
        if (ts + 1 > st->newest_ts)
            st->newest_ts = ts + 1;
        st->lag_rows++;
        if (!name)
            continue;
        double m[STORE_MAX_METRICS];
        for (size_t j = 0; j < nm; j++)
            m[j] = sqlite3_column_type(s, 3 + (int)j) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 3 + (int)j);
        /* in the sub-day groups: the rows of a hot day, and those of a cold
         * one up to its hourly mark */
        int subday = rp->hourly < 0 || rowid <= rp->hourly ? store_part_levels(rp->fine) : 0;
        if (sqlite_store_rollup_row(st, k, (const char *)sqlite3_column_text(s, c + 2),
                             (const char *)sqlite3_column_text(s, c + 1), name, ts, true, subday,
                             sqlite3_column_int(s, 1) != 0, sqlite3_column_int(s, 2) != 0, m) < 0)
            return -EIO;
    }
    return r == SQLITE_DONE ? 0 : -EIO;
}

/* Rebuilds the groups and parts in memory from the file: the rollups plus
 * every row after the rolled marks (rows committed but not yet in the
 * rollups: after a SIGKILL, or after a failed transaction dropped the
 * groups). Outside a transaction or inside the writer's; 0 or -EIO. */
static int groups_replay(store *st)
{
    groups_drop(st);
    sqlite_store_parts_drop(st);
    memset(st->origin_cache, 0, sizeof st->origin_cache);
    st->lag_rows = st->seal_rows = 0;
    st->lag_since_ns = 0;
    st->hot_day = INT64_MIN;
    if (meta_int(st->w, "hot_day", &st->hot_day) < 0 || table_marks_load(st) < 0)
        return -EIO;
    if (st->hot_day == INT64_MIN)
        st->hot_day = 0;
    st->newest_ts = st->hot_day * STORE_DAY_NS;
    int r = 0;
    for (enum store_kind k = 0; k < KIND_COUNT && r == 0; k++) {
        enum store_table t = store_layout_kind(k)->table;
        char *sql = sqlite_store_raw_select(k, "WHERE rowid > ?1 AND rowid < ?2 ORDER BY rowid");
        sqlite3_stmt *s;
        if (!sql || sqlite3_prepare_v2(st->w, sql, -1, &s, NULL) != SQLITE_OK) {
            free(sql);
            r = -EIO;
            break;
        }
        free(sql);
        if (store_is_record(t)) {
            st->seal_rows += (size_t)(st->tm[t].rolled - st->tm[t].sealed);
            sqlite3_bind_int64(s, 1, st->tm[t].rolled);
            sqlite3_bind_int64(s, 2, INT64_MAX);
            r = replay_rows(st, k, s, NULL);
        } else {
            part_marks *parts = NULL;
            size_t np = 0;
            r = sqlite_store_parts_read(st->w, t, 0, INT64_MAX, false, &parts, &np);
            for (size_t i = 0; i < np && r == 0; i++) {
                st->seal_rows += (size_t)(parts[i].rolled - parts[i].sealed);
                int64_t last;
                if (last_rowid_of(st, t, parts[i].day, &last) < 0) {
                    r = -EIO;
                    break;
                }
                if (last <= parts[i].rolled)
                    continue;
                part *p = sqlite_store_part_get(st, t, parts[i].day);
                if (!p) {
                    r = -EIO;
                    break;
                }
                sqlite3_bind_int64(s, 1, parts[i].rolled);
                sqlite3_bind_int64(s, 2, part_base(parts[i].day + 1));
                r = replay_rows(st, k, s, p);
                sqlite3_reset(s);
            }
            free(parts);
        }
        sqlite3_finalize(s);
    }
    /* the late rows of cold days that are sealed already (about: whole
     * blocks); a day with enough settles at the next flush */
    for (enum store_table t = 0; t < TABLE_COUNT && r == 0; t++) {
        if (!store_is_record(t) || store_layout_table(t)->kind == KIND_NONE)
            continue;
        sqlite3_stmt *s;
        if (sqlite3_prepare_v2(st->w,
                               "SELECT p.day, SUM(b.n) FROM partitions AS p JOIN blocks AS b ON b.tbl = p.tbl"
                               " AND b.day = p.day AND b.r_hi > p.hourly WHERE p.tbl = ?1 AND p.hourly IS NOT NULL"
                               " GROUP BY p.day",
                               -1, &s, NULL) != SQLITE_OK) {
            r = -EIO;
            break;
        }
        sqlite3_bind_int64(s, 1, t);
        int sr;
        while ((sr = sqlite3_step(s)) == SQLITE_ROW) {
            part *p = sqlite_store_part_get(st, t, sqlite3_column_int64(s, 0));
            if (!p) {
                sr = SQLITE_ERROR;
                break;
            }
            p->late += sqlite3_column_int64(s, 1);
            if (p->late >= (int64_t)st->settle_at)
                part_touch(st, p);
        }
        sqlite3_finalize(s);
        if (sr != SQLITE_DONE)
            r = -EIO;
    }
    if (r < 0) {
        groups_drop(st);
        sqlite_store_parts_drop(st);
        return -EIO;
    }
    if (st->lag_rows)
        st->lag_since_ns = mono_ns();
    return 0;
}

/* The job's tallies, one row of clean_counts per reason. */
static int tallies_write(store *st, const job *j)
{
    sqlite3_stmt *s = st->st[ST_TALLY_ADD];
    for (size_t i = 0; i < j->b->n_tallies; i++) {
        const char *reason = j->b->tallies[i].reason;
        bool first = true;
        for (size_t k = 0; k < i && first; k++)
            first = strcmp(j->b->tallies[k].reason, reason) != 0;
        if (!first)
            continue;
        int64_t count = 0, last = 0;
        for (size_t k = i; k < j->b->n_tallies; k++)
            if (strcmp(j->b->tallies[k].reason, reason) == 0) {
                count++;
                if (j->b->tallies[k].ts_ns > last)
                    last = j->b->tallies[k].ts_ns;
            }
        bind_text(s, 1, j->b->app);
        bind_text(s, 2, reason);
        sqlite3_bind_int64(s, 3, count);
        sqlite3_bind_int64(s, 4, last);
        int r = sqlite_store_step_done(s);
        if (r < 0)
            return r;
    }
    return 0;
}

/* Adds committed tallies to the totals in memory. */
static void totals_add(store *st, const char *reason, uint64_t count)
{
    pthread_mutex_lock(&st->tlock);
    size_t k = 0;
    while (k < st->n_totals && strcmp(st->totals[k].reason, reason) != 0)
        k++;
    if (k == st->n_totals && k < sizeof st->totals / sizeof st->totals[0]) {
        snprintf(st->totals[k].reason, sizeof st->totals[k].reason, "%s", reason);
        st->totals[k].count = 0;
        st->n_totals++;
    }
    if (k < st->n_totals)
        st->totals[k].count += count;
    pthread_mutex_unlock(&st->tlock);
}

static int run_job(store *st, job *j)
{
    int r;
    switch (j->type) {
    case JOB_CONFIG: {
        uint64_t h = fnv1a64(FNV1A64_INIT, j->xml, j->xml_len);
        sqlite3_stmt *s = st->st[ST_CONFIG_VERSION];
        bind_text(s, 1, j->app);
        r = sqlite3_step(s);
        int64_t v = r == SQLITE_ROW ? sqlite3_column_int64(s, 0) + 1 : 1;
        sqlite3_reset(s);
        if (r != SQLITE_ROW)
            return -EIO;
        char etag[64];
        snprintf(etag, sizeof etag, "\"%" PRId64 "-%016" PRIx64 "\"", v, h);
        s = st->st[ST_CONFIG_PUT];
        bind_text(s, 1, j->app);
        sqlite3_bind_int64(s, 2, v);
        sqlite3_bind_text(s, 3, etag, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(s, 4, j->xml, (int)j->xml_len, SQLITE_STATIC);
        sqlite3_bind_int64(s, 5, wall_ns());
        j->version = v;
        return sqlite_store_step_done(s);
    }
    case JOB_RECORDS:
        if (j->b->batch_id) {
            sqlite3_stmt *s = st->st[ST_BATCH];
            bind_text(s, 1, j->b->app);
            bind_text(s, 2, j->b->batch_id);
            bind_text(s, 3, j->b->endpoint);
            sqlite3_bind_int64(s, 4, wall_ns());
            sqlite3_bind_int64(s, 5, (int64_t)j->b->items);
            sqlite3_bind_int64(s, 6, (int64_t)j->b->rejected);
            if ((r = sqlite_store_step_done(s)) < 0)
                return r;
            if (sqlite3_changes(st->w) == 0) {
                j->duplicate = true;
                return 0;
            }
        }
        if ((r = tallies_write(st, j)) < 0)
            return r;
        int64_t now = wall_ns();
        if ((r = advance_hot(st, j, now)) < 0)
            return r;
        for (size_t i = 0; i < j->n; i++) {
            if ((r = insert_record(st, &j->b->recs[i], now)) < 0)
                return r;
            /* a flush inside the transaction: should it fail, the ROLLBACK
             * and the replay that follows undo what it did in memory too */
            if (st->n_groups > GROUP_HARD_LIMIT) {
                if ((r = groups_flush(st)) < 0)
                    return r;
                groups_flushed(st);
            }
        }
        return 0;
    case JOB_CALL:
        /* the caller's own savepoint: its failure is its own */
        if (sqlite3_exec(st->w, "SAVEPOINT job_call", NULL, NULL, NULL) != SQLITE_OK)
            return -EIO;
        j->fn_result = j->fn(j->fn_ctx, st->w);
        if (j->fn_result < 0 && sqlite3_exec(st->w, "ROLLBACK TO job_call", NULL, NULL, NULL) != SQLITE_OK)
            return -EIO;
        return sqlite3_exec(st->w, "RELEASE job_call", NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
    }
    return -EINVAL;
}

/* Waits for jobs; returns false when the writer should stop. With rows
 * not yet in the rollups it waits at most until the oldest of them has
 * waited the rollup lag, and then returns with an empty queue: the caller
 * flushes them; with a retention, at most until the horizons are to be
 * looked at again. Called and returns with lock. */
static bool writer_wait(store *st)
{
    bool retention = st->retention_days || st->rollup_retention_days;
    while (!st->head && !st->stopping && !st->probe_wanted && !st->retention_due) {
        int64_t t = INT64_MAX;
        if (st->dirty)
            t = (st->lag_since_ns ? st->lag_since_ns : mono_ns()) + st->lag_ns;
        if (retention && st->retention_checked_ns + RETENTION_CHECK_NS < t)
            t = st->retention_checked_ns + RETENTION_CHECK_NS;
        if (t == INT64_MAX) {
            pthread_cond_wait(&st->wake, &st->lock);
            continue;
        }
        if (cond_wait_until(&st->wake, &st->lock, t) == ETIMEDOUT)
            return true;
    }
    return !st->stopping || st->head || st->dirty || st->probe_wanted;
}

/* Rows the next flush moves past the rolled marks (of record tables and
 * plain spans: what a seal then takes). */
static size_t rows_to_roll(const store *st)
{
    size_t n = 0;
    for (enum store_table t = 0; t < TABLE_COUNT; t++)
        if (store_is_record(t))
            n += (size_t)(st->tm[t].last - st->tm[t].rolled);
    for (const part *p = st->touched; p; p = p->touched_next)
        if (!store_is_record(p->table))
            n += (size_t)(p->last - p->rolled);
    return n;
}

/* A retention step runs between groups when nothing waits, and at least
 * this often under a steady load. */
#define RETENTION_EVERY_NS (200LL * 1000000LL)

static void *writer_main(void *arg)
{
    store *st = arg;
    int64_t last_retention = 0;
    pthread_mutex_lock(&st->lock);
    while (writer_wait(st)) {
        job *list = st->head;
        st->head = st->tail = NULL;
        bool stopping = st->stopping;
        bool probe = st->probe_wanted;
        st->probe_wanted = false;
        int64_t t0 = mono_ns();
        bool anything = list || probe || st->dirty;
        st->txn_since_ns = anything ? t0 : 0;
        pthread_mutex_unlock(&st->lock);

        int r = 0;
        if (anything) {
            bool flush = false, seal = false;
            /* the WAL frames before it: what it adds is what a batch needs on the file system */
            int frames0 = __atomic_load_n(&st->wal_frames, __ATOMIC_RELAXED);
            size_t rolling = 0;
            if (st->need_replay && (r = groups_replay(st)) == 0)
                st->need_replay = false;
            if (r == 0)
                r = sqlite_store_step_done(st->st[ST_BEGIN]);
            for (job *j = list; j && r == 0; j = j->next)
                r = run_job(st, j);
            if (r == 0)
                r = runs_write(st);
            if (r == 0 && probe) {
                sqlite3_bind_int64(st->st[ST_PROBE], 1, wall_ns());
                r = sqlite_store_step_done(st->st[ST_PROBE]);
            }
            if (r == 0 && st->lag_rows && !st->lag_since_ns)
                st->lag_since_ns = mono_ns();
            /* the rows are the truth; the rollups follow within LAG_* */
            flush = r == 0 && st->dirty &&
                    (stopping || st->lag_rows >= LAG_ROWS || mono_ns() - st->lag_since_ns >= st->lag_ns);
            if (flush) {
                rolling = rows_to_roll(st);
                r = groups_flush(st);
            }
            /* the rows this flush rolls are sealed with it */
            seal = flush && st->seal_rows + rolling >= st->seal_at;
            if (r == 0 && seal)
                r = sqlite_seal(st);
            if (r == 0)
                r = sqlite_store_step_done(st->st[ST_COMMIT]);
            store_error err;
            if (r < 0)
                sqlite_store_error_capture(st->w, &err); /* before the ROLLBACK replaces it */
            uint64_t rows[TABLE_COUNT] = {0}, duplicates = 0, stored = 0;
            for (job *j = list; j && r == 0; j = j->next) {
                duplicates += j->duplicate;
                for (size_t i = 0; j->type == JOB_RECORDS && !j->duplicate && i < j->n; i++)
                    rows[j->b->recs[i].table]++;
                if (j->type == JOB_RECORDS && !j->duplicate) {
                    stored += j->n;
                    for (size_t i = 0; i < j->b->n_tallies; i++)
                        totals_add(st, j->b->tallies[i].reason, 1);
                }
            }
            /* a restarted WAL holds this transaction's frames only */
            int frames1 = __atomic_load_n(&st->wal_frames, __ATOMIC_RELAXED);
            int64_t added = (int64_t)(frames1 >= frames0 ? frames1 - frames0 : frames1) * (st->page_bytes + 24);
            health_write(&st->health, r < 0 ? &err : NULL, stored ? HEALTH_BATCH : probe ? HEALTH_PROBE : HEALTH_OTHER,
                         mono_ns() - t0, rows, duplicates, added);
            if (r < 0) {
                sqlite_store_step_done(st->st[ST_ROLLBACK]);
                /* ids of resources and scopes added by it are gone too */
                memset(st->origin_cache, 0, sizeof st->origin_cache);
                /* the groups and parts may hold rows of this transaction: rebuild them */
                groups_drop(st);
                sqlite_store_parts_drop(st);
                st->need_replay = true;
            } else {
                if (flush)
                    groups_flushed(st);
                if (seal)
                    sqlite_seal_done(st);
                sqlite_retention_wal_check(st);
            }
        }
        /* a step of retention, when one is due: between groups when nothing
         * waits, else now and then */
        if (!st->need_replay && !stopping && (!list || mono_ns() - last_retention >= RETENTION_EVERY_NS)) {
            last_retention = mono_ns();
            if (sqlite_retention_step(st) < 0) {
                groups_drop(st);
                sqlite_store_parts_drop(st);
                st->need_replay = true;
            }
        }

        pthread_mutex_lock(&st->lock);
        st->txn_since_ns = 0;
        if (probe) {
            st->probe_gen++;
            pthread_cond_broadcast(&st->probed);
        }
        for (job *j = list; j; j = j->next) {
            j->result = r < 0 ? -EIO : 0;
            if (r < 0)
                j->duplicate = false;
            st->queued_items -= j->n;
            j->done = true;
        }
        if (list)
            pthread_cond_broadcast(&st->done);
        if (stopping && (r < 0 || (!st->head && !st->dirty)))
            break; /* the next open replays what the rollups miss */
    }
    pthread_mutex_unlock(&st->lock);
    return NULL;
}

static int submit(store *st, job *j)
{
    pthread_mutex_lock(&st->lock);
    if (st->stopping) {
        pthread_mutex_unlock(&st->lock);
        return -ESHUTDOWN;
    }
    if (j->n && st->queued_items && st->queued_items + j->n > st->max_queued) {
        pthread_mutex_unlock(&st->lock);
        return -EAGAIN;
    }
    st->queued_items += j->n;
    int64_t t0 = mono_ns();
    if (st->tail)
        st->tail->next = j;
    else
        st->head = j;
    st->tail = j;
    pthread_cond_signal(&st->wake);
    while (!j->done)
        pthread_cond_wait(&st->done, &st->lock);
    pthread_mutex_unlock(&st->lock);
    if (j->type == JOB_RECORDS)
        health_submit(&st->health, mono_ns() - t0);
    return j->result;
}

static int sqlite_submit(store *st, const store_batch *b, bool *ret_duplicate)
{
    job j = {.type = JOB_RECORDS, .b = b, .n = b->n};
    int r = submit(st, &j);
    *ret_duplicate = j.duplicate;
    return r;
}

/* A transaction running longer than this makes the store "stuck". */
#define STUCK_NS (10 * 1000000000LL)

static void sqlite_health_get(store *st, unsigned wait_ms, store_health *ret)
{
    int64_t last_ok;
    health_snapshot(&st->health, ret, &last_ok);
    if (ret->fault == STORE_CORRUPT || (ret->fault == STORE_OK && mono_ns() - last_ok < 1000000000LL))
        return;
    /* nothing committed for a second, or failing: does a write work now? */
    pthread_mutex_lock(&st->lock);
    uint64_t gen = st->probe_gen;
    if (!st->stopping) {
        st->probe_wanted = true;
        pthread_cond_signal(&st->wake);
    }
    int64_t deadline = mono_ns() + (int64_t)wait_ms * 1000000LL;
    while (st->probe_gen == gen && !st->stopping && cond_wait_until(&st->probed, &st->lock, deadline) != ETIMEDOUT)
        ;
    bool probed = st->probe_gen != gen;
    int64_t txn = st->txn_since_ns;
    pthread_mutex_unlock(&st->lock);
    health_snapshot(&st->health, ret, &last_ok);
    if (probed || ret->fault != STORE_OK)
        return;
    int64_t now = mono_ns();
    if (txn && now - txn > STUCK_NS) {
        ret->fault = STORE_STUCK;
        snprintf(ret->reason, sizeof ret->reason,
                 "the store is not committing: a transaction has been running for %.0f s (a hung disk?)",
                 (double)(now - txn) / 1e9);
        ret->since_ns = wall_ns() - (now - txn);
    }
}

static int64_t file_bytes(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
}

static void sqlite_get_stats(store *st, store_stats *ret)
{
    health_stats(&st->health, ret);
    pthread_mutex_lock(&st->lock);
    ret->queued_items = st->queued_items;
    pthread_mutex_unlock(&st->lock);
    char p[4096];
    ret->db_bytes = file_bytes(st->path);
    snprintf(p, sizeof p, "%s-wal", st->path);
    ret->wal_bytes = file_bytes(p);
    struct statvfs vfs;
    ret->disk_free_bytes = statvfs(st->path, &vfs) == 0 ? (int64_t)vfs.f_bavail * (int64_t)vfs.f_frsize : -1;
}

int sqlite_store_write(store *st, int (*fn)(void *ctx, sqlite3 *db), void *ctx)
{
    job j = {.type = JOB_CALL, .fn = fn, .fn_ctx = ctx};
    int r = submit(st, &j);
    return r < 0 ? r : j.fn_result;
}

static int sqlite_config_put(store *st, const char *app, const char *xml, size_t len, int64_t *ret_version)
{
    job j = {.type = JOB_CONFIG, .app = app, .xml = xml, .xml_len = len};
    int r = submit(st, &j);
    if (r == 0)
        *ret_version = j.version;
    return r;
}

/* ---- readers ---- */

/* Gives a reader back, telling the health what its read found. */
static void read_done(store *st, sqlite3 *db, bool failed, const char *what)
{
    store_error err;
    if (failed)
        sqlite_store_error_capture(db, &err);
    health_read(&st->health, failed ? &err : NULL, what);
    sqlite_store_reader_put(st, db);
}

sqlite3 *sqlite_store_reader_get(store *st)
{
    pthread_mutex_lock(&st->rlock);
    while (!st->n_free)
        pthread_cond_wait(&st->rfree, &st->rlock);
    sqlite3 *db = st->free_readers[--st->n_free];
    pthread_mutex_unlock(&st->rlock);
    return db;
}

void sqlite_store_reader_put(store *st, sqlite3 *db)
{
    pthread_mutex_lock(&st->rlock);
    st->free_readers[st->n_free++] = db;
    pthread_cond_signal(&st->rfree);
    pthread_mutex_unlock(&st->rlock);
}

static int sqlite_config_get(store *st, const char *app, char **ret_xml, size_t *ret_len, char **ret_etag,
                     int64_t *ret_version)
{
    sqlite3 *db = sqlite_store_reader_get(st);
    sqlite3_stmt *s = NULL;
    int r = -EIO;
    if (sqlite3_prepare_v2(db, "SELECT version, etag, xml FROM configs WHERE app = ?1 ORDER BY version DESC LIMIT 1",
                           -1, &s, NULL) != SQLITE_OK)
        goto out;
    bind_text(s, 1, app);
    int sr = sqlite3_step(s);
    if (sr == SQLITE_DONE) {
        r = -ENOENT;
    } else if (sr == SQLITE_ROW) {
        size_t len = (size_t)sqlite3_column_bytes(s, 2);
        char *xml = malloc(len + 1);
        char *etag = strdup((const char *)sqlite3_column_text(s, 1));
        if (!xml || !etag) {
            free(xml);
            free(etag);
            r = -ENOMEM;
            goto out;
        }
        memcpy(xml, sqlite3_column_text(s, 2), len);
        xml[len] = 0;
        *ret_xml = xml;
        *ret_len = len;
        *ret_etag = etag;
        *ret_version = sqlite3_column_int64(s, 0);
        r = 0;
    }
out:
    sqlite3_finalize(s);
    read_done(st, db, r == -EIO, "a config read");
    return r;
}

static int sqlite_tallies(store *st, const char *app,
                          void (*cb)(void *ctx, const char *reason, uint64_t count, int64_t last_ns), void *ctx)
{
    if (!app) {
        pthread_mutex_lock(&st->tlock);
        struct tally_total copy[sizeof st->totals / sizeof st->totals[0]];
        size_t n = st->n_totals;
        memcpy(copy, st->totals, n * sizeof *copy);
        pthread_mutex_unlock(&st->tlock);
        for (size_t i = 0; i < n; i++) /* sorted: the smallest left each time */
            for (size_t k = i + 1; k < n; k++)
                if (strcmp(copy[k].reason, copy[i].reason) < 0) {
                    struct tally_total x = copy[i];
                    copy[i] = copy[k];
                    copy[k] = x;
                }
        for (size_t i = 0; i < n; i++)
            cb(ctx, copy[i].reason, copy[i].count, 0);
        return 0;
    }
    sqlite3 *db = sqlite_store_reader_get(st);
    sqlite3_stmt *s;
    int r = -EIO;
    if (sqlite3_prepare_v2(db, "SELECT reason, count, last_ns FROM clean_counts WHERE app = ?1 ORDER BY reason", -1,
                           &s, NULL) == SQLITE_OK) {
        bind_text(s, 1, app);
        int sr;
        while ((sr = sqlite3_step(s)) == SQLITE_ROW)
            cb(ctx, (const char *)sqlite3_column_text(s, 0), (uint64_t)sqlite3_column_int64(s, 1),
               sqlite3_column_int64(s, 2));
        r = sr == SQLITE_DONE ? 0 : -EIO;
    }
    sqlite3_finalize(s);
    read_done(st, db, r < 0, "a query");
    return r;
}

/* The totals of the tallies, from the file (at open). */
static int totals_load(store *st)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->w, "SELECT reason, SUM(count) FROM clean_counts GROUP BY reason", -1, &s, NULL) !=
        SQLITE_OK)
        return -EIO;
    int r;
    while ((r = sqlite3_step(s)) == SQLITE_ROW)
        totals_add(st, (const char *)sqlite3_column_text(s, 0), (uint64_t)sqlite3_column_int64(s, 1));
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

int sqlite_store_read(store *st, int (*fn)(void *ctx, sqlite3 *db), void *ctx)
{
    sqlite3 *db = sqlite_store_reader_get(st);
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    int r = fn(ctx, db);
    store_error err;
    if (r < 0)
        sqlite_store_read_error(db, r, &err);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    health_read(&st->health, r < 0 ? &err : NULL, "a query");
    sqlite_store_reader_put(st, db);
    return r;
}

/* ---- open / close ---- */

static const char *const stmt_sql[ST_COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_BATCH] = "INSERT OR IGNORE INTO batches(app, id, endpoint, received_ns, items, rejected)"
                 " VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [ST_PROBE] = "INSERT OR REPLACE INTO meta(key, value) VALUES('probe', ?1)",
    [ST_TALLY_ADD] = "INSERT INTO clean_counts(app, reason, count, last_ns) VALUES(?1, ?2, ?3, ?4)"
                     " ON CONFLICT(app, reason) DO UPDATE SET count = count + excluded.count,"
                     " last_ns = MAX(COALESCE(last_ns, 0), excluded.last_ns)",
    [ST_CONFIG_PUT] = "INSERT INTO configs(app, version, etag, xml, created_ns) VALUES(?1, ?2, ?3, ?4, ?5)",
    [ST_CONFIG_VERSION] = "SELECT COALESCE(MAX(version), 0) FROM configs WHERE app = ?1",
    [ST_LOAD_COUNT] = "SELECT count, failed FROM rollup_counts WHERE kind = ?1 AND app = ?2 AND version = ?3"
                      " AND name = ?4 AND day = ?5",
    [ST_LOAD_SKETCH] = "SELECT sketch FROM rollup_sketches WHERE kind = ?1 AND app = ?2 AND version = ?3"
                       " AND name = ?4 AND metric = ?6 AND day = ?5",
    [ST_SAVE_COUNT] = "INSERT OR REPLACE INTO rollup_counts(kind, app, version, name, day, count, failed)"
                      " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_SAVE_SKETCH] = "INSERT OR REPLACE INTO rollup_sketches(kind, app, version, name, day, metric, sketch)"
                       " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_LOAD_SUB] = "SELECT count, failed, sketches FROM subday WHERE kind = ?1 AND app = ?2 AND width = ?5"
                    " AND t = ?6 AND version = ?3 AND name = ?4",
    [ST_SAVE_SUB] = "INSERT OR REPLACE INTO subday(kind, app, width, t, version, name, count, failed, sketches)"
                    " VALUES(?1, ?2, ?5, ?6, ?3, ?4, ?7, ?8, ?9)",
    [ST_PART_LOAD] = "SELECT rolled, sealed, hourly, fine, rows FROM partitions WHERE tbl = ?1 AND day = ?2",
    [ST_PART_ADD] = "INSERT INTO partitions(tbl, day, rolled, sealed, hourly, fine, rows) VALUES(?1, ?2, ?3, ?3, ?4, ?5, 0)",
    [ST_DAY_ROWS] = "SELECT rows FROM partitions WHERE tbl = ?1 AND day = ?2",
    [ST_PART_ROWS] = "UPDATE partitions SET rows = ?3 WHERE tbl = ?1 AND day = ?2",
    [ST_PART_ROLLED] = "UPDATE partitions SET rolled = ?3, rows = ?4 WHERE tbl = ?1 AND day = ?2",
    [ST_PART_SEALED] = "UPDATE partitions SET sealed = ?3 WHERE tbl = ?1 AND day = ?2",
    [ST_PART_FREEZE] = "UPDATE partitions SET hourly = rolled WHERE tbl = ?2 AND day < ?1 AND hourly IS NULL",
    [ST_PART_FREEZE_AT] = "UPDATE partitions SET hourly = ?2 WHERE tbl = ?1 AND day < ?3 AND hourly IS NULL",
    [ST_TM_SAVE] = "INSERT OR REPLACE INTO table_marks(tbl, rolled, sealed) VALUES(?1, ?2, ?3)",
    [ST_PART_HOURLY] = "UPDATE partitions SET hourly = ?3 WHERE tbl = ?1 AND day = ?2",
    [ST_ARRIVAL_ADD] = "INSERT INTO arrivals(tbl, pos, n, off) VALUES(?1, ?2, ?3, ?4)",
    [ST_BLOCK_ADD] = "INSERT INTO blocks(tbl, day, app, t_lo, t_hi, r_lo, r_hi, n, layout, data)"
                     " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    [ST_TRACE_ADD] = "INSERT INTO trace_index(b, t_lo, data) VALUES(?1, ?2, ?3)",
    [ST_TRACE_RUN] = "INSERT OR REPLACE INTO trace_runs(b, day_hi) VALUES(?1, ?2)",
    [ST_META_SET] = "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)",
};

/* Prepares sql (which it frees) to last. */
static int prepare_owned(sqlite3 *db, char *sql, sqlite3_stmt **ret)
{
    if (!sql)
        return SQLITE_NOMEM;
    int r = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, ret, NULL);
    free(sql);
    return r;
}

static void close_all(store *st)
{
    free(st->seal_marks);
    for (size_t i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(st->st[i]);
    for (size_t i = 0; i < TABLE_COUNT; i++) {
        sqlite3_finalize(st->insert[i]);
        sqlite3_finalize(st->last_rowid[i]);
    }
    sqlite3_finalize(st->fill_keys);
    sqlite3_finalize(st->fill_attrs);
    sqlite_retention_wal_stop(st);
    for (int w = 0; w < 2; w++) {
        sqlite3_finalize(st->origin_find[w]);
        sqlite3_finalize(st->origin_add[w]);
    }
    /* the writer last: the last connection to close copies the WAL back
     * and removes it, which a read-only one cannot */
    for (size_t i = 0; i < st->n_readers; i++)
        sqlite3_close(st->readers[i]);
    sqlite3_close(st->w);
    free(st->readers);
    free(st->free_readers);
    groups_drop(st);
    sqlite_store_parts_drop(st);
    free(st->path);
    health_destroy(&st->health);
    free(st);
}

/* The id of the block layout of record table t (its columns, in the
 * layout's order), added when new. */
static int layout_of(store *st, enum store_table t, int64_t *ret)
{
    const char *cols = store_layout_table(t)->columns;
    sqlite3_stmt *s;
    int r = sqlite3_prepare_v2(st->w, "SELECT id FROM block_layouts WHERE tbl = ?1 AND columns = ?2", -1, &s, NULL);
    if (r != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(s, 1, t);
    bind_text(s, 2, cols);
    r = sqlite3_step(s);
    if (r == SQLITE_ROW)
        *ret = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    if (r == SQLITE_ROW)
        return 0;
    if (r != SQLITE_DONE ||
        sqlite3_prepare_v2(st->w, "INSERT INTO block_layouts(tbl, columns) VALUES(?1, ?2)", -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(s, 1, t);
    bind_text(s, 2, cols);
    r = sqlite3_step(s);
    sqlite3_finalize(s);
    *ret = sqlite3_last_insert_rowid(st->w);
    return r == SQLITE_DONE ? 0 : -EIO;
}

/* The ids of the kinds' metrics in the sub-day rollups, added when new
 * (an id is never given to another metric). */
static int metric_ids(store *st)
{
    sqlite3_stmt *find = NULL, *max = NULL, *add = NULL;
    int r = sqlite3_prepare_v2(st->w, "SELECT id FROM subday_metrics WHERE kind = ?1 AND metric = ?2", -1, &find, NULL);
    if (r == SQLITE_OK)
        r = sqlite3_prepare_v2(st->w, "SELECT COALESCE(MAX(id), -1) FROM subday_metrics WHERE kind = ?1", -1, &max, NULL);
    if (r == SQLITE_OK)
        r = sqlite3_prepare_v2(st->w, "INSERT INTO subday_metrics(kind, id, metric) VALUES(?1, ?2, ?3)", -1, &add, NULL);
    for (enum store_kind k = 0; k < KIND_COUNT && r == SQLITE_OK; k++) {
        const store_kind_desc *kd = store_layout_kind(k);
        for (size_t i = 0; i < kd->n_metrics && r == SQLITE_OK; i++) {
            bind_text(find, 1, kd->name);
            bind_text(find, 2, kd->metrics[i]);
            int sr = sqlite3_step(find);
            st->metric_id[k][i] = sr == SQLITE_ROW ? sqlite3_column_int64(find, 0) : -1;
            sqlite3_reset(find);
            if (sr == SQLITE_ROW)
                continue;
            bind_text(max, 1, kd->name);
            sr = sqlite3_step(max);
            st->metric_id[k][i] = sr == SQLITE_ROW ? sqlite3_column_int64(max, 0) + 1 : 0;
            sqlite3_reset(max);
            bind_text(add, 1, kd->name);
            sqlite3_bind_int64(add, 2, st->metric_id[k][i]);
            bind_text(add, 3, kd->metrics[i]);
            r = sqlite_store_step_done(add) == 0 ? SQLITE_OK : SQLITE_ERROR;
        }
    }
    sqlite3_finalize(find);
    sqlite3_finalize(max);
    sqlite3_finalize(add);
    return r;
}

/* The schema of a new file (or the tables an upgraded one lacks), and
 * the block layouts; one transaction. *ret_upgrading: the file is being
 * upgraded (sqlite_upgrade_finish still to run). */
static int open_schema(store *st, bool *ret_upgrading, char **msg)
{
    int version;
    int r = file_schema(st->w, &version);
    *ret_upgrading = r == SQLITE_OK && version > 0 && version < 3;
    if (*ret_upgrading && sqlite_upgrade_begin(st, msg) < 0)
        return SQLITE_ERROR;
    if (r != SQLITE_OK)
        return r;
    r = sqlite3_exec(st->w, "BEGIN IMMEDIATE", NULL, NULL, msg);
    if (r == SQLITE_OK)
        r = sqlite_store_schema_create(st->w, msg);
    for (enum store_table t = 0; t < TABLE_COUNT && r == SQLITE_OK; t++)
        if (store_layout_table(t)->type && layout_of(st, t, &st->layout_id[t]) < 0)
            r = SQLITE_ERROR;
    if (r == SQLITE_OK)
        r = metric_ids(st);
    if (r == SQLITE_OK && !*ret_upgrading)
        r = sqlite3_exec(st->w, "INSERT OR REPLACE INTO meta(key, value) VALUES('schema', '3')", NULL, NULL, msg);
    if (r == SQLITE_OK)
        r = sqlite3_exec(st->w, "COMMIT", NULL, NULL, msg);
    if (r != SQLITE_OK)
        sqlite3_exec(st->w, "ROLLBACK", NULL, NULL, NULL);
    return r;
}

/* Seals what waits between the sealed and rolled marks beyond a seal's
 * worth (an upgraded file: most of it), in transactions of one seal each. */
static int seal_backlog(store *st)
{
    while (st->seal_rows >= st->seal_at) {
        size_t before = st->seal_rows;
        int r = sqlite_store_step_done(st->st[ST_BEGIN]);
        if (r == 0)
            r = sqlite_seal(st);
        if (r == 0)
            r = sqlite_store_step_done(st->st[ST_COMMIT]);
        if (r < 0) {
            sqlite_store_step_done(st->st[ST_ROLLBACK]);
            return r;
        }
        sqlite_seal_done(st);
        sqlite_retention_wal_check(st);
        if (st->seal_rows >= before)
            break;
    }
    return 0;
}

store *sqlite_store_open(const char *path, const store_options *opt, char *err, size_t err_size)
{
    store *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, err_size, "%s: out of memory", path);
        return NULL;
    }
    st->backend = &sqlite_store_backend;
    const char *layout = store_layout_error();
    if (layout) {
        snprintf(err, err_size, "%s: the record schema does not fit the store: %s", path, layout);
        free(st);
        return NULL;
    }
    st->path = strdup(path);
    health_init(&st->health, st->path, opt->log, opt->log_ctx);
    st->max_queued = opt->max_queued_items ? opt->max_queued_items : 200000;
    st->lag_ns = (int64_t)opt->rollup_lag_ms * 1000000LL;
    st->seal_at = opt->seal_rows ? opt->seal_rows : SEAL_ROWS;
    st->settle_at = st->seal_at / 2 ? st->seal_at / 2 : 1;
    st->fine_at = opt->fine_day_rows ? opt->fine_day_rows : FINE_DAY_ROWS;
    st->retention_days = opt->retention_days;
    st->rollup_retention_days = opt->rollup_retention_days;
    st->retention_due = st->retention_days || st->rollup_retention_days;
    pthread_mutex_init(&st->tlock, NULL);
    size_t nr = opt->readers ? opt->readers : 4;
    st->readers = calloc(nr, sizeof *st->readers);
    st->free_readers = calloc(nr, sizeof *st->free_readers);
    if (!st->path || !st->readers || !st->free_readers) {
        snprintf(err, err_size, "%s: out of memory", path);
        goto fail;
    }
    if (sqlite3_open_v2(path, &st->w, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        snprintf(err, err_size, "%s: cannot open: %s", path, st->w ? sqlite3_errmsg(st->w) : "out of memory");
        goto fail;
    }
    char pragmas[320];
    snprintf(pragmas, sizeof pragmas,
             "PRAGMA page_size=16384; PRAGMA busy_timeout=5000; PRAGMA journal_mode=WAL; PRAGMA synchronous=%s;"
             " PRAGMA cache_size=-32768; PRAGMA temp_store=MEMORY; PRAGMA wal_autocheckpoint=0;"
             " PRAGMA journal_size_limit=%d;",
             opt->sync_full ? "FULL" : "NORMAL", 64 << 20);
    char *msg = NULL;
    if (sqlite_query_register_functions(st->w) != SQLITE_OK) {
        snprintf(err, err_size, "%s: %s", path, sqlite3_errmsg(st->w));
        goto fail;
    }
    for (enum store_table t = 0; t < TABLE_COUNT; t++) {
        st->ts_col[t] = 0;
        st->origin_col[t][0] = st->origin_col[t][1] = -1;
        for (size_t c = 0; c < store_layout_table(t)->n_cols; c++) {
            const store_column *col = &store_layout_table(t)->cols[c];
            if (col->source == SRC_COMMON && col->index == PACER_COMMON_TS)
                st->ts_col[t] = (int)c;
            if (col->source == SRC_RESOURCE_ID || col->source == SRC_SCOPE_ID)
                st->origin_col[t][col->source == SRC_SCOPE_ID] = (int)c;
        }
    }
    if (sqlite3_exec(st->w, pragmas, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, err_size, "%s: cannot set up: %s", path, msg ? msg : sqlite3_errmsg(st->w));
        sqlite3_free(msg);
        goto fail;
    }
    if (sqlite_retention_wal_start(st) < 0) {
        snprintf(err, err_size, "%s: cannot start the checkpointer", path);
        goto fail;
    }
    /* the statements of the writer need the tables: a new or upgraded file first */
    bool upgrading;
    if (open_schema(st, &upgrading, &msg) != SQLITE_OK) {
        snprintf(err, err_size, "%s: cannot create the schema: %s", path, msg ? msg : sqlite3_errmsg(st->w));
        sqlite3_free(msg);
        goto fail;
    }
    for (size_t i = 0; i < ST_COUNT; i++)
        if (sqlite3_prepare_v3(st->w, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &st->st[i], NULL) != SQLITE_OK) {
            snprintf(err, err_size, "%s: %s", path, sqlite3_errmsg(st->w));
            goto fail;
        }
    for (enum store_table t = 0; t < TABLE_COUNT; t++) {
        size_t n;
        const char *columns = store_layout_columns(t, &n);
        char marks[3 * STORE_MAX_COLS] = "?";
        for (size_t c = 0; c < n; c++)
            strcat(marks, ",?");
        if (prepare_owned(st->w,
                          sqlite_store_sql("INSERT INTO %s(rowid, %s) VALUES(%s)", store_layout_table(t)->name, columns, marks),
                          &st->insert[t]) != SQLITE_OK ||
            prepare_owned(st->w,
                          sqlite_store_sql("SELECT MAX(rowid) FROM %s WHERE rowid > ?1 AND rowid < ?2", store_layout_table(t)->name),
                          &st->last_rowid[t]) != SQLITE_OK) {
            snprintf(err, err_size, "%s: %s", path, sqlite3_errmsg(st->w));
            goto fail;
        }
    }
    /* a WAL frame is a page and its 24-byte header (the health's room for a batch) */
    sqlite3_stmt *ps = NULL;
    st->page_bytes = sqlite3_prepare_v2(st->w, "PRAGMA page_size", -1, &ps, NULL) == SQLITE_OK &&
                             sqlite3_step(ps) == SQLITE_ROW ? sqlite3_column_int(ps, 0) : 16384;
    sqlite3_finalize(ps);
    static const char *const origin_tables[2] = {"resources", "scopes"};
    for (int w = 0; w < 2; w++)
        if (prepare_owned(st->w, sqlite_store_sql("SELECT id FROM %s WHERE hash = ?1 AND json = ?2", origin_tables[w]),
                          &st->origin_find[w]) != SQLITE_OK ||
            prepare_owned(st->w, sqlite_store_sql("INSERT INTO %s(hash, json) VALUES(?1, ?2)", origin_tables[w]),
                          &st->origin_add[w]) != SQLITE_OK) {
            snprintf(err, err_size, "%s: %s", path, sqlite3_errmsg(st->w));
            goto fail;
        }
    if (prepare_owned(st->w,
                      sqlite_store_sql("INSERT OR IGNORE INTO spans_keys(app, ts, rid, version, name, failed, m0)"
                                " SELECT app, ts, rowid, version, name, failed, %s FROM spans"
                                " WHERE rowid > ?1 AND rowid <= ?2 ORDER BY app, ts, rowid",
                                store_layout_kind(KIND_SPAN)->metrics_sql),
                      &st->fill_keys) != SQLITE_OK ||
        prepare_owned(st->w,
                      sqlite_store_sql("INSERT OR IGNORE INTO span_attrs SELECT app, ?3, h, ts, rid FROM"
                                " (SELECT s.app AS app, pacer_attr_hash(j.value) AS h, s.ts AS ts, s.rowid AS rid"
                                "  FROM spans AS s, json_each(CASE WHEN json_valid(s.attributes) THEN s.attributes"
                                "  END) AS j WHERE s.rowid > ?1 AND s.rowid <= ?2)"
                                " WHERE h IS NOT NULL ORDER BY app, h, ts, rid"),
                      &st->fill_attrs) != SQLITE_OK) {
        snprintf(err, err_size, "%s: %s", path, sqlite3_errmsg(st->w));
        goto fail;
    }
    if (upgrading && sqlite_upgrade_finish(st, &msg) < 0) {
        snprintf(err, err_size, "%s: cannot convert the file of an earlier pacerd: %s", path,
                 msg ? msg : sqlite3_errmsg(st->w));
        sqlite3_free(msg);
        goto fail;
    }
    sqlite3_stmt *runq = NULL;
    if (sqlite3_prepare_v2(st->w, "SELECT COALESCE(MAX(b), 0) FROM trace_runs", -1, &runq, NULL) == SQLITE_OK &&
        sqlite3_step(runq) == SQLITE_ROW)
        st->trace_run = sqlite3_column_int64(runq, 0);
    sqlite3_finalize(runq);
    if (groups_replay(st) < 0) {
        snprintf(err, err_size, "%s: cannot rebuild the rollups: %s", path, sqlite3_errmsg(st->w));
        goto fail;
    }
    if (seal_backlog(st) < 0) {
        snprintf(err, err_size, "%s: cannot seal the rows in the rollups: %s", path, sqlite3_errmsg(st->w));
        goto fail;
    }
    if (totals_load(st) < 0) {
        snprintf(err, err_size, "%s: cannot read the cleaning counts: %s", path, sqlite3_errmsg(st->w));
        goto fail;
    }
    for (size_t i = 0; i < nr; i++) {
        if (sqlite3_open_v2(path, &st->readers[i], SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
            snprintf(err, err_size, "%s: cannot open for reading: %s", path, sqlite3_errmsg(st->readers[i]));
            st->n_readers = i + 1;
            goto fail;
        }
        sqlite3_busy_timeout(st->readers[i], 5000);
        sqlite3_exec(st->readers[i], "PRAGMA cache_size=-16384", NULL, NULL, NULL);
        sqlite_query_register_functions(st->readers[i]);
        st->free_readers[i] = st->readers[i];
    }
    st->n_readers = st->n_free = nr;
    pthread_mutex_init(&st->lock, NULL);
    cond_init_monotonic(&st->wake); /* the rollup lag is timed on mono_ns */
    pthread_cond_init(&st->done, NULL);
    cond_init_monotonic(&st->probed);
    pthread_mutex_init(&st->rlock, NULL);
    pthread_cond_init(&st->rfree, NULL);
    if (thread_start(&st->writer, "pacerd-writer", writer_main, st) < 0) {
        snprintf(err, err_size, "%s: cannot start the writer thread", path);
        goto fail;
    }
    return st;
fail:
    close_all(st);
    return NULL;
}

static void sqlite_close(store *st)
{
    if (!st)
        return;
    pthread_mutex_lock(&st->lock);
    st->stopping = true;
    pthread_cond_signal(&st->wake);
    pthread_mutex_unlock(&st->lock);
    pthread_join(st->writer, NULL);
    close_all(st);
}

const store_backend sqlite_store_backend = {
    .name = "sqlite",
    .close = sqlite_close,
    .submit = sqlite_submit,
    .tallies = sqlite_tallies,
    .health_get = sqlite_health_get,
    .get_stats = sqlite_get_stats,
    .config_api_put = sqlite_config_put,
    .config_api_get = sqlite_config_get,
    .scan = sqlite_scan,
    .apps = sqlite_scan_apps,
    .trace = sqlite_query_trace,
    .search_spans = sqlite_query_search_spans,
    .search_logs = sqlite_query_search_logs,
    .search_points = sqlite_query_search_points,
    .explain = sqlite_query_explain,
    .version_rows = sqlite_samples_version_rows,
    .newest = sqlite_newest,
    .dash_explain = sqlite_newest_explain,
    .marks_last = sqlite_marks_last,
    .marks_step = sqlite_marks_step,
    .marks_behind = sqlite_marks_behind,
    .rows_after = sqlite_marks_rows,
    .marks_forget = sqlite_marks_forget,
};
