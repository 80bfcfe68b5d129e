/* SQLite, loaded when the spool is first opened. Only a program that
 * uploads to pacerd keeps a spool; linking SQLite would map it into every
 * program the agent is preloaded into, and into every `pacer` command
 * (about 0.5 ms of process start-up each). */
#ifndef PACER_CORE_SQLITE_DL_H
#define PACER_CORE_SQLITE_DL_H

#include <sqlite3.h>

typedef struct sqlite_api {
    int (*open_v2)(const char *path, sqlite3 **db, int flags, const char *vfs);
    int (*close)(sqlite3 *db);
    int (*busy_timeout)(sqlite3 *db, int ms);
    int (*exec)(sqlite3 *db, const char *sql, int (*cb)(void *, int, char **, char **), void *ctx, char **err);
    int (*errcode)(sqlite3 *db);
    const char *(*errmsg)(sqlite3 *db);
    const char *(*errstr)(int code);
    int (*prepare_v2)(sqlite3 *db, const char *sql, int n, sqlite3_stmt **st, const char **tail);
    int (*step)(sqlite3_stmt *st);
    int (*finalize)(sqlite3_stmt *st);
    int (*bind_int)(sqlite3_stmt *st, int i, int v);
    int (*bind_int64)(sqlite3_stmt *st, int i, sqlite3_int64 v);
    int (*bind_text)(sqlite3_stmt *st, int i, const char *v, int n, void (*destroy)(void *));
    int (*bind_blob)(sqlite3_stmt *st, int i, const void *v, int n, void (*destroy)(void *));
    int (*column_bytes)(sqlite3_stmt *st, int i);
    sqlite3_int64 (*column_int64)(sqlite3_stmt *st, int i);
    const unsigned char *(*column_text)(sqlite3_stmt *st, int i);
    const void *(*column_blob)(sqlite3_stmt *st, int i);
} sqlite_api;

/* Loads SQLite (once, thread-safe) and returns its functions, or NULL when
 * it cannot be loaded. */
const sqlite_api *sqlite_api_get(void);

#endif
