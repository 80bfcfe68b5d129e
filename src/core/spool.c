/* The on-disk spool (spool.h).
 *
 * Schema (SQLite, WAL, one file per user, shared by every process):
 *   record(id INTEGER PRIMARY KEY AUTOINCREMENT, signal, body, bytes)
 *   pending(signal PRIMARY KEY, first_id, last_id, batch)
 *   meta(key PRIMARY KEY, value): uuid, bytes, dropped, sent
 *
 * Forms. A record is kept in the form it is sent in: its run and its OTLP
 * item in protobuf, a BLOB that otlp.c writes on the writer thread and
 * reads back into a request (otlp_spool_body, otlp_request), so that
 * sending parses no text. Earlier versions kept its JSON line (TEXT). The
 * `signal` column names both, as a queue: the record's signal (0 traces,
 * 1 logs, 2 metrics) for a JSON line, OTLP_QUEUE + the signal for an OTLP
 * record. An older libpacer sharing the file (a process still running
 * through an upgrade) asks only for queues 0-2, so it never reads a body it
 * cannot parse; this version delivers both, JSON lines first. A batch is
 * one queue's: `pending` holds one row per queue, and the queue is part of
 * the batch id, so ids of the two forms never meet.
 *
 * Invariants:
 *  1. Ids only grow (AUTOINCREMENT): a range first_id..last_id of one queue
 *     names the same records until they are deleted, whoever inserts later.
 *  2. A batch, once chosen, is written to `pending` with its id (a hash of
 *     the spool's uuid, the queue and the range), and every retry sends the
 *     records of that range under that id, until spool_ack()/spool_drop()
 *     deletes them together with the pending row. A server that stored the
 *     id before stores nothing again, so a retry never duplicates, even
 *     across a crash of the app between sending and acking. The body of a
 *     request is a pure function of the records and the id (otlp.c), so a
 *     retry also sends the same bytes.
 *  3. meta.bytes is the sum of `bytes` (the body's length) of the records;
 *     spool_add() keeps it under the cap by deleting the oldest records,
 *     whatever their queue, first and adding them to meta.dropped, in the
 *     same transaction as the insert.
 */
#include "spool.h"

#include "sqlite_dl.h"

#include <pacer/base/hash.h>
#include <pacer/base/random.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_MAX_BYTES (64LL * 1024 * 1024)
#define OTLP_QUEUE 16 /* the queue of OTLP records of signal s: OTLP_QUEUE + s */

/* SQLite's functions: loaded by spool_open, which a spool comes from. */
#define SQ (*sqlite_api_get())

struct spool {
    sqlite3 *db;
    int64_t max_bytes;
    int64_t batch_bytes; /* a new batch's bodies at most (one record aside); 0: no cap */
    char uuid[33];
};

