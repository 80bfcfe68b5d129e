/* The GTK 3 adapter (adapter.h): pages, their draws and frames of GTK 3
 * programs, from GTK's own signals — the same records and meanings as the
 * GTK 4 adapter's (gtk4/), from GTK 3's API.
 *
 *   gtk3.c           the adapter: attach (functions, construction hook),
 *                    install, flush;
 *   gtk3_api.c       the table of GTK 3 and GDK 3 functions below;
 *   pages.c          page life cycle: view created, draws, select and
 *                    scroll (stack / notebook), destroy; the visible page;
 *   window_frames.c  `frames` records from each window's frame clock;
 *   owned.c          what a page owns, for GObject leaks.
 *
 * Every GTK and GDK function the adapter calls is found by name when it
 * attaches (the agent links no toolkit); each name is defined to its slot
 * of `gtk3_fn`, beside gobj.h's GLib ones. GTK thread: the main thread.
 */
#ifndef PACER_AGENT_GTK3_H
#define PACER_AGENT_GTK3_H

#define G_DISABLE_CAST_CHECKS 1
#define GDK_DISABLE_DEPRECATION_WARNINGS 1

#include <gtk/gtk.h>

#include "gobj.h"

#define GTK3_LIB "libgtk-3.so.0"
#define GDK3_LIB "libgdk-3.so.0"

#define GTK3_FUNCTIONS(X)                           \
    X(GTK3_LIB, gtk_widget_get_type)                \
    X(GTK3_LIB, gtk_window_get_type)                \
    X(GTK3_LIB, gtk_container_get_type)             \
    X(GTK3_LIB, gtk_widget_get_frame_clock)         \
    X(GTK3_LIB, gtk_widget_get_parent)              \
    X(GTK3_LIB, gtk_widget_get_toplevel)            \
    X(GTK3_LIB, gtk_widget_in_destruction)          \
    X(GTK3_LIB, gtk_bin_get_child)                  \
    X(GTK3_LIB, gtk_window_get_window_type)         \
    X(GTK3_LIB, gtk_window_list_toplevels)          \
    X(GTK3_LIB, gtk_container_forall)               \
    X(AGENT_LIBGLIB, g_list_free)

typedef struct gtk3_table {
#define GTK3_SLOT(lib, name) __typeof__(name) *name;
    GTK3_FUNCTIONS(GTK3_SLOT)
#undef GTK3_SLOT
} gtk3_table;

extern gtk3_table gtk3_fn;

/* Fills gtk3_fn; false with *ret_missing naming the first missing
 * function. */
bool gtk3_api_load(const char **ret_missing);

#ifndef GTK3_API_TABLE_ONLY
#define gtk_widget_get_type (*gtk3_fn.gtk_widget_get_type)
#define gtk_window_get_type (*gtk3_fn.gtk_window_get_type)
#define gtk_container_get_type (*gtk3_fn.gtk_container_get_type)
#define gtk_widget_get_frame_clock (*gtk3_fn.gtk_widget_get_frame_clock)
#define gtk_widget_get_parent (*gtk3_fn.gtk_widget_get_parent)
#define gtk_widget_get_toplevel (*gtk3_fn.gtk_widget_get_toplevel)
#define gtk_widget_in_destruction (*gtk3_fn.gtk_widget_in_destruction)
#define gtk_bin_get_child (*gtk3_fn.gtk_bin_get_child)
#define gtk_window_get_window_type (*gtk3_fn.gtk_window_get_window_type)
#define gtk_window_list_toplevels (*gtk3_fn.gtk_window_list_toplevels)
#define gtk_container_forall (*gtk3_fn.gtk_container_forall)
#define g_list_free (*gtk3_fn.g_list_free)
#endif

/* ---- pages.c ---- */
/* A new widget instance starts its construction (GtkWidget's instance_init,
 * before the subclasses' inits): is it a page? (gobj_construct_fn) */
void gtk3_pages_on_construct(GTypeInstance *instance, GType type);
/* GTK 3's side of gobject/pages.c. */
extern const gobj_page_hooks gtk3_page_hooks;

/* ---- window_frames.c ---- */
/* Counts the frames of a window while it is mapped (gobject/frameclock.c's
 * clock_frames: unmapped and freed by frameclock_frames_unmap and
 * frameclock_frames_free); its records carry `class_name` and `instance`
 * (the window's page id). NULL on ENOMEM. */
clock_frames *gtk3_frames_new(const char *class_name, uint64_t instance);
/* The window was mapped: counting starts. Accepts NULL. */
void gtk3_frames_on_map(clock_frames *f, GtkWidget *window);

/* A window destroyed (pages.c) carries this qdata: GTK 3 keeps it in the
 * toplevel list until it is finalized. */
#define GTK3_DESTROYED_QUARK "pacer-agent-destroyed"

/* ---- owned.c ---- */
/* What a GTK 3 page owns, for GObject leaks. */
extern const gobj_leak_walk gtk3_leak_walk;

#endif
