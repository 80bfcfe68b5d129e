/* The GTK 3 adapter (adapter.h, gtk3.h).
 *
 *   attach   GLib's, GTK 3's and GDK 3's functions are found (those GTK 4
 *            shares by name into gobject/'s table too); GtkWidget's
 *            construction is watched (gobject/types.c) and handed to
 *            pages.c; the page life cycle shared with GTK 4
 *            (gobject/pages.c; the app's gtk_stack_add_named reaches it
 *            through gobject/calls.c) and GObject leaks (gobject/leaks.c) get this adapter's side.
 *   install  the application-created mark, libsoup (libsoup-2.4, what
 *            GTK 3 apps mostly use, or libsoup-3.0), --leaks=refs' stack
 *            store.
 *   flush    the frames of every window since its last record, failed
 *            libsoup requests still waiting for their error text.
 */
#include "gtk3.h"
#include "adapter.h"

#include <errno.h>

static int gtk3_attach(const char **ret_missing)
{
    if (!gobj_api_load(GTK3_LIB, GDK3_LIB, ret_missing) || !gtk3_api_load(ret_missing))
        return -ENOENT;
    gobj_pages_set_hooks(&gtk3_page_hooks);
    gobj_types_watch_widgets(gtk3_pages_on_construct);
    gobj_leaks_set_walk(&gtk3_leak_walk);
    gobj_types_check();
    return 0;
}

static void gtk3_install(void)
{
    gobj_app_install();
    soup2_install();
    soup3_install();
    gobj_leaks_install();
}

static void gtk3_flush(void)
{
    frameclock_frames_flush_all();
    soup2_flush();
    soup3_flush();
}

const agent_adapter agent_adapter_gtk3 = {
    .name = "gtk3",
    .title = "GTK 3",
    .soname = GTK3_LIB,
    .measures = ADAPTER_PAGES | ADAPTER_FRAMES | ADAPTER_REQUESTS,
    .attach = gtk3_attach,
    .install = gtk3_install,
    .flush = gtk3_flush,
    .visible_page = gobj_pages_visible,
};
