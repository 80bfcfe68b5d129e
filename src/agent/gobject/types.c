/* Seeing a widget's construction begin (DESIGN §2, onCreate), for the
 * GTK adapter in force (GTK 3 and GTK 4 alike).
 *
 * A request a page starts inside its own init must already find the page in
 * the model, so the agent needs to see each new instance *before* the init
 * code of the app's class runs — earlier than any public GTK call can show
 * it. It gets that from the type system: g_type_register_static_simple() and
 * g_type_register_static() are exported by libgobject and called through the
 * PLT by every library that registers a type (GTK 4 itself is linked
 * -Bsymbolic, but that only binds GTK's calls to GTK's own functions). When
 * GtkWidget registers, its instance_init is replaced by a trampoline that
 * reports the new instance (to the adapter's construct function, with the
 * instance's own type) and then runs GtkWidget's init. GObject runs instance inits from the
 * root type down, so the trampoline runs before GtkWidget's own init and
 * before every subclass's: the reported moment precedes all of the app's
 * construction code, for windows and for pages alike.
 *
 * Which instances are pages is decided per instance by the adapter from
 * the config in force then, so a page type that arrives in a config from
 * the server is measured from its next instance on, whenever its type was
 * registered.
 *
 * Cost: one check per widget created (a type test, and a lookup of the type
 * among the configured pages cached per config, in the adapter).
 *
 * GApplication's instance_init gets a trampoline the same way: every
 * application instance is handed to app.c (gobj_app_on_application), which
 * watches its registration for a handoff to a running instance.
 *
 * The wraps are made only once a GTK adapter attached
 * (gobj_types_watch_widgets): in any other program these hooks forward.
 *
 * Limit: when GtkWidget was registered before the adapter attached, no
 * construction can be seen (gobj_types_check says so).
 */
#include "gobj.h"

#include <string.h>

typedef GType (*register_simple_fn)(GType, const gchar *, guint, GClassInitFunc, guint, GInstanceInitFunc,
                                    GTypeFlags);
typedef GType (*register_static_fn)(GType, const gchar *, const GTypeInfo *, GTypeFlags);

static register_simple_fn real_register_simple;
static register_static_fn real_register_static;

static _Atomic(gobj_construct_fn) on_widget; /* the adapter's */
static GInstanceInitFunc widget_init;  /* GtkWidget's own instance_init */
static _Atomic bool widget_registered; /* through this hook */
static GInstanceInitFunc application_init;
static _Atomic bool application_registered;

static void widget_init_trampoline(GTypeInstance *instance, gpointer klass)
{
    if (!agent_in_hook && agent_active() && agent_on_main_thread()) {
        agent_in_hook++;
        atomic_load(&on_widget)(instance, G_TYPE_FROM_CLASS(klass));
        gobj_leaks_on_construct(instance);
        agent_in_hook--;
    }
    if (widget_init)
        widget_init(instance, klass);
}

static void application_init_trampoline(GTypeInstance *instance, gpointer klass)
{
    if (application_init)
        application_init(instance, klass);
    if (!agent_in_hook && agent_active()) {
        agent_in_hook++;
        gobj_app_on_application(instance);
        agent_in_hook--;
    }
}

/* The init to register for type `name`: a trampoline for GtkWidget and
 * GApplication, once each. (Registration may nest — register_static_simple
 * calling register_static — and the flags keep it to one wrap. The agent's
 * own set-up registers GApplication, with agent_in_hook set: that one is
 * wrapped too.) */
static GInstanceInitFunc maybe_wrap(const char *name, GInstanceInitFunc init)
{
    if (!atomic_load(&on_widget) || !name)
        return init;
    if (strcmp(name, "GtkWidget") == 0 && !agent_in_hook && !atomic_exchange(&widget_registered, true)) {
        widget_init = init;
        return widget_init_trampoline;
    }
    if (strcmp(name, "GApplication") == 0 && !atomic_exchange(&application_registered, true)) {
        application_init = init;
        return application_init_trampoline;
    }
    return init;
}

AGENT_EXPORT GType g_type_register_static_simple(GType parent_type, const gchar *type_name, guint class_size,
                                                 GClassInitFunc class_init, guint instance_size,
                                                 GInstanceInitFunc instance_init, GTypeFlags flags)
{
    AGENT_REAL(real_register_simple, AGENT_LIBGOBJECT, "g_type_register_static_simple");
    GInstanceInitFunc init = maybe_wrap(type_name, instance_init);
    /* The guard also covers the real call: libgobject may route it through
     * g_type_register_static, which must not wrap a second time. */
    agent_in_hook++;
    GType t = real_register_simple(parent_type, type_name, class_size, class_init, instance_size, init, flags);
    agent_in_hook--;
    return t;
}

AGENT_EXPORT GType g_type_register_static(GType parent_type, const gchar *type_name, const GTypeInfo *info,
                                          GTypeFlags flags)
{
    AGENT_REAL(real_register_static, AGENT_LIBGOBJECT, "g_type_register_static");
    if (!info)
        return real_register_static(parent_type, type_name, info, flags);
    GInstanceInitFunc init = maybe_wrap(type_name, info->instance_init);
    if (init == info->instance_init)
        return real_register_static(parent_type, type_name, info, flags);
    GTypeInfo copy = *info; /* GLib copies the fields it keeps */
    copy.instance_init = init;
    agent_in_hook++;
    GType t = real_register_static(parent_type, type_name, &copy, flags);
    agent_in_hook--;
    return t;
}

void gobj_types_watch_widgets(gobj_construct_fn fn)
{
    atomic_store(&on_widget, fn);
}

void gobj_types_check(void)
{
    if (!atomic_load(&widget_registered) && g_type_from_name("GtkWidget"))
        agent_note_once("gtkwidget", "GtkWidget was registered before the agent loaded; pages are not measured");
}
