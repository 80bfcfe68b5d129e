/* A growable buffer for writing JSON text: records and events are built with
 * it. Allocation failure is sticky: once a write fails, jbuf.failed is set,
 * further writes are ignored and the caller drops the result. */
#ifndef PACER_CORE_JSON_OUT_H
#define PACER_CORE_JSON_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct jbuf {
    char *data;   /* NUL-terminated while !failed */
    size_t len;
    size_t cap;
    bool failed;
    bool need_comma; /* a member was written at the current nesting level */
} jbuf;

void jbuf_init(jbuf *b);
void jbuf_free(jbuf *b);
/* Hands the text to the caller (who frees it) and resets the buffer.
 * Returns NULL when a write failed. */
char *jbuf_steal(jbuf *b, size_t *ret_len);

void jbuf_raw(jbuf *b, const char *s, size_t len);
void jbuf_puts(jbuf *b, const char *s);
/* A JSON string literal, quotes included; invalid UTF-8 bytes become U+FFFD. */
void jbuf_str(jbuf *b, const char *s);

/* Object building: jbuf_open('{') / jbuf_close('}'), members by key. */
void jbuf_open(jbuf *b, char brace);
void jbuf_close(jbuf *b, char brace);
void jbuf_key(jbuf *b, const char *key);
void jbuf_kv_str(jbuf *b, const char *key, const char *val);
void jbuf_kv_i64(jbuf *b, const char *key, int64_t val);
void jbuf_kv_u64(jbuf *b, const char *key, uint64_t val);
void jbuf_kv_bool(jbuf *b, const char *key, bool val);
/* Milliseconds with 3 decimals from a nanosecond count. */
void jbuf_kv_ms(jbuf *b, const char *key, int64_t ns);
/* An array element separator for values written inside '[' ... ']'. */
void jbuf_elem(jbuf *b);

#endif
