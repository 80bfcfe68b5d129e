/* Rows held by a read (store_heap.h). */
#include "store_heap.h"

#include <pacer/base/array.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

store_value *store_heap_copy(const store_value *vals, size_t n)
{
    size_t bytes = n * sizeof(store_value);
    for (size_t c = 0; c < n; c++)
        if (vals[c].type == SV_TEXT || vals[c].type == SV_BLOB)
            bytes += vals[c].n + 1;
    store_value *v = malloc(bytes ? bytes : 1);
    if (!v)
        return NULL;
    char *p = (char *)(v + n);
    for (size_t c = 0; c < n; c++) {
        v[c] = vals[c];
        if (v[c].type == SV_TEXT || v[c].type == SV_BLOB) {
            if (v[c].n)
                memcpy(p, v[c].p, v[c].n);
            p[v[c].n] = 0;
            v[c].p = p;
            p += v[c].n + 1;
        }
    }
    return v;
}

static bool below(const store_heap_key *a, const store_heap_key *b)
{
    if (a->has != b->has)
        return !a->has;
    if (a->has && a->v != b->v)
        return a->v < b->v;
    return a->ts < b->ts || (a->ts == b->ts && a->place < b->place);
}

static void sift_down(struct store_heap_item *h, size_t n, size_t j)
{
    for (;;) {
        size_t l = 2 * j + 1, m = j;
        if (l < n && below(&h[l].key, &h[m].key))
            m = l;
        if (l + 1 < n && below(&h[l + 1].key, &h[m].key))
            m = l + 1;
        if (m == j)
            return;
        struct store_heap_item t = h[j];
        h[j] = h[m];
        h[m] = t;
        j = m;
    }
}

int store_heap_init(store_heap *h, size_t max)
{
    *h = (store_heap){.max = max};
    return 0;
}

bool store_heap_wants(const store_heap *h, store_heap_key key)
{
    return h->max && (h->n < h->max || below(&h->items[0].key, &key));
}

int store_heap_offer(store_heap *h, store_heap_key key, const store_value *vals, size_t n)
{
    if (!store_heap_wants(h, key))
        return 0;
    if (h->n < h->max && !ARRAY_GROW(h->items, h->cap, h->n + 1, 256))
        return -ENOMEM;
    store_value *v = store_heap_copy(vals, n);
    if (!v)
        return -ENOMEM;
    if (h->n == h->max) {
        free(h->items[0].vals);
        h->items[0] = (struct store_heap_item){key, v};
        sift_down(h->items, h->n, 0);
        return 0;
    }
    size_t at = h->n++;
    h->items[at] = (struct store_heap_item){key, v};
    while (at && below(&h->items[at].key, &h->items[(at - 1) / 2].key)) {
        struct store_heap_item t = h->items[at];
        h->items[at] = h->items[(at - 1) / 2];
        h->items[(at - 1) / 2] = t;
        at = (at - 1) / 2;
    }
    return 0;
}

static int cmp_desc(const void *x, const void *y)
{
    const struct store_heap_item *a = x, *b = y;
    return below(&a->key, &b->key) ? 1 : below(&b->key, &a->key) ? -1 : 0;
}

void store_heap_sort(store_heap *h)
{
    if (h->n)
        qsort(h->items, h->n, sizeof *h->items, cmp_desc);
}

void store_heap_free(store_heap *h)
{
    for (size_t i = 0; i < h->n; i++)
        free(h->items[i].vals);
    free(h->items);
    *h = (store_heap){0};
}
