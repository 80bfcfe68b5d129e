/* The duplicate filter of ingest (docs/server.md, "Cleaning"): a pacer
 * record sent again without X-Pacer-Batch-Id — a batch resent by an SDK
 * that sends no batch ids — is recognised by its id among the newest
 * dedupe-records records that came so, kept out of the store and counted
 * as a duplicate. A batch with an id is stored once by that id (store.h).
 *
 * A record's id: a span's app, trace id and span id; a pacer log record's
 * (jank, leak) app, session, time, type and body; a pacer data point's
 * (pacer.*) app, session, time, name and attributes. Plain OpenTelemetry
 * data has none: it is never taken for a copy.
 *
 * Run where one instance sees every record (SQLite); any thread. */
#ifndef PACER_SERVER_DEDUPE_H
#define PACER_SERVER_DEDUPE_H

#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct dedupe dedupe;

/* A filter of the newest `records` ids. NULL when out of memory. */
dedupe *dedupe_new(size_t records);
void dedupe_free(dedupe *dd);

/* Fills the filter with the ids of the newest rows of each table that
 * holds pacer records (a fifth of it each), through the store's rows
 * after a mark. 0, or negative errno from the store (the filter keeps what
 * it read). */
int dedupe_fill(dedupe *dd, store *st);

/* The records of one submit, before it. Marks copy[i] for each record
 * whose id was stored before or comes earlier among recs (or in another
 * submit on its way); the ids of the others are held as on their way and
 * listed in *ret (malloc'd; *ret_n of them), for dedupe_settle. Out of
 * memory, what was not held is not looked for. */
void dedupe_check(dedupe *dd, const store_record *recs, size_t n, bool *copy, uint64_t **ret, size_t *ret_n);

/* The submit ended: its ids join the newest (committed) or go (not).
 * Frees ids. */
void dedupe_settle(dedupe *dd, uint64_t *ids, size_t n, bool committed);

#endif
