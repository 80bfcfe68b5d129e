/* gRPC's framing (grpc_frame.h). */
#include "grpc_frame.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t grpc_frame_length(const uint8_t prefix[5])
{
    return (uint32_t)prefix[1] << 24 | (uint32_t)prefix[2] << 16 | (uint32_t)prefix[3] << 8 | prefix[4];
}

void grpc_frame_prefix(uint8_t out[5], size_t len)
{
    out[0] = 0;
    out[1] = (uint8_t)(len >> 24);
    out[2] = (uint8_t)(len >> 16);
    out[3] = (uint8_t)(len >> 8);
    out[4] = (uint8_t)len;
}

int grpc_frame_message(const uint8_t *buf, size_t len, size_t max, bool *ret_compressed, const uint8_t **ret_msg,
                       size_t *ret_len, char *err, size_t err_size)
{
    if (len == 0) {
        snprintf(err, err_size, "the call carried no message");
        return -EBADMSG;
    }
    if (len < 5) {
        snprintf(err, err_size, "the message's prefix is cut short: %zu of 5 bytes", len);
        return -EBADMSG;
    }
    if (buf[0] > 1) {
        snprintf(err, err_size, "the message's compressed flag is %u: expected 0 or 1", buf[0]);
        return -EBADMSG;
    }
    uint32_t n = grpc_frame_length(buf);
    if (n > max) {
        snprintf(err, err_size, "the message's %u bytes are over the limit of %zu", n, max);
        return -EFBIG;
    }
    if (len - 5 < n) {
        snprintf(err, err_size, "the message is cut short: %zu of %u bytes", len - 5, n);
        return -EBADMSG;
    }
    if (len - 5 > n) {
        snprintf(err, err_size, "%zu bytes after the message: a unary call carries one", len - 5 - n);
        return -EBADMSG;
    }
    *ret_compressed = buf[0] == 1;
    *ret_msg = buf + 5;
    *ret_len = n;
    return 0;
}

int grpc_frame_timeout(const char *s, int64_t *ret_ns)
{
    size_t digits = strspn(s, "0123456789");
    if (digits == 0 || digits > 8 || !s[digits] || s[digits + 1])
        return -EINVAL;
    int64_t v = 0;
    for (size_t i = 0; i < digits; i++)
        v = v * 10 + (s[i] - '0');
    int64_t unit;
    switch (s[digits]) {
    case 'H': unit = 3600LL * 1000000000LL; break;
    case 'M': unit = 60LL * 1000000000LL; break;
    case 'S': unit = 1000000000LL; break;
    case 'm': unit = 1000000LL; break;
    case 'u': unit = 1000LL; break;
    case 'n': unit = 1; break;
    default: return -EINVAL;
    }
    /* 99999999 hours would overflow: such a deadline is none */
    *ret_ns = v > INT64_MAX / unit ? INT64_MAX : v * unit;
    return 0;
}

void grpc_frame_percent(const char *text, char *out, size_t out_size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        bool plain = *p >= 0x20 && *p <= 0x7e && *p != '%';
        size_t need = plain ? 1 : 3;
        if (o + need >= out_size)
            break;
        if (plain) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    if (out_size)
        out[o] = 0;
}

/* ---- a little protobuf, for google.rpc.Status ---- */

typedef struct pbuf {
    uint8_t *p;
    size_t len, cap;
    bool failed;
} pbuf;

static void put(pbuf *b, const void *d, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
}

static void varint(pbuf *b, uint64_t v)
{
    uint8_t t[10];
    size_t n = 0;
    do {
        t[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    put(b, t, n);
}

static void field_bytes(pbuf *b, unsigned field, const void *d, size_t n)
{
    varint(b, (uint64_t)field << 3 | 2);
    varint(b, n);
    put(b, d, n);
}

char *grpc_frame_status_details(int code, const char *message, unsigned retry_s)
{
    pbuf st = {0}, any = {0}, retry = {0}, dur = {0};
    if (code) {
        varint(&st, 1 << 3 | 0);
        varint(&st, (uint64_t)(int64_t)code);
    }
    if (message && *message)
        field_bytes(&st, 2, message, strlen(message));
    if (retry_s) {
        varint(&dur, 1 << 3 | 0); /* google.protobuf.Duration.seconds */
        varint(&dur, retry_s);
        field_bytes(&retry, 1, dur.p, dur.len); /* RetryInfo.retry_delay */
        field_bytes(&any, 1, GRPC_RETRY_INFO_TYPE, strlen(GRPC_RETRY_INFO_TYPE));
        field_bytes(&any, 2, retry.p, retry.len);
        field_bytes(&st, 3, any.p, any.len); /* Status.details */
    }
    bool failed = st.failed || any.failed || retry.failed || dur.failed;
    free(any.p);
    free(retry.p);
    free(dur.p);
    char *out = failed ? NULL : malloc((st.len + 2) / 3 * 4 + 1);
    if (out) {
        static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        size_t o = 0, i = 0;
        for (; i + 2 < st.len; i += 3) {
            uint32_t v = (uint32_t)st.p[i] << 16 | (uint32_t)st.p[i + 1] << 8 | st.p[i + 2];
            out[o++] = b64[v >> 18];
            out[o++] = b64[(v >> 12) & 63];
            out[o++] = b64[(v >> 6) & 63];
            out[o++] = b64[v & 63];
        }
        if (st.len - i == 1) {
            uint32_t v = (uint32_t)st.p[i] << 16;
            out[o++] = b64[v >> 18];
            out[o++] = b64[(v >> 12) & 63];
        } else if (st.len - i == 2) {
            uint32_t v = (uint32_t)st.p[i] << 16 | (uint32_t)st.p[i + 1] << 8;
            out[o++] = b64[v >> 18];
            out[o++] = b64[(v >> 12) & 63];
            out[o++] = b64[(v >> 6) & 63];
        }
        out[o] = 0;
    }
    free(st.p);
    return out;
}
