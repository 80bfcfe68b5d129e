/* The agent's one way to other code's functions and libraries (agent.h,
 * "real.c").
 *
 * The agent links no toolkit and no display library (docs/agent.md): every
 * function of theirs it calls, and the real function behind each of its
 * hooks, is looked up by name with agent_real(). Toolkit adapters keep
 * their own tables of functions, filled the same way when they attach.
 */
#include "agent.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

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
