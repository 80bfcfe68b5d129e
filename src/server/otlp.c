/* OTLP/HTTP JSON decoding (otlp.h): a one-pass pull parser.
 *
 * Order of checks for one request:
 *   1. nesting depth, by a linear scan (so the parser's recursion is bounded
 *      and "too deep" wins over every other reason);
 *   2. one pass of the parser over a private copy of the body: syntax, UTF-8
 *      and strings (unescaped in place: an unescaped string is never longer
 *      than its JSON text, and its closing quote leaves room for the NUL),
 *      numbers, and the OTLP shape, appending items as they complete;
 *   3. the first syntax error, else the first wrong shape of a list, makes
 *      the whole request invalid: the batch is emptied.
 *
 * Items are validated once their object is complete, in the same order of
 * fields whatever the order in the text, so that the reasons do not depend
 * on how an SDK orders members. Whatever an enclosing object decides later
 * (a resource that turns out to be invalid, a metric without a valid name)
 * is applied by rolling the batch back to a mark taken when that object
 * began: items appended, items rejected and the first reason all return to
 * the mark, and the enclosing object's own rejection replaces them.
 */
#include "otlp.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- ids and integers ---- */

static int hex_val(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int b64_val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

bool otlp_parse_id(const char *s, uint8_t *out, size_t n)
{
    size_t len = strlen(s);
    bool nonzero = false;
    if (len == 2 * n) {
        size_t i;
        for (i = 0; i < n; i++) {
            int hi = hex_val(s[2 * i]), lo = hex_val(s[2 * i + 1]);
            if (hi < 0 || lo < 0)
                break;
            out[i] = (uint8_t)(hi << 4 | lo);
            nonzero |= out[i] != 0;
        }
        if (i == n)
            return nonzero;
    }
    /* base64, padded or not: n bytes are ceil(4n/3) characters + padding */
    while (len > 0 && s[len - 1] == '=')
        len--;
    if (len != (4 * n + 2) / 3)
        return false;
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64_val(s[i]);
        if (v < 0)
            return false;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o == n)
                return false;
            out[o++] = (uint8_t)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    if (o != n || acc != 0) /* leftover bits must be zero */
        return false;
    for (size_t i = 0; i < n; i++)
        nonzero |= out[i] != 0;
    return nonzero;
}

bool otlp_parse_int64(const char *s, size_t len, int64_t *ret)
{
    bool neg = false;
    size_t i = 0;
    if (len > 0 && s[0] == '-') {
        neg = true;
        i = 1;
    }
    if (i == len || len - i > 20)
        return false;
    uint64_t acc = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (acc > (UINT64_MAX - d) / 10)
            return false;
        acc = acc * 10 + d;
    }
    if (neg) {
        if (acc > (uint64_t)INT64_MAX + 1)
            return false;
        *ret = acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc;
    } else {
        if (acc > INT64_MAX)
            return false;
        *ret = (int64_t)acc;
    }
    return true;
}

size_t otlp_json_compact(const char *json, size_t len, char *out)
{
    size_t o = 0;
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        char c = json[i];
        if (in_str) {
            out[o++] = c;
            if (c == '\\' && i + 1 < len)
                out[o++] = json[++i];
            else if (c == '"')
                in_str = false;
        } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            out[o++] = c;
            in_str = c == '"';
        }
    }
    out[o] = 0;
    return o;
}

/* ---- the lexer ---- */

/* A JSON value as the decoder sees it: scalars with their value, objects
 * and arrays skipped (type only). */
typedef struct jv {
    char t; /* 0 absent, 's' string, 'i' integer, 'd' real, 'b' bool, 'n' null, 'o' object, 'a' array */
    const char *s;
    size_t len;
    int64_t i;
    double d;
    bool b;
} jv;

typedef struct parser {
    const char *src; /* the body */
    char *buf;       /* its copy, strings unescaped in place; buf[len] = 0 */
    size_t len, pos;
    int depth;
    const char *syntax; /* the first syntax error, or NULL */
    size_t syntax_at;
} parser;

static bool fail(parser *p, const char *why)
{
    if (!p->syntax) {
        p->syntax = why;
        p->syntax_at = p->pos;
    }
    return false;
}

static void ws(parser *p)
{
    while (p->pos < p->len) {
        char c = p->buf[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return;
        p->pos++;
    }
}

static char peek(parser *p)
{
    ws(p);
    return p->pos < p->len ? p->buf[p->pos] : 0;
}

static bool expect(parser *p, char c)
{
    if (peek(p) != c)
        return fail(p, c == ':' ? "':' expected" : c == ',' ? "',' expected" : "unexpected character");
    p->pos++;
    return true;
}

static int hex4(const char *s)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hex_val(s[i]);
        if (h < 0)
            return -1;
        v = v << 4 | h;
    }
    return v;
}

/* Length of the valid UTF-8 sequence at s (n bytes available), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c >= 0xc2 && c <= 0xdf)
        return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
    if (c >= 0xe0 && c <= 0xef) {
        if (n < 3 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
            return 0;
        if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0)) /* overlong, surrogate */
            return 0;
        return 3;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        if (n < 4 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
            return 0;
        if ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90)) /* overlong, > U+10FFFF */
            return 0;
        return 4;
    }
    return 0;
}

/* A string at pos (the opening quote). Unescapes it in place into buf and
 * NUL-terminates it there. */
