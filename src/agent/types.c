/* Seeing a page's construction begin (DESIGN §2, onCreate).
 *
 * A page id is its instance pointer, and a request the page starts inside
 * its own init must already find the page in the model. So the agent needs
 * the pointer *before* the init code of the app's class runs — earlier than
 * any public GTK call can give it. It gets it from the type system:
 * g_type_register_static_simple() / g_type_register_static() are exported by
 * libgobject and called through the PLT by every library and program that
 * registers a type (GTK 4 itself is linked -Bsymbolic, but that only binds
 * GTK's calls to GTK's own functions). When the type being registered is
 *   - GtkWindow: every window, of any subclass, runs its instance_init;
 *   - a configured page type (pacer_config_find_page on its name) deriving
 *     from GtkWidget but not from GtkWindow,
 * its instance_init is replaced by a trampoline that reports the instance
 * (pages_on_construct) and then runs the original init. GObject runs
 * instance inits from the root type down, so GtkWindow's runs after
 * GObject's and GtkWidget's and before every subclass's: the reported
 * moment precedes all of the app's construction code.
 *
 * Trampolines are a fixed pool of functions, one per wrapped type, each with
 * its slot of the original init (a function pointer cannot carry data, and
 * the agent generates no code at run time). When the pool is exhausted
 * further page types are not wrapped, and the agent says so once.
 *
 * Limit: a type registered before the agent's constructor ran cannot be
 * wrapped (types_check says so for GtkWindow). Types registered through
 * g_type_module_register_type (plugins) are not wrapped.
 */
#include "agent.h"

#include <dlfcn.h>
#include <string.h>

#define N_SLOTS 16

typedef GType (*register_simple_fn)(GType, const gchar *, guint, GClassInitFunc, guint, GInstanceInitFunc,
                                    GTypeFlags);
typedef GType (*register_static_fn)(GType, const gchar *, const GTypeInfo *, GTypeFlags);

static register_simple_fn real_register_simple;
static register_static_fn real_register_static;

static struct {
    GInstanceInitFunc orig;
    bool window;
} slots[N_SLOTS];
static _Atomic unsigned n_slots;
static _Atomic GType window_type;

static void tramp_run(unsigned i, GTypeInstance *instance, gpointer klass)
{
    if (!agent_in_hook && agent_active() && agent_on_gtk_thread()) {
        agent_in_hook++;
        pages_on_construct(instance, klass, slots[i].window);
        agent_in_hook--;
    }
    if (slots[i].orig)
        slots[i].orig(instance, klass);
}

#define TRAMP(i) \
    static void tramp_##i(GTypeInstance *instance, gpointer klass) { tramp_run(i, instance, klass); }
TRAMP(0) TRAMP(1) TRAMP(2) TRAMP(3) TRAMP(4) TRAMP(5) TRAMP(6) TRAMP(7)
TRAMP(8) TRAMP(9) TRAMP(10) TRAMP(11) TRAMP(12) TRAMP(13) TRAMP(14) TRAMP(15)
static const GInstanceInitFunc tramps[N_SLOTS] = {
    tramp_0, tramp_1, tramp_2, tramp_3, tramp_4, tramp_5, tramp_6, tramp_7,
    tramp_8, tramp_9, tramp_10, tramp_11, tramp_12, tramp_13, tramp_14, tramp_15,
};

/* Returns the trampoline to register in place of `init` for type `name`,
 * or `init` itself when the type is not one to watch. */
static GInstanceInitFunc maybe_wrap(GType parent, const char *name, GInstanceInitFunc init)
{
    if (agent_in_hook || !agent_active() || !name)
        return init;
    bool window = strcmp(name, "GtkWindow") == 0;
    if (!window) {
        pacer_config *cfg = agent_config();
        if (!cfg || pacer_config_find_page(cfg, name) < 0)
            return init;
        /* g_type_from_name never registers anything (gtk_widget_get_type
         * would, from inside a registration). */
        GType widget = g_type_from_name("GtkWidget");
        GType win = atomic_load(&window_type);
        if (!widget || !g_type_is_a(parent, widget))
            return init;
        if (win && g_type_is_a(parent, win))
            return init; /* a window subclass: GtkWindow's trampoline sees it */
    }
    unsigned i = atomic_fetch_add(&n_slots, 1);
    if (i >= N_SLOTS) {
        agent_note_once("slots", "more than %d page types configured; %s is not measured", N_SLOTS, name);
        return init;
    }
    slots[i].orig = init;
    slots[i].window = window;
    return tramps[i];
}

static void after_register(const char *name, GType type)
{
    if (type && name && strcmp(name, "GtkWindow") == 0)
        atomic_store(&window_type, type);
}

AGENT_EXPORT GType g_type_register_static_simple(GType parent_type, const gchar *type_name, guint class_size,
                                                 GClassInitFunc class_init, guint instance_size,
                                                 GInstanceInitFunc instance_init, GTypeFlags flags)
{
    if (!real_register_simple)
        real_register_simple = (register_simple_fn)dlsym(RTLD_NEXT, "g_type_register_static_simple");
    GInstanceInitFunc init = maybe_wrap(parent_type, type_name, instance_init);
    /* The guard also covers the real call: libgobject may route it through
     * g_type_register_static, which must not wrap a second time. */
    agent_in_hook++;
    GType t = real_register_simple(parent_type, type_name, class_size, class_init, instance_size, init, flags);
    agent_in_hook--;
    if (init != instance_init)
        after_register(type_name, t);
    return t;
}

AGENT_EXPORT GType g_type_register_static(GType parent_type, const gchar *type_name, const GTypeInfo *info,
                                          GTypeFlags flags)
{
    if (!real_register_static)
        real_register_static = (register_static_fn)dlsym(RTLD_NEXT, "g_type_register_static");
    if (!info)
        return real_register_static(parent_type, type_name, info, flags);
    GInstanceInitFunc init = maybe_wrap(parent_type, type_name, info->instance_init);
    if (init == info->instance_init)
        return real_register_static(parent_type, type_name, info, flags);
    GTypeInfo copy = *info; /* GLib copies the fields it keeps */
    copy.instance_init = init;
    agent_in_hook++;
    GType t = real_register_static(parent_type, type_name, &copy, flags);
    agent_in_hook--;
    after_register(type_name, t);
    return t;
}

void types_check(void)
{
    if (!atomic_load(&window_type) && g_type_from_name && g_type_from_name("GtkWindow"))
        agent_note_once("gtkwindow", "GtkWindow was registered before the agent loaded; windows are not measured");
}
