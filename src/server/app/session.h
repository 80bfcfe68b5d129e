/* Dashboard sessions: the admin token, typed once into the dashboard's
 * login form, becomes a session cookie; the token itself is never kept by
 * the browser (not in a URL, not in the page's storage).
 *
 *   POST /auth/login    body token=TOKEN (application/x-www-form-urlencoded)
 *                       → 200 {"csrf":…} and Set-Cookie: pacer_session=ID;
 *                       HttpOnly; SameSite=Strict; Path=/ (and Secure under
 *                       TLS); a wrong token → 401; after 10 wrong tokens
 *                       from one address within a minute → 429 with
 *                       Retry-After
 *   GET  /auth/session  → {"logged_in":true,"csrf":…,"expires":UNIX_S} or
 *                       {"logged_in":false}
 *   POST /auth/logout   (a state-changing request: CSRF rules below) → the
 *                       session ends, the cookie is cleared
 *
 * A session is as good as the admin token for every endpoint that takes
 * it. A state-changing request (any method but GET, HEAD, OPTIONS) that
 * comes with the cookie must also carry the session's CSRF token in
 * X-CSRF-Token (the page gets it from /auth/session, which only the
 * dashboard's own origin can read), and, when the browser says where it
 * comes from (Origin, Sec-Fetch-Site), come from the dashboard's own
 * origin: else 403. A request with "Authorization: Bearer" uses that
 * credential and no cookie (nothing ambient: no CSRF question).
 *
 * Sessions live in pacerd's memory: SESSION_MAX at once (the oldest goes
 * first), each ended after SESSION_IDLE_S without a request or
 * SESSION_MAX_AGE_S after its login, by logout, when pacerd restarts, or
 * when SIGHUP loaded a different admin token. Ids and CSRF tokens are 32
 * random bytes from the kernel, compared in constant time. Thread-safe.
 */
#ifndef PACER_SERVER_SESSION_H
#define PACER_SERVER_SESSION_H

#include "auth.h"
#include "http/http.h"

#include <stdbool.h>
#include <stdint.h>

#define SESSION_MAX 1024
#define SESSION_IDLE_S (12 * 3600)
#define SESSION_MAX_AGE_S (7 * 86400)
#define SESSION_COOKIE "pacer_session"
#define SESSION_LOGIN_FAILURES 10 /* per address and minute */

typedef struct sessions sessions;

sessions *session_set_new(void);
void session_set_free(sessions *s); /* accepts NULL */

/* Whether path is one of /auth/login, /auth/session, /auth/logout. */
bool session_path(const char *path);

/* Who sent rq: the owner of its Bearer token (auth_identify), else the
 * admin when its session cookie names a live session; *ret_cookie says
 * which. For a state-changing request on a session, checks the CSRF rules
 * above: -EPERM with the reason in *ret_why when they fail. */
int session_identify(sessions *s, auth *a, const http_request *rq, auth_id *ret, bool *ret_cookie,
                     const char **ret_why);

/* Answers the /auth/... endpoints (method already checked by the router:
 * POST for login and logout, GET/HEAD for session). tls: whether pacerd
 * serves HTTPS (the cookie is then Secure). */
void session_handle(sessions *s, auth *a, bool tls, const http_request *rq, http_response *rs);

#endif
