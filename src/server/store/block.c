/* Blocks: rows column by column (block.h). */
#include "block.h"

#include <pacer/base/array.h>

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { MODE_CONST, MODE_PLAIN, MODE_DICT, MODE_DELTA, MODE_REF, MODE_FIXED, MODE_MILLI, MODE_COUNT };
enum { TAG_NULL, TAG_INT, TAG_MILLI, TAG_REAL, TAG_TEXT, TAG_BLOB, TAG_INT64, TAG_HEX };

/* ---- varints ---- */

static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t u)
{
    return (int64_t)((u >> 1) ^ (~(u & 1) + 1));
}

typedef struct outbuf {
    uint8_t *p;
    size_t len, cap;
    bool oom;
} outbuf;

static void put_bytes(outbuf *o, const void *p, size_t n)
{
    if (o->oom)
        return;
    if (!ARRAY_GROW(o->p, o->cap, o->len + n, 4096)) {
        o->oom = true;
        return;
    }
    if (n)
        memcpy(o->p + o->len, p, n);
    o->len += n;
}

static void put_varint(outbuf *o, uint64_t v)
{
    uint8_t b[10];
    size_t n = 0;
    while (v >= 0x80) {
        b[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (uint8_t)v;
    put_bytes(o, b, n);
}

static void put_le64(outbuf *o, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    put_bytes(o, b, 8);
}

/* ---- values ---- */

static size_t text_len(const store_value *v)
{
    return v->n || !v->p ? v->n : strlen(v->p);
}

static bool is_hex(const char *s, size_t n)
{
    if (n < 2 || n % 2)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* A REAL that k / 1000.0 gives back exactly, bit for bit. */
static bool milli_of(double d, int64_t *ret)
{
    if (!isfinite(d) || fabs(d) >= 9e12)
        return false;
    int64_t k = llround(d * 1000.0);
    double back = (double)k / 1000.0;
    if (back != d || signbit(back) != signbit(d))
        return false;
    *ret = k;
    return true;
}

static uint64_t real_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static size_t value_size(const store_value *v)
{
    int64_t k;
    size_t n;
    switch (v->type) {
    case SV_NULL: return 1;
    case SV_INT: {
        uint64_t z = zigzag(v->i);
        return z < (1ULL << 61) ? varint_size(z << 3 | TAG_INT) : 9;
    }
    case SV_REAL: return milli_of(v->d, &k) ? varint_size(zigzag(k) << 3 | TAG_MILLI) : 9;
    case SV_TEXT:
        n = text_len(v);
        if (is_hex(v->p, n))
            return varint_size((uint64_t)n / 2 << 3) + n / 2;
        return varint_size((uint64_t)n << 3) + n;
    case SV_BLOB: return varint_size((uint64_t)v->n << 3) + v->n;
    }
    return 1;
}

static int hex_digit(char c)
{
    return c <= '9' ? c - '0' : c - 'a' + 10;
}

static void put_value(outbuf *o, const store_value *v)
{
    int64_t k;
    size_t n;
    switch (v->type) {
    case SV_NULL: put_varint(o, TAG_NULL); return;
    case SV_INT: {
        uint64_t z = zigzag(v->i);
        if (z < (1ULL << 61)) {
            put_varint(o, z << 3 | TAG_INT);
        } else {
            put_varint(o, TAG_INT64);
            put_le64(o, (uint64_t)v->i);
        }
        return;
    }
    case SV_REAL:
        if (milli_of(v->d, &k)) {
            put_varint(o, zigzag(k) << 3 | TAG_MILLI);
        } else {
            put_varint(o, TAG_REAL);
            put_le64(o, real_bits(v->d));
        }
        return;
    case SV_TEXT:
        n = text_len(v);
        if (is_hex(v->p, n)) {
            put_varint(o, (uint64_t)n / 2 << 3 | TAG_HEX);
            const char *s = v->p;
            for (size_t i = 0; i < n; i += 2) {
                uint8_t b = (uint8_t)(hex_digit(s[i]) << 4 | hex_digit(s[i + 1]));
                put_bytes(o, &b, 1);
            }
        } else {
            put_varint(o, (uint64_t)n << 3 | TAG_TEXT);
            put_bytes(o, v->p, n);
        }
        return;
    case SV_BLOB:
        put_varint(o, (uint64_t)v->n << 3 | TAG_BLOB);
        put_bytes(o, v->p, v->n);
        return;
    }
}

static bool value_eq(const store_value *a, const store_value *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case SV_NULL: return true;
    case SV_INT: return a->i == b->i;
    case SV_REAL: return real_bits(a->d) == real_bits(b->d);
    case SV_TEXT: {
        size_t n = text_len(a);
        return n == text_len(b) && memcmp(a->p, b->p, n) == 0;
    }
    case SV_BLOB: return a->n == b->n && (a->n == 0 || memcmp(a->p, b->p, a->n) == 0);
    }
    return false;
}

static uint64_t value_hash(const store_value *v)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)v->type;
    const uint8_t *p = NULL;
    size_t n = 0;
    uint64_t x = 0;
    switch (v->type) {
    case SV_NULL: break;
    case SV_INT: x = (uint64_t)v->i; p = (const uint8_t *)&x; n = sizeof x; break;
    case SV_REAL: x = real_bits(v->d); p = (const uint8_t *)&x; n = sizeof x; break;
    case SV_TEXT: p = v->p; n = text_len(v); break;
    case SV_BLOB: p = v->p; n = v->n; break;
    }
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

/* Bits to write an index below m (m >= 2). */
static unsigned index_bits(size_t m)
{
    unsigned b = 1;
    while (((size_t)1 << b) < m)
        b++;
    return b;
}

/* ---- encoding ---- */

typedef struct plan {
    int mode;
    size_t size;
    int ref;
    /* DICT: the distinct values (indexes into the column) and each row's */
    size_t m;
    uint32_t *dict;  /* row of each distinct value */
    uint32_t *index; /* per row */
} plan;

static bool all_int(const store_value *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].type != SV_INT)
            return false;
    return true;
}

