/* The process ends without its atexit handlers: records already measured
 * are written first, and the process ends as it would have.
 *
 * Three routes skip atexit (a plain exit() runs the agent's atexit, agent.c):
 *   - a signal whose default action terminates: SIGTERM, SIGINT and SIGHUP
 *     (how many GTK apps are ended: a session manager, Ctrl+C, a closed
 *     terminal), SIGABRT (abort(): a failed assertion) and SIGTRAP
 *     (g_error()'s breakpoint trap);
 *   - _exit() or _Exit() (agent.c interposes them and calls
 *     exit_on_exit_call): GDK ends the process so when its display goes
 *     away — the X server's connection broke (its Xlib I/O error handler)
 *     or the Wayland compositor's did (an error flushing or dispatching) —
 *     GTK 4.8 calls _exit(1) from its main thread in both cases.
 *
 * A feature (agent.c installs it at setup). For each watched signal whose
 * disposition is the default at setup, the agent installs its own handler
 * and keeps, per signal, the disposition the application believes is in
 * force (`app_view`). sigaction() and signal() are interposed:
 *   - a query answers app_view, so the app sees SIG_DFL as without pacer;
 *   - setting SIG_DFL updates app_view and keeps the agent's handler;
 *   - setting a handler or SIG_IGN is the app's own: it is installed as
 *     given and the agent steps aside (the app's exit path, through exit()
 *     and the agent's atexit, or _exit(), writes the records).
 * A child the app forks inherits the agent's handler; exec resets it to
 * SIG_DFL, which is what the child would have had.
 *
 * The flush, whatever the route (any thread of the app: pacer's own block
 * every signal):
 *   1. the first request posts a semaphore (async-signal-safe) to the
 *      `pacer-exit` thread, which runs the agent's exit sequence (stop
 *      features, flush frames, report pages still measuring — `incomplete`
 *      —, write and upload what is left: agent_finish) and posts back; it
 *      touches no GDK object, so a display that is gone does not matter;
 *   2. the caller waits for that at most FLUSH_WAIT_S — if it interrupted
 *      (a signal) or is itself (an _exit from inside a lock) a thread
 *      holding a lock the exit sequence needs, the records are lost, never
 *      the exit;
 *   3. a signal handler sets the disposition back to SIG_DFL and raises the
 *      signal again: blocked while the handler runs, it is delivered as the
 *      handler returns, and the default action ends the process — killed by
 *      that signal (with its core dump, where the default dumps one), the
 *      status it would have had without pacer; an _exit goes on to the real
 *      _exit with the app's status.
 * A second request while the first is being handled does not wait: a
 * signal ends the process at once the same way, an _exit exits at once.
 */
#include "agent.h"

#include <pacer/base/thread.h>

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FLUSH_WAIT_S 5

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef __sighandler_t (*signal_fn)(int, __sighandler_t);
static sigaction_fn real_sigaction;
static signal_fn real_signal;

static const int watched[] = {SIGTERM, SIGINT, SIGHUP, SIGABRT, SIGTRAP};
#define N_WATCHED (sizeof(watched) / sizeof(watched[0]))

static struct {
    _Atomic bool owned;         /* the agent's handler is installed */
    struct sigaction app_view;  /* what the app set last (SIG_DFL at first) */
} slots[N_WATCHED];
static _Atomic int lock; /* a spin lock: sigaction may be called from a handler */

static sem_t flush_sem, done_sem;
static pthread_t flusher;
static _Atomic bool flusher_ready;
#define EXIT_CALL (-1)    /* `requested` by _exit or _Exit */
static _Atomic int requested; /* the signal being handled, EXIT_CALL, 0: none */
static _Atomic bool flushed;  /* the exit sequence ran */
static _Atomic bool on_main_thread; /* the caller runs on it: its state holds still */

static long slot_of(int signo)
{
    for (size_t i = 0; i < N_WATCHED; i++)
        if (watched[i] == signo)
            return (long)i;
    return -1;
}

