/* What the store's files share beyond store.h (store_sqlite.c: the writer
 * and the connections; store_query.c: the read APIs' queries). */
#ifndef PACER_SERVER_STORE_INT_H
#define PACER_SERVER_STORE_INT_H

#include "store.h"

#include <sqlite3.h>

/* A read-only connection of the pool, waiting for a free one; give it back
 * with store_reader_put. Any thread. */
sqlite3 *store_reader_get(store *st);
void store_reader_put(store *st, sqlite3 *db);

/* SQL functions of the store, on the writer's connection:
 * pacer_attr_hash(KEYVALUE_JSON) → store_attr_hash of it, or NULL for a
 * value that is not a string, integer, double or bool; pacer_trace_key. */
int store_register_functions(sqlite3 *db);

/* trace_keys' key of a trace: its first 8 bytes, as a non-negative
 * integer (pacer_trace_key(BLOB) in SQL). */
int64_t store_trace_key(const uint8_t *trace_id, size_t n);

#endif
