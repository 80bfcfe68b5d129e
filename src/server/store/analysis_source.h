/* What the application layer reads of the record tables. The only SQL on
 * the store's record tables outside the store itself is in
 * analysis_source.c: the analysis reads the rows committed after its marks
 * (in the order they came: a record table's rowids, a log's or metric
 * point's position, store_int.h), and the duplicate filter takes the ids
 * of the newest rows at start. Columns are named by the store's layout
 * (store.h, "the rows"), so a field added to the schema changes nothing
 * here.
 */
#ifndef PACER_SERVER_ANALYSIS_SOURCE_H
#define PACER_SERVER_ANALYSIS_SOURCE_H

#include "store.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

/* Which rows of a table: all, pacer's log records (jank, leak), pacer's
 * frames data points (pacer.frames.*), pacer's data points (pacer.*). */
enum source_filter { SOURCE_ALL, SOURCE_PACER_LOGS, SOURCE_FRAMES, SOURCE_PACER_POINTS };

typedef struct source_row {
    enum store_table table;
    int64_t rowid; /* its place in the order rows came: a record table's rowid, a log's or point's position */
    store_value cols[STORE_MAX_COLS]; /* the columns asked for, at their layout index; others SV_NULL */
} source_row;

/* The layout index of the column of table t whose source is src (for a
 * common field or a record field: index, the field's index; else -1), or
 * -1 when the table has none. */
int source_col(enum store_table t, enum store_source src, long index);

/* The rows of t with rowid (position) in (after, upto] that match filter,
 * in that order, wherever they are kept (a sealed record's block, the
 * table); only the columns with want[c] are read (borrowed until cb
 * returns). cb returns false to stop. t: a record table (filter
 * SOURCE_ALL), logs or metric points. 0 or -EIO, -ENOMEM, -EBADMSG (a
 * damaged block). */
int source_rows(sqlite3 *db, enum store_table t, enum source_filter filter, int64_t after, int64_t upto,
                const bool want[STORE_MAX_COLS], bool (*cb)(void *ctx, const source_row *row), void *ctx);

/* The largest rowid (position) of t handed out so far (0 when none). */
int source_last_rowid(sqlite3 *db, enum store_table t, int64_t *ret);

/* The reader is done with the positions of t up to upto: what records
 * them goes (logs and metric points; nothing for other tables). In a
 * write transaction (store_write). 0 or -EIO. */
int source_forget(sqlite3 *db, enum store_table t, int64_t upto);

#endif
