/* RowBinary (rb.h). */
#include "rb.h"

#include <pacer/base/array.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

void rb_init(rb_buf *b)
{
    memset(b, 0, sizeof *b);
}

void rb_free(rb_buf *b)
{
    free(b->p);
    rb_init(b);
}

static uint8_t *room(rb_buf *b, size_t n)
{
    if (b->failed)
        return NULL;
    if (!ARRAY_GROW(b->p, b->cap, b->len + n, 65536)) {
        b->failed = true;
        return NULL;
    }
    uint8_t *at = b->p + b->len;
    b->len += n;
    return at;
}

static void put_le(rb_buf *b, uint64_t v, int n)
{
    uint8_t *p = room(b, (size_t)n);
    if (p)
        for (int i = 0; i < n; i++)
            p[i] = (uint8_t)(v >> (8 * i));
}

void rb_u8(rb_buf *b, uint8_t v) { put_le(b, v, 1); }
void rb_u16(rb_buf *b, uint16_t v) { put_le(b, v, 2); }
void rb_u32(rb_buf *b, uint32_t v) { put_le(b, v, 4); }
void rb_u64(rb_buf *b, uint64_t v) { put_le(b, v, 8); }
void rb_i64(rb_buf *b, int64_t v) { put_le(b, (uint64_t)v, 8); }

void rb_f64(rb_buf *b, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    put_le(b, u, 8);
}

void rb_varint(rb_buf *b, uint64_t v)
{
    do {
        uint8_t byte = (uint8_t)(v & 0x7f);
        v >>= 7;
        rb_u8(b, (uint8_t)(byte | (v ? 0x80 : 0)));
    } while (v);
}

void rb_str(rb_buf *b, const void *s, size_t n)
{
    rb_varint(b, n);
    uint8_t *p = room(b, n);
    if (p && n)
        memcpy(p, s, n);
}

void rb_fixed(rb_buf *b, const void *s, size_t n)
{
    uint8_t *p = room(b, n);
    if (p && n)
        memcpy(p, s, n);
}

void rb_reader_init(rb_reader *r, const void *p, size_t len)
{
    r->p = p;
    r->len = len;
    r->pos = 0;
    r->bad = false;
}

bool rb_more(const rb_reader *r)
{
    return !r->bad && r->pos < r->len;
}

static const uint8_t *take(rb_reader *r, size_t n)
{
    if (r->bad || r->len - r->pos < n) {
        r->bad = true;
        return NULL;
    }
    const uint8_t *p = r->p + r->pos;
    r->pos += n;
    return p;
}

static uint64_t get_le(rb_reader *r, int n)
{
    const uint8_t *p = take(r, (size_t)n);
    uint64_t v = 0;
    for (int i = 0; p && i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

uint8_t rb_get_u8(rb_reader *r) { return (uint8_t)get_le(r, 1); }
uint16_t rb_get_u16(rb_reader *r) { return (uint16_t)get_le(r, 2); }
uint32_t rb_get_u32(rb_reader *r) { return (uint32_t)get_le(r, 4); }
uint64_t rb_get_u64(rb_reader *r) { return get_le(r, 8); }
int64_t rb_get_i64(rb_reader *r) { return (int64_t)get_le(r, 8); }

double rb_get_f64(rb_reader *r)
{
    uint64_t u = get_le(r, 8);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

uint64_t rb_get_varint(rb_reader *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        const uint8_t *p = take(r, 1);
        if (!p)
            return 0;
        v |= (uint64_t)(*p & 0x7f) << shift;
        if (!(*p & 0x80))
            return v;
    }
    r->bad = true;
    return 0;
}

const char *rb_get_str(rb_reader *r, size_t *ret_len)
{
    uint64_t n = rb_get_varint(r);
    const uint8_t *p = n <= r->len ? take(r, (size_t)n) : (r->bad = true, NULL);
    *ret_len = p ? (size_t)n : 0;
    return p ? (const char *)p : "";
}

const uint8_t *rb_get_fixed(rb_reader *r, size_t n)
{
    return take(r, n);
}
