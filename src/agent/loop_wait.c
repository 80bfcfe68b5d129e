/* The main thread's waits as the source of main-loop iterations (loop.c),
 * for any event loop: Qt's UNIX dispatcher (ppoll), SDL's SDL_WaitEvent*
 * (poll), libuv (epoll_wait, epoll_pwait), an Xlib loop's XNextEvent
 * (libxcb's poll), a Wayland client's wl_display_dispatch (libwayland's
 * poll), Chromium-style pumps (epoll), a program's own select().
 *
 * The agent exports poll, __poll_chk (poll in a build with
 * _FORTIFY_SOURCE), ppoll, __ppoll_chk, epoll_wait, epoll_pwait,
 * epoll_pwait2, select and pselect. On any thread but the main one, and
 * once GLib's loop is the source (loop_glib_mode), each only calls the real
 * function. On the main thread a call is one of the loop's waits — the
 * iteration before it ends on entry, the next begins on return — unless a
 * library makes it to wait for a reply, which keeps the UI as stuck as any
 * other work:
 *
 *   1. inside a frame being presented (display.c: a GL driver waiting for
 *      the compositor's frame callback, a Vulkan present) or a flush of
 *      an X connection (libxcb polls before it writes): not a wait, and
 *      the cheapest verdict (one more thread-local load);
 *   2. inside wl_display_roundtrip[_queue]: not a wait (a round trip);
 *   3. inside xcb_wait_for_event, wl_display_dispatch[_queue]: the loop
 *      waiting for the display's next event — a wait, although the call
 *      comes from libxcb or libwayland;
 *   4. otherwise, by the caller's module: display, GL and Vulkan drivers,
 *      audio, D-Bus, HTTP and GLib's own libraries wait for replies (an X
 *      round trip, a blocking D-Bus call, curl_easy_perform; GLib's polls
 *      are GLib's source's to count): not a wait; anything else is.
 *
 * Each of the loop's waits is also where frames queued in the display
 * libraries reach the display (display_handover): toolkits flush before
 * they sleep.
 *
 * The calls' results and errno are the real functions', untouched.
 *
 * Cost: on other threads one thread-local load; on the main thread two
 * vDSO clock reads and a scan of up to MAX_RANGES address ranges, no lock,
 * no allocation, no system call (bench/agent/loop.c). The ranges of the
 * libraries in rule 4 are read from the loaded objects at install and
 * after every dlopen (loop_wait_refresh), behind a sequence lock the main
 * thread reads without waiting.
 */
#include "agent.h"
#include "display.h"

#include <pacer/base/clock.h>

#include <errno.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>

#include <wayland-client-core.h>
#include <xcb/xcb.h>

#define MAX_RANGES 96

/* rule 4's libraries, by the start of their file name */
static const char *const reply_waiters[] = {
    "libxcb", "libX11", "libXext", "libwayland-", "libEGL", "libGL", "libGLX", "libGLdispatch", "libgallium",
    "libvulkan", "libdrm", "libgbm", "libnvidia-", "libxshmfence", "libasound", "libpulse", "libdbus-1",
    "libsystemd", "libcurl", "libglib-2.0", "libgio-2.0", "libgobject-2.0",
};

static struct {
    _Atomic unsigned seq; /* odd while written */
    unsigned n;
    uintptr_t lo[MAX_RANGES], hi[MAX_RANGES];
} ranges;

static _Atomic bool installed;
static __thread bool on_main __attribute__((tls_model("initial-exec")));
__thread int loop_in_present __attribute__((tls_model("initial-exec")));
static __thread int round_trip __attribute__((tls_model("initial-exec")));
static __thread int event_wait __attribute__((tls_model("initial-exec")));

static bool waits_reply(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (size_t i = 0; i < sizeof(reply_waiters) / sizeof(reply_waiters[0]); i++)
        if (strncmp(base, reply_waiters[i], strlen(reply_waiters[i])) == 0)
            return true;
    size_t n = strlen(base);
    const char *dri = strstr(base, "_dri.so"); /* Mesa's DRI drivers */
    return dri && (size_t)(dri - base) + 7 <= n;
}

