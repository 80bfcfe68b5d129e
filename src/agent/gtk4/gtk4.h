/* The GTK 4 adapter (adapter.h): pages, their draws and frames of GTK 4
 * programs, from GTK's own signals.
 *
 *   gtk4.c           the adapter: attach (functions, construction hook),
 *                    install, flush;
 *   gtk4_api.c       the table of GTK 4 functions below;
 *   pages.c          page life cycle: view created, draws, select and
 *                    scroll (stack / notebook), destroy; the visible page;
 *   window_frames.c  `frames` records from each window's frame clock;
 *   owned.c          what a page owns, for GObject leaks.
 *
 * Every GTK and GDK function the adapter calls is found by name when it
 * attaches (the agent links no toolkit); each name is defined to its slot
 * of `gtk4_fn` below, beside gobj.h's GLib ones. GTK thread: the main
 * thread.
 */
#ifndef PACER_AGENT_GTK4_H
#define PACER_AGENT_GTK4_H

#define G_DISABLE_CAST_CHECKS 1

#include <gtk/gtk.h>

#include "gobj.h"

#define GTK4_LIB "libgtk-4.so.1"

#define GTK4_FUNCTIONS(X)                            \
    X(GTK4_LIB, gtk_widget_get_type)                 \
    X(GTK4_LIB, gtk_widget_get_frame_clock)          \
    X(GTK4_LIB, gtk_widget_get_parent)               \
    X(GTK4_LIB, gtk_widget_get_root)                 \
    X(GTK4_LIB, gtk_window_get_child)                \
    X(GTK4_LIB, gtk_window_get_toplevels)            \
    X(GTK4_LIB, gtk_native_get_surface)              \
    X(GTK4_LIB, gdk_surface_get_type)                \
    X(GTK4_LIB, gdk_surface_get_frame_clock)         \
    X(GTK4_LIB, gdk_toplevel_get_type)               \
    X(GTK4_LIB, gtk_widget_get_first_child)          \
    X(GTK4_LIB, gtk_widget_get_next_sibling)         \
    X(GTK4_LIB, gtk_widget_observe_controllers)      \
    X(GTK4_LIB, gtk_widget_get_layout_manager)       \
    X(GTK4_LIB, gtk_event_controller_get_type)       \
    X(GTK4_LIB, gtk_event_controller_get_widget)     \
    X(GTK4_LIB, gtk_layout_manager_get_type)         \
    X(GTK4_LIB, gtk_layout_manager_get_widget)       \
    X(AGENT_LIBGIO, g_list_model_get_n_items)        \
    X(AGENT_LIBGIO, g_list_model_get_item)

typedef struct gtk4_table {
#define GTK4_SLOT(lib, name) __typeof__(name) *name;
    GTK4_FUNCTIONS(GTK4_SLOT)
#undef GTK4_SLOT
} gtk4_table;

extern gtk4_table gtk4_fn;

/* Fills gtk4_fn; false with *ret_missing naming the first missing
 * function. */
bool gtk4_api_load(const char **ret_missing);

#ifndef GTK4_API_TABLE_ONLY
#define gtk_widget_get_type (*gtk4_fn.gtk_widget_get_type)
#define gtk_widget_get_frame_clock (*gtk4_fn.gtk_widget_get_frame_clock)
#define gtk_widget_get_parent (*gtk4_fn.gtk_widget_get_parent)
#define gtk_widget_get_root (*gtk4_fn.gtk_widget_get_root)
#define gtk_window_get_child (*gtk4_fn.gtk_window_get_child)
#define gtk_window_get_toplevels (*gtk4_fn.gtk_window_get_toplevels)
#define gtk_native_get_surface (*gtk4_fn.gtk_native_get_surface)
#define gdk_surface_get_type (*gtk4_fn.gdk_surface_get_type)
#define gdk_surface_get_frame_clock (*gtk4_fn.gdk_surface_get_frame_clock)
#define gdk_toplevel_get_type (*gtk4_fn.gdk_toplevel_get_type)
#define gtk_widget_get_first_child (*gtk4_fn.gtk_widget_get_first_child)
#define gtk_widget_get_next_sibling (*gtk4_fn.gtk_widget_get_next_sibling)
#define gtk_widget_observe_controllers (*gtk4_fn.gtk_widget_observe_controllers)
#define gtk_widget_get_layout_manager (*gtk4_fn.gtk_widget_get_layout_manager)
#define gtk_event_controller_get_type (*gtk4_fn.gtk_event_controller_get_type)
#define gtk_event_controller_get_widget (*gtk4_fn.gtk_event_controller_get_widget)
#define gtk_layout_manager_get_type (*gtk4_fn.gtk_layout_manager_get_type)
#define gtk_layout_manager_get_widget (*gtk4_fn.gtk_layout_manager_get_widget)
#define g_list_model_get_n_items (*gtk4_fn.g_list_model_get_n_items)
#define g_list_model_get_item (*gtk4_fn.g_list_model_get_item)
#endif

/* ---- pages.c ---- */
/* A new widget instance starts its construction (GtkWidget's instance_init,
 * before the subclasses' inits): is it a page? (gobj_construct_fn) */
void gtk4_pages_on_construct(GTypeInstance *instance, GType type);
/* GTK 4's side of gobject/pages.c. */
extern const gobj_page_hooks gtk4_page_hooks;

/* ---- window_frames.c ---- */
/* Counts the frames of a window while it is mapped (gobject/frameclock.c's
 * clock_frames: unmapped and freed by frameclock_frames_unmap and
 * frameclock_frames_free); its records carry `class_name` and `instance`
 * (the window's page id). NULL on ENOMEM. */
clock_frames *gtk4_frames_new(const char *class_name, uint64_t instance);
/* The window was mapped: counting starts. Accepts NULL. */
void gtk4_frames_on_map(clock_frames *f, GtkWidget *window);

/* ---- widget_times.c: --frames=detail ---- */
/* A widget of `type` is being constructed: its classes' layout and paint
 * functions are timed from now on (only with frames_detail()). */
void gtk4_widget_times_on_construct(GType type);
/* A frame-clock cycle begins: the widget times start from zero. */
void gtk4_widget_times_reset(void);
/* The widget types' own times in the cycle so far (*ret_n of them). */
const frame_widget_time *gtk4_widget_times(size_t *ret_n);

/* ---- owned.c ---- */
/* What a GTK 4 page owns, for GObject leaks. */
extern const gobj_leak_walk gtk4_leak_walk;

#endif
