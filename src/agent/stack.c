/* The main thread's stack while it is stuck (DESIGN §3.3, seeds 001/002),
 * taken without changing what the thread does, and unwound off it.
 *
 * How, chosen at each capture by what the thread is doing (the method is
 * the jank record's stack_method):
 *
 *   "syscall"  The thread sleeps in a system call: /proc/self/task/TID/syscall
 *              names the call and gives the user stack pointer and
 *              instruction pointer it entered the kernel with. Until the
 *              call returns no user code of the thread runs, so its stack
 *              from that SP up is stable: it is copied, and the file read
 *              again — the same call at the same SP and PC means the copy
 *              is the stack the thread will return to. No signal is sent:
 *              the call (read, poll, waitpid, nanosleep, a futex…) runs as
 *              it would without pacer. Unwinding starts from PC and SP
 *              alone (the other registers are in the kernel): a frame whose
 *              CFI needs another register ends the walk (stack_truncated).
 *   "perf"     The thread runs (user code, or a system call that does not
 *              sleep): a perf event on it (its task clock, sampling user
 *              registers and the top of its user stack) records one sample
 *              after 100 µs of its CPU time, into a ring buffer the
 *              watchdog reads. The kernel takes the sample; the thread is
 *              not signalled, so a system call it makes meanwhile is not
 *              interrupted. A thread that goes to sleep before the sample
 *              is taken is seen sleeping at the next look (above). Needs
 *              perf events on the process's own threads
 *              (kernel.perf_event_paranoid ≤ 2, or CAP_PERFMON).
 *   "signal"   When perf is not permitted, and only when the thread was
 *              seen running: a real-time signal whose handler copies the
 *              registers and the stack into a static buffer (nothing else:
 *              memcpy and atomics are async-signal-safe). Said once at the
 *              first capture. What remains of the race: the thread, seen
 *              running, can enter a sleeping call in the microseconds before
 *              the signal lands; poll/nanosleep/select then return EINTR,
 *              as under any profiler's signal (reads, writes and other
 *              restartable calls restart: SA_RESTART). The handler sees
 *              when it interrupted a call, and the agent says so once.
 *
 * Unwinding, on the watchdog thread: libdw's unwinder (dwfl_attach_state
 * with our callbacks, as `perf --call-graph dwarf` unwinds copied stacks)
 * walks the copy with the CFI of each module: the initial registers are
 * the ones known, a memory read is served from the copy and refused
 * outside it, so a corrupt stack ends the walk, it never faults.
 *
 * The signal's hand-off is one atomic `state`:
 *   IDLE ──watchdog: request, pthread_kill──► REQUESTED
 *   REQUESTED ──handler: CAS──► WRITING ──handler──► DONE
 *   DONE ──watchdog: unwound──► IDLE
 *   REQUESTED ──watchdog: timed out, CAS──► IDLE   (the signal stays pending)
 * A handler that finds anything but REQUESTED returns at once; while a
 * signal is still pending none other is sent (sent/delivered).
 *
 * Profiles (stack_sample, profile.c): a sample every few ms of the
 * iteration, by the same methods; for a running thread the perf event
 * then stays enabled between samples with a period of 1 ms of its CPU
 * time, so the newest sample is in the ring when the slot comes, and it is
 * disabled when the iteration ends (stack_sample_end).
 *
 * Architectures: x86-64 and aarch64 (register layouts below); elsewhere
 * capture is off and says so.
 */
#include "agent.h"

#include <pacer/base/clock.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <pacer/symbols.h>
#include <pacer/symbols_dw.h>

#define STACK_COPY (256 * 1024)
#define PERF_STACK 65000        /* bytes of stack in a perf sample (a sample is at most 64 KiB) */
#define PERF_PAGES 32           /* the ring buffer: 128 KiB, room for one sample */
#define PERF_PERIOD_NS 100000   /* of the thread's CPU time */

