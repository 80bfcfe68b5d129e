/* OTLP/gRPC for the uploader (grpc.h).
 *
 * A unary call as pacer makes it (grpc/doc/PROTOCOL-HTTP2.md):
 *
 *   request   HEADERS  :method POST, :path /opentelemetry.proto.collector.<s>.v1.<S>Service/Export,
 *                      te: trailers, content-type: application/grpc, grpc-timeout,
 *                      grpc-encoding: gzip (when compressed), grpc-accept-encoding,
 *                      authorization, x-pacer-batch-id
 *             DATA     one Length-Prefixed-Message: the Export…ServiceRequest otlp_request wrote
 *   response  HEADERS  :status 200, content-type: application/grpc…, [grpc-encoding]
 *             DATA     one Length-Prefixed-Message: the Export…ServiceResponse
 *             HEADERS  grpc-status, [grpc-message], [grpc-status-details-bin]   (trailers)
 *          or HEADERS  :status, content-type, grpc-status, …                    (Trailers-Only)
 *
 * libcurl hands response headers and trailers to the same header callback,
 * so grpc_answer_header reads both the same way; a status received is the
 * status, wherever it came from. An answer without one gets a status
 * synthesized from its HTTP status (grpc_status_from_http) or, when the
 * stream was reset, from the reset's code (grpc_status_from_h2_reset).
 *
 * Everything here reads bytes a server sent: every length is checked
 * against what is there, nothing is read twice, and the fuzzer
 * (tests/fuzz/fuzz-grpc.c) runs each reader.
 */
#include "grpc.h"

#include "pbuf.h"
#include "zlib_dl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_DELAY_MS 3600000 /* as Retry-After: at most an hour */
#define MAX_DETAILS_TEXT 8192 /* base64 of grpc-status-details-bin read (a header's suggested limit) */

static const char *const names[] = {
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
    "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
};

const char *grpc_status_name(int code)
{
    return code >= 0 && code < (int)(sizeof(names) / sizeof(names[0])) ? names[code] : NULL;
}

bool grpc_retryable(int code, bool retry_info)
{
    switch (code) {
    case GRPC_CANCELLED:
    case GRPC_DEADLINE_EXCEEDED:
    case GRPC_ABORTED:
    case GRPC_OUT_OF_RANGE:
    case GRPC_UNAVAILABLE:
    case GRPC_DATA_LOSS:
        return true;
    case GRPC_RESOURCE_EXHAUSTED:
        return retry_info; /* the server can recover, and says when */
    default:
        return false;
    }
}

int grpc_status_from_http(long http_status)
{
    switch (http_status) {
    case 400: return GRPC_INTERNAL;
    case 401: return GRPC_UNAUTHENTICATED;
    case 403: return GRPC_PERMISSION_DENIED;
    case 404: return GRPC_UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504: return GRPC_UNAVAILABLE;
    case 431: return GRPC_INTERNAL;
    default: return GRPC_UNKNOWN;
    }
}

int grpc_status_from_h2_reset(unsigned h2_error)
{
    switch (h2_error) {
    case 0x7: return GRPC_UNAVAILABLE;        /* REFUSED_STREAM: nothing was processed */
    case 0x8: return GRPC_CANCELLED;          /* CANCEL, from the server */
    case 0xb: return GRPC_RESOURCE_EXHAUSTED; /* ENHANCE_YOUR_CALM */
    case 0xc: return GRPC_PERMISSION_DENIED;  /* INADEQUATE_SECURITY */
    default: return GRPC_INTERNAL;
    }
}

const char *grpc_path(pacer_signal signal)
{
    switch (signal) {
    case PACER_SIGNAL_LOGS: return "/opentelemetry.proto.collector.logs.v1.LogsService/Export";
    case PACER_SIGNAL_METRICS: return "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";
    default: return "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
    }
}

void grpc_timeout(int64_t ms, char buf[16])
{
    static const struct { char unit; int64_t ms; } units[] = {{'m', 1}, {'S', 1000}, {'M', 60000}, {'H', 3600000}};
    if (ms < 1)
        ms = 1;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        int64_t v = (ms + units[i].ms - 1) / units[i].ms; /* rounded up: never shorter than asked */
        if (v <= 99999999 || i + 1 == sizeof(units) / sizeof(units[0])) {
            snprintf(buf, 16, "%u%c", (unsigned)(v > 99999999 ? 99999999 : v), units[i].unit);
            return;
        }
    }
}

