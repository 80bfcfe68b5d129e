/* What the store's writes and reads found (store_health.c), for
 * store_health_get and store_get_stats. Used by store_sqlite.c only; every
 * function may be called from any thread. */
#ifndef PACER_SERVER_STORE_HEALTH_H
#define PACER_SERVER_STORE_HEALTH_H

#include "store.h"

#include <pthread.h>
#include <sqlite3.h>

/* A failure as SQLite reported it, taken from the connection right after
 * the call that failed (before a ROLLBACK changes it). */
typedef struct store_error {
    int code;       /* extended result code; SQLITE_OK when not SQLite's (out of memory in pacerd) */
    int sys;        /* errno of the failed system call, or 0 */
    char msg[160];  /* sqlite3_errmsg */
} store_error;

typedef struct health_state {
    pthread_mutex_t lock;
    const char *path; /* the database: its file system is looked at on an I/O error */
    void (*log)(void *ctx, const char *msg);
    void *log_ctx;
    /* writes: the current run of failures */
    enum store_fault fault; /* STORE_OK while writes succeed */
    char reason[320];
    int64_t since_ns;       /* wall */
    uint64_t streak;
    int64_t last_ok_ns;     /* mono: the last committed transaction */
    /* reads */
    bool read_failing;
    enum store_fault read_fault;
    /* corruption, from either, kept */
    bool corrupt;
    char corrupt_reason[320];
    int64_t corrupt_since_ns;
    store_stats stats;
} health_state;

void health_init(health_state *h, const char *path, void (*log)(void *ctx, const char *msg), void *log_ctx);
void health_destroy(health_state *h);

/* The failure that db saw last. */
void store_error_capture(sqlite3 *db, store_error *ret);

/* A write transaction ended: err NULL when it committed. rows: rows it
 * committed per table (NULL: none). */
void health_write(health_state *h, const store_error *err, int64_t duration_ns, const uint64_t *rows,
                  uint64_t duplicates);
/* A read ended: err NULL when it succeeded. what names it ("a query"). */
void health_read(health_state *h, const store_error *err, const char *what);
/* A submit waited duration_ns from queued to done. */
void health_submit(health_state *h, int64_t duration_ns);

/* The state as the last transactions and reads left it; *ret_last_ok_ns:
 * when (mono) a transaction last committed. */
void health_snapshot(health_state *h, store_health *ret, int64_t *ret_last_ok_ns);
void health_stats(health_state *h, store_stats *ret);

#endif
