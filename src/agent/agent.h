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
 *   net.c     the `net` record shared by soup.c and curl.c;
 *   mainloop.c  busy time of every main-loop iteration (the hot path: a
 *             wrapper around the main context's poll function);
 *   watchdog.c  the thread that notices a stuck iteration, has its stack
 *             taken and writes `jank` records; live thresholds;
 *   stack.c   capture of the main thread's stack while it is stuck (a
 *             signal, a copy of its registers and stack) and unwinding of
 *             the copy with libdw, off the main thread;
 *   jank.c    the `jank` record: symbols (libpacer-symbols), fingerprint;
 *   frames.c  `frames` records: frame-clock cycles of each window, graded.
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

/* ---- mainloop.c ---- */
/* Wraps the default main context's poll function (GTK thread, at main()). */
void mainloop_install(void);
/* One iteration of the main thread that was busy for at least the jank
 * threshold: from poll returning (start) to the next poll (end). */
typedef struct loop_span {
    int64_t start, end; /* CLOCK_MONOTONIC ns */
} loop_span;
/* Watchdog thread only: takes the oldest long iteration not yet taken.
 * Returns false when there is none. */
bool mainloop_take_long(loop_span *ret);
/* Any thread: when the iteration running now began, or 0 while the main
 * thread waits in poll (or before the loop first ran). */
int64_t mainloop_busy_since(void);
/* Main thread: when the main loop last returned from a poll that waited
 * (the loop was idle until then); 0 before any. frames.c tells a frame the
 * busy loop delayed from one nobody asked for earlier. */
int64_t mainloop_wait_end(void);
/* Any thread: iterations at least this long are kept for mainloop_take_long. */
void mainloop_set_jank_ns(int64_t ns);
/* Iterations lost because the watchdog did not take them in time. */
uint64_t mainloop_lost(void);

/* ---- watchdog.c ---- */
/* Starts the watchdog thread (GTK thread, from mainloop_install). */
void watchdog_start(void);
/* Stops it (at exit, before pacer_shutdown()): an iteration still stuck is
 * reported as ongoing. Waits at most about a second. Any thread. */
void watchdog_stop(void);

/* ---- stack.c ---- */
#define STACK_MAX_FRAMES 64
typedef struct stack_trace {
    uint64_t pc[STACK_MAX_FRAMES]; /* [0] = where the thread was; callers' return addresses after */
    size_t n;
    bool truncated; /* the unwinding stopped before the outermost frame */
} stack_trace;
/* Sets up capture on the calling thread (the main thread): picks a free
 * real-time signal, installs its handler, finds the thread's stack. Returns
 * false (said once) when capture cannot work here. */
bool stack_init(void);
/* Watchdog thread: signals the main thread, waits up to timeout_ms for its
 * handler to copy registers and stack, unwinds the copy into *ret.
 * Returns 0, -EAGAIN (the main thread did not answer in time: it blocks the
 * signal or is in the kernel uninterruptibly), -ENOTSUP (no capture). */
int stack_capture(stack_trace *ret, int timeout_ms);

/* ---- jank.c ---- */
/* Watchdog thread: writes the `jank` record of one long iteration. `st` is
 * its stack (NULL: not captured, see stack_status); `page` the page that
 * was visible (NULL: none known). */
void jank_emit(const loop_span *span, int64_t hang_ns, const stack_trace *st, const char *stack_status,
               const char *page, bool ongoing);

/* ---- frames.c ---- */
/* A toplevel window was created: its frames are counted while it is
 * mapped. GTK thread. */
void frames_track(GtkWindow *window, const char *class_name);
/* Writes the `frames` records of every window with counted frames (exit). */
void frames_flush_all(void);

/* ---- pages.c: the visible page ---- */
/* The class of the page visible now (the visible stack page of the window
 * that painted last, or that window), or NULL. Any thread: an atomic read of
 * a string that lives as long as the process. */
const char *pages_visible(void);

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
#pragma weak gdk_frame_clock_get_refresh_info
#pragma weak gdk_frame_clock_get_frame_time
#pragma weak g_main_context_default
#pragma weak g_main_context_get_poll_func
#pragma weak g_poll
#pragma weak g_quark_from_string
#pragma weak g_quark_to_string
#pragma weak gtk_widget_get_root

#endif
