/* The writer thread: sends published chunks to the trace file.
 *
 *  - A chunk already holds its events in the file's encoding (hooks.c), so
 *    the writer never reads an event: it formats the record header in the
 *    chunk's first PT_CHUNK_HEAD bytes and writes the chunk as it is.
 *  - Uncompressed (the default): chunks are gathered until 1 MiB is pending
 *    or 100 ms passed and written with one writev. The first write (the
 *    clock record, after calibration) ends on a 4096-byte boundary; then
 *    the file is switched to O_DIRECT
 *    where the file system allows it, and every write is a multiple of 4096
 *    bytes from 4096-aligned memory (a chunk's record is padded inside
 *    itself; small records are gathered in `misc` and padded with zero
 *    bytes), so the kernel moves them to the disk with no copy through the
 *    page cache. The last write, at the end, goes through the page cache
 *    unpadded, so a short run leaves a small file.
 *  - With a zstd level, every record is fed to one zstd stream instead,
 *    flushed every 500 ms.
 *  - Wakes every 10 ms, or at once when kicked through a pipe (the pool is
 *    exhausted, or the process is ending: then it writes at once).
 *  - Calibrates the TSC against CLOCK_MONOTONIC over the first 20 ms (or
 *    until the end, for shorter runs) before the first chunk, so the program
 *    never waits for calibration.
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
#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zstd.h>

#define MAX_TIDS 8192u
#define BLOCK 4096u
#define MISC_CAP (64u * 1024u)
#define BATCH_BYTES (1u << 20)
#define BATCH_NS 100000000u
#define WAKE_MS 10

static int out_fd = -1;
static int wake_pipe[2] = {-1, -1};
static pthread_t writer_thread;
static bool writer_started;
static int stop_requested; /* atomic */
static int writer_done;    /* atomic */
static bool write_failed;
static uint64_t cal_tick0, cal_ns0;
static bool clock_written;

static bool kicked;          /* writer thread only */
static bool zmode;           /* the body is one zstd stream */
static ZSTD_CCtx *zctx;
static uint8_t *zout;
static size_t zout_size;

static uint8_t *misc;        /* small records, BLOCK-aligned, MISC_CAP */
static size_t misc_len;
static struct pt_chunk *pend_head, *pend_tail; /* formatted, not written yet */
static size_t pend_bytes;
static uint64_t last_write_ns;
static uint64_t file_off = PT_HEADER_SIZE;
static bool direct_tried, direct_on; /* O_DIRECT: tried once, on */

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

PT_NOINSTR static bool set_direct(bool on);

/* Writes iov[0..n) in order. A file system that refuses O_DIRECT for them
 * (EINVAL) gets them through the page cache from then on. */
PT_NOINSTR static void write_iov(struct iovec *iov, int n)
{
    int i = 0;
    while (i < n && !write_failed) {
        int k = n - i < IOV_MAX ? n - i : IOV_MAX;
        ssize_t w = writev(out_fd, iov + i, k);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EINVAL && direct_on && set_direct(false)) {
                direct_on = false;
                continue;
            }
            fail_once(errno);
            return;
        }
        size_t left = (size_t)w;
        while (i < n && left >= iov[i].iov_len)
            left -= iov[i++].iov_len;
        if (i < n) {
            iov[i].iov_base = (uint8_t *)iov[i].iov_base + left;
            iov[i].iov_len -= left;
        }
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

PT_NOINSTR static void flush_out(bool final);

/* Emits a small record (at most a few hundred bytes): type, varint length,
 * payload. */
PT_NOINSTR static void emit(uint8_t type, const uint8_t *payload, size_t n)
{
    uint8_t hdr[1 + PT_VARINT_MAX];
    hdr[0] = type;
    uint8_t *e = pt_put_varint(hdr + 1, n);
    size_t hl = (size_t)(e - hdr);
    if (zmode) {
        zfeed(hdr, hl, ZSTD_e_continue);
        zfeed(payload, n, ZSTD_e_continue);
        return;
    }
    if (misc_len + hl + n > MISC_CAP)
        flush_out(false);
    if (misc_len + hl + n > MISC_CAP)
        return;
    memcpy(misc + misc_len, hdr, hl);
    if (n)
        memcpy(misc + misc_len + hl, payload, n);
    misc_len += hl + n;
}

