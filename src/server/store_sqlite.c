/* SQLite storage (store.h).
 *
 * Writer thread states, per group of jobs:
 *   take the queue → BEGIN → run each job (records / probe / config; rows
 *   appended, groups in memory updated) → [rollup flush] → COMMIT → wake
 *   the submitters.
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
 * Schema 2. A schema 1 file (rollups in step with every row, a covering
 * index per raw table) is converted on open: marks = the last rows, the
 * keys tables filled from all rows, the covering indexes dropped.
 */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const store_kind_desc store_kinds[KIND_COUNT] = {
    [KIND_PAGE] = {"page", 4, {"initial_draw_ms", "api_load_ms", "final_draw_ms", "total_ms"}},
    [KIND_STARTUP] = {"startup", 5, {"cold_ms", "first_screen_ms", "app_cost_ms", "full_display_ms", "warm_ms"}},
    [KIND_REQUEST] = {"request", 5, {"total_ms", "dns_ms", "connect_ms", "tls_ms", "first_byte_ms"}},
    [KIND_SPAN] = {"span", 1, {"duration_ms"}},
};

static const struct {
    const char *name;
    const char *columns;
    size_t n;
} tables[TABLE_COUNT] = {
    [TABLE_PAGE_LOADS] = {"page_loads",
                          "app, version, session, ts, page, instance, kind, status, main, initial_draw_ms, "
                          "api_load_ms, final_draw_ms, total_ms, failed, trace_id, span_id, extra", 17},
    [TABLE_STARTUPS] = {"startups",
                        "app, version, session, ts, kind, cold_ms, first_screen_ms, app_cost_ms, full_display_ms, "
                        "warm_ms, outlier, main_page, page, failed, trace_id, span_id, extra", 17},
    [TABLE_REQUESTS] = {"requests",
                        "app, version, session, ts, method, url, pattern, status, error, total_ms, dns_ms, "
                        "connect_ms, tls_ms, first_byte_ms, bytes_sent, bytes_received, content_type, page, failed, "
                        "trace_id, span_id, extra", 22},
    [TABLE_SPANS] = {"spans",
                     "app, version, session, ts, end_ts, name, kind, status_code, status_message, failed, trace_id, "
                     "span_id, parent_span_id, scope, attributes", 15},
    [TABLE_LOGS] = {"logs", "app, version, session, ts, type, severity_number, severity_text, body, attributes", 9},
    [TABLE_METRIC_POINTS] = {"metric_points",
                             "app, version, session, ts, name, type, unit, value, count, attributes", 10},
};

/* How store_scan reads a kind's raw rows for a partial day. Constant text:
 * only values are bound. */
static const struct {
    const char *table, *keys, *name_expr, *metrics, *excluded;
} scans[KIND_COUNT] = {
    [KIND_PAGE] = {"page_loads", "page_loads_keys", "page", "initial_draw_ms, api_load_ms, final_draw_ms, total_ms",
                   "0"},
    [KIND_STARTUP] = {"startups", "startups_keys", "kind",
                      "cold_ms, first_screen_ms, app_cost_ms, full_display_ms, warm_ms", "outlier"},
    [KIND_REQUEST] = {"requests", "requests_keys", "method || ' ' || pattern",
                      "total_ms, dns_ms, connect_ms, tls_ms, first_byte_ms", "0"},
    [KIND_SPAN] = {"spans", "spans_keys", "name", "(end_ts - ts) / 1e6", "0"},
};

/* A *_keys table: per raw row up to the mark, what a scan of a cut day
 * reads (name, failed, excluded, metrics m0… in the kind's order), keyed
 * by (app, ts, rowid of the raw row). Filled by groups_flush. */
#define KEYS_TABLE(t)                                                                                               \
    "CREATE TABLE IF NOT EXISTS " t "_keys(app TEXT NOT NULL, ts INTEGER NOT NULL, version TEXT, name TEXT NOT NULL,"  \
    "  failed INTEGER, excluded INTEGER, m0 REAL, m1 REAL, m2 REAL, m3 REAL, m4 REAL, rid INTEGER NOT NULL,"         \
    "  PRIMARY KEY(app, ts, rid)) WITHOUT ROWID;"

