/* Start-up marks (DESIGN §3.2): main() entry and "application created".
 *
 * main(): the agent exports __libc_start_main, which every dynamically
 * linked glibc program calls from its entry point; it hands the real one a
 * trampoline in place of main that marks PACER_EV_MAIN and then calls main.
 * That moment is also where the agent finishes setting up (agent_setup):
 * every library constructor has run by then, so classes of GIO and libsoup
 * can be referenced safely.
 *
 * Application created: an emission hook on GApplication::activate (and
 * ::open, ::command-line — whichever the app answers to) marks
 * PACER_EV_APP_CREATED once. Emission hooks run before any handler, so the
 * mark is the moment activation begins, before the app builds its first
 * window. Apps without GApplication get the first window's creation from
 * the model instead (DESIGN §2).
 *
 * Handoff: a unique GApplication started while an instance of it runs
 * registers, finds itself remote, passes its activation to the running
 * instance over D-Bus and returns from g_application_run() without a window
 * or a local `activate`. Every GApplication instance comes here from its
 * instance_init (types.c); a handler on its notify::is-registered (emitted
 * by g_application_register() once is-remote is known) marks
 * PACER_EV_HANDOFF when it is remote. The model then writes a `handoff`
 * start-up record, not an empty cold start.
 */
#include "agent.h"

#include <unistd.h>

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);

static main_fn real_main;
static start_main_fn real_libc_start_main;
static bool app_created_marked;

static gboolean on_app_signal(GSignalInvocationHint *hint, guint n, const GValue *params, gpointer data)
{
    if (app_created_marked || !agent_active())
        return FALSE; /* removes the hook */
    app_created_marked = true;
    pacer_event ev = {.type = PACER_EV_APP_CREATED};
    agent_submit(&ev);
    return FALSE;
}

static void on_registered(GObject *app, GParamSpec *pspec, gpointer data)
{
    if (!agent_active() || !g_application_get_is_remote((GApplication *)app))
        return;
    pacer_event ev = {.type = PACER_EV_HANDOFF};
    agent_submit(&ev);
}

void start_on_application(GTypeInstance *app)
{
    g_signal_connect_data(app, "notify::is-registered", G_CALLBACK(on_registered), NULL, NULL, 0);
}

/* The "application created" mark (a feature: agent.c installs it). */
void start_install(void)
{
    GType app_type = g_application_get_type();
    if (app_type) {
        g_type_class_ref(app_type); /* signals exist once the class does; kept for the process */
        static const char *const names[] = {"activate", "open", "command-line"};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            guint id = g_signal_lookup(names[i], app_type);
            if (id)
                g_signal_add_emission_hook(id, 0, on_app_signal, NULL, NULL);
        }
    }
}

static int main_trampoline(int argc, char **argv, char **envp)
{
    if (agent_active()) {
        pacer_event ev = {.type = PACER_EV_MAIN};
        agent_submit(&ev);
        agent_setup();
    } else if (agent_waiting()) {
        late_on_main();
    }
    return real_main(argc, argv, envp);
}

AGENT_EXPORT int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                                   void (*rtld_fini)(void), void *stack_end);
AGENT_EXPORT int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                                   void (*rtld_fini)(void), void *stack_end)
{
    AGENT_REAL(real_libc_start_main, NULL, "__libc_start_main");
    if (!real_libc_start_main)
        _exit(127); /* cannot happen with glibc; nothing sensible is left to do */
    real_main = main;
    return real_libc_start_main(main_trampoline, argc, argv, init, fini, rtld_fini, stack_end);
}