static bool parse_string(parser *p, const char **ret, size_t *ret_len)
{
    char *b = p->buf;
    size_t r = ++p->pos, w = r;
    for (;;) {
        /* fast path: plain ASCII */
        while (r < p->len) {
            unsigned char c = (unsigned char)b[r];
            if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80)
                break;
            b[w++] = (char)c;
            r++;
        }
        if (r >= p->len) {
            p->pos = r;
            return fail(p, "unterminated string");
        }
        unsigned char c = (unsigned char)b[r];
        if (c == '"')
            break;
        if (c < 0x20) {
            p->pos = r;
            return fail(p, "control character in a string");
        }
        if (c >= 0x80) {
            size_t n = utf8_len((const unsigned char *)b + r, p->len - r);
            if (!n) {
                p->pos = r;
                return fail(p, "invalid UTF-8");
            }
            memmove(b + w, b + r, n);
            w += n;
            r += n;
            continue;
        }
        /* an escape */
        if (r + 1 >= p->len) {
            p->pos = r;
            return fail(p, "unterminated string");
        }
        char e = b[r + 1];
        r += 2;
        switch (e) {
        case '"': b[w++] = '"'; break;
        case '\\': b[w++] = '\\'; break;
        case '/': b[w++] = '/'; break;
        case 'b': b[w++] = '\b'; break;
        case 'f': b[w++] = '\f'; break;
        case 'n': b[w++] = '\n'; break;
        case 'r': b[w++] = '\r'; break;
        case 't': b[w++] = '\t'; break;
        case 'u': {
            int u = r + 4 <= p->len ? hex4(b + r) : -1;
            if (u < 0) {
                p->pos = r;
                return fail(p, "invalid \\u escape");
            }
            r += 4;
            uint32_t cp = (uint32_t)u;
            if (cp >= 0xd800 && cp <= 0xdbff) {
                int lo = r + 6 <= p->len && b[r] == '\\' && b[r + 1] == 'u' ? hex4(b + r + 2) : -1;
                if (lo < 0xdc00 || lo > 0xdfff) {
                    p->pos = r;
                    return fail(p, "invalid \\u escape (a lone surrogate)");
                }
                r += 6;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (uint32_t)(lo - 0xdc00);
            } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                p->pos = r;
                return fail(p, "invalid \\u escape (a lone surrogate)");
            } else if (cp == 0) {
                p->pos = r;
                return fail(p, "\\u0000 is not allowed in strings");
            }
            if (cp < 0x80) {
                b[w++] = (char)cp;
            } else if (cp < 0x800) {
                b[w++] = (char)(0xc0 | cp >> 6);
                b[w++] = (char)(0x80 | (cp & 0x3f));
            } else if (cp < 0x10000) {
                b[w++] = (char)(0xe0 | cp >> 12);
                b[w++] = (char)(0x80 | (cp >> 6 & 0x3f));
                b[w++] = (char)(0x80 | (cp & 0x3f));
            } else {
                b[w++] = (char)(0xf0 | cp >> 18);
                b[w++] = (char)(0x80 | (cp >> 12 & 0x3f));
                b[w++] = (char)(0x80 | (cp >> 6 & 0x3f));
                b[w++] = (char)(0x80 | (cp & 0x3f));
            }
            break;
        }
        default:
            p->pos = r - 1;
            return fail(p, "invalid escape in a string");
        }
    }
    /* w <= r: the NUL lands on the closing quote or before it */
    size_t start = p->pos;
    b[w] = 0;
    *ret = b + start;
    *ret_len = w - start;
    p->pos = r + 1;
    return true;
}

static bool parse_number(parser *p, jv *v)
{
    const char *b = p->buf;
    size_t i = p->pos, start = i;
    bool neg = b[i] == '-', real = false;
    if (neg)
        i++;
    if (i < p->len && b[i] == '0') {
        i++;
    } else if (i < p->len && b[i] >= '1' && b[i] <= '9') {
        while (i < p->len && b[i] >= '0' && b[i] <= '9')
            i++;
    } else {
        return fail(p, "invalid number");
    }
    if (i < p->len && b[i] == '.') {
        real = true;
        if (++i >= p->len || b[i] < '0' || b[i] > '9')
            return fail(p, "invalid number");
        while (i < p->len && b[i] >= '0' && b[i] <= '9')
            i++;
    }
    if (i < p->len && (b[i] == 'e' || b[i] == 'E')) {
        real = true;
        i++;
        if (i < p->len && (b[i] == '+' || b[i] == '-'))
            i++;
        if (i >= p->len || b[i] < '0' || b[i] > '9')
            return fail(p, "invalid number");
        while (i < p->len && b[i] >= '0' && b[i] <= '9')
            i++;
    }
    if (!real) {
        if (!otlp_parse_int64(b + start, i - start, &v->i))
            return fail(p, "integer out of the 64-bit range");
        v->t = 'i';
        v->d = (double)v->i;
    } else {
        /* strtod stops where the grammar above stopped: buf[len] is 0 */
        v->d = strtod(b + start, NULL);
        if (isinf(v->d))
            return fail(p, "number out of range");
        v->t = 'd';
    }
    p->pos = i;
    return true;
}

static bool literal(parser *p, const char *word, size_t n)
{
    if (p->len - p->pos < n || memcmp(p->buf + p->pos, word, n) != 0)
        return fail(p, "invalid literal");
    p->pos += n;
    return true;
}

/* Objects and arrays, member by member:
 *   bool first = true; int r;
 *   while ((r = obj_next(p, &first, &key, &klen)) > 0) { …read or skip the value… }
 *   r < 0: syntax error.  */
static bool open_nested(parser *p)
{
    if (++p->depth > OTLP_MAX_DEPTH)
        return fail(p, "nested too deep");
    p->pos++;
    return true;
}

static int obj_next(parser *p, bool *first, const char **key, size_t *klen)
{
    char c = peek(p);
    if (c == '}') {
        p->pos++;
        p->depth--;
        return 0;
    }
    if (!*first) {
        if (c != ',')
            return fail(p, "',' or '}' expected"), -1;
        p->pos++;
        c = peek(p);
    }
    *first = false;
    if (c != '"')
        return fail(p, "a string (an object key) expected"), -1;
    if (!parse_string(p, key, klen) || !expect(p, ':'))
        return -1;
    ws(p);
    return 1;
}

static int arr_next(parser *p, bool *first)
{
    char c = peek(p);
    if (c == ']') {
        p->pos++;
        p->depth--;
        return 0;
    }
    if (!*first) {
        if (c != ',')
            return fail(p, "',' or ']' expected"), -1;
        p->pos++;
        ws(p);
    }
    *first = false;
    return 1;
}

