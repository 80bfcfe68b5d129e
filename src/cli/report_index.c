/* pacer report: items looked up by name. */
#include "report_index.h"

#include <search.h>
#include <stdlib.h>
#include <string.h>

/* Both sides point at something whose first member is a `char *` name: the
 * tree stores item pointers, and lookups pass the address of a name pointer. */
static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_item_ptr(const void *a, const void *b)
{
    return cmp_name(*(void *const *)a, *(void *const *)b);
}

void *report_index_get(report_index *ix, const char *name, size_t item_size)
{
    void **found = tfind(&name, &ix->root, cmp_name);
    if (found)
        return *found;

    if (ix->n == ix->cap) {
        size_t cap = ix->cap ? ix->cap * 2 : 8;
        void **items = realloc(ix->items, cap * sizeof(*items));
        if (!items)
            return NULL;
        ix->items = items;
        ix->cap = cap;
    }
    char **item = calloc(1, item_size);
    if (!item)
        return NULL;
    *item = strdup(name);
    if (!*item) {
        free(item);
        return NULL;
    }
    if (!tsearch(item, &ix->root, cmp_name)) {
        free(*item);
        free(item);
        return NULL;
    }
    ix->items[ix->n++] = item;
    return item;
}

void **report_index_sorted(report_index *ix)
{
    if (ix->n > 1)
        qsort(ix->items, ix->n, sizeof(*ix->items), cmp_item_ptr);
    return ix->items;
}

static void tree_node_keep(void *item)
{
    (void)item; /* items are freed from ix->items */
}

void report_index_release(report_index *ix, void (*item_release)(void *item))
{
    tdestroy(ix->root, tree_node_keep);
    for (size_t i = 0; i < ix->n; i++) {
        if (item_release)
            item_release(ix->items[i]);
        free(*(char **)ix->items[i]);
        free(ix->items[i]);
    }
    free(ix->items);
    *ix = (report_index){0};
}
