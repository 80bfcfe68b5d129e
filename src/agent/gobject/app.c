/* "Application created" and handoff for GApplication programs (DESIGN
 * §3.2), GTK 3 and GTK 4 alike.
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
#include "gobj.h"

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
    /* also notified when it unregisters, at its end: is_remote asks a
     * registered application only */
    if (!agent_active() || !g_application_get_is_registered((GApplication *)app) ||
        !g_application_get_is_remote((GApplication *)app))
        return;
    pacer_event ev = {.type = PACER_EV_HANDOFF};
    agent_submit(&ev);
}

void gobj_app_on_application(GTypeInstance *app)
{
    g_signal_connect_data(app, "notify::is-registered", G_CALLBACK(on_registered), NULL, NULL, 0);
}

void gobj_app_install(void)
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
