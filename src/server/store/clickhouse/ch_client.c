/* ClickHouse's HTTP interface and RowBinary (ch_client.h). */
#include "ch_client.h"

#include <pacer/base/array.h>

#include <curl/curl.h>

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- URL ---- */

static int unhex(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* %XX-decoded copy of s[0..n); NULL when an escape is bad or decodes to NUL. */
static char *decode(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    size_t o = 0;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[o++] = s[i];
            continue;
        }
        if (i + 2 >= n) {
            free(out);
            return NULL;
        }
        int a = unhex((unsigned char)s[i + 1]), b = unhex((unsigned char)s[i + 2]);
        if (a < 0 || b < 0 || (a == 0 && b == 0)) {
            free(out);
            return NULL;
        }
        out[o++] = (char)(a * 16 + b);
        i += 2;
    }
    out[o] = 0;
    return out;
}

static bool plain_name(const char *s)
{
    if (!*s || strlen(s) > 64)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

void ch_client_url_clear(ch_url *u)
{
    free(u->base);
    free(u->user);
    if (u->password) {
        memset(u->password, 0, strlen(u->password));
        free(u->password);
    }
    free(u->database);
    free(u->cluster);
    free(u->shown);
    memset(u, 0, sizeof *u);
}

int ch_client_url_parse(const char *url, ch_url *ret, char *err, size_t err_size)
{
    memset(ret, 0, sizeof *ret);
    const char *scheme_end = strstr(url, "://");
    size_t sl = scheme_end ? (size_t)(scheme_end - url) : 0;
    if (!scheme_end || !((sl == 4 && strncmp(url, "http", 4) == 0) || (sl == 5 && strncmp(url, "https", 5) == 0))) {
        snprintf(err, err_size, "expected http://[USER[:PASSWORD]@]HOST[:PORT]/[DATABASE][?cluster=NAME]");
        return -EINVAL;
    }
    const char *auth = scheme_end + 3;
    const char *path = auth + strcspn(auth, "/?#");
    if (*path == '#') {
        snprintf(err, err_size, "a fragment (#) has no meaning here");
        return -EINVAL;
    }
    const char *at = memchr(auth, '@', (size_t)(path - auth));
    const char *host = at ? at + 1 : auth;
    if (host == path) {
        snprintf(err, err_size, "no host");
        return -EINVAL;
    }
    for (const char *p = host; p < path; p++)
        if (!isalnum((unsigned char)*p) && !strchr(".-:[]_", *p)) {
            snprintf(err, err_size, "the host and port may hold letters, digits and . - : [ ] _ only");
            return -EINVAL;
        }
    if (at) {
        const char *colon = memchr(auth, ':', (size_t)(at - auth));
        const char *user_end = colon ? colon : at;
        ret->user = decode(auth, (size_t)(user_end - auth));
        if (colon)
            ret->password = decode(colon + 1, (size_t)(at - colon - 1));
        if (!ret->user || (colon && !ret->password)) {
            snprintf(err, err_size, "the user or password has a bad %%-escape");
            goto fail;
        }
    }
    const char *db = *path == '/' ? path + 1 : path;
    const char *q = strchr(db, '?');
    size_t dl = q ? (size_t)(q - db) : strlen(db);
    ret->database = dl ? strndup(db, dl) : strdup("pacer");
    if (!ret->database || !plain_name(ret->database)) {
        snprintf(err, err_size, "the database name may hold letters, digits and _ only (at most 64)");
        goto fail;
    }
    if (q) {
        const char *p = q + 1;
        while (*p) {
            size_t n = strcspn(p, "&");
            if (n > 8 && strncmp(p, "cluster=", 8) == 0) {
                free(ret->cluster);
                ret->cluster = strndup(p + 8, n - 8);
                if (!ret->cluster || !plain_name(ret->cluster)) {
                    snprintf(err, err_size, "cluster: a name of letters, digits and _");
                    goto fail;
                }
            } else if (n) {
                snprintf(err, err_size, "unknown parameter %.*s (the only one is cluster=NAME)", (int)(n > 40 ? 40 : n),
                         p);
                goto fail;
            }
            p += n + (p[n] == '&');
        }
    }
    if (asprintf(&ret->base, "%.*s://%.*s/", (int)sl, url, (int)(path - host), host) < 0 ||
        asprintf(&ret->shown, "%.*s://%s%s%.*s/%s%s%s", (int)sl, url, ret->user ? ret->user : "",
                 ret->user ? "@" : "", (int)(path - host), host, ret->database, ret->cluster ? "?cluster=" : "",
                 ret->cluster ? ret->cluster : "") < 0) {
        ret->base = ret->shown = NULL;
        snprintf(err, err_size, "out of memory");
        goto fail;
    }
    return 0;
fail:
    ch_client_url_clear(ret);
    return -EINVAL;
}

/* ---- the client ---- */

#define POOL 32

struct ch_client {
    ch_url url;
    long timeout_ms;
    pthread_mutex_t lock;
    CURL *free[POOL];
    size_t n_free;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

ch_client *ch_client_new(const ch_url *url, long timeout_ms)
{
    pthread_once(&curl_once, curl_init);
    ch_client *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->url.base = strdup(url->base);
    c->url.user = dup_or_null(url->user);
    c->url.password = dup_or_null(url->password);
    c->url.database = strdup(url->database);
    c->url.cluster = dup_or_null(url->cluster);
    c->url.shown = strdup(url->shown);
    if (!c->url.base || !c->url.database || !c->url.shown || (url->user && !c->url.user) ||
        (url->password && !c->url.password) || (url->cluster && !c->url.cluster)) {
        ch_client_url_clear(&c->url);
        free(c);
        return NULL;
    }
    c->timeout_ms = timeout_ms;
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

void ch_client_free(ch_client *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_free; i++)
        curl_easy_cleanup(c->free[i]);
    pthread_mutex_destroy(&c->lock);
    ch_client_url_clear(&c->url);
    free(c);
}

const ch_url *ch_client_url(const ch_client *c)
{
    return &c->url;
}

static CURL *handle_get(ch_client *c)
{
    pthread_mutex_lock(&c->lock);
    CURL *h = c->n_free ? c->free[--c->n_free] : NULL;
    pthread_mutex_unlock(&c->lock);
    return h ? h : curl_easy_init();
}

static void handle_put(ch_client *c, CURL *h)
{
    pthread_mutex_lock(&c->lock);
    if (c->n_free < POOL) {
        c->free[c->n_free++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    if (h)
        curl_easy_cleanup(h);
}

typedef struct sink {
    char *p;
    size_t len, cap;
    bool too_big;
} sink;

static size_t on_data(char *data, size_t size, size_t n, void *ctx)
{
    sink *s = ctx;
    size_t add = size * n;
    if (s->len + add + 1 > CH_MAX_REPLY) {
        s->too_big = true;
        return 0;
    }
    if (!ARRAY_GROW(s->p, s->cap, s->len + add + 1, 16384))
        return 0;
    memcpy(s->p + s->len, data, add);
    s->len += add;
    s->p[s->len] = 0;
    return add;
}

/* "Code: 241, e.displayText() = DB::Exception: Memory limit …" → 241 */
static int error_code(const char *body)
{
    const char *c = body ? strstr(body, "Code: ") : NULL;
    return c ? atoi(c + 6) : 0;
}

static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r' || *s == '\t')
            *s = ' ';
}

/* One request being made. */
typedef struct req {
    CURL *h;
    jbuf url;
    struct curl_slist *hdr;
    sink s;
    ch_reply *ret;
} req;

static int req_setup(ch_client *c, req *q, const char *sql, const void *data, size_t len, const char *settings,
                     bool use_db, ch_reply *ret)
{
    memset(q, 0, sizeof *q);
    memset(ret, 0, sizeof *ret);
    q->ret = ret;
    q->h = handle_get(c);
    if (!q->h) {
        snprintf(ret->error, sizeof ret->error, "out of memory");
        return -EIO;
    }
    jbuf *url = &q->url;
    jbuf_init(url);
    jbuf_puts(url, c->url.base);
    jbuf_puts(url, "?");
    if (use_db) {
        jbuf_puts(url, "database=");
        jbuf_puts(url, c->url.database);
    }
    if (settings && *settings) {
        jbuf_puts(url, use_db ? "&" : "");
        jbuf_puts(url, settings);
    }
    if (data) {
        char *esc = curl_easy_escape(q->h, sql, 0);
        jbuf_puts(url, "&query=");
        jbuf_puts(url, esc ? esc : "");
        curl_free(esc);
    }
    CURL *h = q->h;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url->data ? url->data : "");
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, data ? (const char *)data : sql);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(data ? len : strlen(sql)));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &q->s);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->timeout_ms < 5000 ? c->timeout_ms : 5000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    /* no "Expect: 100-continue" round trip for large bodies */
    q->hdr = curl_slist_append(NULL, "Expect:");
    q->hdr = q->hdr ? curl_slist_append(q->hdr, "Content-Type: application/octet-stream") : NULL;
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, q->hdr);
    if (c->url.user) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERNAME, c->url.user);
        curl_easy_setopt(h, CURLOPT_PASSWORD, c->url.password ? c->url.password : "");
    }
    if (url->failed || !q->hdr) {
        snprintf(ret->error, sizeof ret->error, "out of memory");
        return -EIO;
    }
    return 0;
}

