/* Dashboard sessions, login and CSRF (session.h).
 *
 * A session: id and CSRF token (64 hex digits each, from 32 random bytes),
 * the admin epoch it was granted under (auth_admin_epoch: a new admin
 * token ends it), its login time and last use. The table is a fixed
 * array: lookups compare every live id in constant time, so neither the
 * answer's time nor its content tells how much of a guessed id was right.
 *
 * Failed logins are counted per client address (IPv4, or IPv6 /64) in a
 * small table: a token bucket of SESSION_LOGIN_FAILURES refilled over a
 * minute; an address with none left gets 429 before its token is even
 * compared. The table evicts the entry that would be full soonest.
 */
#include "session.h"
#include "http/params.h"
#include "web.h"

#include <pacer/base/clock.h>
#include <pacer/base/json.h>
#include <pacer/base/random.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ID_HEX 64
#define LIMITER_SLOTS 256
#define S_NS 1000000000LL

typedef struct session {
    bool live;
    char id[ID_HEX + 1], csrf[ID_HEX + 1];
    uint64_t epoch;
    int64_t created_ns, used_ns; /* wall */
} session;

typedef struct limiter {
    unsigned char client[16];
    double tokens;
    int64_t refilled_ns; /* mono; 0: unused */
} limiter;

struct sessions {
    pthread_mutex_t lock;
    session s[SESSION_MAX];
    limiter lim[LIMITER_SLOTS];
};

sessions *session_set_new(void)
{
    sessions *s = calloc(1, sizeof *s);
    if (s)
        pthread_mutex_init(&s->lock, NULL);
    return s;
}

void session_set_free(sessions *s)
{
    if (!s)
        return;
    pthread_mutex_destroy(&s->lock);
    memset(s->s, 0, sizeof s->s);
    free(s);
}

static bool same_hex(const char *a, const char *b)
{
    unsigned char d = 0;
    for (size_t i = 0; i < ID_HEX; i++)
        d |= (unsigned char)a[i] ^ (unsigned char)b[i];
    return d == 0;
}

static bool expired(const session *x, int64_t now, uint64_t epoch)
{
    return x->epoch != epoch || now - x->used_ns > SESSION_IDLE_S * S_NS ||
           now - x->created_ns > SESSION_MAX_AGE_S * S_NS;
}

/* The session named by id (64 hex digits), touched; NULL when none is
 * alive. Under the lock. */
static session *find(sessions *s, const char *id, uint64_t epoch)
{
    if (strlen(id) != ID_HEX)
        return NULL;
    int64_t now = wall_ns();
    session *found = NULL;
    for (size_t i = 0; i < SESSION_MAX; i++) {
        session *x = &s->s[i];
        if (!x->live)
            continue;
        if (expired(x, now, epoch)) {
            memset(x, 0, sizeof *x);
            continue;
        }
        if (same_hex(x->id, id))
            found = x; /* no early exit */
    }
    if (found)
        found->used_ns = now;
    return found;
}

/* Whether the browser says this request comes from the dashboard's own
 * origin (or says nothing: not a browser, or a same-origin GET). */
static bool same_origin(const http_request *rq, const char **ret_why)
{
    const char *site = http_header(rq, "Sec-Fetch-Site");
    if (site && strcmp(site, "same-origin") != 0) {
        *ret_why = "this request comes from another site (Sec-Fetch-Site)";
        return false;
    }
    const char *origin = http_header(rq, "Origin");
    if (!origin)
        return true;
    const char *host = http_header(rq, "Host");
    const char *o = strncmp(origin, "https://", 8) == 0 ? origin + 8
                    : strncmp(origin, "http://", 7) == 0 ? origin + 7
                                                         : NULL;
    if (!o || !host || strcasecmp(o, host) != 0) {
        *ret_why = "this request comes from another origin (Origin does not name this server)";
        return false;
    }
    return true;
}

bool session_path(const char *path)
{
    return strcmp(path, "/auth/login") == 0 || strcmp(path, "/auth/logout") == 0 ||
           strcmp(path, "/auth/session") == 0;
}

