/* libFuzzer target for the store's own value formats (src/server/store_codec.c)
 * and the sketch readers (src/server/sketch.c): any bytes are read or
 * refused, never read outside them. The first byte picks the reader:
 *   0  a sketch: what sketch_decode accepts, sketch_merge_encoded accepts
 *      too and merges to the same sketch (into an empty one and into one
 *      holding values); it encodes back to what decodes the same
 *   1  a sub-day group's sketches: each one handed over lies inside the
 *      value, and is merged as a sketch
 *   2  a trace_index chunk: 16 bytes of t_lo and key, then the chunk; every
 *      entry handed over names a table the store has */
#include "store/sketch.h"
#include "store/store_codec.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same(const sketch *a, const sketch *b)
{
    if (a->count != b->count || a->zero_count != b->zero_count)
        return false;
    /* Compare bucket for bucket by index: the arrays may start differently. */
    for (uint32_t i = 0; i < a->n_bins; i++) {
        int64_t idx = (int64_t)a->offset + i;
        uint64_t bv = 0;
        if (idx >= b->offset && idx < (int64_t)b->offset + b->n_bins)
            bv = b->bins[idx - b->offset];
        if (a->bins[i] != bv)
            return false;
    }
    for (uint32_t i = 0; i < b->n_bins; i++) {
        int64_t idx = (int64_t)b->offset + i;
        uint64_t av = 0;
        if (idx >= a->offset && idx < (int64_t)a->offset + a->n_bins)
            av = a->bins[idx - a->offset];
        if (b->bins[i] != av)
            return false;
    }
    return true;
}

static void check_sketch(const uint8_t *p, size_t n)
{
    sketch d, m, base, want;
    sketch_init(&d);
    sketch_init(&m);
    sketch_init(&base);
    sketch_init(&want);
    int rc = sketch_decode(&d, p, n);
    int rm = sketch_merge_encoded(&m, p, n);
    if (rc == 0) {
        if (rm != 0 || !same(&d, &m))
            abort();
        /* Into a sketch that holds values, the same as merging the decoded. */
        sketch_add(&base, 1.0);
        sketch_add(&base, 250.0);
        sketch_add(&want, 1.0);
        sketch_add(&want, 250.0);
        if (sketch_merge(&want, &d) == 0) {
            if (sketch_merge_encoded(&base, p, n) != 0 || !same(&want, &base))
                abort();
        }
        uint8_t *again = NULL;
        size_t len = 0;
        if (sketch_encode(&d, &again, &len) == 0) {
            sketch e;
            sketch_init(&e);
            if (sketch_decode(&e, again, len) != 0 || !same(&d, &e))
                abort();
            sketch_reset(&e);
        }
        free(again);
    }
    sketch_reset(&d);
    sketch_reset(&m);
    sketch_reset(&base);
    sketch_reset(&want);
}

struct span {
    const uint8_t *lo, *hi;
};

static void on_sketch(void *ctx, int64_t id, const uint8_t *p, size_t n)
{
    struct span *s = ctx;
    (void)id;
    if (p < s->lo || p + n > s->hi)
        abort();
    check_sketch(p, n);
}

static void on_entry(void *ctx, int tbl, int64_t rid)
{
    (void)ctx;
    (void)rid;
    if (tbl < 0 || tbl >= STORE_CODEC_MAX_TABLE)
        abort();
}

static int64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return (int64_t)v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    /* A copy of exactly the bytes: reads past them are the sanitizer's. */
    size_t n = size - 1;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return 0;
    memcpy(buf, data + 1, n);
    switch (data[0] % 3) {
    case 0: check_sketch(buf, n); break;
    case 1: {
        struct span s = {buf, buf + n};
        (void)store_codec_subday_sketches(buf, n, on_sketch, &s);
        break;
    }
    case 2:
        if (n >= 16) {
            int64_t t_lo = get64(buf), t = get64(buf + 8);
            uint8_t *chunk = malloc(n - 16 ? n - 16 : 1);
            if (chunk) {
                memcpy(chunk, buf + 16, n - 16);
                (void)store_codec_trace_chunk_find(chunk, n - 16, t_lo, t, on_entry, NULL);
                free(chunk);
            }
        }
        break;
    }
    free(buf);
    return 0;
}
