/* Busy time of each iteration of the main thread's event loop (DESIGN §2:
 * Looper Printer T1/T2; §3.3), whatever the loop is.
 *
 * Every event loop ends an iteration in a wait: GLib's in its context's
 * poll function, Qt's UNIX dispatcher in ppoll, SDL's SDL_WaitEvent* in
 * poll, libuv in epoll_wait, an Xlib loop in XNextEvent (libxcb's poll), a
 * Wayland client in wl_display_dispatch. Two sources tell this file when
 * the main thread enters and leaves such a wait:
 *
 *   loop_glib.c  the default GMainContext's poll function, wrapped: the
 *                one source once GLib's loop has run on the main thread
 *                (GTK, and Qt's GLib dispatcher);
 *   loop_wait.c  the main thread's blocking calls (poll, ppoll, epoll_wait,
 *                epoll_pwait, epoll_pwait2, select, pselect) that are the
 *                loop's waits and not a library's wait for a reply — until
 *                GLib's loop is seen, and in every program without it;
 *                there a frame presented on the main thread ends an
 *                iteration too (a loop that renders continuously and never
 *                waits: display.c).
 *
 * One stall is never reported twice: GLib's source, once it runs, makes the
 * waits' source step aside for the rest of the process (loop_glib_mode).
 *
 *   loop_wait_enter(t)        the iteration that began at busy_since ends
 *                             at t: if it lasted ≥ jank_ns it is appended
 *                             to `ring`; busy_since = 0 (waiting)
 *   (the wait)
 *   loop_wait_leave(t0, t)    busy_since = t: the next iteration begins;
 *                             a wait longer than WAITED_NS was idle time
 *
 * Hot path: two vDSO clock reads (the sources'), two stores (one of them
 * sequentially consistent) and two loads per iteration; no lock, no
 * allocation, and no system call but one futex wake when the watchdog slept
 * through a long wait (bench/agent/loop.c measures it).
 *
 * The watchdog's sleep while the loop waits: it sets `watcher_asleep`, then
 * reads busy_since; leaving a wait stores busy_since, then reads
 * `watcher_asleep` — both sequentially consistent, so either the watchdog
 * sees the iteration and does not sleep, or the main thread sees the
 * sleeper and wakes it.
 *
 * `ring` is single-producer (the main thread) single-consumer (the watchdog
 * thread): head is written by the producer only, tail by the consumer only.
 * A full ring drops the newest span and counts it (mainloop_lost).
 */
#include "agent.h"

#include <pacer/base/clock.h>

#include <linux/futex.h>
#include <sys/syscall.h>

#include <errno.h>
#include <time.h>
#include <unistd.h>

#define WAITED_NS 500000 /* a wait this long waited: the loop was idle */
#define RING 64 /* spans ≥ jank_ms; the watchdog drains it several times a second */

static _Atomic int64_t busy_since;
static int64_t wait_end; /* main thread only: when a wait that waited last returned */
static _Atomic uint64_t iterations;
static _Atomic int64_t jank_ns = (int64_t)PACER_DEFAULT_JANK_MS * 1000000;
static loop_span ring[RING];
static _Atomic uint64_t head, tail, lost;
static _Atomic bool glib_mode;
static _Atomic int watcher_asleep; /* 1: the watchdog sleeps until the next iteration */

static void wake_watcher(void)
{
    if (atomic_exchange(&watcher_asleep, 0)) {
        int saved = errno; /* the app reads its wait's errno next */
        syscall(SYS_futex, &watcher_asleep, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        errno = saved;
    }
}

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

void loop_wait_enter(int64_t t)
{
    int64_t start = atomic_load_explicit(&busy_since, memory_order_relaxed);
    if (start && t - start >= atomic_load_explicit(&jank_ns, memory_order_relaxed))
        keep(start, t);
    atomic_store_explicit(&busy_since, 0, memory_order_release);
}

void loop_wait_leave(int64_t entered, int64_t t)
{
    if (t - entered > WAITED_NS)
        wait_end = t;
    atomic_fetch_add_explicit(&iterations, 1, memory_order_relaxed);
    atomic_store_explicit(&busy_since, t, memory_order_seq_cst);
    if (atomic_load_explicit(&watcher_asleep, memory_order_seq_cst))
        wake_watcher();
}

void loop_present_boundary(int64_t t)
{
    int64_t start = atomic_load_explicit(&busy_since, memory_order_relaxed);
    if (start && t - start >= atomic_load_explicit(&jank_ns, memory_order_relaxed))
        keep(start, t);
    atomic_store_explicit(&busy_since, t, memory_order_release);
}

bool loop_glib_mode(void)
{
    return atomic_load_explicit(&glib_mode, memory_order_relaxed);
}

void loop_set_glib_mode(void)
{
    atomic_store_explicit(&glib_mode, true, memory_order_relaxed);
}

uint64_t loop_iterations(void)
{
    return atomic_load_explicit(&iterations, memory_order_relaxed);
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

void mainloop_sleep_while_waiting(int64_t until_ns, _Atomic bool *cancel)
{
    atomic_store_explicit(&watcher_asleep, 1, memory_order_seq_cst);
    int64_t left = until_ns - mono_ns();
    if (atomic_load_explicit(&busy_since, memory_order_seq_cst) || atomic_load(cancel) || left <= 0) {
        atomic_store(&watcher_asleep, 0);
        return;
    }
    struct timespec rel = {.tv_sec = left / 1000000000, .tv_nsec = left % 1000000000};
    syscall(SYS_futex, &watcher_asleep, FUTEX_WAIT_PRIVATE, 1, &rel, NULL, 0);
    atomic_store(&watcher_asleep, 0);
}

void mainloop_wake_watcher(void)
{
    wake_watcher();
}
