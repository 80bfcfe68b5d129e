/* The writer thread: turns published chunks into compressed records on disk.
 *
 *  - Wakes every 2 ms, or at once when kicked through a pipe (the pool is
 *    exhausted, or the process is ending). Takes every published chunk,
 *    encodes it as one EVENTS record (varint deltas, trace_format.h), feeds
 *    the record to one zstd stream and writes the output. Memory stays
 *    bounded by the chunk pool however long the run is.
 *  - Calibrates the TSC against CLOCK_MONOTONIC over the first 20 ms (or
 *    until the end, for shorter runs) before the first EVENTS record, so the
 *    program never waits for calibration.
 *  - Flushes the zstd stream every 500 ms, so a process killed with SIGKILL
 *    leaves a readable prefix.
 *  - Names each thread (THREAD record) when it first sees its tid, and again
 *    at the end for threads that renamed themselves.
 *  - A write error stops tracing and is reported once on stderr; the writer
 *    keeps recycling chunks so the program never blocks on it.
 */
#include "runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#define ENC_MAX (PT_CHUNK_EVENTS * 3 * PT_VARINT_MAX + 64)
#define MAX_TIDS 8192u

static int out_fd = -1;
static int wake_pipe[2] = {-1, -1};
static pthread_t writer_thread;
static bool writer_started;
static int stop_requested; /* atomic */
static int writer_done;    /* atomic */
static bool write_failed;
static uint64_t cal_tick0, cal_ns0;
static bool clock_written;

static ZSTD_CCtx *zctx;
static uint8_t *zout;
static size_t zout_size;
static uint8_t enc[ENC_MAX];

static uint32_t seen_tids[MAX_TIDS]; /* open addressing, 0 = empty */

PT_NOINSTR static void fail_once(int err)
{
    if (!write_failed) {
        char msg[160];
        int n = snprintf(msg, sizeof msg, "pacer-trace: writing the trace failed (%s); tracing stopped\n",
                         strerror(err));
        if (n > 0 && write(2, msg, (size_t)n) < 0) {
            /* nothing more we can do */
        }
    }
    write_failed = true;
    __atomic_store_n(&pt_mode, PT_MODE_OFF, __ATOMIC_RELAXED);
}

