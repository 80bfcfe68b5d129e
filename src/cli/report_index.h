/* pacer report: items looked up by name (page classes, API URLs).
 *
 * An item is a caller-defined struct whose FIRST member is `char *name`; the
 * index allocates it zeroed, owns the name copy and the item, and hands out
 * pointers that stay valid until report_index_release(). Lookup is a binary
 * tree (tsearch), so a file with many distinct names stays O(n log n).
 */
#ifndef PACER_CLI_REPORT_INDEX_H
#define PACER_CLI_REPORT_INDEX_H

#include <stddef.h>

typedef struct report_index {
    void *root;   /* tsearch tree of item pointers */
    void **items; /* the same items, in insertion order until sorted */
    size_t n, cap;
} report_index;

/* Returns the item called `name`, creating a zeroed one of item_size bytes
 * when there is none. Returns NULL when out of memory. */
void *report_index_get(report_index *ix, const char *name, size_t item_size);

/* Sorts the items by name (strcmp order) and returns them; ix->n of them. */
void **report_index_sorted(report_index *ix);

/* Calls item_release(item) (may be NULL) for each item to free what the item
 * holds, then frees the items, their names and the index storage. */
void report_index_release(report_index *ix, void (*item_release)(void *item));

#endif
