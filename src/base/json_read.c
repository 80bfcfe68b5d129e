/* The JSON reader (json.h): a pull parser over a mutable buffer.
 *
 * Invariants:
 *  1. No byte at or beyond `len` is read as input; buf[len] is set to NUL
 *     at init, so a number's text can be handed to strtod safely.
 *  2. Strings are unescaped in place: the write position never passes the
 *     read position (every escape is longer than what it stands for), and
 *     the NUL that ends a decoded string lands on its closing quote or
 *     before it. Bytes past the read position are untouched, so an error
 *     message can still show the byte it is about.
 *  3. `depth` counts the containers entered and not yet closed; entering one
 *     past JREAD_MAX_DEPTH is an error, which also bounds the recursion of
 *     skip().
 *  4. `seen` bit d-1 says the container at depth d already gave a member or
 *     element, so the next one must follow a comma.
 *  5. The first error wins and stops the reader.
 */
#include <pacer/base/json.h>
#include <pacer/base/utf8.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jread_init(jread *r, char *buf, size_t len, const char *src, unsigned flags)
{
    memset(r, 0, sizeof(*r));
    r->buf = buf;
    r->len = len;
    r->src = src;
    r->flags = flags;
    buf[len] = '\0';
}

bool jread_fail(jread *r, size_t at, const char *fmt, ...)
{
    if (r->failed)
        return false;
    r->failed = true;
    r->error_at = at;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof(r->message), fmt, ap);
    va_end(ap);
    return false;
}

/* A position for a message: "column N" (1-based) or "byte N". */
static const char *where(const jread *r, size_t at, char buf[40])
{
    if (r->flags & JREAD_LINE)
        snprintf(buf, 40, "column %zu", at + 1);
    else
        snprintf(buf, 40, "byte %zu", at);
    return buf;
}

static const char *end_name(const jread *r)
{
    return (r->flags & JREAD_LINE) ? "end of line" : "end of input";
}

/* A byte for a message: 'x' when printable, else byte 0xNN. */
static const char *show_byte(unsigned char c, char buf[16])
{
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, 16, "'%c'", c);
    else
        snprintf(buf, 16, "byte 0x%02x", c);
    return buf;
}

