/* expat loaded at run time (expat_dl.h). */
#include "expat_dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define LIBEXPAT "libexpat.so.1"

static expat_api api;
static const expat_api *loaded;
static char why[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    void *h = dlopen(LIBEXPAT, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, sizeof(why), "%s", e ? e : "cannot load " LIBEXPAT);
        return;
    }
#define EXPAT_RESOLVE(name)                                             \
    if (!(*(void **)&api.name = dlsym(h, #name))) {                     \
        snprintf(why, sizeof(why), "%s lacks %s", LIBEXPAT, #name);     \
        memset(&api, 0, sizeof(api));                                   \
        return;                                                         \
    }
    EXPAT_FUNCTIONS(EXPAT_RESOLVE)
#undef EXPAT_RESOLVE
    loaded = &api;
}

const expat_api *expat_api_get(const char **ret_why)
{
    pthread_once(&once, load);
    if (!loaded && ret_why)
        *ret_why = why;
    return loaded;
}