typedef struct range_walk {
    unsigned n;
    uintptr_t lo[MAX_RANGES], hi[MAX_RANGES];
} range_walk;

static int add_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    range_walk *w = data;
    if (!info->dlpi_name || !info->dlpi_name[0] || !waits_reply(info->dlpi_name))
        return 0;
    for (int i = 0; i < info->dlpi_phnum && w->n < MAX_RANGES; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        w->lo[w->n] = info->dlpi_addr + ph->p_vaddr;
        w->hi[w->n] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        w->n++;
    }
    return 0;
}

void loop_wait_refresh(void)
{
    if (!atomic_load(&installed))
        return;
    range_walk w = {0};
    dl_iterate_phdr(add_object, &w);
    static _Atomic bool writing;
    if (atomic_exchange(&writing, true))
        return; /* another thread refreshes now: it sees this library too */
    atomic_fetch_add_explicit(&ranges.seq, 1, memory_order_acq_rel);
    atomic_thread_fence(memory_order_release);
    ranges.n = w.n;
    memcpy(ranges.lo, w.lo, w.n * sizeof(w.lo[0]));
    memcpy(ranges.hi, w.hi, w.n * sizeof(w.hi[0]));
    atomic_fetch_add_explicit(&ranges.seq, 1, memory_order_release);
    atomic_store(&writing, false);
}

static bool in_reply_waiter(uintptr_t pc)
{
    for (;;) {
        unsigned s = atomic_load_explicit(&ranges.seq, memory_order_acquire);
        if (s & 1)
            continue;
        bool found = false;
        unsigned n = ranges.n < MAX_RANGES ? ranges.n : MAX_RANGES;
        for (unsigned i = 0; i < n && !found; i++)
            found = pc >= ranges.lo[i] && pc < ranges.hi[i];
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&ranges.seq, memory_order_relaxed) == s)
            return found;
    }
}

/* A feature (agent.c installs it at setup, on the main thread). */
void loop_wait_install(void)
{
    on_main = true;
    atomic_store(&installed, true);
    loop_wait_refresh();
}

/* Whether a call by `caller` is a wait of the main thread's loop (the
 * rules at the top). Main thread. Waits come from a few call sites (the
 * loop's, a display library's): the verdicts of the last ones are kept,
 * until the libraries change. */
#define VERDICTS 8
static bool loop_wait(const void *caller)
{
    static struct {
        uintptr_t caller;
        unsigned seq;
        bool verdict;
    } known[VERDICTS];
    if (round_trip)
        return false;
    if (event_wait)
        return true;
    unsigned seq = atomic_load_explicit(&ranges.seq, memory_order_acquire);
    uintptr_t pc = (uintptr_t)caller;
    size_t k = (pc ^ (pc >> 7)) & (VERDICTS - 1);
    if (known[k].caller == pc && known[k].seq == seq)
        return known[k].verdict;
    bool verdict = !in_reply_waiter(pc);
    if (!(seq & 1)) {
        known[k].caller = pc;
        known[k].seq = seq;
        known[k].verdict = verdict;
    }
    return verdict;
}

static inline bool watched(void)
{
    return on_main && !loop_in_present && !agent_in_hook && !loop_glib_mode() && agent_active();
}

#define WAIT(call)                                            \
    do {                                                      \
        int64_t t_ = mono_ns();                               \
        display_handover(0, t_);                              \
        loop_wait_enter(t_);                                  \
        __typeof__(call) r_ = call;                           \
        int e_ = errno;                                       \
        loop_wait_leave(t_, mono_ns());                       \
        errno = e_;                                           \
        return r_;                                            \
    } while (0)

#define REAL(var, name)                                       \
    do {                                                      \
        AGENT_REAL(var, NULL, name);                          \
        if (!(var)) {                                         \
            errno = ENOSYS;                                   \
            return -1;                                        \
        }                                                     \
    } while (0)