/* The answer of a request whose transfer ended with cr; frees q. */
static int req_finish(ch_client *c, req *q, CURLcode cr)
{
    ch_reply *ret = q->ret;
    sink *s = &q->s;
    curl_slist_free_all(q->hdr);
    jbuf_free(&q->url);
    curl_easy_getinfo(q->h, CURLINFO_RESPONSE_CODE, &ret->http_status);
    int r = 0;
    if (cr != CURLE_OK) {
        ret->transport = cr != CURLE_OUT_OF_MEMORY && !s->too_big;
        snprintf(ret->error, sizeof ret->error, "%s: %s", c->url.shown,
                 s->too_big ? "the answer is larger than 512 MiB" : curl_easy_strerror(cr));
        r = -EIO;
    } else if (ret->http_status != 200) {
        ret->code = error_code(s->p);
        snprintf(ret->error, sizeof ret->error, "%s: HTTP %ld: %.300s", c->url.shown, ret->http_status,
                 s->p ? s->p : "(no message)");
        one_line(ret->error);
        r = -EIO;
    }
    if (r == 0) {
        ret->body = s->p ? s->p : calloc(1, 1);
        ret->len = s->len;
        if (!ret->body) {
            snprintf(ret->error, sizeof ret->error, "out of memory");
            r = -EIO;
        }
    } else {
        free(s->p);
    }
    /* a connection that failed is not kept: the next request opens another */
    if (cr == CURLE_OK)
        handle_put(c, q->h);
    else
        curl_easy_cleanup(q->h);
    return r;
}

