/* What the store's writes and reads found (health.c), for
 * store_health_get and store_get_stats. Used by the stores (sqlite_store.c,
 * ch_store.c); every function may be called from any thread. */
#ifndef PACER_SERVER_STORE_HEALTH_H
#define PACER_SERVER_STORE_HEALTH_H

#include "store.h"

#include <pthread.h>
#include <stdarg.h>

/* What a failure was, as the backend that saw it classes it. */
enum store_error_kind {
    STORE_ERR_MEMORY,    /* out of memory in pacerd */
    STORE_ERR_FULL,      /* the database's disk (or its server's) is full */
    STORE_ERR_READ_ONLY, /* the file, its file system or the user is read-only */
    STORE_ERR_CORRUPT,   /* the database is damaged */
    STORE_ERR_FILE,      /* an I/O error on the database's files: sys, else a probe beside them, says more */
    STORE_ERR_OTHER,
};

/* A failure as the backend reported it (SQLite: taken from the connection
 * right after the call that failed, before a ROLLBACK changes it). */
typedef struct store_error {
    enum store_error_kind kind;
    int sys;        /* errno of the failed system call, or 0 */
    char msg[160];  /* the backend's message */
} store_error;

/* What a write transaction held: whether its commit shows that ingest
 * can commit. */
enum health_txn {
    HEALTH_OTHER, /* a config, the analysis, rollups, retention, batches stored before */
    HEALTH_BATCH, /* records of an ingest batch */
    HEALTH_PROBE, /* the health probe (store_health_get) */
};

/* The ingest transactions whose size is remembered, for the room a
 * batch needs (health_room_needed). */
#define HEALTH_SIZES 32

typedef struct health_state {
    pthread_mutex_t lock;
    const char *path; /* the database: its file system is looked at on an I/O error */
    void (*log)(void *ctx, const char *msg);
    void *log_ctx;
    /* writes: the current run of failures */
    enum store_fault fault; /* STORE_OK while writes succeed */
    char reason[320];       /* the last failure's */
    char note[160];         /* what the last room check saw, when it kept the failure of the same cause */
    int64_t since_ns;       /* wall */
    uint64_t streak;
    int64_t last_ok_ns;     /* mono: the last committed transaction */
    /* bytes the last ingest transactions added to the files (a ring; 0: none yet) */
    int64_t sizes[HEALTH_SIZES];
    size_t next_size;
    /* reads */
    bool read_failing;
    enum store_fault read_fault;
    /* corruption, from either, kept */
    bool corrupt;
    char corrupt_reason[320];
    int64_t corrupt_since_ns;
    store_stats stats;
} health_state;

/* One line to a store's log (store_options.log; NULL: nowhere), at most
 * 640 bytes. */
void health_vlog(void (*log)(void *ctx, const char *msg), void *log_ctx, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

void health_init(health_state *h, const char *path, void (*log)(void *ctx, const char *msg), void *log_ctx);
void health_destroy(health_state *h);

/* A write transaction ended: err NULL when it committed. what: what it
 * held; rows: rows it committed per table (NULL: none); bytes: what it
 * added to the files (SQLite: its WAL frames), 0 when unknown.
 *
 * A failure makes the writes fail (ingest answers 503 and so does
 * /healthz). A commit ends that only when it held a batch's records or
 * was the probe, and, with a database path, when the database's file
 * system has room for one more batch (health_room_needed), reserved for
 * a moment beside the database to prove it: any other commit (a config,
 * the analysis, rollups) proves nothing about the next batch. Called
 * without the caller's locks: it may write beside the database. */
void health_write(health_state *h, const store_error *err, enum health_txn what, int64_t duration_ns,
                  const uint64_t *rows, uint64_t duplicates, int64_t bytes);
/* The free bytes the database's file system must have before a failing
 * store is healthy again: twice the largest of the last HEALTH_SIZES
 * ingest transactions (its WAL frames, then their copy into the database
 * at the checkpoint), at least HEALTH_MIN_ROOM. */
#define HEALTH_MIN_ROOM (1 << 20)
int64_t health_room_needed(health_state *h);
/* A read ended: err NULL when it succeeded. what names it ("a query"). */
void health_read(health_state *h, const store_error *err, const char *what);
/* A submit waited duration_ns from queued to done. */
void health_submit(health_state *h, int64_t duration_ns);

/* The state as the last transactions and reads left it; *ret_last_ok_ns:
 * when (mono) a transaction last committed. */
void health_snapshot(health_state *h, store_health *ret, int64_t *ret_last_ok_ns);
void health_stats(health_state *h, store_stats *ret);

#endif
