/* libpacer-trace internals: shared by the hooks, the chunk pool, the writer
 * thread and the lifecycle code. Nothing here is exported (the library is
 * built with -fvisibility=hidden; only the hooks and longjmp wrappers are
 * PT_EXPORT). Every function in the runtime is PT_NOINSTR so that a program
 * compiled with -finstrument-functions and linked statically with us does not
 * trace the tracer. */
#ifndef PACER_TRACE_RUNTIME_H
#define PACER_TRACE_RUNTIME_H

#include <pacer/trace_format.h>

#include "tls.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define PT_EXPORT __attribute__((visibility("default")))
#define PT_NOINSTR __attribute__((no_instrument_function))
#define PT_LIKELY(x) __builtin_expect(!!(x), 1)
#define PT_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* A chunk: PT_CHUNK_BYTES of memory aligned to that size. Its first
 * PT_CHUNK_HEAD bytes are left for the writer, which formats the record
 * header there (PT_REC_CHUNK, trace_format.h), so the chunk goes to the file
 * as it is; the thread's events follow, encoded by the hooks. */
#define PT_CHUNK_BYTES (64u * 1024u)
#define PT_CHUNK_HEAD 64u
#define PT_MAX_THREADS 4096u
/* The sp field: the stack pointer in 16-byte units, low 16 bits. */
#define PT_SP_BITS 16

enum pt_chunk_state { PT_CHUNK_FREE = 0, PT_CHUNK_FILLING, PT_CHUNK_FULL };

struct pt_chunk {
    uint32_t state;   /* enum pt_chunk_state, atomic */
    uint32_t tid;
    uint32_t used;    /* event bytes, set when published */
    uint32_t lost;    /* whole calls the owner dropped (signal handlers during a switch) */
    uint32_t gap;     /* events dropped right before this chunk (no chunk could be had) */
    uint32_t out_len; /* writer: bytes of the formatted record */
    char name[16];    /* the thread's name when it started or ended, or "" */
    uint64_t base_tick; /* the tick the first event's delta is from */
    uint64_t fn_base;   /* enter addresses are relative to it */
    struct pt_chunk *next; /* publish list link */
    uint8_t *mem;     /* PT_CHUNK_BYTES */
};

/* The hot path's per-thread state, in initial-exec TLS: the hooks reach it
 * with %fs-relative loads. Layout in tls.h (the assembly uses the offsets). */
struct pt_tls {
    uint8_t *pos;
    uint64_t last;
    uint8_t *limit;
    uint64_t fn_base;
    uint8_t *end;
    uint64_t scratch;
    struct pt_thread *th;
    uint32_t busy;  /* the portable path is recording (a nested hook drops its call) */
    bool dead;      /* the thread's destructor ran, or registration failed */
} __attribute__((aligned(64)));
_Static_assert(offsetof(struct pt_tls, pos) == PT_TLS_POS, "tls layout");
_Static_assert(offsetof(struct pt_tls, last) == PT_TLS_LAST, "tls layout");
_Static_assert(offsetof(struct pt_tls, limit) == PT_TLS_LIMIT, "tls layout");
_Static_assert(offsetof(struct pt_tls, fn_base) == PT_TLS_FN_BASE, "tls layout");
_Static_assert(offsetof(struct pt_tls, end) == PT_TLS_END, "tls layout");
_Static_assert(offsetof(struct pt_tls, scratch) == PT_TLS_SCRATCH, "tls layout");

extern __thread struct pt_tls pt_tls __attribute__((tls_model("initial-exec")));

/* A traced thread, in a static table so that the finalizer can reach every
 * thread's chunk. */
struct pt_thread {
    uint32_t in_use;    /* atomic */
    uint32_t tid;
    volatile uint32_t in_slow; /* switching chunks: a signal handler's hooks drop their calls meanwhile */
    uint32_t lost;
    uint32_t gap;
    bool named;               /* a chunk carried the thread's name already */
    bool portable;            /* rseq is not registered for this thread: the portable path */
    struct pt_chunk *chunk;   /* the chunk being filled, or NULL */
    struct pt_chunk *spare;   /* the next one, taken ahead (atomic exchange only), or NULL */
    struct pt_chunk *pending; /* a full one to publish after the switch (exchange only), or NULL */
    struct pt_tls *tls;       /* the owner's TLS block, valid while it lives */
};

