/* RowBinary, ClickHouse's binary row format: what the store writes into
 * its inserts and reads from its answers (rb.c). Little-endian integers,
 * LEB128 lengths, Strings as length and bytes. */
#ifndef PACER_SERVER_RB_H
#define PACER_SERVER_RB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rb_buf {
    uint8_t *p;
    size_t len, cap;
    bool failed; /* out of memory: the content is incomplete */
} rb_buf;

void rb_init(rb_buf *b);
void rb_free(rb_buf *b);
void rb_u8(rb_buf *b, uint8_t v);
void rb_u16(rb_buf *b, uint16_t v);
void rb_u32(rb_buf *b, uint32_t v);
void rb_u64(rb_buf *b, uint64_t v);
void rb_i64(rb_buf *b, int64_t v);
void rb_f64(rb_buf *b, double v);
void rb_str(rb_buf *b, const void *s, size_t n); /* String: length, bytes */
void rb_fixed(rb_buf *b, const void *s, size_t n); /* FixedString(n) */
void rb_varint(rb_buf *b, uint64_t v);

/* Reads an answer in RowBinary; a read past the end sets bad and gives 0. */
typedef struct rb_reader {
    const uint8_t *p;
    size_t len, pos;
    bool bad;
} rb_reader;

void rb_reader_init(rb_reader *r, const void *p, size_t len);
bool rb_more(const rb_reader *r);
uint8_t rb_get_u8(rb_reader *r);
uint16_t rb_get_u16(rb_reader *r);
uint32_t rb_get_u32(rb_reader *r);
uint64_t rb_get_u64(rb_reader *r);
int64_t rb_get_i64(rb_reader *r);
double rb_get_f64(rb_reader *r);
uint64_t rb_get_varint(rb_reader *r);
/* A String: its bytes (in the answer, not NUL-terminated) and length. */
const char *rb_get_str(rb_reader *r, size_t *ret_len);
const uint8_t *rb_get_fixed(rb_reader *r, size_t n);

#endif
