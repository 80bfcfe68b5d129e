/* Config service: GET / PUT /v1/config/{app} (api.h).
 *
 * PUT validates the body with the core's parser (pacer_config_parse) before
 * anything is stored: a bad config answers 400 with "LINE:COLUMN: reason"
 * and the stored versions stay as they were. A good one becomes the app's
 * newest version. GET answers the newest version with a strong ETag
 * ("VERSION-CONTENTHASH"); If-None-Match with that ETag (or *) answers 304
 * without a body, which is how the SDK polls cheaply.
 */
#include "api.h"

#include <pacer/config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void config_api_get(const api_ctx *d, const char *app, const http_request *rq, http_response *rs)
{
    char *xml = NULL, *etag = NULL;
    size_t len = 0;
    int64_t version = 0;
    int r = store_config_get(d->store, app, &xml, &len, &etag, &version);
    if (r == -ENOENT) {
        http_error(rs, 404, "no config stored for app %s", app);
        return;
    }
    if (r < 0) {
        http_error(rs, 503, "the store could not be read");
        return;
    }
    snprintf(rs->etag, sizeof rs->etag, "%s", etag);
    const char *inm = http_header(rq, "If-None-Match");
    if (inm && params_etag_listed(inm, etag)) {
        rs->status = 304;
        free(xml);
    } else {
        rs->status = 200;
        rs->body = xml;
        rs->len = len;
        rs->content_type = "application/xml";
    }
    free(etag);
}

void config_api_put(const api_ctx *d, const char *app, const http_request *rq, http_response *rs)
{
    if (rq->body_len > d->max_config_bytes) {
        http_error(rs, 413, "a config is limited to %zu bytes", d->max_config_bytes);
        return;
    }
    if (rq->body_len == 0) {
        http_error(rs, 400, "empty body: send the config XML (docs/server.md, \"Config service\")");
        return;
    }
    char *why = NULL;
    pacer_config *cfg = pacer_config_parse(rq->body, rq->body_len, &why);
    if (!cfg) {
        jbuf e;
        jbuf_init(&e);
        jbuf_open(&e, '{');
        jbuf_kv_str(&e, "error", why ? why : "invalid config (out of memory while parsing)");
        unsigned line = 0, column = 0;
        if (why && sscanf(why, "%u:%u:", &line, &column) == 2) {
            jbuf_kv_u64(&e, "line", line);
            jbuf_kv_u64(&e, "column", column);
        }
        jbuf_close(&e, '}');
        free(why);
        http_json(rs, 400, &e);
        return;
    }
    size_t pages = pacer_config_page_count(cfg);
    pacer_config_unref(cfg);
    int64_t version = 0;
    if (store_config_put(d->store, app, rq->body, rq->body_len, &version) < 0) {
        rs->retry_after = 5;
        http_error(rs, 503, "the store could not save the config; the previous one is kept");
        return;
    }
    char *xml = NULL, *etag = NULL;
    size_t len;
    int64_t v2;
    if (store_config_get(d->store, app, &xml, &len, &etag, &v2) == 0) {
        snprintf(rs->etag, sizeof rs->etag, "%s", etag);
        free(xml);
        free(etag);
    }
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    jbuf_kv_str(&b, "app", app);
    jbuf_kv_i64(&b, "version", version);
    jbuf_kv_u64(&b, "pages", pages);
    jbuf_close(&b, '}');
    http_json(rs, 200, &b);
}
