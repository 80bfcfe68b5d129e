/* Page life cycle on GTK 4 (DESIGN §2, §3.1): which GTK moment is which
 * page event, for windows (kind "window") and stack / notebook pages (kind
 * "page").
 *
 *   event          window                          page
 *   -------------  ------------------------------  ---------------------------------
 *   create         construction begins (types.c:   likewise, for a type the config in
 *                  GtkWidget's instance_init)      force names; or gtk_stack_add_named/
 *                                                  _titled with a configured name; or
 *                                                  a stack page whose name (from a
 *                                                  GtkBuilder file) is configured,
 *                                                  when it first becomes visible
 *   view_created   child set: gtk_window_set_child  gets a parent (notify::parent):
 *                  called by the app, else         added to its stack / notebook
 *                  notify::child
 *   show           first "map": the widget could be seen (a window shown; a
 *                  page the visible child of a mapped stack or notebook)
 *   draw           after-paint of the widget's frame clock, in a frame that
 *                  painted, while the widget is mapped (listening on map,
 *                  not on unmap; gobject/frameclock.c)
 *   select+scroll  —                               becomes the visible child of its
 *                                                  stack (notify::visible-child; also
 *                                                  AdwViewStack) or the current page
 *                                                  of its notebook (switch-page)
 *   destroy        leaves gtk_window_get_toplevels() ("destroy" signal)
 *                  or "destroy"
 *
 * What GTK 4 and GTK 3 share — a page's state and events, draws thinned at
 * the source, the selection, the visible page, page ids, the page types
 * the config names — is gobject/pages.c's; this file is GTK 4's side of it
 * (gobj_page_hooks): the clock's paint, the window's child, the toplevel
 * list.
 *
 * Windows also get their frames counted (window_frames.c), on the same
 * frame clock subscription.
 */
#include "gtk4.h"

typedef struct page {
    gobj_page base; /* first */
    bool in_toplevels;
    struct page *next_window;
} page;

static page *windows; /* window pages, for the toplevel list check */
static bool toplevels_watched;

/* ---- draws ---- */

static void on_paint(clock_listener *l)
{
    gobj_page_painted((gobj_page *)l);
}

static void on_mapped(gobj_page *pg, GObject *w)
{
    gtk4_frames_on_map(pg->frames, GTK_WIDGET(w));
}

/* ---- destroy ---- */

/* gtk_window_destroy() drops GTK's reference and removes the window from
 * the toplevel list, but the "destroy" signal waits for the last reference
 * (which the app may hold): leaving the list is the reliable moment. */
static void on_toplevels_changed(GListModel *list, guint pos, guint removed, guint added, gpointer data)
{
    guint n = g_list_model_get_n_items(list);
    for (page *pg = windows; pg; pg = pg->next_window) {
        if (pg->base.destroyed)
            continue;
        bool present = false;
        for (guint i = 0; i < n && !present; i++) {
            gpointer item = g_list_model_get_item(list, i);
            present = item == (gpointer)pg->base.obj;
            if (item)
                g_object_unref(item);
        }
        if (present)
            pg->in_toplevels = true;
        else if (pg->in_toplevels)
            gobj_pages_gone(&pg->base);
    }
}

/* ---- view created ---- */

static void on_child_notify(GObject *win, GParamSpec *pspec, gpointer data)
{
    if (gtk_window_get_child(GTK_WINDOW(win)))
        gobj_pages_view_created(data);
}

/* ---- creation ---- */

static void on_tracked(gobj_page *gp)
{
    page *pg = (page *)gp;
    gp->listener.paint = on_paint;
    if (!gp->window)
        return;
    gp->frames = gtk4_frames_new(gp->class_name, gp->id);
    g_signal_connect_data(gp->obj, "notify::child", G_CALLBACK(on_child_notify), gp, NULL, 0);
    pg->next_window = windows;
    windows = pg;
    if (!toplevels_watched) {
        toplevels_watched = true;
        g_signal_connect_data(gtk_window_get_toplevels(), "items-changed", G_CALLBACK(on_toplevels_changed), NULL,
                              NULL, 0);
    }
}

static void on_freed(gobj_page *gp)
{
    for (page **it = &windows; *it; it = &(*it)->next_window) {
        if (*it == (page *)gp) {
            *it = (*it)->next_window;
            break;
        }
    }
}

const gobj_page_hooks gtk4_page_hooks = {
    .page_size = sizeof(page),
    .tracked = on_tracked,
    .mapped = on_mapped,
    .freed = on_freed,
};

void gtk4_pages_on_construct(GTypeInstance *instance, GType type)
{
    bool window;
    if (!gobj_pages_construct(instance, type, &window))
        return;
    agent_setup(); /* normally done at main(); a window built earlier does it */
    gobj_pages_track((GObject *)instance, g_type_name(type), window);
}

static void pages_on_window_child(GtkWindow *window)
{
    gobj_page *pg = gobj_page_of(window);
    if (pg && gtk_window_get_child(window))
        gobj_pages_view_created(pg);
}

/* ---- GTK 4 calls made by the application (GTK's own calls are bound
 * inside libgtk and never come here; the signals above cover them; the
 * names GTK 3 shares are gobject/calls.c's). ---- */

typedef void (*set_child_fn)(GtkWindow *, GtkWidget *);
static set_child_fn real_gtk_window_set_child;

AGENT_EXPORT void gtk_window_set_child(GtkWindow *window, GtkWidget *child)
{
    AGENT_REAL(real_gtk_window_set_child, GTK4_LIB, "gtk_window_set_child");
    real_gtk_window_set_child(window, child);
    if (!agent_in_hook && agent_active() && agent_on_main_thread()) {
        agent_in_hook++;
        pages_on_window_child(window);
        agent_in_hook--;
    }
}
