/* The main thread's stack while it is stuck (DESIGN §3.3, seeds 001/002):
 * taken by a signal sent to it, unwound off it.
 *
 * Capture, in the signal handler (on the main thread): the handler does
 * nothing but copy the interrupted context's registers and the live part
 * of the stack (from the stack pointer up to the stack's top, at most
 * STACK_COPY bytes) into a buffer allocated once, statically. No unwinder
 * runs there: unwinders take locks (dl_iterate_phdr, their caches) that the
 * interrupted code may hold, which is how in-process stack samplers
 * deadlock. memcpy and atomics are async-signal-safe.
 *
 * Unwinding, on the watchdog thread: libdw's unwinder (dwfl_attach_state
 * with our own callbacks, the way `perf --call-graph dwarf` unwinds copied
 * user stacks) walks the copy with the CFI (.eh_frame / .debug_frame) of
 * each module: the initial registers are the copied ones, a memory read is
 * served from the copy and refused outside it, so a corrupt stack ends the
 * walk, it never faults.
 *
 * The hand-off between the watchdog and the handler is one atomic `state`:
 *
 *   IDLE ──watchdog: request, pthread_kill──► REQUESTED
 *   REQUESTED ──handler: CAS──► WRITING ──handler──► DONE
 *   DONE ──watchdog: unwound──► IDLE
 *   REQUESTED ──watchdog: timed out, CAS──► IDLE   (the signal stays pending)
 *
 * A handler that finds anything but REQUESTED returns at once, so a signal
 * delivered late (the main thread had it blocked) touches nothing. While a
 * signal is still pending the watchdog sends no other (sent/delivered): a
 * thread that blocks the signal for good gets one queued signal, not one
 * per jank. Only the main thread is ever signalled (pthread_kill), so other
 * threads' signal masks do not matter.
 *
 * The signal: the highest real-time signal whose disposition is the default
 * when the agent starts (the app uses none of them, or uses low ones).
 * Before each send the watchdog checks the handler is still the agent's: an
 * app that took the signal over later switches capture off (said once)
 * rather than receive a signal it does not expect. SA_RESTART restarts
 * interrupted reads and writes; calls that never restart (poll, nanosleep)
 * return EINTR early, as they do under any profiler's signal — GLib's own
 * loops retry.
 *
 * Architectures: x86-64 and aarch64 (the register layout below); elsewhere
 * capture is off and says so.
 */
#include "agent.h"

#include <pacer/base/clock.h>

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <pacer/symbols.h>

#define STACK_COPY (256 * 1024)

#if defined(__x86_64__)
#define NREGS 17 /* DWARF 0..15: rax rdx rcx rbx rsi rdi rbp rsp r8..r15; 16: return address = rip */
#elif defined(__aarch64__)
#define NREGS 33 /* DWARF 0..30: x0..x30, 31: sp; pc apart */
#else
#define NREGS 1
#define NO_CAPTURE 1
#endif

enum { IDLE, REQUESTED, WRITING, DONE };

static struct {
    _Atomic int state;
    uint64_t regs[NREGS];
    uint64_t pc, sp;
    size_t len;
    unsigned char stack[STACK_COPY];
} snap;

static int sig;
static pthread_t main_thread;
static pid_t main_tid;
static uintptr_t stack_lo, stack_hi; /* the main thread's stack */
static bool ready, off;
/* Signals sent (watchdog) and handler runs (main thread): a signal is
 * outstanding, still pending, while delivered < sent. */
static unsigned long sent;
static _Atomic unsigned long delivered;

/* ---- the handler (main thread, async-signal context) ---- */

static void on_signal(int signo, siginfo_t *si, void *ucv)
{
    (void)signo;
    (void)si;
    atomic_fetch_add_explicit(&delivered, 1, memory_order_relaxed);
    int expected = REQUESTED;
    if (!atomic_compare_exchange_strong(&snap.state, &expected, WRITING))
        return;
    int saved_errno = errno;
    ucontext_t *uc = ucv;
#if defined(__x86_64__)
    static const int map[NREGS] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                                   REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                   REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};
    for (int i = 0; i < NREGS; i++)
        snap.regs[i] = (uint64_t)uc->uc_mcontext.gregs[map[i]];
    snap.pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    snap.sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    for (int i = 0; i < 31; i++)
        snap.regs[i] = uc->uc_mcontext.regs[i];
    snap.regs[31] = uc->uc_mcontext.sp;
    snap.pc = uc->uc_mcontext.pc;
    snap.sp = uc->uc_mcontext.sp;
#else
    (void)uc;
#endif
    snap.len = 0;
    /* Only the known stack is copied: a thread on a sigaltstack or a
     * coroutine stack gives the first frame alone, never a fault. */
    if (snap.sp >= stack_lo && snap.sp < stack_hi) {
        size_t n = stack_hi - snap.sp;
        snap.len = n < STACK_COPY ? n : STACK_COPY;
        memcpy(snap.stack, (const void *)(uintptr_t)snap.sp, snap.len);
    }
    errno = saved_errno;
    atomic_store_explicit(&snap.state, DONE, memory_order_release);
}

/* ---- set-up (main thread) ---- */

static bool handler_is_ours(void)
{
    struct sigaction sa;
    return sigaction(sig, NULL, &sa) == 0 && (sa.sa_flags & SA_SIGINFO) && sa.sa_sigaction == on_signal;
}

