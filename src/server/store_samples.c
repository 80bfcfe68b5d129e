/* pacerd's store: the raw rows of one version (store.h, store_version_rows).
 *
 * What `pacer bench --baseline server:VERSION` compares with. The raw
 * tables have no index (store_sqlite.c), so the rows are found through the
 * kind's keys table, whose primary key starts with (app, ts): the newest
 * `scan_max` keys of the app are read backwards, those of the version kept
 * (their raw rows fetched by rowid), plus the rows after the rollup mark,
 * which are in no keys table yet (a rowid range of at most the rollup
 * lag). The cost is bounded by scan_max whatever the size of the store.
 */
#include "store.h"
#include "store_backend.h"

#include <sqlite3.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

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

typedef struct version_rows {
    enum store_table table;
    const char *app, *version;
    size_t limit, scan_max;
    void (*cb)(void *ctx, const store_row *row);
    void *ctx;
    bool truncated;
} version_rows;

static int read_rows(void *ctx, sqlite3 *db)
{
    version_rows *v = ctx;
    const store_table_desc *t = store_table(v->table);
    if (t->kind == KIND_NONE)
        return -EINVAL;
    int64_t mark;
    int r = mark_of(db, t->kind, &mark);
    if (r < 0)
        return r;
    char *sql = sqlite3_mprintf("SELECT %s FROM %s WHERE rowid IN ("
                                " SELECT rid FROM (SELECT rid, version FROM %s_keys WHERE app = ?1"
                                "  ORDER BY ts DESC LIMIT ?3) WHERE version = ?2"
                                " UNION ALL SELECT rowid FROM %s WHERE rowid > ?4 AND app = ?1 AND version = ?2)"
                                " ORDER BY ts DESC LIMIT ?5",
                                t->columns, t->name, t->name, t->name);
    if (!sql)
        return -ENOMEM;
    sqlite3_stmt *s;
    int pr = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
    sqlite3_free(sql);
    if (pr != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(s, 1, v->app, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, v->version, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)v->scan_max);
    sqlite3_bind_int64(s, 4, mark);
    sqlite3_bind_int64(s, 5, (sqlite3_int64)v->limit + 1); /* one more: tells whether there were more */
    size_t n = 0;
    store_row row = {.table = v->table, .n = t->n_cols};
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
        if (n++ == v->limit) {
            v->truncated = true;
            break;
        }
        for (size_t i = 0; i < t->n_cols && i < STORE_MAX_COLS; i++) {
            store_value *c = &row.cols[i];
            switch (sqlite3_column_type(s, (int)i)) {
            case SQLITE_INTEGER:
                *c = (store_value){.type = SV_INT, .i = sqlite3_column_int64(s, (int)i)};
                break;
            case SQLITE_FLOAT:
                *c = (store_value){.type = SV_REAL, .d = sqlite3_column_double(s, (int)i)};
                break;
            case SQLITE_TEXT:
                *c = (store_value){.type = SV_TEXT, .p = sqlite3_column_text(s, (int)i),
                                   .n = (size_t)sqlite3_column_bytes(s, (int)i)};
                break;
            case SQLITE_BLOB:
                *c = (store_value){.type = SV_BLOB, .p = sqlite3_column_blob(s, (int)i),
                                   .n = (size_t)sqlite3_column_bytes(s, (int)i)};
                break;
            default:
                *c = (store_value){.type = SV_NULL};
            }
        }
        v->cb(v->ctx, &row);
    }
    sqlite3_finalize(s);
    if (r != SQLITE_ROW && r != SQLITE_DONE)
        return -EIO;
    /* the keys scanned may have reached scan_max: older rows of the version were not looked at */
    sqlite3_stmt *c;
    char *count = sqlite3_mprintf("SELECT count(*) FROM (SELECT 1 FROM %s_keys WHERE app = ?1 LIMIT ?2)", t->name);
    if (!count)
        return -ENOMEM;
    pr = sqlite3_prepare_v2(db, count, -1, &c, NULL);
    sqlite3_free(count);
    if (pr != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(c, 1, v->app, -1, SQLITE_STATIC);
    sqlite3_bind_int64(c, 2, (sqlite3_int64)v->scan_max + 1);
    if (sqlite3_step(c) == SQLITE_ROW && (size_t)sqlite3_column_int64(c, 0) > v->scan_max)
        v->truncated = true;
    sqlite3_finalize(c);
    return 0;
}

int store_sqlite_version_rows(store *st, enum store_table table, const char *app, const char *version, size_t limit,
                       size_t scan_max, void (*cb)(void *ctx, const store_row *row), void *ctx, bool *ret_truncated)
{
    version_rows v = {table, app, version, limit, scan_max, cb, ctx, false};
    int r = store_read(st, read_rows, &v);
    *ret_truncated = v.truncated;
    return r;
}