/* The distinct values of a column (at most 65535), or m = 0 when more. */
static int dict_of(const store_value *v, size_t n, plan *p)
{
    size_t cap = 1;
    while (cap < 2 * n)
        cap *= 2;
    uint32_t *slots = malloc(cap * sizeof *slots);
    p->dict = malloc(n * sizeof *p->dict);
    p->index = malloc(n * sizeof *p->index);
    if (!slots || !p->dict || !p->index) {
        free(slots);
        return -ENOMEM;
    }
    memset(slots, 0xff, cap * sizeof *slots);
    p->m = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = value_hash(&v[i]) & (cap - 1);
        while (slots[k] != UINT32_MAX && !value_eq(&v[p->dict[slots[k]]], &v[i]))
            k = (k + 1) & (cap - 1);
        if (slots[k] == UINT32_MAX) {
            if (p->m == 65535 || p->m > n / 2 + 1) { /* a dictionary would not pay */
                p->m = 0;
                break;
            }
            slots[k] = (uint32_t)p->m;
            p->dict[p->m++] = (uint32_t)i;
        }
        p->index[i] = slots[k];
    }
    free(slots);
    return 0;
}

static int plan_column(const store_value *const *cols, size_t c, size_t n, const plan *plans, plan *p)
{
    const store_value *v = cols[c];
    *p = (plan){.mode = MODE_PLAIN, .size = 1, .ref = -1};
    size_t same = 1;
    while (same < n && value_eq(&v[same], &v[0]))
        same++;
    if (same == n) { /* most columns: one value (the app, a NULL, a constant) */
        p->mode = MODE_CONST;
        p->size = 1 + value_size(&v[0]);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        p->size += value_size(&v[i]);
    int r = all_int(v, n) && n > 64 && !value_eq(&v[1], &v[0]) && !value_eq(&v[2], &v[1]) ? 0 : dict_of(v, n, p);
    if (r < 0)
        return r;
    if (p->m == 1) {
        p->mode = MODE_CONST;
        p->size = 1 + value_size(&v[0]);
        return 0;
    }
    if (p->m) {
        size_t s = 1 + varint_size(p->m) + (n * index_bits(p->m) + 7) / 8;
        for (size_t k = 0; k < p->m; k++)
            s += value_size(&v[p->dict[k]]);
        if (s < p->size) {
            p->mode = MODE_DICT;
            p->size = s;
        }
    }
    /* blobs (or texts) all of one length: the length once (ids) */
    if ((v[0].type == SV_BLOB || v[0].type == SV_TEXT) && v[0].n) {
        size_t i = 1;
        while (i < n && v[i].type == v[0].type && v[i].n == v[0].n)
            i++;
        size_t s = 1 + 1 + varint_size(v[0].n) + n * v[0].n;
        if (i == n && s < p->size) {
            p->mode = MODE_FIXED;
            p->size = s;
        }
    }
    /* REALs of whole thousandths, or NULL: the numbers alone (milliseconds) */
    bool milli = true;
    size_t ms = 1;
    for (size_t i = 0; i < n && milli; i++) {
        int64_t k;
        if (v[i].type == SV_NULL)
            ms += 1;
        else if (v[i].type == SV_REAL && milli_of(v[i].d, &k) && zigzag(k) < UINT64_MAX)
            ms += varint_size(zigzag(k) + 1);
        else
            milli = false;
    }
    if (milli && ms < p->size) {
        p->mode = MODE_MILLI;
        p->size = ms;
    }
    if (!all_int(v, n))
        return 0;
    size_t s = 1 + varint_size(zigzag(v[0].i));
    for (size_t i = 1; i < n; i++)
        s += varint_size(zigzag((int64_t)((uint64_t)v[i].i - (uint64_t)v[i - 1].i)));
    if (s < p->size) {
        p->mode = MODE_DELTA;
        p->size = s;
    }
    /* against an earlier column that is itself deltas (a sorted time): an
     * end time against its start */
    for (size_t rc = 0; rc < c; rc++) {
        if (plans[rc].mode != MODE_DELTA)
            continue;
        s = 1 + varint_size(rc);
        for (size_t i = 0; i < n && s < p->size; i++)
            s += varint_size(zigzag((int64_t)((uint64_t)v[i].i - (uint64_t)cols[rc][i].i)));
        if (s < p->size) {
            p->mode = MODE_REF;
            p->size = s;
            p->ref = (int)rc;
        }
    }
    return 0;
}

static void write_column(outbuf *o, const store_value *const *cols, size_t c, size_t n, const plan *p)
{
    const store_value *v = cols[c];
    uint8_t mode = (uint8_t)p->mode;
    put_bytes(o, &mode, 1);
    switch (p->mode) {
    case MODE_CONST: put_value(o, &v[0]); break;
    case MODE_PLAIN:
        for (size_t i = 0; i < n; i++)
            put_value(o, &v[i]);
        break;
    case MODE_DICT: {
        put_varint(o, p->m);
        for (size_t k = 0; k < p->m; k++)
            put_value(o, &v[p->dict[k]]);
        unsigned w = index_bits(p->m);
        uint64_t acc = 0;
        unsigned have = 0;
        for (size_t i = 0; i < n; i++) {
            acc |= (uint64_t)p->index[i] << have;
            have += w;
            while (have >= 8) {
                uint8_t b = (uint8_t)acc;
                put_bytes(o, &b, 1);
                acc >>= 8;
                have -= 8;
            }
        }
        if (have) {
            uint8_t b = (uint8_t)acc;
            put_bytes(o, &b, 1);
        }
        break;
    }
    case MODE_FIXED: {
        uint8_t type = (uint8_t)v[0].type;
        put_bytes(o, &type, 1);
        put_varint(o, v[0].n);
        for (size_t i = 0; i < n; i++)
            put_bytes(o, v[i].p, v[i].n);
        break;
    }
    case MODE_MILLI:
        for (size_t i = 0; i < n; i++) {
            int64_t k = 0;
            if (v[i].type == SV_NULL)
                put_varint(o, 0);
            else if (milli_of(v[i].d, &k))
                put_varint(o, zigzag(k) + 1);
        }
        break;
    case MODE_DELTA:
        put_varint(o, zigzag(v[0].i));
        for (size_t i = 1; i < n; i++)
            put_varint(o, zigzag((int64_t)((uint64_t)v[i].i - (uint64_t)v[i - 1].i)));
        break;
    case MODE_REF:
        put_varint(o, (uint64_t)p->ref);
        for (size_t i = 0; i < n; i++)
            put_varint(o, zigzag((int64_t)((uint64_t)v[i].i - (uint64_t)cols[p->ref][i].i)));
        break;
    }
}

int block_encode(const store_value *const *cols, size_t n_cols, size_t n, uint8_t **ret, size_t *ret_len)
{
    if (n == 0 || n > BLOCK_MAX_ROWS || n_cols == 0 || n_cols > BLOCK_MAX_COLS)
        return -EINVAL;
    plan plans[BLOCK_MAX_COLS];
    size_t done = 0;
    int r = 0;
    for (; done < n_cols && r == 0; done++)
        r = plan_column(cols, done, n, plans, &plans[done]);
    outbuf o = {0};
    if (r == 0) {
        static const uint8_t magic[2] = {'B', 1};
        put_bytes(&o, magic, 2);
        put_varint(&o, n);
        put_varint(&o, n_cols);
        for (size_t c = 0; c < n_cols; c++)
            put_varint(&o, plans[c].size);
        for (size_t c = 0; c < n_cols; c++)
            write_column(&o, cols, c, n, &plans[c]);
        if (o.oom)
            r = -ENOMEM;
    }
    for (size_t c = 0; c < done; c++) {
        free(plans[c].dict);
        free(plans[c].index);
    }
    if (r < 0) {
        free(o.p);
        return r;
    }
    *ret = o.p;
    *ret_len = o.len;
    return 0;
}

/* ---- decoding ---- */

struct block_chunk {
    block_chunk *next;
    size_t used, size;
    char data[];
};

static char *arena_alloc(block_arena *a, size_t n)
{
    block_chunk *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t size = n > 16384 ? n : 16384;
        c = malloc(sizeof *c + size);
        if (!c)
            return NULL;
        c->used = 0;
        c->size = size;
        c->next = a->head;
        a->head = c;
    }
    char *p = c->data + c->used;
    c->used += n;
    return p;
}