PT_NOINSTR static uint32_t format_chunk(struct pt_chunk *c, bool padded);

/* Turns O_DIRECT on or off for the trace file; false if refused. */
PT_NOINSTR static bool set_direct(bool on)
{
    int flags = fcntl(out_fd, F_GETFL);
    if (flags < 0)
        return false;
    flags = on ? flags | O_DIRECT : flags & ~O_DIRECT;
    return fcntl(out_fd, F_SETFL, flags) == 0;
}

/* Writes the gathered records and chunks (uncompressed body) and returns
 * the chunks to the pool. `final`: the last write, through the page cache
 * and unpadded. */
PT_NOINSTR static void flush_out(bool final)
{
    bool aligned = !final && (!direct_tried || direct_on);
    if (final && direct_on) {
        set_direct(false);
        direct_on = false;
    }
    struct iovec iov[64];
    int n = 0;
    if (misc_len || aligned) {
        size_t len = misc_len;
        if (aligned)
            len += (BLOCK - (file_off + len) % BLOCK) % BLOCK;
        memset(misc + misc_len, 0, len - misc_len); /* padding bytes */
        if (len)
            iov[n++] = (struct iovec){misc, len};
        file_off += len;
        misc_len = 0;
    }
    struct pt_chunk *c = pend_head, *done = pend_head;
    while (c || n) {
        if (c) {
            c->out_len = format_chunk(c, aligned);
            file_off += c->out_len;
            iov[n++] = (struct iovec){c->mem, c->out_len};
            c = c->next;
        }
        if (n == (int)(sizeof iov / sizeof iov[0]) || (!c && n)) {
            write_iov(iov, n);
            n = 0;
            while (done != c) {
                struct pt_chunk *next = done->next;
                pt_chunk_release(done);
                done = next;
            }
        }
    }
    pend_head = pend_tail = NULL;
    pend_bytes = 0;
    last_write_ns = pt_mono_ns();
    if (aligned && !direct_tried) {
        direct_tried = true;
        direct_on = !write_failed && set_direct(true);
    }
}

/* Formats c's record header (PT_REC_CHUNK) in its first PT_CHUNK_HEAD
 * bytes; padded: the record runs to the next BLOCK boundary. Returns the
 * record's length. */
