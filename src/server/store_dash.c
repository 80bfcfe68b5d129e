/* pacerd's store: the reads of the dashboard beyond the percentiles
 * (store_dash.h): single records of a rollup kind (the slowest page loads,
 * recent start-ups, the slowest requests), per-pattern request figures,
 * log records of one type (jank), and per-window frame sums.
 *
 * Every read is bounded by `scan_max` rows of the range, newest first:
 * the raw tables of the rollup kinds have no index (store_sqlite.c), so
 * they are reached through their *_keys table (primary key (app, ts,
 * rowid)), plus the rows after the rollup mark, which no keys table holds
 * yet (a rowid range of at most one rollup batch); logs through their
 * (app, ts) index, metric points through (app, name, ts). A read that
 * reached scan_max says so (*ret_truncated): older rows of the range were
 * not looked at.
 */
#include "store_backend.h"
#include "store_dash.h"

#include <sqlite3.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per (method, pattern) of the range: counts, bytes, and each class (the
 * pacer.classes attribute, in extra, joined as "a,b"). ?1 app, ?2 from,
 * ?3 to, ?4 version, ?5 scan_max, ?6 mark. */
#define REQUEST_STATS_SQL \
    "SELECT method, pattern, count(*), sum(failed), sum(bytes_received), count(bytes_received), sum(bytes_sent)," \
    " sum(instr(c, 'error') > 0), sum(instr(c, 'large_image') > 0), sum(instr(c, 'slow') > 0)" \
    " FROM (SELECT method, pattern, failed, bytes_received, bytes_sent," \
    "  (SELECT group_concat(json_extract(v.value, '$.stringValue')) FROM json_each(CASE WHEN json_valid(extra)" \
    "   THEN extra END) AS a, json_each(a.value, '$.value.arrayValue.values') AS v" \
    "   WHERE json_extract(a.value, '$.key') = 'pacer.classes') AS c" \
    "  FROM requests WHERE rowid IN (" \
    "   SELECT rid FROM (SELECT rid, version FROM requests_keys WHERE app = ?1 AND ts >= ?2 AND ts < ?3" \
    "    ORDER BY ts DESC LIMIT ?5) WHERE ?4 IS NULL OR version = ?4" \
    "   UNION ALL SELECT rowid FROM requests WHERE rowid > ?6 AND app = ?1 AND ts >= ?2 AND ts < ?3" \
    "    AND (?4 IS NULL OR version = ?4)) LIMIT -1)" /* a LIMIT: c is computed once per row, not per use */ \
    " GROUP BY method, pattern ORDER BY method, pattern"

/* The newest scan_max log records of the range, those of a type. ?1 app,
 * ?2 from, ?3 to, ?4 type, ?5 version, ?6 scan_max. */
#define LOGS_SQL \
    "SELECT ts, version, session, body FROM (SELECT ts, version, session, body, type" \
    " FROM logs WHERE app = ?1 AND ts >= ?2 AND ts < ?3 ORDER BY ts DESC LIMIT ?6)" \
    " WHERE type = ?4 AND (?5 IS NULL OR version = ?5)"

/* One metric's newest scan_max points of the range, summed per value of a
 * string attribute. ?1 app, ?2 name, ?3 from, ?4 to, ?5 version, ?6 the
 * attribute's key, ?7 scan_max. */
#define SUMS_SQL \
    "SELECT g, sum(COALESCE(int_value, CAST(value AS REAL))), count(*) FROM (" \
    " SELECT int_value, value," \
    "  (SELECT json_extract(a.value, '$.value.stringValue') FROM json_each(CASE WHEN json_valid(attributes)" \
    "   THEN attributes END) AS a WHERE json_extract(a.value, '$.key') = ?6) AS g" \
    " FROM metric_points WHERE app = ?1 AND name = ?2 AND ts >= ?3 AND ts < ?4 AND (?5 IS NULL OR version = ?5)" \
    " ORDER BY ts DESC LIMIT ?7)" \
    " GROUP BY g ORDER BY g"

