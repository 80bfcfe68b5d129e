/* What the application layer reads of ClickHouse's record tables
 * (store_ch_source.c): analysis_source.h's contract, with ClickHouse's
 * mark.
 *
 * ClickHouse has no rowid. Each raw row carries `ins`, the wall-clock
 * nanoseconds at which its instance wrote it, made unique and increasing
 * per instance (a group's rows take consecutive values); a mark is an ins.
 * Rows are read only once older than the read lag (half of
 * --clickhouse-settle: an attempt that is not answered by then is not
 * committed, and its batches come again with a later ins), so that a row
 * written late by another instance, or by a slow insert, is not passed by
 * the mark. A row written twice (a retried batch) is read twice: the
 * analysis keeps out the identities it read in its last cycles.
 */
#ifndef PACER_SERVER_STORE_CH_SOURCE_H
#define PACER_SERVER_STORE_CH_SOURCE_H

#include "store/analysis_source.h"
#include "ingest/clean.h"

/* source_rows on a ClickHouse store: the rows of t with ins in (after,
 * upto], in (ins, identity) order, one per identity. -ENOTSUP on another
 * backend. */
int ch_source_rows(store *st, enum store_table t, enum source_filter filter, int64_t after, int64_t upto,
                   const bool want[STORE_MAX_COLS], bool (*cb)(void *ctx, const source_row *row), void *ctx);

/* The newest mark that may be read: ClickHouse's clock less the read lag. */
int ch_source_last(store *st, int64_t *ret);

/* The mark n rows of t (filter) after `from` and not after `to` (n > 0:
 * the n-th row's, or `to` when fewer), or n rows before it (n < 0: within
 * the hour before `from`, else the start of that hour). */
int ch_source_step(store *st, enum store_table t, enum source_filter filter, int64_t from, int64_t to, long n,
                   int64_t *ret);

/* The rows of t (filter) after mark `after`, the lag's too: what the
 * analysis has still to read. */
int ch_source_behind(store *st, enum store_table t, enum source_filter filter, int64_t after, int64_t *ret);

/* The cleaning counts (store_issues.h, issues_clean_json and
 * issues_clean_totals) of every instance: the records each kept out, as
 * it wrote them into `cleaned` (once per identity). */
int ch_source_clean_json(store *st, const char *app, jbuf *out);
int ch_source_clean_totals(store *st, uint64_t ret[CLEAN_COUNT]);

#endif