uint8_t *grpc_frame(const void *msg, size_t len, bool compressed, size_t *ret_len)
{
    if (len > UINT32_MAX)
        return NULL;
    uint8_t *f = malloc(len + 5);
    if (!f)
        return NULL;
    f[0] = compressed ? 1 : 0;
    f[1] = (uint8_t)(len >> 24);
    f[2] = (uint8_t)(len >> 16);
    f[3] = (uint8_t)(len >> 8);
    f[4] = (uint8_t)len;
    if (len)
        memcpy(f + 5, msg, len);
    *ret_len = len + 5;
    return f;
}

/* ---- google.rpc.Status ---- */

/* google.protobuf.Duration { 1 int64 seconds; 2 int32 nanos } → ms,
 * rounded up, in [0, MAX_DELAY_MS]. */
static bool read_duration(const uint8_t *p, size_t len, int64_t *ret_ms)
{
    const uint8_t *end = p + len;
    int64_t seconds = 0;
    int32_t nanos = 0;
    pb_field f;
    int r;
    while ((r = pb_read_field(&p, end, &f)) > 0) {
        if (f.number == 1 && f.wire == PB_VARINT)
            seconds = (int64_t)f.v;
        else if (f.number == 2 && f.wire == PB_VARINT)
            nanos = (int32_t)(int64_t)f.v;
        else if (f.number <= 2)
            return false; /* a known field with another wire type */
    }
    if (r < 0)
        return false;
    int64_t ms;
    if (seconds >= MAX_DELAY_MS / 1000)
        ms = MAX_DELAY_MS;
    else if (seconds < 0)
        ms = 0;
    else
        ms = seconds * 1000 + (nanos >= 0 ? (nanos + 999999) / 1000000 : -((-(int64_t)nanos) / 1000000));
    *ret_ms = ms < 0 ? 0 : ms > MAX_DELAY_MS ? MAX_DELAY_MS : ms;
    return true;
}

/* google.protobuf.Any { 1 string type_url; 2 bytes value }: a RetryInfo's
 * delay. Returns 1 for a RetryInfo, 0 for another type, -1 for bytes that
 * are not an Any (or not a RetryInfo where the type says one). */
static int read_any(const uint8_t *p, size_t len, int64_t *ret_ms)
{
    const uint8_t *end = p + len, *type = NULL, *value = NULL;
    size_t type_len = 0, value_len = 0;
    pb_field f;
    int r;
    while ((r = pb_read_field(&p, end, &f)) > 0) {
        if ((f.number == 1 || f.number == 2) && f.wire != PB_LEN)
            return -1;
        if (f.number == 1) {
            type = f.p;
            type_len = f.n;
        } else if (f.number == 2) {
            value = f.p;
            value_len = f.n;
        }
    }
    if (r < 0)
        return -1;
    /* the type is the last segment of the URL's path */
    static const char want[] = "google.rpc.RetryInfo";
    size_t seg = type_len;
    while (seg > 0 && type[seg - 1] != '/')
        seg--;
    if (!type || type_len - seg != sizeof(want) - 1 || memcmp(type + seg, want, sizeof(want) - 1) != 0)
        return 0;
    /* RetryInfo { 1 Duration retry_delay } */
    const uint8_t *q = value, *qend = value ? value + value_len : NULL;
    *ret_ms = 0;
    while (q && (r = pb_read_field(&q, qend, &f)) > 0) {
        if (f.number != 1)
            continue;
        if (f.wire != PB_LEN || !read_duration(f.p, f.n, ret_ms))
            return -1;
    }
    return q && r < 0 ? -1 : 1;
}

bool grpc_status_details(const uint8_t *p, size_t len, int *ret_code, bool *ret_retry_info, int64_t *ret_delay_ms)
{
    const uint8_t *end = p + len;
    int code = 0;
    bool retry = false;
    int64_t delay = 0;
    pb_field f;
    int r;
    while ((r = pb_read_field(&p, end, &f)) > 0) {
        if (f.number == 1) {
            if (f.wire != PB_VARINT)
                return false;
            code = (int32_t)(int64_t)f.v;
        } else if (f.number == 2) {
            if (f.wire != PB_LEN)
                return false;
        } else if (f.number == 3) {
            int64_t ms;
            int a = f.wire == PB_LEN ? read_any(f.p, f.n, &ms) : -1;
            if (a < 0)
                return false;
            if (a == 1) {
                retry = true;
                delay = ms;
            }
        }
    }
    if (r < 0)
        return false;
    *ret_code = code;
    *ret_retry_info = retry;
    *ret_delay_ms = delay;
    return true;
}

long grpc_base64_decode(const char *s, size_t n, uint8_t *out)
{
    while (n > 0 && s[n - 1] == '=')
        n--;
    if (n % 4 == 1)
        return -1;
    long o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int v = c >= 'A' && c <= 'Z' ? c - 'A'
              : c >= 'a' && c <= 'z' ? c - 'a' + 26
              : c >= '0' && c <= '9' ? c - '0' + 52
              : c == '+' ? 62
              : c == '/' ? 63 : -1;
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (uint8_t)(acc >> bits);
        }
    }
    return o;
}

