/* The plain agent (libpacer-agent.so) tracks no allocations: its entry
 * points for --leaks=native do nothing. libpacer-agent-heap.so links
 * heap.c and heap_mark.c instead. */
#include "leaks.h"

void heap_exit_check(void)
{
}

void leaks_own_region(const void *start, size_t len)
{
    (void)start, (void)len;
}

void leaks_disown_region(const void *start, size_t len)
{
    (void)start, (void)len;
}

bool heap_native_build(void)
{
    return false;
}
