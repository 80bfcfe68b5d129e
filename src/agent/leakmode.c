/* The leak modes (leaks.h): PACER_LEAKS, set by `pacer run --leaks`.
 *
 *   (unset)  objects: GObjects of a destroyed page that stay alive
 *   refs     with the stacks of the references that keep them
 *            (gobject/refs.c; libpacer-agent-refs.so or -heap.so)
 *   native   heap blocks nothing points to (libpacer-agent-heap.so)
 *   off      none
 */
#include "leaks.h"

#include <stdlib.h>
#include <string.h>

static int parse_modes(void)
{
    const char *v = getenv("PACER_LEAKS");
    int m = LEAKS_OBJECTS;
    if (!v)
        return m;
    for (const char *p = v; *p;) {
        size_t k = strcspn(p, ",");
        if (k == 3 && strncmp(p, "off", 3) == 0)
            m = 0;
        else if (k == 4 && strncmp(p, "refs", 4) == 0)
            m |= LEAKS_REFS;
        else if (k == 6 && strncmp(p, "native", 6) == 0)
            m |= LEAKS_NATIVE;
        p += k + (p[k] == ',');
    }
    return m;
}

int leaks_modes(void)
{
    static _Atomic int modes = -1;
    int m = atomic_load_explicit(&modes, memory_order_relaxed);
    if (m < 0) {
        m = parse_modes();
        atomic_store_explicit(&modes, m, memory_order_relaxed);
    }
    return m;
}

bool leaks_native_mode(void)
{
    return heap_native_build() && (leaks_modes() & LEAKS_NATIVE);
}

/* A feature (agent.c): the stack store native leaks record allocation
 * stacks in, made outside any hook. */
void leaks_install(void)
{
    if (leaks_native_mode() && !stackstore_init())
        agent_note_once("leak-stacks", "no memory for stacks; leak records come without them");
}
