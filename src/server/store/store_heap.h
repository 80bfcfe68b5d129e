/* Rows held by a read: copies of rows (their texts with them, one
 * allocation each) and a bounded heap that keeps the largest of the rows
 * offered, by a key — the dashboard's slowest records, a version's newest
 * samples. Not thread-safe: one read's own. */
#ifndef PACER_SERVER_STORE_HEAP_H
#define PACER_SERVER_STORE_HEAP_H

#include "store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A copy of n values, each text and blob after them in the same
 * allocation and NUL-terminated (free it whole). NULL when out of memory. */
store_value *store_heap_copy(const store_value *vals, size_t n);

/* The order of a row: a value (has false: below every value, as SQL
 * orders NULL), then its time, then its place (larger: newer). */
typedef struct store_heap_key {
    bool has;
    double v;
    int64_t ts, place;
} store_heap_key;

typedef struct store_heap {
    size_t max, n, cap;
    struct store_heap_item {
        store_heap_key key;
        store_value *vals; /* store_heap_copy's */
    } *items; /* a min-heap until store_heap_sort */
} store_heap;

/* A heap keeping the `max` largest rows (its room grows with them): 0. */
int store_heap_init(store_heap *h, size_t max);
/* Whether a row of that key would be kept now (to skip copying one that
 * would not). */
bool store_heap_wants(const store_heap *h, store_heap_key key);
/* Offers a row of n values, copied when kept: 0, or -ENOMEM. */
int store_heap_offer(store_heap *h, store_heap_key key, const store_value *vals, size_t n);
/* The rows kept, largest first, in items[0..n). */
void store_heap_sort(store_heap *h);
/* Frees the rows and the heap; accepts a heap whose init failed. */
void store_heap_free(store_heap *h);

#endif