int session_identify(sessions *s, auth *a, const http_request *rq, auth_id *ret, bool *ret_cookie,
                     const char **ret_why)
{
    *ret_cookie = false;
    const char *token = auth_bearer(http_header(rq, "Authorization"));
    auth_identify(a, token, ret);
    if (token)
        return 0; /* an explicit credential: the cookie plays no part */
    char id[ID_HEX + 2];
    const char *cookies = http_header(rq, "Cookie");
    if (!cookies || !params_cookie(cookies, SESSION_COOKIE, id, sizeof id))
        return 0;
    uint64_t epoch = auth_admin_epoch(a);
    bool get = strcmp(rq->method, "GET") == 0 || strcmp(rq->method, "HEAD") == 0;
    const char *sent = http_header(rq, "X-CSRF-Token");
    pthread_mutex_lock(&s->lock);
    session *x = find(s, id, epoch);
    bool csrf_ok = x && sent && strlen(sent) == ID_HEX && same_hex(x->csrf, sent);
    pthread_mutex_unlock(&s->lock);
    if (!x)
        return 0; /* an old cookie: as if none was sent */
    if (!get && !csrf_ok) {
        *ret_why = "a change made with a dashboard session needs its CSRF token (X-CSRF-Token)";
        return -EPERM;
    }
    if (!get && !same_origin(rq, ret_why))
        return -EPERM;
    ret->who = AUTH_ADMIN;
    *ret_cookie = true;
    return 0;
}

/* ---- failed logins ---- */

static limiter *limiter_of(sessions *s, const unsigned char client[16], int64_t now)
{
    limiter *free_slot = NULL, *fullest = &s->lim[0];
    for (size_t i = 0; i < LIMITER_SLOTS; i++) {
        limiter *l = &s->lim[i];
        if (l->refilled_ns) {
            l->tokens += (double)(now - l->refilled_ns) * SESSION_LOGIN_FAILURES / (60.0 * S_NS);
            if (l->tokens >= SESSION_LOGIN_FAILURES)
                l->tokens = SESSION_LOGIN_FAILURES;
            l->refilled_ns = now;
            if (memcmp(l->client, client, 16) == 0)
                return l;
            if (l->tokens > fullest->tokens)
                fullest = l;
        } else if (!free_slot) {
            free_slot = l;
        }
    }
    limiter *l = free_slot ? free_slot : fullest;
    memcpy(l->client, client, 16);
    l->tokens = SESSION_LOGIN_FAILURES;
    l->refilled_ns = now;
    return l;
}

/* 0 when the address may try a token now, else the seconds to wait. */
static unsigned login_wait(sessions *s, const unsigned char client[16])
{
    pthread_mutex_lock(&s->lock);
    limiter *l = limiter_of(s, client, mono_ns());
    unsigned wait = l->tokens >= 1.0 ? 0 : (unsigned)((1.0 - l->tokens) * 60.0 / SESSION_LOGIN_FAILURES) + 1;
    pthread_mutex_unlock(&s->lock);
    return wait;
}

static void login_failed(sessions *s, const unsigned char client[16])
{
    pthread_mutex_lock(&s->lock);
    limiter *l = limiter_of(s, client, mono_ns());
    l->tokens -= 1.0;
    pthread_mutex_unlock(&s->lock);
}

/* ---- the endpoints ---- */

static void set_cookie(http_response *rs, bool tls, const char *id)
{
    char v[256];
    if (id)
        snprintf(v, sizeof v, "%s=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%d%s", SESSION_COOKIE, id,
                 SESSION_MAX_AGE_S, tls ? "; Secure" : "");
    else
        snprintf(v, sizeof v, "%s=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0%s", SESSION_COOKIE,
                 tls ? "; Secure" : "");
    http_add_header(rs, "Set-Cookie", v);
}

