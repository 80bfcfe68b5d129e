/* Protobuf wire format, written (pbuf.h).
 *
 * A nested message reserves one byte for its length, the size of every
 * length below 128; pb_close moves the content up when the length needs
 * more. Attributes, the most numerous messages, stay under 128 bytes, so
 * the move is paid about once per span, event or data point.
 */
#include "pbuf.h"

#include <pacer/base/utf8.h>

#include <stdlib.h>
#include <string.h>

void pb_free(pbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

void pb_reset(pbuf *b)
{
    b->len = 0;
    b->failed = false;
}

uint8_t *pb_steal(pbuf *b, size_t *ret_len)
{
    uint8_t *p = b->failed ? NULL : b->p;
    if (!p && !b->failed)
        p = malloc(1);
    size_t len = p ? b->len : 0;
    if (!p)
        free(b->p);
    memset(b, 0, sizeof(*b));
    if (ret_len)
        *ret_len = len;
    return p;
}

static bool reserve(pbuf *b, size_t n)
{
    if (b->failed)
        return false;
    if (b->cap - b->len >= n)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < n) {
        if (cap > SIZE_MAX / 2) {
            b->failed = true;
            return false;
        }
        cap *= 2;
    }
    uint8_t *q = realloc(b->p, cap);
    if (!q) {
        b->failed = true;
        return false;
    }
    b->p = q;
    b->cap = cap;
    return true;
}

void pb_raw(pbuf *b, const void *p, size_t n)
{
    if (!n || !reserve(b, n))
        return;
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

static size_t varint_put(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v > 0x7f) {
        out[n++] = (uint8_t)(v & 0x7f) | 0x80;
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

void pb_varint(pbuf *b, uint64_t v)
{
    if (!reserve(b, 10))
        return;
    b->len += varint_put(b->p + b->len, v);
}

void pb_key(pbuf *b, unsigned field, unsigned wire)
{
    pb_varint(b, (uint64_t)field << 3 | wire);
}

void pb_uint(pbuf *b, unsigned field, uint64_t v)
{
    pb_key(b, field, PB_VARINT);
    pb_varint(b, v);
}

void pb_fixed64(pbuf *b, unsigned field, uint64_t v)
{
    uint8_t out[8];
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)(v >> (8 * i));
    pb_key(b, field, PB_I64);
    pb_raw(b, out, 8);
}

void pb_double(pbuf *b, unsigned field, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    pb_fixed64(b, field, u);
}

void pb_bytes(pbuf *b, unsigned field, const void *p, size_t n)
{
    pb_key(b, field, PB_LEN);
    pb_varint(b, n);
    pb_raw(b, p, n);
}

size_t pb_utf8_clean(const char *s, size_t n, char *out)
{
    /* as json_write.c's put_string: a byte that begins no well-formed
     * sequence is one U+FFFD (3 bytes) */
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = p[i] < 0x80 ? 1 : utf8_seq_len(p + i, n - i);
        if (out)
            memcpy(out + o, k ? (const char *)p + i : "\xef\xbf\xbd", k ? k : 3);
        o += k ? k : 3;
        i += k ? k : 1;
    }
    return o;
}

void pb_string(pbuf *b, unsigned field, const char *s, size_t n)
{
    if (!s)
        n = 0;
    if (!n || utf8_valid(s, n)) {
        pb_bytes(b, field, s, n);
        return;
    }
    size_t out = pb_utf8_clean(s, n, NULL);
    pb_key(b, field, PB_LEN);
    pb_varint(b, out);
    if (!reserve(b, out))
        return;
    b->len += pb_utf8_clean(s, n, (char *)b->p + b->len);
}

void pb_cstr(pbuf *b, unsigned field, const char *s)
{
    pb_string(b, field, s, s ? strlen(s) : 0);
}

size_t pb_open(pbuf *b, unsigned field)
{
    pb_key(b, field, PB_LEN);
    if (reserve(b, 1))
        b->p[b->len++] = 0;
    return b->len;
}

void pb_close(pbuf *b, size_t mark)
{
    if (b->failed || mark > b->len || mark == 0)
        return;
    size_t n = b->len - mark;
    uint8_t v[10];
    size_t k = varint_put(v, n);
    if (k > 1) {
        if (!reserve(b, k - 1))
            return;
        memmove(b->p + mark + k - 1, b->p + mark, n);
        b->len += k - 1;
    }
    memcpy(b->p + mark - 1, v, k);
}

bool pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
    uint64_t v = 0;
    const uint8_t *q = *p;
    for (int shift = 0; shift < 70; shift += 7) {
        if (q >= end)
            return false;
        uint8_t c = *q++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *ret = v;
            *p = q;
            return true;
        }
    }
    return false;
}

int pb_read_field(const uint8_t **p, const uint8_t *end, pb_field *ret)
{
    const uint8_t *q = *p;
    if (q >= end)
        return 0;
    uint64_t key;
    if (!pb_read_varint(&q, end, &key) || key >> 3 == 0 || key >> 3 > 0x1fffffff)
        return -1;
    memset(ret, 0, sizeof(*ret));
    ret->number = (unsigned)(key >> 3);
    ret->wire = (unsigned)(key & 7);
    switch (ret->wire) {
    case PB_VARINT:
        if (!pb_read_varint(&q, end, &ret->v))
            return -1;
        break;
    case PB_I64:
    case 5: /* I32 */ {
        size_t w = ret->wire == PB_I64 ? 8 : 4;
        if ((size_t)(end - q) < w)
            return -1;
        for (size_t i = 0; i < w; i++)
            ret->v |= (uint64_t)q[i] << (8 * i);
        q += w;
        break;
    }
    case PB_LEN: {
        uint64_t n;
        if (!pb_read_varint(&q, end, &n) || n > (uint64_t)(end - q))
            return -1;
        ret->p = q;
        ret->n = (size_t)n;
        q += n;
        break;
    }
    default: /* groups (3, 4) and unknown types */
        return -1;
    }
    *p = q;
    return 1;
}
