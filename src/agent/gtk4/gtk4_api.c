/* The GTK 4 functions of the adapter (gtk4.h). This file sees their real
 * declarations: it fills the table the rest call. */
#define GTK4_API_TABLE_ONLY 1
#include "gtk4.h"

gtk4_table gtk4_fn;

bool gtk4_api_load(const char **ret_missing)
{
    gtk4_table t;
    const char *missing = NULL;
#define RESOLVE(lib, name)                                          \
    if (!missing && !(*(void **)&t.name = agent_real(lib, #name))) \
        missing = #name;
    GTK4_FUNCTIONS(RESOLVE)
#undef RESOLVE
    if (missing) {
        if (ret_missing)
            *ret_missing = missing;
        return false;
    }
    gtk4_fn = t;
    return true;
}
