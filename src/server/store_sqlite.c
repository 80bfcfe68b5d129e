/* SQLite storage (store.h).
 *
 * Writer thread states, per group of jobs:
 *   take the queue → BEGIN → run each job (records / probe / config / call;
 *   rows appended, groups in memory updated) → [rollup flush] → [hooks'
 *   commit] → COMMIT → [hooks' done] → wake the submitters.
 * The application layer's hooks (store.h, store_hooks) see each record of
 * a new batch before its insert and may keep it out; a call job
 * (store_write) runs its function in a savepoint of its own.
 * Rollup flush, when LAG_ROWS rows wait, the oldest has waited
 * rollup_lag_ms (also without traffic) or the writer stops: write the dirty
 * groups, copy the rows after the marks into the *_keys tables, move the
 * marks — all in the transaction of the jobs. Any failure between BEGIN and
 * COMMIT: ROLLBACK, drop the groups (they may hold rows that were not
 * committed), fail every job of the group, and rebuild the groups from the
 * file before the next job (groups_replay).
 *
 * Invariants, for each rollup kind k (page, startup, request, span):
 *  1. The raw table (page_loads, …) has every committed row; rows are only
 *     appended, so rowids grow with commit order.
 *  2. rollup_counts, rollup_sketches and k's *_keys table hold exactly the
 *     rows with rowid <= rollup_marks[k] — they change in one transaction.
 *  3. The groups in memory hold the rollups plus the rows up to
 *     st->last_rowid[k]; on open (e.g. after a SIGKILL) they are rebuilt
 *     from the file: rollups + the rows after the mark.
 * A query (store_scan) reads, in one snapshot: the rows after the mark from
 * the raw table (a rowid range: at most ~LAG_ROWS + one group), the whole
 * days up to the mark from the rollups, the cut parts of days up to the mark
 * from the *_keys table (one primary-key range per part).
 *
 * Why: the raw tables carry no index, so a commit appends pages and
 * touches nothing else. An index on (app, ts) written per commit changed
 * one random leaf page per row (the timestamps of a batch span days), so
 * that every group commit wrote megabytes of index pages to the WAL; the
 * *_keys tables (WITHOUT ROWID, keyed (app, ts, rowid), holding every
 * column a cut day's scan reads) are filled in rowid batches of ~32 000 in
 * key order, one write per touched page per batch. Likewise the rollups are
 * written once per batch instead of once per commit.
 *
 * SQL text. The raw tables' columns, the kinds' names, metrics and group
 * names come from the layout (store.h, "the rows"; store_layout.c): every
 * statement that names them — CREATE TABLE, INSERT, the raw and keys
 * SELECTs, the keys fill — is made from it once, at open (schema_create,
 * store_open), or per query from the same pieces. Values are always bound.
 *
 * Schema 2. A schema 1 file (rollups in step with every row, a covering
 * index per raw table) is converted on open, in the transaction that
 * creates what is missing: marks = the last rows, the keys tables filled
 * from all rows (the keys fill of groups_flush, over every row), the
 * covering indexes dropped. Tables are created only when missing, so files
 * of earlier versions keep their columns (same names, maybe another order).
 */
#include "store.h"
#include "store_backend.h"
#include "store_health.h"
#include "store_int.h"

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

/* The server's own tables; the raw tables and their *_keys tables are
 * made from the layout (schema_create). */
static const char FIXED_SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS batches(app TEXT NOT NULL, id TEXT NOT NULL, endpoint TEXT, received_ns INTEGER,"
    "  items INTEGER, rejected INTEGER, PRIMARY KEY(app, id)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS rollup_counts(kind TEXT NOT NULL, app TEXT NOT NULL, version TEXT NOT NULL,"
    "  name TEXT NOT NULL, day INTEGER NOT NULL, count INTEGER NOT NULL, failed INTEGER NOT NULL,"
    "  PRIMARY KEY(kind, app, version, name, day)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS rollup_sketches(kind TEXT NOT NULL, app TEXT NOT NULL, version TEXT NOT NULL,"
    "  name TEXT NOT NULL, metric TEXT NOT NULL, day INTEGER NOT NULL, sketch BLOB NOT NULL,"
    "  PRIMARY KEY(kind, app, version, name, metric, day)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS configs(app TEXT NOT NULL, version INTEGER NOT NULL, etag TEXT NOT NULL,"
    "  xml TEXT NOT NULL, created_ns INTEGER, PRIMARY KEY(app, version)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS rollup_marks(kind TEXT PRIMARY KEY, last_rowid INTEGER NOT NULL) WITHOUT ROWID;"
    /* each distinct resource and scope once (OTLP JSON); rows name them by id */
    "CREATE TABLE IF NOT EXISTS resources(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL, json TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS resources_hash ON resources(hash);"
    "CREATE TABLE IF NOT EXISTS scopes(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL, json TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS scopes_hash ON scopes(hash);"
    /* per span row up to its kind's mark: its trace (t: the trace id's first
     * 8 bytes as an integer, pacer_trace_key; tbl: enum store_table), in
     * runs: b numbers the rollup batch that wrote the entry, so that a batch
     * is appended in key order after the earlier ones (random trace ids
     * inserted into one tree would touch every page of it per batch); a
     * lookup seeks each run (store_query.c) */
    "CREATE TABLE IF NOT EXISTS trace_keys(b INTEGER NOT NULL, t INTEGER NOT NULL, tbl INTEGER NOT NULL,"
    "  rid INTEGER NOT NULL, PRIMARY KEY(b, t, tbl, rid)) WITHOUT ROWID;"
    /* per attribute of a plain span up to the mark: store_attr_hash(key, value) */
    "CREATE TABLE IF NOT EXISTS span_attr_keys(app TEXT NOT NULL, h INTEGER NOT NULL, ts INTEGER NOT NULL,"
    "  rid INTEGER NOT NULL, PRIMARY KEY(app, h, ts, rid)) WITHOUT ROWID;";

/* Text of one statement (the caller frees it), or NULL when out of memory. */
static char *sql_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *sql_text(const char *fmt, ...)
{
    char *s;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}

/* The metric columns m0… of a keys table, each written by fmt (with its
 * number). */
static void keys_columns(char *out, size_t size, const char *fmt)
{
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; i < STORE_MAX_METRICS && o < size; i++)
        o += (size_t)snprintf(out + o, size - o, fmt, i);
}

/* What fills m0… of a keys table: the kind's metrics in its order, then
 * NULL. */
static char *keys_metrics(const store_kind_desc *kd)
{
    char pad[64] = "";
    for (size_t i = kd->n_metrics; i < STORE_MAX_METRICS; i++)
        strcat(pad, ", NULL");
    return sql_text("%s%s", kd->metrics_sql, pad);
}

/* INSERT of a kind's raw rows that match `where` into its keys table, in
 * key order. */
