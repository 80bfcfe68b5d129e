/* Reading the record tables for the application layer (analysis_source.h).
 *
 * A rowid range of one raw table, with the columns the caller asks for:
 * the tables have no index but their rowid, and the rows after a mark are
 * exactly a rowid range (they are only appended), so a read costs the rows
 * it returns, whatever the size of the store.
 */
#include "analysis_source.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int source_col(enum store_table t, enum store_source src, long index)
{
    const store_table_desc *d = store_table(t);
    for (size_t c = 0; c < d->n_cols; c++)
        if (d->cols[c].source == src &&
            ((src != SRC_COMMON && src != SRC_FIELD) || d->cols[c].index == index))
            return (int)c;
    return -1;
}

static const char *filter_sql(enum source_filter f)
{
    switch (f) {
    case SOURCE_PACER_LOGS: return " AND type IN ('jank', 'leak')";
    case SOURCE_FRAMES: return " AND name >= 'pacer.frames.' AND name < 'pacer.frames/'";
    case SOURCE_PACER_POINTS: return " AND name >= 'pacer.' AND name < 'pacer/'";
    default: return "";
    }
}

int source_rows(sqlite3 *db, enum store_table t, enum source_filter filter, int64_t after, int64_t upto,
                const bool want[STORE_MAX_COLS], bool (*cb)(void *ctx, const source_row *row), void *ctx)
{
    const store_table_desc *d = store_table(t);
    char cols[4096] = "rowid";
    size_t o = 5;
    int idx[STORE_MAX_COLS];
    size_t n = 0;
    for (size_t c = 0; c < d->n_cols && o < sizeof cols; c++)
        if (want[c]) {
            o += (size_t)snprintf(cols + o, sizeof cols - o, ", %s", d->cols[c].name);
            idx[n++] = (int)c;
        }
    if (o >= sizeof cols)
        return -EINVAL;
    char *sql = sqlite3_mprintf("SELECT %s FROM %s WHERE rowid > ?1 AND rowid <= ?2%s ORDER BY rowid", cols, d->name,
                                filter_sql(filter));
    if (!sql)
        return -ENOMEM;
    sqlite3_stmt *s;
    int r = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
    sqlite3_free(sql);
    if (r != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(s, 1, after);
    sqlite3_bind_int64(s, 2, upto);
    source_row row = {.table = t};
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
        row.rowid = sqlite3_column_int64(s, 0);
        for (size_t k = 0; k < n; k++) {
            int i = (int)k + 1;
            store_value *v = &row.cols[idx[k]];
            switch (sqlite3_column_type(s, i)) {
            case SQLITE_INTEGER: *v = (store_value){.type = SV_INT, .i = sqlite3_column_int64(s, i)}; break;
            case SQLITE_FLOAT: *v = (store_value){.type = SV_REAL, .d = sqlite3_column_double(s, i)}; break;
            case SQLITE_TEXT:
                *v = (store_value){.type = SV_TEXT, .p = sqlite3_column_text(s, i),
                                   .n = (size_t)sqlite3_column_bytes(s, i)};
                break;
            case SQLITE_BLOB:
                *v = (store_value){.type = SV_BLOB, .p = sqlite3_column_blob(s, i),
                                   .n = (size_t)sqlite3_column_bytes(s, i)};
                break;
            default: *v = (store_value){.type = SV_NULL};
            }
        }
        if (!cb(ctx, &row)) {
            r = SQLITE_DONE;
            break;
        }
    }
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

int source_last_rowid(sqlite3 *db, enum store_table t, int64_t *ret)
{
    char *sql = sqlite3_mprintf("SELECT COALESCE(MAX(rowid), 0) FROM %s", store_table(t)->name);
    if (!sql)
        return -ENOMEM;
    sqlite3_stmt *s;
    int r = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
    sqlite3_free(sql);
    if (r != SQLITE_OK)
        return -EIO;
    r = sqlite3_step(s);
    *ret = r == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_finalize(s);
    return r == SQLITE_ROW ? 0 : -EIO;
}
