/* Internal interface of libpacer-agent.so, the LD_PRELOAD module that
 * measures an unmodified GTK4 application (docs/agent.md).
 *
 * Components, one file each:
 *   agent.c   life cycle: activation in the constructor (only in a GTK4
 *             process that no instrumented ancestor already claimed), the
 *             pacer instance, fork and exit handling, "say it once" notes;
 *   start.c   start-up marks: main() entry (__libc_start_main) and
 *             "application created" (GApplication::activate);
 *   types.c   construction hooks: GType registration is intercepted so that
 *             GtkWindow's and every configured page type's instance_init
 *             report the new instance before its own init code runs;
 *   pages.c   page life cycle: view created, draws (frame clock), select and
 *             scroll (stack / notebook), destroy;
 *   soup.c    libsoup-3.0 requests (emission hooks on SoupSession and
 *             SoupMessage signals);
 *   curl.c    libcurl requests (easy and multi interface);
 *   net.c     the `net` record shared by soup.c and curl.c.
 *
 * Linking: the agent never links GLib, GTK, libsoup or libcurl. GLib, GObject
 * and GTK functions are weak references (see the list at the end of this
 * file): they resolve when the program itself loaded those libraries, and
 * stay NULL in any other process, where the agent stays dormant and never
 * calls them. libsoup and libcurl functions are looked up with dlsym. So
 * `pacer run -- /bin/true` maps no toolkit: only the agent and what the
 * pacer core linked into it needs (libexpat, libsqlite3, libcurl, libjansson).
 *
 * Threads: GTK work (pages.c, types.c) happens on the GTK thread only;
 * request hooks run on whatever thread the app uses for them.
 */
#ifndef PACER_AGENT_H
#define PACER_AGENT_H

#define G_DISABLE_CAST_CHECKS 1
#define CURL_DISABLE_TYPECHECK 1

#include <pacer/pacer.h>

#include <gtk/gtk.h>

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define AGENT_HIDDEN __attribute__((visibility("hidden")))
#define AGENT_EXPORT __attribute__((visibility("default")))

/* ---- agent.c ---- */

/* The per-thread recursion guard every hook takes around its own work
 * (never around the call to the real function, so that objects and requests
 * made inside the real call are still seen). */
extern __thread int agent_in_hook __attribute__((tls_model("initial-exec")));

/* True once the agent activated in this process (GTK4 program, not a child
 * of an instrumented process, pacer instance created), until exit starts or
 * a fork child is detected. Cheap: one atomic load. */
bool agent_active(void);

/* The page config loaded from PACER_CONFIG, or NULL (zero config). Owned by
 * the agent; valid for the life of the process. */
pacer_config *agent_config(void);

/* Submits one event to the pacer instance; t_ns == 0 means now. Safe from
 * any thread at any time: does nothing when the agent is not active. */
void agent_submit(const pacer_event *ev);

/* Emits a record of `type` with members `fields` (see pacer_emit). */
void agent_emit(const char *type, const char *fields);

/* Prints "pacer-agent: <message>" to stderr, once per `key` (a static
 * string identifying the note): how a feature that cannot work says so. */
void agent_note_once(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whether `pthread_self()` is the thread GTK runs on (the thread that
 * entered main(), or the one that loaded the agent). */
bool agent_on_gtk_thread(void);

/* Bumped at every request end: a page draws again after any request ended
 * (its final draw), otherwise only its first draw is reported. */
extern _Atomic uint64_t agent_net_epoch;

/* ---- start.c ---- */
/* Installs the GApplication emission hook (app created). GTK thread. */
void start_install(void);

/* ---- types.c ---- */
/* Checks, at activation, that GtkWindow is not registered yet (else its
 * construction cannot be seen) and says so once when it is. */
void types_check(void);

/* ---- pages.c ---- */
/* A new instance of GtkWindow (window=true) or of a configured page type
 * starts its construction. `klass` is the class of the type being built. */
void pages_on_construct(GTypeInstance *instance, gpointer klass, bool window);
/* Hooks from app calls (gtk_window_set_child, gtk_stack_add_named/_titled). */
void pages_on_window_child(GtkWindow *window);
void pages_on_stack_add(GtkStack *stack, GtkWidget *child, const char *name);

/* ---- soup.c / curl.c ---- */
void soup_install(void); /* when libsoup-3.0 is loaded; GTK thread */

/* ---- net.c ---- */
typedef struct net_info {
    const char *lib;          /* "soup" / "curl" */
    const char *method;       /* may be NULL → "GET" */
    const char *url;
    int status;               /* HTTP status, 0 = transport failure */
    int64_t bytes_sent;       /* headers + body, -1 = unknown */
    int64_t bytes_received;   /* headers + body, -1 = unknown */
    int64_t body_received;    /* response body alone, -1 = unknown */
    const char *content_type; /* may be NULL */
    /* phase durations in ns, -1 = not measured (e.g. reused connection → 0) */
    int64_t dns_ns, connect_ns, tls_ns;
    int64_t first_byte_ns; /* request start → first response byte */
    int64_t total_ns;      /* request start → end */
    const char *error;     /* transport error text, NULL when none */
} net_info;

/* Emits the `net` record for one finished request (docs/agent.md). */
void net_emit(const net_info *n);

/* The request-end bookkeeping common to both libraries: api_end event and
 * the draw epoch. `req` is the library's handle pointer. */
void net_request_start(const char *url, const void *req, int64_t t_ns);
void net_request_end(const char *url, const void *req, int status, int64_t t_ns);

/* ---- GLib / GObject / GTK: weak references (see the top of this file). ---- */
#pragma weak g_type_name
#pragma weak g_type_is_a
#pragma weak g_type_from_name
#pragma weak g_type_class_ref
#pragma weak g_type_parent
#pragma weak g_signal_lookup
#pragma weak g_signal_add_emission_hook
#pragma weak g_signal_connect_data
#pragma weak g_signal_handler_disconnect
#pragma weak g_object_set_qdata_full
#pragma weak g_object_get_qdata
#pragma weak g_object_steal_qdata
#pragma weak g_quark_from_static_string
#pragma weak g_object_ref
#pragma weak g_object_unref
#pragma weak g_object_get
#pragma weak g_object_class_find_property
#pragma weak g_object_add_weak_pointer
#pragma weak g_object_remove_weak_pointer
#pragma weak g_object_weak_ref
#pragma weak g_value_get_object
#pragma weak g_value_get_pointer
#pragma weak g_list_model_get_n_items
#pragma weak g_list_model_get_item
#pragma weak g_application_get_type
#pragma weak g_uri_to_string_partial
#pragma weak g_free
#pragma weak gtk_widget_get_type
#pragma weak gtk_window_get_type
#pragma weak gtk_notebook_get_type
#pragma weak gtk_widget_get_mapped
#pragma weak gtk_widget_get_frame_clock
#pragma weak gtk_widget_get_parent
#pragma weak gtk_window_get_child
#pragma weak gtk_window_get_toplevels
#pragma weak gdk_frame_clock_get_type

#endif