static char *keys_fill_sql(enum store_kind k, const char *where)
{
    const store_kind_desc *kd = store_kind(k);
    const char *table = store_table(kd->table)->name;
    char *metrics = keys_metrics(kd);
    char *sql = metrics ? sql_text("INSERT INTO %s_keys SELECT app, ts, version, %s, failed, %s, %s, rowid FROM %s"
                                   " WHERE %s AND %s IS NOT NULL ORDER BY app, ts",
                                   table, kd->name_sql, kd->excluded_sql, metrics, table, where, kd->name_sql)
                        : NULL;
    free(metrics);
    return sql;
}

/* The other indexes groups_flush keeps, of the rows of kind k that match
 * `where`: the trace of every span row (trace_keys), and the attributes of
 * plain spans (span_attr_keys; NULL for other kinds). */
static char *trace_fill_sql(enum store_kind k, const char *where)
{
    enum store_table tb = store_kind(k)->table;
    return sql_text("INSERT OR IGNORE INTO trace_keys SELECT ?3, pacer_trace_key(trace_id) AS t, %d, rowid FROM %s"
                    " WHERE %s AND trace_id IS NOT NULL ORDER BY t",
                    (int)tb, store_table(tb)->name, where);
}

static char *attrs_fill_sql(enum store_kind k, const char *where)
{
    if (k != KIND_SPAN)
        return NULL;
    return sql_text("INSERT OR IGNORE INTO span_attr_keys SELECT app, h, ts, rid FROM"
                    " (SELECT s.app AS app, pacer_attr_hash(j.value) AS h, s.ts AS ts, s.rowid AS rid"
                    "  FROM spans AS s, json_each(CASE WHEN json_valid(s.attributes) THEN s.attributes END) AS j"
                    "  WHERE %s)"
                    " WHERE h IS NOT NULL ORDER BY app, h, ts, rid",
                    where);
}

/* A raw table, and what goes with it: a rollup kind's *_keys table (per
 * raw row up to the mark, what a scan of a cut day reads: name, failed,
 * excluded, metrics m0… in the kind's order, keyed by (app, ts, rowid of
 * the raw row); filled by groups_flush) and none of the indexes of schema
 * 1; a table without rollups, an index on (app, ts). */
static char *table_sql(enum store_table tb)
{
    const store_table_desc *t = store_table(tb);
    char cols[2048] = "", ms[128];
    size_t o = 0;
    for (size_t i = 0; i < t->n_cols && o < sizeof cols; i++)
        o += (size_t)snprintf(cols + o, sizeof cols - o, "%s%s %s", i ? ", " : "", t->cols[i].name, t->cols[i].decl);
    if (o >= sizeof cols)
        return NULL;
    if (t->kind == KIND_NONE) /* metric points: also by name (the metric query) */
        return sql_text("CREATE TABLE IF NOT EXISTS %s(%s);"
                        "CREATE INDEX IF NOT EXISTS %s_app_ts ON %s(app, ts);%s",
                        t->name, cols, t->name, t->name,
                        tb == TABLE_METRIC_POINTS
                            ? "CREATE INDEX IF NOT EXISTS metric_points_name ON metric_points(app, name, ts);"
                            : "");
    keys_columns(ms, sizeof ms, " m%zu REAL,");
    return sql_text("CREATE TABLE IF NOT EXISTS %s(%s);"
                    "DROP INDEX IF EXISTS %s_app_ts;"
                    "DROP INDEX IF EXISTS %s_scan;"
                    "CREATE TABLE IF NOT EXISTS %s_keys(app TEXT NOT NULL, ts INTEGER NOT NULL, version TEXT,"
                    " name TEXT NOT NULL, failed INTEGER, excluded INTEGER,%s rid INTEGER NOT NULL,"
                    " PRIMARY KEY(app, ts, rid)) WITHOUT ROWID;%s",
                    t->name, cols, t->name, t->name, t->name, ms,
                    /* span search by name */
                    t->kind == KIND_SPAN ? "CREATE INDEX IF NOT EXISTS spans_keys_name ON spans_keys(app, name, ts);"
                                         : "");
}

static int exec_owned(sqlite3 *db, char *sql, char **msg)
{
    if (!sql)
        return SQLITE_NOMEM;
    int r = sqlite3_exec(db, sql, NULL, NULL, msg);
    free(sql);
    return r;
}

/* Adds to table t of a file made by an earlier pacerd the columns its layout
 * has and the file lacks: a field added to the record schema with a store
 * column. The rows already there hold NULL in it, so a NOT NULL of the
 * layout is not carried over. */
static int add_missing_columns(sqlite3 *db, enum store_table tb, char **msg)
{
    const store_table_desc *t = store_table(tb);
    char *sql = sql_text("SELECT name FROM pragma_table_info('%s')", t->name);
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
        r = exec_owned(db, sql_text("ALTER TABLE %s ADD COLUMN %s %s", t->name, t->cols[c].name, decl), msg);
    }
    return r;
}

/* The metrics of every rollup kind, in order: what a keys table's m0… mean.
 * Kept in meta: when the schema changed them, the keys tables (a cache of
 * the raw rows up to the marks) are made and filled again. */
static char *kinds_signature(void)
{
    char buf[1024];
    size_t o = 0;
    for (enum store_kind k = 0; k < KIND_COUNT && o < sizeof buf; k++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s:%s", k ? ";" : "", store_kind(k)->name,
                              store_kind(k)->metrics_sql);
    return o < sizeof buf ? strdup(buf) : NULL;
}

/* Whether the file's keys tables were written for other metric lists
 * (meta 'kinds' differs from this pacerd's). */
