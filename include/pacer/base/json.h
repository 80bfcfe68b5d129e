/* JSON for every component of pacer: one writer (jbuf) and one reader
 * (jread). Part of the base component: libc only, not installed.
 *
 * Writer. A jbuf builds JSON text, either in a growable heap buffer
 * (jbuf_init) or in a caller's fixed buffer (jbuf_init_fixed) with snprintf
 * semantics: what does not fit is counted in len but not stored, and the
 * text stays NUL-terminated. Allocation failure is sticky: once a write
 * fails, `failed` is set and further writes are ignored. Strings are written
 * as valid JSON whatever the input: invalid UTF-8 bytes become U+FFFD.
 *
 * Reader. A pull parser over a caller's mutable buffer: strings are
 * unescaped in place (an unescaped string is never longer than its JSON
 * text, so it always fits where it was) and NUL-terminated there, so a
 * value's text points into the buffer and stays valid while the buffer
 * does. Nothing is allocated. The buffer needs one byte beyond `len` (a NUL
 * is written at buf[len]). The first error stops the reader: every later
 * call fails, and `message` / `error_at` (a byte offset) say what and where.
 *
 * Neither is thread-safe; a jbuf or a reader is used by one thread at a time.
 */
#ifndef PACER_BASE_JSON_H
#define PACER_BASE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- writer ---- */

typedef struct jbuf {
    char *data;      /* NUL-terminated while !failed */
    size_t len;      /* bytes written (fixed mode: also those that did not fit) */
    size_t cap;
    bool failed;     /* a heap allocation failed: the text is incomplete */
    bool fixed;      /* data is the caller's buffer, never grown or freed */
    bool need_comma; /* a member was written at the current nesting level */
} jbuf;

void jbuf_init(jbuf *b);
/* Writes into buf (cap bytes, cap > 0) with snprintf semantics. */
void jbuf_init_fixed(jbuf *b, char *buf, size_t cap);
void jbuf_free(jbuf *b);
/* Hands the heap text to the caller (who frees it) and resets the buffer.
 * Returns NULL when a write failed (or for a fixed buffer). */
char *jbuf_steal(jbuf *b, size_t *ret_len);
/* Fixed mode: whether everything written fitted. */
bool jbuf_fits(const jbuf *b);

