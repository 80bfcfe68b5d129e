/* The store's health and figures (health.h, store.h).
 *
 * The health says whether ingest can commit. States of the writes:
 *   ok      → failing  a write transaction fails (any: a batch, the probe,
 *                      a config, the analysis, rollups, retention);
 *   failing → failing  another fails (its cause becomes the reason), or
 *                      something commits that proves nothing about a batch;
 *   failing → ok       a transaction that held a batch's records, or the
 *                      probe, commits and (SQLite) the file system has
 *                      room for one more batch, reserved beside the
 *                      database to prove it (fs_room).
 * Why so: a full disk refuses the batches yet lets a small transaction
 * commit in the room that the failed batch had taken in the WAL (a probe
 * row, a rollup, a config, a batch of a few records); a ClickHouse short
 * of room, or whose user became read-only, still answers a read. Were any
 * commit to end the failure, /healthz would flap between 200 and 503 while
 * no batch of ordinary size could commit, and a load balancer would keep
 * sending to this instance.
 *
 * A failure's cause comes from the kind the backend gave it (SQLite's
 * result code: store/sqlite/sqlite_store.c, sqlite_store_error_capture;
 * ClickHouse's error code) and, for an I/O error on the files, from the
 * errno of the system call that failed when SQLite kept it, else from a
 * probe of the database's file system (fs_probe: a file created, written
 * and removed beside the database; ext4's emergency read-only state, for
 * one, is not in the mount flags): a full disk (SQLITE_FULL, ENOSPC,
 * EDQUOT), a read-only file or file system (SQLITE_READONLY, EROFS),
 * corruption (SQLITE_CORRUPT, SQLITE_NOTADB), anything else. What is
 * logged, each time once:
 *   writes: the change to failing (and again when the cause changes), and
 *           the change back to ok;
 *   reads:  the first failed read of a run, unless it is corruption;
 *   corruption, from a write or a read: once; it stays in the health
 *           until the process ends (the file must be repaired).
 */
#include "health.h"

#include <pacer/base/clock.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

void health_init(health_state *h, const char *path, void (*log)(void *ctx, const char *msg), void *log_ctx)
{
    memset(h, 0, sizeof *h);
    pthread_mutex_init(&h->lock, NULL);
    h->path = path;
    h->log = log;
    h->log_ctx = log_ctx;
    h->last_ok_ns = mono_ns();
}

void health_destroy(health_state *h)
{
    pthread_mutex_destroy(&h->lock);
}

/* For an I/O error whose errno SQLite did not keep: what writing a block
 * beside the database says. *ret_errno: the errno seen, or 0. */
static enum store_fault fs_probe(const health_state *h, int *ret_errno)
{
    *ret_errno = 0;
    struct statvfs v;
    if (!h->path)
        return STORE_IO;
    if (statvfs(h->path, &v) == 0 && (v.f_flag & ST_RDONLY)) {
        *ret_errno = EROFS;
        return STORE_READ_ONLY;
    }
    char probe[4200];
    snprintf(probe, sizeof probe, "%s-probe", h->path);
    int fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int e = fd < 0 ? errno : 0;
    if (fd >= 0) {
        static const char block[4096];
        if (write(fd, block, sizeof block) != (ssize_t)sizeof block || fsync(fd) != 0)
            e = errno ? errno : EIO;
        close(fd);
        unlink(probe);
    }
    *ret_errno = e;
    return e == EROFS ? STORE_READ_ONLY : e == ENOSPC || e == EDQUOT ? STORE_DISK_FULL : STORE_IO;
}

/* Whether the database's file system has need bytes for the store: they
 * are reserved in a file beside the database (posix_fallocate), then
 * given back. Returns 0 or the errno that refused them (ENOSPC: too little
 * free); *ret_free: the free bytes statvfs saw before, -1 when unknown. */
static int fs_room(const health_state *h, int64_t need, int64_t *ret_free)
{
    *ret_free = -1;
    char file[4200];
    snprintf(file, sizeof file, "%s-room", h->path); /* not fs_probe's: a read may run that one meanwhile */
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno == EDQUOT ? ENOSPC : errno;
    struct statvfs v;
    bool known = fstatvfs(fd, &v) == 0;
    if (known)
        *ret_free = (int64_t)v.f_bavail * (int64_t)v.f_frsize;
    int e = posix_fallocate(fd, 0, (off_t)need);
    if (e == EOPNOTSUPP || e == EINVAL) /* a file system that cannot reserve: what it says is free */
        e = known && *ret_free < need ? ENOSPC : 0;
    close(fd);
    unlink(file);
    return e == EDQUOT ? ENOSPC : e;
}

static enum store_fault classify(const health_state *h, const store_error *e, int *ret_errno)
{
    *ret_errno = e->sys;
    switch (e->kind) {
    case STORE_ERR_FULL: return STORE_DISK_FULL;
    case STORE_ERR_READ_ONLY: return STORE_READ_ONLY;
    case STORE_ERR_CORRUPT: return STORE_CORRUPT;
    case STORE_ERR_FILE:
        if (e->sys == ENOSPC || e->sys == EDQUOT)
            return STORE_DISK_FULL;
        if (e->sys == EROFS)
            return STORE_READ_ONLY;
        return fs_probe(h, ret_errno);
    default: return STORE_IO;
    }
}

