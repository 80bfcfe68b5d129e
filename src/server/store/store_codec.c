/* The values the store keeps in its own formats (store_codec.h). */
#include "store_codec.h"

#include <errno.h>

bool store_codec_get_uvarint(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t c = *(*p)++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *ret = v;
            return true;
        }
    }
    return false;
}

void store_codec_put_uvarint(uint8_t *p, size_t *o, uint64_t v)
{
    while (v >= 0x80) {
        p[(*o)++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[(*o)++] = (uint8_t)v;
}

int store_codec_subday_sketches(const uint8_t *blob, size_t len, void (*fn)(void *ctx, int64_t id, const uint8_t *p, size_t n),
                          void *ctx)
{
    const uint8_t *p = blob, *end = blob ? blob + len : NULL;
    uint64_t n, id, size;
    if (!blob)
        return 0;
    if (!store_codec_get_uvarint(&p, end, &n))
        return -EBADMSG;
    for (uint64_t k = 0; k < n; k++) {
        if (!store_codec_get_uvarint(&p, end, &id) || !store_codec_get_uvarint(&p, end, &size) || size > (uint64_t)(end - p))
            return -EBADMSG;
        fn(ctx, (int64_t)id, p, (size_t)size);
        p += size;
    }
    return p == end ? 0 : -EBADMSG;
}

int store_codec_trace_chunk_find(const uint8_t *data, size_t len, int64_t t_lo, int64_t t,
                           void (*fn)(void *ctx, int tbl, int64_t rid), void *ctx)
{
    const uint8_t *p = data, *end = data + len;
    uint64_t n, d, tbl;
    if (!data || !store_codec_get_uvarint(&p, end, &n) || n > len)
        return -EBADMSG;
    uint64_t cur = (uint64_t)t_lo;
    for (uint64_t k = 0; k < n; k++) {
        if (!store_codec_get_uvarint(&p, end, &d) || !store_codec_get_uvarint(&p, end, &tbl) || end - p < 8)
            return -EBADMSG;
        cur += d;
        if ((int64_t)cur > t)
            return 0; /* sorted: none after */
        uint64_t rid = 0;
        for (int x = 0; x < 8; x++)
            rid |= (uint64_t)p[x] << (8 * x);
        p += 8;
        if ((int64_t)cur == t && tbl < STORE_CODEC_MAX_TABLE)
            fn(ctx, (int)tbl, (int64_t)rid);
    }
    return 0;
}