PT_NOINSTR static uint32_t format_chunk(struct pt_chunk *c, bool padded)
{
    uint8_t body[5 * PT_VARINT_MAX], *p = body;
    p = pt_put_varint(p, c->tid);
    p = pt_put_varint(p, c->base_tick);
    p = pt_put_varint(p, c->fn_base);
    p = pt_put_varint(p, c->used);
    p = pt_put_varint(p, c->gap);
    size_t hv = (size_t)(p - body);
    size_t frame = 1 + 5; /* type, length as a 5-byte varint */
    size_t skip = PT_CHUNK_HEAD - frame - hv - 1;
    uint32_t total = PT_CHUNK_HEAD + c->used;
    if (padded)
        total = (total + BLOCK - 1) / BLOCK * BLOCK;
    uint64_t len = total - frame;
    uint8_t *h = c->mem;
    h[0] = PT_REC_CHUNK;
    for (int i = 0; i < 4; i++)
        h[1 + i] = (uint8_t)((len >> (7 * i)) & 0x7f) | 0x80;
    h[5] = (uint8_t)(len >> 28);
    memcpy(h + frame, body, hv);
    h[frame + hv] = (uint8_t)skip;
    memset(h + frame + hv + 1, 0, skip);
    return total;
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

/* Takes the published chunks; writes when `force`, when 1 MiB is pending
 * or when the last write is 100 ms old. */
PT_NOINSTR static void drain(bool force)
{
    for (struct pt_chunk *c = pt_chunks_take(); c;) {
        struct pt_chunk *next = c->next;
        bool keep = false;
        if (!write_failed) {
            note_tid(c->tid, c->name[0] != '\0');
            if (c->name[0])
                emit_name(c->tid, c->name, strnlen(c->name, sizeof c->name));
            if (c->used || c->gap) {
                if (zmode) {
                    c->out_len = format_chunk(c, false);
                    zfeed(c->mem, c->out_len, ZSTD_e_continue);
                } else {
                    c->next = NULL;
                    if (pend_tail)
                        pend_tail->next = c;
                    else
                        pend_head = c;
                    pend_tail = c;
                    pend_bytes += PT_CHUNK_HEAD + c->used;
                    keep = true;
                }
            }
            if (c->lost) {
                uint8_t buf[2 * PT_VARINT_MAX], *q = buf;
                q = pt_put_varint(q, c->tid);
                q = pt_put_varint(q, c->lost);
                emit(PT_REC_LOST, buf, (size_t)(q - buf));
            }
        }
        if (!keep)
            pt_chunk_release(c);
        c = next;
    }
    if (!zmode && (pend_head || misc_len) &&
        (force || pend_bytes >= BATCH_BYTES || pt_mono_ns() - last_write_ns >= BATCH_NS))
        flush_out(false);
}

PT_NOINSTR static void wait_wake(int ms)
{
    struct pollfd pfd = {wake_pipe[0], POLLIN, 0};
    if (poll(&pfd, 1, ms) > 0) {
        char buf[64];
        while (read(wake_pipe[0], buf, sizeof buf) > 0) {
        }
        kicked = true;
    }
}

PT_NOINSTR static void *writer_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);

    pt_chunks_prefault(2u << 20);

    /* Calibration window: 20 ms, or until asked to stop (at least 200 us). */
    while (!__atomic_load_n(&stop_requested, __ATOMIC_ACQUIRE) && pt_mono_ns() - cal_ns0 < 20000000u)
        wait_wake(5);
    while (pt_mono_ns() - cal_ns0 < 200000u) {
    }
    emit_clock();
    /* The file's first block now (header, clock, padding), so that every
     * chunk goes out with O_DIRECT; a run that ended during calibration
     * keeps its small unpadded file instead. */
    if (!zmode && !__atomic_load_n(&stop_requested, __ATOMIC_ACQUIRE))
        flush_out(false);

    uint64_t last_flush = pt_mono_ns();
    last_write_ns = last_flush;
    kicked = false;
    while (!__atomic_load_n(&stop_requested, __ATOMIC_ACQUIRE)) {
        drain(kicked);
        kicked = false;
        uint64_t now = pt_mono_ns();
        if (zmode && now - last_flush > 500000000u) {
            zfeed(NULL, 0, ZSTD_e_flush);
            last_flush = now;
        }
        wait_wake(WAKE_MS);
    }
    drain(false);
    if (!zmode && pend_bytes >= BATCH_BYTES / 4)
        flush_out(false); /* the bulk with O_DIRECT, */
    if (!zmode)
        flush_out(true); /* the rest unpadded; every chunk before END */
    for (unsigned i = 0; i < MAX_TIDS; i++)
        if (seen_tids[i])
            emit_thread_name(seen_tids[i]);
    emit(PT_REC_END, NULL, 0);
    if (zmode)
        zfeed(NULL, 0, ZSTD_e_end);
    else
        flush_out(true);
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
    zmode = level != 0;
    if (zmode) {
        zctx = ZSTD_createCCtx();
        zout_size = ZSTD_CStreamOutSize();
        zout = malloc(zout_size);
        if (!zctx || !zout)
            return -ENOMEM;
        ZSTD_CCtx_setParameter(zctx, ZSTD_c_compressionLevel, level);
    } else if (posix_memalign((void **)&misc, BLOCK, MISC_CAP + BLOCK) != 0) {
        return -ENOMEM;
    }
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
