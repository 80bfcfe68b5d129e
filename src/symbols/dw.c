/* libdw and libelf loaded at run time (symbols_dw.h). */
#include <pacer/symbols_dw.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define LIBDW "libdw.so.1"

static pt_dw_api api;
static const pt_dw_api *loaded;
static char error[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    void *h = dlopen(LIBDW, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(error, sizeof(error), "%s", e ? e : "cannot load " LIBDW);
        return;
    }
    /* a handle's look-up covers its dependencies: libelf's functions too */
#define PT_DW_RESOLVE(name)                                                             \
    if (!(*(void **)&api.name = dlsym(h, #name))) {                                     \
        snprintf(error, sizeof(error), "%s lacks %s", LIBDW, #name);                    \
        dlclose(h);                                                                     \
        memset(&api, 0, sizeof(api));                                                   \
        return;                                                                         \
    }
    PT_DW_FUNCTIONS(PT_DW_RESOLVE)
#undef PT_DW_RESOLVE
    loaded = &api;
}

const pt_dw_api *pt_dw(void)
{
    pthread_once(&once, load);
    return loaded;
}

const char *pt_dw_error(void)
{
    return error;
}
