/* The JSON writer (json.h): text into a growable or a fixed buffer.
 *
 * Separators: need_comma says a value was completed at the current level.
 * A value, a key or an opening brace writes ',' first when it is set; a key
 * and an opening brace clear it; a completed value (a closing brace
 * included) sets it. That is all the state objects and arrays need.
 */
#include <pacer/base/json.h>
#include <pacer/base/utf8.h>

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jbuf_init(jbuf *b)
{
    memset(b, 0, sizeof(*b));
}

void jbuf_init_fixed(jbuf *b, char *buf, size_t cap)
{
    memset(b, 0, sizeof(*b));
    b->data = buf;
    b->cap = cap;
    b->fixed = true;
    if (cap)
        buf[0] = '\0';
}

void jbuf_free(jbuf *b)
{
    if (!b->fixed)
        free(b->data);
    jbuf_init(b);
}

char *jbuf_steal(jbuf *b, size_t *ret_len)
{
    char *s = b->failed || b->fixed ? NULL : b->data;
    if (ret_len)
        *ret_len = s ? b->len : 0;
    if (!s && !b->fixed)
        free(b->data);
    jbuf_init(b);
    return s;
}

bool jbuf_fits(const jbuf *b)
{
    return !b->failed && b->len < b->cap;
}

/* Room for extra more bytes and the NUL; false when there is none (fixed:
 * the bytes are only counted). */
static bool reserve(jbuf *b, size_t extra)
{
    if (b->failed)
        return false;
    if (b->len + extra + 1 <= b->cap)
        return true;
    if (b->fixed)
        return false;
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
    if (!reserve(b, len)) {
        if (b->fixed) {
            /* store what fits, count the rest */
            size_t room = b->len + 1 < b->cap ? b->cap - 1 - b->len : 0;
            if (room) {
                memcpy(b->data + b->len, s, room);
                b->data[b->cap - 1] = '\0';
            }
            b->len = len > SIZE_MAX - b->len ? SIZE_MAX : b->len + len;
        }
        return;
    }
    memcpy(b->data + b->len, s, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void jbuf_puts(jbuf *b, const char *s)
{
    jbuf_raw(b, s, strlen(s));
}

void jbuf_printf(jbuf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(small)) {
        jbuf_raw(b, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->failed = !b->fixed;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    jbuf_raw(b, big, (size_t)n);
    free(big);
}

static void comma(jbuf *b)
{
    if (b->need_comma)
        jbuf_raw(b, ",", 1);
}

static void put_string(jbuf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t i = 0;
    jbuf_raw(b, "\"", 1);
    while (i < n) {
        size_t run = i;
        /* plain runs in one go */
        while (i < n && p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' && p[i] != '\\')
            i++;
        if (i > run)
            jbuf_raw(b, (const char *)p + run, i - run);
        if (i == n)
            break;
        unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            jbuf_raw(b, esc, 2);
            i++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n': jbuf_raw(b, "\\n", 2); break;
            case '\r': jbuf_raw(b, "\\r", 2); break;
            case '\t': jbuf_raw(b, "\\t", 2); break;
            case '\b': jbuf_raw(b, "\\b", 2); break;
            case '\f': jbuf_raw(b, "\\f", 2); break;
            default: {
                char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                jbuf_raw(b, esc, 6);
            }
            }
            i++;
        } else {
            size_t k = utf8_seq_len(p + i, n - i);
            if (k == 0) {
                jbuf_raw(b, "\\ufffd", 6); /* cannot round-trip */
                i++;
            } else {
                jbuf_raw(b, (const char *)p + i, k);
                i += k;
            }
        }
    }
    jbuf_raw(b, "\"", 1);
}

void jbuf_strn(jbuf *b, const char *s, size_t len)
{
    comma(b);
    put_string(b, s, s ? len : 0);
    b->need_comma = true;
}

void jbuf_str(jbuf *b, const char *s)
{
    jbuf_strn(b, s, s ? strlen(s) : 0);
}

void jbuf_open(jbuf *b, char brace)
{
    comma(b);
    jbuf_raw(b, &brace, 1);
    b->need_comma = false;
}

void jbuf_close(jbuf *b, char brace)
{
    jbuf_raw(b, &brace, 1);
    b->need_comma = true;
}

void jbuf_key(jbuf *b, const char *key)
{
    comma(b);
    put_string(b, key, strlen(key));
    jbuf_raw(b, ":", 1);
    b->need_comma = false;
}

static void put_value(jbuf *b, const char *text, size_t n)
{
    comma(b);
    jbuf_raw(b, text, n);
    b->need_comma = true;
}

void jbuf_null(jbuf *b)
{
    put_value(b, "null", 4);
}

void jbuf_bool(jbuf *b, bool v)
{
    put_value(b, v ? "true" : "false", v ? 4 : 5);
}

void jbuf_i64(jbuf *b, int64_t v)
{
    char num[24];
    int n = snprintf(num, sizeof(num), "%" PRId64, v);
    put_value(b, num, (size_t)n);
}

void jbuf_u64(jbuf *b, uint64_t v)
{
    char num[24];
    int n = snprintf(num, sizeof(num), "%" PRIu64, v);
    put_value(b, num, (size_t)n);
}

void jbuf_double(jbuf *b, double v)
{
    if (!isfinite(v)) {
        jbuf_null(b);
        return;
    }
    char num[32];
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(num, sizeof(num), "%.*g", prec, v);
        if (strtod(num, NULL) == v)
            break;
    }
    /* keep it a JSON number that reads as a real: 3 → 3.0 */
    if (!strpbrk(num, ".eEn") && (size_t)n + 2 < sizeof(num)) {
        memcpy(num + n, ".0", 3);
        n += 2;
    }
    put_value(b, num, (size_t)n);
}

void jbuf_ms(jbuf *b, int64_t ns)
{
    char num[48];
    const char *sign = "";
    if (ns < 0) {
        sign = "-";
        ns = ns == INT64_MIN ? INT64_MAX : -ns;
    }
    int64_t us = ns / 1000 + (ns % 1000 >= 500); /* nearest microsecond */
    int n = snprintf(num, sizeof(num), "%s%" PRId64 ".%03" PRId64, sign, us / 1000, us % 1000);
    put_value(b, num, (size_t)n);
}

void jbuf_kv_str(jbuf *b, const char *key, const char *val)
{
    jbuf_key(b, key);
    jbuf_str(b, val);
}

void jbuf_kv_i64(jbuf *b, const char *key, int64_t val)
{
    jbuf_key(b, key);
    jbuf_i64(b, val);
}

void jbuf_kv_u64(jbuf *b, const char *key, uint64_t val)
{
    jbuf_key(b, key);
    jbuf_u64(b, val);
}

void jbuf_kv_bool(jbuf *b, const char *key, bool val)
{
    jbuf_key(b, key);
    jbuf_bool(b, val);
}

void jbuf_kv_double(jbuf *b, const char *key, double val)
{
    jbuf_key(b, key);
    jbuf_double(b, val);
}

void jbuf_kv_ms(jbuf *b, const char *key, int64_t ns)
{
    jbuf_key(b, key);
    jbuf_ms(b, ns);
}

void jbuf_kv_null(jbuf *b, const char *key)
{
    jbuf_key(b, key);
    jbuf_null(b);
}
