/* A table keyed by strings (base component: libc only): each key (bytes
 * of a length, copied) holds one pointer. Open addressing with linear
 * probing over FNV-1a hashes, at most half full; entries are never
 * removed, the whole table is freed at once. Not thread-safe: its owner
 * keeps it under a lock where threads share it. */
#ifndef PACER_BASE_STRMAP_H
#define PACER_BASE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct strmap_slot {
    char *key; /* NUL-terminated copy (len bytes before the NUL); NULL: empty */
    size_t len;
    uint64_t hash;
    void *value;
} strmap_slot;

typedef struct strmap {
    strmap_slot *slots;
    size_t cap, n;
} strmap; /* zeroed: empty */

/* The value of key (len bytes), or NULL when it is not in the table. */
void *strmap_get(const strmap *m, const void *key, size_t len);

/* The address of key's value, the key added (copied, its value NULL, for
 * the caller to set) when missing; valid until the next strmap_put.
 * *ret_key (may be NULL): the table's copy of the key, which lives as
 * long as the table. NULL when out of memory (nothing added). */
void **strmap_put(strmap *m, const void *key, size_t len, const char **ret_key);

/* The entry after position *pos (start with 0), in no order: true with
 * its slot, false at the end. */
bool strmap_next(const strmap *m, size_t *pos, const strmap_slot **ret);

/* Frees the keys and the table, each value with free_value (NULL:
 * values are not the table's). The table is empty after. */
void strmap_free(strmap *m, void (*free_value)(void *value));

/* A key of several strings: the parts (NULL as "") joined with a NUL
 * byte after each, into buf; its length, or 0 when it does not fit. */
size_t strmap_key(char *buf, size_t size, const char *const *parts, size_t n);

#endif