static int run(ch_client *c, const char *sql, const void *data, size_t len, const char *settings, bool use_db,
               ch_reply *ret)
{
    req q;
    if (req_setup(c, &q, sql, data, len, settings, use_db, ret) < 0) {
        if (q.h)
            req_finish(c, &q, CURLE_OUT_OF_MEMORY);
        return -EIO;
    }
    return req_finish(c, &q, curl_easy_perform(q.h));
}

int ch_client_query_many(ch_client *c, size_t n, const ch_request *rqs, const char *settings, ch_reply *ret)
{
    if (n == 1)
        return ch_client_query(c, rqs[0].sql, rqs[0].data, rqs[0].len, settings, &ret[0]);
    req *qs = calloc(n ? n : 1, sizeof *qs);
    CURLM *m = curl_multi_init();
    int r = qs && m ? 0 : -EIO;
    bool *set = calloc(n ? n : 1, sizeof *set);
    if (!set)
        r = -EIO;
    for (size_t i = 0; r == 0 && i < n; i++) {
        if (req_setup(c, &qs[i], rqs[i].sql, rqs[i].data, rqs[i].len, settings, true, &ret[i]) < 0) {
            r = -EIO;
            if (qs[i].h)
                req_finish(c, &qs[i], CURLE_OUT_OF_MEMORY);
            break;
        }
        set[i] = true;
        curl_multi_add_handle(m, qs[i].h);
    }
    CURLcode results[64];
    for (size_t i = 0; i < n && i < 64; i++)
        results[i] = CURLE_OK;
    if (r == 0 && n <= 64) {
        int running = 1;
        while (running) {
            if (curl_multi_perform(m, &running) != CURLM_OK)
                break;
            if (running && curl_multi_poll(m, NULL, 0, 1000, NULL) != CURLM_OK)
                break;
        }
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left)))
            for (size_t i = 0; i < n; i++)
                if (msg->msg == CURLMSG_DONE && msg->easy_handle == qs[i].h)
                    results[i] = msg->data.result;
    } else if (n > 64) {
        r = -EIO;
    }
    for (size_t i = 0; i < n; i++) {
        if (!set[i])
            continue;
        curl_multi_remove_handle(m, qs[i].h);
        if (req_finish(c, &qs[i], r == 0 ? results[i] : CURLE_ABORTED_BY_CALLBACK) < 0)
            r = -EIO;
    }
    if (m)
        curl_multi_cleanup(m);
    free(qs);
    free(set);
    return r;
}

int ch_client_query(ch_client *c, const char *sql, const void *data, size_t len, const char *settings, ch_reply *ret)
{
    return run(c, sql, data, len, settings, true, ret);
}

int ch_client_query_nodb(ch_client *c, const char *sql, ch_reply *ret)
{
    return run(c, sql, NULL, 0, NULL, false, ret);
}

void ch_client_reply_free(ch_reply *r)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

void ch_client_quote(jbuf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    char buf[256];
    size_t o = 0;
    buf[o++] = '\'';
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (o + 5 > sizeof buf) {
            jbuf_raw(b, buf, o);
            o = 0;
        }
        if (ch == '\'' || ch == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)ch;
        } else if (ch < 0x20 || ch == 0x7f) {
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[ch >> 4];
            buf[o++] = hex[ch & 15];
        } else {
            buf[o++] = (char)ch;
        }
    }
    buf[o++] = '\'';
    jbuf_raw(b, buf, o);
}
