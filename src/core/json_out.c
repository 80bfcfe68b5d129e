/* JSON text output for records and events (see json_out.h). */
#include "json_out.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jbuf_init(jbuf *b)
{
    memset(b, 0, sizeof(*b));
}

void jbuf_free(jbuf *b)
{
    free(b->data);
    jbuf_init(b);
}

char *jbuf_steal(jbuf *b, size_t *ret_len)
{
    char *s = b->failed ? NULL : b->data;
    if (ret_len)
        *ret_len = s ? b->len : 0;
    if (!s)
        free(b->data);
    jbuf_init(b);
    return s;
}

static bool jbuf_reserve(jbuf *b, size_t extra)
{
    if (b->failed)
        return false;
    if (b->len + extra + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) {
        if (cap > SIZE_MAX / 2) {
            b->failed = true;
            return false;
        }
        cap *= 2;
    }
    char *d = realloc(b->data, cap);
    if (!d) {
        b->failed = true;
        return false;
    }
    b->data = d;
    b->cap = cap;
    return true;
}

void jbuf_raw(jbuf *b, const char *s, size_t len)
{
    if (!jbuf_reserve(b, len))
        return;
    memcpy(b->data + b->len, s, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void jbuf_puts(jbuf *b, const char *s)
{
    jbuf_raw(b, s, strlen(s));
}

/* Length of the valid UTF-8 sequence starting at s, or 0 if invalid. */
static size_t utf8_seq_len(const unsigned char *s)
{
    unsigned char c = s[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

void jbuf_str(jbuf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    jbuf_raw(b, "\"", 1);
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        const unsigned char *run = p;
        /* copy plain runs in one go */
        while (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
            p++;
        if (p > run)
            jbuf_raw(b, (const char *)run, (size_t)(p - run));
        if (!*p)
            break;
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            jbuf_raw(b, esc, 2);
            p++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n': jbuf_raw(b, "\\n", 2); break;
            case '\r': jbuf_raw(b, "\\r", 2); break;
            case '\t': jbuf_raw(b, "\\t", 2); break;
            default: {
                char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                jbuf_raw(b, esc, 6);
            }
            }
            p++;
        } else {
            size_t n = utf8_seq_len(p);
            if (n == 0) {
                jbuf_raw(b, "\\ufffd", 6);
                p++;
            } else {
                jbuf_raw(b, (const char *)p, n);
                p += n;
            }
        }
    }
    jbuf_raw(b, "\"", 1);
}

void jbuf_open(jbuf *b, char brace)
{
    jbuf_raw(b, &brace, 1);
    b->need_comma = false;
}

void jbuf_close(jbuf *b, char brace)
{
    jbuf_raw(b, &brace, 1);
    b->need_comma = true;
}

void jbuf_elem(jbuf *b)
{
    if (b->need_comma)
        jbuf_raw(b, ",", 1);
    b->need_comma = false;
}

void jbuf_key(jbuf *b, const char *key)
{
    if (b->need_comma)
        jbuf_raw(b, ",", 1);
    jbuf_str(b, key);
    jbuf_raw(b, ":", 1);
    b->need_comma = false;
}

static void jbuf_value_done(jbuf *b)
{
    b->need_comma = true;
}

void jbuf_kv_str(jbuf *b, const char *key, const char *val)
{
    jbuf_key(b, key);
    jbuf_str(b, val);
    jbuf_value_done(b);
}

void jbuf_kv_i64(jbuf *b, const char *key, int64_t val)
{
    char num[32];
    int n = snprintf(num, sizeof(num), "%" PRId64, val);
    jbuf_key(b, key);
    jbuf_raw(b, num, (size_t)n);
    jbuf_value_done(b);
}

void jbuf_kv_u64(jbuf *b, const char *key, uint64_t val)
{
    char num[32];
    int n = snprintf(num, sizeof(num), "%" PRIu64, val);
    jbuf_key(b, key);
    jbuf_raw(b, num, (size_t)n);
    jbuf_value_done(b);
}

void jbuf_kv_bool(jbuf *b, const char *key, bool val)
{
    jbuf_key(b, key);
    jbuf_puts(b, val ? "true" : "false");
    jbuf_value_done(b);
}

void jbuf_kv_ms(jbuf *b, const char *key, int64_t ns)
{
    /* Integer arithmetic keeps the 3 decimals exact (no binary rounding). */
    char num[48];
    const char *sign = "";
    if (ns < 0) {
        sign = "-";
        ns = ns == INT64_MIN ? INT64_MAX : -ns;
    }
    int64_t us = ns / 1000 + (ns % 1000 >= 500); /* nearest microsecond */
    int n = snprintf(num, sizeof(num), "%s%" PRId64 ".%03" PRId64, sign, us / 1000, us % 1000);
    jbuf_key(b, key);
    jbuf_raw(b, num, (size_t)n);
    jbuf_value_done(b);
}