typedef int (*poll_fn)(struct pollfd *, nfds_t, int);
typedef int (*poll_chk_fn)(struct pollfd *, nfds_t, int, size_t);
typedef int (*ppoll_fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
typedef int (*ppoll_chk_fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t);
typedef int (*epoll_wait_fn)(int, struct epoll_event *, int, int);
typedef int (*epoll_pwait_fn)(int, struct epoll_event *, int, int, const sigset_t *);
typedef int (*epoll_pwait2_fn)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);
typedef int (*select_fn)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
typedef int (*pselect_fn)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);

static struct {
    poll_fn poll;
    poll_chk_fn poll_chk;
    ppoll_fn ppoll;
    ppoll_chk_fn ppoll_chk;
    epoll_wait_fn epoll_wait;
    epoll_pwait_fn epoll_pwait;
    epoll_pwait2_fn epoll_pwait2;
    select_fn select;
    pselect_fn pselect;
} R;

/* Resolved before main(): a first call from a signal handler must not be
 * the one that runs dlsym. */
__attribute__((constructor)) static void resolve_waits(void)
{
    AGENT_REAL(R.poll, NULL, "poll");
    AGENT_REAL(R.poll_chk, NULL, "__poll_chk");
    AGENT_REAL(R.ppoll, NULL, "ppoll");
    AGENT_REAL(R.ppoll_chk, NULL, "__ppoll_chk");
    AGENT_REAL(R.epoll_wait, NULL, "epoll_wait");
    AGENT_REAL(R.epoll_pwait, NULL, "epoll_pwait");
    AGENT_REAL(R.epoll_pwait2, NULL, "epoll_pwait2");
    AGENT_REAL(R.select, NULL, "select");
    AGENT_REAL(R.pselect, NULL, "pselect");
}

int loop_poll_real(struct pollfd *fds, nfds_t n, int timeout)
{
    REAL(R.poll, "poll");
    return R.poll(fds, n, timeout);
}

AGENT_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    REAL(R.poll, "poll");
    if (!watched() || !loop_wait(__builtin_return_address(0)))
        return R.poll(fds, n, timeout);
    WAIT(R.poll(fds, n, timeout));
}

AGENT_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);
AGENT_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
    REAL(R.poll_chk, "__poll_chk");
    if (!watched() || !loop_wait(__builtin_return_address(0)))
        return R.poll_chk(fds, n, timeout, fdslen);
    WAIT(R.poll_chk(fds, n, timeout, fdslen));
}

AGENT_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout, const sigset_t *mask)
{
    REAL(R.ppoll, "ppoll");
    if (!watched() || !loop_wait(__builtin_return_address(0)))
        return R.ppoll(fds, n, timeout, mask);
    WAIT(R.ppoll(fds, n, timeout, mask));
}

AGENT_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *timeout, const sigset_t *mask,
                             size_t fdslen);
AGENT_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *timeout, const sigset_t *mask,
                             size_t fdslen)
{
    REAL(R.ppoll_chk, "__ppoll_chk");
    if (!watched() || !loop_wait(__builtin_return_address(0)))
        return R.ppoll_chk(fds, n, timeout, mask, fdslen);
    WAIT(R.ppoll_chk(fds, n, timeout, mask, fdslen));
}

AGENT_EXPORT int epoll_wait(int epfd, struct epoll_event *events, int max, int timeout)
{
    REAL(R.epoll_wait, "epoll_wait");
    if (!watched() || !loop_wait(__builtin_return_address(0)))
        return R.epoll_wait(epfd, events, max, timeout);
    WAIT(R.epoll_wait(epfd, events, max, timeout));
}

AGENT_EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int max, int timeout, const sigset_t *mask)
{
    REAL(R.epoll_pwait, "epoll_pwait");
    if (!watched() || !loop_wait(__builtin_return_address(0)))
        return R.epoll_pwait(epfd, events, max, timeout, mask);
    WAIT(R.epoll_pwait(epfd, events, max, timeout, mask));
}

