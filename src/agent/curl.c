/* libcurl requests, easy and multi interface.
 *
 *   URL    curl_easy_setopt(CURLOPT_URL) is remembered per easy handle
 *          (libcurl has no getter for options, and CURLINFO_EFFECTIVE_URL
 *          is empty before the first transfer);
 *   easy   curl_easy_perform: start on entry, end on return;
 *   multi  curl_multi_add_handle starts; the CURLMSG_DONE message the app
 *          reads with curl_multi_info_read ends (the moment the app learns
 *          of it); curl_multi_remove_handle of a handle still running ends
 *          it as aborted.
 *   free   curl_easy_cleanup / curl_easy_reset forget the handle.
 *   error  a failed transfer's text: the app's CURLOPT_ERRORBUFFER when it set
 *          one (curl writes the detailed message there: "Failed to connect
 *          to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server"), else
 *          curl_easy_strerror(); phases it never reached are null.
 * Timings and sizes come from curl_easy_getinfo (the *_TIME_T values are
 * cumulative from the transfer start; the record holds phase durations).
 *
 * libcurl calls its own exported functions through the PLT (curl_easy_perform
 * runs a private multi handle), so a per-thread depth counter makes hooks
 * entered from inside a hooked call pass straight through.
 *
 * curl_easy_setopt is variadic: the hook reads the one argument as a
 * pointer-sized integer and passes it on unchanged. That is exact on the
 * LP64 ABIs pacer supports, where long, curl_off_t and pointers travel in
 * the same registers; the build refuses other ABIs.
 *
 * Calls made by the pacer core inside this library (its uploader) are not
 * the app's and pass through (called_by_agent).
 *
 * Handles live in a small list under a mutex: touched once per setopt(URL)
 * and twice per request, never per byte.
 */
/* the hooks define curl_easy_setopt and friends: no type-checking macros */
#define CURL_DISABLE_TYPECHECK 1

#include "agent.h"

#include <curl/curl.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(long) == sizeof(void *) && sizeof(curl_off_t) == sizeof(void *),
               "the curl_easy_setopt hook assumes an LP64 ABI");

typedef struct creq {
    CURL *h;
    char *url;
    const char *errbuf; /* the app's CURLOPT_ERRORBUFFER (CURL_ERROR_SIZE bytes), or NULL */
    int64_t t_start;
    bool running;
    struct creq *next;
} creq;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static creq *handles;
static __thread int depth __attribute__((tls_model("initial-exec")));

static struct {
    CURLcode (*setopt)(CURL *, CURLoption, ...);
    CURLcode (*perform)(CURL *);
    void (*cleanup)(CURL *);
    void (*reset)(CURL *);
    CURLMcode (*multi_add)(CURLM *, CURL *);
    CURLMcode (*multi_remove)(CURLM *, CURL *);
    CURLMsg *(*info_read)(CURLM *, int *);
    CURLcode (*getinfo)(CURL *, CURLINFO, ...);
    const char *(*strerror)(CURLcode);
} R;

/* libcurl's own definition of a hooked function (agent_real: a libcurl
 * loaded outside the global scope — by the core's uploader, or a plugin of
 * the app — is found through its handle). */
#define REAL(field, name) AGENT_REAL(R.field, "libcurl.so.4", name)

static creq *find(CURL *h, bool create)
{
    for (creq *c = handles; c; c = c->next)
        if (c->h == h)
            return c;
    if (!create)
        return NULL;
    creq *c = calloc(1, sizeof(*c));
    if (c) {
        c->h = h;
        c->next = handles;
        handles = c;
    }
    return c;
}

static void forget(CURL *h)
{
    pthread_mutex_lock(&mu);
    for (creq **it = &handles; *it; it = &(*it)->next) {
        if ((*it)->h == h) {
            creq *c = *it;
            *it = c->next;
            free(c->url);
            free(c);
            break;
        }
    }
    pthread_mutex_unlock(&mu);
}

/* Whether `caller` is code of this very library: the pacer core linked into
 * the agent uploads with libcurl too, and its calls bind to these hooks. */
static bool called_by_agent(const void *caller)
{
    static const void *self_base;
    Dl_info di;
    if (!self_base && dladdr((const void *)&called_by_agent, &di))
        self_base = di.dli_fbase;
    return dladdr(caller, &di) && di.dli_fbase == self_base;
}

/* `caller`: __builtin_return_address(0) of the hook. pacer's own threads
 * (the uploader) call libcurl directly, but libcurl's calls to its own
 * exported functions (curl_easy_perform → curl_multi_add_handle) still bind
 * to these hooks: the thread tells them apart. */
