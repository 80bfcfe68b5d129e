/* Libraries loaded at run time. A PyGObject or GJS app loads its toolkit
 * through GObject introspection (g_module_open → dlopen) well after
 * main(); a program may load a toolkit or a display library from a plugin.
 * The agent watches dlopen and tells agent.c after every call that loaded
 * something (agent_on_libraries_loaded): a waiting agent activates there,
 * inside the call that loaded the toolkit, before the app can use it.
 *
 * What the app observes of dlopen is unchanged: the real call's result is
 * returned as is, and the checks walk the loaded objects with
 * dl_iterate_phdr (no dlopen, no dlsym of its own that could leave a
 * message for the app's next dlerror()). An adapter's attach looks up the
 * toolkit's functions with dlsym; a failed look-up's message is cleared, as
 * the app's dlopen succeeded and its dlerror() must say nothing.
 *
 * Not before the agent's constructor ran (neither waiting nor active then):
 * a library's initialiser may dlopen before the preloaded agent's own
 * initialiser runs, while the libraries mapped at start are not all
 * initialised; the constructor checks those itself.
 *
 * Cost: one atomic load per dlopen, and a walk of the loaded objects per
 * successful one while there is something to notice (an agent waiting, or
 * active: loop_wait.c's libraries).
 */
#include "agent.h"

#include <dlfcn.h>

typedef void *(*dlopen_fn)(const char *, int);
static dlopen_fn real_dlopen;
static __thread int dlopen_depth __attribute__((tls_model("initial-exec")));

AGENT_EXPORT void *dlopen(const char *file, int mode)
{
    if (!real_dlopen) {
        real_dlopen = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
        if (!real_dlopen)
            return NULL;
    }
    dlopen_depth++;
    void *h = real_dlopen(file, mode);
    dlopen_depth--;
    /* A dlopen made by the initialiser of a library another dlopen is
     * loading sees libraries whose initialisers have not run yet (QtCore,
     * libstdc++): the outermost call checks, once they all have. */
    if (!h || agent_in_hook || dlopen_depth || (!agent_waiting() && !agent_active()))
        return h;
    agent_in_hook++;
    agent_on_libraries_loaded();
    (void)dlerror(); /* the app's call succeeded: nothing to report */
    agent_in_hook--;
    return h;
}
