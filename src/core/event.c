/* Event lines: a strict reader and the canonical writer (include/pacer/event.h).
 *
 * The reader is a small JSON parser for exactly one object per line. It does
 * not build a tree; it makes one pass over the bytes and keeps, for each
 * member whose name belongs to the event vocabulary, a description of its
 * value (a decoded string, or the text of a number). Everything else is
 * validated and dropped. Only once the whole line is known to be well-formed
 * JSON does it look at "ev" and convert the members that event requires.
 *
 * Invariants of the reader:
 *  1. No byte at or beyond `len` is read; the line need not be NUL-terminated.
 *  2. Nothing is allocated. Decoded strings go to the caller's scratch buffer
 *     at reader.used. A string literal spanning k input bytes (quotes
 *     included) decodes to at most k - 2 bytes plus a NUL, so the scratch in
 *     use never exceeds the input consumed, and len + 1 bytes always suffice.
 *     Strings that are not kept (member names, unknown values) are decoded at
 *     reader.used without advancing it, and get overwritten.
 *  3. Nesting (the event object is level 1) is limited to MAX_DEPTH levels,
 *     which also bounds the recursion of read_value()/skip_container().
 *  4. A vocabulary member that appears twice is an error whatever the event;
 *     a vocabulary member the event does not use is ignored like any unknown
 *     member (its value is still checked to be valid JSON).
 *  5. Strings handed to the caller are valid UTF-8 without NUL bytes (a
 *     \u0000 in a kept field is refused: it could not survive as a C string),
 *     so pacer_event_format() writes them back byte for byte.
 *
 * Errors are one line in the caller's err buffer: syntax errors start with
 * "invalid JSON at column N: " (N is the 1-based byte offset); field errors
 * name the field. Both return -EINVAL.
 */
#include <pacer/event.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MAX_DEPTH 64

static const char *const event_names[] = {
    [PACER_EV_LAUNCH] = "launch",
    [PACER_EV_AGENT_INIT] = "agent_init",
    [PACER_EV_MAIN] = "main",
    [PACER_EV_APP_CREATED] = "app_created",
    [PACER_EV_PAGE_CREATE] = "page_create",
    [PACER_EV_PAGE_VIEW_CREATED] = "page_view_created",
    [PACER_EV_PAGE_DRAW] = "page_draw",
    [PACER_EV_PAGE_SELECT] = "page_select",
    [PACER_EV_PAGE_SCROLL] = "page_scroll",
    [PACER_EV_PAGE_DESTROY] = "page_destroy",
    [PACER_EV_API_START] = "api_start",
    [PACER_EV_API_END] = "api_end",
};

/* Vocabulary members, in the order the writer emits them. */
enum field { F_T, F_EV, F_PAGE, F_CLASS, F_KIND, F_URL, F_REQ, F_STATUS, F_COUNT };

static const char *const field_names[F_COUNT] = {
    [F_T] = "t",         [F_EV] = "ev",   [F_PAGE] = "page", [F_CLASS] = "class",
    [F_KIND] = "kind",   [F_URL] = "url", [F_REQ] = "req",   [F_STATUS] = "status",
};

#define FB(f) (1u << (f))
/* Members each event requires besides "t" and "ev". */
static const unsigned event_fields[] = {
    [PACER_EV_PAGE_CREATE] = FB(F_PAGE) | FB(F_CLASS) | FB(F_KIND),
    [PACER_EV_PAGE_VIEW_CREATED] = FB(F_PAGE),
    [PACER_EV_PAGE_DRAW] = FB(F_PAGE),
    [PACER_EV_PAGE_SELECT] = FB(F_PAGE),
    [PACER_EV_PAGE_SCROLL] = FB(F_PAGE),
    [PACER_EV_PAGE_DESTROY] = FB(F_PAGE),
    [PACER_EV_API_START] = FB(F_URL) | FB(F_REQ),
    [PACER_EV_API_END] = FB(F_URL) | FB(F_REQ) | FB(F_STATUS),
};

static const char *const kind_names[] = {
    [PACER_PAGE_WINDOW] = "window",
    [PACER_PAGE_PAGE] = "page",
};

