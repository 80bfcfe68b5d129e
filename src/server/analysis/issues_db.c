/* The issue state (issues_db.h): its file and its rows. */
#include "issues_db.h"

#include <pacer/base/array.h>
#include <pacer/base/clock.h>
#include <pacer/base/hash.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS ana_marks(source TEXT PRIMARY KEY, last_rowid INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS ana_versions(app TEXT NOT NULL, version TEXT NOT NULL, seq INTEGER NOT NULL,"
    "  first_ns INTEGER, last_ns INTEGER, sessions INTEGER NOT NULL DEFAULT 0, records INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY(app, version)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS ana_sessions(app TEXT NOT NULL, version TEXT NOT NULL, session TEXT NOT NULL,"
    "  PRIMARY KEY(app, version, session)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS issues(id TEXT PRIMARY KEY, app TEXT NOT NULL, kind TEXT NOT NULL,"
    "  key TEXT NOT NULL, fingerprint TEXT, title TEXT, status TEXT NOT NULL DEFAULT '',"
    "  severity TEXT NOT NULL DEFAULT '', first_ns INTEGER, last_ns INTEGER, first_version TEXT,"
    "  last_version TEXT, since_version TEXT, count INTEGER NOT NULL DEFAULT 0,"
    "  sessions INTEGER NOT NULL DEFAULT 0, details TEXT, grade TEXT, tracker TEXT,"
    "  seq INTEGER NOT NULL DEFAULT 0, updated_ns INTEGER) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS issues_app_last ON issues(app, last_ns);"
    "CREATE INDEX IF NOT EXISTS issues_app_status ON issues(app, status);"
    "CREATE TABLE IF NOT EXISTS issue_versions(id TEXT NOT NULL, version TEXT NOT NULL, count INTEGER NOT NULL,"
    "  total INTEGER NOT NULL, lost_ms REAL NOT NULL, sessions INTEGER NOT NULL, first_ns INTEGER,"
    "  last_ns INTEGER, qualifies INTEGER NOT NULL, check_a INTEGER, check_b INTEGER, sketch BLOB,"
    "  PRIMARY KEY(id, version)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS issue_sessions(id TEXT NOT NULL, version TEXT NOT NULL, session TEXT NOT NULL,"
    "  PRIMARY KEY(id, version, session)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS issue_deliveries(seq INTEGER PRIMARY KEY, target INTEGER NOT NULL,"
    "  issue TEXT NOT NULL, event TEXT NOT NULL, key TEXT NOT NULL, payload TEXT NOT NULL,"
    "  state TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0, next_ns INTEGER NOT NULL,"
    "  created_ns INTEGER, done_ns INTEGER, last_error TEXT);"
    "CREATE INDEX IF NOT EXISTS issue_deliveries_pending ON issue_deliveries(state, next_ns);"
    /* per pair of versions compared: the records each had at the last test */
    "CREATE TABLE IF NOT EXISTS ana_pairs(app TEXT NOT NULL, base TEXT NOT NULL, version TEXT NOT NULL,"
    "  n_base INTEGER NOT NULL, n_version INTEGER NOT NULL, tested_ns INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY(app, base, version)) WITHOUT ROWID;";

/* ---- the file ---- */

struct issues_db {
    issues_db_host host; /* the tables in another's file; or, in a file of their own: */
    sqlite3 *w, *r;      /* one connection to write, one to read */
    pthread_mutex_t wlock, rlock;
    bool own;
};

static int create_tables(void *ctx, sqlite3 *db)
{
    char **msg = ctx;
    return sqlite3_exec(db, SCHEMA, NULL, NULL, msg) == SQLITE_OK ? 0 : -EIO;
}

static int own_read(void *ctx, int (*fn)(void *fn_ctx, sqlite3 *db), void *fn_ctx)
{
    issues_db *db = ctx;
    pthread_mutex_lock(&db->rlock);
    int r = sqlite3_exec(db->r, "BEGIN", NULL, NULL, NULL) == SQLITE_OK ? fn(fn_ctx, db->r) : -EIO;
    sqlite3_exec(db->r, "COMMIT", NULL, NULL, NULL);
    pthread_mutex_unlock(&db->rlock);
    return r;
}

