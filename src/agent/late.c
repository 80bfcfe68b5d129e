/* GTK 4 loaded at run time. A PyGObject or GJS app loads libgtk-4 through
 * GObject introspection (g_module_open → dlopen) well after main(); the
 * agent, waiting since its constructor found no GTK (agent.c), watches
 * dlopen and activates when a call leaves libgtk-4 loaded.
 *
 * What the app observes of dlopen is unchanged: the real call's result is
 * returned as is, and the check for GTK walks the loaded objects with
 * dl_iterate_phdr (no dlopen, no dlsym of its own that could leave a
 * message for the app's next dlerror()). Activation itself looks up the
 * toolkit's functions with dlsym; a failed look-up's message is cleared, as
 * the app's dlopen succeeded and its dlerror() must say nothing.
 *
 * Activation happens inside the dlopen call that loaded GTK, before the
 * app can call GTK: GtkWidget's type is registered later, on first use, so
 * its construction hook (types.c) is in place in time. main() had already
 * run: its time was kept (late_on_main) and is reported with the start-up
 * marks; `agent_init` then comes after `main`. When the loading thread is
 * the main thread (as in Python and GJS) the agent sets up there and then;
 * otherwise at the first window built (pages.c).
 *
 * Cost while waiting: one atomic load per dlopen, and a walk of the loaded
 * objects per successful one; none once active or dormant for good.
 */
#include "agent.h"

#include <dlfcn.h>

typedef void *(*dlopen_fn)(const char *, int);
static dlopen_fn real_dlopen;
static _Atomic int64_t main_ns;

void late_on_main(void)
{
    atomic_store(&main_ns, pacer_now_ns());
}

AGENT_EXPORT void *dlopen(const char *file, int mode)
{
    if (!real_dlopen) {
        real_dlopen = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
        if (!real_dlopen)
            return NULL;
    }
    void *h = real_dlopen(file, mode);
    if (!h || !agent_waiting() || agent_in_hook)
        return h;
    agent_in_hook++;
    if (agent_lib_loaded(AGENT_LIBGTK)) {
        bool main_thread = agent_on_gtk_thread();
        if (agent_activate_late(atomic_load(&main_ns)) && main_thread)
            agent_setup();
        (void)dlerror(); /* the app's call succeeded: nothing to report */
    }
    agent_in_hook--;
    return h;
}