#if defined(__x86_64__)
#include <asm/perf_regs.h>
#define NREGS 17 /* DWARF 0..15: rax rdx rcx rbx rsi rdi rbp rsp r8..r15; 16: return address = rip */
#define DWARF_SP 7
/* perf's x86 register numbers, in DWARF order (rip apart) */
static const int perf_of_dwarf[NREGS - 1] = {
    PERF_REG_X86_AX, PERF_REG_X86_DX, PERF_REG_X86_CX, PERF_REG_X86_BX, PERF_REG_X86_SI, PERF_REG_X86_DI,
    PERF_REG_X86_BP, PERF_REG_X86_SP, PERF_REG_X86_R8, PERF_REG_X86_R9, PERF_REG_X86_R10, PERF_REG_X86_R11,
    PERF_REG_X86_R12, PERF_REG_X86_R13, PERF_REG_X86_R14, PERF_REG_X86_R15};
#define PERF_REG_PC PERF_REG_X86_IP
#elif defined(__aarch64__)
#include <asm/perf_regs.h>
#define NREGS 33 /* DWARF 0..30: x0..x30, 31: sp; pc apart */
#define DWARF_SP 31
#define PERF_REG_PC PERF_REG_ARM64_PC
#else
#define NREGS 1
#define DWARF_SP 0
#define NO_CAPTURE 1
#endif

enum { IDLE, REQUESTED, WRITING, DONE };

static struct {
    _Atomic int state;
    uint64_t regs[NREGS];
    uint64_t known; /* bit i: regs[i] is known (from /proc only SP is) */
    uint64_t pc, sp;
    size_t len;
    bool interrupted; /* the signal interrupted a system call */
    unsigned char stack[STACK_COPY];
} snap;

static int sig;
static pthread_t main_thread;
static pid_t main_tid;
static uintptr_t stack_lo, stack_hi; /* the main thread's stack */
static bool ready, capture_off;
static unsigned long sent;
static _Atomic unsigned long delivered;
static char syscall_path[64];

/* perf (watchdog thread only after stack_init) */
static int perf_fd = -1;
static void *perf_ring;
static bool perf_tried;
static char perf_why[96]; /* why perf is off */

/* The user registers a perf sample holds: the general ones and the PC. */
static uint64_t perf_regs_mask(void)
{
    uint64_t mask = 0;
#if defined(__x86_64__)
    for (int i = 0; i < NREGS - 1; i++)
        mask |= UINT64_C(1) << perf_of_dwarf[i];
#elif defined(__aarch64__)
    for (int i = 0; i <= PERF_REG_ARM64_SP; i++)
        mask |= UINT64_C(1) << i;
#endif
#ifdef PERF_REG_PC
    mask |= UINT64_C(1) << PERF_REG_PC;
#endif
    return mask;
}

/* ---- the signal handler (main thread, async-signal context) ---- */

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
    snap.interrupted = false;
#if defined(__x86_64__)
    static const int map[NREGS] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                                   REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                   REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};
    for (int i = 0; i < NREGS; i++)
        snap.regs[i] = (uint64_t)uc->uc_mcontext.gregs[map[i]];
    snap.pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    snap.sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
    /* a call the kernel turned into EINTR: rax holds it, rip follows the
     * two bytes of the syscall instruction */
    const unsigned char *ip = (const unsigned char *)(uintptr_t)snap.pc;
    snap.interrupted = (int64_t)snap.regs[0] == -EINTR && ip[-2] == 0x0f && ip[-1] == 0x05;
#elif defined(__aarch64__)
    for (int i = 0; i < 31; i++)
        snap.regs[i] = uc->uc_mcontext.regs[i];
    snap.regs[31] = uc->uc_mcontext.sp;
    snap.pc = uc->uc_mcontext.pc;
    snap.sp = uc->uc_mcontext.sp;
    snap.interrupted = (int64_t)snap.regs[0] == -EINTR && ((const uint32_t *)(uintptr_t)snap.pc)[-1] == 0xd4000001;
#else
    (void)uc;
#endif
    snap.known = (UINT64_C(1) << NREGS) - 1;
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

static bool handler_is_ours(void)
{
    struct sigaction sa;
    return sigaction(sig, NULL, &sa) == 0 && (sa.sa_flags & SA_SIGINFO) && sa.sa_sigaction == on_signal;
}

/* ---- set-up (main thread) ---- */

