/* What both HTTP hooks (soup.c, curl.c) share: the api_start / api_end
 * events the page model matches against configured APIs, and the `net`
 * record (DESIGN §3.4, docs/agent.md "net records").
 *
 * Classification, beyond the seed's list of fields: "error" (status >= 400
 * or a transport failure), "large_image" (an image response body larger
 * than PACER_LARGE_IMAGE_BYTES, default 102400), "slow" (total time at or
 * above PACER_SLOW_REQUEST_MS, default 1000).
 */
#include "agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void net_request_start(const char *url, const void *req, int64_t t_ns)
{
    pacer_event ev = {.type = PACER_EV_API_START, .t_ns = t_ns, .url = url, .req = (uint64_t)(uintptr_t)req};
    agent_submit(&ev);
}

void net_request_end(const char *url, const void *req, int status, int64_t t_ns)
{
    atomic_fetch_add(&agent_net_epoch, 1);
    pacer_event ev = {
        .type = PACER_EV_API_END, .t_ns = t_ns, .url = url, .req = (uint64_t)(uintptr_t)req, .status = status};
    agent_submit(&ev);
}

/* A small JSON writer into a fixed buffer: a record that does not fit is
 * truncated at a member boundary by the caller's check of `overflow`. */
typedef struct out {
    char *buf;
    size_t cap, len;
    bool overflow;
} out;

static void put(out *o, const char *s, size_t n)
{
    if (o->overflow || o->len + n >= o->cap) {
        o->overflow = true;
        return;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

static void putf(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(out *o, const char *fmt, ...)
{
    char tmp[96];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0)
        put(o, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void put_str(out *o, const char *key, const char *s)
{
    putf(o, "%s\"%s\":", o->len ? "," : "", key);
    if (!s) {
        put(o, "null", 4);
        return;
    }
    put(o, "\"", 1);
    /* Long values (a URL with a huge query) are cut at 2000 bytes, at a
     * UTF-8 character boundary, so the record still fits. */
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++, n++) {
        if (n >= 2000 && (*p & 0xC0) != 0x80)
            break;
        if (*p == '"' || *p == '\\') {
            char esc[2] = {'\\', (char)*p};
            put(o, esc, 2);
        } else if (*p < 0x20) {
            putf(o, "\\u%04x", *p);
        } else {
            put(o, (const char *)p, 1); /* UTF-8 passes through; the core checks it */
        }
    }
    put(o, "\"", 1);
}

static void put_i64(out *o, const char *key, int64_t v)
{
    if (v < 0)
        putf(o, "%s\"%s\":null", o->len ? "," : "", key);
    else
        putf(o, "%s\"%s\":%lld", o->len ? "," : "", key, (long long)v);
}

static void put_ms(out *o, const char *key, int64_t ns)
{
    if (ns < 0)
        putf(o, "%s\"%s\":null", o->len ? "," : "", key);
    else
        putf(o, "%s\"%s\":%lld.%03lld", o->len ? "," : "", key, (long long)(ns / 1000000),
             (long long)(ns / 1000 % 1000));
}

static int64_t env_i64(const char *name, int64_t def)
{
    const char *v = getenv(name);
    char *end;
    long long x = v && *v ? strtoll(v, &end, 10) : -1;
    return v && *v && !*end && x >= 0 ? x : def;
}

void net_emit(const net_info *n)
{
    static int64_t large_image_bytes = -1, slow_ms = -1;
    if (large_image_bytes < 0) {
        large_image_bytes = env_i64("PACER_LARGE_IMAGE_BYTES", 100 * 1024);
        slow_ms = env_i64("PACER_SLOW_REQUEST_MS", 1000);
    }
    char buf[4096];
    out o = {buf, sizeof(buf), 0, false};
    buf[0] = '\0';
    put_str(&o, "lib", n->lib);
    put_str(&o, "method", n->method ? n->method : "GET");
    put_str(&o, "url", n->url);
    putf(&o, ",\"status\":%d", n->status);
    put_i64(&o, "bytes_sent", n->bytes_sent);
    put_i64(&o, "bytes_received", n->bytes_received);
    put_str(&o, "content_type", n->content_type);
    put_ms(&o, "dns_ms", n->dns_ns);
    put_ms(&o, "connect_ms", n->connect_ns);
    put_ms(&o, "tls_ms", n->tls_ns);
    put_ms(&o, "first_byte_ms", n->first_byte_ns);
    put_ms(&o, "total_ms", n->total_ns);
    put_str(&o, "error", n->error);

    bool is_error = n->status >= 400 || n->status <= 0 || n->error;
    bool large = n->content_type && strncmp(n->content_type, "image/", 6) == 0 &&
                 n->body_received > large_image_bytes;
    bool slow = n->total_ns >= slow_ms * 1000000;
    putf(&o, ",\"classes\":[%s%s%s%s%s]", is_error ? "\"error\"" : "", is_error && (large || slow) ? "," : "",
         large ? "\"large_image\"" : "", large && slow ? "," : "", slow ? "\"slow\"" : "");
    if (o.overflow) {
        agent_note_once("net-size", "a net record did not fit in %zu bytes and was dropped", sizeof(buf));
        return;
    }
    agent_emit("net", buf);
}