static int own_write(void *ctx, int (*fn)(void *fn_ctx, sqlite3 *db), void *fn_ctx)
{
    issues_db *db = ctx;
    pthread_mutex_lock(&db->wlock);
    int r = sqlite3_exec(db->w, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK ? fn(fn_ctx, db->w) : -EIO;
    if (r >= 0 && sqlite3_exec(db->w, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        r = -EIO;
    if (r < 0)
        sqlite3_exec(db->w, "ROLLBACK", NULL, NULL, NULL);
    pthread_mutex_unlock(&db->wlock);
    return r;
}

/* Creates the tables (when missing). */
static int db_start(issues_db *db, char *err, size_t err_size)
{
    char *msg = NULL;
    int r = db->host.write(db->host.ctx, create_tables, &msg);
    if (r < 0)
        snprintf(err, err_size, "cannot create the issue tables: %s", msg ? msg : strerror(-r));
    sqlite3_free(msg);
    return r;
}

issues_db *issues_db_open(const char *path, char *err, size_t err_size)
{
    issues_db *db = calloc(1, sizeof *db);
    if (!db) {
        snprintf(err, err_size, "%s: out of memory", path);
        return NULL;
    }
    db->own = true;
    pthread_mutex_init(&db->wlock, NULL);
    pthread_mutex_init(&db->rlock, NULL);
    db->host = (issues_db_host){own_read, own_write, db};
    if (sqlite3_open_v2(path, &db->w, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
            SQLITE_OK ||
        sqlite3_exec(db->w, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(err, err_size, "%s: %s", path, db->w ? sqlite3_errmsg(db->w) : "out of memory");
        issues_db_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db->w, 5000);
    char why[256];
    if (db_start(db, why, sizeof why) < 0) {
        snprintf(err, err_size, "%s: %s", path, why);
        issues_db_close(db);
        return NULL;
    }
    if (sqlite3_open_v2(path, &db->r, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        snprintf(err, err_size, "%s: cannot open for reading: %s", path, db->r ? sqlite3_errmsg(db->r) : "?");
        issues_db_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db->r, 5000);
    return db;
}

issues_db *issues_db_open_in(const issues_db_host *host, char *err, size_t err_size)
{
    issues_db *db = calloc(1, sizeof *db);
    if (!db) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    db->host = *host;
    if (db_start(db, err, err_size) < 0) {
        free(db);
        return NULL;
    }
    return db;
}

void issues_db_close(issues_db *db)
{
    if (!db)
        return;
    if (db->own) {
        sqlite3_close(db->r);
        sqlite3_close(db->w);
        pthread_mutex_destroy(&db->wlock);
        pthread_mutex_destroy(&db->rlock);
    }
    free(db);
}

int issues_db_read(issues_db *db, int (*fn)(void *ctx, sqlite3 *db), void *ctx)
{
    return db->host.read(db->host.ctx, fn, ctx);
}

int issues_db_write(issues_db *db, int (*fn)(void *ctx, sqlite3 *db), void *ctx)
{
    return db->host.write(db->host.ctx, fn, ctx);
}

/* Prepares sql (sqlite3_mprintf's, freed here): 0, -ENOMEM when it is
 * NULL, -EIO. */
static int prepare_owned(sqlite3 *db, char *sql, sqlite3_stmt **ret)
{
    int r = sql ? sqlite3_prepare_v2(db, sql, -1, ret, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    return r == SQLITE_OK ? 0 : r == SQLITE_NOMEM ? -ENOMEM : -EIO;
}

/* ---- rows ---- */

static void bind_text(sqlite3_stmt *s, int i, const char *t)
{
    if (t)
        sqlite3_bind_text(s, i, t, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(s, i);
}

static char *col_dup(sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    return t ? strdup((const char *)t) : NULL;
}

static void col_copy(sqlite3_stmt *s, int i, char *out, size_t size)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    snprintf(out, size, "%s", t ? (const char *)t : "");
}

void issues_db_id(const char *app, const char *kind, const char *key, char out[ISSUE_ID_LEN + 1])
{
    uint64_t h = FNV1A64_INIT;
    h = fnv1a64(h, app, strlen(app));
    h = fnv1a64(h, "\n", 1);
    h = fnv1a64(h, kind, strlen(kind));
    h = fnv1a64(h, "\n", 1);
    h = fnv1a64(h, key, strlen(key));
    snprintf(out, ISSUE_ID_LEN + 1, "%016" PRIx64, h);
}

void issues_db_issue_reset(iss_issue *i)
{
    char *all[] = {i->app, i->kind, i->key, i->fingerprint, i->title, i->first_version, i->last_version,
                   i->since_version, i->details, i->grade, i->tracker};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        free(all[k]);
    memset(i, 0, sizeof *i);
}

#define ISSUE_COLS                                                                                                   \
    "id, app, kind, key, fingerprint, title, status, severity, first_ns, last_ns, first_version, last_version,"     \
    " since_version, count, sessions, details, grade, tracker, seq, updated_ns"

int issues_db_issue_load(sqlite3 *db, const char *id, iss_issue *i)
{
    issues_db_issue_reset(i);
    snprintf(i->id, sizeof i->id, "%s", id);
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT " ISSUE_COLS " FROM issues WHERE id = ?1", -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, id);
    int r = sqlite3_step(s);
    if (r == SQLITE_ROW) {
        i->exists = true;
        i->app = col_dup(s, 1);
        i->kind = col_dup(s, 2);
        i->key = col_dup(s, 3);
        i->fingerprint = col_dup(s, 4);
        i->title = col_dup(s, 5);
        col_copy(s, 6, i->status, sizeof i->status);
        col_copy(s, 7, i->severity, sizeof i->severity);
        i->first_ns = sqlite3_column_int64(s, 8);
        i->last_ns = sqlite3_column_int64(s, 9);
        i->first_version = col_dup(s, 10);
        i->last_version = col_dup(s, 11);
        i->since_version = col_dup(s, 12);
        i->count = sqlite3_column_int64(s, 13);
        i->sessions = sqlite3_column_int64(s, 14);
        i->details = col_dup(s, 15);
        i->grade = col_dup(s, 16);
        i->tracker = col_dup(s, 17);
        i->seq = sqlite3_column_int64(s, 18);
        i->updated_ns = sqlite3_column_int64(s, 19);
    }
    sqlite3_finalize(s);
    return r == SQLITE_ROW || r == SQLITE_DONE ? 0 : -EIO;
}

int issues_db_issue_save(sqlite3 *db, const iss_issue *i)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO issues(" ISSUE_COLS ") VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
                               " ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
                           -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, i->id);
    bind_text(s, 2, i->app);
    bind_text(s, 3, i->kind);
    bind_text(s, 4, i->key);
    bind_text(s, 5, i->fingerprint);
    bind_text(s, 6, i->title);
    bind_text(s, 7, i->status);
    bind_text(s, 8, i->severity);
    sqlite3_bind_int64(s, 9, i->first_ns);
    sqlite3_bind_int64(s, 10, i->last_ns);
    bind_text(s, 11, i->first_version);
    bind_text(s, 12, i->last_version);
    bind_text(s, 13, i->since_version);
    sqlite3_bind_int64(s, 14, i->count);
    sqlite3_bind_int64(s, 15, i->sessions);
    bind_text(s, 16, i->details);
    bind_text(s, 17, i->grade);
    bind_text(s, 18, i->tracker);
    sqlite3_bind_int64(s, 19, i->seq);
    sqlite3_bind_int64(s, 20, i->updated_ns);
    int r = sqlite3_step(s);
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

void issues_db_vstat_init(iss_vstat *v)
{
    memset(v, 0, sizeof *v);
    sketch_init(&v->values);
}

void issues_db_vstat_reset(iss_vstat *v)
{
    sketch_reset(&v->values);
    issues_db_vstat_init(v);
}

#define VSTAT_COLS "version, count, total, lost_ms, sessions, first_ns, last_ns, qualifies, check_a, check_b, sketch"

static int vstat_read(sqlite3_stmt *s, iss_vstat *v)
{
    issues_db_vstat_reset(v);
    col_copy(s, 0, v->version, sizeof v->version);
    v->count = sqlite3_column_int64(s, 1);
    v->total = sqlite3_column_int64(s, 2);
    v->lost_ms = sqlite3_column_double(s, 3);
    v->sessions = sqlite3_column_int64(s, 4);
    v->first_ns = sqlite3_column_int64(s, 5);
    v->last_ns = sqlite3_column_int64(s, 6);
    v->qualifies = sqlite3_column_int(s, 7) != 0;
    v->check_a = sqlite3_column_int64(s, 8);
    v->check_b = sqlite3_column_int64(s, 9);
    if (sqlite3_column_type(s, 10) == SQLITE_BLOB &&
        sketch_decode(&v->values, sqlite3_column_blob(s, 10), (size_t)sqlite3_column_bytes(s, 10)) < 0)
        return -EIO;
    return 0;
}

int issues_db_vstat_load(sqlite3 *db, const char *id, const char *version, iss_vstat *v, bool *ret_found)
{
    issues_db_vstat_reset(v);
    snprintf(v->version, sizeof v->version, "%s", version);
    *ret_found = false;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT " VSTAT_COLS " FROM issue_versions WHERE id = ?1 AND version = ?2", -1, &s,
                           NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, id);
    bind_text(s, 2, version);
    int r = sqlite3_step(s), rc = 0;
    if (r == SQLITE_ROW) {
        *ret_found = true;
        rc = vstat_read(s, v);
    }
    sqlite3_finalize(s);
    return rc < 0 ? rc : r == SQLITE_ROW || r == SQLITE_DONE ? 0 : -EIO;
}

int issues_db_vstat_save(sqlite3 *db, const char *id, const iss_vstat *v)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    if (v->values.count && sketch_encode(&v->values, &buf, &len) < 0)
        return -ENOMEM;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO issue_versions(id, " VSTAT_COLS ") VALUES(?1, ?2, ?3, ?4,"
                               " ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                           -1, &s, NULL) != SQLITE_OK) {
        free(buf);
        return -EIO;
    }
    bind_text(s, 1, id);
    bind_text(s, 2, v->version);
    sqlite3_bind_int64(s, 3, v->count);
    sqlite3_bind_int64(s, 4, v->total);
    sqlite3_bind_double(s, 5, v->lost_ms);
    sqlite3_bind_int64(s, 6, v->sessions);
    sqlite3_bind_int64(s, 7, v->first_ns);
    sqlite3_bind_int64(s, 8, v->last_ns);
    sqlite3_bind_int(s, 9, v->qualifies);
    sqlite3_bind_int64(s, 10, v->check_a);
    sqlite3_bind_int64(s, 11, v->check_b);
    if (buf)
        sqlite3_bind_blob(s, 12, buf, (int)len, free);
    else
        sqlite3_bind_null(s, 12);
    int r = sqlite3_step(s);
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

int issues_db_vstat_each(sqlite3 *db, const char *id, bool (*cb)(void *ctx, const iss_vstat *v), void *ctx)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT " VSTAT_COLS " FROM issue_versions WHERE id = ?1", -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, id);
    iss_vstat v;
    issues_db_vstat_init(&v);
    int r, rc = 0;
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
        if ((rc = vstat_read(s, &v)) < 0 || !cb(ctx, &v))
            break;
    }
    issues_db_vstat_reset(&v);
    sqlite3_finalize(s);
    if (rc < 0)
        return rc;
    return r == SQLITE_ROW || r == SQLITE_DONE ? 0 : -EIO;
}

int issues_db_session_add(sqlite3 *db, const char *id, const char *version, const char *session)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO issue_sessions(id, version, session) VALUES(?1, ?2, ?3)", -1,
                           &s, NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, id);
    bind_text(s, 2, version);
    bind_text(s, 3, session);
    int r = sqlite3_step(s);
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? sqlite3_changes(db) > 0 : -EIO;
}

int issues_db_version_touch(sqlite3 *db, const char *app, const char *version, int64_t ts, const char *session,
                      int64_t records)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO ana_versions(app, version, seq, first_ns, last_ns, sessions, records)"
                           " VALUES(?1, ?2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM ana_versions WHERE app = ?1),"
                           " ?3, ?3, 0, ?4) ON CONFLICT(app, version) DO UPDATE SET"
                           " first_ns = MIN(first_ns, excluded.first_ns), last_ns = MAX(last_ns, excluded.last_ns),"
                           " records = records + excluded.records",
                           -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, app);
    bind_text(s, 2, version);
    sqlite3_bind_int64(s, 3, ts);
    sqlite3_bind_int64(s, 4, records);
    int r = sqlite3_step(s);
    sqlite3_finalize(s);
    if (r != SQLITE_DONE)
        return -EIO;
    if (!session || !*session)
        return 0;
    if (sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO ana_sessions(app, version, session) VALUES(?1, ?2, ?3)", -1, &s,
                           NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, app);
    bind_text(s, 2, version);
    bind_text(s, 3, session);
    r = sqlite3_step(s);
    sqlite3_finalize(s);
    if (r != SQLITE_DONE)
        return -EIO;
    if (sqlite3_changes(db) == 0)
        return 0;
    if (sqlite3_prepare_v2(db, "UPDATE ana_versions SET sessions = sessions + 1 WHERE app = ?1 AND version = ?2", -1,
                           &s, NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, app);
    bind_text(s, 2, version);
    r = sqlite3_step(s);
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

int issues_db_versions(sqlite3 *db, const char *app, iss_version **ret, size_t *ret_n)
{
    *ret = NULL;
    *ret_n = 0;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT version, seq, first_ns, last_ns, sessions, records FROM ana_versions"
                               " WHERE app = ?1 ORDER BY seq",
                           -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, app);
    size_t cap = 0;
    int r;
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
        if (!ARRAY_GROW(*ret, cap, *ret_n + 1, 16)) {
            r = SQLITE_NOMEM;
            break;
        }
        iss_version *v = &(*ret)[(*ret_n)++];
        col_copy(s, 0, v->version, sizeof v->version);
        v->seq = sqlite3_column_int64(s, 1);
        v->first_ns = sqlite3_column_int64(s, 2);
        v->last_ns = sqlite3_column_int64(s, 3);
        v->sessions = sqlite3_column_int64(s, 4);
        v->records = sqlite3_column_int64(s, 5);
    }
    sqlite3_finalize(s);
    if (r != SQLITE_DONE) {
        free(*ret);
        *ret = NULL;
        *ret_n = 0;
        return r == SQLITE_NOMEM ? -ENOMEM : -EIO;
    }
    return 0;
}

