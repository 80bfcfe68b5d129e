/* The agent's one way to other code's functions (api.h). This file sees
 * the toolkit's real declarations: it fills the table the rest call. */
#define AGENT_API_TABLE_ONLY 1
#include "api.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

agent_toolkit agent_fn;

static int is_named(struct dl_phdr_info *info, size_t size, void *soname)
{
    (void)size;
    const char *name = info->dlpi_name;
    const char *base = name ? strrchr(name, '/') : NULL;
    base = base ? base + 1 : name;
    return base && strcmp(base, soname) == 0;
}

bool agent_lib_loaded(const char *soname)
{
    return dl_iterate_phdr(is_named, (void *)soname) != 0;
}

void *agent_real(const char *soname, const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f && soname) {
        void *h = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            f = dlsym(h, name);
            dlclose(h); /* the process keeps it loaded */
        }
    }
    return f;
}

bool agent_api_load(const char **ret_missing)
{
    agent_toolkit t;
    const char *missing = NULL;
#define RESOLVE(lib, name)                                \
    if (!missing && !(*(void **)&t.name = agent_real(lib, #name))) \
        missing = #name;
    AGENT_TOOLKIT_FUNCTIONS(RESOLVE)
#undef RESOLVE
    if (missing) {
        if (ret_missing)
            *ret_missing = missing;
        return false;
    }
    agent_fn = t;
    return true;
}
