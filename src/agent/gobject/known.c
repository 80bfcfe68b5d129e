/* Known object leaks (gobj.h, "known.c"): leaks of a toolkit or library
 * that no application can avoid, so that they are filed as the library's
 * (origin "library"), not the app's.
 *
 * Entries come from the toolkit adapter in force (its own list, each seen
 * with that toolkit's example programs) and from the config's
 * <known-leak type="…" page="…">. An entry matches an object of a type
 * equal to, or derived from, its `type` ("*": any), left by a page of a
 * class equal to, or derived from, its `page` (NULL: any).
 */
#include "gobj.h"

#include <string.h>

/* A type name of an entry against one of a leak: equal, "*", or an
 * ancestor of it. */
static bool type_matches(const char *want, const char *have)
{
    if (!want || strcmp(want, "*") == 0)
        return true;
    if (!have)
        return false;
    if (strcmp(want, have) == 0)
        return true;
    GType w = g_type_from_name(want), h = g_type_from_name(have);
    return w && h && g_type_is_a(h, w);
}

const char *gobj_known_object(const gobj_known_leak *toolkit, pacer_config *cfg, const char *page, const char *type)
{
    for (size_t i = 0; toolkit && toolkit[i].id; i++)
        if (type_matches(toolkit[i].type, type) && type_matches(toolkit[i].page, page))
            return toolkit[i].id;
    for (size_t i = 0; i < pacer_config_known_leak_count(cfg); i++) {
        const char *t = pacer_config_known_leak_type(cfg, i);
        if (t && type_matches(t, type) && type_matches(pacer_config_known_leak_page(cfg, i), page))
            return pacer_config_known_leak_id(cfg, i);
    }
    return NULL;
}
