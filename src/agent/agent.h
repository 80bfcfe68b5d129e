/* Internal interface of libpacer-agent.so, the LD_PRELOAD module that
 * measures an unmodified program (docs/agent.md): its toolkit-neutral part.
 *
 * The agent is one component in folders (docs/architecture.md):
 *
 *   src/agent/          the toolkit-neutral part: life cycle, the main loop
 *                       at its wait, frames where they reach the display,
 *                       stacks, requests (libcurl), the heap. It needs no
 *                       toolkit and includes no adapter's header.
 *   src/agent/gobject/  what the GObject toolkits share: construction seen
 *                       from the type system, GApplication, libsoup, the
 *                       frame clock, GObject leaks.
 *   src/agent/gtk4/,    one folder per toolkit adapter, joined to the
 *   src/agent/gtk3/,    neutral part by adapter.h alone (the Qt adapter's
 *   src/agent/qt/       C++ is a library of its own, qt/qt_host.h).
 *
 * Files of the neutral part, one job each:
 *   agent.c      life cycle: activation, the features table (install at
 *                setup, stop and flush at exit), the adapters in force,
 *                fork, the config in force, "say it once" notes, the run
 *                summary;
 *   real.c       the one way to other code's functions and libraries;
 *   dlopen.c     libraries loaded at run time: a toolkit or a display
 *                library arriving after start (PyGObject, GJS, plugins);
 *   start.c      main() entered (__libc_start_main), where setup runs;
 *   loop.c       busy time of every main-loop iteration (the hot path),
 *                from two sources: loop_wait.c (the main thread's blocking
 *                waits: any event loop) and loop_glib.c (GLib's default
 *                context, once its loop runs);
 *   watchdog.c   the thread that notices a stuck iteration and has its stack
 *                taken; `jank` records are written from there;
 *   stack.c      capture of the stuck main thread's stack, unwinding;
 *   jank.c       the `jank` record: symbols, fingerprint;
 *   demangle.c   C++ names of stack frames, readable;
 *   frames.c     `frames` records: counting, grading and writing frames,
 *                whoever timed them (an adapter's frame clock, the
 *                display);
 *   curl.c       libcurl requests (easy and multi interface);
 *   net.c        the request events and the `net` record every HTTP hook
 *                shares;
 *   exit.c       ended by a signal (SIGTERM, SIGINT, SIGHUP, SIGABRT,
 *                SIGTRAP) or by _exit (a display gone away): write what is
 *                pending, then end as the process would have;
 *   heap*.c, stackstore.c, leakstack.c   native leaks and the stacks of
 *                leak records (leaks.h).
 *
 * Records are built with the core's record API (pacer/record.h) and handed
 * over with pacer_submit_record(); the agent writes no JSON.
 *
 * Threads: the "main thread" is the thread that loaded the agent and
 * enters main(); toolkits run there. Request hooks run on whatever thread
 * the app uses.
 */
#ifndef PACER_AGENT_H
#define PACER_AGENT_H

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

/* True once the agent activated in this process (a program it measures,
 * not a child of an instrumented process, pacer instance created), until
 * exit starts or a fork child is detected. Cheap: one atomic load. */
extern _Atomic int agent_state; /* agent.c's: DORMANT 0, ACTIVE 1, STOPPED 2 */
static inline bool agent_active(void)
{
    return atomic_load_explicit(&agent_state, memory_order_acquire) == 1;
}

/* Runs every feature's install step, once, on the main thread: at main(),
 * or earlier when the app builds a window before main() (a constructor),
 * or when the agent activates after main() on that thread. */
void agent_setup(void);

/* Dormant until a library it can measure is loaded (dlopen.c). */
bool agent_waiting(void);

/* dlopen.c: a dlopen call loaded something; any thread. Activates the
 * agent when it was waiting and the program has become one it measures,
 * and attaches a toolkit adapter whose library arrived. */
void agent_on_libraries_loaded(void);

/* start.c's main() trampoline: main() entered while waiting. */
void dlopen_on_main(void);

/* The exit sequence, once: every feature's stop, then (when main_still:
 * the main thread is the caller, or is held in a signal handler) every
 * flush, in reverse table order; then the core writes and uploads what is
 * left. Any thread. */
void agent_finish(bool main_still);

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

/* Whether the calling thread is the main thread (the thread that loaded
 * the agent, which enters main()): a thread-local flag, one load. */
extern __thread bool agent_main_thread_tls __attribute__((tls_model("initial-exec")));
static inline bool agent_on_main_thread(void)
{
    return agent_main_thread_tls;
}

/* The page visible now, as the toolkit adapter in force knows it (an
 * interned class name), or NULL: for `jank` and `net` records. Any
 * thread, lock-free. */
const char *agent_visible_page(void);

/* Bumped at every request end, after its api_end event: a page draws again
 * after any request ended (its final draw); otherwise only its first draw
 * is reported. */
extern _Atomic uint64_t agent_net_epoch;

/* ---- real.c ---- */