static void ws(jread *r)
{
    while (r->pos < r->len) {
        char c = r->buf[r->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return;
        r->pos++;
    }
}

static int hex_digit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The 4 hex digits of the \u escape at `at` (which holds '\'). */
static bool hex4(jread *r, size_t at, uint32_t *ret)
{
    uint32_t v = 0;
    if (r->len - at < 6)
        return jread_fail(r, at, "invalid \\u escape: expected 4 hex digits");
    for (size_t i = 2; i < 6; i++) {
        int d = hex_digit((unsigned char)r->buf[at + i]);
        if (d < 0)
            return jread_fail(r, at, "invalid \\u escape: expected 4 hex digits");
        v = (v << 4) | (uint32_t)d;
    }
    *ret = v;
    return true;
}

/* The \u escape (a code point or a surrogate pair) at *rp, decoded to its
 * UTF-8 bytes at *wp. */
static bool u_escape(jread *r, size_t *rp, size_t *wp)
{
    size_t at = *rp;
    uint32_t cp, lo;
    if (!hex4(r, at, &cp))
        return false;
    *rp += 6;
    if (cp >= 0xdc00 && cp <= 0xdfff)
        return jread_fail(r, at, "unpaired low surrogate \\u%04" PRIx32, cp);
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (r->len - *rp < 2 || r->buf[*rp] != '\\' || r->buf[*rp + 1] != 'u')
            return jread_fail(r, at, "unpaired high surrogate \\u%04" PRIx32, cp);
        if (!hex4(r, *rp, &lo))
            return false;
        if (lo < 0xdc00 || lo > 0xdfff)
            return jread_fail(r, at, "unpaired high surrogate \\u%04" PRIx32, cp);
        *rp += 6;
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    if (cp == 0 && (r->flags & JREAD_NO_NUL))
        return jread_fail(r, at, "\\u0000 is not allowed in strings");
    *wp += utf8_encode(cp, r->buf + *wp);
    return true;
}

/* The string at pos (its opening quote), decoded in place. */
static bool string(jread *r, const char **ret, size_t *ret_len)
{
    char *b = r->buf;
    size_t open = r->pos;
    size_t rp = open + 1, w = rp;
    char buf[40], byte[16];
    for (;;) {
        /* plain ASCII runs in one go */
        while (rp < r->len) {
            unsigned char c = (unsigned char)b[rp];
            if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80)
                break;
            b[w++] = (char)c;
            rp++;
        }
        if (rp >= r->len)
            return jread_fail(r, r->len, "unterminated string (opened at %s)", where(r, open, buf));
        unsigned char c = (unsigned char)b[rp];
        if (c == '"')
            break;
        if (c == '\\') {
            if (r->len - rp < 2)
                return jread_fail(r, r->len, "unterminated string (opened at %s)", where(r, open, buf));
            char e = b[rp + 1], simple;
            switch (e) {
            case '"': simple = '"'; break;
            case '\\': simple = '\\'; break;
            case '/': simple = '/'; break;
            case 'b': simple = '\b'; break;
            case 'f': simple = '\f'; break;
            case 'n': simple = '\n'; break;
            case 'r': simple = '\r'; break;
            case 't': simple = '\t'; break;
            case 'u':
                if (!u_escape(r, &rp, &w))
                    return false;
                continue;
            default:
                return jread_fail(r, rp, "invalid escape: backslash followed by %s",
                                  show_byte((unsigned char)e, byte));
            }
            b[w++] = simple;
            rp += 2;
        } else if (c < 0x20) {
            return jread_fail(r, rp, "control character 0x%02x in string (must be escaped)", c);
        } else {
            size_t k = utf8_seq_len((const unsigned char *)b + rp, r->len - rp);
            if (k == 0)
                return jread_fail(r, rp, "invalid UTF-8 (byte 0x%02x) in string", c);
            memmove(b + w, b + rp, k);
            w += k;
            rp += k;
        }
    }
    b[w] = '\0';
    *ret = b + open + 1;
    *ret_len = w - open - 1;
    r->pos = rp + 1;
    return true;
}

static bool is_digit(const jread *r, size_t i)
{
    return i < r->len && r->buf[i] >= '0' && r->buf[i] <= '9';
}

/* Checks the number grammar at pos and records its text. */
static bool number(jread *r, jvalue *v)
{
    size_t start = r->pos, i = start;
    bool integer = true;
    if (r->buf[i] == '-')
        i++;
    if (!is_digit(r, i))
        return jread_fail(r, i, "expected a digit after '-'");
    if (r->buf[i] == '0') {
        i++;
        if (is_digit(r, i))
            return jread_fail(r, i, "leading zeros are not allowed in numbers");
    } else {
        while (is_digit(r, i))
            i++;
    }
    if (i < r->len && r->buf[i] == '.') {
        integer = false;
        if (!is_digit(r, ++i))
            return jread_fail(r, i, "expected a digit after '.'");
        while (is_digit(r, i))
            i++;
    }
    if (i < r->len && (r->buf[i] == 'e' || r->buf[i] == 'E')) {
        integer = false;
        i++;
        if (i < r->len && (r->buf[i] == '+' || r->buf[i] == '-'))
            i++;
        if (!is_digit(r, i))
            return jread_fail(r, i, "expected a digit in the exponent");
        while (is_digit(r, i))
            i++;
    }
    v->type = JT_NUMBER;
    v->s = r->buf + start;
    v->len = i - start;
    v->integer = integer;
    r->pos = i;
    if (r->flags & JREAD_NUMBERS_IN_RANGE) {
        int64_t x;
        double d;
        if (integer && !jvalue_int64(v, &x))
            return jread_fail(r, start, "integer out of the 64-bit range");
        if (!integer && !jvalue_double(v, &d))
            return jread_fail(r, start, "number out of range");
    }
    return true;
}

jtype jread_peek(jread *r)
{
    if (r->failed)
        return JT_NONE;
    ws(r);
    if (r->pos >= r->len)
        return JT_NONE;
    switch (r->buf[r->pos]) {
    case '"': return JT_STRING;
    case '{': return JT_OBJECT;
    case '[': return JT_ARRAY;
    case 't': return JT_TRUE;
    case 'f': return JT_FALSE;
    case 'n': return JT_NULL;
    default: return JT_NUMBER; /* or garbage: jread_value says which */
    }
}

static bool enter(jread *r, char open)
{
    if (r->failed)
        return false;
    ws(r);
    if (r->pos >= r->len || r->buf[r->pos] != open)
        return jread_fail(r, r->pos, open == '{' ? "expected an object" : "expected an array");
    if (r->depth >= JREAD_MAX_DEPTH)
        return jread_fail(r, r->pos, "nesting deeper than %d levels", JREAD_MAX_DEPTH);
    r->pos++;
    r->depth++;
    r->seen &= ~(UINT64_C(1) << (r->depth - 1));
    return true;
}

bool jread_enter_object(jread *r)
{
    return enter(r, '{');
}

bool jread_enter_array(jread *r)
{
    return enter(r, '[');
}

/* The common step of members and elements: 1 another follows, 0 closed. */
static int next(jread *r, char close, const char *after)
{
    if (r->failed)
        return -1;
    ws(r);
    uint64_t bit = UINT64_C(1) << (r->depth - 1);
    if (r->pos < r->len && r->buf[r->pos] == close) {
        r->pos++;
        r->depth--;
        return 0;
    }
    if (r->seen & bit) {
        if (r->pos >= r->len || r->buf[r->pos] != ',')
            return jread_fail(r, r->pos, "%s", after), -1;
        r->pos++;
        ws(r);
    }
    r->seen |= bit;
    return 1;
}

int jread_member(jread *r, const char **ret_key, size_t *ret_len)
{
    int n = next(r, '}', "expected ',' or '}' after member");
    if (n <= 0)
        return n;
    if (r->pos >= r->len || r->buf[r->pos] != '"')
        return jread_fail(r, r->pos, "expected member name"), -1;
    if (!string(r, ret_key, ret_len))
        return -1;
    ws(r);
    if (r->pos >= r->len || r->buf[r->pos] != ':')
        return jread_fail(r, r->pos, "expected ':' after member name"), -1;
    r->pos++;
    ws(r);
    return 1;
}

int jread_element(jread *r)
{
    return next(r, ']', "expected ',' or ']' after array element");
}

/* Skips the container at pos, checking it. */
static bool skip(jread *r, char open)
{
    jvalue x;
    int n;
    if (!enter(r, open))
        return false;
    if (open == '{') {
        const char *k;
        size_t kl;
        while ((n = jread_member(r, &k, &kl)) > 0)
            if (!jread_value(r, &x))
                return false;
    } else {
        while ((n = jread_element(r)) > 0)
            if (!jread_value(r, &x))
                return false;
    }
    return n == 0;
}

bool jread_value(jread *r, jvalue *v)
{
    static const char *const literals[] = {"true", "false", "null"};
    static const jtype literal_types[] = {JT_TRUE, JT_FALSE, JT_NULL};
    char byte[16];
    memset(v, 0, sizeof(*v));
    if (r->failed)
        return false;
    ws(r);
    v->at = r->pos;
    if (r->pos >= r->len)
        return jread_fail(r, r->pos, "expected a value, got %s", end_name(r));
    unsigned char c = (unsigned char)r->buf[r->pos];
    switch (c) {
    case '"':
        v->type = JT_STRING;
        return string(r, &v->s, &v->len);
    case '{':
    case '[':
        if (!skip(r, (char)c))
            return false;
        v->type = c == '{' ? JT_OBJECT : JT_ARRAY;
        v->s = r->src ? r->src + v->at : NULL;
        v->len = r->pos - v->at;
        return true;
    case 't':
    case 'f':
    case 'n':
        for (size_t i = 0; i < 3; i++) {
            size_t n = strlen(literals[i]);
            if (c == (unsigned char)literals[i][0] && r->len - r->pos >= n &&
                memcmp(r->buf + r->pos, literals[i], n) == 0) {
                r->pos += n;
                v->type = literal_types[i];
                return true;
            }
        }
        return jread_fail(r, r->pos, "invalid literal (expected true, false or null)");
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return number(r, v);
        return jread_fail(r, r->pos, "expected a value, got %s", show_byte(c, byte));
    }
}

bool jread_end(jread *r, const char *what)
{
    if (r->failed)
        return false;
    ws(r);
    if (r->pos < r->len)
        return jread_fail(r, r->pos, "unexpected characters after the %s", what);
    return true;
}

/* ---- numbers ---- */

/* Sign and magnitude of an integer's text; false beyond UINT64_MAX. */
static bool magnitude(const jvalue *v, bool *ret_neg, uint64_t *ret_mag)
{
    if (v->type != JT_NUMBER || !v->integer)
        return false;
    size_t i = 0;
    bool neg = v->s[0] == '-';
    if (neg)
        i++;
    uint64_t mag = 0;
    for (; i < v->len; i++) {
        unsigned d = (unsigned)(v->s[i] - '0');
        if (mag > (UINT64_MAX - d) / 10)
            return false;
        mag = mag * 10 + d;
    }
    *ret_neg = neg && mag != 0; /* -0 is 0 */
    *ret_mag = mag;
    return true;
}

bool jvalue_int64(const jvalue *v, int64_t *ret)
{
    bool neg;
    uint64_t mag;
    if (!magnitude(v, &neg, &mag) || mag > (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX))
        return false;
    *ret = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
    return true;
}

bool jvalue_uint64(const jvalue *v, uint64_t *ret)
{
    bool neg;
    uint64_t mag;
    if (!magnitude(v, &neg, &mag) || neg)
        return false;
    *ret = mag;
    return true;
}

bool jvalue_double(const jvalue *v, double *ret)
{
    if (v->type != JT_NUMBER)
        return false;
    char tmp[64];
    const char *text = v->s;
    if (v->len < sizeof(tmp)) {
        memcpy(tmp, v->s, v->len);
        tmp[v->len] = '\0';
        text = tmp;
    }
    /* a longer number: strtod stops where the grammar did (a non-number
     * byte, or the NUL at buf[len]) */
    double d = strtod(text, NULL);
    if (!isfinite(d))
        return false;
    *ret = d;
    return true;
}

bool jvalue_is(const jvalue *v, const char *lit)
{
    size_t n = strlen(lit);
    return v->type == JT_STRING && v->len == n && memcmp(v->s, lit, n) == 0;
}

/* ---- whole texts ---- */

size_t json_compact(const char *json, size_t len, char *out)
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

size_t json_depth_exceeded(const char *s, size_t len, int max)
{
    int depth = 0;
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
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
            if (++depth > max)
                return i;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return (size_t)-1;
}
