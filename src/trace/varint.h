/* LEB128 varints and zigzag, shared by the trace writer and reader. */
#ifndef PACER_TRACE_VARINT_H
#define PACER_TRACE_VARINT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#define PT_VARINT_MAX 10

static inline uint64_t pt_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t pt_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Writes v at p (room for PT_VARINT_MAX bytes); returns the byte after it. */
static inline uint8_t *pt_put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Reads a varint from [*p, end). Returns 0 and advances *p, or -EBADMSG
 * when the input ends inside it or it is longer than 64 bits. */
static inline int pt_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
    uint64_t v = 0;
    const uint8_t *q = *p;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (q >= end)
            return -EBADMSG;
        uint8_t b = *q++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *p = q;
            *ret = v;
            return 0;
        }
    }
    return -EBADMSG;
}

#endif