void block_arena_free(block_arena *a)
{
    while (a->head) {
        block_chunk *c = a->head;
        a->head = c->next;
        free(c);
    }
}

typedef struct in {
    const uint8_t *p, *end;
} in;

static bool get_varint(in *s, uint64_t *ret)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (s->p == s->end)
            return false;
        uint8_t b = *s->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *ret = v;
            return true;
        }
    }
    return false;
}

static bool get_le64(in *s, uint64_t *ret)
{
    if (s->end - s->p < 8)
        return false;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)s->p[i] << (8 * i);
    s->p += 8;
    *ret = v;
    return true;
}

static int get_value(in *s, store_value *v, block_arena *a)
{
    uint64_t t, u;
    if (!get_varint(s, &t))
        return -EBADMSG;
    uint64_t n = t >> 3;
    switch (t & 7) {
    case TAG_NULL:
        if (n)
            return -EBADMSG;
        *v = (store_value){.type = SV_NULL};
        return 0;
    case TAG_INT: *v = (store_value){.type = SV_INT, .i = unzigzag(n)}; return 0;
    case TAG_MILLI: *v = (store_value){.type = SV_REAL, .d = (double)unzigzag(n) / 1000.0}; return 0;
    case TAG_REAL:
    case TAG_INT64:
        if (n || !get_le64(s, &u))
            return -EBADMSG;
        if ((t & 7) == TAG_INT64) {
            *v = (store_value){.type = SV_INT, .i = (int64_t)u};
        } else {
            double d;
            memcpy(&d, &u, sizeof d);
            *v = (store_value){.type = SV_REAL, .d = d};
        }
        return 0;
    case TAG_TEXT:
    case TAG_HEX: {
        uint64_t have = (uint64_t)(s->end - s->p);
        if (n > have)
            return -EBADMSG;
        size_t len = (t & 7) == TAG_HEX ? 2 * (size_t)n : (size_t)n;
        char *p = arena_alloc(a, len + 1);
        if (!p)
            return -ENOMEM;
        if ((t & 7) == TAG_HEX) {
            static const char digits[] = "0123456789abcdef";
            for (size_t i = 0; i < n; i++) {
                p[2 * i] = digits[s->p[i] >> 4];
                p[2 * i + 1] = digits[s->p[i] & 15];
            }
        } else {
            memcpy(p, s->p, len);
        }
        p[len] = 0;
        s->p += n;
        *v = (store_value){.type = SV_TEXT, .p = p, .n = len};
        return 0;
    }
    case TAG_BLOB:
        if (n > (uint64_t)(s->end - s->p))
            return -EBADMSG;
        *v = (store_value){.type = SV_BLOB, .p = s->p, .n = (size_t)n};
        s->p += n;
        return 0;
    }
    return -EBADMSG;
}

