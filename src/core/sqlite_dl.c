/* SQLite loaded at run time (sqlite_dl.h). */
#include "sqlite_dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>

static sqlite_api api;
static bool loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    void *h = dlopen("libsqlite3.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
#define SYM(field) *(void **)&api.field = dlsym(h, "sqlite3_" #field)
    SYM(open_v2);
    SYM(close);
    SYM(busy_timeout);
    SYM(exec);
    SYM(errcode);
    SYM(errmsg);
    SYM(errstr);
    SYM(prepare_v2);
    SYM(step);
    SYM(finalize);
    SYM(bind_int);
    SYM(bind_int64);
    SYM(bind_text);
    SYM(bind_blob);
    SYM(column_bytes);
    SYM(column_int64);
    SYM(column_text);
    SYM(column_blob);
#undef SYM
    void **fields = (void **)&api;
    for (size_t i = 0; i < sizeof(api) / sizeof(void *); i++)
        if (!fields[i])
            return;
    loaded = true;
}

const sqlite_api *sqlite_api_get(void)
{
    pthread_once(&once, load);
    return loaded ? &api : NULL;
}
