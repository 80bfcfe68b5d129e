/* What a GTK 3 page owns, for GObject leaks (gobject/leaks.c; gobj.h's
 * gobj_leak_walk).
 *
 *   owned    a container's children, internal ones included
 *            (gtk_container_forall: a dialog's action area, a notebook's
 *            tab labels);
 *   in_use   a widget whose toplevel is a window in
 *            gtk_window_list_toplevels() that was not destroyed (moved to
 *            another window; GTK 3 keeps a destroyed window in the list
 *            until it is finalized: pages.c marks it);
 *   holder   a widget's parent;
 *   known    leaks of GTK 3 itself that no application can avoid: none
 *            seen with gtk-3-examples' programs.
 */
#include "gtk3.h"

static bool is_a(GObject *o, GType t)
{
    return t && g_type_is_a(G_OBJECT_TYPE(o), t);
}

typedef struct walk {
    void *set;
    void (*add)(void *set, GObject *obj);
} walk;

static void add_child(GtkWidget *child, gpointer data)
{
    walk *w = data;
    w->add(w->set, (GObject *)child);
}

static void owned(GObject *o, void *set, void (*add)(void *set, GObject *obj))
{
    if (!is_a(o, gtk_container_get_type()))
        return;
    walk w = {set, add};
    gtk_container_forall(GTK_CONTAINER(o), add_child, &w);
}

static bool in_use(GObject *o)
{
    if (!is_a(o, gtk_widget_get_type()))
        return false;
    GtkWidget *top = gtk_widget_get_toplevel(GTK_WIDGET(o));
    if (!top || !is_a((GObject *)top, gtk_window_get_type()) || gtk_widget_in_destruction(top) ||
        g_object_get_qdata((GObject *)top, g_quark_from_static_string(GTK3_DESTROYED_QUARK)))
        return false;
    GList *list = gtk_window_list_toplevels();
    bool live = false;
    for (GList *l = list; l && !live; l = l->next)
        live = l->data == (gpointer)top;
    g_list_free(list);
    return live;
}

static GObject *holder(GObject *o)
{
    return is_a(o, gtk_widget_get_type()) ? (GObject *)gtk_widget_get_parent(GTK_WIDGET(o)) : NULL;
}

const gobj_leak_walk gtk3_leak_walk = {
    .owned = owned,
    .in_use = in_use,
    .holder = holder,
    .known = NULL,
    .disposed_alive = true,
};