static int mark_of(sqlite3 *db, enum store_kind kind, int64_t *ret)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT last_rowid FROM rollup_marks WHERE kind = ?1", -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(s, 1, store_kind(kind)->name, -1, SQLITE_STATIC);
    int r = sqlite3_step(s);
    *ret = r == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_finalize(s);
    return r == SQLITE_ROW || r == SQLITE_DONE ? 0 : -EIO;
}

static void bind_opt(sqlite3_stmt *s, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

static store_value value_at(sqlite3_stmt *s, int i)
{
    switch (sqlite3_column_type(s, i)) {
    case SQLITE_INTEGER: return (store_value){.type = SV_INT, .i = sqlite3_column_int64(s, i)};
    case SQLITE_FLOAT: return (store_value){.type = SV_REAL, .d = sqlite3_column_double(s, i)};
    case SQLITE_TEXT:
        return (store_value){.type = SV_TEXT, .p = sqlite3_column_text(s, i), .n = (size_t)sqlite3_column_bytes(s, i)};
    case SQLITE_BLOB:
        return (store_value){.type = SV_BLOB, .p = sqlite3_column_blob(s, i), .n = (size_t)sqlite3_column_bytes(s, i)};
    default: return (store_value){.type = SV_NULL};
    }
}

/* The raw column of a kind's metric, or NULL (a computed one). */
static const char *metric_column(enum store_kind kind, int metric)
{
    const store_kind_desc *kd = store_kind(kind);
    if (metric < 0 || (size_t)metric >= kd->n_metrics || kd->metric_cols[metric] < 0)
        return NULL;
    return store_table(kd->table)->cols[kd->metric_cols[metric]].name;
}

/* Whether more than scan_max rows of the app lie in [from, to) of table
 * (a keys table, or one with an (app, ts) index). */
static bool rows_beyond(sqlite3 *db, const char *table, const char *app, int64_t from, int64_t to, size_t scan_max)
{
    char *sql = sqlite3_mprintf("SELECT count(*) FROM (SELECT 1 FROM %s WHERE app = ?1 AND ts >= ?2 AND ts < ?3"
                                " LIMIT ?4)",
                                table);
    sqlite3_stmt *c;
    bool beyond = false;
    if (sql && sqlite3_prepare_v2(db, sql, -1, &c, NULL) == SQLITE_OK) {
        sqlite3_bind_text(c, 1, app, -1, SQLITE_STATIC);
        sqlite3_bind_int64(c, 2, from);
        sqlite3_bind_int64(c, 3, to);
        sqlite3_bind_int64(c, 4, (sqlite3_int64)scan_max + 1);
        beyond = sqlite3_step(c) == SQLITE_ROW && (size_t)sqlite3_column_int64(c, 0) > scan_max;
        sqlite3_finalize(c);
    }
    sqlite3_free(sql);
    return beyond;
}

/* ---- single records ---- */

/* The rows of a kind's table: the keys of the range (newest scan_max),
 * those of the group and version, the largest `limit` by the metric (or
 * the newest), plus the rows after the mark; then sorted again. ?1 app,
 * ?2 from, ?3 to, ?4 name, ?5 version, ?6 scan_max, ?7 mark, ?8 limit.
 * sqlite3_free it. */
static char *rows_sql(enum store_table table, int order_metric)
{
    const store_table_desc *t = store_table(table);
    const store_kind_desc *kd = store_kind(t->kind);
    const char *mcol = metric_column(t->kind, order_metric);
    char korder[16] = "ts";
    if (mcol)
        snprintf(korder, sizeof korder, "m%d", order_metric);
    return sqlite3_mprintf(
    "SELECT %s FROM %s WHERE rowid IN ("
    " SELECT rid FROM (SELECT rid, %s AS o FROM (SELECT rid, name, version, ts, %s FROM %s_keys"
    "   WHERE app = ?1 AND ts >= ?2 AND ts < ?3 ORDER BY ts DESC LIMIT ?6)"
    "  WHERE (?4 IS NULL OR name = ?4) AND (?5 IS NULL OR version = ?5) ORDER BY o DESC LIMIT ?8)"
    " UNION ALL SELECT rowid FROM %s WHERE rowid > ?7 AND app = ?1 AND ts >= ?2 AND ts < ?3"
    "  AND (?4 IS NULL OR %s = ?4) AND (?5 IS NULL OR version = ?5))"
    " ORDER BY %s DESC, ts DESC LIMIT ?8",
        t->columns, t->name, korder, korder, t->name, t->name, kd->name_sql, mcol ? mcol : "ts");
}

typedef struct rows_job {
    const store_rows_query *q;
    void (*cb)(void *ctx, const store_row *row);
    void *ctx;
    bool truncated;
} rows_job;

static int read_rows(void *ctx, sqlite3 *db)
{
    rows_job *j = ctx;
    const store_rows_query *q = j->q;
    const store_table_desc *t = store_table(q->table);
    if (t->kind == KIND_NONE)
        return -EINVAL;
    int64_t mark;
    int r = mark_of(db, t->kind, &mark);
    if (r < 0)
        return r;
    char *sql = rows_sql(q->table, q->order_metric);
    if (!sql)
        return -ENOMEM;
    sqlite3_stmt *s;
    int pr = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
    sqlite3_free(sql);
    if (pr != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(s, 1, q->app, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, q->from_ns);
    sqlite3_bind_int64(s, 3, q->to_ns);
    bind_opt(s, 4, q->name);
    bind_opt(s, 5, q->version);
    sqlite3_bind_int64(s, 6, (sqlite3_int64)q->scan_max);
    sqlite3_bind_int64(s, 7, mark);
    sqlite3_bind_int64(s, 8, (sqlite3_int64)q->limit);
    store_row row = {.table = q->table, .n = t->n_cols};
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
        for (size_t i = 0; i < t->n_cols && i < STORE_MAX_COLS; i++)
            row.cols[i] = value_at(s, (int)i);
        j->cb(j->ctx, &row);
    }
    sqlite3_finalize(s);
    if (r != SQLITE_DONE)
        return -EIO;
    char keys[64];
    snprintf(keys, sizeof keys, "%s_keys", t->name);
    j->truncated = rows_beyond(db, keys, q->app, q->from_ns, q->to_ns, q->scan_max);
    return 0;
}

int store_sqlite_rows(store *st, const store_rows_query *q, void (*cb)(void *ctx, const store_row *row), void *ctx,
               bool *ret_truncated)
{
    rows_job j = {q, cb, ctx, false};
    int r = store_read(st, read_rows, &j);
    *ret_truncated = j.truncated;
    return r;
}

/* ---- requests by pattern ---- */

typedef struct req_job {
    const char *app, *version;
    int64_t from, to;
    size_t scan_max;
    void (*cb)(void *ctx, const store_request_stat *s);
    void *ctx;
    bool truncated;
} req_job;

static int read_request_stats(void *ctx, sqlite3 *db)
{
    req_job *j = ctx;
    int64_t mark;
    int r = mark_of(db, KIND_REQUEST, &mark);
    if (r < 0)
        return r;
    const char *sql = REQUEST_STATS_SQL;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(s, 1, j->app, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, j->from);
    sqlite3_bind_int64(s, 3, j->to);
    bind_opt(s, 4, j->version);
    sqlite3_bind_int64(s, 5, (sqlite3_int64)j->scan_max);
    sqlite3_bind_int64(s, 6, mark);
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
        store_request_stat x = {
            .method = (const char *)sqlite3_column_text(s, 0),
            .pattern = (const char *)sqlite3_column_text(s, 1),
            .count = (uint64_t)sqlite3_column_int64(s, 2),
            .failed = (uint64_t)sqlite3_column_int64(s, 3),
            .bytes_received = (uint64_t)sqlite3_column_int64(s, 4),
            .with_bytes = (uint64_t)sqlite3_column_int64(s, 5),
            .bytes_sent = (uint64_t)sqlite3_column_int64(s, 6),
            .class_error = (uint64_t)sqlite3_column_int64(s, 7),
            .class_large_image = (uint64_t)sqlite3_column_int64(s, 8),
            .class_slow = (uint64_t)sqlite3_column_int64(s, 9),
        };
        if (x.pattern)
            j->cb(j->ctx, &x);
    }
    sqlite3_finalize(s);
    if (r != SQLITE_DONE)
        return -EIO;
    j->truncated = rows_beyond(db, "requests_keys", j->app, j->from, j->to, j->scan_max);
    return 0;
}