AGENT_EXPORT int epoll_pwait2(int epfd, struct epoll_event *events, int max, const struct timespec *timeout,
                              const sigset_t *mask)
{
    REAL(R.epoll_pwait2, "epoll_pwait2");
    if (!watched() || !loop_wait(__builtin_return_address(0)))
        return R.epoll_pwait2(epfd, events, max, timeout, mask);
    WAIT(R.epoll_pwait2(epfd, events, max, timeout, mask));
}

AGENT_EXPORT int select(int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *timeout)
{
    REAL(R.select, "select");
    if (!watched() || !loop_wait(__builtin_return_address(0)))
        return R.select(n, rd, wr, ex, timeout);
    WAIT(R.select(n, rd, wr, ex, timeout));
}

AGENT_EXPORT int pselect(int n, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *timeout,
                         const sigset_t *mask)
{
    REAL(R.pselect, "pselect");
    if (!watched() || !loop_wait(__builtin_return_address(0)))
        return R.pselect(n, rd, wr, ex, timeout, mask);
    WAIT(R.pselect(n, rd, wr, ex, timeout, mask));
}

/* ---- the display libraries' event waits and round trips (rules 2, 3) ---- */

typedef xcb_generic_event_t *(*wait_event_fn)(xcb_connection_t *);
typedef int (*dispatch_fn)(struct wl_display *);
typedef int (*dispatch_queue_fn)(struct wl_display *, struct wl_event_queue *);
static wait_event_fn real_wait_for_event;
static dispatch_fn real_dispatch, real_roundtrip;
static dispatch_queue_fn real_dispatch_queue, real_roundtrip_queue;

AGENT_EXPORT xcb_generic_event_t *xcb_wait_for_event(xcb_connection_t *c)
{
    AGENT_REAL(real_wait_for_event, "libxcb.so.1", "xcb_wait_for_event");
    if (!real_wait_for_event)
        return NULL;
    display_handover(SK_X11, 0); /* it flushes, then waits */
    event_wait++;
    xcb_generic_event_t *e = real_wait_for_event(c);
    event_wait--;
    return e;
}

AGENT_EXPORT int wl_display_dispatch(struct wl_display *d)
{
    AGENT_REAL(real_dispatch, "libwayland-client.so.0", "wl_display_dispatch");
    if (!real_dispatch) {
        errno = ENOSYS;
        return -1;
    }
    display_handover(SK_WAYLAND, 0); /* it flushes, then waits */
    event_wait++;
    int r = real_dispatch(d);
    int e = errno;
    event_wait--;
    errno = e;
    return r;
}

AGENT_EXPORT int wl_display_dispatch_queue(struct wl_display *d, struct wl_event_queue *q)
{
    AGENT_REAL(real_dispatch_queue, "libwayland-client.so.0", "wl_display_dispatch_queue");
    if (!real_dispatch_queue) {
        errno = ENOSYS;
        return -1;
    }
    display_handover(SK_WAYLAND, 0);
    event_wait++;
    int r = real_dispatch_queue(d, q);
    int e = errno;
    event_wait--;
    errno = e;
    return r;
}

AGENT_EXPORT int wl_display_roundtrip(struct wl_display *d)
{
    AGENT_REAL(real_roundtrip, "libwayland-client.so.0", "wl_display_roundtrip");
    if (!real_roundtrip) {
        errno = ENOSYS;
        return -1;
    }
    display_handover(SK_WAYLAND, 0);
    round_trip++;
    int r = real_roundtrip(d);
    int e = errno;
    round_trip--;
    errno = e;
    return r;
}

AGENT_EXPORT int wl_display_roundtrip_queue(struct wl_display *d, struct wl_event_queue *q)
{
    AGENT_REAL(real_roundtrip_queue, "libwayland-client.so.0", "wl_display_roundtrip_queue");
    if (!real_roundtrip_queue) {
        errno = ENOSYS;
        return -1;
    }
    display_handover(SK_WAYLAND, 0);
    round_trip++;
    int r = real_roundtrip_queue(d, q);
    int e = errno;
    round_trip--;
    errno = e;
    return r;
}