int issues_db_mark_get(sqlite3 *db, const char *source, int64_t *ret)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT last_rowid FROM ana_marks WHERE source = ?1", -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, source);
    int r = sqlite3_step(s);
    *ret = r == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_finalize(s);
    return r == SQLITE_ROW || r == SQLITE_DONE ? 0 : -EIO;
}

int issues_db_mark_set(sqlite3 *db, const char *source, int64_t rowid)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO ana_marks(source, last_rowid) VALUES(?1, ?2)", -1, &s, NULL) !=
        SQLITE_OK)
        return -EIO;
    bind_text(s, 1, source);
    sqlite3_bind_int64(s, 2, rowid);
    int r = sqlite3_step(s);
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

int issues_db_open_ids(sqlite3 *db, const char *app, char (*ret)[ISSUE_ID_LEN + 1], size_t max, size_t *ret_n)
{
    *ret_n = 0;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT id FROM issues WHERE app = ?1 AND status IN ('new', 'ongoing', 'regressed')"
                               " ORDER BY last_ns DESC LIMIT ?2",
                           -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, app);
    sqlite3_bind_int64(s, 2, (int64_t)max);
    int r;
    while ((r = sqlite3_step(s)) == SQLITE_ROW && *ret_n < max)
        col_copy(s, 0, ret[(*ret_n)++], ISSUE_ID_LEN + 1);
    sqlite3_finalize(s);
    return r == SQLITE_DONE || r == SQLITE_ROW ? 0 : -EIO;
}