PACER_API const char *pacer_event_name(pacer_event_type type)
{
    if ((int)type < PACER_EV_FIRST || (int)type > PACER_EV_LAST)
        return NULL;
    return event_names[type];
}

/* Length of the well-formed UTF-8 sequence at s (n > 0 bytes available), or
 * 0 when it is not one (overlong forms, surrogates, > U+10FFFF, truncated). */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    unsigned char lo = 0x80, hi = 0xbf; /* range of the second byte */
    size_t len;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

/* ---- reader ---------------------------------------------------------- */

typedef enum jkind {
    J_NONE = 0,  /* member absent */
    J_STRING,
    J_NUMBER,
    J_LITERAL,   /* true, false, null */
    J_CONTAINER, /* object or array */
} jkind;

typedef struct jvalue {
    jkind kind;
    const char *str; /* J_STRING: decoded bytes (NUL-terminated) in scratch */
    size_t str_len;
    size_t start, end; /* J_NUMBER: its text in the line */
    bool integer;      /* J_NUMBER: no fraction, no exponent */
} jvalue;

typedef struct reader {
    const unsigned char *s;
    size_t len;
    size_t pos;
    char *scratch;
    size_t used; /* scratch bytes holding kept strings */
    char *err;
    size_t err_len;
} reader;

