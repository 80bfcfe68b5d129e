/* How the agent reaches functions that are not its own: one way for all.
 *
 * The agent links no toolkit (docs/agent.md): every GLib, GObject, GDK and
 * GTK function it calls, and the real function behind each of its hooks, is
 * looked up by name with agent_real() — dlsym(RTLD_NEXT), which finds the
 * definition after the agent's own, else through the handle of the library
 * named, for libraries loaded outside the global scope (dlopen RTLD_LOCAL:
 * the core's uploader loads libcurl that way). Never RTLD_DEFAULT: it would
 * find the agent's own hooks first.
 *
 * The toolkit's functions live in one table, `agent_fn`, filled by
 * agent_api_load() once GTK is in the process; below the table, each name is
 * defined to its slot, so code calls g_type_name() as it would with GLib
 * linked. Nothing in the agent may call one of them before agent_api_load()
 * returned true (agent_active() guarantees it).
 */
#ifndef PACER_AGENT_API_H
#define PACER_AGENT_API_H

#define G_DISABLE_CAST_CHECKS 1

#include <gtk/gtk.h>

#include <stdbool.h>

/* The definition of `name` after the agent's (RTLD_NEXT), or in the library
 * `soname` when it is loaded but not in the global scope (soname may be
 * NULL). NULL when neither has it. Any thread. */
void *agent_real(const char *soname, const char *name);

/* Whether a library of that file name (a soname: "libgtk-4.so.1") is
 * loaded, by the name of the file it was loaded from. Walks the loaded
 * objects (dl_iterate_phdr): unlike dlopen(RTLD_NOLOAD), which for a name it
 * does not find loaded searches every library directory on disk, it opens
 * no file and leaves nothing for the app's dlerror(). Any thread. */
bool agent_lib_loaded(const char *soname);

/* A hook's real function, resolved on first use into `*slot` (a function
 * pointer). */
#define AGENT_REAL(slot, soname, name)                         \
    do {                                                       \
        if (!(slot))                                           \
            *(void **)&(slot) = agent_real((soname), (name));  \
    } while (0)

#define AGENT_LIBGLIB "libglib-2.0.so.0"
#define AGENT_LIBGOBJECT "libgobject-2.0.so.0"
#define AGENT_LIBGIO "libgio-2.0.so.0"
#define AGENT_LIBGTK "libgtk-4.so.1"