int64_t issues_db_candidates(sqlite3 *db, const char *app)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM issues WHERE app = ?1", -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, app);
    int64_t n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -EIO;
    sqlite3_finalize(s);
    return n;
}

int issues_db_pair_get(sqlite3 *db, const char *app, const char *base, const char *version, int64_t *ret_base,
                 int64_t *ret_version, int64_t *ret_tested_ns)
{
    sqlite3_stmt *s;
    *ret_base = *ret_version = *ret_tested_ns = 0;
    if (sqlite3_prepare_v2(db, "SELECT n_base, n_version, tested_ns FROM ana_pairs WHERE app = ?1 AND base = ?2"
                               " AND version = ?3",
                           -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, app);
    bind_text(s, 2, base);
    bind_text(s, 3, version);
    int r = sqlite3_step(s);
    if (r == SQLITE_ROW) {
        *ret_base = sqlite3_column_int64(s, 0);
        *ret_version = sqlite3_column_int64(s, 1);
        *ret_tested_ns = sqlite3_column_int64(s, 2);
    }
    sqlite3_finalize(s);
    return r == SQLITE_ROW || r == SQLITE_DONE ? 0 : -EIO;
}

int issues_db_pair_set(sqlite3 *db, const char *app, const char *base, const char *version, int64_t n_base,
                 int64_t n_version, int64_t tested_ns)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO ana_pairs(app, base, version, n_base, n_version, tested_ns)"
                               " VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
                           -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, app);
    bind_text(s, 2, base);
    bind_text(s, 3, version);
    sqlite3_bind_int64(s, 4, n_base);
    sqlite3_bind_int64(s, 5, n_version);
    sqlite3_bind_int64(s, 6, tested_ns);
    int r = sqlite3_step(s);
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