/* ---- the answer's header lines ---- */

void grpc_answer_init(grpc_answer *a)
{
    memset(a, 0, sizeof(*a));
    a->status = -1;
}

static bool name_is(const char *line, size_t name_len, const char *want)
{
    return strlen(want) == name_len && strncasecmp(line, want, name_len) == 0;
}

static int hex(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* grpc-message: percent-decoded where the encoding is valid, the rest kept
 * as it came; control characters become '?'. */
static void read_message(grpc_answer *a, const char *v, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < sizeof(a->message); i++) {
        unsigned char c = (unsigned char)v[i];
        if (c == '%' && i + 2 < n && hex(v[i + 1]) >= 0 && hex(v[i + 2]) >= 0) {
            c = (unsigned char)(hex(v[i + 1]) << 4 | hex(v[i + 2]));
            i += 2;
        }
        a->message[o++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    a->message[o] = '\0';
}

static void read_details(grpc_answer *a, const char *v, size_t n)
{
    if (n > MAX_DETAILS_TEXT)
        return;
    /* repeated binary values arrive joined with ',': each is base64 */
    while (n > 0) {
        size_t piece = 0;
        while (piece < n && v[piece] != ',')
            piece++;
        const char *s = v;
        size_t sl = piece;
        while (sl && (*s == ' ' || *s == '\t'))
            s++, sl--;
        while (sl && (s[sl - 1] == ' ' || s[sl - 1] == '\t'))
            sl--;
        uint8_t *bin = malloc(sl / 4 * 3 + 3);
        long bl = bin ? grpc_base64_decode(s, sl, bin) : -1;
        int code;
        bool retry;
        int64_t delay;
        if (bl >= 0 && grpc_status_details(bin, (size_t)bl, &code, &retry, &delay)) {
            a->details = true;
            a->details_code = code;
            a->retry_info = retry;
            a->retry_delay_ms = delay;
        }
        free(bin);
        v += piece < n ? piece + 1 : piece;
        n -= piece < n ? piece + 1 : piece;
    }
}

void grpc_answer_header(grpc_answer *a, const char *line, size_t len)
{
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    if (len > 5 && strncmp(line, "HTTP/", 5) == 0) {
        /* "HTTP/2 200": a new block of headers */
        const char *sp = memchr(line, ' ', len);
        long st = 0;
        for (const char *c = sp ? sp + 1 : line + len; c < line + len && *c >= '0' && *c <= '9' && st < 1000; c++)
            st = st * 10 + (*c - '0');
        a->http_status = st;
        a->grpc_content_type = false;
        a->encoding = 0;
        return;
    }
    const char *colon = memchr(line, ':', len);
    if (!colon || colon == line)
        return;
    size_t nl = (size_t)(colon - line);
    const char *v = colon + 1;
    size_t vl = len - nl - 1;
    while (vl && (*v == ' ' || *v == '\t'))
        v++, vl--;
    while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
        vl--;
    if (name_is(line, nl, "content-type")) {
        static const char g[] = "application/grpc";
        size_t gl = sizeof(g) - 1;
        a->grpc_content_type =
            vl >= gl && strncasecmp(v, g, gl) == 0 && (vl == gl || v[gl] == '+' || v[gl] == ';');
    } else if (name_is(line, nl, "grpc-status")) {
        /* 1*DIGIT without leading zeros */
        int st = 0;
        size_t i = 0;
        while (i < vl && i < 9 && v[i] >= '0' && v[i] <= '9')
            st = st * 10 + (v[i++] - '0');
        if (vl == 0 || i != vl || (vl > 1 && v[0] == '0')) {
            a->status = GRPC_INTERNAL;
            snprintf(a->message, sizeof(a->message), "malformed grpc-status");
        } else {
            a->status = st;
        }
    } else if (name_is(line, nl, "grpc-message")) {
        read_message(a, v, vl);
    } else if (name_is(line, nl, "grpc-encoding")) {
        a->encoding = vl == 8 && strncasecmp(v, "identity", 8) == 0 ? 0 : vl == 4 && strncasecmp(v, "gzip", 4) == 0 ? 1 : -1;
    } else if (name_is(line, nl, "grpc-status-details-bin")) {
        read_details(a, v, vl);
    }
}

bool grpc_answer_retry_info(const grpc_answer *a)
{
    return a->details && a->status >= 0 && a->details_code == a->status && a->retry_info;
}

/* ---- the response message ---- */

/* gunzips `len` bytes into a malloc'd buffer of at most GRPC_MAX_MESSAGE
 * bytes. Returns GRPC_OK, GRPC_RESOURCE_EXHAUSTED past the limit, or
 * GRPC_INTERNAL. */
static int gunzip(const uint8_t *p, size_t len, uint8_t **ret, size_t *ret_len, char *why, size_t why_size)
{
    const zlib_api *zl = zlib_api_get();
    if (!zl) {
        snprintf(why, why_size, "a gzip response message, and zlib (libz.so.1) could not be loaded");
        return GRPC_INTERNAL;
    }
    z_stream z;
    memset(&z, 0, sizeof z);
    if (zl->inflateInit2_(&z, 16 + MAX_WBITS, ZLIB_VERSION, (int)sizeof(z)) != Z_OK) {
        snprintf(why, why_size, "out of memory");
        return GRPC_INTERNAL;
    }
    size_t cap = len * 4 + 64 < GRPC_MAX_MESSAGE ? len * 4 + 64 : GRPC_MAX_MESSAGE;
    uint8_t *out = malloc(cap);
    z.next_in = (Bytef *)p;
    z.avail_in = (uInt)len;
    size_t have = 0;
    int r = Z_OK, st = GRPC_INTERNAL;
    while (out) {
        z.next_out = out + have;
        z.avail_out = (uInt)(cap - have);
        r = zl->inflate(&z, Z_NO_FLUSH);
        have = cap - z.avail_out;
        if (r == Z_STREAM_END || (r != Z_OK && r != Z_BUF_ERROR))
            break;
        if (z.avail_out > 0) { /* Z_BUF_ERROR or no progress: the input ended */
            r = Z_DATA_ERROR;
            break;
        }
        if (cap == GRPC_MAX_MESSAGE) {
            st = GRPC_RESOURCE_EXHAUSTED;
            break;
        }
        size_t ncap = cap * 2 < GRPC_MAX_MESSAGE ? cap * 2 : GRPC_MAX_MESSAGE;
        uint8_t *n = realloc(out, ncap);
        if (!n) {
            free(out);
            out = NULL;
            break;
        }
        out = n;
        cap = ncap;
    }
    zl->inflateEnd(&z);
    if (out && r == Z_STREAM_END && z.avail_in == 0) {
        *ret = out;
        *ret_len = have;
        return GRPC_OK;
    }
    free(out);
    if (st == GRPC_RESOURCE_EXHAUSTED)
        snprintf(why, why_size, "the response message is larger than %u bytes inflated", GRPC_MAX_MESSAGE);
    else
        snprintf(why, why_size, "the response message is not gzip, or not only gzip");
    return st;
}

int grpc_unary_message(const uint8_t *body, size_t len, int encoding, uint8_t **ret_msg, size_t *ret_len,
                       char *why, size_t why_size)
{
    *ret_msg = NULL;
    *ret_len = 0;
    if (len == 0) {
        snprintf(why, why_size, "OK without a response message");
        return GRPC_INTERNAL;
    }
    if (len < 5) {
        snprintf(why, why_size, "the response message is cut short (%zu bytes)", len);
        return GRPC_INTERNAL;
    }
    uint32_t n = (uint32_t)body[1] << 24 | (uint32_t)body[2] << 16 | (uint32_t)body[3] << 8 | body[4];
    if (n > GRPC_MAX_MESSAGE) {
        snprintf(why, why_size, "the response message is larger than %u bytes", GRPC_MAX_MESSAGE);
        return GRPC_RESOURCE_EXHAUSTED;
    }
    if ((size_t)n > len - 5) {
        snprintf(why, why_size, "the response message is cut short (%zu of %u bytes)", len - 5, n);
        return GRPC_INTERNAL;
    }
    if ((size_t)n < len - 5) {
        snprintf(why, why_size, "more than one response message to a unary call");
        return GRPC_INTERNAL;
    }
    if (body[0] > 1) {
        snprintf(why, why_size, "compressed flag %u", body[0]);
        return GRPC_INTERNAL;
    }
    if (body[0] == 1) {
        if (encoding != 1) {
            snprintf(why, why_size, encoding == 0 ? "a compressed response message without grpc-encoding"
                                                  : "a response message in an encoding pacer did not accept");
            return GRPC_INTERNAL;
        }
        return gunzip(body + 5, n, ret_msg, ret_len, why, why_size);
    }
    if (n) {
        *ret_msg = malloc(n);
        if (!*ret_msg) {
            snprintf(why, why_size, "out of memory");
            return GRPC_INTERNAL;
        }
        memcpy(*ret_msg, body + 5, n);
        *ret_len = n;
    }
    return GRPC_OK;
}