bool stack_init(void)
{
#ifdef NO_CAPTURE
    agent_note_once("stack", "stack capture is not supported on this architecture; jank records have no stack");
    capture_off = true;
    return false;
#else
    main_thread = pthread_self();
    main_tid = (pid_t)syscall(SYS_gettid);
    snprintf(syscall_path, sizeof(syscall_path), "/proc/self/task/%d/syscall", (int)main_tid);
    ready = true;
    return true;
#endif
}

/* The main thread's stack, found at the first capture (watchdog thread),
 * not at set-up: for the initial thread glibc's pthread_getattr_np reads
 * /proc/self/maps, hundreds of lines in a GTK app, while it starts. The
 * signal handler reads the bounds only after a capture requested it. */
static bool stack_bounds(void)
{
    static bool tried;
    if (tried)
        return stack_hi != 0;
    tried = true;
    pthread_attr_t attr;
    void *addr;
    size_t size;
    if (pthread_getattr_np(main_thread, &attr) != 0) {
        agent_note_once("stack", "the main thread's stack is unknown; jank records have no stack");
        capture_off = true;
        return false;
    }
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    stack_lo = (uintptr_t)addr;
    stack_hi = (uintptr_t)addr + size;
    return true;
}

/* The signal, installed the first time it is needed (perf not permitted):
 * the highest real-time signal whose disposition is still the default. */