static int kinds_changed(sqlite3 *db, bool *ret)
{
    char *sig = kinds_signature();
    if (!sig)
        return SQLITE_NOMEM;
    sqlite3_stmt *s = NULL;
    int r = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'kinds'", -1, &s, NULL);
    *ret = false;
    if (r == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
        *ret = strcmp((const char *)sqlite3_column_text(s, 0), sig) != 0;
    sqlite3_finalize(s);
    free(sig);
    return r;
}

/* Keys tables of other metric lists may have another number of metric
 * columns too: they are made again (empty; refill_keys_if_changed fills
 * them). */
static int remake_keys_if_changed(sqlite3 *db, char **msg)
{
    bool changed;
    int r = kinds_changed(db, &changed);
    for (enum store_kind k = 0; changed && k < KIND_COUNT && r == SQLITE_OK; k++) {
        r = exec_owned(db, sql_text("DROP TABLE IF EXISTS %s_keys", store_table(store_kind(k)->table)->name), msg);
        if (r == SQLITE_OK)
            r = exec_owned(db, table_sql(store_kind(k)->table), msg);
    }
    return r;
}

static int refill_keys_if_changed(sqlite3 *db, char **msg)
{
    char *sig = kinds_signature();
    if (!sig)
        return SQLITE_NOMEM;
    sqlite3_stmt *s = NULL;
    int r = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'kinds'", -1, &s, NULL);
    bool same = false, known = false;
    if (r == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
        known = true;
        same = strcmp((const char *)sqlite3_column_text(s, 0), sig) == 0;
    }
    sqlite3_finalize(s);
    for (enum store_kind k = 0; known && !same && k < KIND_COUNT && r == SQLITE_OK; k++) {
        const char *table = store_table(store_kind(k)->table)->name;
        char *where = sql_text("rowid <= (SELECT last_rowid FROM rollup_marks WHERE kind = '%s')", store_kind(k)->name);
        r = exec_owned(db, sql_text("DELETE FROM %s_keys", table), msg);
        if (r == SQLITE_OK)
            r = where ? exec_owned(db, keys_fill_sql(k, where), msg) : SQLITE_NOMEM;
        free(where);
    }
    if (r == SQLITE_OK && !same)
        r = exec_owned(db, sql_text("INSERT OR REPLACE INTO meta(key, value) VALUES('kinds', '%s')", sig), msg);
    free(sig);
    return r;
}

/* Creates what is missing, in one transaction. A file of schema 1 had its
 * rollups in step with every row: its marks become its last rows, and its
 * keys tables are filled from all of them. A file of an earlier schema
 * gets the columns of fields added since. */
static int schema_create(sqlite3 *db, char **msg)
{
    static const char schema1[] = "(SELECT value FROM meta WHERE key = 'schema') = '1'";
    int r = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, msg);
    if (r == SQLITE_OK)
        r = sqlite3_exec(db, FIXED_SCHEMA, NULL, NULL, msg);
    for (enum store_table t = 0; t < TABLE_COUNT && r == SQLITE_OK; t++) {
        r = exec_owned(db, table_sql(t), msg);
        if (r == SQLITE_OK)
            r = add_missing_columns(db, t, msg);
    }
    for (enum store_kind k = 0; k < KIND_COUNT && r == SQLITE_OK; k++)
        r = exec_owned(db,
                       sql_text("INSERT OR IGNORE INTO rollup_marks SELECT '%s', COALESCE(MAX(rowid), 0) FROM %s",
                                store_kind(k)->name, store_table(store_kind(k)->table)->name),
                       msg);
    if (r == SQLITE_OK)
        r = remake_keys_if_changed(db, msg);
    for (enum store_kind k = 0; k < KIND_COUNT && r == SQLITE_OK; k++)
        r = exec_owned(db, keys_fill_sql(k, schema1), msg);
    if (r == SQLITE_OK)
        r = refill_keys_if_changed(db, msg);
    /* a file made before trace_keys and span_attr_keys: index its rows up
     * to the marks once (later rows are indexed by groups_flush) */
    bool indexed = false;
    if (r == SQLITE_OK) {
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(db, "SELECT 1 FROM meta WHERE key = 'indexes' AND value = '1'", -1, &q, NULL) ==
            SQLITE_OK)
            indexed = sqlite3_step(q) == SQLITE_ROW;
        sqlite3_finalize(q);
    }
    for (enum store_kind k = 0; k < KIND_COUNT && r == SQLITE_OK && !indexed; k++) {
        char *where = sql_text("rowid <= (SELECT last_rowid FROM rollup_marks WHERE kind = '%s')", store_kind(k)->name);
        char *fill = where ? trace_fill_sql(k, where) : NULL;
        sqlite3_stmt *q = NULL;
        r = fill ? sqlite3_prepare_v2(db, fill, -1, &q, NULL) : SQLITE_NOMEM;
        if (r == SQLITE_OK) {
            sqlite3_bind_int64(q, 3, 0); /* the run of what was there before */
            r = sqlite3_step(q) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
        }
        sqlite3_finalize(q);
        free(fill);
        free(where);
        if (r == SQLITE_OK && k == KIND_SPAN) {
            where = sql_text("s.rowid <= (SELECT last_rowid FROM rollup_marks WHERE kind = '%s')", store_kind(k)->name);
            r = where ? exec_owned(db, attrs_fill_sql(k, where), msg) : SQLITE_NOMEM;
            free(where);
        }
    }
    if (r == SQLITE_OK && !indexed)
        r = sqlite3_exec(db, "INSERT OR REPLACE INTO meta(key, value) VALUES('indexes', '1')", NULL, NULL, msg);
    if (r == SQLITE_OK)
        r = sqlite3_exec(db, "INSERT OR REPLACE INTO meta(key, value) VALUES('schema', '2'); COMMIT", NULL, NULL, msg);
    if (r != SQLITE_OK)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return r;
}

static int step_done(sqlite3_stmt *s);

/* ---- rollup groups (writer thread only) ---- */

#define GROUP_BUCKETS 8192
#define GROUP_LIMIT 5000 /* clean groups kept in memory after a rollup flush */
/* Rollup lag: the dirty groups are written when this many rows wait, or
 * when the oldest has waited store_options.rollup_lag_ms (the writer wakes
 * for that even when no request comes). */
#define LAG_ROWS 32768

typedef struct group {
    struct group *next, *dirty_next;
    enum store_kind kind;
    char *app, *version, *name;
    int64_t day;
    uint64_t hash;
    uint64_t count, failed;
    bool dirty;
    sketch m[STORE_MAX_METRICS];
} group;

enum job_type { JOB_RECORDS, JOB_CONFIG, JOB_CALL };

typedef struct job {
    struct job *next;
    enum job_type type;
    const char *app, *batch_id, *endpoint;
    store_record *recs;
    size_t n, rejected;
    const char *xml;
    size_t xml_len;
    int64_t version;
    int (*fn)(void *ctx, sqlite3 *db); /* JOB_CALL */
    void *fn_ctx;
    int fn_result;
    int result;
    bool duplicate, done;
} job;

enum stmt_id { ST_BEGIN, ST_COMMIT, ST_ROLLBACK, ST_BATCH, ST_PROBE, ST_CONFIG_PUT, ST_CONFIG_VERSION,
               ST_LOAD_COUNT, ST_LOAD_SKETCH, ST_SAVE_COUNT, ST_SAVE_SKETCH, ST_SAVE_MARK, ST_COUNT };