int store_sqlite_request_stats(store *st, const char *app, const char *version, int64_t from_ns, int64_t to_ns,
                        size_t scan_max, void (*cb)(void *ctx, const store_request_stat *s), void *ctx,
                        bool *ret_truncated)
{
    req_job j = {app, version, from_ns, to_ns, scan_max, cb, ctx, false};
    int r = store_read(st, read_request_stats, &j);
    *ret_truncated = j.truncated;
    return r;
}

/* ---- log records of one type ---- */

typedef struct logs_job {
    const char *app, *version, *type;
    int64_t from, to;
    size_t scan_max;
    void (*cb)(void *ctx, const store_log_row *row);
    void *ctx;
    bool truncated;
} logs_job;

static int read_logs(void *ctx, sqlite3 *db)
{
    logs_job *j = ctx;
    const char *sql = LOGS_SQL;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(s, 1, j->app, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, j->from);
    sqlite3_bind_int64(s, 3, j->to);
    sqlite3_bind_text(s, 4, j->type, -1, SQLITE_STATIC);
    bind_opt(s, 5, j->version);
    sqlite3_bind_int64(s, 6, (sqlite3_int64)j->scan_max);
    int r;
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
        store_log_row row = {
            .ts = sqlite3_column_int64(s, 0),
            .version = (const char *)sqlite3_column_text(s, 1),
            .session = (const char *)sqlite3_column_text(s, 2),
            .body = (const char *)sqlite3_column_text(s, 3),
            .body_len = (size_t)sqlite3_column_bytes(s, 3),
        };
        if (row.body)
            j->cb(j->ctx, &row);
    }
    sqlite3_finalize(s);
    if (r != SQLITE_DONE)
        return -EIO;
    j->truncated = rows_beyond(db, "logs", j->app, j->from, j->to, j->scan_max);
    return 0;
}