/* The toolkit functions the agent calls: X(library, name). */
#define AGENT_TOOLKIT_FUNCTIONS(X)                                                              \
    X(AGENT_LIBGLIB, g_free)                                                                    \
    X(AGENT_LIBGLIB, g_quark_from_static_string)                                                \
    X(AGENT_LIBGLIB, g_quark_from_string)                                                       \
    X(AGENT_LIBGLIB, g_quark_to_string)                                                         \
    X(AGENT_LIBGLIB, g_main_context_default)                                                    \
    X(AGENT_LIBGLIB, g_main_context_get_poll_func)                                              \
    X(AGENT_LIBGLIB, g_poll)                                                                    \
    X(AGENT_LIBGLIB, g_uri_to_string_partial)                                                   \
    X(AGENT_LIBGOBJECT, g_type_name)                                                            \
    X(AGENT_LIBGOBJECT, g_type_is_a)                                                            \
    X(AGENT_LIBGOBJECT, g_type_from_name)                                                       \
    X(AGENT_LIBGOBJECT, g_type_class_ref)                                                       \
    X(AGENT_LIBGOBJECT, g_signal_lookup)                                                        \
    X(AGENT_LIBGOBJECT, g_signal_add_emission_hook)                                             \
    X(AGENT_LIBGOBJECT, g_signal_connect_data)                                                  \
    X(AGENT_LIBGOBJECT, g_signal_handler_disconnect)                                            \
    X(AGENT_LIBGOBJECT, g_object_set_qdata_full)                                                \
    X(AGENT_LIBGOBJECT, g_object_set_qdata)                                                     \
    X(AGENT_LIBGOBJECT, g_object_get_qdata)                                                     \
    X(AGENT_LIBGOBJECT, g_object_ref)                                                           \
    X(AGENT_LIBGOBJECT, g_object_unref)                                                         \
    X(AGENT_LIBGOBJECT, g_object_get)                                                           \
    X(AGENT_LIBGOBJECT, g_object_class_find_property)                                           \
    X(AGENT_LIBGOBJECT, g_object_add_weak_pointer)                                              \
    X(AGENT_LIBGOBJECT, g_object_remove_weak_pointer)                                           \
    X(AGENT_LIBGOBJECT, g_value_get_object)                                                     \
    X(AGENT_LIBGIO, g_list_model_get_n_items)                                                   \
    X(AGENT_LIBGIO, g_list_model_get_item)                                                      \
    X(AGENT_LIBGIO, g_application_get_type)                                                     \
    X(AGENT_LIBGTK, gtk_widget_get_type)                                                        \
    X(AGENT_LIBGTK, gtk_window_get_type)                                                        \
    X(AGENT_LIBGTK, gtk_notebook_get_type)                                                      \
    X(AGENT_LIBGTK, gtk_widget_get_mapped)                                                      \
    X(AGENT_LIBGTK, gtk_widget_get_frame_clock)                                                 \
    X(AGENT_LIBGTK, gtk_widget_get_parent)                                                      \
    X(AGENT_LIBGTK, gtk_widget_get_root)                                                        \
    X(AGENT_LIBGTK, gtk_window_get_child)                                                       \
    X(AGENT_LIBGTK, gtk_window_get_toplevels)                                                   \
    X(AGENT_LIBGTK, gtk_native_get_surface)                                                     \
    X(AGENT_LIBGTK, gdk_surface_get_type)                                                       \
    X(AGENT_LIBGTK, gdk_frame_clock_get_refresh_info)                                           \
    X(AGENT_LIBGTK, gdk_frame_clock_get_frame_time)                                             \
    X(AGENT_LIBGLIB, g_timeout_add_full)                                                        \
    X(AGENT_LIBGLIB, g_error_free)                                                              \
    X(AGENT_LIBGIO, g_application_get_is_remote)                                                \
    X(AGENT_LIBGTK, gtk_stack_get_type)                                                         \
    X(AGENT_LIBGTK, gtk_stack_get_visible_child)                                                \
    X(AGENT_LIBGTK, gtk_stack_get_visible_child_name)                                           \
    X(AGENT_LIBGLIB, g_idle_add_full)                                                           \
    X(AGENT_LIBGOBJECT, g_object_is_floating)                                                   \
    X(AGENT_LIBGOBJECT, g_weak_ref_init)                                                        \
    X(AGENT_LIBGOBJECT, g_weak_ref_get)                                                         \
    X(AGENT_LIBGOBJECT, g_weak_ref_clear)                                                       \
    X(AGENT_LIBGTK, gtk_widget_get_first_child)                                                 \
    X(AGENT_LIBGTK, gtk_widget_get_next_sibling)                                                \
    X(AGENT_LIBGTK, gtk_widget_observe_controllers)                                             \
    X(AGENT_LIBGTK, gtk_widget_get_layout_manager)                                              \
    X(AGENT_LIBGTK, gtk_event_controller_get_type)                                              \
    X(AGENT_LIBGTK, gtk_event_controller_get_widget)                                            \
    X(AGENT_LIBGTK, gtk_layout_manager_get_type)                                                \
    X(AGENT_LIBGTK, gtk_layout_manager_get_widget)

typedef struct agent_toolkit {
#define AGENT_SLOT(lib, name) __typeof__(name) *name;
    AGENT_TOOLKIT_FUNCTIONS(AGENT_SLOT)
#undef AGENT_SLOT
} agent_toolkit;

extern agent_toolkit agent_fn;

/* Fills agent_fn. Returns true when every function was found (GTK 4 is in
 * the process); otherwise the table is left empty and *ret_missing names
 * the first missing function. Call again when a library is loaded later. */
bool agent_api_load(const char **ret_missing);

/* From here on the toolkit's names call through the table (except in
 * api.c, which fills it). */
#ifndef AGENT_API_TABLE_ONLY
/* GLib's own macros of these two (a fast path, a typed result) call the
 * function by name: they give way to the table. */