bool stack_init(void)
{
#ifdef NO_CAPTURE
    agent_note_once("stack", "stack capture is not supported on this architecture; jank records have no stack");
    off = true;
    return false;
#else
    pthread_attr_t attr;
    void *addr;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) {
        agent_note_once("stack", "the main thread's stack is unknown; jank records have no stack");
        off = true;
        return false;
    }
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    stack_lo = (uintptr_t)addr;
    stack_hi = (uintptr_t)addr + size;
    main_thread = pthread_self();
    main_tid = (pid_t)syscall(SYS_gettid);

    for (int s = SIGRTMAX - 1; s >= SIGRTMIN + 2 && !sig; s--) {
        struct sigaction old;
        if (sigaction(s, NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
            continue;
        struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART};
        sigfillset(&sa.sa_mask); /* nothing else runs inside the copy */
        if (sigaction(s, &sa, NULL) == 0)
            sig = s;
    }
    if (!sig) {
        agent_note_once("stack", "no free real-time signal; jank records have no stack");
        off = true;
        return false;
    }
    ready = true;
    return true;
#endif
}

/* ---- unwinding the copy (watchdog thread) ---- */

static pid_t cb_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
    if (*thread_argp)
        return 0;
    *thread_argp = arg;
    return main_tid;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
    if (addr < snap.sp || addr + sizeof(*result) > snap.sp + snap.len || addr + sizeof(*result) < addr)
        return false;
    memcpy(result, snap.stack + (addr - snap.sp), sizeof(*result));
    return true;
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
    Dwarf_Word regs[NREGS];
    for (int i = 0; i < NREGS; i++)
        regs[i] = snap.regs[i];
    if (!dwfl_thread_state_registers(thread, 0, NREGS, regs))
        return false;
    dwfl_thread_state_register_pc(thread, snap.pc);
    return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
    .next_thread = cb_next_thread,
    .memory_read = cb_memory_read,
    .set_initial_registers = cb_set_initial_registers,
};

static int on_frame(Dwfl_Frame *frame, void *arg)
{
    stack_trace *st = arg;
    Dwarf_Addr pc;
    bool activation;
    if (!dwfl_frame_pc(frame, &pc, &activation))
        return DWARF_CB_ABORT;
    if (st->n == STACK_MAX_FRAMES) {
        st->truncated = true;
        return DWARF_CB_ABORT;
    }
    /* A return address points after the call: the call is at pc - 1. */
    st->pc[st->n++] = activation ? pc : pc - 1;
    return DWARF_CB_OK;
}

/* The agent's symbolizer: one per process, used on the watchdog thread
 * only. jank.c names the frames with the same one. */
pt_symbols *stack_symbols(void);
pt_symbols *stack_symbols(void)
{
    static pt_symbols *syms;
    static bool attached;
    if (!syms)
        syms = pt_symbols_new_live(getpid());
    else
        pt_symbols_refresh(syms); /* libraries dlopen'ed since */
    if (syms && !attached) {
        Dwfl *dwfl = pt_symbols_dwfl(syms);
        attached = dwfl && dwfl_attach_state(dwfl, NULL, getpid(), &thread_callbacks, NULL);
        if (!attached)
            agent_note_once("unwind", "libdw cannot unwind here (%s); jank records show the top frame only",
                            dwfl_errmsg(-1));
    }
    return syms;
}

static void unwind(stack_trace *st)
{
    st->n = 0;
    st->truncated = false;
    pt_symbols *syms = stack_symbols();
    Dwfl *dwfl = syms ? pt_symbols_dwfl(syms) : NULL;
    if (dwfl && dwfl_pid(dwfl) > 0)
        dwfl_getthread_frames(dwfl, main_tid, on_frame, st);
    if (st->n == 0) {
        st->pc[0] = snap.pc;
        st->n = 1;
        st->truncated = true;
    }
}

int stack_capture(stack_trace *ret, int timeout_ms)
{
    if (!ready || off)
        return -ENOTSUP;
    if (!handler_is_ours()) {
        agent_note_once("stack-signal", "the application took over signal %d; jank records have no stack", sig);
        off = true;
        return -ENOTSUP;
    }
    int expected = IDLE;
    if (!atomic_compare_exchange_strong(&snap.state, &expected, REQUESTED))
        return -EAGAIN; /* cannot happen: only this thread leaves DONE */
    if (atomic_load(&delivered) >= sent) {
        if (pthread_kill(main_thread, sig) != 0) {
            atomic_store(&snap.state, IDLE);
            return -EAGAIN;
        }
        sent++;
    }
    for (int waited = 0; atomic_load_explicit(&snap.state, memory_order_acquire) != DONE; waited++) {
        if (waited >= timeout_ms) {
            expected = REQUESTED;
            if (atomic_compare_exchange_strong(&snap.state, &expected, IDLE)) {
                agent_note_once("stack-blocked",
                                "the main thread did not take signal %d in time (blocked?); "
                                "some jank records have no stack",
                                sig);
                return -EAGAIN; /* still pending: no second signal until it is taken */
            }
            /* The handler is copying: it finishes without blocking. */
        }
        sleep_ms(1);
    }
    unwind(ret);
    atomic_store_explicit(&snap.state, IDLE, memory_order_release);
    return 0;
}
