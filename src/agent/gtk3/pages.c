/* Page life cycle on GTK 3 (DESIGN §2, §3.1): which GTK 3 moment is which
 * page event, for windows (kind "window") and stack / notebook pages (kind
 * "page") — the GTK 4 adapter's meanings (gtk4/pages.c), from GTK 3's API.
 *
 *   event          window                          page
 *   -------------  ------------------------------  ---------------------------------
 *   create         construction begins (types.c:   likewise, for a type the config in
 *                  GtkWidget's instance_init)      force names; or gtk_stack_add_named/
 *                                                  _titled with a configured name; or
 *                                                  a stack page whose name (from a
 *                                                  GtkBuilder file) is configured,
 *                                                  when it first becomes visible
 *   view_created   its child added (GtkContainer   gets a parent (notify::parent):
 *                  "add": an emission hook)        added to its stack / notebook
 *   show           first "map": the widget could be seen (a window shown; a
 *                  page the visible child of a mapped stack or notebook)
 *   draw           the frame reached the display, in a frame where the widget
 *                  itself drew (its "draw" signal ran) while mapped: after-
 *                  paint of the window's frame clock, unless the frame is
 *                  still queued in the display library then (Wayland: GDK
 *                  commits at after-paint and flushes at its next wait),
 *                  then the hand-over that follows (display.c); listening
 *                  on map, not on unmap
 *   select+scroll  —                               becomes the visible child of its
 *                                                  stack (notify::visible-child) or the
 *                                                  current page of its notebook
 *                                                  (switch-page)
 *   destroy        "destroy" (gtk_widget_destroy emits it at once in GTK 3)
 *
 * Windows: GTK 3 builds its menus, tooltips, combo-box and completion
 * pop-ups as GtkWindows too, and tells them apart only by the "type"
 * property g_object_new sets after the instance's init: a window of a class
 * of the app's (GtkApplicationWindow, GtkDialog, any subclass) is a page
 * from its construction as in GTK 4; GtkTooltipWindow and
 * GtkOffscreenWindow never are; a plain GtkWindow becomes a page when it is
 * first shown as a top-level (GTK_WINDOW_TOPLEVEL), and its creation is
 * then — a plain GtkWindow has no init code of the app's that could start a
 * request earlier.
 *
 * What GTK 3 and GTK 4 share — a page's state and events, draws thinned at
 * the source, the selection, the visible page, page ids, the page types
 * the config names — is gobject/pages.c's; this file is GTK 3's side of it
 * (gobj_page_hooks): the "draw" signal, GtkContainer::add, the windows
 * above, a destroyed window's mark.
 *
 * Windows also get their frames counted (window_frames.c), on the same
 * frame clock subscription.
 */
#include "gtk3.h"

#include <string.h>

typedef struct page {
    gobj_page base; /* first */
    gulong draw_id; /* its "draw" handler, while mapped */
} page;

/* ---- draws ---- */

/* The widget drew in this frame ("draw", between the clock's paint and
 * after-paint). FALSE: the emission goes on as without the agent. */
static gboolean on_draw(GtkWidget *w, cairo_t *cr, gpointer data)
{
    gobj_page_painted(data);
    return FALSE;
}

static void on_mapped(gobj_page *pg, GObject *w)
{
    page *p = (page *)pg;
    if (!p->draw_id)
        p->draw_id = g_signal_connect_data(w, "draw", G_CALLBACK(on_draw), pg, NULL, 0);
    gtk3_frames_on_map(pg->frames, GTK_WIDGET(w));
}

static void on_unmapped(gobj_page *pg)
{
    page *p = (page *)pg;
    if (p->draw_id)
        g_signal_handler_disconnect(pg->obj, p->draw_id);
    p->draw_id = 0;
}

/* ---- destroy ---- */

static void on_gone(gobj_page *pg)
{
    if (pg->window)
        g_object_set_qdata(pg->obj, g_quark_from_static_string(GTK3_DESTROYED_QUARK), GINT_TO_POINTER(1));
}

/* ---- view created ---- */

/* GtkContainer::add of any container (an emission hook: a window's
 * handler cannot be connected while GtkWidget's init runs, before the
 * instance is a GtkContainer): a window page got its child. */
static gboolean on_add(GSignalInvocationHint *hint, guint n, const GValue *params, gpointer data)
{
    gobj_page *pg = n >= 2 && agent_active() ? gobj_page_of(g_value_get_object(&params[0])) : NULL;
    if (pg && pg->window && g_value_get_object(&params[1])) {
        agent_in_hook++;
        gobj_pages_view_created(pg);
        agent_in_hook--;
    }
    return TRUE; /* keep the hook */
}

static void on_tracked(gobj_page *pg)
{
    static bool done;
    if (!pg->window)
        return;
    pg->frames = gtk3_frames_new(pg->class_name, pg->id);
    if (done)
        return;
    done = true;
    GType container = gtk_container_get_type();
    g_type_class_ref(container); /* signals exist once the class does */
    guint id = g_signal_lookup("add", container);
    if (id)
        g_signal_add_emission_hook(id, 0, on_add, NULL, NULL);
}

/* ---- creation ---- */

const gobj_page_hooks gtk3_page_hooks = {
    .page_size = sizeof(page),
    .defer_draws = true,
    .tracked = on_tracked,
    .mapped = on_mapped,
    .unmapped = on_unmapped,
    .gone = on_gone,
};

/* A plain GtkWindow: a page once it is first mapped as a top-level (the
 * header). */
static void on_plain_window_map(GtkWidget *w, gpointer data)
{
    if (!agent_active() || gobj_page_of(w) || gtk_window_get_window_type(GTK_WINDOW(w)) != GTK_WINDOW_TOPLEVEL)
        return; /* a pop-up: at each map, one call */
    agent_in_hook++;
    gobj_pages_track((GObject *)w, "GtkWindow", true);
    gobj_page *pg = gobj_page_of(w);
    if (pg) {
        if (gtk_bin_get_child(GTK_BIN(w)))
            gobj_pages_view_created(pg);
        gobj_pages_on_map((GObject *)w, pg);
    }
    agent_in_hook--;
}

void gtk3_pages_on_construct(GTypeInstance *instance, GType type)
{
    bool window;
    if (!gobj_pages_construct(instance, type, &window))
        return;
    const char *name = g_type_name(type);
    if (window && (strcmp(name, "GtkTooltipWindow") == 0 || strcmp(name, "GtkOffscreenWindow") == 0))
        return; /* never a top-level the user opened */
    if (window && strcmp(name, "GtkWindow") == 0) {
        g_signal_connect_data(instance, "map", G_CALLBACK(on_plain_window_map), NULL, NULL, 0);
        return;
    }
    agent_setup(); /* normally done at main(); a window built earlier does it */
    gobj_pages_track((GObject *)instance, name, window);
}
