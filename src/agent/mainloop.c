/* Busy time of each iteration of the main thread's main loop (DESIGN §2:
 * Looper Printer T1/T2; §3.3): from poll returning to the next poll.
 *
 * Where the hook sits: every iteration of a GMainContext — whoever drives
 * it: g_main_loop_run, g_application_run, gtk_dialog-style nested loops,
 * g_main_context_iteration — goes prepare → query → poll → check →
 * dispatch, and its poll step calls the context's poll function
 * (g_main_context_set_poll_func). Calls inside libglib (g_main_loop_run →
 * g_main_context_iterate) cannot be interposed, the poll function pointer
 * can: at main() the agent replaces the default context's poll function by
 * monitored_poll, which calls the one it replaced. An app that sets its own
 * poll function later goes through the exported g_main_context_set_poll_func
 * below, which keeps the wrapper in front of it.
 *
 *   monitored_poll entry   the iteration that began at busy_since ends:
 *                          if it lasted ≥ jank_ns it is appended to `ring`;
 *                          busy_since = 0 (waiting)
 *   real poll              (blocks)
 *   monitored_poll exit    busy_since = now: the next iteration begins
 *
 * Only the main thread's iterations count (a thread-local flag): another
 * thread iterating the default context is passed straight through.
 *
 * Hot path: two vDSO clock reads, two relaxed/release stores and one
 * compare per iteration; no lock, no allocation, no system call
 * (bench/agent/loop.c measures it). A nested loop's poll ends the outer
 * iteration's busy span, which is right: the UI is being served. A
 * thread-default context pushed on the main thread and iterated instead
 * does not poll the default context, so that time counts as busy: the UI is
 * not served meanwhile.
 *
 * `ring` is single-producer (the main thread) single-consumer (the watchdog
 * thread): head is written by the producer only, tail by the consumer only.
 * A full ring drops the newest span and counts it (mainloop_lost).
 */
#include "agent.h"

#include <pacer/base/clock.h>

#include <glib.h>

#define WAITED_NS 500000 /* a poll this long waited: the loop was idle */
#define RING 64 /* spans ≥ jank_ms; the watchdog drains it several times a second */

static _Atomic int64_t busy_since;
static int64_t wait_end; /* main thread only: when a poll that waited last returned */
static _Atomic int64_t jank_ns = (int64_t)PACER_DEFAULT_JANK_MS * 1000000;
static loop_span ring[RING];
static _Atomic uint64_t head, tail, lost;
static _Atomic GPollFunc inner; /* the poll function monitored_poll calls */
static __thread bool on_main __attribute__((tls_model("initial-exec")));
static bool installed;

typedef void (*set_poll_fn)(GMainContext *, GPollFunc);
static set_poll_fn real_set_poll_func;
static struct {
    GMainContext *(*context_default)(void);
    GPollFunc (*get_poll_func)(GMainContext *);
    GPollFunc poll;
} G;

static void keep(int64_t start, int64_t end)
{
    uint64_t h = atomic_load_explicit(&head, memory_order_relaxed);
    if (h - atomic_load_explicit(&tail, memory_order_acquire) >= RING) {
        atomic_fetch_add_explicit(&lost, 1, memory_order_relaxed);
        return;
    }
    ring[h % RING] = (loop_span){start, end};
    atomic_store_explicit(&head, h + 1, memory_order_release);
}

static gint monitored_poll(GPollFD *fds, guint nfds, gint timeout)
{
    GPollFunc f = atomic_load_explicit(&inner, memory_order_relaxed);
    if (!on_main)
        return f(fds, nfds, timeout);
    int64_t t = mono_ns();
    int64_t start = atomic_load_explicit(&busy_since, memory_order_relaxed);
    if (start && t - start >= atomic_load_explicit(&jank_ns, memory_order_relaxed))
        keep(start, t);
    atomic_store_explicit(&busy_since, 0, memory_order_release);
    gint r = f(fds, nfds, timeout);
    int64_t t2 = mono_ns();
    if (t2 - t > WAITED_NS)
        wait_end = t2;
    atomic_store_explicit(&busy_since, t2, memory_order_release);
    return r;
}

bool mainloop_take_long(loop_span *ret)
{
    uint64_t t = atomic_load_explicit(&tail, memory_order_relaxed);
    if (t == atomic_load_explicit(&head, memory_order_acquire))
        return false;
    *ret = ring[t % RING];
    atomic_store_explicit(&tail, t + 1, memory_order_release);
    return true;
}

int64_t mainloop_wait_end(void)
{
    return wait_end;
}

int64_t mainloop_busy_since(void)
{
    return atomic_load_explicit(&busy_since, memory_order_acquire);
}

void mainloop_set_jank_ns(int64_t ns)
{
    atomic_store_explicit(&jank_ns, ns, memory_order_relaxed);
}

uint64_t mainloop_lost(void)
{
    return atomic_load_explicit(&lost, memory_order_relaxed);
}

static bool resolve_real(void)
{
    AGENT_REAL(real_set_poll_func, AGENT_LIBGLIB, "g_main_context_set_poll_func");
    AGENT_REAL(G.context_default, AGENT_LIBGLIB, "g_main_context_default");
    AGENT_REAL(G.get_poll_func, AGENT_LIBGLIB, "g_main_context_get_poll_func");
    AGENT_REAL(G.poll, AGENT_LIBGLIB, "g_poll");
    return real_set_poll_func && G.context_default && G.get_poll_func && G.poll;
}

/* A feature (agent.c installs it at setup, on the main thread). */
void mainloop_install(void)
{
    if (installed)
        return;
    installed = true;
    if (!agent_lib_loaded(AGENT_LIBGLIB))
        return;
    if (!resolve_real()) {
        agent_note_once("mainloop", "GLib's main context cannot be reached; main-loop jank is not measured");
        return;
    }
    GMainContext *ctx = G.context_default();
    GPollFunc cur = G.get_poll_func(ctx);
    atomic_store(&inner, cur ? cur : G.poll);
    on_main = true;
    real_set_poll_func(ctx, monitored_poll);
}

/* The app replaces the poll function: the wrapper stays, the app's function
 * becomes the inner one (NULL restores GLib's g_poll, as documented). */
AGENT_EXPORT void g_main_context_set_poll_func(GMainContext *context, GPollFunc func)
{
    if (!resolve_real())
        return;
    if (installed && atomic_load(&inner) && (context == NULL || context == G.context_default())) {
        atomic_store(&inner, func ? func : G.poll);
        return;
    }
    real_set_poll_func(context, func);
}
