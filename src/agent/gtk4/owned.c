/* What a GTK 4 page owns, for GObject leaks (gobject/leaks.c; gobj.h's
 * gobj_leak_walk).
 *
 *   owned    a widget's children (internal children, popovers and the
 *            titlebar included), its event controllers and its layout
 *            manager;
 *   in_use   a widget whose root is a window in the toplevel list (moved
 *            to another window), or a controller or layout manager of such
 *            a widget;
 *   holder   a widget's parent, a controller's or layout manager's widget;
 *   known    leaks of GTK 4 itself that no application can avoid, each
 *            seen with the programs of gtk-4-examples (docs/agent.md).
 */
#include "gtk4.h"

static bool is_a(GObject *o, GType t)
{
    return t && g_type_is_a(G_OBJECT_TYPE(o), t);
}

static void owned(GObject *o, void *set, void (*add)(void *set, GObject *obj))
{
    if (!is_a(o, gtk_widget_get_type()))
        return;
    GtkWidget *w = GTK_WIDGET(o);
    for (GtkWidget *c = gtk_widget_get_first_child(w); c; c = gtk_widget_get_next_sibling(c))
        add(set, (GObject *)c);
    GListModel *ctl = gtk_widget_observe_controllers(w);
    if (ctl) {
        guint n = g_list_model_get_n_items(ctl);
        for (guint k = 0; k < n; k++) {
            GObject *c = g_list_model_get_item(ctl, k);
            add(set, c);
            if (c)
                g_object_unref(c);
        }
        g_object_unref(ctl);
    }
    add(set, (GObject *)gtk_widget_get_layout_manager(w));
}

static bool root_is_live(GtkWidget *w)
{
    GtkRoot *root = w ? gtk_widget_get_root(w) : NULL;
    if (!root)
        return false;
    GListModel *top = gtk_window_get_toplevels();
    guint n = g_list_model_get_n_items(top);
    bool live = false;
    for (guint i = 0; i < n && !live; i++) {
        gpointer item = g_list_model_get_item(top, i);
        live = item == (gpointer)root;
        if (item)
            g_object_unref(item);
    }
    return live;
}

static bool in_use(GObject *o)
{
    if (is_a(o, gtk_widget_get_type()))
        return root_is_live(GTK_WIDGET(o));
    if (is_a(o, gtk_event_controller_get_type()))
        return root_is_live(gtk_event_controller_get_widget(GTK_EVENT_CONTROLLER(o)));
    if (is_a(o, gtk_layout_manager_get_type()))
        return root_is_live(gtk_layout_manager_get_widget(GTK_LAYOUT_MANAGER(o)));
    return false;
}

static GObject *holder(GObject *o)
{
    if (is_a(o, gtk_widget_get_type()))
        return (GObject *)gtk_widget_get_parent(GTK_WIDGET(o));
    if (is_a(o, gtk_event_controller_get_type()))
        return (GObject *)gtk_event_controller_get_widget(GTK_EVENT_CONTROLLER(o));
    if (is_a(o, gtk_layout_manager_get_type()))
        return (GObject *)gtk_layout_manager_get_widget(GTK_LAYOUT_MANAGER(o));
    return NULL;
}

/* type "*": any object of a page of that class (or a subclass) that stays
 * alive. */
static const gobj_known_leak known[] = {
    /* GTK 4.8: a destroyed GtkAssistant's pages keep their widgets (the
     * references gtk_assistant_append_page takes are never dropped) */
    {"gtk-assistant-pages", "*", "GtkAssistant"},
    /* the inspector's own window keeps parts of itself for the next one */
    {"gtk-inspector", "*", "GtkInspectorWindow"},
    {NULL, NULL, NULL},
};

const gobj_leak_walk gtk4_leak_walk = {
    .owned = owned,
    .in_use = in_use,
    .holder = holder,
    .known = known,
};