/* ---- deliveries ---- */

int issues_db_delivery_add(sqlite3 *db, int target, const char *issue, const char *event, const char *key,
                     const char *payload)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "INSERT INTO issue_deliveries(target, issue, event, key, payload, next_ns, created_ns)"
                               " VALUES(?1, ?2, ?3, ?4, ?5, 0, ?6)",
                           -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int(s, 1, target);
    bind_text(s, 2, issue);
    bind_text(s, 3, event);
    bind_text(s, 4, key);
    bind_text(s, 5, payload);
    sqlite3_bind_int64(s, 6, wall_ns());
    int r = sqlite3_step(s);
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

int issues_db_deliveries_due(sqlite3 *db, int64_t now_ns, size_t max, iss_delivery **ret, size_t *ret_n)
{
    *ret = NULL;
    *ret_n = 0;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db,
                           "SELECT seq, target, issue, event, key, payload, attempts, next_ns FROM issue_deliveries d"
                           " WHERE state = 'pending' AND next_ns <= ?1 AND NOT EXISTS (SELECT 1 FROM issue_deliveries e"
                           "  WHERE e.state = 'pending' AND e.issue = d.issue AND e.target = d.target AND e.seq < d.seq)"
                           " ORDER BY seq LIMIT ?2",
                           -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(s, 1, now_ns);
    sqlite3_bind_int64(s, 2, (int64_t)max);
    iss_delivery *d = calloc(max ? max : 1, sizeof *d);
    if (!d) {
        sqlite3_finalize(s);
        return -ENOMEM;
    }
    int r = SQLITE_DONE;
    size_t n = 0;
    while (n < max && (r = sqlite3_step(s)) == SQLITE_ROW) {
        iss_delivery *x = &d[n++];
        x->seq = sqlite3_column_int64(s, 0);
        x->target = sqlite3_column_int(s, 1);
        col_copy(s, 2, x->issue, sizeof x->issue);
        col_copy(s, 3, x->event, sizeof x->event);
        col_copy(s, 4, x->key, sizeof x->key);
        x->payload = col_dup(s, 5);
        x->attempts = sqlite3_column_int64(s, 6);
        x->next_ns = sqlite3_column_int64(s, 7);
    }
    if (r == SQLITE_ROW)
        r = SQLITE_DONE; /* max reached */
    sqlite3_finalize(s);
    if (r != SQLITE_DONE) {
        for (size_t i = 0; i < n; i++)
            free(d[i].payload);
        free(d);
        return -EIO;
    }
    *ret = d;
    *ret_n = n;
    return 0;
}