#undef g_type_is_a
#undef g_object_ref
#define g_free (*agent_fn.g_free)
#define g_quark_from_static_string (*agent_fn.g_quark_from_static_string)
#define g_quark_from_string (*agent_fn.g_quark_from_string)
#define g_quark_to_string (*agent_fn.g_quark_to_string)
#define g_main_context_default (*agent_fn.g_main_context_default)
#define g_main_context_get_poll_func (*agent_fn.g_main_context_get_poll_func)
#define g_poll (*agent_fn.g_poll)
#define g_uri_to_string_partial (*agent_fn.g_uri_to_string_partial)
#define g_type_name (*agent_fn.g_type_name)
#define g_type_is_a (*agent_fn.g_type_is_a)
#define g_type_from_name (*agent_fn.g_type_from_name)
#define g_type_class_ref (*agent_fn.g_type_class_ref)
#define g_signal_lookup (*agent_fn.g_signal_lookup)
#define g_signal_add_emission_hook (*agent_fn.g_signal_add_emission_hook)
#define g_signal_connect_data (*agent_fn.g_signal_connect_data)
#define g_signal_handler_disconnect (*agent_fn.g_signal_handler_disconnect)
#define g_object_set_qdata_full (*agent_fn.g_object_set_qdata_full)
#define g_object_set_qdata (*agent_fn.g_object_set_qdata)
#define g_object_get_qdata (*agent_fn.g_object_get_qdata)
#define g_object_ref (*agent_fn.g_object_ref)
#define g_object_unref (*agent_fn.g_object_unref)
#define g_object_get (*agent_fn.g_object_get)
#define g_object_class_find_property (*agent_fn.g_object_class_find_property)
#define g_object_add_weak_pointer (*agent_fn.g_object_add_weak_pointer)
#define g_object_remove_weak_pointer (*agent_fn.g_object_remove_weak_pointer)
#define g_value_get_object (*agent_fn.g_value_get_object)
#define g_list_model_get_n_items (*agent_fn.g_list_model_get_n_items)
#define g_list_model_get_item (*agent_fn.g_list_model_get_item)
#define g_application_get_type (*agent_fn.g_application_get_type)
#define gtk_widget_get_type (*agent_fn.gtk_widget_get_type)
#define gtk_window_get_type (*agent_fn.gtk_window_get_type)
#define gtk_notebook_get_type (*agent_fn.gtk_notebook_get_type)
#define gtk_widget_get_mapped (*agent_fn.gtk_widget_get_mapped)
#define gtk_widget_get_frame_clock (*agent_fn.gtk_widget_get_frame_clock)
#define gtk_widget_get_parent (*agent_fn.gtk_widget_get_parent)
#define gtk_widget_get_root (*agent_fn.gtk_widget_get_root)
#define gtk_window_get_child (*agent_fn.gtk_window_get_child)
#define gtk_window_get_toplevels (*agent_fn.gtk_window_get_toplevels)
#define gtk_native_get_surface (*agent_fn.gtk_native_get_surface)
#define gdk_surface_get_type (*agent_fn.gdk_surface_get_type)
#define gdk_frame_clock_get_refresh_info (*agent_fn.gdk_frame_clock_get_refresh_info)
#define gdk_frame_clock_get_frame_time (*agent_fn.gdk_frame_clock_get_frame_time)
#define g_timeout_add_full (*agent_fn.g_timeout_add_full)
#define g_error_free (*agent_fn.g_error_free)
#define g_application_get_is_remote (*agent_fn.g_application_get_is_remote)
#define gtk_stack_get_type (*agent_fn.gtk_stack_get_type)
#define gtk_stack_get_visible_child (*agent_fn.gtk_stack_get_visible_child)
#define gtk_stack_get_visible_child_name (*agent_fn.gtk_stack_get_visible_child_name)
#define g_idle_add_full (*agent_fn.g_idle_add_full)
#define g_object_is_floating (*agent_fn.g_object_is_floating)
#define g_weak_ref_init (*agent_fn.g_weak_ref_init)
#define g_weak_ref_get (*agent_fn.g_weak_ref_get)
#define g_weak_ref_clear (*agent_fn.g_weak_ref_clear)
#define gtk_widget_get_first_child (*agent_fn.gtk_widget_get_first_child)
#define gtk_widget_get_next_sibling (*agent_fn.gtk_widget_get_next_sibling)
#define gtk_widget_observe_controllers (*agent_fn.gtk_widget_observe_controllers)
#define gtk_widget_get_layout_manager (*agent_fn.gtk_widget_get_layout_manager)
#define gtk_event_controller_get_type (*agent_fn.gtk_event_controller_get_type)
#define gtk_event_controller_get_widget (*agent_fn.gtk_event_controller_get_widget)
#define gtk_layout_manager_get_type (*agent_fn.gtk_layout_manager_get_type)
#define gtk_layout_manager_get_widget (*agent_fn.gtk_layout_manager_get_widget)
#endif

#endif
