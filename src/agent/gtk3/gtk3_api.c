/* The GTK 3 and GDK 3 functions of the adapter (gtk3.h). This file sees
 * their real declarations: it fills the table the rest call. */
#define GTK3_API_TABLE_ONLY 1
#include "gtk3.h"

gtk3_table gtk3_fn;

bool gtk3_api_load(const char **ret_missing)
{
    gtk3_table t;
    const char *missing = NULL;
#define RESOLVE(lib, name)                                          \
    if (!missing && !(*(void **)&t.name = agent_real(lib, #name))) \
        missing = #name;
    GTK3_FUNCTIONS(RESOLVE)
#undef RESOLVE
    if (missing) {
        if (ret_missing)
            *ret_missing = missing;
        return false;
    }
    gtk3_fn = t;
    return true;
}