int issues_db_deliveries_next(sqlite3 *db, int64_t *ret_ns)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db,
                           "SELECT MIN(next_ns) FROM issue_deliveries d WHERE state = 'pending' AND NOT EXISTS"
                           " (SELECT 1 FROM issue_deliveries e WHERE e.state = 'pending' AND e.issue = d.issue"
                           "  AND e.target = d.target AND e.seq < d.seq)",
                           -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    int r = sqlite3_step(s);
    *ret_ns = r == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL ? sqlite3_column_int64(s, 0) : INT64_MAX;
    sqlite3_finalize(s);
    return r == SQLITE_ROW ? 0 : -EIO;
}

int issues_db_delivery_update(sqlite3 *db, int64_t seq, const char *state, int64_t attempts, int64_t next_ns,
                        const char *error)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "UPDATE issue_deliveries SET state = ?2, attempts = ?3, next_ns = ?4, last_error = ?5,"
                               " done_ns = CASE WHEN ?2 = 'pending' THEN NULL ELSE ?6 END WHERE seq = ?1",
                           -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(s, 1, seq);
    bind_text(s, 2, state);
    sqlite3_bind_int64(s, 3, attempts);
    sqlite3_bind_int64(s, 4, next_ns);
    bind_text(s, 5, error);
    sqlite3_bind_int64(s, 6, wall_ns());
    int r = sqlite3_step(s);
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

