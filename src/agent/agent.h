/* Internal interface of libpacer-agent.so, the LD_PRELOAD module that
 * measures an unmodified GTK4 application (docs/agent.md).
 *
 * Components, one file each:
 *   agent.c      life cycle: activation in the constructor, the features
 *                table (install at setup, stop and flush at exit), fork,
 *                the config in force, "say it once" notes;
 *   api.c        the one way to other code's functions (api.h);
 *   start.c      start-up marks: main() entry (__libc_start_main), where
 *                setup runs, and "application created";
 *   types.c      construction hooks: GtkWidget's instance_init reports every
 *                window and every configured page before its own init code
 *                runs;
 *   pages.c      page life cycle: view created, draws, select and scroll
 *                (stack / notebook), destroy; the visible page;
 *   frameclock.c one subscription per frame clock, shared by everything that
 *                follows a window's frames (pages.c, frames.c);
 *   frames.c     `frames` records: frame-clock cycles of each window, graded;
 *   soup.c       libsoup-3.0 requests (emission hooks);
 *   curl.c       libcurl requests (easy and multi interface);
 *   net.c        the request events and the `net` record both share;
 *   mainloop.c   busy time of every main-loop iteration (the hot path);
 *   watchdog.c   the thread that notices a stuck iteration and has its stack
 *                taken; `jank` records are written from there;
 *   stack.c      capture of the stuck main thread's stack, unwinding;
 *   jank.c       the `jank` record: symbols, fingerprint;
 *   late.c       GTK 4 loaded after start (dlopen: PyGObject, GJS): activate
 *                then;
 *   exit.c       ended by a signal (SIGTERM, SIGINT, SIGHUP, SIGABRT,
 *                SIGTRAP) or by _exit (a display gone away): write what is
 *                pending, then end as the process would have.
 *
 * Records are built with the core's record API (pacer/record.h) and handed
 * over with pacer_submit_record(); the agent writes no JSON.
 *
 * Threads: GTK work (pages.c, types.c, frames.c, frameclock.c) happens on
 * the GTK thread only; request hooks run on whatever thread the app uses.
 */
#ifndef PACER_AGENT_H
#define PACER_AGENT_H

#define CURL_DISABLE_TYPECHECK 1

#include "api.h"

#include <pacer/pacer.h>

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

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

/* Runs every feature's install step, once, on the GTK thread: at main(), or
 * earlier when the app builds a window before main() (a constructor). */
void agent_setup(void);

/* GTK 4 was not loaded at start: the agent waits for it (late.c). */
bool agent_waiting(void);
/* GTK 4 is loaded now: finds the toolkit and goes ACTIVE, once; main_ns is
 * when main() was entered (0: unknown). Any thread. False when the agent
 * was not waiting or cannot measure this program. */
bool agent_activate_late(int64_t main_ns);
/* start.c's main() trampoline: main() entered while waiting. */
void late_on_main(void);

/* The exit sequence, once: every feature's stop, then (when gtk_still: the
 * GTK thread is the caller, or is held in a signal handler) every flush, in
 * reverse table order; then the core writes and uploads what is left. Any
 * thread. */
void agent_finish(bool gtk_still);

/* The config in force (the core's: a config from the server replaces the
 * local one), as a new reference the caller releases with
 * pacer_config_unref(). Any thread; cheap unless the config changed. */
pacer_config *agent_config(void);

/* Submits one event; t_ns == 0 means now, stamped by the core under its
 * lock. Any thread; does nothing when the agent is not active. */
void agent_submit(const pacer_event *ev);

/* Submits a record (taking it), also while exit flushes pending records.
 * NULL is ignored. */
void agent_submit_record(pacer_record *rec);

/* Prints "pacer-agent: <message>" to stderr, once per `key` (a static
 * string identifying the note): how a feature that cannot work says so. */