/* The definition of `name` after the agent's (RTLD_NEXT), or in the library
 * `soname` when it is loaded but not in the global scope (soname may be
 * NULL). NULL when neither has it. Never RTLD_DEFAULT: it would find the
 * agent's own hooks first. Any thread. */
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

/* ---- features (agent.c drives them: install at setup; stop, flush at exit) ---- */
void exit_install(void); /* exit.c: the exit signals and _exit write what is pending */
/* exit.c: the process calls _exit or _Exit (agent.c). In the measured
 * process (not a fork's or vfork's child) runs the exit sequence on the exit
 * thread and waits for it, at most a few seconds; returns at once when an
 * exit is already being handled or the exit thread is missing.
 * Async-signal-safe: any thread, also from a signal handler. */
void exit_on_exit_call(void);
void loop_wait_install(void); /* loop_wait.c: the main thread's waits */
void loop_glib_install(void); /* loop_glib.c: the default GLib context's poll function */
void watchdog_start(void);   /* watchdog.c */
void leaks_install(void);    /* leakmode.c: the stack store, when --leaks=native needs it */
void display_flush(void);    /* display.c: at exit, every surface's frames since its last record */
/* Stops it: an iteration still stuck is reported as ongoing. Waits at most
 * about a second. */
void watchdog_stop(void);

/* ---- display.c: when frames reach the display ---- */

/* Whether the main thread queued a frame for the display (a commit, an
 * image upload or copy) on a top-level surface that it has not handed over
 * yet. Main thread. */
bool display_main_frame_queued(void);
/* Calls fn(t) once, at the main thread's next hand-over (t: its time).
 * One caller at a time (a second call before it ran replaces fn). Main
 * thread. */
void display_on_next_handover(void (*fn)(int64_t t));

/* ---- frames.c ---- */

/* The frames of one window or surface, counted between its records. */
typedef struct frame_stats frame_stats;

/* Where a series of frames was timed, for the record's `source`. */
#define FRAMES_SOURCE_FRAME_CLOCK "frame_clock"

/* A new series; its records carry `window` and `instance` (the window's
 * page id, or the surface's number) and `source`. `window` and `source`
 * must live as long as the process (interned, or literals). NULL on ENOMEM.
 * Thread: the caller keeps a series to one thread at a time. */
frame_stats *frames_new(const char *window, uint64_t instance, const char *source);
/* Counting starts (again) now: a window mapped; or at `t`. */
void frames_begin(frame_stats *f);
void frames_begin_at(frame_stats *f, int64_t t);
/* One frame, from `start` to `end` (CLOCK_MONOTONIC ns; the caller has made
 * sure frames never overlap and that start is not before the series'
 * begin), graded against `refresh_ns` (0: the default 60 Hz);
 * `refresh_from` says where the interval came from ("frame_clock",
 * "output"; ignored when refresh_ns is 0: "default"). Writes a record when
 * frames-interval-ms has passed since the last one. */
void frames_add(frame_stats *f, int64_t start, int64_t end, int64_t refresh_ns, const char *refresh_from);
/* Where a frame's time went (the records' phases_ms): the frame clock's
 * phases, or what the display path can tell. */
enum { FRAME_EVENTS, FRAME_UPDATE, FRAME_LAYOUT, FRAME_PAINT, FRAME_PRESENT, FRAME_N_PHASES };
/* --frames=detail: a widget type's own time in one phase of one frame
 * (its children's taken out). `type` lives as long as the process. */
typedef struct frame_widget_time {
    const char *type;
    int phase; /* FRAME_LAYOUT or FRAME_PAINT */
    unsigned calls;
    int64_t ns;
} frame_widget_time;
/* One frame as frames_add() counts it, with what else the caller knows:
 * its phases (has_phases; they add up to end − start) and the widget
 * types' times in it (counted when the frame is slow). */
typedef struct frame_info {
    int64_t start, end, refresh_ns;
    const char *refresh_from;
    bool has_phases;
    int64_t phases[FRAME_N_PHASES];
    const frame_widget_time *widgets;
    size_t n_widgets;
} frame_info;
void frames_add_info(frame_stats *f, const frame_info *fi);
/* PACER_FRAMES (pacer run --frames) names detail: the adapters time
 * widget types' layout and paint. Any thread. */
bool frames_detail(void);
/* When the record's span began: frames start no earlier. */
int64_t frames_since(const frame_stats *f);
/* Writes what was counted since the last record (`final`: the window
 * unmapped or the run ends). Nothing when no frame was counted. */
void frames_emit(frame_stats *f, bool final);
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

/* ---- loop.c, loop_wait.c, loop_glib.c: the main loop ---- */
/* One iteration of the main thread that was busy for at least the jank
 * threshold: from a wait returning (start) to the next wait (end). */
typedef struct loop_span {
    int64_t start, end; /* CLOCK_MONOTONIC ns */
} loop_span;
/* The sources (main thread): the loop enters a wait at `t` (the iteration
 * ends), and leaves the wait it entered at `entered` at `t` (the next
 * begins). */