static bool hooks_on(const void *caller)
{
    return depth == 0 && !agent_in_hook && agent_active() && !pacer_thread_is_internal() &&
           !called_by_agent(caller);
}

static void request_start(CURL *h)
{
    char url[2048] = "";
    int64_t t = pacer_now_ns();
    pthread_mutex_lock(&mu);
    creq *c = find(h, true);
    if (c) {
        c->running = true;
        c->t_start = t;
        if (c->url)
            snprintf(url, sizeof(url), "%s", c->url);
    }
    pthread_mutex_unlock(&mu);
    if (c && url[0])
        net_request_start(url, h, t);
}

static curl_off_t info_off(CURL *h, CURLINFO what)
{
    curl_off_t v = -1;
    if (!R.getinfo || R.getinfo(h, what, &v) != CURLE_OK)
        return -1;
    return v;
}

static long info_long(CURL *h, CURLINFO what)
{
    long v = -1;
    if (!R.getinfo || R.getinfo(h, what, &v) != CURLE_OK)
        return -1;
    return v;
}

static const char *info_str(CURL *h, CURLINFO what)
{
    char *v = NULL;
    if (!R.getinfo || R.getinfo(h, what, &v) != CURLE_OK)
        return NULL;
    return v;
}

/* `result` is the transfer's CURLcode; `aborted` when the app removed the
 * handle before it completed. */
static void request_end(CURL *h, CURLcode result, bool aborted)
{
    char url[2048] = "", errtext[CURL_ERROR_SIZE] = "";
    int64_t t_end = pacer_now_ns(), t_start = 0;
    bool was_running = false;
    pthread_mutex_lock(&mu);
    creq *c = find(h, false);
    if (c && c->running) {
        was_running = true;
        c->running = false;
        t_start = c->t_start;
        if (c->url)
            snprintf(url, sizeof(url), "%s", c->url);
        if (c->errbuf && result != CURLE_OK)
            snprintf(errtext, sizeof(errtext), "%.*s", (int)strnlen(c->errbuf, CURL_ERROR_SIZE - 1), c->errbuf);
    }
    pthread_mutex_unlock(&mu);
    if (!was_running)
        return;

    REAL(strerror, "curl_easy_strerror");
    REAL(getinfo, "curl_easy_getinfo");
    long status = aborted ? 0 : info_long(h, CURLINFO_RESPONSE_CODE);
    if (result != CURLE_OK || status < 0)
        status = 0;
    if (!url[0]) {
        const char *eff = info_str(h, CURLINFO_EFFECTIVE_URL);
        if (eff)
            snprintf(url, sizeof(url), "%s", eff);
    }
    if (url[0])
        net_request_end(url, h, (int)status, t_end);
    else
        atomic_fetch_add(&agent_net_epoch, 1);

    bool failed = aborted || result != CURLE_OK;
    curl_off_t dns = info_off(h, CURLINFO_NAMELOOKUP_TIME_T);
    curl_off_t conn = info_off(h, CURLINFO_CONNECT_TIME_T);
    curl_off_t app = info_off(h, CURLINFO_APPCONNECT_TIME_T);
    curl_off_t first = info_off(h, CURLINFO_STARTTRANSFER_TIME_T);
    curl_off_t up = info_off(h, CURLINFO_SIZE_UPLOAD_T);
    curl_off_t down = info_off(h, CURLINFO_SIZE_DOWNLOAD_T);
    long req_size = info_long(h, CURLINFO_REQUEST_SIZE);
    long hdr_size = info_long(h, CURLINFO_HEADER_SIZE);
    net_info n = {
        .lib = "curl",
        .method = info_str(h, CURLINFO_EFFECTIVE_METHOD),
        .url = url[0] ? url : NULL,
        .status = (int)status,
        .bytes_sent = req_size >= 0 && up >= 0 ? req_size + up : -1,
        .bytes_received = hdr_size >= 0 && down >= 0 ? hdr_size + down : -1,
        .body_received = down,
        .content_type = status > 0 ? info_str(h, CURLINFO_CONTENT_TYPE) : NULL,
        /* curl reports 0 for a phase not reached: unknown in a failed
         * transfer, not needed (no TLS, a reused connection) in one that
         * succeeded */
        .dns_ns = dns > 0 || (dns == 0 && !failed) ? dns * 1000 : -1,
        .connect_ns = conn > 0 && dns >= 0 && conn >= dns ? (conn - dns) * 1000 : !failed && conn == 0 ? 0 : -1,
        .tls_ns = app > 0 && conn >= 0 && app >= conn ? (app - conn) * 1000 : failed ? -1 : 0,
        .first_byte_ns = first > 0 ? first * 1000 : -1,
        .end_ns = t_end,
        /* the agent's own clock: includes the app's wait for info_read */
        .total_ns = t_end - t_start,
        .error = aborted                             ? "removed before completion"
                 : result != CURLE_OK && errtext[0]  ? errtext
                 : result != CURLE_OK && R.strerror ? R.strerror(result)
                                                    : NULL,
    };
    net_emit(&n);
}