void jbuf_raw(jbuf *b, const char *s, size_t len);
void jbuf_puts(jbuf *b, const char *s);
void jbuf_printf(jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Structure: jbuf_open('{' or '[') / jbuf_close('}' or ']'). Inside an
 * object, jbuf_key() then one value; inside an array, values one after the
 * other. Separators are written as needed. */
void jbuf_open(jbuf *b, char brace);
void jbuf_close(jbuf *b, char brace);
void jbuf_key(jbuf *b, const char *key);

/* Values. */
void jbuf_null(jbuf *b);
void jbuf_bool(jbuf *b, bool v);
void jbuf_i64(jbuf *b, int64_t v);
void jbuf_u64(jbuf *b, uint64_t v);
/* The shortest text that reads back as v; null for NaN and infinities
 * (JSON has no such numbers). */
void jbuf_double(jbuf *b, double v);
/* Milliseconds with exactly 3 decimals from a nanosecond count, rounded to
 * the nearest microsecond in integer arithmetic (no binary rounding). */
void jbuf_ms(jbuf *b, int64_t ns);
/* A string (quotes included); NULL writes "". */
void jbuf_str(jbuf *b, const char *s);
void jbuf_strn(jbuf *b, const char *s, size_t len);

/* Members: key and value. */
void jbuf_kv_str(jbuf *b, const char *key, const char *val);
void jbuf_kv_i64(jbuf *b, const char *key, int64_t val);
void jbuf_kv_u64(jbuf *b, const char *key, uint64_t val);
void jbuf_kv_bool(jbuf *b, const char *key, bool val);
void jbuf_kv_double(jbuf *b, const char *key, double val);
void jbuf_kv_ms(jbuf *b, const char *key, int64_t ns);
void jbuf_kv_null(jbuf *b, const char *key);

/* ---- reader ---- */

#define JREAD_MAX_DEPTH 64

enum {
    JREAD_NO_NUL = 1, /* \u0000 in a string is an error (C strings cannot hold it) */
    JREAD_LINE = 2,   /* the input is one line: messages say "column N" (1-based)
                         and "end of line"; otherwise "byte N" and "end of input" */
    JREAD_NUMBERS_IN_RANGE = 4, /* every number, also inside skipped values: an
                                   integer within 64 bits, a real finite */
};

typedef enum jtype {
    JT_NONE = 0, /* nothing: end of input, or an error */
    JT_STRING,
    JT_NUMBER,
    JT_TRUE,
    JT_FALSE,
    JT_NULL,
    JT_OBJECT,
    JT_ARRAY,
} jtype;

typedef struct jvalue {
    jtype type;
    /* JT_STRING: the decoded bytes, NUL-terminated in the buffer (they may
     * hold a NUL of their own without JREAD_NO_NUL: len says how many).
     * JT_NUMBER: its text in the buffer, not terminated. Containers (after
     * jread_value): the whole text of the object or array in `src`, or
     * NULL when the reader has no src. */
    const char *s;
    size_t len;
    bool integer; /* JT_NUMBER: no fraction and no exponent */
    size_t at;    /* byte offset where the value began */
} jvalue;

typedef struct jread {
    char *buf;
    const char *src; /* optional: the unmodified input, for container texts */
    size_t len, pos;
    int depth;
    unsigned flags;
    uint64_t seen; /* bit d: a member or element was read at depth d */
    bool failed;
    size_t error_at;
    char message[160];
} jread;

/* buf holds len bytes of input and room for one more. src, when not NULL,
 * is the same input left unmodified (container values point into it). */
void jread_init(jread *r, char *buf, size_t len, const char *src, unsigned flags);

/* The type of the value at the reader's position (whitespace skipped):
 * JT_NONE at the end of the input or after an error. Consumes nothing. */
jtype jread_peek(jread *r);

/* Reads the value at the position: scalars into *v, objects and arrays
 * checked and skipped whole (v->s/len: their text). Returns false on a
 * syntax error or when the nesting passes JREAD_MAX_DEPTH. */
bool jread_value(jread *r, jvalue *v);

/* Objects: jread_enter_object() consumes '{' (false, with an error, when
 * the value there is not an object); then each jread_member() call gives
 * the next key and leaves the reader at its value, which the caller must
 * read (jread_value, or enter it). Returns 1 for a member, 0 after the
 * closing '}', -1 on an error. */
bool jread_enter_object(jread *r);
int jread_member(jread *r, const char **ret_key, size_t *ret_len);

/* Arrays: the same with elements. jread_element() returns 1 when a value
 * follows (the caller reads it), 0 after the closing ']', -1 on an error. */
bool jread_enter_array(jread *r);
int jread_element(jread *r);

/* Checks that only whitespace follows; else an error "unexpected characters
 * after the <what>" (e.g. "object"). */
bool jread_end(jread *r, const char *what);

/* Records an error at byte `at` (the first error wins) and returns false. */
bool jread_fail(jread *r, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Numbers. Each returns true and stores the value when v is a number of
 * that kind: int64/uint64 need an integer in range; double accepts any
 * finite number. */
bool jvalue_int64(const jvalue *v, int64_t *ret);
bool jvalue_uint64(const jvalue *v, uint64_t *ret);
bool jvalue_double(const jvalue *v, double *ret);
/* A string value equal to lit. */
bool jvalue_is(const jvalue *v, const char *lit);

/* Writes json (len bytes of valid JSON text) without the whitespace outside
 * strings into out, which has room for len + 1 bytes; NUL-terminates it and
 * returns its length. */
size_t json_compact(const char *json, size_t len, char *out);

/* Checks the nesting depth of len bytes of text by a linear scan (strings
 * skipped); returns the offset of the first '{' or '[' deeper than max, or
 * (size_t)-1 when there is none. */
size_t json_depth_exceeded(const char *s, size_t len, int max);

#endif