static void spin_lock(void)
{
    while (atomic_exchange_explicit(&lock, 1, memory_order_acquire))
        ;
}

static void spin_unlock(void)
{
    atomic_store_explicit(&lock, 0, memory_order_release);
}

static bool resolve(void)
{
    AGENT_REAL(real_sigaction, NULL, "sigaction");
    return real_sigaction != NULL;
}

/* Has the exit thread run the exit sequence and waits for it, at most
 * FLUSH_WAIT_S. Async-signal-safe. */
static void flush_and_wait(void)
{
    atomic_store(&on_main_thread, agent_on_main_thread());
    sem_post(&flush_sem);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += FLUSH_WAIT_S;
    while (sem_timedwait(&done_sem, &until) != 0 && errno == EINTR)
        ;
}

static void on_exit_signal(int signo, siginfo_t *si, void *uc)
{
    (void)si;
    (void)uc;
    int saved = errno;
    int none = 0;
    /* not in a fork's child (STOPPED, and no exit thread there), nor once
     * the exit sequence ran */
    if (agent_active() && agent_is_owner() && atomic_compare_exchange_strong(&requested, &none, signo))
        flush_and_wait();
    /* the default action, as without pacer */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    real_sigaction(signo, &dfl, NULL);
    raise(signo);
    errno = saved;
}

void exit_on_exit_call(void)
{
    int none = 0;
    if (atomic_load(&flusher_ready) && agent_active() && agent_is_owner() &&
        atomic_compare_exchange_strong(&requested, &none, EXIT_CALL)) {
        flush_and_wait();
        return;
    }
    /* Two threads that both saw the display go call _exit (Qt 5 on
     * Wayland): the second waits for the first one's flush, which its
     * _exit would otherwise cut short. */
    if (atomic_load(&requested) == EXIT_CALL && agent_is_owner()) {
        struct timespec tick = {0, 1000000};
        for (int i = 0; i < FLUSH_WAIT_S * 1000 && !atomic_load(&flushed); i++)
            nanosleep(&tick, NULL);
    }
}

/* The exit sequence may run on a damaged process: abort() from glibc's
 * heap checks, a signal that landed inside a lock's holder. A fault of the
 * exit thread then must not end the process in its own name (a SIGSEGV in
 * pacer-exit instead of the app's SIGABRT, in the core dump and in a crash
 * reporter): while the sequence runs, SIGSEGV, SIGBUS, SIGILL and SIGFPE are
 * the agent's; a fault of the exit thread gives up the flush (the caller
 * goes on ending the process as it would have), a fault of any other thread
 * gets the app's own disposition back and happens again as without pacer. */
static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
#define N_FAULTS (sizeof(faults) / sizeof(faults[0]))
static struct sigaction app_fault[N_FAULTS];
static _Atomic bool fault_net;

static void restore_faults(void)
{
    if (!atomic_exchange(&fault_net, false))
        return;
    for (size_t i = 0; i < N_FAULTS; i++)
        real_sigaction(faults[i], &app_fault[i], NULL);
}

static void on_flush_fault(int signo, siginfo_t *si, void *uc)
{
    (void)uc;
    if (pthread_equal(pthread_self(), flusher) && si->si_code > 0) {
        sem_post(&done_sem);
        for (;;)
            pause(); /* the process ends from the caller */
    }
    /* the app's: its disposition back; a fault recurs when the handler
     * returns, a signal sent by someone is sent again */
    restore_faults();
    if (si->si_code <= 0)
        kill(getpid(), signo);
}

static void install_fault_net(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_flush_fault;
    sa.sa_flags = SA_SIGINFO;
    sigfillset(&sa.sa_mask);
    for (size_t i = 0; i < N_FAULTS; i++)
        if (real_sigaction(faults[i], NULL, &app_fault[i]) != 0)
            return;
    atomic_store(&fault_net, true);
    for (size_t i = 0; i < N_FAULTS; i++)
        real_sigaction(faults[i], &sa, NULL);
    /* pacer's threads block every signal, and the kernel kills a thread
     * whose fault is blocked with the default action: unblock them here */
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < N_FAULTS; i++)
        sigaddset(&set, faults[i]);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