AGENT_EXPORT CURLcode curl_easy_setopt(CURL *h, CURLoption option, ...)
{
    va_list ap;
    va_start(ap, option);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    REAL(setopt, "curl_easy_setopt");
    if (!R.setopt)
        return CURLE_FAILED_INIT;
    CURLcode rc = R.setopt(h, option, arg);
    if (option == CURLOPT_ERRORBUFFER && rc == CURLE_OK && hooks_on(__builtin_return_address(0))) {
        pthread_mutex_lock(&mu);
        creq *c = find(h, true);
        if (c)
            c->errbuf = arg;
        pthread_mutex_unlock(&mu);
    }
    if (option == CURLOPT_URL && rc == CURLE_OK && hooks_on(__builtin_return_address(0))) {
        agent_in_hook++;
        char *copy = arg ? strdup(arg) : NULL;
        pthread_mutex_lock(&mu);
        creq *c = find(h, true);
        if (c) {
            free(c->url);
            c->url = copy;
            copy = NULL;
        }
        pthread_mutex_unlock(&mu);
        free(copy);
        agent_in_hook--;
    }
    return rc;
}

AGENT_EXPORT CURLcode curl_easy_perform(CURL *h)
{
    REAL(perform, "curl_easy_perform");
    if (!R.perform)
        return CURLE_FAILED_INIT;
    if (!hooks_on(__builtin_return_address(0)))
        return R.perform(h);
    agent_in_hook++;
    request_start(h);
    agent_in_hook--;
    depth++;
    CURLcode rc = R.perform(h);
    depth--;
    agent_in_hook++;
    request_end(h, rc, false);
    agent_in_hook--;
    return rc;
}

AGENT_EXPORT CURLMcode curl_multi_add_handle(CURLM *m, CURL *h)
{
    REAL(multi_add, "curl_multi_add_handle");
    if (!R.multi_add)
        return CURLM_INTERNAL_ERROR;
    bool on = hooks_on(__builtin_return_address(0));
    depth++;
    CURLMcode rc = R.multi_add(m, h);
    depth--;
    if (on && rc == CURLM_OK) {
        agent_in_hook++;
        request_start(h);
        agent_in_hook--;
    }
    return rc;
}

AGENT_EXPORT CURLMsg *curl_multi_info_read(CURLM *m, int *msgs_in_queue)
{
    REAL(info_read, "curl_multi_info_read");
    if (!R.info_read)
        return NULL;
    bool on = hooks_on(__builtin_return_address(0));
    depth++;
    CURLMsg *msg = R.info_read(m, msgs_in_queue);
    depth--;
    if (on && msg && msg->msg == CURLMSG_DONE) {
        agent_in_hook++;
        request_end(msg->easy_handle, msg->data.result, false);
        agent_in_hook--;
    }
    return msg;
}

AGENT_EXPORT CURLMcode curl_multi_remove_handle(CURLM *m, CURL *h)
{
    REAL(multi_remove, "curl_multi_remove_handle");
    if (!R.multi_remove)
        return CURLM_INTERNAL_ERROR;
    if (hooks_on(__builtin_return_address(0))) {
        agent_in_hook++;
        /* A no-op unless still running: the app may remove a finished
         * handle without reading its DONE message; a status tells. */
        REAL(getinfo, "curl_easy_getinfo");
        request_end(h, CURLE_OK, info_long(h, CURLINFO_RESPONSE_CODE) <= 0);
        agent_in_hook--;
    }
    depth++;
    CURLMcode rc = R.multi_remove(m, h);
    depth--;
    return rc;
}

AGENT_EXPORT void curl_easy_cleanup(CURL *h)
{
    REAL(cleanup, "curl_easy_cleanup");
    if (h)
        forget(h);
    if (R.cleanup)
        R.cleanup(h);
}

AGENT_EXPORT void curl_easy_reset(CURL *h)
{
    REAL(reset, "curl_easy_reset");
    if (h)
        forget(h);
    if (R.reset)
        R.reset(h);
}
