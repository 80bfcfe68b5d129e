/* pacer bench: a baseline from pacerd (bench_server.h). */
#include "bench_server.h"
#include "commands.h"

#include <pacer/base/curl_dl.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ANSWER (256u << 20)


int bench_server_fetch(const char *server, const char *token, const char *app, const char *version, bench_set **ret,
                       char *err, size_t err_len)
{
    int rc = -1;
    cli_answer a = {.max = MAX_ANSWER};
    char *url = NULL, *e_app = NULL, *e_version = NULL, *auth = NULL;
    struct curl_slist *headers = NULL;
    const curl_api *cu = curl_api_get();
    if (!cu) {
        snprintf(err, err_len, "libcurl (libcurl.so.4) cannot be loaded");
        return -1;
    }
    CURL *h = cu->easy_init();
    if (!h) {
        snprintf(err, err_len, "cannot start libcurl");
        return -1;
    }
    e_app = cu->easy_escape(h, app, 0);
    e_version = cu->easy_escape(h, version, 0);
    size_t slen = strlen(server);
    while (slen > 0 && server[slen - 1] == '/')
        slen--;
    if (!e_app || !e_version || asprintf(&url, "%.*s/api/v1/samples?app=%s&version=%s", (int)slen, server, e_app,
                                         e_version) < 0 ||
        asprintf(&auth, "Authorization: Bearer %s", token) < 0) {
        url = auth = NULL;
        snprintf(err, err_len, "out of memory");
        goto out;
    }
    headers = cu->slist_append(headers, auth);
    cu->easy_setopt(h, CURLOPT_URL, url);
    cu->easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    cu->easy_setopt(h, CURLOPT_WRITEFUNCTION, cli_answer_write);
    cu->easy_setopt(h, CURLOPT_WRITEDATA, &a);
    cu->easy_setopt(h, CURLOPT_TIMEOUT, 120L);
    cu->easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
    cu->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    cu->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    cu->easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    CURLcode cr = cu->easy_perform(h);
    long status = 0;
    cu->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    /* the URL without its query: the app and version are in the message anyway */
    if (cr != CURLE_OK) {
        snprintf(err, err_len, "%.*s/api/v1/samples: %s", (int)slen, server,
                 a.too_big ? "the answer is larger than 256 MiB" : cu->easy_strerror(cr));
        goto out;
    }
    if (status != 200) {
        const char *msg = a.data ? a.data : "";
        snprintf(err, err_len, "%.*s/api/v1/samples: HTTP %ld%s%.300s", (int)slen, server, status, *msg ? ": " : "",
                 msg);
        err[strcspn(err, "\r\n")] = 0;
        goto out;
    }
    if (!a.data && !(a.data = calloc(1, 1))) {
        snprintf(err, err_len, "out of memory");
        goto out;
    }
    char why[512];
    int pr = bench_set_parse_server(a.data, a.len, ret, why, sizeof(why));
    if (pr < 0) {
        snprintf(err, err_len, "%.*s/api/v1/samples: %s", (int)slen, server, why);
        goto out;
    }
    rc = 0;
out:
    cu->slist_free_all(headers);
    cu->free(e_app);
    cu->free(e_version);
    free(url);
    free(auth);
    free(a.data);
    cu->easy_cleanup(h);
    return rc;
}
