/* GLib's main loop as the source of main-loop iterations (loop.c).
 *
 * Where the hook sits: every iteration of a GMainContext — whoever drives
 * it: g_main_loop_run, g_application_run, gtk_dialog-style nested loops,
 * g_main_context_iteration, Qt's GLib event dispatcher — goes prepare →
 * query → poll → check → dispatch, and its poll step calls the context's
 * poll function (g_main_context_set_poll_func). Calls inside libglib
 * (g_main_loop_run → g_main_context_iterate) cannot be interposed, the poll
 * function pointer can: at setup (main() entered), when GLib is in the
 * process, the agent replaces the default context's poll function by
 * monitored_poll, which calls the one it replaced. An app that sets its own
 * poll function later goes through the exported g_main_context_set_poll_func
 * below, which keeps the wrapper in front of it.
 *
 *   monitored_poll entry   loop_wait_enter: the iteration ends
 *   real poll              (blocks)
 *   monitored_poll exit    loop_wait_leave: the next iteration begins
 *
 * Only the main thread's iterations count (a thread-local flag): another
 * thread iterating the default context is passed straight through. The
 * first call on the main thread makes GLib's loop the one source for the
 * rest of the process (loop_set_glib_mode): the waits' source
 * (loop_wait.c) steps aside, so a poll() the app makes inside a handler is
 * busy time, as it blocks the UI. A nested loop's poll ends the outer
 * iteration's busy span, which is right: the UI is being served. A
 * thread-default context pushed on the main thread and iterated instead
 * does not poll the default context, so that time counts as busy: the UI is
 * not served meanwhile.
 */
#include "agent.h"
#include "display.h"

#include <pacer/base/clock.h>

#include <glib.h>

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

static gint monitored_poll(GPollFD *fds, guint nfds, gint timeout)
{
    GPollFunc f = atomic_load_explicit(&inner, memory_order_relaxed);
    if (!on_main)
        return f(fds, nfds, timeout);
    int64_t t = mono_ns();
    if (__builtin_expect(!loop_glib_mode(), 0))
        loop_set_glib_mode();
    display_handover(0, t);
    loop_wait_enter(t);
    /* GLib's own poll function is poll(2) on a GPollFD array (the same
     * layout as struct pollfd): called past the agent's poll hook */
    gint r = f == G.poll ? loop_poll_real((struct pollfd *)fds, nfds, timeout) : f(fds, nfds, timeout);
    loop_wait_leave(t, mono_ns());
    return r;
}

static bool resolve_real(void)
{
    AGENT_REAL(real_set_poll_func, AGENT_LIBGLIB, "g_main_context_set_poll_func");
    AGENT_REAL(G.context_default, AGENT_LIBGLIB, "g_main_context_default");
    AGENT_REAL(G.get_poll_func, AGENT_LIBGLIB, "g_main_context_get_poll_func");
    AGENT_REAL(G.poll, AGENT_LIBGLIB, "g_poll");
    return real_set_poll_func && G.context_default && G.get_poll_func && G.poll;
}

/* A feature (agent.c installs it at setup, on the main thread): when GLib
 * is in the process. */
void loop_glib_install(void)
{
    if (installed || !agent_lib_loaded(AGENT_LIBGLIB))
        return;
    installed = true;
    if (!resolve_real()) {
        agent_note_once("mainloop", "GLib's main context cannot be reached; its iterations are not measured");
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