int issues_db_tracker_get(sqlite3 *db, const char *issue, char **ret)
{
    *ret = NULL;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT tracker FROM issues WHERE id = ?1", -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, issue);
    int r = sqlite3_step(s);
    if (r == SQLITE_ROW)
        *ret = col_dup(s, 0);
    sqlite3_finalize(s);
    return r == SQLITE_ROW || r == SQLITE_DONE ? 0 : -EIO;
}

int issues_db_tracker_set(sqlite3 *db, const char *issue, const char *json)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "UPDATE issues SET tracker = ?2 WHERE id = ?1", -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    bind_text(s, 1, issue);
    bind_text(s, 2, json);
    int r = sqlite3_step(s);
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

int issues_db_prune(sqlite3 *db, int64_t now_ns)
{
    static const char *const sql[] = {
        "DELETE FROM issue_deliveries WHERE state <> 'pending' AND done_ns < ?1 - 30 * 86400000000000",
        "DELETE FROM ana_sessions WHERE (app, version) IN (SELECT app, version FROM ana_versions"
        " WHERE last_ns < ?1 - 180 * 86400000000000)",
        "DELETE FROM issue_sessions WHERE (id, version) IN (SELECT v.id, v.version FROM issue_versions v"
        " WHERE v.last_ns < ?1 - 180 * 86400000000000)",
    };
    for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
        sqlite3_stmt *s;
        if (sqlite3_prepare_v2(db, sql[i], -1, &s, NULL) != SQLITE_OK)
            return -EIO;
        sqlite3_bind_int64(s, 1, now_ns);
        int r = sqlite3_step(s);
        sqlite3_finalize(s);
        if (r != SQLITE_DONE)
            return -EIO;
    }
    return 0;
}

/* ---- listing ---- */

static size_t list_len(const char *const *l, size_t max)
{
    size_t n = 0;
    while (n < max && l[n])
        n++;
    return n;
}

/* "?A, ?B, …" placeholders from number first, n of them, into out. */
static void placeholders(char *out, size_t size, int first, size_t n)
{
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; i < n && o < size; i++)
        o += (size_t)snprintf(out + o, size - o, "%s?%d", i ? ", " : "", first + (int)i);
}