/* ---- globals (runtime.c) ---- */
enum { PT_MODE_OFF = 0, PT_MODE_TSC = 1, PT_MODE_MONO = 2 };
extern int pt_mode;          /* what the hooks do; read with a plain load on the hot path */
extern int pt_use_tsc;       /* ticks come from the TSC (else CLOCK_MONOTONIC ns) */
/* Where the hooks store the address of their rseq critical section,
 * relative to pt_tls: glibc's struct rseq's rseq_cs field once rseq is set
 * up (pt_hooks_setup), pt_tls.scratch until then. */
extern long pt_rseq_delta;
extern struct pt_thread pt_threads[PT_MAX_THREADS];

/* ---- clock (clock.c) ---- */
PT_NOINSTR static inline uint64_t pt_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

PT_NOINSTR static inline uint64_t pt_tick(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (PT_LIKELY(pt_use_tsc))
        return __rdtsc();
#endif
    return pt_mono_ns();
}

/* Decides between TSC and CLOCK_MONOTONIC: TSC when the CPU says it is
 * invariant, the kernel's clocksource trusts it, and PACER_TRACE_CLOCK is not
 * "monotonic". Returns true for TSC. */
bool pt_clock_choose_tsc(void);

/* ---- chunk pool (chunks.c) ---- */
/* Reserves the pool's address space (max_bytes, touched lazily). 0 or -errno. */
int pt_chunks_init(size_t max_bytes);
/* Faults in the first `bytes` of the pool (writer thread, at start). */
void pt_chunks_prefault(size_t bytes);
/* Takes a FREE chunk for `tid`; with `wait`, waits for the writer while the
 * pool is exhausted, up to ~2 s; NULL when there is none. Any thread,
 * signal-safe. */
struct pt_chunk *pt_chunk_acquire(uint32_t tid, bool wait);
/* Hands a chunk holding `used` event bytes to the writer. Lock-free,
 * signal-safe. */
void pt_chunk_publish(struct pt_chunk *c, uint32_t used, uint32_t lost);
/* Chunks published and not taken yet (approximate, for the writer). */
unsigned pt_chunks_published(void);
/* Writer only: takes every published chunk, oldest first (per thread order
 * is preserved), linked through ->next. */
struct pt_chunk *pt_chunks_take(void);
/* Returns a consumed (or unused) chunk to the pool. */
void pt_chunk_release(struct pt_chunk *c);

/* ---- hooks (hooks.c, hooks_x86_64.S) ---- */
/* Decides how the hooks record: through rseq critical sections when this is
 * x86-64 and glibc registered rseq for every thread (with the assembly fast
 * path when the clock is the TSC); otherwise the portable path. Before
 * tracing starts. Returns true for the fast path. */
bool pt_hooks_setup(void);
/* The calling thread's hooks stop appending (a forked child). */
void pt_hooks_stop_thread(void);
/* Publishes the chunk of every registered thread (used by the finalizer,
 * after pt_mode was set to OFF). */
void pt_hooks_flush_all(void);
/* Records a longjmp to the frame whose sp field is sp16 on the calling
 * thread. */
void pt_record_longjmp(uint64_t sp16);

/* ---- writer thread (writer.c) ---- */
/* Starts the writer on the open trace file `fd` (it takes ownership; the
 * 64-byte header is written), with the clock
 * pair taken at start-up and a zstd level (0: the body is not compressed).
 * 0 or -errno. */
int pt_writer_start(int fd, uint64_t init_tick, uint64_t init_ns, int level);
/* True on the writer thread itself. */
bool pt_writer_is_self(void);
/* Asks the writer to wake up and drain (signal-safe). */
void pt_writer_kick(void);
/* Drains everything, ends the stream and closes the file. from_signal: wait
 * on a flag (bounded) instead of pthread_join. */
void pt_writer_stop(bool from_signal);

#endif