static int exec(spool *s, const char *sql)
{
    return SQ.exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

static int64_t meta_get(spool *s, const char *key)
{
    sqlite3_stmt *st;
    int64_t v = 0;
    if (SQ.prepare_v2(s->db, "SELECT value FROM meta WHERE key = ?", -1, &st, NULL) != SQLITE_OK)
        return 0;
    SQ.bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (SQ.step(st) == SQLITE_ROW)
        v = SQ.column_int64(st, 0);
    SQ.finalize(st);
    return v;
}

static int meta_add(spool *s, const char *key, int64_t delta)
{
    sqlite3_stmt *st;
    if (SQ.prepare_v2(s->db,
                           "INSERT INTO meta(key, value) VALUES (?1, ?2) "
                           "ON CONFLICT(key) DO UPDATE SET value = value + ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    SQ.bind_text(st, 1, key, -1, SQLITE_STATIC);
    SQ.bind_int64(st, 2, delta);
    int r = SQ.step(st) == SQLITE_DONE ? 0 : -EIO;
    SQ.finalize(st);
    return r;
}

static int select_uuid(spool *s)
{
    sqlite3_stmt *st;
    if (SQ.prepare_v2(s->db, "SELECT value FROM meta WHERE key = 'uuid'", -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    int r = -ENOENT;
    if (SQ.step(st) == SQLITE_ROW && SQ.column_bytes(st, 0) == 32) {
        memcpy(s->uuid, SQ.column_text(st, 0), 32);
        s->uuid[32] = '\0';
        r = 0;
    }
    SQ.finalize(st);
    return r;
}

/* The spool's identity, part of every batch id: created once per file (the
 * first process to get there wins; others read it). */
static int load_uuid(spool *s)
{
    if (select_uuid(s) == 0)
        return 0;
    char u[33];
    sqlite3_stmt *st;
    random_hex(u, 16);
    if (SQ.prepare_v2(s->db, "INSERT OR IGNORE INTO meta(key, value) VALUES ('uuid', ?)", -1, &st,
                           NULL) != SQLITE_OK)
        return -EIO;
    SQ.bind_text(st, 1, u, 32, SQLITE_TRANSIENT);
    SQ.step(st);
    SQ.finalize(st);
    return select_uuid(s);
}

static char *errorf(const char *path, const char *what)
{
    size_t n = strlen(path) + strlen(what) + 3;
    char *m = malloc(n);
    if (m)
        snprintf(m, n, "%s: %s", path, what);
    return m;
}

int spool_open(const char *path, int64_t max_bytes, spool **ret, char **ret_error)
{
    if (!sqlite_api_get()) {
        if (ret_error)
            *ret_error = errorf(path, "SQLite (libsqlite3.so.0) cannot be loaded");
        return -ENOSYS;
    }
    spool *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->max_bytes = max_bytes > 0 ? max_bytes : DEFAULT_MAX_BYTES;
    int rc = SQ.open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             NULL);
    if (rc != SQLITE_OK)
        goto fail;
    SQ.busy_timeout(s->db, 5000);
    if (exec(s, "PRAGMA journal_mode=WAL") < 0 || exec(s, "PRAGMA synchronous=NORMAL") < 0 ||
        exec(s, "CREATE TABLE IF NOT EXISTS record("
                "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
                "  signal INTEGER NOT NULL, body TEXT NOT NULL, bytes INTEGER NOT NULL);"
                "CREATE INDEX IF NOT EXISTS record_signal ON record(signal, id);"
                "CREATE TABLE IF NOT EXISTS pending("
                "  signal INTEGER PRIMARY KEY, first_id INTEGER, last_id INTEGER, batch TEXT);"
                "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;") < 0 ||
        load_uuid(s) < 0) {
        rc = SQ.errcode(s->db);
        goto fail;
    }
    *ret = s;
    return 0;
fail:
    if (ret_error)
        *ret_error = errorf(path, s->db ? SQ.errmsg(s->db) : SQ.errstr(rc));
    SQ.close(s->db);
    free(s);
    return -EIO;
}

void spool_close(spool *s)
{
    if (!s)
        return;
    SQ.close(s->db);
    free(s);
}

/* Deletes the oldest records until meta.bytes ≤ cap. Inside a transaction. */
static int enforce_cap(spool *s)
{
    int64_t bytes = meta_get(s, "bytes");
    while (bytes > s->max_bytes) {
        sqlite3_stmt *st;
        if (SQ.prepare_v2(s->db, "SELECT id, bytes FROM record ORDER BY id LIMIT 64", -1, &st, NULL) !=
            SQLITE_OK)
            return -EIO;
        int64_t last = -1, freed = 0, n = 0;
        while (bytes - freed > s->max_bytes && SQ.step(st) == SQLITE_ROW) {
            last = SQ.column_int64(st, 0);
            freed += SQ.column_int64(st, 1);
            n++;
        }
        SQ.finalize(st);
        if (n == 0)
            break;
        if (SQ.prepare_v2(s->db, "DELETE FROM record WHERE id <= ?", -1, &st, NULL) != SQLITE_OK)
            return -EIO;
        SQ.bind_int64(st, 1, last);
        int ok = SQ.step(st) == SQLITE_DONE;
        SQ.finalize(st);
        if (!ok || meta_add(s, "bytes", -freed) < 0 || meta_add(s, "dropped", n) < 0)
            return -EIO;
        bytes -= freed;
    }
    return 0;
}

static int queue_of(pacer_signal signal, spool_form form)
{
    return (int)signal + (form == SPOOL_OTLP ? OTLP_QUEUE : 0);
}

int spool_add(spool *s, pacer_signal signal, spool_form form, const void *body, size_t len)
{
    sqlite3_stmt *st;
    if (len > INT32_MAX || exec(s, "BEGIN IMMEDIATE") < 0)
        return -EIO;
    int r = -EIO;
    if (SQ.prepare_v2(s->db, "INSERT INTO record(signal, body, bytes) VALUES (?, ?, ?)", -1, &st,
                           NULL) != SQLITE_OK)
        goto out;
    SQ.bind_int(st, 1, queue_of(signal, form));
    if (form == SPOOL_OTLP)
        SQ.bind_blob(st, 2, body, (int)len, SQLITE_STATIC);
    else
        SQ.bind_text(st, 2, body, (int)len, SQLITE_STATIC);
    SQ.bind_int64(st, 3, (int64_t)len);
    int ok = SQ.step(st) == SQLITE_DONE;
    SQ.finalize(st);
    if (ok && meta_add(s, "bytes", (int64_t)len) == 0)
        r = enforce_cap(s);
out:
    if (r == 0 && exec(s, "COMMIT") == 0)
        return 0;
    exec(s, "ROLLBACK");
    return -EIO;
}

/* FNV-1a over the batch's identity, twice with different offsets: 128 bits. */
static void batch_id(const spool *s, int queue, int64_t first, int64_t last, char out[33])
{
    char key[128];
    int n = snprintf(key, sizeof(key), "%s:%d:%" PRId64 ":%" PRId64, s->uuid, queue, first, last);
    uint64_t h0 = fnv1a64(FNV1A64_INIT, key, (size_t)n);
    uint64_t h1 = fnv1a64(UINT64_C(0x84222325cbf29ce4), key, (size_t)n);
    snprintf(out, 33, "%016" PRIx64 "%016" PRIx64, h0, h1);
}

static int load_pending(spool *s, int sig, spool_batch *b)
{
    sqlite3_stmt *st;
    if (SQ.prepare_v2(s->db, "SELECT first_id, last_id, batch FROM pending WHERE signal = ?", -1, &st,
                           NULL) != SQLITE_OK)
        return -EIO;
    SQ.bind_int(st, 1, sig);
    int r = 0;
    if (SQ.step(st) == SQLITE_ROW && SQ.column_bytes(st, 2) == 32) {
        b->first_id = SQ.column_int64(st, 0);
        b->last_id = SQ.column_int64(st, 1);
        memcpy(b->id, SQ.column_text(st, 2), 33);
        r = 1;
    }
    SQ.finalize(st);
    return r;
}

static int choose_batch(spool *s, int sig, size_t max_records, spool_batch *b)
{
    sqlite3_stmt *st;
    if (SQ.prepare_v2(s->db, "SELECT id, bytes FROM record WHERE signal = ? ORDER BY id LIMIT ?", -1, &st,
                      NULL) != SQLITE_OK)
        return -EIO;
    SQ.bind_int(st, 1, sig);
    SQ.bind_int64(st, 2, (int64_t)max_records);
    int r = 0, step;
    int64_t bytes = 0;
    /* the oldest records, up to max_records and batch_bytes (at least one) */
    while ((step = SQ.step(st)) == SQLITE_ROW) {
        int64_t id = SQ.column_int64(st, 0), n = SQ.column_int64(st, 1);
        if (r == 1 && s->batch_bytes > 0 && bytes + n > s->batch_bytes)
            break;
        if (r == 0)
            b->first_id = id;
        b->last_id = id;
        bytes += n;
        r = 1;
    }
    SQ.finalize(st);
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        return -EIO;
    if (r != 1)
        return r;
    batch_id(s, sig, b->first_id, b->last_id, b->id);
    if (SQ.prepare_v2(s->db, "INSERT OR REPLACE INTO pending(signal, first_id, last_id, batch) "
                                  "VALUES (?, ?, ?, ?)", -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    SQ.bind_int(st, 1, sig);
    SQ.bind_int64(st, 2, b->first_id);
    SQ.bind_int64(st, 3, b->last_id);
    SQ.bind_text(st, 4, b->id, 32, SQLITE_STATIC);
    r = SQ.step(st) == SQLITE_DONE ? 1 : -EIO;
    SQ.finalize(st);
    return r;
}

static int load_records(spool *s, spool_batch *b)
{
    sqlite3_stmt *st;
    if (SQ.prepare_v2(s->db,
                           "SELECT body FROM record WHERE signal = ? AND id BETWEEN ? AND ? ORDER BY id", -1,
                           &st, NULL) != SQLITE_OK)
        return -EIO;
    SQ.bind_int(st, 1, queue_of(b->signal, b->form));
    SQ.bind_int64(st, 2, b->first_id);
    SQ.bind_int64(st, 3, b->last_id);
    size_t cap = 0;
    int r = 0;
    while (SQ.step(st) == SQLITE_ROW) {
        if (b->n == cap) {
            cap = cap ? cap * 2 : 64;
            char **v = realloc(b->records, cap * sizeof(*v));
            if (v)
                b->records = v;
            size_t *l = v ? realloc(b->lens, cap * sizeof(*l)) : NULL;
            if (!l) {
                r = -ENOMEM;
                break;
            }
            b->lens = l;
        }
        /* a JSON line as text (as it was stored), an OTLP body as bytes */
        const void *body = b->form == SPOOL_OTLP ? SQ.column_blob(st, 0) : (const void *)SQ.column_text(st, 0);
        size_t len = (size_t)SQ.column_bytes(st, 0);
        char *copy = malloc(len + 1);
        if (!copy) {
            r = -ENOMEM;
            break;
        }
        if (len)
            memcpy(copy, body, len);
        copy[len] = '\0';
        b->records[b->n] = copy;
        b->lens[b->n++] = len;
    }
    SQ.finalize(st);
    return r;
}

static int delete_pending(spool *s, int sig)
{
    sqlite3_stmt *st;
    if (SQ.prepare_v2(s->db, "DELETE FROM pending WHERE signal = ?", -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    SQ.bind_int(st, 1, sig);
    int r = SQ.step(st) == SQLITE_DONE ? 0 : -EIO;
    SQ.finalize(st);
    return r;
}

/* spool_next_batch in one queue. */
static int next_in_queue(spool *s, pacer_signal sig, spool_form form, size_t max_records, spool_batch *ret)
{
    int queue = queue_of(sig, form);
    /* Twice at most: a pending batch whose records were all evicted is
     * forgotten and a new one chosen. */
    for (int attempt = 0; attempt < 2; attempt++) {
        memset(ret, 0, sizeof(*ret));
        ret->signal = sig;
        ret->form = form;
        if (exec(s, "BEGIN IMMEDIATE") < 0)
            return -EIO;
        int r = load_pending(s, queue, ret);
        if (r == 0)
            r = choose_batch(s, queue, max_records, ret);
        if (r == 1)
            r = load_records(s, ret) < 0 ? -EIO : 1;
        if (r == 1 && ret->n == 0)
            r = delete_pending(s, queue) < 0 ? -EIO : 2;
        if (r < 0 || exec(s, "COMMIT") < 0) {
            exec(s, "ROLLBACK");
            spool_batch_clear(ret);
            return -EIO;
        }
        if (r != 2)
            return r;
    }
    return 0;
}

void spool_set_batch_bytes(spool *s, int64_t max_bytes)
{
    s->batch_bytes = max_bytes > 0 ? max_bytes : 0;
}

int spool_next_batch(spool *s, pacer_signal sig, size_t max_records, spool_batch *ret)
{
    int r = next_in_queue(s, sig, SPOOL_JSON, max_records, ret);
    return r != 0 ? r : next_in_queue(s, sig, SPOOL_OTLP, max_records, ret);
}

void spool_batch_clear(spool_batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->records[i]);
    free(b->records);
    free(b->lens);
    b->records = NULL;
    b->lens = NULL;
    b->n = 0;
}

static int finish_batch(spool *s, const spool_batch *b, const char *counter)
{
    sqlite3_stmt *st;
    if (exec(s, "BEGIN IMMEDIATE") < 0)
        return -EIO;
    int r = -EIO;
    int64_t bytes = 0, n = 0;
    if (SQ.prepare_v2(s->db,
                           "SELECT coalesce(sum(bytes), 0), count(*) FROM record "
                           "WHERE signal = ? AND id BETWEEN ? AND ?", -1, &st, NULL) != SQLITE_OK)
        goto out;
    SQ.bind_int(st, 1, queue_of(b->signal, b->form));
    SQ.bind_int64(st, 2, b->first_id);
    SQ.bind_int64(st, 3, b->last_id);
    if (SQ.step(st) == SQLITE_ROW) {
        bytes = SQ.column_int64(st, 0);
        n = SQ.column_int64(st, 1);
    }
    SQ.finalize(st);
    if (SQ.prepare_v2(s->db, "DELETE FROM record WHERE signal = ? AND id BETWEEN ? AND ?", -1, &st,
                           NULL) != SQLITE_OK)
        goto out;
    SQ.bind_int(st, 1, queue_of(b->signal, b->form));
    SQ.bind_int64(st, 2, b->first_id);
    SQ.bind_int64(st, 3, b->last_id);
    int ok = SQ.step(st) == SQLITE_DONE;
    SQ.finalize(st);
    if (!ok)
        goto out;
    /* only the batch it was asked about: another process may have moved on */
    if (SQ.prepare_v2(s->db, "DELETE FROM pending WHERE signal = ? AND batch = ?", -1, &st, NULL) !=
        SQLITE_OK)
        goto out;
    SQ.bind_int(st, 1, queue_of(b->signal, b->form));
    SQ.bind_text(st, 2, b->id, 32, SQLITE_STATIC);
    ok = SQ.step(st) == SQLITE_DONE;
    SQ.finalize(st);
    if (ok && meta_add(s, "bytes", -bytes) == 0 && meta_add(s, counter, n) == 0)
        r = 0;
out:
    if (r == 0 && exec(s, "COMMIT") == 0)
        return 0;
    exec(s, "ROLLBACK");
    return -EIO;
}

int spool_ack(spool *s, const spool_batch *b)
{
    return finish_batch(s, b, "sent");
}

int spool_drop(spool *s, const spool_batch *b)
{
    return finish_batch(s, b, "dropped");
}

int spool_get_stats(spool *s, spool_stats *ret)
{
    sqlite3_stmt *st;
    memset(ret, 0, sizeof(*ret));
    if (SQ.prepare_v2(s->db, "SELECT count(*) FROM record", -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    if (SQ.step(st) == SQLITE_ROW)
        ret->records = SQ.column_int64(st, 0);
    SQ.finalize(st);
    ret->bytes = meta_get(s, "bytes");
    ret->dropped = meta_get(s, "dropped");
    ret->sent = meta_get(s, "sent");
    return 0;
}

static int mkdir_p(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int r = mkdir(path, 0700);
        *p = '/';
        if (r < 0 && errno != EEXIST)
            return -errno;
    }
    if (mkdir(path, 0700) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

char *spool_default_path(void)
{
    const char *state = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    char dir[4096];
    if (state && *state == '/')
        snprintf(dir, sizeof(dir), "%s/pacer", state);
    else if (home && *home)
        snprintf(dir, sizeof(dir), "%s/.local/state/pacer", home);
    else
        return NULL;
    if (mkdir_p(dir) < 0)
        return NULL;
    size_t n = strlen(dir) + sizeof("/spool.db");
    char *path = malloc(n);
    if (path)
        snprintf(path, n, "%s/spool.db", dir);
    return path;
}
