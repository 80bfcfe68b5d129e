/* The GTK 4 adapter (adapter.h, gtk4.h).
 *
 *   attach   GLib's and GTK 4's functions are found (those GTK 3 shares
 *            by name into gobject/'s table too); GtkWidget's
 *            construction is watched (gobject/types.c) and handed to
 *            pages.c; the page life cycle shared with GTK 3
 *            (gobject/pages.c; the app's gtk_stack_add_named reaches it
 *            through gobject/calls.c) and GObject leaks (gobject/leaks.c) get this adapter's side.
 *   install  the application-created mark, libsoup (whichever is
 *            loaded), --leaks=refs' stack store.
 *   flush    the frames of every window since its last record, failed
 *            libsoup requests still waiting for their error text.
 */
#include "gtk4.h"
#include "adapter.h"

#include <errno.h>

/* A widget's construction: its type's layout and paint timed
 * (--frames=detail), then is it a page. */
static void on_construct(GTypeInstance *instance, GType type)
{
    gtk4_widget_times_on_construct(type);
    gtk4_pages_on_construct(instance, type);
}

static int gtk4_attach(const char **ret_missing)
{
    if (!gobj_api_load(GTK4_LIB, GTK4_LIB, ret_missing) || !gtk4_api_load(ret_missing))
        return -ENOENT;
    gobj_pages_set_hooks(&gtk4_page_hooks);
    gobj_types_watch_widgets(on_construct);
    gobj_leaks_set_walk(&gtk4_leak_walk);
    gobj_types_check();
    return 0;
}

static void gtk4_install(void)
{
    gobj_app_install();
    soup2_install();
    soup3_install();
    gobj_leaks_install();
}

static void gtk4_flush(void)
{
    frameclock_frames_flush_all();
    soup2_flush();
    soup3_flush();
}

const agent_adapter agent_adapter_gtk4 = {
    .name = "gtk4",
    .title = "GTK 4",
    .soname = GTK4_LIB,
    .measures = ADAPTER_PAGES | ADAPTER_FRAMES | ADAPTER_REQUESTS,
    .attach = gtk4_attach,
    .install = gtk4_install,
    .flush = gtk4_flush,
    .visible_page = gobj_pages_visible,
};