struct store {
    const store_backend *backend; /* first: store.c dispatches through it (store_backend.h) */
    char *path;
    sqlite3 *w;
    sqlite3_stmt *st[ST_COUNT];
    sqlite3_stmt *insert[TABLE_COUNT];
    sqlite3_stmt *fill_keys[KIND_COUNT];
    sqlite3_stmt *fill_trace[KIND_COUNT], *fill_attrs; /* trace_keys, span_attr_keys */
    int64_t trace_run;                                /* trace_keys.b of the last rollup batch */
    sqlite3_stmt *origin_find[2], *origin_add[2];     /* resources, scopes */
    struct {
        uint64_t hash;
        int64_t id;
    } origin_cache[2][1024];                          /* hash → id, of committed rows */
    int origin_col[TABLE_COUNT][2];                   /* the resource_id, scope_id column of each table, or -1 */
    char *apps_sql; /* store_apps */
    pthread_t writer;
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    job *head, *tail;
    size_t queued_items, max_queued;
    bool stopping;
    store_hooks hooks; /* the application layer's (store.h) */
    group *groups[GROUP_BUCKETS];
    size_t n_groups;
    group *dirty;
    /* rollups hold the rows of kind k up to rowid mark[k] (as committed);
     * the groups in memory also hold the rows up to last_rowid[k] */
    int64_t mark[KIND_COUNT], last_rowid[KIND_COUNT];
    size_t lag_rows;
    int64_t lag_ns;
    int64_t lag_since_ns; /* when (mono_ns) the oldest row not in the rollups was committed; 0: none */
    bool need_replay;      /* the groups in memory are lost: rebuild them before the next job */
    /* health (store_health_get): a probe row is committed when asked */
    health_state health;
    bool probe_wanted;
    uint64_t probe_gen;    /* probes done */
    pthread_cond_t probed;
    int64_t txn_since_ns;  /* mono: when the writer's running transaction began; 0: none */
    /* readers */
    pthread_mutex_t rlock;
    pthread_cond_t rfree;
    sqlite3 **readers;
    size_t n_readers, n_free;
    sqlite3 **free_readers;
};