int issues_db_list(sqlite3 *db, const iss_query *q, char (*ret)[ISSUE_ID_LEN + 1], int64_t *ret_last_ns, size_t *ret_n,
             bool *ret_more)
{
    *ret_n = 0;
    *ret_more = false;
    size_t ns = list_len(q->statuses, 8), nk = list_len(q->kinds, 16), nv = list_len(q->severities, 4);
    char ps[128], pk[256], pv[64];
    /* ?1 app, ?2 before_ns, ?3 before_id, ?4 version, ?5 limit + 1, then the lists */
    placeholders(ps, sizeof ps, 6, ns);
    placeholders(pk, sizeof pk, 6 + (int)ns, nk);
    placeholders(pv, sizeof pv, 6 + (int)(ns + nk), nv);
    char *sql = sqlite3_mprintf(
        "SELECT id, last_ns FROM issues WHERE app = ?1 AND status <> ''"
        " AND (?2 IS NULL OR last_ns < ?2 OR (last_ns = ?2 AND id < ?3))"
        " AND (?4 IS NULL OR EXISTS (SELECT 1 FROM issue_versions v WHERE v.id = issues.id AND v.version = ?4"
        "  AND v.qualifies))"
        "%s%s%s%s%s%s%s%s%s ORDER BY last_ns DESC, id DESC LIMIT ?5",
        ns ? " AND status IN (" : "", ns ? ps : "", ns ? ")" : "", nk ? " AND kind IN (" : "", nk ? pk : "",
        nk ? ")" : "", nv ? " AND severity IN (" : "", nv ? pv : "", nv ? ")" : "");
    sqlite3_stmt *s;
    int r = prepare_owned(db, sql, &s);
    if (r < 0)
        return r;
    bind_text(s, 1, q->app);
    if (q->before_id[0]) {
        sqlite3_bind_int64(s, 2, q->before_ns);
        bind_text(s, 3, q->before_id);
    }
    bind_text(s, 4, q->version);
    sqlite3_bind_int64(s, 5, (int64_t)q->limit + 1);
    int k = 6;
    for (size_t i = 0; i < ns; i++)
        bind_text(s, k++, q->statuses[i]);
    for (size_t i = 0; i < nk; i++)
        bind_text(s, k++, q->kinds[i]);
    for (size_t i = 0; i < nv; i++)
        bind_text(s, k++, q->severities[i]);
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
        if (*ret_n == q->limit) {
            *ret_more = true;
            r = SQLITE_DONE;
            break;
        }
        col_copy(s, 0, ret[*ret_n], ISSUE_ID_LEN + 1);
        ret_last_ns[*ret_n] = sqlite3_column_int64(s, 1);
        (*ret_n)++;
    }
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}

const char *const issues_db_severities[ISS_N_SEVERITIES + 1] = {
    [ISS_CRITICAL] = "critical", [ISS_MAJOR] = "major", [ISS_MINOR] = "minor", [ISS_N_SEVERITIES] = NULL};
const char *const issues_db_statuses[] = {"new", "ongoing", "resolved", "regressed", NULL};
const char *const issues_db_kinds[] = {"jank", "hang", "leak", "net_error", "large_image", "large_payload",
                                 "slow_request", "slow_page", "slow_startup", "frozen_frames", "n_plus_one",
                                 "serial_requests", "page_regression", "startup_regression", NULL};

int issues_db_status_counts(sqlite3 *db, int64_t ret[5])
{
    static const char *const statuses[5] = {"new", "ongoing", "resolved", "regressed", ""};
    memset(ret, 0, 5 * sizeof *ret);
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT status, COUNT(*) FROM issues WHERE status <> '' GROUP BY status", -1, &s,
                           NULL) != SQLITE_OK)
        return -EIO;
    int r;
    while ((r = sqlite3_step(s)) == SQLITE_ROW)
        for (int k = 0; k < 4; k++)
            if (strcmp((const char *)sqlite3_column_text(s, 0), statuses[k]) == 0)
                ret[k] = sqlite3_column_int64(s, 1);
    sqlite3_finalize(s);
    return r == SQLITE_DONE ? 0 : -EIO;
}