static void set_error(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_error(char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;
    if (!err || err_len == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

static int syntax_error(reader *r, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records "invalid JSON at column N: ..." and returns -EINVAL. */
static int syntax_error(reader *r, size_t at, const char *fmt, ...)
{
    va_list ap;
    int n;
    if (!r->err || r->err_len == 0)
        return -EINVAL;
    n = snprintf(r->err, r->err_len, "invalid JSON at column %zu: ", at + 1);
    if (n >= 0 && (size_t)n < r->err_len) {
        va_start(ap, fmt);
        vsnprintf(r->err + n, r->err_len - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
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

/* Copies untrusted bytes into a message, keeping it one printable line:
 * '"' and '\' are escaped, other bytes outside ASCII 0x20-0x7e become \xNN,
 * and long input is cut with "...". */
static void quote_for_message(char *out, size_t out_len, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0, limit = n > 48 ? 48 : n;
    for (size_t i = 0; i < limit && o + 5 < out_len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c >= 0x20 && c < 0x7f) {
            out[o++] = (char)c;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    if (limit < n && o + 4 < out_len) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

static void skip_ws(reader *r)
{
    while (r->pos < r->len) {
        unsigned char c = r->s[r->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
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

/* Reads the 4 hex digits of the \u escape at `at` (which holds '\'). */
static int read_hex4(reader *r, size_t at, uint32_t *ret)
{
    uint32_t v = 0;
    if (r->len - at < 6)
        return syntax_error(r, at, "invalid \\u escape: expected 4 hex digits");
    for (size_t i = 2; i < 6; i++) {
        int d = hex_digit(r->s[at + i]);
        if (d < 0)
            return syntax_error(r, at, "invalid \\u escape: expected 4 hex digits");
        v = (v << 4) | (uint32_t)d;
    }
    *ret = v;
    return 0;
}

static size_t utf8_encode(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Decodes the \u escape (one code point, or a surrogate pair) at r->pos into
 * out; returns the number of bytes written or -EINVAL. */
static int read_u_escape(reader *r, char *out)
{
    size_t at = r->pos;
    uint32_t cp, lo;
    int rc = read_hex4(r, at, &cp);
    if (rc < 0)
        return rc;
    r->pos += 6;
    if (cp >= 0xdc00 && cp <= 0xdfff)
        return syntax_error(r, at, "unpaired low surrogate \\u%04" PRIx32, cp);
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (r->len - r->pos < 2 || r->s[r->pos] != '\\' || r->s[r->pos + 1] != 'u')
            return syntax_error(r, at, "unpaired high surrogate \\u%04" PRIx32, cp);
        rc = read_hex4(r, r->pos, &lo);
        if (rc < 0)
            return rc;
        if (lo < 0xdc00 || lo > 0xdfff)
            return syntax_error(r, at, "unpaired high surrogate \\u%04" PRIx32, cp);
        r->pos += 6;
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    return (int)utf8_encode(cp, out);
}

/* Reads the string literal at r->pos (which holds '"') and decodes it into
 * scratch at r->used, NUL-terminated. With `keep` the bytes stay reserved
 * (r->used advances); without, the next string overwrites them. */
static int read_string(reader *r, bool keep, const char **ret_str, size_t *ret_len)
{
    size_t open = r->pos;
    char *out = r->scratch + r->used;
    size_t n = 0;
    char buf[16];

    r->pos++;
    for (;;) {
        if (r->pos >= r->len)
            return syntax_error(r, r->pos, "unterminated string (opened at column %zu)",
                                open + 1);
        unsigned char c = r->s[r->pos];
        if (c == '"') {
            r->pos++;
            break;
        }
        if (c == '\\') {
            if (r->len - r->pos < 2)
                return syntax_error(r, r->len, "unterminated string (opened at column %zu)",
                                    open + 1);
            unsigned char e = r->s[r->pos + 1];
            char simple = 0;
            switch (e) {
            case '"': simple = '"'; break;
            case '\\': simple = '\\'; break;
            case '/': simple = '/'; break;
            case 'b': simple = '\b'; break;
            case 'f': simple = '\f'; break;
            case 'n': simple = '\n'; break;
            case 'r': simple = '\r'; break;
            case 't': simple = '\t'; break;
            case 'u': {
                int k = read_u_escape(r, out + n);
                if (k < 0)
                    return k;
                n += (size_t)k;
                continue;
            }
            default:
                return syntax_error(r, r->pos, "invalid escape: backslash followed by %s",
                                    show_byte(e, buf));
            }
            out[n++] = simple;
            r->pos += 2;
        } else if (c < 0x20) {
            return syntax_error(r, r->pos,
                                "control character 0x%02x in string (must be escaped)", c);
        } else if (c < 0x80) {
            out[n++] = (char)c;
            r->pos++;
        } else {
            size_t k = utf8_seq_len(r->s + r->pos, r->len - r->pos);
            if (k == 0)
                return syntax_error(r, r->pos, "invalid UTF-8 (byte 0x%02x) in string", c);
            memcpy(out + n, r->s + r->pos, k);
            n += k;
            r->pos += k;
        }
    }
    out[n] = '\0';
    if (keep)
        r->used += n + 1;
    *ret_str = out;
    *ret_len = n;
    return 0;
}

/* Checks the JSON number grammar at r->pos and records its text. */
static int read_number(reader *r, jvalue *v)
{
    size_t start = r->pos;
    bool integer = true;

    if (r->s[r->pos] == '-')
        r->pos++;
    if (r->pos >= r->len || r->s[r->pos] < '0' || r->s[r->pos] > '9')
        return syntax_error(r, r->pos, "expected a digit after '-'");
    if (r->s[r->pos] == '0') {
        r->pos++;
        if (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9')
            return syntax_error(r, r->pos, "leading zeros are not allowed in numbers");
    } else {
        while (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9')
            r->pos++;
    }
    if (r->pos < r->len && r->s[r->pos] == '.') {
        integer = false;
        r->pos++;
        if (r->pos >= r->len || r->s[r->pos] < '0' || r->s[r->pos] > '9')
            return syntax_error(r, r->pos, "expected a digit after '.'");
        while (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9')
            r->pos++;
    }
    if (r->pos < r->len && (r->s[r->pos] == 'e' || r->s[r->pos] == 'E')) {
        integer = false;
        r->pos++;
        if (r->pos < r->len && (r->s[r->pos] == '+' || r->s[r->pos] == '-'))
            r->pos++;
        if (r->pos >= r->len || r->s[r->pos] < '0' || r->s[r->pos] > '9')
            return syntax_error(r, r->pos, "expected a digit in the exponent");
        while (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9')
            r->pos++;
    }
    v->kind = J_NUMBER;
    v->start = start;
    v->end = r->pos;
    v->integer = integer;
    return 0;
}

static int read_value(reader *r, int depth, bool keep, jvalue *v);

/* Reads and drops the object or array at r->pos, whose level is `depth`. */
static int skip_container(reader *r, int depth)
{
    char close = r->s[r->pos] == '{' ? '}' : ']';
    bool object = close == '}';
    jvalue tmp;
    const char *key;
    size_t key_len;
    int rc;

    r->pos++;
    skip_ws(r);
    if (r->pos < r->len && r->s[r->pos] == (unsigned char)close) {
        r->pos++;
        return 0;
    }
    for (;;) {
        skip_ws(r);
        if (object) {
            if (r->pos >= r->len || r->s[r->pos] != '"')
                return syntax_error(r, r->pos, "expected member name");
            rc = read_string(r, false, &key, &key_len);
            if (rc < 0)
                return rc;
            skip_ws(r);
            if (r->pos >= r->len || r->s[r->pos] != ':')
                return syntax_error(r, r->pos, "expected ':' after member name");
            r->pos++;
            skip_ws(r);
        }
        rc = read_value(r, depth + 1, false, &tmp);
        if (rc < 0)
            return rc;
        skip_ws(r);
        if (r->pos < r->len && r->s[r->pos] == ',') {
            r->pos++;
            continue;
        }
        if (r->pos < r->len && r->s[r->pos] == (unsigned char)close) {
            r->pos++;
            return 0;
        }
        return syntax_error(r, r->pos, object ? "expected ',' or '}' after member"
                                              : "expected ',' or ']' after array element");
    }
}

/* Reads the value at r->pos (whitespace already skipped) into *v. `depth` is
 * the level a container here would have. Strings are kept only with `keep`. */
static int read_value(reader *r, int depth, bool keep, jvalue *v)
{
    static const char *const literals[] = {"true", "false", "null"};
    char buf[16];
    int rc;

    memset(v, 0, sizeof(*v));
    if (r->pos >= r->len)
        return syntax_error(r, r->pos, "expected a value, got end of line");
    unsigned char c = r->s[r->pos];
    switch (c) {
    case '"':
        rc = read_string(r, keep, &v->str, &v->str_len);
        if (rc < 0)
            return rc;
        v->kind = J_STRING;
        return 0;
    case '-':
    case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
        return read_number(r, v);
    case '{':
    case '[':
        if (depth > MAX_DEPTH)
            return syntax_error(r, r->pos, "nesting deeper than %d levels", MAX_DEPTH);
        rc = skip_container(r, depth);
        if (rc < 0)
            return rc;
        v->kind = J_CONTAINER;
        return 0;
    case 't':
    case 'f':
    case 'n':
        for (size_t i = 0; i < 3; i++) {
            size_t n = strlen(literals[i]);
            if (c == (unsigned char)literals[i][0] && r->len - r->pos >= n &&
                memcmp(r->s + r->pos, literals[i], n) == 0) {
                r->pos += n;
                v->kind = J_LITERAL;
                return 0;
            }
        }
        return syntax_error(r, r->pos, "invalid literal (expected true, false or null)");
    default:
        return syntax_error(r, r->pos, "expected a value, got %s", show_byte(c, buf));
    }
}

static int lookup_field(const char *name, size_t len)
{
    for (int f = 0; f < F_COUNT; f++)
        if (strlen(field_names[f]) == len && memcmp(field_names[f], name, len) == 0)
            return f;
    return -1;
}

/* Reads the event object, filling fields[] with the vocabulary members. */
static int read_object(reader *r, jvalue fields[F_COUNT])
{
    const char *key;
    size_t key_len;
    jvalue tmp;
    int rc;

    skip_ws(r);
    if (r->pos >= r->len)
        return syntax_error(r, r->pos, "expected '{', got an empty line");
    if (r->s[r->pos] != '{')
        return syntax_error(r, r->pos, "expected '{' at start of event");
    r->pos++;
    skip_ws(r);
    if (r->pos < r->len && r->s[r->pos] == '}') {
        r->pos++;
        goto end;
    }
    for (;;) {
        skip_ws(r);
        if (r->pos >= r->len || r->s[r->pos] != '"')
            return syntax_error(r, r->pos, "expected member name");
        size_t key_at = r->pos;
        rc = read_string(r, false, &key, &key_len);
        if (rc < 0)
            return rc;
        int f = lookup_field(key, key_len);
        skip_ws(r);
        if (r->pos >= r->len || r->s[r->pos] != ':')
            return syntax_error(r, r->pos, "expected ':' after member name");
        r->pos++;
        skip_ws(r);
        if (f >= 0) {
            if (fields[f].kind != J_NONE) {
                set_error(r->err, r->err_len, "duplicate field \"%s\" at column %zu",
                          field_names[f], key_at + 1);
                return -EINVAL;
            }
            rc = read_value(r, 2, true, &fields[f]);
        } else {
            rc = read_value(r, 2, false, &tmp);
        }
        if (rc < 0)
            return rc;
        skip_ws(r);
        if (r->pos < r->len && r->s[r->pos] == ',') {
            r->pos++;
            continue;
        }
        if (r->pos < r->len && r->s[r->pos] == '}') {
            r->pos++;
            break;
        }
        return syntax_error(r, r->pos, "expected ',' or '}' after member");
    }
end:
    skip_ws(r);
    if (r->pos < r->len)
        return syntax_error(r, r->pos, "unexpected characters after the object");
    return 0;
}

/* The magnitude and sign of an integer number. Returns -EDOM for a value
 * that is not a JSON integer, -ERANGE beyond UINT64_MAX. */
static int integer_value(const reader *r, const jvalue *v, bool *ret_neg, uint64_t *ret_mag)
{
    size_t i = v->start;
    uint64_t mag = 0;
    bool neg = false;

    if (v->kind != J_NUMBER || !v->integer)
        return -EDOM;
    if (r->s[i] == '-') {
        neg = true;
        i++;
    }
    for (; i < v->end; i++) {
        unsigned d = (unsigned)(r->s[i] - '0');
        if (mag > (UINT64_MAX - d) / 10)
            return neg ? -EDOM : -ERANGE;
        mag = mag * 10 + d;
    }
    *ret_neg = neg && mag != 0; /* -0 is 0 */
    *ret_mag = mag;
    return 0;
}

static int field_u64(const reader *r, enum field f, const jvalue *v, uint64_t *ret)
{
    bool neg;
    uint64_t mag;
    int rc = integer_value(r, v, &neg, &mag);
    if (rc == -ERANGE) {
        set_error(r->err, r->err_len, "field \"%s\" is out of range (maximum %" PRIu64 ")",
                  field_names[f], UINT64_MAX);
        return -EINVAL;
    }
    if (rc < 0 || neg) {
        set_error(r->err, r->err_len, "field \"%s\" must be an unsigned integer",
                  field_names[f]);
        return -EINVAL;
    }
    *ret = mag;
    return 0;
}

static int field_t(const reader *r, const jvalue *v, int64_t *ret)
{
    bool neg;
    uint64_t mag;
    int rc = integer_value(r, v, &neg, &mag);
    if (rc == 0 && !neg && mag > (uint64_t)INT64_MAX)
        rc = -ERANGE;
    if (rc == -ERANGE) {
        set_error(r->err, r->err_len, "field \"t\" is out of range (maximum %" PRId64 ")",
                  INT64_MAX);
        return -EINVAL;
    }
    if (rc < 0 || neg) {
        set_error(r->err, r->err_len, "field \"t\" must be a non-negative integer");
        return -EINVAL;
    }
    *ret = (int64_t)mag;
    return 0;
}

static int field_int(const reader *r, enum field f, const jvalue *v, int *ret)
{
    bool neg;
    uint64_t mag;
    int rc = integer_value(r, v, &neg, &mag);
    if (rc == -EDOM && v->kind == J_NUMBER && v->integer)
        rc = -ERANGE; /* a negative integer too long for 64 bits */
    if (rc == 0 && mag > (neg ? (uint64_t)INT_MAX + 1 : (uint64_t)INT_MAX))
        rc = -ERANGE;
    if (rc == -ERANGE) {
        set_error(r->err, r->err_len, "field \"%s\" is out of range (%d to %d)",
                  field_names[f], INT_MIN, INT_MAX);
        return -EINVAL;
    }
    if (rc < 0) {
        set_error(r->err, r->err_len, "field \"%s\" must be an integer", field_names[f]);
        return -EINVAL;
    }
    *ret = neg ? (int)(-(int64_t)mag) : (int)mag;
    return 0;
}

static int field_string(const reader *r, enum field f, const jvalue *v, const char **ret)
{
    if (v->kind != J_STRING || v->str_len == 0) {
        set_error(r->err, r->err_len, "field \"%s\" must be a non-empty string",
                  field_names[f]);
        return -EINVAL;
    }
    if (memchr(v->str, '\0', v->str_len)) {
        set_error(r->err, r->err_len, "field \"%s\" must not contain \\u0000", field_names[f]);
        return -EINVAL;
    }
    *ret = v->str;
    return 0;
}

/* Turns the vocabulary members into an event of the type "ev" names. */
static int build_event(const reader *r, const jvalue fields[F_COUNT], pacer_event *ev)
{
    const jvalue *name = &fields[F_EV];
    char quoted[256];
    int type = 0;
    int rc;

    if (name->kind == J_NONE) {
        set_error(r->err, r->err_len, "field \"ev\" is missing");
        return -EINVAL;
    }
    if (name->kind != J_STRING) {
        set_error(r->err, r->err_len, "field \"ev\" must be a string");
        return -EINVAL;
    }
    for (int i = PACER_EV_FIRST; i <= PACER_EV_LAST; i++)
        if (strlen(event_names[i]) == name->str_len &&
            memcmp(event_names[i], name->str, name->str_len) == 0)
            type = i;
    if (!type) {
        quote_for_message(quoted, sizeof(quoted), name->str, name->str_len);
        set_error(r->err, r->err_len, "unknown event \"%s\"", quoted);
        return -EINVAL;
    }

    memset(ev, 0, sizeof(*ev));
    ev->type = (pacer_event_type)type;
    unsigned need = FB(F_T) | event_fields[type];
    for (int f = 0; f < F_COUNT; f++) {
        if (!(need & FB(f)))
            continue;
        if (fields[f].kind == J_NONE) {
            set_error(r->err, r->err_len, "missing field \"%s\" for event \"%s\"",
                      field_names[f], event_names[type]);
            return -EINVAL;
        }
        switch ((enum field)f) {
        case F_T:
            rc = field_t(r, &fields[f], &ev->t_ns);
            break;
        case F_PAGE:
            rc = field_u64(r, F_PAGE, &fields[f], &ev->page);
            break;
        case F_REQ:
            rc = field_u64(r, F_REQ, &fields[f], &ev->req);
            break;
        case F_STATUS:
            rc = field_int(r, F_STATUS, &fields[f], &ev->status);
            break;
        case F_CLASS:
            rc = field_string(r, F_CLASS, &fields[f], &ev->class_name);
            break;
        case F_URL:
            rc = field_string(r, F_URL, &fields[f], &ev->url);
            break;
        case F_KIND: {
            const jvalue *v = &fields[f];
            rc = -EINVAL;
            for (size_t k = 0; k < sizeof(kind_names) / sizeof(kind_names[0]); k++)
                if (v->kind == J_STRING && strlen(kind_names[k]) == v->str_len &&
                    memcmp(kind_names[k], v->str, v->str_len) == 0) {
                    ev->kind = (pacer_page_kind)k;
                    rc = 0;
                }
            if (rc < 0)
                set_error(r->err, r->err_len, "field \"kind\" must be \"window\" or \"page\"");
            break;
        }
        default:
            rc = 0;
            break;
        }
        if (rc < 0)
            return rc;
    }
    return 0;
}

PACER_API int pacer_event_parse(const char *line, size_t len, char *scratch, pacer_event *ret,
                                char *err, size_t err_len)
{
    jvalue fields[F_COUNT];
    pacer_event ev;
    reader r = {
        .s = (const unsigned char *)line,
        .len = len,
        .scratch = scratch,
        .err = err,
        .err_len = err_len,
    };
    int rc;

    if (err && err_len)
        err[0] = '\0';
    if ((!line && len) || !scratch || !ret) {
        set_error(err, err_len, "invalid arguments to pacer_event_parse");
        return -EINVAL;
    }
    memset(fields, 0, sizeof(fields));
    rc = read_object(&r, fields);
    if (rc < 0)
        return rc;
    rc = build_event(&r, fields, &ev);
    if (rc < 0)
        return rc;
    *ret = ev;
    return 0;
}

/* ---- writer ---------------------------------------------------------- */

/* Output with snprintf semantics: `len` counts everything, bytes beyond the
 * buffer are dropped. */
typedef struct sink {
    char *buf;
    size_t cap;
    size_t len;
} sink;

static void put(sink *s, const char *p, size_t n)
{
    if (s->len < s->cap) {
        size_t room = s->cap - s->len;
        memcpy(s->buf + s->len, p, n < room ? n : room);
    }
    s->len = n > SIZE_MAX - s->len ? SIZE_MAX : s->len + n;
}

static void put_str(sink *s, const char *str)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)str;
    size_t n = strlen(str);
    size_t i = 0;

    put(s, "\"", 1);
    while (i < n) {
        size_t run = i;
        while (i < n && p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' && p[i] != '\\')
            i++;
        put(s, (const char *)p + run, i - run);
        if (i == n)
            break;
        unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            put(s, esc, 2);
            i++;
        } else if (c < 0x20) {
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            switch (c) {
            case '\n': put(s, "\\n", 2); break;
            case '\r': put(s, "\\r", 2); break;
            case '\t': put(s, "\\t", 2); break;
            case '\b': put(s, "\\b", 2); break;
            case '\f': put(s, "\\f", 2); break;
            default: put(s, esc, 6); break;
            }
            i++;
        } else {
            size_t k = utf8_seq_len(p + i, n - i);
            if (k == 0) {
                put(s, "\\ufffd", 6); /* cannot round-trip; see event.h */
                i++;
            } else {
                put(s, (const char *)p + i, k);
                i += k;
            }
        }
    }
    put(s, "\"", 1);
}

static void put_key(sink *s, const char *key)
{
    put(s, ",\"", 2);
    put(s, key, strlen(key));
    put(s, "\":", 2);
}

static void put_u64(sink *s, const char *key, uint64_t v)
{
    char num[24];
    int n = snprintf(num, sizeof(num), "%" PRIu64, v);
    put_key(s, key);
    put(s, num, (size_t)n);
}

PACER_API int pacer_event_format(const pacer_event *ev, char *buf, size_t buf_len)
{
    sink s = {.buf = buf, .cap = buf ? buf_len : 0};
    char num[24];
    int n;

    if (buf && buf_len)
        buf[0] = '\0';
    if (!ev || !pacer_event_name(ev->type) || ev->t_ns < 0)
        return -EINVAL;
    unsigned need = event_fields[ev->type];
    if ((need & FB(F_CLASS)) && (!ev->class_name || !ev->class_name[0]))
        return -EINVAL;
    if ((need & FB(F_KIND)) && ev->kind != PACER_PAGE_WINDOW && ev->kind != PACER_PAGE_PAGE)
        return -EINVAL;
    if ((need & FB(F_URL)) && (!ev->url || !ev->url[0]))
        return -EINVAL;

    n = snprintf(num, sizeof(num), "%" PRId64, ev->t_ns);
    put(&s, "{\"t\":", 5);
    put(&s, num, (size_t)n);
    put_key(&s, "ev");
    put_str(&s, event_names[ev->type]);
    if (need & FB(F_PAGE))
        put_u64(&s, "page", ev->page);
    if (need & FB(F_CLASS)) {
        put_key(&s, "class");
        put_str(&s, ev->class_name);
    }
    if (need & FB(F_KIND)) {
        put_key(&s, "kind");
        put_str(&s, kind_names[ev->kind]);
    }
    if (need & FB(F_URL)) {
        put_key(&s, "url");
        put_str(&s, ev->url);
    }
    if (need & FB(F_REQ))
        put_u64(&s, "req", ev->req);
    if (need & FB(F_STATUS)) {
        n = snprintf(num, sizeof(num), "%d", ev->status);
        put_key(&s, "status");
        put(&s, num, (size_t)n);
    }
    put(&s, "}\n", 2);

    if (s.cap)
        s.buf[s.len < s.cap ? s.len : s.cap - 1] = '\0';
    if (s.len > INT_MAX)
        return -EOVERFLOW;
    return (int)s.len;
}
