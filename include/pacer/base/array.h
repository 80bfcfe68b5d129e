/* Growable arrays (base component: libc only): the room of an array of
 * elements of one size doubles as it fills, starting at a given room;
 * it never shrinks. The array is a pointer and its room, kept by the
 * user beside the count of elements in use. */
#ifndef PACER_BASE_ARRAY_H
#define PACER_BASE_ARRAY_H

#include <stdbool.h>
#include <stddef.h>

/* Makes room for at least `need` elements of `size` bytes in the array
 * whose pointer is at `items` (a T **, passed as void *) and whose room
 * is *cap: twice the room until it suffices, `first` when there is none
 * yet. true; false when out of memory or the size overflows, the array
 * as it was. */
bool array_grow(void *items, size_t *cap, size_t need, size_t size, size_t first);

/* array_grow for an array `arr` of any element type with room `cap`. */
#define ARRAY_GROW(arr, cap, need, first) array_grow(&(arr), &(cap), (need), sizeof *(arr), (first))

#endif