/* Reads any value at pos; objects and arrays are checked and skipped. */
static bool read_value(parser *p, jv *v)
{
    memset(v, 0, sizeof *v);
    char c = peek(p);
    bool first = true;
    int r;
    const char *k;
    size_t kl;
    jv x;
    switch (c) {
    case '"':
        v->t = 's';
        return parse_string(p, &v->s, &v->len);
    case '{':
        v->t = 'o';
        if (!open_nested(p))
            return false;
        while ((r = obj_next(p, &first, &k, &kl)) > 0)
            if (!read_value(p, &x))
                return false;
        return r == 0;
    case '[':
        v->t = 'a';
        if (!open_nested(p))
            return false;
        while ((r = arr_next(p, &first)) > 0)
            if (!read_value(p, &x))
                return false;
        return r == 0;
    case 't':
        v->t = 'b';
        v->b = true;
        return literal(p, "true", 4);
    case 'f':
        v->t = 'b';
        return literal(p, "false", 5);
    case 'n':
        v->t = 'n';
        return literal(p, "null", 4);
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return parse_number(p, v);
        return fail(p, p->pos >= p->len ? "unexpected end of input" : "a value expected");
    }
}

static bool key_is(const char *k, size_t kl, const char *lit)
{
    size_t n = strlen(lit);
    return kl == n && memcmp(k, lit, n) == 0;
}

static bool jv_int64(const jv *v, int64_t *ret)
{
    if (v->t == 'i') {
        *ret = v->i;
        return true;
    }
    return v->t == 's' && otlp_parse_int64(v->s, v->len, ret);
}

/* An unsigned 64-bit nanosecond timestamp; pacerd keeps them signed (until
 * the year 2262). */
static bool parse_time(const jv *v, int64_t *ret)
{
    return jv_int64(v, ret) && *ret >= 0;
}

/* An enum given as an integer in [0, max] or as one of its names. */
static bool parse_enum(const jv *v, const char *const *names, int max, int *ret)
{
    if (v->t == 'i') {
        if (v->i < 0 || v->i > max)
            return false;
        *ret = (int)v->i;
        return true;
    }
    if (v->t == 's')
        for (int i = 0; i <= max; i++)
            if (names[i] && strcmp(v->s, names[i]) == 0) {
                *ret = i;
                return true;
            }
    return false;
}

static const char *const span_kinds[] = {
    "SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER",
    "SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER",
};
static const char *const status_codes[] = {"STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"};

/* ---- the decoder: batch, marks, rejections ---- */

static bool grow(void **arr, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 64;
    void *p = realloc(*arr, c * size);
    if (!p)
        return false;
    *arr = p;
    *cap = c;
    return true;
}

typedef struct decoder {
    parser p;
    otlp_batch *b;
    size_t cap_res, cap_items, cap_kvs;
    bool oom;
    const char *shape; /* the first wrong shape of a list (whole request) */
    char shape_buf[160];
    char msg[512];     /* the first rejection's reason */
    bool has_msg;
} decoder;

/* Where to roll back to. */
typedef struct mark {
    size_t items, rejected;
    bool has_msg;
} mark;

static size_t n_items(const decoder *d)
{
    return d->b->n_spans + d->b->n_logs + d->b->n_points; /* one kind per batch */
}

static mark mark_take(const decoder *d)
{
    return (mark){n_items(d), d->b->rejected, d->has_msg};
}

static void mark_restore(decoder *d, mark m)
{
    otlp_batch *b = d->b;
    if (b->spans)
        b->n_spans = m.items;
    else if (b->logs)
        b->n_logs = m.items;
    else if (b->points)
        b->n_points = m.items;
    b->rejected = m.rejected;
    d->has_msg = m.has_msg;
}

