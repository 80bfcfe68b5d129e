/* libcurl loaded at run time (pacer/base/curl_dl.h). */
#include <pacer/base/curl_dl.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>

static curl_api api;
static bool loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    /* dlsym on the library's handle finds libcurl's definitions, not
     * those of a preloaded object (the agent hooks curl_easy_perform). */
#define SYM(field, name) *(void **)&api.field = dlsym(h, name)
    SYM(easy_init, "curl_easy_init");
    SYM(easy_cleanup, "curl_easy_cleanup");
    SYM(easy_reset, "curl_easy_reset");
    SYM(easy_setopt, "curl_easy_setopt");
    SYM(easy_perform, "curl_easy_perform");
    SYM(easy_getinfo, "curl_easy_getinfo");
    SYM(easy_escape, "curl_easy_escape");
    SYM(easy_strerror, "curl_easy_strerror");
    SYM(free, "curl_free");
    SYM(slist_append, "curl_slist_append");
    SYM(slist_free_all, "curl_slist_free_all");
#undef SYM
    CURLcode (*global_init)(long) = NULL;
    *(void **)&global_init = dlsym(h, "curl_global_init");
    void **fields = (void **)&api;
    for (size_t i = 0; i < sizeof(api) / sizeof(void *); i++)
        if (!fields[i])
            return;
    /* reference counted inside libcurl: harmless if the app did it too */
    if (!global_init || global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return;
    loaded = true;
}

const curl_api *curl_api_get(void)
{
    pthread_once(&once, load);
    return loaded ? &api : NULL;
}