void loop_wait_enter(int64_t t);
void loop_wait_leave(int64_t entered, int64_t t);
/* GLib's loop has run on the main thread: it is the one source from now
 * on (loop_glib.c). Any thread reads it. */
bool loop_glib_mode(void);
void loop_set_glib_mode(void);
/* How many iterations began so far. Any thread. */
uint64_t loop_iterations(void);
/* A frame was presented on the main thread of a loop that is not GLib's
 * (display.c): the iteration ends and the next begins at t, as at a wait
 * that did not wait (a loop that renders continuously never waits). Main
 * thread. */
void loop_present_boundary(int64_t t);
/* A frame is being presented on this thread, or a display connection
 * flushed (display*.c): waits inside are the library's or the driver's,
 * not the loop's. A thread-local count (loop_wait.c's). */
extern __thread int loop_in_present __attribute__((tls_model("initial-exec")));
static inline void loop_present_begin(void)
{
    loop_in_present++;
}
static inline void loop_present_end(void)
{
    loop_in_present--;
}
/* libc's poll, past the agent's hook (loop_wait.c): GLib's default poll
 * function (g_poll) is this call, made by the GLib source's wrapper
 * without passing the hook. Any thread. */
struct pollfd;
int loop_poll_real(struct pollfd *fds, unsigned long n, int timeout);
/* Libraries were loaded: which of them wait for replies (loop_wait.c).
 * Any thread. */
void loop_wait_refresh(void);
/* Watchdog thread only: takes the oldest long iteration not yet taken.
 * Returns false when there is none. */
bool mainloop_take_long(loop_span *ret);
/* Any thread: when the iteration running now began, or 0 while the main
 * thread waits (or before the loop first ran). */
int64_t mainloop_busy_since(void);
/* Main thread: when the main loop last returned from a wait that waited
 * (the loop was idle until then); 0 before any. */
int64_t mainloop_wait_end(void);
/* Any thread: iterations at least this long are kept for mainloop_take_long. */
void mainloop_set_jank_ns(int64_t ns);
/* Iterations lost because the watchdog did not take them in time. */
uint64_t mainloop_lost(void);
/* Watchdog thread: sleeps while the main thread waits, until the loop's
 * next iteration begins (the main thread wakes it as it leaves the wait:
 * one system call, only after such a sleep), mainloop_wake_watcher, or
 * until_ns (CLOCK_MONOTONIC). Returns at once when an iteration is running
 * or *cancel is set. */
void mainloop_sleep_while_waiting(int64_t until_ns, _Atomic bool *cancel);
/* Any thread: ends that sleep (set *cancel first). */
void mainloop_wake_watcher(void);

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
/* Watchdog thread, for profiles: as stack_capture, but a running thread's
 * perf event is left enabled between calls (the next sample is ready at
 * the next call) until stack_sample_end(). */
int stack_sample(stack_trace *ret, int timeout_ms, const char **ret_method);
void stack_sample_end(void);

/* ---- jank.c ---- */
/* Watchdog thread: writes the `jank` record of one long iteration. `st` is
 * its stack (NULL: not captured, see stack_status); `page` the page that
 * was visible (NULL: none known). */
void jank_emit(const loop_span *span, int64_t hang_ns, const stack_trace *st, const char *stack_status,
               const char *stack_method, const char *page, bool ongoing);

/* ---- demangle.c ---- */
/* A C++ symbol's readable name (malloc'd, the caller frees), or NULL when
 * `name` is not a mangled C++ name or libstdc++ is not in the process. Not
 * async-signal-safe. */
char *agent_demangle(const char *name);

/* ---- profile.c: wall-clock profiles of long iterations ---- */
/* Watchdog thread. One round: samples the iteration busy since
 * `busy_since` (0: the loop waits) when it is due; forgets the samples of
 * an iteration that ended (drain mainloop_take_long first, so that a long
 * one gets them). Returns when it wants the next round (INT64_MAX: not
 * before the next iteration). */
int64_t profile_round(int64_t busy_since, int64_t now);
/* The start of the iteration whose samples are kept, or 0. */
int64_t profile_pending(void);
/* The newest sample of the iteration that began at `start`: a stack
 * taken while it was stuck, for its record when the watchdog, busy
 * sampling, did not capture one at jank-ms. False when there is none. */
bool profile_last(int64_t start, stack_trace *ret, const char **ret_method);
/* How long an iteration is busy before it is sampled (0: never). */
int64_t profile_after_ns(void);
/* jank.c: the record of the iteration that began at `start` gets the
 * samples kept for it (profile_samples, profile_interval_ms, profile),
 * which are then forgotten. */
void profile_attach(pacer_record *r, int64_t start);

/* ---- heap.c / heap_stub.c (leaks.h has the rest) ---- */
/* At exit (--leaks=native): the mark phase and the native `leak` records. */
void heap_exit_check(void);
/* Whether this is libpacer-agent-heap.so, the agent that can track
 * allocations (--leaks=native). */
bool heap_native_build(void);

#endif
