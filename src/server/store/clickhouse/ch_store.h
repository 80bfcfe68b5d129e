/* The ClickHouse backend's own call: opening it. Everything else goes
 * through the store's interface (store/store.h), which it serves
 * (ch_store.c: its schema, and how batches stay exactly once
 * without a single writer). */
#ifndef PACER_SERVER_STORE_CLICKHOUSE_H
#define PACER_SERVER_STORE_CLICKHOUSE_H

#include "store/store.h"

/* Opens the ClickHouse store at url,
 * "http://[USER[:PASSWORD]@]HOST[:PORT]/[DATABASE][?cluster=NAME]",
 * creating the database and its tables when missing. NULL with a message
 * in err (the password never in it). */
store *ch_store_open(const char *url, const store_options *opt, char *err, size_t err_size);

#endif