static void reject(decoder *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reject(decoder *d, const char *fmt, ...)
{
    d->b->rejected++;
    if (d->has_msg)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    va_end(ap);
    d->has_msg = true;
}

void otlp_batch_clear(otlp_batch *b)
{
    free(b->text);
    free(b->kvs);
    free(b->resources);
    free(b->spans);
    free(b->logs);
    free(b->points);
    free(b->reject_message);
    memset(b, 0, sizeof *b);
}

static int depth_check(const char *s, size_t n, char *err, size_t err_size)
{
    int depth = 0;
    bool in_str = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (c == '"') {
            in_str = true;
        } else if (c == '{' || c == '[') {
            if (++depth > OTLP_MAX_DEPTH) {
                snprintf(err, err_size, "JSON nested deeper than %d levels at byte %zu", OTLP_MAX_DEPTH, i);
                return -EBADMSG;
            }
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return 0;
}

/* ---- attribute values ---- */

static bool parse_kvs(decoder *d, bool keep, otlp_attrs *ret, const char **why);

/* An AnyValue at pos (any JSON value). Sets *why to the first reason it is
 * invalid (and leaves it set when it was already). Returns false on a
 * syntax error or out of memory. */
static bool parse_any(decoder *d, otlp_value *out, const char **why)
{
    parser *p = &d->p;
    memset(out, 0, sizeof *out);
    if (peek(p) != '{') {
        jv x;
        if (!read_value(p, &x))
            return false;
        if (!*why)
            *why = "a value must be an object (AnyValue)";
        return true;
    }
    size_t start = p->pos;
    if (!open_nested(p))
        return false;
    unsigned kinds = 0;
    const char *bad = NULL;
    bool first = true;
    int r;
    const char *k;
    size_t kl;
    while ((r = obj_next(p, &first, &k, &kl)) > 0) {
        jv x;
        otlp_value_type t;
        if (key_is(k, kl, "arrayValue") || key_is(k, kl, "kvlistValue")) {
            bool kv = k[0] == 'k';
            t = kv ? OTLP_KVLIST : OTLP_ARRAY;
            const char *shape = kv ? "kvlistValue must be {\"values\":[…]}" : "arrayValue must be {\"values\":[…]}";
            if (peek(p) != '{') {
                if (!read_value(p, &x))
                    return false;
                if (!bad)
                    bad = shape;
            } else {
                if (!open_nested(p))
                    return false;
                bool f2 = true;
                int r2;
                const char *k2;
                size_t kl2;
                while ((r2 = obj_next(p, &f2, &k2, &kl2)) > 0) {
                    if (!key_is(k2, kl2, "values")) {
                        if (!read_value(p, &x))
                            return false;
                        continue;
                    }
                    if (peek(p) != '[') {
                        if (!read_value(p, &x))
                            return false;
                        if (!bad)
                            bad = shape;
                        continue;
                    }
                    if (kv) {
                        otlp_attrs nested;
                        const char *w = NULL;
                        if (!parse_kvs(d, false, &nested, &w))
                            return false;
                        if (w && !bad)
                            bad = w;
                        continue;
                    }
                    if (!open_nested(p))
                        return false;
                    bool f3 = true;
                    int r3;
                    while ((r3 = arr_next(p, &f3)) > 0) {
                        otlp_value e;
                        const char *w = NULL;
                        if (!parse_any(d, &e, &w))
                            return false;
                        if (w && !bad)
                            bad = w;
                    }
                    if (r3 < 0)
                        return false;
                }
                if (r2 < 0)
                    return false;
            }
        } else {
            if (!read_value(p, &x))
                return false;
            const char *w = NULL;
            if (key_is(k, kl, "stringValue")) {
                t = OTLP_STRING;
                if (x.t != 's')
                    w = "stringValue must be a string";
                out->s = x.s;
                out->len = x.len;
            } else if (key_is(k, kl, "boolValue")) {
                t = OTLP_BOOL;
                if (x.t != 'b')
                    w = "boolValue must be true or false";
                out->b = x.b;
            } else if (key_is(k, kl, "intValue")) {
                t = OTLP_INT;
                if (!jv_int64(&x, &out->i))
                    w = "intValue must be a 64-bit integer (number or decimal string)";
            } else if (key_is(k, kl, "doubleValue")) {
                t = OTLP_DOUBLE;
                if (x.t != 'i' && x.t != 'd')
                    w = "doubleValue must be a number";
                out->d = x.d;
            } else if (key_is(k, kl, "bytesValue")) {
                t = OTLP_BYTES;
                if (x.t != 's')
                    w = "bytesValue must be a base64 string";
                out->s = x.s;
                out->len = x.len;
            } else {
                continue; /* unknown members are ignored */
            }
            if (w && !bad)
                bad = w;
        }
        kinds |= 1u << t;
        out->type = t;
    }
    if (r < 0)
        return false;
    if (!bad && (kinds & (kinds - 1)))
        bad = "a value holds more than one of stringValue, intValue, …";
    if (bad && !*why)
        *why = bad;
    out->json = p->src + start;
    out->json_len = p->pos - start;
    return true;
}

/* A KeyValue list at pos. keep: append its entries to the batch (else only
 * check them). *why: the first reason it is invalid. Returns false on a
 * syntax error or out of memory. */
static bool parse_kvs(decoder *d, bool keep, otlp_attrs *ret, const char **why)
{
    parser *p = &d->p;
    otlp_batch *b = d->b;
    memset(ret, 0, sizeof *ret);
    ret->first = b->n_kvs;
    jv x;
    if (peek(p) != '[') {
        if (!read_value(p, &x))
            return false;
        if (!*why)
            *why = "attributes must be an array of {\"key\",\"value\"}";
        return true;
    }
    size_t start = p->pos;
    if (!open_nested(p))
        return false;
    bool first = true;
    int r;
    while ((r = arr_next(p, &first)) > 0) {
        if (peek(p) != '{') {
            if (!read_value(p, &x))
                return false;
            if (!*why)
                *why = "an attribute must be an object with a string \"key\"";
            continue;
        }
        size_t kv_start = p->pos;
        if (!open_nested(p))
            return false;
        otlp_kv kv = {0};
        const char *vwhy = NULL;
        bool key_ok = false, f2 = true;
        int r2;
        const char *k;
        size_t kl;
        while ((r2 = obj_next(p, &f2, &k, &kl)) > 0) {
            if (key_is(k, kl, "key")) {
                if (!read_value(p, &x))
                    return false;
                key_ok = x.t == 's';
                kv.key = x.s;
                kv.key_len = x.len;
            } else if (key_is(k, kl, "value")) {
                vwhy = NULL;
                if (!parse_any(d, &kv.value, &vwhy))
                    return false;
                kv.has_value = true;
            } else if (!read_value(p, &x)) {
                return false;
            }
        }
        if (r2 < 0)
            return false;
        if (!key_ok) {
            if (!*why)
                *why = "an attribute must be an object with a string \"key\"";
            continue;
        }
        if (kv.key_len > OTLP_MAX_NAME) {
            if (!*why)
                *why = "an attribute key is longer than 1024 bytes";
            continue;
        }
        if (vwhy) {
            if (!*why)
                *why = vwhy;
            continue;
        }
        if (!keep || *why)
            continue;
        if (!grow((void **)&b->kvs, b->n_kvs, &d->cap_kvs, sizeof *b->kvs)) {
            d->oom = true;
            return false;
        }
        kv.json = p->src + kv_start;
        kv.json_len = p->pos - kv_start;
        b->kvs[b->n_kvs++] = kv;
    }
    if (r < 0)
        return false;
    ret->n = b->n_kvs - ret->first;
    ret->json = p->src + start;
    ret->json_len = p->pos - start;
    return true;
}

const otlp_value *otlp_attr(const otlp_attrs *attrs, const char *key)
{
    size_t n = strlen(key);
    for (size_t i = 0; i < attrs->n; i++) {
        const otlp_kv *kv = &attrs->kv[i];
        if (kv->key_len == n && memcmp(kv->key, key, n) == 0)
            return kv->has_value ? &kv->value : NULL;
    }
    return NULL;
}

bool otlp_value_string(const otlp_value *v, const char **ret)
{
    if (!v || v->type != OTLP_STRING)
        return false;
    *ret = v->s;
    return true;
}

bool otlp_value_double(const otlp_value *v, double *ret)
{
    if (v && v->type == OTLP_DOUBLE) {
        *ret = v->d;
        return true;
    }
    if (v && v->type == OTLP_INT) {
        *ret = (double)v->i;
        return true;
    }
    return false;
}

bool otlp_value_int(const otlp_value *v, int64_t *ret)
{
    if (v && v->type == OTLP_INT) {
        *ret = v->i;
        return true;
    }
    if (v && v->type == OTLP_DOUBLE) {
        double x = v->d;
        if (x == floor(x) && x >= -9.2e18 && x <= 9.2e18) {
            *ret = (int64_t)x;
            return true;
        }
    }
    return false;
}

bool otlp_value_bool(const otlp_value *v, bool *ret)
{
    if (!v || v->type != OTLP_BOOL)
        return false;
    *ret = v->b;
    return true;
}

/* ---- the OTLP shape ---- */

/* What differs between /v1/traces, /v1/logs and /v1/metrics. */
typedef struct signal {
    const char *list, *scopes, *items; /* "resourceSpans", "scopeSpans", "spans" */
    bool reject_each;                  /* a bad resource rejects each item under it (else once) */
    bool (*item)(decoder *d, size_t i, size_t j, size_t k);
} signal;

static bool skip(parser *p)
{
    jv x;
    return read_value(p, &x);
}

static const char *const severity_levels[] = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"};

static bool parse_severity(const jv *v, int *ret)
{
    static const char *const sev[25] = {"SEVERITY_NUMBER_UNSPECIFIED"};
    if (parse_enum(v, sev, 24, ret))
        return true;
    /* names other than UNSPECIFIED: SEVERITY_NUMBER_<LEVEL><n> */
    if (v->t != 's' || strncmp(v->s, "SEVERITY_NUMBER_", 16) != 0)
        return false;
    const char *s = v->s;
    for (int lv = 0; lv < 6; lv++) {
        size_t n = strlen(severity_levels[lv]);
        if (strncmp(s + 16, severity_levels[lv], n) == 0) {
            int sub = s[16 + n] ? s[16 + n] - '0' : 1;
            if (sub >= 1 && sub <= 4 && (!s[16 + n] || !s[17 + n])) {
                *ret = lv * 4 + sub;
                return true;
            }
        }
    }
    return false;
}

static bool parse_span(decoder *d, size_t i, size_t j, size_t k)
{
    parser *p = &d->p;
    if (peek(p) != '{') {
        if (!skip(p))
            return false;
        reject(d, "resourceSpans[%zu].scopeSpans[%zu].spans[%zu].must be an object", i, j, k);
        return true;
    }
    if (!open_nested(p))
        return false;
    jv trace = {0}, span = {0}, parent = {0}, name = {0}, kind = {0}, start = {0}, end = {0}, code = {0},
       message = {0};
    bool has_status = false, status_obj = true;
    otlp_span out = {0};
    const char *attrs_why = NULL;
    bool first = true;
    int r;
    const char *key;
    size_t kl;
    while ((r = obj_next(p, &first, &key, &kl)) > 0) {
        jv *f = NULL;
        switch (kl) {
        case 4:
            f = key_is(key, kl, "name") ? &name : key_is(key, kl, "kind") ? &kind : NULL;
            break;
        case 6:
            f = key_is(key, kl, "spanId") ? &span : NULL;
            break;
        case 7:
            f = key_is(key, kl, "traceId") ? &trace : NULL;
            break;
        case 12:
            f = key_is(key, kl, "parentSpanId") ? &parent : NULL;
            break;
        case 15:
            f = key_is(key, kl, "endTimeUnixNano") ? &end : NULL;
            break;
        case 17:
            f = key_is(key, kl, "startTimeUnixNano") ? &start : NULL;
            break;
        }
        if (f) {
            if (!read_value(p, f))
                return false;
        } else if (key_is(key, kl, "attributes")) {
            attrs_why = NULL;
            if (!parse_kvs(d, true, &out.attrs, &attrs_why))
                return false;
        } else if (key_is(key, kl, "status")) {
            has_status = true;
            code.t = message.t = 0;
            status_obj = peek(p) == '{';
            if (!status_obj) {
                if (!skip(p))
                    return false;
                continue;
            }
            if (!open_nested(p))
                return false;
            bool f2 = true;
            int r2;
            const char *k2;
            size_t kl2;
            while ((r2 = obj_next(p, &f2, &k2, &kl2)) > 0) {
                jv *g = key_is(k2, kl2, "code") ? &code : key_is(k2, kl2, "message") ? &message : NULL;
                if (g ? !read_value(p, g) : !skip(p))
                    return false;
            }
            if (r2 < 0)
                return false;
        } else if (!skip(p)) {
            return false;
        }
    }
    if (r < 0)
        return false;

    const char *bad = NULL;
    if (trace.t != 's' || !otlp_parse_id(trace.s, out.trace_id, 16))
        bad = "traceId: expected 32 hex digits or base64 of 16 bytes, not all zero";
    else if (span.t != 's' || !otlp_parse_id(span.s, out.span_id, 8))
        bad = "spanId: expected 16 hex digits or base64 of 8 bytes, not all zero";
    else if (parent.t && parent.t != 's')
        bad = "parentSpanId must be a string";
    else if (parent.t && parent.len && !(out.has_parent = otlp_parse_id(parent.s, out.parent_span_id, 8)))
        bad = "parentSpanId: expected 16 hex digits or base64 of 8 bytes";
    else if (name.t != 's')
        bad = "name: expected a string";
    else if (name.len > OTLP_MAX_NAME)
        bad = "name: longer than 1024 bytes";
    else if (kind.t && !parse_enum(&kind, span_kinds, 5, &out.kind))
        bad = "kind: expected 0-5 or a SPAN_KIND_* name";
    else if (!parse_time(&start, &out.start_ns))
        bad = "startTimeUnixNano: expected a non-negative 64-bit integer";
    else if (!parse_time(&end, &out.end_ns))
        bad = "endTimeUnixNano: expected a non-negative 64-bit integer";
    else if (out.end_ns < out.start_ns)
        bad = "endTimeUnixNano is before startTimeUnixNano";
    else if (has_status && !status_obj)
        bad = "status must be an object";
    else if (code.t && !parse_enum(&code, status_codes, 2, &out.status_code))
        bad = "status.code: expected 0-2 or a STATUS_CODE_* name";
    else if (message.t && message.t != 's')
        bad = "status.message must be a string";
    else
        bad = attrs_why;
    if (bad) {
        reject(d, "resourceSpans[%zu].scopeSpans[%zu].spans[%zu].%s", i, j, k, bad);
        return true;
    }
    out.name = name.s;
    out.status_message = message.t ? message.s : NULL;
    otlp_batch *b = d->b;
    if (!grow((void **)&b->spans, b->n_spans, &d->cap_items, sizeof *b->spans)) {
        d->oom = true;
        return false;
    }
    b->spans[b->n_spans++] = out;
    return true;
}

static bool parse_log(decoder *d, size_t i, size_t j, size_t k)
{
    parser *p = &d->p;
    if (peek(p) != '{') {
        if (!skip(p))
            return false;
        reject(d, "resourceLogs[%zu].scopeLogs[%zu].logRecords[%zu].must be an object", i, j, k);
        return true;
    }
    if (!open_nested(p))
        return false;
    jv time = {0}, observed = {0}, severity = {0}, text = {0};
    otlp_log out = {0};
    const char *attrs_why = NULL, *body_why = NULL;
    bool first = true;
    int r;
    const char *key;
    size_t kl;
    while ((r = obj_next(p, &first, &key, &kl)) > 0) {
        jv *f = key_is(key, kl, "timeUnixNano")           ? &time
                : key_is(key, kl, "observedTimeUnixNano") ? &observed
                : key_is(key, kl, "severityNumber")       ? &severity
                : key_is(key, kl, "severityText")         ? &text
                                                          : NULL;
        if (f) {
            if (!read_value(p, f))
                return false;
        } else if (key_is(key, kl, "attributes")) {
            attrs_why = NULL;
            if (!parse_kvs(d, true, &out.attrs, &attrs_why))
                return false;
        } else if (key_is(key, kl, "body")) {
            body_why = NULL;
            if (!parse_any(d, &out.body, &body_why))
                return false;
            out.has_body = true;
        } else if (!skip(p)) {
            return false;
        }
    }
    if (r < 0)
        return false;
    int64_t t = 0, o = 0;
    const char *bad = NULL;
    if (time.t && !parse_time(&time, &t))
        bad = "timeUnixNano: expected a non-negative 64-bit integer";
    else if (observed.t && !parse_time(&observed, &o))
        bad = "observedTimeUnixNano: expected a non-negative 64-bit integer";
    else if (!(out.time_ns = t ? t : o))
        bad = "timeUnixNano: missing (and no observedTimeUnixNano)";
    else if (severity.t && !parse_severity(&severity, &out.severity_number))
        bad = "severityNumber: expected 0-24 or a SEVERITY_NUMBER_* name";
    else if (text.t && text.t != 's')
        bad = "severityText must be a string";
    else
        bad = body_why ? body_why : attrs_why;
    if (bad) {
        reject(d, "resourceLogs[%zu].scopeLogs[%zu].logRecords[%zu].%s", i, j, k, bad);
        return true;
    }
    out.severity_text = text.t ? text.s : NULL;
    otlp_batch *b = d->b;
    if (!grow((void **)&b->logs, b->n_logs, &d->cap_items, sizeof *b->logs)) {
        d->oom = true;
        return false;
    }
    b->logs[b->n_logs++] = out;
    return true;
}

static const struct {
    const char *field, *type;
    bool histogram;
} metric_kinds[] = {
    {"gauge", "gauge", false},
    {"sum", "sum", false},
    {"histogram", "histogram", true},
    {"exponentialHistogram", "exponential_histogram", true},
    {"summary", "summary", true},
};
#define N_METRIC_KINDS (sizeof metric_kinds / sizeof metric_kinds[0])

static bool parse_point(decoder *d, size_t kind, size_t i, size_t j, size_t k, size_t m)
{
    parser *p = &d->p;
    const char *field = metric_kinds[kind].field;
    if (peek(p) != '{') {
        if (!skip(p))
            return false;
        reject(d, "resourceMetrics[%zu].scopeMetrics[%zu].metrics[%zu].%s.dataPoints[%zu].must be an object", i, j,
               k, field, m);
        return true;
    }
    if (!open_nested(p))
        return false;
    jv time = {0}, count = {0}, sum = {0}, as_double = {0}, as_int = {0};
    otlp_point out = {0};
    const char *attrs_why = NULL;
    bool first = true;
    int r;
    const char *key;
    size_t kl;
    while ((r = obj_next(p, &first, &key, &kl)) > 0) {
        jv *f = key_is(key, kl, "timeUnixNano") ? &time
                : key_is(key, kl, "count")      ? &count
                : key_is(key, kl, "sum")        ? &sum
                : key_is(key, kl, "asDouble")   ? &as_double
                : key_is(key, kl, "asInt")      ? &as_int
                                                : NULL;
        if (f) {
            if (!read_value(p, f))
                return false;
        } else if (key_is(key, kl, "attributes")) {
            attrs_why = NULL;
            if (!parse_kvs(d, true, &out.attrs, &attrs_why))
                return false;
        } else if (!skip(p)) {
            return false;
        }
    }
    if (r < 0)
        return false;
    const char *bad = NULL;
    int64_t iv;
    out.count = -1;
    if (!parse_time(&time, &out.time_ns) || out.time_ns == 0)
        bad = "timeUnixNano: expected a positive 64-bit integer";
    else if (metric_kinds[kind].histogram) {
        if (!jv_int64(&count, &out.count) || out.count < 0)
            bad = "count: expected a non-negative 64-bit integer";
        else if (sum.t && sum.t != 'i' && sum.t != 'd')
            bad = "sum must be a number";
        else
            out.value = sum.t ? sum.d : 0;
    } else if (as_double.t == 'i' || as_double.t == 'd') {
        out.value = as_double.d;
    } else if (!as_double.t && as_int.t && jv_int64(&as_int, &iv)) {
        out.value = (double)iv;
    } else {
        bad = "expected asDouble (a number) or asInt (a 64-bit integer)";
    }
    if (!bad && !isfinite(out.value))
        bad = "the value is not finite";
    if (!bad)
        bad = attrs_why;
    if (bad) {
        reject(d, "resourceMetrics[%zu].scopeMetrics[%zu].metrics[%zu].%s.dataPoints[%zu].%s", i, j, k, field, m,
               bad);
        return true;
    }
    out.type = metric_kinds[kind].type;
    otlp_batch *b = d->b;
    if (!grow((void **)&b->points, b->n_points, &d->cap_items, sizeof *b->points)) {
        d->oom = true;
        return false;
    }
    b->points[b->n_points++] = out;
    return true;
}

/* One metric: its points are decoded as they come and given the metric's
 * name, unit and type at its end, or rolled back when the metric is bad.
 * Of several data kinds, the first in metric_kinds counts (as before). */
static bool parse_metric(decoder *d, size_t i, size_t j, size_t k)
{
    parser *p = &d->p;
    static const char name_msg[] = "resourceMetrics[%zu].scopeMetrics[%zu].metrics[%zu]: expected a string name "
                                   "(at most 1024 bytes) and unit";
    if (peek(p) != '{') {
        if (!skip(p))
            return false;
        reject(d, name_msg, i, j, k);
        return true;
    }
    if (!open_nested(p))
        return false;
    mark m0 = mark_take(d);
    jv name = {0}, unit = {0};
    long kind = -1;
    bool data_bad = false;
    bool first = true;
    int r;
    const char *key;
    size_t kl;
    while ((r = obj_next(p, &first, &key, &kl)) > 0) {
        if (key_is(key, kl, "name") || key_is(key, kl, "unit")) {
            if (!read_value(p, key[0] == 'n' ? &name : &unit))
                return false;
            continue;
        }
        long kd = -1;
        for (size_t x = 0; x < N_METRIC_KINDS && kd < 0; x++)
            if (key_is(key, kl, metric_kinds[x].field))
                kd = (long)x;
        if (kd < 0 || (kind >= 0 && kd >= kind)) {
            if (!skip(p))
                return false;
            continue;
        }
        mark_restore(d, m0);
        kind = kd;
        data_bad = peek(p) != '{';
        if (data_bad) {
            if (!skip(p))
                return false;
            continue;
        }
        if (!open_nested(p))
            return false;
        bool f2 = true;
        int r2;
        const char *k2;
        size_t kl2;
        while ((r2 = obj_next(p, &f2, &k2, &kl2)) > 0) {
            if (!key_is(k2, kl2, "dataPoints")) {
                if (!skip(p))
                    return false;
                continue;
            }
            if (peek(p) != '[') {
                data_bad = true;
                if (!skip(p))
                    return false;
                continue;
            }
            if (!open_nested(p))
                return false;
            bool f3 = true;
            int r3;
            for (size_t n = 0; (r3 = arr_next(p, &f3)) > 0; n++)
                if (!parse_point(d, (size_t)kind, i, j, k, n))
                    return false;
            if (r3 < 0)
                return false;
        }
        if (r2 < 0)
            return false;
    }
    if (r < 0)
        return false;
    if (name.t != 's' || name.len > OTLP_MAX_NAME || (unit.t && unit.t != 's')) {
        mark_restore(d, m0);
        reject(d, name_msg, i, j, k);
        return true;
    }
    if (kind < 0 || data_bad) {
        mark_restore(d, m0);
        reject(d, "resourceMetrics[%zu].scopeMetrics[%zu].metrics[%zu]: expected one of gauge, sum, "
                  "histogram, exponentialHistogram, summary with a \"dataPoints\" array", i, j, k);
        return true;
    }
    for (size_t x = m0.items; x < d->b->n_points; x++) {
        d->b->points[x].name = name.s;
        d->b->points[x].unit = unit.t ? unit.s : NULL;
    }
    return true;
}

/* Sets the resource (and, for spans, the scope) of items [from, now). */
static void set_owner(decoder *d, size_t from, long resource, const char *scope, bool set_scope)
{
    otlp_batch *b = d->b;
    for (size_t x = from; x < b->n_spans; x++) {
        if (resource >= 0)
            b->spans[x].resource = (uint32_t)resource;
        if (set_scope)
            b->spans[x].scope = scope;
    }
    if (resource < 0)
        return;
    for (size_t x = from; x < b->n_logs; x++)
        b->logs[x].resource = (uint32_t)resource;
    for (size_t x = from; x < b->n_points; x++)
        b->points[x].resource = (uint32_t)resource;
}

/* One scope entry (scopeSpans[j], …). *count: items seen under it. */
static bool parse_scope(decoder *d, const signal *sg, size_t i, size_t j, size_t *count)
{
    parser *p = &d->p;
    if (peek(p) != '{') {
        if (!skip(p))
            return false;
        reject(d, "%s[%zu].%s[%zu]: expected an object with a \"%s\" array", sg->list, i, sg->scopes, j, sg->items);
        return true;
    }
    if (!open_nested(p))
        return false;
    mark m0 = mark_take(d);
    const char *scope_name = NULL;
    bool items_bad = false, first = true;
    int r;
    const char *key;
    size_t kl;
    while ((r = obj_next(p, &first, &key, &kl)) > 0) {
        if (key_is(key, kl, sg->items)) {
            if (peek(p) != '[') {
                items_bad = true;
                if (!skip(p))
                    return false;
                continue;
            }
            if (!open_nested(p))
                return false;
            bool f2 = true;
            int r2;
            for (size_t k = 0; (r2 = arr_next(p, &f2)) > 0; k++, ++*count)
                if (!sg->item(d, i, j, k))
                    return false;
            if (r2 < 0)
                return false;
        } else if (key_is(key, kl, "scope") && peek(p) == '{') {
            if (!open_nested(p))
                return false;
            bool f2 = true;
            int r2;
            const char *k2;
            size_t kl2;
            while ((r2 = obj_next(p, &f2, &k2, &kl2)) > 0) {
                jv x;
                if (!read_value(p, &x))
                    return false;
                if (key_is(k2, kl2, "name"))
                    scope_name = x.t == 's' ? x.s : NULL;
            }
            if (r2 < 0)
                return false;
        } else if (!skip(p)) {
            return false;
        }
    }
    if (r < 0)
        return false;
    if (items_bad) {
        mark_restore(d, m0);
        reject(d, "%s[%zu].%s[%zu]: expected an object with a \"%s\" array", sg->list, i, sg->scopes, j, sg->items);
        return true;
    }
    set_owner(d, m0.items, -1, scope_name, true);
    return true;
}

/* One resource entry (resourceSpans[i], …). */
static bool parse_entry(decoder *d, const signal *sg, size_t i)
{
    parser *p = &d->p;
    otlp_batch *b = d->b;
    if (peek(p) != '{') {
        if (!skip(p))
            return false;
        reject(d, "%s[%zu]: must be an object", sg->list, i);
        return true;
    }
    if (!open_nested(p))
        return false;
    mark m0 = mark_take(d);
    const char *why = NULL;
    otlp_attrs attrs = {0};
    attrs.first = b->n_kvs;
    size_t count = 0;
    bool scopes_bad = false, first = true;
    int r;
    const char *key;
    size_t kl;
    while ((r = obj_next(p, &first, &key, &kl)) > 0) {
        if (key_is(key, kl, "resource")) {
            if (peek(p) != '{') {
                if (!skip(p))
                    return false;
                if (!why)
                    why = "resource must be an object";
                continue;
            }
            if (!open_nested(p))
                return false;
            bool f2 = true;
            int r2;
            const char *k2;
            size_t kl2;
            while ((r2 = obj_next(p, &f2, &k2, &kl2)) > 0) {
                if (key_is(k2, kl2, "attributes")) {
                    if (!parse_kvs(d, true, &attrs, &why))
                        return false;
                } else if (!skip(p)) {
                    return false;
                }
            }
            if (r2 < 0)
                return false;
        } else if (key_is(key, kl, sg->scopes)) {
            if (peek(p) != '[') {
                scopes_bad = true;
                if (!skip(p))
                    return false;
                continue;
            }
            if (!open_nested(p))
                return false;
            bool f2 = true;
            int r2;
            for (size_t j = 0; (r2 = arr_next(p, &f2)) > 0; j++)
                if (!parse_scope(d, sg, i, j, &count))
                    return false;
            if (r2 < 0)
                return false;
        } else if (!skip(p)) {
            return false;
        }
    }
    if (r < 0)
        return false;
    if (why) {
        mark_restore(d, m0);
        size_t n = sg->reject_each && count ? count : 1;
        for (size_t x = 0; x < n; x++)
            reject(d, "%s[%zu]: %s", sg->list, i, why);
        return true;
    }
    if (scopes_bad) {
        mark_restore(d, m0);
        reject(d, "%s[%zu].%s must be an array", sg->list, i, sg->scopes);
        return true;
    }
    if (!grow((void **)&b->resources, b->n_resources, &d->cap_res, sizeof *b->resources)) {
        d->oom = true;
        return false;
    }
    otlp_resource *rs = &b->resources[b->n_resources];
    memset(rs, 0, sizeof *rs);
    rs->attrs = attrs;
    rs->attrs.kv = attrs.n ? b->kvs + attrs.first : NULL; /* for the lookups below; set again at the end */
    otlp_value_string(otlp_attr(&rs->attrs, "service.name"), &rs->service_name);
    otlp_value_string(otlp_attr(&rs->attrs, "service.version"), &rs->service_version);
    otlp_value_string(otlp_attr(&rs->attrs, "pacer.session"), &rs->session);
    set_owner(d, m0.items, (long)b->n_resources++, NULL, false);
    return true;
}

static void fix_attrs(otlp_batch *b, otlp_attrs *a)
{
    a->kv = a->n ? b->kvs + a->first : NULL;
}

static int decode(const char *body, size_t len, otlp_batch *b, const signal *sg, char *err, size_t err_size)
{
    int r = depth_check(body, len, err, err_size);
    if (r < 0)
        return r;
    b->text = malloc(len + 1);
    if (!b->text)
        goto oom;
    memcpy(b->text, body, len);
    b->text[len] = 0;
    decoder d = {.p = {.src = body, .buf = b->text, .len = len}, .b = b};
    parser *p = &d.p;
    char c = peek(p);
    if (c == '{') {
        open_nested(p); /* depth 1 */
        bool first = true;
        const char *key;
        size_t kl;
        while ((r = obj_next(p, &first, &key, &kl)) > 0) {
            if (!key_is(key, kl, sg->list)) {
                if (!skip(p))
                    break;
                continue;
            }
            if (peek(p) != '[') {
                if (!d.shape) {
                    snprintf(d.shape_buf, sizeof d.shape_buf, "\"%s\" must be an array", sg->list);
                    d.shape = d.shape_buf;
                }
                if (!skip(p))
                    break;
                continue;
            }
            if (!open_nested(p))
                return false;
            bool f2 = true;
            int r2;
            size_t i = 0;
            while ((r2 = arr_next(p, &f2)) > 0 && parse_entry(&d, sg, i))
                i++;
            if (r2 < 0 || p->syntax || d.oom)
                break;
        }
    } else if (c == '[') {
        skip(p);
        snprintf(d.shape_buf, sizeof d.shape_buf, "the request body must be a JSON object with \"%s\"", sg->list);
        d.shape = d.shape_buf;
    } else {
        fail(p, p->pos >= p->len ? "'[' or '{' expected, not the end of the input" : "'[' or '{' expected");
    }
    if (!p->syntax && !d.oom && (ws(p), p->pos != p->len))
        fail(p, "the end of the input expected after the top-level value");
    if (d.oom)
        goto oom;
    if (p->syntax) {
        snprintf(err, err_size, "invalid JSON at byte %zu: %s", p->syntax_at, p->syntax);
        otlp_batch_clear(b);
        return -EBADMSG;
    }
    if (d.shape) {
        snprintf(err, err_size, "%s", d.shape);
        otlp_batch_clear(b);
        return -EBADMSG;
    }
    for (size_t x = 0; x < b->n_resources; x++)
        fix_attrs(b, &b->resources[x].attrs);
    for (size_t x = 0; x < b->n_spans; x++)
        fix_attrs(b, &b->spans[x].attrs);
    for (size_t x = 0; x < b->n_logs; x++)
        fix_attrs(b, &b->logs[x].attrs);
    for (size_t x = 0; x < b->n_points; x++)
        fix_attrs(b, &b->points[x].attrs);
    if (d.has_msg && !(b->reject_message = strdup(d.msg)))
        goto oom;
    return 0;
oom:
    otlp_batch_clear(b);
    snprintf(err, err_size, "out of memory");
    return -ENOMEM;
}

int otlp_decode_traces(const char *body, size_t len, otlp_batch *b, char *err, size_t err_size)
{
    static const signal sg = {"resourceSpans", "scopeSpans", "spans", true, parse_span};
    return decode(body, len, b, &sg, err, err_size);
}

int otlp_decode_logs(const char *body, size_t len, otlp_batch *b, char *err, size_t err_size)
{
    static const signal sg = {"resourceLogs", "scopeLogs", "logRecords", true, parse_log};
    return decode(body, len, b, &sg, err, err_size);
}

int otlp_decode_metrics(const char *body, size_t len, otlp_batch *b, char *err, size_t err_size)
{
    static const signal sg = {"resourceMetrics", "scopeMetrics", "metrics", false, parse_metric};
    return decode(body, len, b, &sg, err, err_size);
}
