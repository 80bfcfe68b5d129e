/* The SQLite backend's own calls; everything else goes through the
 * store's interface (store/store.h), which it serves.
 *
 * One file in WAL mode; all writes go through one writer thread, which
 * group-commits (sqlite_store.c). Another layer may keep tables of its
 * own in the same file (the application layer's: analysis/issues_db.h):
 * sqlite_store_read and sqlite_store_write lend it a connection. */
#ifndef PACER_SERVER_STORE_SQLITE_H
#define PACER_SERVER_STORE_SQLITE_H

#include "store/store.h"

struct sqlite3;

/* Opens (creating when needed) the database and starts the writer thread.
 * Returns NULL with a message "PATH: reason" in err. */
store *sqlite_store_open(const char *path, const store_options *opt, char *err, size_t err_size);

/* Lends fn a read connection, inside one read transaction (a snapshot),
 * and returns what fn returns. Any thread. */
int sqlite_store_read(store *st, int (*fn)(void *ctx, struct sqlite3 *db), void *ctx);

/* Runs fn on the writer's connection, inside the writer's transaction (in
 * a savepoint of its own: a failure of fn rolls back what fn did and
 * nothing else), and blocks until it committed. fn must be short: ingest
 * waits behind it. Returns what fn returned, -EIO when the transaction
 * failed, -ESHUTDOWN when the store is closing. Any thread but the
 * writer's. */
int sqlite_store_write(store *st, int (*fn)(void *ctx, struct sqlite3 *db), void *ctx);

#endif
