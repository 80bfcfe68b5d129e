/* libcurl, loaded when first needed: by the uploader, and by the commands
 * of `pacer` that talk to pacerd. Linking libcurl would map it and its
 * dependency tree (TLS, HTTP/2, LDAP, Kerberos, …: some 30 libraries,
 * ~5 ms of process start-up) into every program the agent is preloaded
 * into, uploading or not, and into every `pacer run` before it starts
 * the app. */
#ifndef PACER_BASE_CURL_DL_H
#define PACER_BASE_CURL_DL_H

#include <curl/curl.h>

typedef struct curl_api {
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *c);
    void (*easy_reset)(CURL *c);
    CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
    CURLcode (*easy_perform)(CURL *c);
    CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
    char *(*easy_escape)(CURL *c, const char *s, int len);
    const char *(*easy_strerror)(CURLcode code);
    void (*free)(void *p);
    struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
    void (*slist_free_all)(struct curl_slist *l);
} curl_api;

/* Loads libcurl (once, thread-safe) and returns its functions — the
 * library's own, never an interposed hook — or NULL when it cannot be
 * loaded. */
const curl_api *curl_api_get(void);

#endif