static const char *fault_text(enum store_fault f)
{
    switch (f) {
    case STORE_OK: return "ok";
    case STORE_DISK_FULL: return "the disk is full";
    case STORE_READ_ONLY: return "the database is read-only";
    case STORE_CORRUPT: return "the database is corrupt";
    case STORE_IO: return "the store failed";
    case STORE_STUCK: return "the store is not committing";
    default: return "?";
    }
}

/* "the database is read-only: disk I/O error (Read-only file system)" */
static void describe(const store_error *e, enum store_fault f, int sys, char *out, size_t size)
{
    if (e->kind == STORE_ERR_MEMORY)
        snprintf(out, size, "%s: out of memory", fault_text(f));
    else if (sys)
        snprintf(out, size, "%s: %s (%s)", fault_text(f), e->msg, strerror(sys));
    else
        snprintf(out, size, "%s: %s", fault_text(f), e->msg);
}

void health_vlog(void (*log)(void *ctx, const char *msg), void *log_ctx, const char *fmt, va_list ap)
{
    if (!log)
        return;
    char msg[640];
    vsnprintf(msg, sizeof msg, fmt, ap);
    log(log_ctx, msg);
}

static void say(health_state *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(health_state *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    health_vlog(h->log, h->log_ctx, fmt, ap);
    va_end(ap);
}

/* Called with the lock. */
static void note_corrupt(health_state *h, const char *reason, const char *what)
{
    if (h->corrupt)
        return;
    h->corrupt = true;
    h->corrupt_since_ns = wall_ns();
    snprintf(h->corrupt_reason, sizeof h->corrupt_reason, "%s", reason);
    say(h, "store: %s, seen by %s; /healthz answers 503 until pacerd is restarted on a repaired file "
           "(sqlite3 FILE '.recover')", reason, what);
}

int64_t health_room_needed(health_state *h)
{
    pthread_mutex_lock(&h->lock);
    int64_t most = 0;
    for (size_t i = 0; i < HEALTH_SIZES; i++)
        if (h->sizes[i] > most)
            most = h->sizes[i];
    pthread_mutex_unlock(&h->lock);
    if (most > INT64_MAX / 2)
        most = INT64_MAX / 2;
    return 2 * most > HEALTH_MIN_ROOM ? 2 * most : HEALTH_MIN_ROOM;
}

static double mib(int64_t bytes)
{
    return (double)bytes / (1 << 20);
}

/* A commit that may end a failure: whether the file system has room for a
 * batch. Returns STORE_OK, with what it saw in note (may be ""), or the
 * fault, with why in note. */
static enum store_fault check_room(health_state *h, char *note, size_t size)
{
    *note = 0;
    if (!h->path)
        return STORE_OK; /* ClickHouse: its server reserves its own room at each insert */
    int64_t need = health_room_needed(h), free_bytes;
    int e = fs_room(h, need, &free_bytes);
    if (e == 0) {
        if (free_bytes >= 0)
            snprintf(note, size, "%.1f MiB free, a batch needs %.1f MiB", mib(free_bytes), mib(need));
        return STORE_OK;
    }
    if (e == ENOSPC) {
        if (free_bytes >= 0)
            snprintf(note, size, "%.1f MiB free beside the database, a batch needs %.1f MiB", mib(free_bytes),
                     mib(need));
        else
            snprintf(note, size, "no room for a batch (%.1f MiB) beside the database", mib(need));
        return STORE_DISK_FULL;
    }
    snprintf(note, size, "room for a batch cannot be reserved beside the database (%s)", strerror(e));
    return e == EROFS ? STORE_READ_ONLY : STORE_IO;
}

/* A write failed for a full disk: what is free beside the database and
 * what a batch needs, so that the first answer already says how far off
 * the room is (statvfs only: nothing to reserve on a full disk). */
static void full_note(health_state *h, char *note, size_t size)
{
    *note = 0;
    struct statvfs v;
    if (!h->path || statvfs(h->path, &v) != 0)
        return;
    snprintf(note, size, "%.1f MiB free beside the database, a batch needs %.1f MiB",
             mib((int64_t)v.f_bavail * (int64_t)v.f_frsize), mib(health_room_needed(h)));
}

/* Called with the lock: the writes fail with f. */
static void note_failing(health_state *h, enum store_fault f, const char *reason)
{
    if (f == STORE_CORRUPT)
        note_corrupt(h, reason, "a write");
    if (h->fault != f) {
        if (f != STORE_CORRUPT)
            say(h, "store: writes fail: %s; ingest, config changes and /healthz answer 503 until a batch can "
                   "commit again", reason);
        if (h->fault == STORE_OK) {
            h->since_ns = wall_ns();
            h->streak = 0;
        }
        h->fault = f;
        h->note[0] = 0;
    }
    snprintf(h->reason, sizeof h->reason, "%s", reason);
}

void health_write(health_state *h, const store_error *err, enum health_txn what, int64_t duration_ns,
                  const uint64_t *rows, uint64_t duplicates, int64_t bytes)
{
    /* the cause first: its probes must not hold the lock */
    int sys = 0;
    enum store_fault f = err ? classify(h, err, &sys) : STORE_OK;
    char reason[320] = "", note[160] = "";
    if (err)
        describe(err, f, sys, reason, sizeof reason);
    if (err && f == STORE_DISK_FULL)
        full_note(h, note, sizeof note);
    pthread_mutex_lock(&h->lock);
    bool failing = h->fault != STORE_OK;
    pthread_mutex_unlock(&h->lock);
    if (!err && what == HEALTH_BATCH && bytes > 0) {
        pthread_mutex_lock(&h->lock);
        h->sizes[h->next_size] = bytes;
        h->next_size = (h->next_size + 1) % HEALTH_SIZES;
        pthread_mutex_unlock(&h->lock);
    }
    bool checked = !err && failing && what != HEALTH_OTHER;
    if (checked)
        f = check_room(h, note, sizeof note);

    pthread_mutex_lock(&h->lock);
    h->stats.transactions++;
    latency_add(&h->stats.transaction, duration_ns);
    if (!err) {
        for (size_t t = 0; rows && t < TABLE_COUNT; t++)
            h->stats.rows[t] += rows[t];
        h->stats.duplicates += duplicates;
        h->last_ok_ns = mono_ns();
        if (h->fault == STORE_OK || !checked) {
            /* nothing to end; or nothing that proves it ended (or it began meanwhile, on another thread) */
            pthread_mutex_unlock(&h->lock);
            return;
        }
        if (f != STORE_OK) {
            /* committed, but without room for the next batch: the same
             * cause keeps its reason, with what the room check saw */
            if (f == h->fault) {
                snprintf(h->note, sizeof h->note, "%s", note);
            } else {
                snprintf(reason, sizeof reason, "%s: %s", fault_text(f), note);
                note_failing(h, f, reason);
            }
            pthread_mutex_unlock(&h->lock);
            return;
        }
        say(h, "store: writes succeed again, after %llu failed transaction(s) over %.1f s: %s committed%s%s",
            (unsigned long long)h->streak, (double)(wall_ns() - h->since_ns) / 1e9,
            what == HEALTH_BATCH ? "a batch" : "the probe", *note ? ", " : "", note);
        h->fault = STORE_OK;
        h->reason[0] = 0;
        h->note[0] = 0;
        h->streak = 0;
        h->since_ns = 0;
        pthread_mutex_unlock(&h->lock);
        return;
    }
    h->stats.transaction_failures++;
    h->stats.failures[f]++;
    note_failing(h, f, reason);
    if (*note)
        snprintf(h->note, sizeof h->note, "%s", note);
    h->streak++;
    pthread_mutex_unlock(&h->lock);
}

void health_read(health_state *h, const store_error *err, const char *what)
{
    int sys = 0;
    enum store_fault f = err ? classify(h, err, &sys) : STORE_OK;
    char reason[320] = "";
    if (err)
        describe(err, f, sys, reason, sizeof reason);
    pthread_mutex_lock(&h->lock);
    if (!err) {
        h->read_failing = false;
        pthread_mutex_unlock(&h->lock);
        return;
    }
    h->stats.read_failures++;
    h->stats.failures[f]++;
    if (f == STORE_CORRUPT)
        note_corrupt(h, reason, what);
    else if (!h->read_failing || h->read_fault != f)
        say(h, "store: reads fail: %s, seen by %s; queries answer 503", reason, what);
    h->read_failing = true;
    h->read_fault = f;
    pthread_mutex_unlock(&h->lock);
}

void health_submit(health_state *h, int64_t duration_ns)
{
    pthread_mutex_lock(&h->lock);
    latency_add(&h->stats.submit, duration_ns);
    pthread_mutex_unlock(&h->lock);
}

void health_snapshot(health_state *h, store_health *ret, int64_t *ret_last_ok_ns)
{
    pthread_mutex_lock(&h->lock);
    memset(ret, 0, sizeof *ret);
    if (h->corrupt) {
        ret->fault = STORE_CORRUPT;
        snprintf(ret->reason, sizeof ret->reason, "%s", h->corrupt_reason);
        ret->since_ns = h->corrupt_since_ns;
    } else if (h->fault != STORE_OK) {
        ret->fault = h->fault;
        snprintf(ret->reason, sizeof ret->reason, "%s%s%s", h->reason, *h->note ? "; " : "", h->note);
        ret->since_ns = h->since_ns;
    }
    if (ret_last_ok_ns)
        *ret_last_ok_ns = h->last_ok_ns;
    pthread_mutex_unlock(&h->lock);
}

void health_stats(health_state *h, store_stats *ret)
{
    pthread_mutex_lock(&h->lock);
    *ret = h->stats;
    pthread_mutex_unlock(&h->lock);
}