void agent_note_once(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whether this process is the one the agent measures (or the program
 * `pacer run` started): false in a fork's or vfork's child. Async-signal-safe. */
bool agent_is_owner(void);

/* Whether pthread_self() is the thread GTK runs on (the thread that loaded
 * the agent, which enters main()). */
bool agent_on_gtk_thread(void);

/* Bumped at every request end, after its api_end event: a page draws again
 * after any request ended (its final draw); otherwise only its first draw
 * is reported. */
extern _Atomic uint64_t agent_net_epoch;

/* ---- features (agent.c drives them: install at setup; stop, flush at exit) ---- */
void exit_install(void); /* exit.c: the exit signals and _exit write what is pending */
/* exit.c: the process calls _exit or _Exit (agent.c). In the measured
 * process (not a fork's or vfork's child) runs the exit sequence on the exit
 * thread and waits for it, at most a few seconds; returns at once when an
 * exit is already being handled or the exit thread is missing.
 * Async-signal-safe: any thread, also from a signal handler. */
void exit_on_exit_call(void);
void start_install(void);    /* start.c: GApplication created */
/* start.c: a GApplication instance was constructed (types.c's trampoline) */
void start_on_application(GTypeInstance *app);
void soup_install(void);     /* soup.c: when libsoup-3.0 is loaded */
void soup_flush(void);       /* soup.c: failed requests still waiting for their error text */
void mainloop_install(void); /* mainloop.c: the default context's poll function */
void watchdog_start(void);   /* watchdog.c */
/* Stops it: an iteration still stuck is reported as ongoing. Waits at most
 * about a second. */
void watchdog_stop(void);
/* frames.c: the frames since their last record, of every window. */
void frames_flush_all(void);

/* ---- types.c ---- */
/* Checks, at activation, that GtkWidget is not registered yet (else
 * construction cannot be seen) and says so once when it is. */
void types_check(void);

/* ---- pages.c ---- */
/* A new widget instance starts its construction (GtkWidget's instance_init,
 * before the subclasses' inits): pages.c decides whether it is a page. */
void pages_on_construct(GTypeInstance *instance, GType type);
/* Hooks from app calls (gtk_window_set_child, gtk_stack_add_named/_titled). */
void pages_on_window_child(GtkWindow *window);
void pages_on_stack_add(GtkStack *stack, GtkWidget *child, const char *name);
/* The class of the page visible now (the visible stack page of the window
 * that painted last, or that window), or NULL. Any thread: an atomic read
 * of a string that lives as long as the process. */
const char *pages_visible(void);

/* ---- frameclock.c ---- */
typedef struct clock_listener clock_listener;
struct clock_listener {
    /* any may be NULL; `now` is CLOCK_MONOTONIC ns, read once per signal */
    void (*before_paint)(clock_listener *l, int64_t now);
    void (*update)(clock_listener *l);
    void (*paint)(clock_listener *l);
    void (*after_paint)(clock_listener *l, GdkFrameClock *clock, int64_t now);
    /* frameclock.c's */
    GdkFrameClock *clock; /* a reference while listening */
    clock_listener *next;
};
/* Starts listening to the frame clock of `widget` (mapped), unless already
 * listening. Returns false when the widget has no frame clock. GTK thread. */
bool frameclock_listen(clock_listener *l, GtkWidget *widget);
/* Stops listening; does nothing when not listening. GTK thread. */
void frameclock_unlisten(clock_listener *l);

/* ---- frames.c ---- */
typedef struct frame_stats frame_stats;
/* Counts the frames of a window while it is mapped; its records carry
 * `class_name` and `instance` (the window's page id). NULL on ENOMEM. */
frame_stats *frames_new(const char *class_name, uint64_t instance);
/* The window was mapped (start counting) or unmapped (its final record). */
void frames_on_map(frame_stats *f, GtkWidget *window);
void frames_on_unmap(frame_stats *f);
/* Writes what is pending and frees. Accepts NULL. */
void frames_free(frame_stats *f);

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
    int64_t end_ns;        /* when it ended (CLOCK_MONOTONIC; 0: now) */
} net_info;

/* The `net` record of one finished request (docs/records.md). */
void net_emit(const net_info *n);
/* The page model's request events; `req` is the library's handle. */
void net_request_start(const char *url, const void *req, int64_t t_ns);
void net_request_end(const char *url, const void *req, int status, int64_t t_ns);

/* ---- mainloop.c ---- */
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
 * (the loop was idle until then); 0 before any. */
int64_t mainloop_wait_end(void);
/* Any thread: iterations at least this long are kept for mainloop_take_long. */
void mainloop_set_jank_ns(int64_t ns);
/* Iterations lost because the watchdog did not take them in time. */
uint64_t mainloop_lost(void);

/* ---- stack.c ---- */
#define STACK_MAX_FRAMES 64
typedef struct stack_trace {
    uint64_t pc[STACK_MAX_FRAMES]; /* [0] = where the thread was; callers' return addresses after */
    size_t n;
    bool truncated; /* the unwinding stopped before the outermost frame */
} stack_trace;
/* Sets up capture of the calling thread (the main thread): cheap, nothing
 * is read (the stack's bounds are found at the first capture). Returns
 * false (said once) when capture cannot work here. */
bool stack_init(void);
/* Watchdog thread: the main thread's stack into *ret, taken without
 * interrupting it when it can be (stack.c). *ret_method: "syscall",
 * "perf" or "signal" (NULL when none was taken). Returns 0, -EAGAIN (no
 * stack within timeout_ms: the signal not taken, or the thread neither
 * sampled nor steadily asleep), -ENOTSUP (no capture). */
int stack_capture(stack_trace *ret, int timeout_ms, const char **ret_method);

/* ---- jank.c ---- */
/* Watchdog thread: writes the `jank` record of one long iteration. `st` is
 * its stack (NULL: not captured, see stack_status); `page` the page that
 * was visible (NULL: none known). */
void jank_emit(const loop_span *span, int64_t hang_ns, const stack_trace *st, const char *stack_status,
               const char *stack_method, const char *page, bool ongoing);

/* ---- leaks.c, heap.c (leaks.h has the rest) ---- */
/* GtkWidget's instance_init ran for `instance` (types.c): its creation
 * stack, when --leaks=refs or native wants it. GTK thread. */
void leaks_on_construct(GTypeInstance *instance);
/* A page was destroyed (pages.c): watch it and what it owns until the
 * leak check. GTK thread, while its widget tree is still whole. */
void leaks_on_page_gone(GObject *obj, const char *class_name, uint64_t instance, bool window);
/* At setup: what --leaks=refs and native need (the stack store). */
void leaks_install(void);
/* At exit (--leaks=native): the mark phase and the native `leak` records. */
void heap_exit_check(void);

#endif