static bool signal_init(void)
{
    if (sig)
        return true;
    for (int s = SIGRTMAX - 1; s >= SIGRTMIN + 2 && !sig; s--) {
        struct sigaction old;
        if (sigaction(s, NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
            continue;
        struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART};
        sigfillset(&sa.sa_mask); /* nothing else runs inside the copy */
        if (sigaction(s, &sa, NULL) == 0)
            sig = s;
    }
    return sig != 0;
}

/* ---- "syscall": the thread sleeps in the kernel (watchdog thread) ---- */

/* Reads the main thread's syscall file: 1 in a call (sp, pc set), 0 running,
 * -1 unreadable. */
static int read_syscall(long *ret_nr, uint64_t *ret_sp, uint64_t *ret_pc)
{
    char buf[256];
    int fd = open(syscall_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    if (strncmp(buf, "running", 7) == 0)
        return 0;
    /* "NR ARG1 … ARG6 SP PC", or "-1 SP PC" (blocked, not in a call) */
    char *p = buf, *end;
    long nr = strtol(p, &end, 10);
    if (end == p)
        return -1;
    unsigned long long v[8];
    int k = 0;
    for (p = end; k < 8; k++, p = end) {
        v[k] = strtoull(p, &end, 0);
        if (end == p)
            break;
    }
    if (k < 2)
        return -1;
    *ret_nr = nr;
    *ret_sp = v[k - 2];
    *ret_pc = v[k - 1];
    return nr >= 0 ? 1 : 0;
}

static bool capture_syscall(void)
{
    long nr, nr2;
    uint64_t sp, pc, sp2, pc2;
    if (read_syscall(&nr, &sp, &pc) != 1)
        return false;
    memset(snap.regs, 0, sizeof(snap.regs));
    snap.regs[DWARF_SP] = sp;
    snap.known = UINT64_C(1) << DWARF_SP;
    snap.sp = sp;
    snap.pc = pc;
    snap.interrupted = false;
    snap.len = 0;
    if (sp >= stack_lo && sp < stack_hi) {
        size_t n = stack_hi - sp;
        snap.len = n < STACK_COPY ? n : STACK_COPY;
        memcpy(snap.stack, (const void *)(uintptr_t)sp, snap.len);
    }
    /* still the same sleep: the copy is the stack it will return to */
    return read_syscall(&nr2, &sp2, &pc2) == 1 && nr2 == nr && sp2 == sp && pc2 == pc;
}

/* ---- "perf": a sample of the running thread (watchdog thread) ---- */

static bool perf_init(void)
{
    if (perf_tried)
        return perf_fd >= 0;
    perf_tried = true;
    if (getenv("PACER_AGENT_NO_PERF") && *getenv("PACER_AGENT_NO_PERF")) {
        snprintf(perf_why, sizeof(perf_why), "PACER_AGENT_NO_PERF is set");
        return false;
    }
#ifndef NO_CAPTURE
    struct perf_event_attr at;
    memset(&at, 0, sizeof(at));
    at.size = sizeof(at);
    at.type = PERF_TYPE_SOFTWARE;
    at.config = PERF_COUNT_SW_TASK_CLOCK;
    at.sample_period = PERF_PERIOD_NS;
    at.sample_type = PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
    at.sample_regs_user = perf_regs_mask();
    at.sample_stack_user = PERF_STACK & ~7u;
    at.exclude_kernel = 1;
    at.exclude_hv = 1;
    at.disabled = 1;
    at.wakeup_events = 1;
    perf_fd = (int)syscall(SYS_perf_event_open, &at, main_tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (perf_fd < 0) {
        snprintf(perf_why, sizeof(perf_why), "perf_event_open: %s%s", strerror(errno),
                 errno == EACCES || errno == EPERM ? "; see kernel.perf_event_paranoid" : "");
        return false;
    }
    perf_ring = mmap(NULL, (size_t)(PERF_PAGES + 1) * (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE,
                     MAP_SHARED, perf_fd, 0);
    if (perf_ring == MAP_FAILED) {
        snprintf(perf_why, sizeof(perf_why), "mmap of the perf buffer: %s", strerror(errno));
        close(perf_fd);
        perf_fd = -1;
        perf_ring = NULL;
        return false;
    }
    return true;
#else
    snprintf(perf_why, sizeof(perf_why), "not on this architecture");
    return false;
#endif
}

/* Copies the newest sample of the ring into snap; empties the ring. */
static bool read_perf_sample(void)
{
    struct perf_event_mmap_page *meta = perf_ring;
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    const unsigned char *data = (const unsigned char *)perf_ring + meta->data_offset;
    uint64_t size = meta->data_size;
    bool got = false;
    while (tail < head) {
        struct perf_event_header h;
        for (size_t i = 0; i < sizeof(h); i++)
            ((unsigned char *)&h)[i] = data[(tail + i) % size];
        if (h.size < sizeof(h))
            break;
        if (h.type == PERF_RECORD_SAMPLE) {
            /* abi, regs (in ascending perf register order), size, bytes, dyn_size */
            uint64_t off = tail + sizeof(h);
#define RD64(o, dst)                                                  \
    do {                                                              \
        for (size_t i_ = 0; i_ < 8; i_++)                             \
            ((unsigned char *)&(dst))[i_] = data[((o) + i_) % size];  \
    } while (0)
            uint64_t abi, regs[64] = {0}, n_stack;
            RD64(off, abi);
            off += 8;
            if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
                uint64_t mask = perf_regs_mask();
                for (int bit = 0; bit < 64; bit++)
                    if (mask & (UINT64_C(1) << bit)) {
                        RD64(off, regs[bit]);
                        off += 8;
                    }
            }
            RD64(off, n_stack);
            off += 8;
            uint64_t dyn = 0;
            if (n_stack)
                RD64(off + n_stack, dyn);
            if (abi != PERF_SAMPLE_REGS_ABI_NONE && dyn > 0 && dyn <= n_stack && dyn <= STACK_COPY) {
#if defined(__x86_64__)
                for (int i = 0; i < NREGS - 1; i++)
                    snap.regs[i] = regs[perf_of_dwarf[i]];
                snap.regs[NREGS - 1] = regs[PERF_REG_PC];
                snap.sp = regs[PERF_REG_X86_SP];
#elif defined(__aarch64__)
                for (int i = 0; i < 31; i++)
                    snap.regs[i] = regs[i];
                snap.regs[31] = regs[PERF_REG_ARM64_SP];
                snap.sp = regs[PERF_REG_ARM64_SP];
#endif
                snap.pc = regs[PERF_REG_PC];
                snap.known = (UINT64_C(1) << NREGS) - 1;
                snap.len = (size_t)dyn;
                for (uint64_t i = 0; i < dyn; i++)
                    snap.stack[i] = data[(off + i) % size];
                snap.interrupted = false;
                got = true;
            }
#undef RD64
        }
        tail += h.size;
    }
    __atomic_store_n(&meta->data_tail, head, __ATOMIC_RELEASE);
    return got;
}

static bool perf_streaming; /* left enabled between profile samples (stack_sample) */

/* 1: a sample was taken; 0: none within timeout_ms (the thread slept); -1:
 * perf does not work here. */
static int capture_perf(int timeout_ms)
{
    if (!perf_init())
        return -1;
    if (perf_streaming) {
        uint64_t period = PERF_PERIOD_NS;
        ioctl(perf_fd, PERF_EVENT_IOC_PERIOD, &period);
        perf_streaming = false;
    }
    read_perf_sample(); /* drop anything left */
    if (ioctl(perf_fd, PERF_EVENT_IOC_RESET, 0) < 0 || ioctl(perf_fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
        return -1;
    bool got = false;
    int64_t deadline = mono_ns() + (int64_t)timeout_ms * 1000000;
    while (!got) {
        int64_t left = (deadline - mono_ns()) / 1000000;
        if (left <= 0)
            break;
        struct pollfd p = {perf_fd, POLLIN, 0};
        if (poll(&p, 1, (int)(left > 20 ? 20 : left)) < 0 && errno != EINTR)
            break;
        got = read_perf_sample();
        if (!got) {
            long nr;
            uint64_t sp, pc;
            if (read_syscall(&nr, &sp, &pc) == 1)
                break; /* it went to sleep: the caller takes it from there */
        }
    }
    ioctl(perf_fd, PERF_EVENT_IOC_DISABLE, 0);
    return got ? 1 : 0;
}

/* Profiles (stack_sample): the event stays enabled with a longer period,
 * so that a running thread's sample is already in the ring at the slot. */
#define PERF_STREAM_PERIOD_NS 1000000

/* 1: the newest sample of the running thread; 0: none within timeout_ms;
 * -1: perf does not work here. */
static int sample_perf(int timeout_ms)
{
    if (!perf_init())
        return -1;
    if (!perf_streaming) {
        uint64_t period = PERF_STREAM_PERIOD_NS;
        read_perf_sample(); /* drop anything left */
        if (ioctl(perf_fd, PERF_EVENT_IOC_PERIOD, &period) < 0 || ioctl(perf_fd, PERF_EVENT_IOC_RESET, 0) < 0 ||
            ioctl(perf_fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
            return -1;
        perf_streaming = true;
    }
    int64_t deadline = mono_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        if (read_perf_sample())
            return 1;
        int64_t left = (deadline - mono_ns()) / 1000000;
        if (left <= 0)
            return 0;
        long nr;
        uint64_t sp, pc;
        if (read_syscall(&nr, &sp, &pc) == 1)
            return 0; /* it went to sleep */
        struct pollfd p = {perf_fd, POLLIN, 0};
        if (poll(&p, 1, (int)(left > 20 ? 20 : left)) < 0 && errno != EINTR)
            return 0;
    }
}

/* ---- "signal" (watchdog thread) ---- */

static int capture_signal(int timeout_ms)
{
    if (!signal_init()) {
        agent_note_once("stack", "no free real-time signal; jank records of a busy main thread have no stack");
        return -ENOTSUP;
    }
    if (!handler_is_ours()) {
        agent_note_once("stack-signal", "the application took over signal %d; jank records of a busy main "
                                        "thread have no stack", sig);
        return -ENOTSUP;
    }
    int expected = IDLE;
    if (!atomic_compare_exchange_strong(&snap.state, &expected, REQUESTED))
        return -EAGAIN;
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
                agent_note_once("stack-blocked", "the main thread did not take signal %d in time (blocked?); "
                                                 "some jank records have no stack", sig);
                return -EAGAIN; /* still pending: no second signal until it is taken */
            }
            /* the handler is copying: it finishes without blocking */
        }
        sleep_ms(1);
    }
    return 0;
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
    /* runs of known registers; an unknown one stays unset (CFI that needs
     * it ends the walk) */
    for (int i = 0; i < NREGS;) {
        if (!(snap.known & (UINT64_C(1) << i))) {
            i++;
            continue;
        }
        int j = i;
        Dwarf_Word regs[NREGS];
        while (j < NREGS && (snap.known & (UINT64_C(1) << j))) {
            regs[j - i] = snap.regs[j];
            j++;
        }
        if (!pt_dw()->dwfl_thread_state_registers(thread, i, (unsigned)(j - i), regs))
            return false;
        i = j;
    }
    pt_dw()->dwfl_thread_state_register_pc(thread, snap.pc);
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
    if (!pt_dw()->dwfl_frame_pc(frame, &pc, &activation))
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
        const pt_dw_api *dw = pt_dw();
        Dwfl *dwfl = pt_symbols_dwfl(syms);
        attached = dwfl && dw->dwfl_attach_state(dwfl, NULL, getpid(), &thread_callbacks, NULL);
        if (!dw)
            agent_note_once("unwind", "libdw cannot be loaded (%s); jank records show the top frame, unnamed",
                            pt_dw_error());
        else if (!attached)
            agent_note_once("unwind", "libdw cannot unwind here (%s); jank records show the top frame only",
                            dw->dwfl_errmsg(-1));
    }
    return syms;
}

static void unwind(stack_trace *st)
{
    st->n = 0;
    st->truncated = false;
    pt_symbols *syms = stack_symbols();
    Dwfl *dwfl = syms ? pt_symbols_dwfl(syms) : NULL;
    int r = 0;
    if (dwfl && pt_dw()->dwfl_pid(dwfl) > 0)
        r = pt_dw()->dwfl_getthread_frames(dwfl, main_tid, on_frame, st);
    if (r != 0 && st->n > 0)
        st->truncated = true; /* the walk ended early (unknown register, no CFI) */
    if (st->n == 0) {
        st->pc[0] = snap.pc;
        st->n = 1;
        st->truncated = true;
    }
}

/* ---- capture (watchdog thread) ---- */

int stack_capture(stack_trace *ret, int timeout_ms, const char **ret_method)
{
    *ret_method = NULL;
    if (!ready || capture_off || !stack_bounds())
        return -ENOTSUP;
    int r = -ENOTSUP;
    const char *method = NULL;
    if (capture_syscall()) {
        method = "syscall";
        r = 0;
    } else {
        int p = capture_perf(timeout_ms);
        if (p == 1) {
            method = "perf";
            r = 0;
        } else if (p == 0 && capture_syscall()) {
            method = "syscall";
            r = 0;
        } else if (p < 0) {
            long nr;
            uint64_t sp, pc;
            agent_note_once("perf", "no perf events (%s): the stack of a busy main thread is taken with a signal, "
                                    "which can interrupt a system call the thread enters at that moment",
                            perf_why);
            /* only a thread seen running gets the signal */
            if (read_syscall(&nr, &sp, &pc) == 0) {
                method = "signal";
                r = capture_signal(timeout_ms);
            } else if (capture_syscall()) {
                method = "syscall";
                r = 0;
            }
        } else {
            r = -EAGAIN; /* neither a sample nor a steady sleep */
        }
    }
    *ret_method = method;
    if (r < 0)
        return r;
    unwind(ret);
    if (method && strcmp(method, "signal") == 0) {
        if (snap.interrupted)
            agent_note_once("stack-eintr", "the capture signal interrupted a system call the main thread had just "
                                           "entered (it returned EINTR to the application)");
        atomic_store_explicit(&snap.state, IDLE, memory_order_release);
    }
    return 0;
}

/* ---- profiles (watchdog thread) ---- */

int stack_sample(stack_trace *ret, int timeout_ms, const char **ret_method)
{
    *ret_method = NULL;
    if (!ready || capture_off || !stack_bounds())
        return -ENOTSUP;
    long nr;
    uint64_t sp, pc;
    if (read_syscall(&nr, &sp, &pc) == 1) {
        if (perf_streaming)
            read_perf_sample(); /* a sample from before it slept is not now */
        if (capture_syscall()) {
            *ret_method = "syscall";
            unwind(ret);
            return 0;
        }
    }
    int p = sample_perf(timeout_ms);
    if (p == 1) {
        *ret_method = "perf";
        unwind(ret);
        return 0;
    }
    if (p == 0 && capture_syscall()) {
        *ret_method = "syscall";
        unwind(ret);
        return 0;
    }
    if (p < 0)
        return stack_capture(ret, timeout_ms, ret_method); /* the signal, for a thread seen running */
    return -EAGAIN;
}

void stack_sample_end(void)
{
    if (!perf_streaming)
        return;
    ioctl(perf_fd, PERF_EVENT_IOC_DISABLE, 0);
    uint64_t period = PERF_PERIOD_NS;
    ioctl(perf_fd, PERF_EVENT_IOC_PERIOD, &period);
    perf_streaming = false;
}
