/* libpacer-trace lifecycle: start, end, signals, fork.
 *
 *   load (constructor)  PACER_TRACE_DIR unset -> stay off (hooks: one branch).
 *                       Else choose the clock and how the hooks record
 *                       (pt_hooks_setup: rseq), create DIR/NAME.ptrace (see
 *                       trace_format.h), reserve
 *                       the chunk pool, start the writer, snapshot
 *                       /proc/self/maps, catch fatal signals, then
 *                       pt_mode = TSC or MONO.
 *   exit()              (destructor, after the program's atexit handlers)
 *                       pt_finish(): pt_mode = OFF, publish every thread's chunk,
 *                       join the writer, snapshot the maps again.
 *   fatal signal        the same from the handler, waiting on the writer with a
 *                       bound instead of joining; then the default action.
 *                       Installed only for signals the program left at
 *                       SIG_DFL; a program's own handler replaces ours.
 *   fork                the child stops tracing (the writer thread does not
 *                       exist there); an exec'd image starts a new file.
 *   _exit / SIGKILL     what the writer wrote so far survives: published
 *                       chunks are written within 100 ms (uncompressed) or
 *                       flushed within 500 ms (zstd).
 *
 * Failures are reported once on stderr and leave tracing off; the program
 * runs on.
 */
#include "runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int pt_mode;
int pt_use_tsc;
struct pt_thread pt_threads[PT_MAX_THREADS];

static pid_t trace_pid;
static int started;
static int finished; /* atomic */
static char base_path[PATH_MAX];

static const int fatal_signals[] = {SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGABRT, SIGBUS, SIGFPE,
                                    SIGSEGV, SIGPIPE, SIGALRM, SIGTERM, SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ};

void pt_longjmp_init(void);

PT_NOINSTR static void say(const char *what, int err)
{
    char msg[PATH_MAX + 200];
    int n = snprintf(msg, sizeof msg, "pacer-trace: %s: %s; the program runs untraced\n", what, strerror(err));
    if (n > 0 && write(2, msg, (size_t)n) < 0) {
        /* stderr closed */
    }
}

/* Copies /proc/self/maps to BASE.maps (via a temporary and rename, so a
 * reader never sees half a file). Async-signal-safe. */
PT_NOINSTR static void snapshot_maps(void)
{
    static char buf[65536];
    char tmp[PATH_MAX + 16], dst[PATH_MAX + 16];
    size_t bl = strlen(base_path);
    memcpy(tmp, base_path, bl);
    memcpy(tmp + bl, ".maps.tmp", 10);
    memcpy(dst, base_path, bl);
    memcpy(dst + bl, ".maps", 6);
    int in = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = in >= 0 && out >= 0;
    while (ok) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ok = n == 0;
            break;
        }
        if (write(out, buf, (size_t)n) != n)
            ok = false;
    }
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    if (ok)
        rename(tmp, dst);
    else
        unlink(tmp);
}

/* Ends the trace: idempotent, any thread, from a signal handler too. */
PT_NOINSTR static void pt_finish(bool from_signal)
{
    if (!started || getpid() != trace_pid || __atomic_exchange_n(&finished, 1, __ATOMIC_ACQ_REL))
        return;
    __atomic_store_n(&pt_mode, PT_MODE_OFF, __ATOMIC_SEQ_CST);
    pt_hooks_flush_all();
    pt_writer_stop(from_signal);
    snapshot_maps();
}

PT_NOINSTR static void on_fatal_signal(int sig)
{
    int saved = errno;
    if (!pt_writer_is_self())
        pt_finish(true);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    raise(sig); /* blocked until we return, then the default action */
    errno = saved;
}

PT_NOINSTR static void in_child(void)
{
    __atomic_store_n(&pt_mode, PT_MODE_OFF, __ATOMIC_SEQ_CST);
    __atomic_store_n(&finished, 1, __ATOMIC_SEQ_CST);
    pt_hooks_stop_thread();
}

PT_NOINSTR static int open_trace_file(const char *dir, pid_t pid)
{
    char path[PATH_MAX + 16];
    for (int i = 0; i < 1000; i++) {
        int n = i == 0 ? snprintf(base_path, sizeof base_path, "%s/%d", dir, (int)pid)
                       : snprintf(base_path, sizeof base_path, "%s/%d-%d", dir, (int)pid, i);
        if (n < 0 || (size_t)n + 16 >= sizeof base_path)
            return -ENAMETOOLONG;
        snprintf(path, sizeof path, "%s.ptrace", base_path);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            return fd >= 0 ? fd : -errno;
    }
    return -EEXIST;
}

PT_NOINSTR static long env_long(const char *name, long def, long lo, long hi)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < lo || v > hi)
        return def;
    return v;
}

PT_NOINSTR __attribute__((constructor(101))) static void pt_init(void)
{
    pt_longjmp_init();
    const char *dir = getenv("PACER_TRACE_DIR");
    if (!dir || !*dir)
        return;

    pt_use_tsc = pt_clock_choose_tsc();
    pt_hooks_setup();
    int level = (int)env_long("PACER_TRACE_ZSTD_LEVEL", 0, -5, 19);
    uint64_t tick0 = pt_tick(), ns0 = pt_mono_ns();
    trace_pid = getpid();

    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        say(dir, errno);
        return;
    }
    int fd = open_trace_file(dir, trace_pid);
    if (fd < 0) {
        say(dir, -fd);
        return;
    }
    struct pt_file_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, PT_MAGIC, 8);
    h.version = PT_VERSION;
    h.header_size = PT_HEADER_SIZE;
    h.pid = (uint32_t)trace_pid;
    h.clock = pt_use_tsc ? PT_CLOCK_TSC : PT_CLOCK_MONOTONIC;
    h.sp_bits = PT_SP_BITS;
    h.flags = level != 0 ? PT_FLAG_ZSTD : 0;
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    h.start_realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    h.start_mono_ns = ns0;
    if (write(fd, &h, sizeof h) != (ssize_t)sizeof h) {
        say("writing the trace header", errno ? errno : EIO);
        close(fd);
        return;
    }

    long mb = env_long("PACER_TRACE_BUFFER_MB", 64, 1, 1 << 20);
    int r = pt_chunks_init((size_t)mb << 20);
    if (r < 0) {
        say("reserving trace buffers", -r);
        close(fd);
        return;
    }
    r = pt_writer_start(fd, tick0, ns0, level);
    if (r < 0) {
        say("starting the trace writer", -r);
        close(fd);
        return;
    }
    snapshot_maps();

    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
        struct sigaction old, sa;
        if (sigaction(fatal_signals[i], NULL, &old) < 0 || old.sa_handler != SIG_DFL)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigfillset(&sa.sa_mask);
        sigaction(fatal_signals[i], &sa, NULL);
    }
    pthread_atfork(NULL, NULL, in_child);
    started = 1;
    __atomic_store_n(&pt_mode, pt_use_tsc ? PT_MODE_TSC : PT_MODE_MONO, __ATOMIC_SEQ_CST);
}

PT_NOINSTR __attribute__((destructor(101))) static void pt_fini(void)
{
    pt_finish(false);
}