static const char SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS batches(app TEXT NOT NULL, id TEXT NOT NULL, endpoint TEXT, received_ns INTEGER,"
    "  items INTEGER, rejected INTEGER, PRIMARY KEY(app, id)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS page_loads(app TEXT NOT NULL, version TEXT, session TEXT, ts INTEGER NOT NULL,"
    "  page TEXT NOT NULL, instance INTEGER, kind TEXT, status TEXT, main INTEGER, initial_draw_ms REAL,"
    "  api_load_ms REAL, final_draw_ms REAL, total_ms REAL, failed INTEGER, trace_id BLOB, span_id BLOB, extra TEXT);"
    "DROP INDEX IF EXISTS page_loads_app_ts;"
    "DROP INDEX IF EXISTS page_loads_scan;"
    KEYS_TABLE("page_loads")
    "CREATE TABLE IF NOT EXISTS startups(app TEXT NOT NULL, version TEXT, session TEXT, ts INTEGER NOT NULL,"
    "  kind TEXT NOT NULL, cold_ms REAL, first_screen_ms REAL, app_cost_ms REAL, full_display_ms REAL, warm_ms REAL,"
    "  outlier INTEGER, main_page TEXT, page TEXT, failed INTEGER, trace_id BLOB, span_id BLOB, extra TEXT);"
    "DROP INDEX IF EXISTS startups_app_ts;"
    "DROP INDEX IF EXISTS startups_scan;"
    KEYS_TABLE("startups")
    "CREATE TABLE IF NOT EXISTS requests(app TEXT NOT NULL, version TEXT, session TEXT, ts INTEGER NOT NULL,"
    "  method TEXT, url TEXT, pattern TEXT, status INTEGER, error TEXT, total_ms REAL, dns_ms REAL, connect_ms REAL,"
    "  tls_ms REAL, first_byte_ms REAL, bytes_sent INTEGER, bytes_received INTEGER, content_type TEXT, page TEXT,"
    "  failed INTEGER, trace_id BLOB, span_id BLOB, extra TEXT);"
    "DROP INDEX IF EXISTS requests_app_ts;"
    "DROP INDEX IF EXISTS requests_scan;"
    KEYS_TABLE("requests")
    "CREATE TABLE IF NOT EXISTS spans(app TEXT NOT NULL, version TEXT, session TEXT, ts INTEGER NOT NULL,"
    "  end_ts INTEGER NOT NULL, name TEXT NOT NULL, kind INTEGER, status_code INTEGER, status_message TEXT,"
    "  failed INTEGER, trace_id BLOB, span_id BLOB, parent_span_id BLOB, scope TEXT, attributes TEXT);"
    "DROP INDEX IF EXISTS spans_app_ts;"
    "DROP INDEX IF EXISTS spans_scan;"
    KEYS_TABLE("spans")
    "CREATE TABLE IF NOT EXISTS logs(app TEXT NOT NULL, version TEXT, session TEXT, ts INTEGER NOT NULL, type TEXT,"
    "  severity_number INTEGER, severity_text TEXT, body TEXT, attributes TEXT);"
    "CREATE INDEX IF NOT EXISTS logs_app_ts ON logs(app, ts);"
    "CREATE TABLE IF NOT EXISTS metric_points(app TEXT NOT NULL, version TEXT, session TEXT, ts INTEGER NOT NULL,"
    "  name TEXT NOT NULL, type TEXT, unit TEXT, value REAL, count INTEGER, attributes TEXT);"
    "CREATE INDEX IF NOT EXISTS metric_points_app_ts ON metric_points(app, ts);"
    "CREATE TABLE IF NOT EXISTS rollup_counts(kind TEXT NOT NULL, app TEXT NOT NULL, version TEXT NOT NULL,"
    "  name TEXT NOT NULL, day INTEGER NOT NULL, count INTEGER NOT NULL, failed INTEGER NOT NULL,"
    "  PRIMARY KEY(kind, app, version, name, day)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS rollup_sketches(kind TEXT NOT NULL, app TEXT NOT NULL, version TEXT NOT NULL,"
    "  name TEXT NOT NULL, metric TEXT NOT NULL, day INTEGER NOT NULL, sketch BLOB NOT NULL,"
    "  PRIMARY KEY(kind, app, version, name, metric, day)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS configs(app TEXT NOT NULL, version INTEGER NOT NULL, etag TEXT NOT NULL,"
    "  xml TEXT NOT NULL, created_ns INTEGER, PRIMARY KEY(app, version)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS rollup_marks(kind TEXT PRIMARY KEY, last_rowid INTEGER NOT NULL) WITHOUT ROWID;"
    /* a file of schema 1 had its rollups in step with every row: its marks are the last rows */
    "INSERT OR IGNORE INTO rollup_marks SELECT 'page', COALESCE(MAX(rowid), 0) FROM page_loads;"
    "INSERT OR IGNORE INTO rollup_marks SELECT 'startup', COALESCE(MAX(rowid), 0) FROM startups;"
    "INSERT OR IGNORE INTO rollup_marks SELECT 'request', COALESCE(MAX(rowid), 0) FROM requests;"
    "INSERT OR IGNORE INTO rollup_marks SELECT 'span', COALESCE(MAX(rowid), 0) FROM spans;"
    "INSERT INTO page_loads_keys SELECT app, ts, version, page, failed, 0, initial_draw_ms, api_load_ms,"
    "  final_draw_ms, total_ms, NULL, rowid FROM page_loads WHERE (SELECT value FROM meta WHERE key = 'schema') = '1';"
    "INSERT INTO startups_keys SELECT app, ts, version, kind, failed, outlier, cold_ms, first_screen_ms, app_cost_ms,"
    "  full_display_ms, warm_ms, rowid FROM startups WHERE (SELECT value FROM meta WHERE key = 'schema') = '1';"
    "INSERT INTO requests_keys SELECT app, ts, version, method || ' ' || pattern, failed, 0, total_ms, dns_ms,"
    "  connect_ms, tls_ms, first_byte_ms, rowid FROM requests"
    "  WHERE (SELECT value FROM meta WHERE key = 'schema') = '1' AND method || ' ' || pattern IS NOT NULL;"
    "INSERT INTO spans_keys SELECT app, ts, version, name, failed, 0, (end_ts - ts) / 1e6, NULL, NULL, NULL, NULL,"
    "  rowid FROM spans WHERE (SELECT value FROM meta WHERE key = 'schema') = '1';"
    "INSERT OR REPLACE INTO meta(key, value) VALUES('schema', '2');";

const char *store_table_columns(enum store_table t, size_t *ret_n)
{
    *ret_n = tables[t].n;
    return tables[t].columns;
}

static int64_t now_ns(void);
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

enum job_type { JOB_RECORDS, JOB_PROBE, JOB_CONFIG };

typedef struct job {
    struct job *next;
    enum job_type type;
    const char *app, *batch_id, *endpoint;
    store_record *recs;
    size_t n, rejected;
    const char *xml;
    size_t xml_len;
    int64_t version;
    int result;
    bool duplicate, done;
} job;

enum stmt_id { ST_BEGIN, ST_COMMIT, ST_ROLLBACK, ST_BATCH, ST_PROBE, ST_CONFIG_PUT, ST_CONFIG_VERSION,
               ST_LOAD_COUNT, ST_LOAD_SKETCH, ST_SAVE_COUNT, ST_SAVE_SKETCH, ST_SAVE_MARK, ST_COUNT };

struct store {
    char *path;
    sqlite3 *w;
    sqlite3_stmt *st[ST_COUNT];
    sqlite3_stmt *insert[TABLE_COUNT];
    sqlite3_stmt *fill_keys[KIND_COUNT];
    pthread_t writer;
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    job *head, *tail;
    size_t queued_items, max_queued;
    bool stopping;
    group *groups[GROUP_BUCKETS];
    size_t n_groups;
    group *dirty;
    /* rollups hold the rows of kind k up to rowid mark[k] (as committed);
     * the groups in memory also hold the rows up to last_rowid[k] */
    int64_t mark[KIND_COUNT], last_rowid[KIND_COUNT];
    size_t lag_rows;
    int64_t lag_ns;
    int64_t lag_since_ns; /* when the oldest row not in the rollups was committed; 0: none */
    bool need_replay;      /* the groups in memory are lost: rebuild them before the next job */
    /* readers */
    pthread_mutex_t rlock;
    pthread_cond_t rfree;
    sqlite3 **readers;
    size_t n_readers, n_free;
    sqlite3 **free_readers;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ULL;
    return h;
}

static uint64_t group_hash(enum store_kind kind, const char *app, const char *version, const char *name, int64_t day)
{
    uint64_t h = 14695981039346656037ULL;
    h = fnv(h, &kind, sizeof kind);
    h = fnv(h, app, strlen(app) + 1);
    h = fnv(h, version, strlen(version) + 1);
    h = fnv(h, name, strlen(name) + 1);
    return fnv(h, &day, sizeof day);
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
    bind_text(s, 1, store_kinds[g->kind].name);
    bind_text(s, 2, g->app);
    bind_text(s, 3, g->version);
    bind_text(s, 4, g->name);
    sqlite3_bind_int64(s, 5, g->day);
}

static long metric_index(enum store_kind kind, const char *metric)
{
    for (size_t i = 0; i < store_kinds[kind].n_metrics; i++)
        if (strcmp(store_kinds[kind].metrics[i], metric) == 0)
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
        for (size_t i = 0; i < store_kinds[g->kind].n_metrics; i++)
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
        sqlite3_stmt *s = st->fill_keys[k];
        sqlite3_bind_int64(s, 1, st->mark[k]);
        sqlite3_bind_int64(s, 2, st->last_rowid[k]);
        if (step_done(s) < 0)
            return -EIO;
        s = st->st[ST_SAVE_MARK];
        bind_text(s, 1, store_kinds[k].name);
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
        for (size_t i = 0; i < store_kinds[g->kind].n_metrics; i++) {
            if (!g->m[i].count)
                continue;
            uint8_t *buf;
            size_t len;
            if (sketch_encode(&g->m[i], &buf, &len) < 0)
                return -ENOMEM;
            s = st->st[ST_SAVE_SKETCH];
            bind_group_key(s, g);
            bind_text(s, 6, store_kinds[g->kind].metrics[i]);
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
    st->lag_rows = 0;
    st->lag_since_ns = 0;
    if (st->n_groups > GROUP_LIMIT)
        groups_drop(st); /* all written: reload on demand */
}

/* ---- writer ---- */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int step_done(sqlite3_stmt *s)
{
    int r = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

static int insert_record(store *st, const store_record *rec)
{
    sqlite3_stmt *s = st->insert[rec->table];
    for (size_t i = 0; i < tables[rec->table].n; i++) {
        const store_value *v = &rec->cols[i];
        int c = (int)i + 1;
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
static void raw_select(char *sql, size_t size, enum store_kind kind, const char *where)
{
    snprintf(sql, size, "SELECT %s, failed, %s, %s, ts, COALESCE(version, ''), app, rowid FROM %s %s",
             scans[kind].name_expr, scans[kind].excluded, scans[kind].metrics, scans[kind].table, where);
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
        bind_text(s, 1, store_kinds[k].name);
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
        char sql[512];
        raw_select(sql, sizeof sql, k, "WHERE rowid > ?1 ORDER BY rowid");
        if (sqlite3_prepare_v2(st->w, sql, -1, &s, NULL) != SQLITE_OK)
            return -EIO;
        sqlite3_bind_int64(s, 1, st->mark[k]);
        size_t nm = store_kinds[k].n_metrics;
        int r;
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
        st->lag_since_ns = now_ns();
    return 0;
}

static int run_job(store *st, job *j)
{
    int r;
    switch (j->type) {
    case JOB_PROBE:
        sqlite3_bind_int64(st->st[ST_PROBE], 1, now_ns());
        return step_done(st->st[ST_PROBE]);
    case JOB_CONFIG: {
        uint64_t h = fnv(14695981039346656037ULL, j->xml, j->xml_len);
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
        sqlite3_bind_int64(s, 5, now_ns());
        j->version = v;
        return step_done(s);
    }
    case JOB_RECORDS:
        if (j->batch_id) {
            sqlite3_stmt *s = st->st[ST_BATCH];
            bind_text(s, 1, j->app);
            bind_text(s, 2, j->batch_id);
            bind_text(s, 3, j->endpoint);
            sqlite3_bind_int64(s, 4, now_ns());
            sqlite3_bind_int64(s, 5, (int64_t)j->n);
            sqlite3_bind_int64(s, 6, (int64_t)j->rejected);
            if ((r = step_done(s)) < 0)
                return r;
            if (sqlite3_changes(st->w) == 0) {
                j->duplicate = true;
                return 0;
            }
        }
        for (size_t i = 0; i < j->n; i++)
            if ((r = insert_record(st, &j->recs[i])) < 0)
                return r;
        return 0;
    }
    return -EINVAL;
}

/* Waits for jobs; returns false when the writer should stop. With rows
 * not yet in the rollups it waits at most until the oldest of them has
 * waited the rollup lag, and then returns with an empty queue: the caller
 * flushes them. Called and returns with lock. */
static bool writer_wait(store *st)
{
    while (!st->head && !st->stopping) {
        if (!st->dirty) {
            pthread_cond_wait(&st->wake, &st->lock);
            continue;
        }
        int64_t t = (st->lag_since_ns ? st->lag_since_ns : now_ns()) + st->lag_ns;
        struct timespec deadline = {.tv_sec = t / 1000000000LL, .tv_nsec = t % 1000000000LL};
        if (pthread_cond_timedwait(&st->wake, &st->lock, &deadline) == ETIMEDOUT)
            return true;
    }
    return st->head || st->dirty;
}

static void *writer_main(void *arg)
{
    store *st = arg;
    pthread_mutex_lock(&st->lock);
    while (writer_wait(st)) {
        job *list = st->head;
        st->head = st->tail = NULL;
        bool stopping = st->stopping;
        pthread_mutex_unlock(&st->lock);

        int r = 0;
        if (st->need_replay && (r = groups_replay(st)) == 0)
            st->need_replay = false;
        if (r == 0)
            r = step_done(st->st[ST_BEGIN]);
        for (job *j = list; j && r == 0; j = j->next)
            r = run_job(st, j);
        if (r == 0 && st->lag_rows && !st->lag_since_ns)
            st->lag_since_ns = now_ns();
        /* the rows are the truth; the rollups follow within LAG_* */
        bool flush = st->dirty && (stopping || st->lag_rows >= LAG_ROWS ||
                                   now_ns() - st->lag_since_ns >= st->lag_ns);
        if (r == 0 && flush)
            r = groups_flush(st);
        if (r == 0)
            r = step_done(st->st[ST_COMMIT]);
        if (r < 0) {
            step_done(st->st[ST_ROLLBACK]);
            /* the groups may hold rows of this transaction: rebuild them */
            groups_drop(st);
            st->need_replay = true;
        } else if (flush) {
            groups_flushed(st);
        }

        pthread_mutex_lock(&st->lock);
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
    if (st->tail)
        st->tail->next = j;
    else
        st->head = j;
    st->tail = j;
    pthread_cond_signal(&st->wake);
    while (!j->done)
        pthread_cond_wait(&st->done, &st->lock);
    pthread_mutex_unlock(&st->lock);
    return j->result;
}

int store_submit(store *st, const char *app, const char *batch_id, const char *endpoint, store_record *recs,
                 size_t n, size_t rejected, bool *ret_duplicate)
{
    job j = {.type = JOB_RECORDS, .app = app, .batch_id = batch_id, .endpoint = endpoint, .recs = recs, .n = n,
             .rejected = rejected};
    int r = submit(st, &j);
    *ret_duplicate = j.duplicate;
    return r;
}

int store_probe(store *st)
{
    job j = {.type = JOB_PROBE};
    return submit(st, &j);
}

int store_config_put(store *st, const char *app, const char *xml, size_t len, int64_t *ret_version)
{
    job j = {.type = JOB_CONFIG, .app = app, .xml = xml, .xml_len = len};
    int r = submit(st, &j);
    if (r == 0)
        *ret_version = j.version;
    return r;
}

/* ---- readers ---- */

static sqlite3 *reader_get(store *st)
{
    pthread_mutex_lock(&st->rlock);
    while (!st->n_free)
        pthread_cond_wait(&st->rfree, &st->rlock);
    sqlite3 *db = st->free_readers[--st->n_free];
    pthread_mutex_unlock(&st->rlock);
    return db;
}

static void reader_put(store *st, sqlite3 *db)
{
    pthread_mutex_lock(&st->rlock);
    st->free_readers[st->n_free++] = db;
    pthread_cond_signal(&st->rfree);
    pthread_mutex_unlock(&st->rlock);
}

int store_config_get(store *st, const char *app, char **ret_xml, size_t *ret_len, char **ret_etag,
                     int64_t *ret_version)
{
    sqlite3 *db = reader_get(st);
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
    reader_put(st, db);
    return r;
}

/* The rowid up to which the rollups of kind hold the raw rows. */
static int read_mark(sqlite3 *db, enum store_kind kind, int64_t *ret_mark)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT last_rowid FROM rollup_marks WHERE kind = ?1", -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, store_kinds[kind].name);
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
        bind_text(s, 1, store_kinds[kind].name);
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
    char sql[512];
    if (after >= 0)
        raw_select(sql, sizeof sql, kind,
                   "WHERE rowid > ?5 AND app = ?1 AND ts >= ?2 AND ts < ?3 AND (?4 IS NULL OR version = ?4)");
    else
        snprintf(sql, sizeof sql,
                 "SELECT name, failed, excluded, m0, m1, m2, m3, m4 FROM %s"
                 " WHERE app = ?1 AND ts >= ?2 AND ts < ?3 AND (?4 IS NULL OR version = ?4)",
                 scans[kind].keys);
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, app);
    sqlite3_bind_int64(s, 2, from);
    sqlite3_bind_int64(s, 3, to);
    bind_text(s, 4, version);
    if (after >= 0)
        sqlite3_bind_int64(s, 5, after);
    size_t n = store_kinds[kind].n_metrics;
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

int store_scan(store *st, enum store_kind kind, const char *app, const char *version, int64_t from_ns,
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
    sqlite3 *db = reader_get(st);
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
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    reader_put(st, db);
    return r;
}

int store_apps(store *st, void (*cb)(void *ctx, const char *app, const char *version), void *ctx)
{
    sqlite3 *db = reader_get(st);
    sqlite3_stmt *s;
    int r = -EIO;
    /* the rollups, and the rows they do not hold yet */
    static const char sql[] =
        "SELECT app, version FROM rollup_counts"
        " UNION SELECT app, COALESCE(version, '') FROM page_loads NOT INDEXED"
        "   WHERE rowid > (SELECT last_rowid FROM rollup_marks WHERE kind = 'page')"
        " UNION SELECT app, COALESCE(version, '') FROM startups NOT INDEXED"
        "   WHERE rowid > (SELECT last_rowid FROM rollup_marks WHERE kind = 'startup')"
        " UNION SELECT app, COALESCE(version, '') FROM requests NOT INDEXED"
        "   WHERE rowid > (SELECT last_rowid FROM rollup_marks WHERE kind = 'request')"
        " UNION SELECT app, COALESCE(version, '') FROM spans NOT INDEXED"
        "   WHERE rowid > (SELECT last_rowid FROM rollup_marks WHERE kind = 'span')"
        " ORDER BY 1, 2";
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK) {
        int sr;
        while ((sr = sqlite3_step(s)) == SQLITE_ROW)
            cb(ctx, (const char *)sqlite3_column_text(s, 0), (const char *)sqlite3_column_text(s, 1));
        r = sr == SQLITE_DONE ? 0 : -EIO;
        sqlite3_finalize(s);
    }
    reader_put(st, db);
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

static void close_all(store *st)
{
    for (size_t i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(st->st[i]);
    for (size_t i = 0; i < TABLE_COUNT; i++)
        sqlite3_finalize(st->insert[i]);
    for (size_t k = 0; k < KIND_COUNT; k++)
        sqlite3_finalize(st->fill_keys[k]);
    sqlite3_close(st->w);
    for (size_t i = 0; i < st->n_readers; i++)
        sqlite3_close(st->readers[i]);
    free(st->readers);
    free(st->free_readers);
    groups_drop(st);
    free(st->path);
    free(st);
}

store *store_open(const char *path, const store_options *opt, char *err, size_t err_size)
{
    store *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, err_size, "%s: out of memory", path);
        return NULL;
    }
    st->path = strdup(path);
    st->max_queued = opt->max_queued_items ? opt->max_queued_items : 200000;
    st->lag_ns = (int64_t)opt->rollup_lag_ms * 1000000LL;
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
    if (sqlite3_exec(st->w, pragmas, NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(st->w, SCHEMA, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, err_size, "%s: cannot create the schema: %s", path, msg ? msg : sqlite3_errmsg(st->w));
        sqlite3_free(msg);
        goto fail;
    }
    for (size_t i = 0; i < ST_COUNT; i++)
        if (sqlite3_prepare_v3(st->w, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &st->st[i], NULL) != SQLITE_OK) {
            snprintf(err, err_size, "%s: %s", path, sqlite3_errmsg(st->w));
            goto fail;
        }
    for (size_t t = 0; t < TABLE_COUNT; t++) {
        char sql[1024];
        int n = snprintf(sql, sizeof sql, "INSERT INTO %s(%s) VALUES(", tables[t].name, tables[t].columns);
        for (size_t c = 0; c < tables[t].n; c++)
            n += snprintf(sql + n, sizeof sql - (size_t)n, c ? ",?" : "?");
        snprintf(sql + n, sizeof sql - (size_t)n, ")");
        if (sqlite3_prepare_v3(st->w, sql, -1, SQLITE_PREPARE_PERSISTENT, &st->insert[t], NULL) != SQLITE_OK) {
            snprintf(err, err_size, "%s: %s", path, sqlite3_errmsg(st->w));
            goto fail;
        }
    }
    for (size_t k = 0; k < KIND_COUNT; k++) {
        char sql[1024];
        /* m0…m4: the kind's metrics, then NULL */
        static const char *const pad[] = {", NULL, NULL, NULL, NULL", ", NULL, NULL, NULL", ", NULL, NULL", ", NULL",
                                          ""};
        size_t nm = store_kinds[k].n_metrics;
        snprintf(sql, sizeof sql,
                 "INSERT INTO %s SELECT app, ts, version, %s, failed, %s, %s%s, rowid FROM %s"
                 " WHERE rowid > ?1 AND rowid <= ?2 AND %s IS NOT NULL ORDER BY app, ts",
                 scans[k].keys, scans[k].name_expr, scans[k].excluded, scans[k].metrics,
                 pad[nm - 1], scans[k].table, scans[k].name_expr);
        if (sqlite3_prepare_v3(st->w, sql, -1, SQLITE_PREPARE_PERSISTENT, &st->fill_keys[k], NULL) != SQLITE_OK) {
            snprintf(err, err_size, "%s: %s", path, sqlite3_errmsg(st->w));
            goto fail;
        }
    }
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
    pthread_cond_init(&st->wake, NULL);
    pthread_cond_init(&st->done, NULL);
    pthread_mutex_init(&st->rlock, NULL);
    pthread_cond_init(&st->rfree, NULL);
    if (pthread_create(&st->writer, NULL, writer_main, st) != 0) {
        snprintf(err, err_size, "%s: cannot start the writer thread", path);
        goto fail;
    }
    return st;
fail:
    close_all(st);
    return NULL;
}

void store_close(store *st)
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