PT_NOINSTR static void write_all(const uint8_t *p, size_t n)
{
    while (n > 0 && !write_failed) {
        ssize_t w = write(out_fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            fail_once(errno);
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Feeds bytes to the zstd stream; mode is ZSTD_e_continue/flush/end. */
PT_NOINSTR static void zfeed(const void *src, size_t n, ZSTD_EndDirective mode)
{
    if (write_failed)
        return;
    ZSTD_inBuffer in = {src, n, 0};
    for (;;) {
        ZSTD_outBuffer out = {zout, zout_size, 0};
        size_t left = ZSTD_compressStream2(zctx, &out, &in, mode);
        if (ZSTD_isError(left)) {
            fail_once(EIO);
            return;
        }
        write_all(zout, out.pos);
        if (mode == ZSTD_e_continue ? in.pos == in.size : left == 0)
            return;
    }
}

/* Emits a record: type, varint length, payload. */
PT_NOINSTR static void emit(uint8_t type, const uint8_t *payload, size_t n)
{
    uint8_t hdr[1 + PT_VARINT_MAX];
    hdr[0] = type;
    uint8_t *e = pt_put_varint(hdr + 1, n);
    zfeed(hdr, (size_t)(e - hdr), ZSTD_e_continue);
    zfeed(payload, n, ZSTD_e_continue);
}

PT_NOINSTR static void emit_clock(void)
{
    uint64_t t1, n1;
    if (pt_use_tsc) {
        /* Bracket the TSC read by two clock reads and keep the tightest of a
         * few tries, so the pair is accurate to tens of ns. */
        uint64_t best = UINT64_MAX;
        t1 = n1 = 0;
        for (int i = 0; i < 5; i++) {
            uint64_t a = pt_mono_ns();
            uint64_t t = pt_tick();
            uint64_t b = pt_mono_ns();
            if (b - a < best) {
                best = b - a;
                t1 = t;
                n1 = a + (b - a) / 2;
            }
        }
        if (t1 <= cal_tick0 || n1 <= cal_ns0) { /* clock oddity: assume 1 GHz rather than divide by 0 */
            t1 = cal_tick0 + 1;
            n1 = cal_ns0 + 1;
        }
    } else {
        cal_tick0 = cal_ns0 = 0;
        t1 = n1 = 1;
    }
    uint8_t buf[4 * PT_VARINT_MAX], *p = buf;
    p = pt_put_varint(p, cal_tick0);
    p = pt_put_varint(p, cal_ns0);
    p = pt_put_varint(p, t1 - cal_tick0);
    p = pt_put_varint(p, n1 - cal_ns0);
    emit(PT_REC_CLOCK, buf, (size_t)(p - buf));
    clock_written = true;
}

PT_NOINSTR static void emit_name(uint32_t tid, const char *name, size_t n)
{
    uint8_t buf[PT_VARINT_MAX + 64], *p = pt_put_varint(buf, tid);
    if (n > 64)
        n = 64;
    memcpy(p, name, n);
    emit(PT_REC_THREAD, buf, (size_t)(p - buf) + n);
}

PT_NOINSTR static void emit_thread_name(uint32_t tid)
{
    char path[64], name[64];
    snprintf(path, sizeof path, "/proc/self/task/%u/comm", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, name, sizeof name - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return;
    while (n > 0 && (name[n - 1] == '\n' || name[n - 1] == '\0'))
        n--;
    emit_name(tid, name, (size_t)n);
}

/* Names tid the first time it is seen: from /proc unless the chunk carries
 * the name already. */
PT_NOINSTR static void note_tid(uint32_t tid, bool named)
{
    if (tid == 0)
        return;
    for (uint32_t i = (tid * 2654435761u) % MAX_TIDS, k = 0; k < MAX_TIDS; k++, i = (i + 1) % MAX_TIDS) {
        if (seen_tids[i] == tid)
            return;
        if (seen_tids[i] == 0) {
            seen_tids[i] = tid;
            if (!named)
                emit_thread_name(tid);
            return;
        }
    }
}

/* Reads a slot's word, waiting (bounded) for a hook that reserved the slot
 * but was interrupted before writing it. 0 = give up. */
PT_NOINSTR static uint64_t slot_word(uint64_t *w)
{
    uint64_t v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
    for (int i = 0; v == 0 && i < 100; i++) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
        v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
    }
    return v;
}

PT_NOINSTR static void encode_chunk(struct pt_chunk *c)
{
    uint32_t lost = c->lost;
    uint32_t n = c->used / 2, count = 0;
    uint8_t *p = enc + 3 * PT_VARINT_MAX; /* room for tid, count, base */
    uint64_t base = n ? c->words[0] : 0;
    uint64_t prev_addr = 0, prev_tick = base, prev_sp = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t word = slot_word(&c->words[2 * i + 1]);
        if (word == 0) {
            lost++;
            continue;
        }
        uint64_t tick = c->words[2 * i];
        uint64_t addr = word & PT_ADDR_MASK;
        uint64_t is_exit = (word >> PT_EXIT_SHIFT) & 1;
        p = pt_put_varint(p, pt_zigzag((int64_t)(addr - prev_addr)) << 1 | is_exit);
        p = pt_put_varint(p, pt_zigzag((int64_t)(tick - prev_tick)));
        if (!is_exit) {
            uint64_t sp = word >> PT_SP_SHIFT;
            p = pt_put_varint(p, pt_zigzag((int64_t)(sp - prev_sp)));
            prev_sp = sp;
        }
        prev_addr = addr;
        prev_tick = tick;
        count++;
    }
    if (count) {
        uint8_t head[3 * PT_VARINT_MAX], *h = head;
        h = pt_put_varint(h, c->tid);
        h = pt_put_varint(h, count);
        h = pt_put_varint(h, base);
        size_t hl = (size_t)(h - head);
        uint8_t *start = enc + 3 * PT_VARINT_MAX - hl;
        memcpy(start, head, hl);
        emit(PT_REC_EVENTS, start, (size_t)(p - start));
    }
    if (lost) {
        uint8_t buf[2 * PT_VARINT_MAX], *q = buf;
        q = pt_put_varint(q, c->tid);
        q = pt_put_varint(q, lost);
        emit(PT_REC_LOST, buf, (size_t)(q - buf));
    }
}

PT_NOINSTR static void drain(void)
{
    for (struct pt_chunk *c = pt_chunks_take(); c;) {
        struct pt_chunk *next = c->next;
        if (!write_failed) {
            note_tid(c->tid, c->name[0] != '\0');
            if (c->name[0])
                emit_name(c->tid, c->name, strnlen(c->name, sizeof c->name));
            encode_chunk(c);
        }
        pt_chunk_release(c);
        c = next;
    }
}

PT_NOINSTR static void wait_wake(int ms)
{
    struct pollfd pfd = {wake_pipe[0], POLLIN, 0};
    if (poll(&pfd, 1, ms) > 0) {
        char buf[64];
        while (read(wake_pipe[0], buf, sizeof buf) > 0) {
        }
    }
}

PT_NOINSTR static void *writer_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);

    pt_chunks_prefault(16u << 20);

    /* Calibration window: 20 ms, or until asked to stop (at least 200 us). */
    while (!__atomic_load_n(&stop_requested, __ATOMIC_ACQUIRE) && pt_mono_ns() - cal_ns0 < 20000000u)
        wait_wake(5);
    while (pt_mono_ns() - cal_ns0 < 200000u) {
    }
    emit_clock();

    uint64_t last_flush = pt_mono_ns();
    while (!__atomic_load_n(&stop_requested, __ATOMIC_ACQUIRE)) {
        drain();
        uint64_t now = pt_mono_ns();
        if (now - last_flush > 500000000u) {
            zfeed(NULL, 0, ZSTD_e_flush);
            last_flush = now;
        }
        wait_wake(2);
    }
    drain();
    for (unsigned i = 0; i < MAX_TIDS; i++)
        if (seen_tids[i])
            emit_thread_name(seen_tids[i]);
    emit(PT_REC_END, NULL, 0);
    zfeed(NULL, 0, ZSTD_e_end);
    close(out_fd);
    out_fd = -1;
    __atomic_store_n(&writer_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

int pt_writer_start(int fd, uint64_t init_tick, uint64_t init_ns, int level)
{
    out_fd = fd;
    cal_tick0 = init_tick;
    cal_ns0 = init_ns;
    zctx = ZSTD_createCCtx();
    zout_size = ZSTD_CStreamOutSize();
    zout = malloc(zout_size);
    if (!zctx || !zout)
        return -ENOMEM;
    ZSTD_CCtx_setParameter(zctx, ZSTD_c_compressionLevel, level);
    if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return -errno;
    /* The writer must not inherit the program's signal handlers' work: it
     * blocks every signal itself; create it with all signals blocked too so
     * none is delivered before it gets there. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int r = pthread_create(&writer_thread, NULL, writer_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0)
        return -r;
    writer_started = true;
    return 0;
}

void pt_writer_kick(void)
{
    if (wake_pipe[1] >= 0) {
        char c = 1;
        if (write(wake_pipe[1], &c, 1) < 0) {
            /* pipe full: the writer is awake already */
        }
    }
}

bool pt_writer_is_self(void)
{
    return writer_started && pthread_equal(pthread_self(), writer_thread);
}

void pt_writer_stop(bool from_signal)
{
    if (!writer_started)
        return;
    __atomic_store_n(&stop_requested, 1, __ATOMIC_RELEASE);
    pt_writer_kick();
    if (!from_signal) {
        pthread_join(writer_thread, NULL);
        writer_started = false;
        return;
    }
    /* In a signal handler: wait on the flag, up to 5 s. */
    for (int i = 0; i < 5000 && !__atomic_load_n(&writer_done, __ATOMIC_ACQUIRE); i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}
