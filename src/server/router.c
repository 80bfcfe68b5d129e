/* Request routing and authentication (pacerd.h).
 *
 *   GET  /healthz                   none          200 when the store commits a probe write
 *   POST /v1/traces|logs|metrics    app key       ingest (ingest.c)
 *   GET  /v1/config/{app}           app key of {app}, or admin
 *   PUT  /v1/config/{app}           admin         (config_service.c)
 *   GET  /api/v1/samples            admin         raw records of a version (query_samples.c)
 *   GET  /api/v1/...                admin         queries (query.c)
 *
 * 401 when no usable credential was sent, 403 when it does not grant the
 * endpoint. Credentials are never echoed back nor logged.
 */
#include "pacerd.h"

#include <string.h>

static bool app_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 256)
        return false;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == '/' || (unsigned char)*s == 0x7f)
            return false;
    return true;
}

void pacerd_route(void *ctx, const http_request *rq, http_response *rs)
{
    pacerd *d = ctx;
    const char *path = rq->path;
    const char *token = auth_bearer(http_header(rq, "Authorization"));
    bool get = strcmp(rq->method, "GET") == 0;

    if (strcmp(path, "/healthz") == 0) {
        if (!get) {
            http_error(rs, 405, "use GET /healthz");
            return;
        }
        if (store_probe(d->store) == 0)
            http_json_text(rs, 200, "{\"status\":\"ok\"}");
        else
            http_error(rs, 503, "the store is not writable");
        return;
    }

    if (strcmp(path, "/v1/traces") == 0 || strcmp(path, "/v1/logs") == 0 || strcmp(path, "/v1/metrics") == 0) {
        if (strcmp(rq->method, "POST") != 0) {
            http_error(rs, 405, "use POST %s", path);
            return;
        }
        const char *app = auth_app_of(d->auth, token);
        if (!app) {
            rs->challenge = true;
            if (!token)
                http_error(rs, 401, "send the app's key: Authorization: Bearer KEY");
            else
                http_error(rs, auth_is_admin(d->auth, token) ? 403 : 401,
                           auth_is_admin(d->auth, token) ? "ingest takes an app key, not the admin token"
                                                         : "unknown key");
            return;
        }
        ingest_handle(d, app, rq, rs);
        return;
    }

    if (strncmp(path, "/v1/config/", 11) == 0) {
        const char *app = path + 11;
        if (!app_name_ok(app)) {
            http_error(rs, 404, "expected /v1/config/APP");
            return;
        }
        bool admin = auth_is_admin(d->auth, token);
        const char *key_app = admin ? NULL : auth_app_of(d->auth, token);
        if (!admin && !key_app) {
            rs->challenge = true;
            http_error(rs, 401, token ? "unknown token" : "send a token: Authorization: Bearer TOKEN");
            return;
        }
        if (get) {
            if (!admin && strcmp(key_app, app) != 0) {
                http_error(rs, 403, "this key is for another app");
                return;
            }
            config_get(d, app, rq, rs);
        } else if (strcmp(rq->method, "PUT") == 0) {
            if (!admin) {
                http_error(rs, 403, "changing a config takes the admin token");
                return;
            }
            config_put(d, app, rq, rs);
        } else {
            http_error(rs, 405, "use GET or PUT %s", path);
        }
        return;
    }

    if (strncmp(path, "/api/v1/", 8) == 0) {
        if (!auth_is_admin(d->auth, token)) {
            rs->challenge = true;
            http_error(rs, auth_app_of(d->auth, token) ? 403 : 401, "queries take the admin token: Authorization: Bearer TOKEN");
            return;
        }
        if (!get) {
            http_error(rs, 405, "use GET %s", path);
            return;
        }
        if (strcmp(path, "/api/v1/samples") == 0)
            samples_handle(d, rq, rs);
        else
            query_handle(d, rq, rs);
        return;
    }

    http_error(rs, 404, "no such endpoint: %s", path);
}