int block_open(block_reader *r, const uint8_t *data, size_t len)
{
    memset(r, 0, sizeof *r);
    in s = {data, data + len};
    uint64_t n, nc;
    if (len < 2 || data[0] != 'B' || data[1] != 1)
        return -EBADMSG;
    s.p += 2;
    if (!get_varint(&s, &n) || !get_varint(&s, &nc) || n == 0 || n > BLOCK_MAX_ROWS || nc == 0 ||
        nc > BLOCK_MAX_COLS)
        return -EBADMSG;
    r->data = data;
    r->len = len;
    r->n_rows = (uint32_t)n;
    r->n_cols = (uint32_t)nc;
    uint64_t sizes[BLOCK_MAX_COLS];
    for (size_t c = 0; c < nc; c++)
        if (!get_varint(&s, &sizes[c]))
            return -EBADMSG;
    size_t off = (size_t)(s.p - data);
    for (size_t c = 0; c < nc; c++) {
        if (sizes[c] == 0 || sizes[c] > len - off)
            return -EBADMSG;
        r->off[c] = off;
        r->size[c] = (size_t)sizes[c];
        off += (size_t)sizes[c];
    }
    return off == len ? 0 : -EBADMSG;
}

static int decode_column(const block_reader *r, size_t c, store_value *out, block_arena *a, unsigned depth)
{
    if (c >= r->n_cols || depth > BLOCK_MAX_COLS)
        return -EBADMSG;
    in s = {r->data + r->off[c], r->data + r->off[c] + r->size[c]};
    size_t n = r->n_rows;
    uint8_t mode = *s.p++;
    int e = 0;
    uint64_t u;
    switch (mode) {
    case MODE_CONST:
        e = get_value(&s, &out[0], a);
        for (size_t i = 1; i < n && e == 0; i++)
            out[i] = out[0];
        break;
    case MODE_PLAIN:
        for (size_t i = 0; i < n && e == 0; i++)
            e = get_value(&s, &out[i], a);
        break;
    case MODE_DICT: {
        uint64_t m;
        if (!get_varint(&s, &m) || m == 0 || m > 65535 || m > n)
            return -EBADMSG;
        store_value *dict = malloc((size_t)m * sizeof *dict);
        if (!dict)
            return -ENOMEM;
        for (size_t k = 0; k < m && e == 0; k++)
            e = get_value(&s, &dict[k], a);
        unsigned w = m < 2 ? 1 : index_bits((size_t)m);
        size_t bytes = (n * w + 7) / 8;
        if (e == 0 && (size_t)(s.end - s.p) < bytes)
            e = -EBADMSG;
        uint64_t acc = 0;
        unsigned have = 0;
        const uint8_t *q = s.p;
        for (size_t i = 0; i < n && e == 0; i++) {
            while (have < w) {
                acc |= (uint64_t)*q++ << have;
                have += 8;
            }
            size_t k = (size_t)(acc & (((uint64_t)1 << w) - 1));
            acc >>= w;
            have -= w;
            if (k >= m)
                e = -EBADMSG;
            else
                out[i] = dict[k];
        }
        if (e == 0)
            s.p += bytes;
        free(dict);
        break;
    }
    case MODE_FIXED: {
        uint64_t len;
        if (s.p == s.end)
            return -EBADMSG;
        uint8_t type = *s.p++;
        if ((type != SV_BLOB && type != SV_TEXT) || !get_varint(&s, &len) || len == 0 ||
            len > (uint64_t)(s.end - s.p) / n || (uint64_t)(s.end - s.p) != len * n)
            return -EBADMSG;
        for (size_t i = 0; i < n && e == 0; i++) {
            const uint8_t *p = s.p + i * len;
            if (type == SV_BLOB) {
                out[i] = (store_value){.type = SV_BLOB, .p = p, .n = (size_t)len};
                continue;
            }
            char *t = arena_alloc(a, (size_t)len + 1);
            if (!t) {
                e = -ENOMEM;
                break;
            }
            memcpy(t, p, (size_t)len);
            t[len] = 0;
            out[i] = (store_value){.type = SV_TEXT, .p = t, .n = (size_t)len};
        }
        s.p += len * n;
        break;
    }
    case MODE_MILLI:
        for (size_t i = 0; i < n && e == 0; i++) {
            if (!get_varint(&s, &u)) {
                e = -EBADMSG;
                break;
            }
            out[i] = u == 0 ? (store_value){.type = SV_NULL}
                            : (store_value){.type = SV_REAL, .d = (double)unzigzag(u - 1) / 1000.0};
        }
        break;
    case MODE_DELTA: {
        uint64_t prev = 0;
        for (size_t i = 0; i < n && e == 0; i++) {
            if (!get_varint(&s, &u)) {
                e = -EBADMSG;
                break;
            }
            prev = i ? prev + (uint64_t)unzigzag(u) : (uint64_t)unzigzag(u);
            out[i] = (store_value){.type = SV_INT, .i = (int64_t)prev};
        }
        break;
    }
    case MODE_REF: {
        uint64_t rc;
        if (!get_varint(&s, &rc) || rc >= c)
            return -EBADMSG;
        store_value *ref = malloc(n * sizeof *ref);
        if (!ref)
            return -ENOMEM;
        e = decode_column(r, (size_t)rc, ref, a, depth + 1);
        for (size_t i = 0; i < n && e == 0; i++) {
            if (ref[i].type != SV_INT || !get_varint(&s, &u))
                e = -EBADMSG;
            else
                out[i] = (store_value){.type = SV_INT, .i = (int64_t)((uint64_t)ref[i].i + (uint64_t)unzigzag(u))};
        }
        free(ref);
        break;
    }
    default: return -EBADMSG;
    }
    if (e == 0 && s.p != s.end)
        e = -EBADMSG;
    return e;
}

int block_column(const block_reader *r, size_t c, store_value *out, block_arena *arena)
{
    return decode_column(r, c, out, arena, 0);
}
