/* The GLib, GObject and GIO functions of the GObject toolkit adapters
 * (gobj.h). This file sees their real declarations: it fills the table
 * the rest call. */
#define GOBJ_API_TABLE_ONLY 1
#include "gobj.h"

gobj_table gobj_fn;

bool gobj_api_load(const char **ret_missing)
{
    static _Atomic bool loaded;
    if (atomic_load(&loaded))
        return true;
    gobj_table t;
    const char *missing = NULL;
#define RESOLVE(lib, name)                                          \
    if (!missing && !(*(void **)&t.name = agent_real(lib, #name))) \
        missing = #name;
    GOBJ_FUNCTIONS(RESOLVE)
#undef RESOLVE
    if (missing) {
        if (ret_missing)
            *ret_missing = missing;
        return false;
    }
    gobj_fn = t;
    atomic_store(&loaded, true);
    return true;
}
