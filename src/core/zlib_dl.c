/* zlib loaded at run time (zlib_dl.h). */
#include "zlib_dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

static zlib_api api;
static const zlib_api *loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
#define ZLIB_RESOLVE(name)                              \
    if (!(*(void **)&api.name = dlsym(h, #name))) {     \
        memset(&api, 0, sizeof(api));                   \
        return;                                         \
    }
    ZLIB_FUNCTIONS(ZLIB_RESOLVE)
#undef ZLIB_RESOLVE
    loaded = &api;
}

const zlib_api *zlib_api_get(void)
{
    pthread_once(&once, load);
    return loaded;
}