int store_sqlite_logs_of_type(store *st, const char *app, const char *version, const char *type, int64_t from_ns,
                       int64_t to_ns, size_t scan_max, void (*cb)(void *ctx, const store_log_row *row), void *ctx,
                       bool *ret_truncated)
{
    logs_job j = {app, version, type, from_ns, to_ns, scan_max, cb, ctx, false};
    int r = store_read(st, read_logs, &j);
    *ret_truncated = j.truncated;
    return r;
}

/* ---- metric sums per attribute ---- */

typedef struct sums_job {
    const char *app, *version, *attr;
    const char *const *names;
    int64_t from, to;
    size_t scan_max;
    void (*cb)(void *ctx, const char *name, const char *group, double sum, uint64_t points);
    void *ctx;
    bool truncated;
} sums_job;

static int read_sums(void *ctx, sqlite3 *db)
{
    sums_job *j = ctx;
    const char *sql = SUMS_SQL;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    int r = SQLITE_DONE;
    for (size_t k = 0; j->names[k] && r == SQLITE_DONE; k++) {
        sqlite3_reset(s);
        sqlite3_bind_text(s, 1, j->app, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, j->names[k], -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, j->from);
        sqlite3_bind_int64(s, 4, j->to);
        bind_opt(s, 5, j->version);
        sqlite3_bind_text(s, 6, j->attr, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 7, (sqlite3_int64)j->scan_max);
        while ((r = sqlite3_step(s)) == SQLITE_ROW) {
            const char *g = (const char *)sqlite3_column_text(s, 0);
            j->cb(j->ctx, j->names[k], g ? g : "", sqlite3_column_double(s, 1), (uint64_t)sqlite3_column_int64(s, 2));
        }
    }
    sqlite3_finalize(s);
    if (r != SQLITE_DONE)
        return -EIO;
    /* per metric name the newest scan_max points: one name past it is enough to say so */
    sqlite3_stmt *c;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM (SELECT 1 FROM metric_points WHERE app = ?1 AND name = ?2"
                               " AND ts >= ?3 AND ts < ?4 LIMIT ?5)", -1, &c, NULL) != SQLITE_OK)
        return -EIO;
    for (size_t k = 0; j->names[k] && !j->truncated; k++) {
        sqlite3_reset(c);
        sqlite3_bind_text(c, 1, j->app, -1, SQLITE_STATIC);
        sqlite3_bind_text(c, 2, j->names[k], -1, SQLITE_STATIC);
        sqlite3_bind_int64(c, 3, j->from);
        sqlite3_bind_int64(c, 4, j->to);
        sqlite3_bind_int64(c, 5, (sqlite3_int64)j->scan_max + 1);
        if (sqlite3_step(c) == SQLITE_ROW && (size_t)sqlite3_column_int64(c, 0) > j->scan_max)
            j->truncated = true;
    }
    sqlite3_finalize(c);
    return 0;
}