static void *flusher_main(void *arg)
{
    (void)arg;
    while (sem_wait(&flush_sem) != 0)
        ;
    install_fault_net();
    agent_finish(atomic_load(&on_main_thread));
    restore_faults();
    atomic_store(&flushed, true);
    sem_post(&done_sem);
    return NULL;
}

static void install_ours(size_t i)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_exit_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (real_sigaction(watched[i], &sa, NULL) == 0)
        atomic_store(&slots[i].owned, true);
}

/* A feature: at setup, on the main thread. */
void exit_install(void)
{
    if (!resolve() || sem_init(&flush_sem, 0, 0) != 0 || sem_init(&done_sem, 0, 0) != 0) {
        agent_note_once("exit", "cannot watch the exit signals; records pending when a signal or _exit ends the "
                                "program are lost");
        return;
    }
    if (thread_start(&flusher, "pacer-exit", flusher_main, NULL) < 0) {
        agent_note_once("exit", "cannot start the exit thread; records pending when a signal or _exit ends the "
                                "program are lost");
        return;
    }
    pthread_detach(flusher);
    atomic_store(&flusher_ready, true);
    spin_lock();
    for (size_t i = 0; i < N_WATCHED; i++) {
        struct sigaction cur;
        if (real_sigaction(watched[i], NULL, &cur) != 0)
            continue;
        if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL) {
            slots[i].app_view = cur;
            install_ours(i);
        }
    }
    spin_unlock();
}

AGENT_EXPORT int sigaction(int signo, const struct sigaction *act, struct sigaction *oldact)
{
    if (!resolve()) {
        errno = ENOSYS;
        return -1;
    }
    long i = slot_of(signo);
    if (i < 0 || agent_in_hook)
        return real_sigaction(signo, act, oldact);
    spin_lock();
    int r = 0;
    if (atomic_load(&slots[i].owned)) {
        struct sigaction view = slots[i].app_view;
        bool dfl = act && !(act->sa_flags & SA_SIGINFO) && act->sa_handler == SIG_DFL;
        if (act && !dfl) {
            r = real_sigaction(signo, act, NULL); /* the app's own now */
            if (r == 0)
                atomic_store(&slots[i].owned, false);
        } else if (act) {
            slots[i].app_view = *act;
        }
        if (r == 0 && oldact)
            *oldact = view;
    } else {
        bool dfl = act && !(act->sa_flags & SA_SIGINFO) && act->sa_handler == SIG_DFL;
        bool ready = atomic_load(&requested) == 0 && atomic_load(&flusher_ready) && agent_active();
        if (dfl && ready) {
            /* back to the default: the agent's handler stands in for it */
            struct sigaction cur;
            r = real_sigaction(signo, NULL, &cur);
            if (r == 0) {
                slots[i].app_view = *act;
                install_ours((size_t)i);
                if (oldact)
                    *oldact = cur;
            }
        } else {
            r = real_sigaction(signo, act, oldact);
        }
    }
    spin_unlock();
    return r;
}

/* Only the watched signals take the path of sigaction() above; the rest is
 * glibc's signal() untouched. */
AGENT_EXPORT __sighandler_t signal(int signo, __sighandler_t handler)
{
    if (slot_of(signo) < 0 || agent_in_hook) {
        AGENT_REAL(real_signal, NULL, "signal");
        if (!real_signal) {
            errno = ENOSYS;
            return SIG_ERR;
        }
        return real_signal(signo, handler);
    }
    struct sigaction act, old;
    memset(&act, 0, sizeof(act));
    act.sa_handler = handler;
    act.sa_flags = SA_RESTART; /* glibc's signal(): BSD semantics */
    sigemptyset(&act.sa_mask);
    sigaddset(&act.sa_mask, signo);
    if (sigaction(signo, &act, &old) != 0)
        return SIG_ERR;
    return old.sa_handler; /* as glibc: the union's handler member, whatever the flags */
}
