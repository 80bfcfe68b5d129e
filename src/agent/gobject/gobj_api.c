/* The GLib, GObject and GIO functions of the GObject toolkit adapters, and
 * the GTK and GDK functions GTK 3 and GTK 4 share (gobj.h). This file sees
 * the real declarations of the first (the second are declared by gobj.h's
 * list): it fills the tables the rest call. */
#define GOBJ_API_TABLE_ONLY 1
#include "gobj.h"

gobj_table gobj_fn;
gobj_gtk_table gobj_gtk;

bool gobj_api_load(const char *gtk_lib, const char *gdk_lib, const char **ret_missing)
{
    static _Atomic bool loaded;
    if (atomic_load(&loaded))
        return true;
    gobj_table t;
    gobj_gtk_table g;
    const char *missing = NULL;
#define RESOLVE(lib, name)                                          \
    if (!missing && !(*(void **)&t.name = agent_real(lib, #name))) \
        missing = #name;
    GOBJ_FUNCTIONS(RESOLVE)
#undef RESOLVE
#define RESOLVE_GTK(lib, name, ret, params)                                                        \
    if (!missing && !(*(void **)&g.name = agent_real((lib) == GOBJ_GDK ? gdk_lib : gtk_lib, #name))) \
        missing = #name;
    GOBJ_GTK_FUNCTIONS(RESOLVE_GTK)
#undef RESOLVE_GTK
    if (missing) {
        if (ret_missing)
            *ret_missing = missing;
        return false;
    }
    gobj_fn = t;
    gobj_gtk = g;
    atomic_store(&loaded, true);
    return true;
}