int store_sqlite_metric_sums(store *st, const char *app, const char *version, const char *const *names, const char *attr,
                      int64_t from_ns, int64_t to_ns, size_t scan_max,
                      void (*cb)(void *ctx, const char *name, const char *group, double sum, uint64_t points),
                      void *ctx, bool *ret_truncated)
{
    sums_job j = {app, version, attr, names, from_ns, to_ns, scan_max, cb, ctx, false};
    int r = store_read(st, read_sums, &j);
    *ret_truncated = j.truncated;
    return r;
}

/* ---- query plans, for tests ---- */

typedef struct explain_job {
    void (*cb)(void *ctx, const char *name, const char *sql, const char *plan);
    void *ctx;
} explain_job;

static int explain_one(sqlite3 *db, const char *name, const char *sql, const explain_job *j)
{
    char *text = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", sql);
    sqlite3_stmt *s;
    int pr = text ? sqlite3_prepare_v2(db, text, -1, &s, NULL) : SQLITE_NOMEM;
    sqlite3_free(text);
    if (pr != SQLITE_OK)
        return -EIO;
    char plan[4096] = "";
    size_t o = 0;
    while (sqlite3_step(s) == SQLITE_ROW && o < sizeof plan)
        o += (size_t)snprintf(plan + o, sizeof plan - o, "%s%s", o ? "; " : "", (const char *)sqlite3_column_text(s, 3));
    sqlite3_finalize(s);
    j->cb(j->ctx, name, sql, plan);
    return 0;
}

static int explain_all(void *ctx, sqlite3 *db)
{
    const explain_job *j = ctx;
    static const enum store_table tables[] = {TABLE_PAGE_LOADS, TABLE_STARTUPS, TABLE_REQUESTS};
    int r = 0;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0] && r == 0; t++)
        for (int m = -1; m < 1 && r == 0; m++) {
            char name[64];
            snprintf(name, sizeof name, "rows of %s, %s", store_table(tables[t])->name, m < 0 ? "newest" : "by a metric");
            char *sql = rows_sql(tables[t], m);
            r = sql ? explain_one(db, name, sql, j) : -ENOMEM;
            sqlite3_free(sql);
        }
    if (r == 0)
        r = explain_one(db, "request stats", REQUEST_STATS_SQL, j);
    if (r == 0)
        r = explain_one(db, "logs of a type", LOGS_SQL, j);
    if (r == 0)
        r = explain_one(db, "metric sums", SUMS_SQL, j);
    return r;
}

int store_sqlite_dash_explain(store *st, void (*cb)(void *ctx, const char *name, const char *sql, const char *plan),
                       void *ctx)
{
    explain_job j = {cb, ctx};
    return store_read(st, explain_all, &j);
}
