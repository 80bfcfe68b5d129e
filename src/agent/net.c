/* What both HTTP hooks (soup.c, curl.c) share: the api_start / api_end
 * events the page model matches against configured APIs, and the `net`
 * record (DESIGN §3.4, docs/records.md).
 *
 * Order at a request's end: the api_end event is submitted first, and only
 * then is the draw epoch bumped. A page draws again (its final draw) when
 * it sees a new epoch; a paint that read the new epoch therefore comes
 * after api_end in the model, whatever thread the request ended on. (The
 * other order let a paint land between the two and use up the epoch before
 * the data arrived, suppressing the real final draw.)
 *
 * Classification, beyond the seed's list of fields: "error" (status >= 400
 * or a transport failure), "large_image" (an image response body larger
 * than the config's large-image-bytes), "slow" (total time at or above its
 * slow-request-ms). The environment variables PACER_LARGE_IMAGE_BYTES and
 * PACER_SLOW_REQUEST_MS override the config (docs/agent.md).
 */
#include "agent.h"

#include <pacer/base/utf8.h>

#include <stdlib.h>
#include <string.h>

#define URL_MAX 2000 /* bytes of a URL kept in a record */

void net_request_start(const char *url, const void *req, int64_t t_ns)
{
    pacer_event ev = {.type = PACER_EV_API_START, .t_ns = t_ns, .url = url, .req = (uint64_t)(uintptr_t)req};
    agent_submit(&ev);
}

void net_request_end(const char *url, const void *req, int status, int64_t t_ns)
{
    pacer_event ev = {
        .type = PACER_EV_API_END, .t_ns = t_ns, .url = url, .req = (uint64_t)(uintptr_t)req, .status = status};
    agent_submit(&ev);
    atomic_fetch_add(&agent_net_epoch, 1);
}

static int64_t env_i64(const char *name)
{
    const char *v = getenv(name);
    char *end;
    long long x = v && *v ? strtoll(v, &end, 10) : -1;
    return v && *v && !*end && x >= 0 ? x : -1;
}

static void set_ms_or_null(pacer_record *r, unsigned field, int64_t ns)
{
    if (ns < 0)
        pacer_record_set_null(r, field);
    else
        pacer_record_set_ms(r, field, ns);
}

static void set_int_or_null(pacer_record *r, unsigned field, int64_t v)
{
    if (v < 0)
        pacer_record_set_null(r, field);
    else
        pacer_record_set_int(r, field, v);
}

void net_emit(const net_info *n)
{
    int64_t large_image_bytes = env_i64("PACER_LARGE_IMAGE_BYTES");
    int64_t slow_ms = env_i64("PACER_SLOW_REQUEST_MS");
    if (large_image_bytes < 0 || slow_ms < 0) {
        pacer_config *cfg = agent_config();
        if (large_image_bytes < 0)
            large_image_bytes = pacer_config_large_image_bytes(cfg);
        if (slow_ms < 0)
            slow_ms = pacer_config_slow_request_ms(cfg);
        pacer_config_unref(cfg);
    }
    pacer_record *r = pacer_record_new(PACER_RECORD_NET);
    if (!r)
        return;
    if (n->end_ns > 0)
        pacer_record_set_time(r, n->end_ns); /* a record held back still says when it ended */
    /* a URL with a huge query is cut at a character boundary */
    const char *url = n->url ? n->url : "";
    size_t url_len = strlen(url);
    pacer_record_set_str(r, PACER_NET_LIB, n->lib);
    pacer_record_set_str(r, PACER_NET_METHOD, n->method ? n->method : "GET");
    pacer_record_set_strn(r, PACER_NET_URL, url, utf8_valid(url, url_len) ? utf8_cut(url, url_len, URL_MAX)
                                                                          : (url_len > URL_MAX ? URL_MAX : url_len));
    pacer_record_set_int(r, PACER_NET_STATUS, n->status);
    pacer_record_set_ms(r, PACER_NET_TOTAL_MS, n->total_ns > 0 ? n->total_ns : 0);
    set_ms_or_null(r, PACER_NET_DNS_MS, n->dns_ns);
    set_ms_or_null(r, PACER_NET_CONNECT_MS, n->connect_ns);
    set_ms_or_null(r, PACER_NET_TLS_MS, n->tls_ns);
    set_ms_or_null(r, PACER_NET_FIRST_BYTE_MS, n->first_byte_ns);
    set_int_or_null(r, PACER_NET_BYTES_SENT, n->bytes_sent);
    set_int_or_null(r, PACER_NET_BYTES_RECEIVED, n->bytes_received);
    pacer_record_set_str(r, PACER_NET_CONTENT_TYPE, n->content_type);
    pacer_record_set_str(r, PACER_NET_ERROR, n->error);
    pacer_record_set_str(r, PACER_NET_PAGE, agent_visible_page());

    bool is_error = n->status >= 400 || n->status <= 0 || n->error;
    bool large = n->content_type && strncmp(n->content_type, "image/", 6) == 0 &&
                 n->body_received > large_image_bytes;
    bool slow = n->total_ns >= slow_ms * 1000000;
    pacer_record_set_empty(r, PACER_NET_CLASSES); /* present even when empty */
    if (is_error)
        pacer_record_add_str(r, PACER_NET_CLASSES, "error");
    if (large)
        pacer_record_add_str(r, PACER_NET_CLASSES, "large_image");
    if (slow)
        pacer_record_add_str(r, PACER_NET_CLASSES, "slow");
    agent_submit_record(r);
}