static void login(sessions *s, auth *a, bool tls, const http_request *rq, http_response *rs)
{
    const char *why = NULL;
    if (!same_origin(rq, &why)) {
        http_error(rs, 403, "%s", why);
        return;
    }
    const char *ct = http_header(rq, "Content-Type");
    if (!ct || strncasecmp(ct, "application/x-www-form-urlencoded", 33) != 0) {
        http_error(rs, 415, "send the form: Content-Type: application/x-www-form-urlencoded, body token=TOKEN");
        return;
    }
    unsigned wait = login_wait(s, rq->client);
    if (wait) {
        rs->retry_after = (int)wait;
        http_error(rs, 429, "too many wrong tokens from this address: retry after %u s", wait);
        return;
    }
    params form = {0};
    char err[256];
    const char *token = NULL;
    static const char *const names[] = {"token", NULL};
    if (params_parse(rq->body, rq->body_len, &form, err, sizeof err) < 0 ||
        params_only(&form, names, err, sizeof err) < 0 ||
        params_str(&form, "token", 4096, &token, err, sizeof err) < 0) {
        params_free(&form);
        http_error(rs, 400, "%s", err);
        return;
    }
    auth_id id;
    auth_identify(a, token, &id);
    if (form.buf)
        memset(form.buf, 0, strlen(form.buf)); /* the token goes no further */
    params_free(&form);
    if (id.who != AUTH_ADMIN) {
        login_failed(s, rq->client);
        http_error(rs, 401, "%s", token ? "this is not the admin token" : "token: required");
        return;
    }
    session x = {.live = true, .epoch = auth_admin_epoch(a)};
    random_hex(x.id, ID_HEX / 2);
    random_hex(x.csrf, ID_HEX / 2);
    x.created_ns = x.used_ns = wall_ns();
    pthread_mutex_lock(&s->lock);
    session *slot = NULL;
    for (size_t i = 0; i < SESSION_MAX && !slot; i++)
        if (!s->s[i].live || expired(&s->s[i], x.created_ns, x.epoch))
            slot = &s->s[i];
    if (!slot) { /* full: the one used least recently goes */
        slot = &s->s[0];
        for (size_t i = 1; i < SESSION_MAX; i++)
            if (s->s[i].used_ns < slot->used_ns)
                slot = &s->s[i];
    }
    *slot = x;
    pthread_mutex_unlock(&s->lock);
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    jbuf_kv_bool(&b, "logged_in", true);
    jbuf_kv_str(&b, "csrf", x.csrf);
    jbuf_kv_i64(&b, "expires", (x.created_ns + SESSION_MAX_AGE_S * S_NS) / S_NS);
    jbuf_close(&b, '}');
    http_json(rs, 200, &b);
    set_cookie(rs, tls, x.id);
    memset(&x, 0, sizeof x);
}

void session_handle(sessions *s, auth *a, bool tls, const http_request *rq, http_response *rs)
{
    if (strcmp(rq->path, "/auth/login") == 0) {
        login(s, a, tls, rq, rs);
    } else {
        char id[ID_HEX + 2];
        const char *cookies = http_header(rq, "Cookie");
        bool has = cookies && params_cookie(cookies, SESSION_COOKIE, id, sizeof id);
        jbuf b;
        jbuf_init(&b);
        jbuf_open(&b, '{');
        pthread_mutex_lock(&s->lock);
        session *x = has ? find(s, id, auth_admin_epoch(a)) : NULL;
        bool logout = strcmp(rq->path, "/auth/logout") == 0;
        jbuf_kv_bool(&b, "logged_in", x && !logout);
        if (x && !logout) {
            jbuf_kv_str(&b, "csrf", x->csrf);
            jbuf_kv_i64(&b, "expires", (x->created_ns + SESSION_MAX_AGE_S * S_NS) / S_NS);
        }
        if (x && logout)
            memset(x, 0, sizeof *x);
        pthread_mutex_unlock(&s->lock);
        jbuf_close(&b, '}');
        http_json(rs, 200, &b);
        if (logout || (has && !x))
            set_cookie(rs, tls, NULL); /* an old cookie goes too */
    }
    http_add_header(rs, "Cache-Control", "no-store");
    web_security_headers(rs);
}