static uint64_t group_hash(enum store_kind kind, const char *app, const char *version, const char *name, int64_t day)
{
    uint64_t h = FNV1A64_INIT;
    h = fnv1a64(h, &kind, sizeof kind);
    h = fnv1a64(h, app, strlen(app) + 1);
    h = fnv1a64(h, version, strlen(version) + 1);
    h = fnv1a64(h, name, strlen(name) + 1);
    return fnv1a64(h, &day, sizeof day);
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

static void bind_text(sqlite3_stmt *s, int i, const char *t)
{
    if (t)
        sqlite3_bind_text(s, i, t, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

static void bind_group_key(sqlite3_stmt *s, const group *g)
{
    bind_text(s, 1, store_kind(g->kind)->name);
    bind_text(s, 2, g->app);
    bind_text(s, 3, g->version);
    bind_text(s, 4, g->name);
    sqlite3_bind_int64(s, 5, g->day);
}

static long metric_index(enum store_kind kind, const char *metric)
{
    const store_kind_desc *kd = store_kind(kind);
    for (size_t i = 0; i < kd->n_metrics; i++)
        if (strcmp(kd->metrics[i], metric) == 0)
            return (long)i;
    return -1;
}

/* Finds or loads a group. Returns NULL on allocation or read failure. */
static group *group_get(store *st, enum store_kind kind, const char *app, const char *version, const char *name,
                        int64_t day)
{
    uint64_t h = group_hash(kind, app, version, name, day);
    group **slot = &st->groups[h % GROUP_BUCKETS];
    for (group *g = *slot; g; g = g->next)
        if (g->hash == h && g->kind == kind && g->day == day && strcmp(g->name, name) == 0 &&
            strcmp(g->app, app) == 0 && strcmp(g->version, version) == 0)
            return g;
    group *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->kind = kind;
    g->day = day;
    g->hash = h;
    g->app = strdup(app);
    g->version = strdup(version);
    g->name = strdup(name);
    for (size_t i = 0; i < STORE_MAX_METRICS; i++)
        sketch_init(&g->m[i]);
    if (!g->app || !g->version || !g->name)
        goto fail;
    sqlite3_stmt *s = st->st[ST_LOAD_COUNT];
    bind_group_key(s, g);
    int r = sqlite3_step(s);
    if (r == SQLITE_ROW) {
        g->count = (uint64_t)sqlite3_column_int64(s, 0);
        g->failed = (uint64_t)sqlite3_column_int64(s, 1);
    }
    sqlite3_reset(s);
    if (r != SQLITE_ROW && r != SQLITE_DONE)
        goto fail;
    s = st->st[ST_LOAD_SKETCH];
    bind_group_key(s, g);
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
        long m = metric_index(kind, (const char *)sqlite3_column_text(s, 0));
        if (m >= 0 && sketch_decode(&g->m[m], sqlite3_column_blob(s, 1), (size_t)sqlite3_column_bytes(s, 1)) < 0)
            r = SQLITE_CORRUPT;
        if (r == SQLITE_CORRUPT)
            break;
    }
    sqlite3_reset(s);
    if (r != SQLITE_DONE)
        goto fail;
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
        for (size_t i = 0, n = store_kind(g->kind)->n_metrics; i < n; i++)
            if (!isnan(metrics[i]))
                (void)sketch_add(&g->m[i], metrics[i]); /* negative values are left out */
    if (!g->dirty) {
        g->dirty = true;
        g->dirty_next = st->dirty;
        st->dirty = g;
    }
}

/* Writes the dirty groups and the marks up to which they hold the rows,
 * in the writer's open transaction. After its COMMIT: groups_flushed. */
static int groups_flush(store *st)
{
    for (size_t k = 0; k < KIND_COUNT; k++) {
        if (st->last_rowid[k] == st->mark[k])
            continue;
        sqlite3_stmt *fills[3] = {st->fill_keys[k], st->fill_trace[k], k == KIND_SPAN ? st->fill_attrs : NULL};
        sqlite3_stmt *s;
        for (int f = 0; f < 3; f++) {
            if (!(s = fills[f]))
                continue;
            sqlite3_bind_int64(s, 1, st->mark[k]);
            sqlite3_bind_int64(s, 2, st->last_rowid[k]);
            if (f == 1)
                sqlite3_bind_int64(s, 3, st->trace_run + 1);
            if (step_done(s) < 0)
                return -EIO;
        }
        s = st->st[ST_SAVE_MARK];
        bind_text(s, 1, store_kind(k)->name);
        sqlite3_bind_int64(s, 2, st->last_rowid[k]);
        int r = sqlite3_step(s);
        sqlite3_reset(s);
        if (r != SQLITE_DONE)
            return -EIO;
    }
    for (group *g = st->dirty; g; g = g->dirty_next) {
        sqlite3_stmt *s = st->st[ST_SAVE_COUNT];
        bind_group_key(s, g);
        sqlite3_bind_int64(s, 6, (int64_t)g->count);
        sqlite3_bind_int64(s, 7, (int64_t)g->failed);
        int r = sqlite3_step(s);
        sqlite3_reset(s);
        if (r != SQLITE_DONE)
            return -EIO;
        for (size_t i = 0; i < store_kind(g->kind)->n_metrics; i++) {
            if (!g->m[i].count)
                continue;
            uint8_t *buf;
            size_t len;
            if (sketch_encode(&g->m[i], &buf, &len) < 0)
                return -ENOMEM;
            s = st->st[ST_SAVE_SKETCH];
            bind_group_key(s, g);
            bind_text(s, 6, store_kind(g->kind)->metrics[i]);
            sqlite3_bind_blob(s, 7, buf, (int)len, free);
            r = sqlite3_step(s);
            sqlite3_reset(s);
            if (r != SQLITE_DONE)
                return -EIO;
        }
    }
    return 0;
}

static void groups_flushed(store *st)
{
    for (group *g = st->dirty, *next; g; g = next) {
        next = g->dirty_next;
        g->dirty = false;
        g->dirty_next = NULL;
    }
    st->dirty = NULL;
    memcpy(st->mark, st->last_rowid, sizeof st->mark);
    st->trace_run++;
    st->lag_rows = 0;
    st->lag_since_ns = 0;
    if (st->n_groups > GROUP_LIMIT)
        groups_drop(st); /* all written: reload on demand */
}

/* ---- writer ---- */

static int step_done(sqlite3_stmt *s)
{
    int r = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

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
        if (step_done(s) == 0)
            id = sqlite3_last_insert_rowid(st->w);
    }
    if (id > 0) {
        st->origin_cache[which][slot].hash = o->hash;
        st->origin_cache[which][slot].id = id;
    }
    return id;
}

static int insert_record(store *st, const store_record *rec)
{
    sqlite3_stmt *s = st->insert[rec->table];
    size_t n = store_table(rec->table)->n_cols;
    const store_origin *origins[2] = {rec->resource, rec->scope};
    for (int w = 0; w < 2; w++) {
        int c = st->origin_col[rec->table][w];
        if (c < 0)
            continue;
        int64_t id = origin_id(st, w, origins[w]);
        if (id < 0)
            return -EIO;
        if (id > 0)
            sqlite3_bind_int64(s, c + 1, id);
        else
            sqlite3_bind_null(s, c + 1);
    }
    for (size_t i = 0; i < n; i++) {
        const store_value *v = &rec->cols[i];
        int c = (int)i + 1;
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
    if (rec->kind == KIND_NONE)
        return 0;
    st->last_rowid[rec->kind] = sqlite3_last_insert_rowid(st->w);
    st->lag_rows++;
    group *g = group_get(st, rec->kind, rec->app, rec->version ? rec->version : "", rec->name,
                         rec->ts_ns / STORE_DAY_NS);
    if (!g)
        return -EIO;
    group_add(st, g, rec->failed, rec->excluded, rec->metrics);
    return 0;
}

/* The SELECT of a kind's raw rows for store_scan and groups_replay:
 * name, failed, excluded, the n metrics, then ts, version ('' for none),
 * app, rowid. */
static char *raw_select(enum store_kind kind, const char *where)
{
    const store_kind_desc *kd = store_kind(kind);
    return sql_text("SELECT %s, failed, %s, %s, ts, COALESCE(version, ''), app, rowid FROM %s %s", kd->name_sql,
                    kd->excluded_sql, kd->metrics_sql, store_table(kd->table)->name, where);
}

/* Rebuilds the groups in memory from the file: the rollups plus every row
 * after the marks (rows committed but not yet in the rollups: after a
 * SIGKILL, or after a failed transaction dropped the groups). Outside a
 * transaction or inside the writer's; 0 or -EIO. */
static int groups_replay(store *st)
{
    groups_drop(st);
    st->lag_rows = 0;
    st->lag_since_ns = 0;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(st->w, "SELECT last_rowid FROM rollup_marks WHERE kind = ?1", -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    for (size_t k = 0; k < KIND_COUNT; k++) {
        bind_text(s, 1, store_kind(k)->name);
        int r = sqlite3_step(s);
        st->mark[k] = r == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
        sqlite3_reset(s);
        if (r != SQLITE_ROW && r != SQLITE_DONE) {
            sqlite3_finalize(s);
            return -EIO;
        }
        st->last_rowid[k] = st->mark[k];
    }
    sqlite3_finalize(s);
    for (enum store_kind k = 0; k < KIND_COUNT; k++) {
        char *sql = raw_select(k, "WHERE rowid > ?1 ORDER BY rowid");
        int r = sql ? sqlite3_prepare_v2(st->w, sql, -1, &s, NULL) : SQLITE_NOMEM;
        free(sql);
        if (r != SQLITE_OK)
            return -EIO;
        sqlite3_bind_int64(s, 1, st->mark[k]);
        size_t nm = store_kind(k)->n_metrics;
        while ((r = sqlite3_step(s)) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(s, 0);
            int c = 3 + (int)nm;
            st->last_rowid[k] = sqlite3_column_int64(s, c + 3);
            if (!name)
                continue;
            double m[STORE_MAX_METRICS];
            for (size_t i = 0; i < nm; i++)
                m[i] = sqlite3_column_type(s, 3 + (int)i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 3 + (int)i);
            group *g = group_get(st, k, (const char *)sqlite3_column_text(s, c + 2),
                                 (const char *)sqlite3_column_text(s, c + 1), name,
                                 sqlite3_column_int64(s, c) / STORE_DAY_NS);
            if (!g) {
                r = SQLITE_NOMEM;
                break;
            }
            group_add(st, g, sqlite3_column_int(s, 1) != 0, sqlite3_column_int(s, 2) != 0, m);
            st->lag_rows++;
        }
        sqlite3_finalize(s);
        if (r != SQLITE_DONE) {
            groups_drop(st);
            return -EIO;
        }
    }
    if (st->lag_rows)
        st->lag_since_ns = mono_ns();
    return 0;
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
        return step_done(s);
    }
    case JOB_RECORDS:
        if (j->batch_id) {
            sqlite3_stmt *s = st->st[ST_BATCH];
            bind_text(s, 1, j->app);
            bind_text(s, 2, j->batch_id);
            bind_text(s, 3, j->endpoint);
            sqlite3_bind_int64(s, 4, wall_ns());
            sqlite3_bind_int64(s, 5, (int64_t)j->n);
            sqlite3_bind_int64(s, 6, (int64_t)j->rejected);
            if ((r = step_done(s)) < 0)
                return r;
            if (sqlite3_changes(st->w) == 0) {
                j->duplicate = true;
                return 0;
            }
        }
        for (size_t i = 0; i < j->n; i++) {
            store_record *rec = &j->recs[i];
            /* a cleaned record is never stored; the hooks count it, and may keep out a copy */
            bool keep = !st->hooks.record || st->hooks.record(st->hooks.ctx, rec);
            rec->skipped = rec->clean || !keep;
            if (!rec->skipped && (r = insert_record(st, rec)) < 0)
                return r;
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
 * flushes them. Called and returns with lock. */
static bool writer_wait(store *st)
{
    while (!st->head && !st->stopping && !st->probe_wanted) {
        if (!st->dirty) {
            pthread_cond_wait(&st->wake, &st->lock);
            continue;
        }
        int64_t t = (st->lag_since_ns ? st->lag_since_ns : mono_ns()) + st->lag_ns;
        if (cond_wait_until(&st->wake, &st->lock, t) == ETIMEDOUT)
            return true;
    }
    return st->head || st->dirty || st->probe_wanted;
}

static void *writer_main(void *arg)
{
    store *st = arg;
    pthread_mutex_lock(&st->lock);
    while (writer_wait(st)) {
        job *list = st->head;
        st->head = st->tail = NULL;
        bool stopping = st->stopping;
        bool probe = st->probe_wanted;
        st->probe_wanted = false;
        int64_t t0 = mono_ns();
        st->txn_since_ns = t0;
        pthread_mutex_unlock(&st->lock);

        int r = 0;
        if (st->need_replay && (r = groups_replay(st)) == 0)
            st->need_replay = false;
        if (r == 0)
            r = step_done(st->st[ST_BEGIN]);
        for (job *j = list; j && r == 0; j = j->next)
            r = run_job(st, j);
        if (r == 0 && probe) {
            sqlite3_bind_int64(st->st[ST_PROBE], 1, wall_ns());
            r = step_done(st->st[ST_PROBE]);
        }
        if (r == 0 && st->lag_rows && !st->lag_since_ns)
            st->lag_since_ns = mono_ns();
        /* the rows are the truth; the rollups follow within LAG_* */
        bool flush = st->dirty && (stopping || st->lag_rows >= LAG_ROWS ||
                                   mono_ns() - st->lag_since_ns >= st->lag_ns);
        if (r == 0 && flush)
            r = groups_flush(st);
        if (r == 0 && st->hooks.commit)
            r = st->hooks.commit(st->hooks.ctx, st->w) < 0 ? -EIO : 0;
        if (r == 0)
            r = step_done(st->st[ST_COMMIT]);
        store_error err;
        if (r < 0)
            store_error_capture(st->w, &err); /* before the ROLLBACK replaces it */
        uint64_t rows[TABLE_COUNT] = {0}, duplicates = 0;
        for (job *j = list; j && r == 0; j = j->next) {
            duplicates += j->duplicate;
            for (size_t i = 0; j->type == JOB_RECORDS && !j->duplicate && i < j->n; i++)
                rows[j->recs[i].table] += !j->recs[i].skipped;
        }
        if (st->hooks.done)
            st->hooks.done(st->hooks.ctx, r == 0);
        health_write(&st->health, r < 0 ? &err : NULL, mono_ns() - t0, rows, duplicates);
        if (r < 0) {
            step_done(st->st[ST_ROLLBACK]);
            /* ids of resources and scopes added by it are gone too */
            memset(st->origin_cache, 0, sizeof st->origin_cache);
            /* the groups may hold rows of this transaction: rebuild them */
            groups_drop(st);
            st->need_replay = true;
        } else if (flush) {
            groups_flushed(st);
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
        if (r < 0 && stopping)
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

static int sqlite_submit(store *st, const char *app, const char *batch_id, const char *endpoint, store_record *recs,
                 size_t n, size_t rejected, bool *ret_duplicate)
{
    job j = {.type = JOB_RECORDS, .app = app, .batch_id = batch_id, .endpoint = endpoint, .recs = recs, .n = n,
             .rejected = rejected};
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

int store_sqlite_write(store *st, int (*fn)(void *ctx, sqlite3 *db), void *ctx)
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
        store_error_capture(db, &err);
    health_read(&st->health, failed ? &err : NULL, what);
    store_reader_put(st, db);
}

sqlite3 *store_reader_get(store *st)
{
    pthread_mutex_lock(&st->rlock);
    while (!st->n_free)
        pthread_cond_wait(&st->rfree, &st->rlock);
    sqlite3 *db = st->free_readers[--st->n_free];
    pthread_mutex_unlock(&st->rlock);
    return db;
}

void store_reader_put(store *st, sqlite3 *db)
{
    pthread_mutex_lock(&st->rlock);
    st->free_readers[st->n_free++] = db;
    pthread_cond_signal(&st->rfree);
    pthread_mutex_unlock(&st->rlock);
}

static int sqlite_config_get(store *st, const char *app, char **ret_xml, size_t *ret_len, char **ret_etag,
                     int64_t *ret_version)
{
    sqlite3 *db = store_reader_get(st);
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

/* The rowid up to which the rollups of kind hold the raw rows. */
static int read_mark(sqlite3 *db, enum store_kind kind, int64_t *ret_mark)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT last_rowid FROM rollup_marks WHERE kind = ?1", -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, store_kind(kind)->name);
    int r = sqlite3_step(s);
    *ret_mark = r == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_finalize(s);
    return r == SQLITE_ROW || r == SQLITE_DONE ? 0 : -EIO;
}

static int scan_rollups(sqlite3 *db, enum store_kind kind, const char *app, const char *version, int64_t d_lo,
                        int64_t d_hi, const store_scan_cb *cb)
{
    static const char *const sql[2] = {
        "SELECT name, count, failed FROM rollup_counts WHERE kind = ?1 AND app = ?2 AND (?3 IS NULL OR version = ?3)"
        " AND day >= ?4 AND day < ?5",
        "SELECT name, metric, sketch FROM rollup_sketches WHERE kind = ?1 AND app = ?2"
        " AND (?3 IS NULL OR version = ?3) AND day >= ?4 AND day < ?5",
    };
    sketch sk;
    sketch_init(&sk);
    for (int q = 0; q < 2; q++) {
        sqlite3_stmt *s;
        if (sqlite3_prepare_v2(db, sql[q], -1, &s, NULL) != SQLITE_OK)
            return -EIO;
        bind_text(s, 1, store_kind(kind)->name);
        bind_text(s, 2, app);
        bind_text(s, 3, version);
        sqlite3_bind_int64(s, 4, d_lo);
        sqlite3_bind_int64(s, 5, d_hi);
        int r;
        while ((r = sqlite3_step(s)) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(s, 0);
            if (q == 0) {
                cb->count(cb->ctx, name, (uint64_t)sqlite3_column_int64(s, 1), (uint64_t)sqlite3_column_int64(s, 2));
                continue;
            }
            long m = metric_index(kind, (const char *)sqlite3_column_text(s, 1));
            if (m < 0)
                continue;
            if (sketch_decode(&sk, sqlite3_column_blob(s, 2), (size_t)sqlite3_column_bytes(s, 2)) < 0) {
                r = SQLITE_CORRUPT;
                break;
            }
            cb->sketch(cb->ctx, name, (size_t)m, &sk);
        }
        sqlite3_finalize(s);
        if (r != SQLITE_DONE) {
            sketch_reset(&sk);
            return -EIO;
        }
    }
    sketch_reset(&sk);
    return 0;
}

/* The raw rows of [from, to): with after < 0 those up to the mark, from the
 * kind's keys table (one range of its primary key); with after >= 0 those
 * after rowid `after` (the rows that are not in the rollups and the keys
 * yet), from the raw table by rowid. */
static int scan_raw(sqlite3 *db, enum store_kind kind, const char *app, const char *version, int64_t from,
                    int64_t to, int64_t after, const store_scan_cb *cb)
{
    char *sql;
    if (after >= 0) {
        sql = raw_select(kind, "WHERE rowid > ?5 AND app = ?1 AND ts >= ?2 AND ts < ?3 AND (?4 IS NULL OR version = ?4)");
    } else {
        char ms[128];
        keys_columns(ms, sizeof ms, ", m%zu");
        sql = sql_text("SELECT name, failed, excluded%s FROM %s_keys"
                       " WHERE app = ?1 AND ts >= ?2 AND ts < ?3 AND (?4 IS NULL OR version = ?4)",
                       ms, store_table(store_kind(kind)->table)->name);
    }
    sqlite3_stmt *s;
    int pr = sql ? sqlite3_prepare_v2(db, sql, -1, &s, NULL) : SQLITE_NOMEM;
    free(sql);
    if (pr != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, app);
    sqlite3_bind_int64(s, 2, from);
    sqlite3_bind_int64(s, 3, to);
    bind_text(s, 4, version);
    if (after >= 0)
        sqlite3_bind_int64(s, 5, after);
    size_t n = store_kind(kind)->n_metrics;
    double m[STORE_MAX_METRICS];
    int r;
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(s, 0);
        if (!name)
            continue;
        for (size_t i = 0; i < n; i++)
            m[i] = sqlite3_column_type(s, 3 + (int)i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 3 + (int)i);
        cb->raw(cb->ctx, name, sqlite3_column_int(s, 1) != 0, sqlite3_column_int(s, 2) != 0, m);
    }
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

static int sqlite_scan(store *st, enum store_kind kind, const char *app, const char *version, int64_t from_ns,
               int64_t to_ns, const store_scan_cb *cb)
{
    if (kind < 0 || kind >= KIND_COUNT)
        return -EINVAL;
    if (from_ns < 0)
        from_ns = 0;
    if (to_ns <= from_ns)
        return 0;
    /* whole days [d_lo, d_hi) from the rollups, the cut ends from raw rows */
    int64_t d_lo = from_ns / STORE_DAY_NS + (from_ns % STORE_DAY_NS != 0);
    int64_t d_hi = to_ns == INT64_MAX ? INT64_MAX : to_ns / STORE_DAY_NS;
    sqlite3 *db = store_reader_get(st);
    int r = 0;
    /* one read transaction: rollups and raw rows from the same snapshot */
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    /* the rows after the mark, of the whole range: in neither the rollups
     * nor the keys */
    int64_t mark = 0;
    r = read_mark(db, kind, &mark);
    if (r == 0)
        r = scan_raw(db, kind, app, version, from_ns, to_ns, mark, cb);
    if (r == 0 && d_lo >= d_hi) {
        r = scan_raw(db, kind, app, version, from_ns, to_ns, -1, cb);
    } else if (r == 0) {
        r = scan_rollups(db, kind, app, version, d_lo, d_hi, cb);
        if (r == 0 && from_ns < d_lo * STORE_DAY_NS)
            r = scan_raw(db, kind, app, version, from_ns, d_lo * STORE_DAY_NS, -1, cb);
        if (r == 0 && d_hi != INT64_MAX && to_ns > d_hi * STORE_DAY_NS)
            r = scan_raw(db, kind, app, version, d_hi * STORE_DAY_NS, to_ns, -1, cb);
    }
    store_error err;
    if (r < 0)
        store_error_capture(db, &err); /* before the COMMIT replaces it */
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    health_read(&st->health, r < 0 ? &err : NULL, "a query");
    store_reader_put(st, db);
    return r;
}

static int sqlite_apps(store *st, void (*cb)(void *ctx, const char *app, const char *version), void *ctx)
{
    sqlite3 *db = store_reader_get(st);
    sqlite3_stmt *s;
    int r = -EIO;
    if (sqlite3_prepare_v2(db, st->apps_sql, -1, &s, NULL) == SQLITE_OK) {
        int sr;
        while ((sr = sqlite3_step(s)) == SQLITE_ROW)
            cb(ctx, (const char *)sqlite3_column_text(s, 0), (const char *)sqlite3_column_text(s, 1));
        r = sr == SQLITE_DONE ? 0 : -EIO;
        sqlite3_finalize(s);
    }
    read_done(st, db, r < 0, "a query");
    return r;
}

int store_sqlite_read(store *st, int (*fn)(void *ctx, sqlite3 *db), void *ctx)
{
    sqlite3 *db = store_reader_get(st);
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    int r = fn(ctx, db);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    read_done(st, db, r < 0, "a query");
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
    [ST_CONFIG_PUT] = "INSERT INTO configs(app, version, etag, xml, created_ns) VALUES(?1, ?2, ?3, ?4, ?5)",
    [ST_CONFIG_VERSION] = "SELECT COALESCE(MAX(version), 0) FROM configs WHERE app = ?1",
    [ST_LOAD_COUNT] = "SELECT count, failed FROM rollup_counts WHERE kind = ?1 AND app = ?2 AND version = ?3"
                      " AND name = ?4 AND day = ?5",
    [ST_LOAD_SKETCH] = "SELECT metric, sketch FROM rollup_sketches WHERE kind = ?1 AND app = ?2 AND version = ?3"
                       " AND name = ?4 AND day = ?5",
    [ST_SAVE_COUNT] = "INSERT OR REPLACE INTO rollup_counts(kind, app, version, name, day, count, failed)"
                      " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_SAVE_SKETCH] = "INSERT OR REPLACE INTO rollup_sketches(kind, app, version, name, day, metric, sketch)"
                       " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_SAVE_MARK] = "INSERT OR REPLACE INTO rollup_marks(kind, last_rowid) VALUES(?1, ?2)",
};

/* store_apps: the apps and versions of the rollups, and of the rows they do
 * not hold yet. */
static char *apps_sql(void)
{
    char sql[2048];
    size_t o = (size_t)snprintf(sql, sizeof sql, "SELECT app, version FROM rollup_counts");
    for (enum store_kind k = 0; k < KIND_COUNT && o < sizeof sql; k++)
        o += (size_t)snprintf(sql + o, sizeof sql - o,
                              " UNION SELECT app, COALESCE(version, '') FROM %s NOT INDEXED"
                              " WHERE rowid > (SELECT last_rowid FROM rollup_marks WHERE kind = '%s')",
                              store_table(store_kind(k)->table)->name, store_kind(k)->name);
    if (o < sizeof sql)
        o += (size_t)snprintf(sql + o, sizeof sql - o, " ORDER BY 1, 2");
    return o < sizeof sql ? strdup(sql) : NULL;
}

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
    for (size_t i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(st->st[i]);
    for (size_t i = 0; i < TABLE_COUNT; i++)
        sqlite3_finalize(st->insert[i]);
    for (size_t k = 0; k < KIND_COUNT; k++) {
        sqlite3_finalize(st->fill_keys[k]);
        sqlite3_finalize(st->fill_trace[k]);
    }
    sqlite3_finalize(st->fill_attrs);
    for (int w = 0; w < 2; w++) {
        sqlite3_finalize(st->origin_find[w]);
        sqlite3_finalize(st->origin_add[w]);
    }
    sqlite3_close(st->w);
    for (size_t i = 0; i < st->n_readers; i++)
        sqlite3_close(st->readers[i]);
    free(st->readers);
    free(st->free_readers);
    groups_drop(st);
    free(st->apps_sql);
    free(st->path);
    health_destroy(&st->health);
    free(st);
}

store *store_sqlite_open(const char *path, const store_options *opt, char *err, size_t err_size)
{
    store *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, err_size, "%s: out of memory", path);
        return NULL;
    }
    const char *layout = store_layout_error();
    if (layout) {
        snprintf(err, err_size, "%s: the record schema does not fit the store: %s", path, layout);
        free(st);
        return NULL;
    }
    st->backend = &store_backend_sqlite;
    st->path = strdup(path);
    health_init(&st->health, st->path, opt->log, opt->log_ctx);
    st->max_queued = opt->max_queued_items ? opt->max_queued_items : 200000;
    st->lag_ns = (int64_t)opt->rollup_lag_ms * 1000000LL;
    st->hooks = opt->hooks;
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
    char pragmas[256];
    snprintf(pragmas, sizeof pragmas,
             "PRAGMA page_size=16384; PRAGMA busy_timeout=5000; PRAGMA journal_mode=WAL; PRAGMA synchronous=%s;"
             " PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY; PRAGMA wal_autocheckpoint=16384;",
             opt->sync_full ? "FULL" : "NORMAL");
    char *msg = NULL;
    if (store_register_functions(st->w) != SQLITE_OK) {
        snprintf(err, err_size, "%s: %s", path, sqlite3_errmsg(st->w));
        goto fail;
    }
    if (sqlite3_exec(st->w, pragmas, NULL, NULL, &msg) != SQLITE_OK || schema_create(st->w, &msg) != SQLITE_OK) {
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
        const char *columns = store_table_columns(t, &n);
        char marks[2 * STORE_MAX_COLS] = "";
        for (size_t c = 0; c < n; c++)
            strcat(marks, c ? ",?" : "?");
        if (prepare_owned(st->w, sql_text("INSERT INTO %s(%s) VALUES(%s)", store_table(t)->name, columns, marks),
                          &st->insert[t]) != SQLITE_OK) {
            snprintf(err, err_size, "%s: %s", path, sqlite3_errmsg(st->w));
            goto fail;
        }
    }
    for (enum store_kind k = 0; k < KIND_COUNT; k++)
        if (prepare_owned(st->w, keys_fill_sql(k, "rowid > ?1 AND rowid <= ?2"), &st->fill_keys[k]) != SQLITE_OK ||
            prepare_owned(st->w, trace_fill_sql(k, "rowid > ?1 AND rowid <= ?2"), &st->fill_trace[k]) != SQLITE_OK) {
            snprintf(err, err_size, "%s: %s", path, sqlite3_errmsg(st->w));
            goto fail;
        }
    static const char *const origin_tables[2] = {"resources", "scopes"};
    for (int w = 0; w < 2; w++)
        if (prepare_owned(st->w, sql_text("SELECT id FROM %s WHERE hash = ?1 AND json = ?2", origin_tables[w]),
                          &st->origin_find[w]) != SQLITE_OK ||
            prepare_owned(st->w, sql_text("INSERT INTO %s(hash, json) VALUES(?1, ?2)", origin_tables[w]),
                          &st->origin_add[w]) != SQLITE_OK) {
            snprintf(err, err_size, "%s: %s", path, sqlite3_errmsg(st->w));
            goto fail;
        }
    if (prepare_owned(st->w, attrs_fill_sql(KIND_SPAN, "s.rowid > ?1 AND s.rowid <= ?2"), &st->fill_attrs) !=
        SQLITE_OK) {
        snprintf(err, err_size, "%s: %s", path, sqlite3_errmsg(st->w));
        goto fail;
    }
    for (enum store_table t = 0; t < TABLE_COUNT; t++) {
        st->origin_col[t][0] = st->origin_col[t][1] = -1;
        for (size_t c = 0; c < store_table(t)->n_cols; c++) {
            enum store_source src = store_table(t)->cols[c].source;
            if (src == SRC_RESOURCE_ID || src == SRC_SCOPE_ID)
                st->origin_col[t][src == SRC_SCOPE_ID] = (int)c;
        }
    }
    if (!(st->apps_sql = apps_sql())) {
        snprintf(err, err_size, "%s: out of memory", path);
        goto fail;
    }
    sqlite3_stmt *runq = NULL;
    if (sqlite3_prepare_v2(st->w, "SELECT COALESCE(MAX(b), 0) FROM trace_keys", -1, &runq, NULL) == SQLITE_OK &&
        sqlite3_step(runq) == SQLITE_ROW)
        st->trace_run = sqlite3_column_int64(runq, 0);
    sqlite3_finalize(runq);
    if (groups_replay(st) < 0) {
        snprintf(err, err_size, "%s: cannot rebuild the rollups: %s", path, sqlite3_errmsg(st->w));
        goto fail;
    }
    for (size_t i = 0; i < nr; i++) {
        if (sqlite3_open_v2(path, &st->readers[i], SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
            snprintf(err, err_size, "%s: cannot open for reading: %s", path, sqlite3_errmsg(st->readers[i]));
            st->n_readers = i + 1;
            goto fail;
        }
        sqlite3_busy_timeout(st->readers[i], 5000);
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

const store_backend store_backend_sqlite = {
    .name = "sqlite",
    .close = sqlite_close,
    .submit = sqlite_submit,
    .health_get = sqlite_health_get,
    .get_stats = sqlite_get_stats,
    .config_put = sqlite_config_put,
    .config_get = sqlite_config_get,
    .scan = sqlite_scan,
    .apps = sqlite_apps,
    .trace = store_sqlite_trace,
    .search_spans = store_sqlite_search_spans,
    .search_logs = store_sqlite_search_logs,
    .search_points = store_sqlite_search_points,
    .explain = store_sqlite_explain,
    .version_rows = store_sqlite_version_rows,
    .rows = store_sqlite_rows,
    .request_stats = store_sqlite_request_stats,
    .logs_of_type = store_sqlite_logs_of_type,
    .metric_sums = store_sqlite_metric_sums,
    .dash_explain = store_sqlite_dash_explain,
};
