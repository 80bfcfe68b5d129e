/* Growable arrays (array.h). */
#include <pacer/base/array.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

bool array_grow(void *items, size_t *cap, size_t need, size_t size, size_t first)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap : first ? first : 1;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return false;
        c *= 2;
    }
    if (!size || c > SIZE_MAX / size)
        return false;
    void *p; /* the user's pointer, whatever its type: copied, not aliased */
    memcpy(&p, items, sizeof p);
    void *q = realloc(p, c * size);
    if (!q)
        return false;
    memcpy(items, &q, sizeof q);
    *cap = c;
    return true;
}
