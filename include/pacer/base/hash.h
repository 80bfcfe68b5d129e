/* Hashes (base component: libc only). */
#ifndef PACER_BASE_HASH_H
#define PACER_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define FNV1A64_INIT UINT64_C(0xcbf29ce484222325)

/* FNV-1a 64 of n bytes, continuing from h (FNV1A64_INIT to start). A stable
 * hash: its values are stored and compared across runs and builds. */
static inline uint64_t fnv1a64(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* FNV-1a 64 of a NUL-terminated string, from FNV1A64_INIT ^ seed. */
uint64_t fnv1a64_str(const char *s, uint64_t seed);

/* A 64-bit mix of an integer (for hash tables keyed by ids). */
static inline uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return x;
}

#endif
