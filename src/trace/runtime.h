/* libpacer-trace internals: shared by the hooks, the chunk pool, the writer
 * thread and the lifecycle code. Nothing here is exported (the library is
 * built with -fvisibility=hidden; only the hooks and longjmp wrappers are
 * PT_EXPORT). Every function in the runtime is PT_NOINSTR so that a program
 * compiled with -finstrument-functions and linked statically with us does not
 * trace the tracer. */
#ifndef PACER_TRACE_RUNTIME_H
#define PACER_TRACE_RUNTIME_H

#include <pacer/trace_format.h>

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

/* A raw event in the per-thread buffers is 16 bytes: the tick, and one word
 * packing addr | exit << PT_EXIT_SHIFT | sp << PT_SP_SHIFT (never on disk:
 * the writer encodes it as trace_format.h says). User-space code addresses
 * fit in 47 bits on x86-64 and 48 on the other 64-bit targets. */
#if defined(__x86_64__)
#define PT_ADDR_BITS 47
#else
#define PT_ADDR_BITS 48
#endif
#define PT_ADDR_MASK ((UINT64_C(1) << PT_ADDR_BITS) - 1)
#define PT_EXIT_SHIFT PT_ADDR_BITS
#define PT_SP_SHIFT (PT_ADDR_BITS + 1)
#define PT_SP_BITS (64 - PT_SP_SHIFT)

/* One chunk = 4096 raw events of 16 bytes. */
#define PT_CHUNK_EVENTS 4096u
#define PT_CHUNK_WORDS (2u * PT_CHUNK_EVENTS)
#define PT_CHUNK_BYTES (PT_CHUNK_WORDS * 8u) /* chunks are aligned to this */
#define PT_MAX_THREADS 4096u

enum pt_chunk_state { PT_CHUNK_FREE = 0, PT_CHUNK_FILLING, PT_CHUNK_FULL };

struct pt_chunk {
    uint32_t state;   /* enum pt_chunk_state, atomic */
    uint32_t tid;
    uint32_t used;    /* words written, set when published */
    uint32_t lost;    /* events the owner dropped before publishing */
    char name[16];    /* the thread's name when it started or ended, or "" */
    struct pt_chunk *next; /* publish list link */
    uint64_t *words;  /* PT_CHUNK_WORDS, zero while FREE */
};

/* The hot path's per-thread state: kept in initial-exec TLS so that the hook
 * reaches it with one %fs-relative load. */
struct pt_tls {
    uint64_t *pos;  /* next free slot; aligned to PT_CHUNK_BYTES (full, or NULL) -> slow path */
    struct pt_thread *th;
    bool dead;      /* the thread's destructor ran, or registration failed */
};

/* A traced thread, in a static table so that the finalizer can reach every
 * thread's chunk. */
struct pt_thread {
    uint32_t in_use;    /* atomic */
    uint32_t tid;
    volatile uint32_t in_slow; /* re-entry guard: a signal handler's hooks drop events meanwhile */
    uint32_t lost;
    bool named;               /* a chunk carried the thread's name already */
    struct pt_chunk *chunk;   /* the chunk being filled, or NULL */
    struct pt_tls *tls;       /* the owner's TLS block, valid while it lives */
};

/* ---- globals (runtime.c) ---- */
enum { PT_MODE_OFF = 0, PT_MODE_TSC = 1, PT_MODE_MONO = 2 };
extern int pt_mode;          /* what the hooks do; read with a plain load on the hot path */
extern int pt_use_tsc;       /* ticks come from the TSC (else CLOCK_MONOTONIC ns) */
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
/* Takes a FREE chunk for `tid`; waits for the writer while the pool is
 * exhausted, up to ~2 s, then returns NULL. Any thread, signal-safe. */
struct pt_chunk *pt_chunk_acquire(uint32_t tid);
/* Hands a chunk holding `used` words to the writer. Lock-free, signal-safe. */
void pt_chunk_publish(struct pt_chunk *c, uint32_t used, uint32_t lost);
/* Writer only: takes every published chunk, oldest first (per thread order
 * is preserved), linked through ->next. */
struct pt_chunk *pt_chunks_take(void);
/* Writer only: zeroes a consumed chunk and returns it to the pool. */
void pt_chunk_release(struct pt_chunk *c);

/* ---- hooks (hooks.c) ---- */
/* Publishes the chunk of every registered thread (used by the finalizer,
 * after pt_mode was set to OFF). */
void pt_hooks_flush_all(void);
/* Records one raw event on the calling thread (longjmp markers). */
void pt_record_word(uint64_t word);

/* ---- writer thread (writer.c) ---- */
/* Starts the writer on the open trace file `fd` (it takes ownership), with
 * the clock pair taken at start-up and a zstd level. 0 or -errno. */
int pt_writer_start(int fd, uint64_t init_tick, uint64_t init_ns, int level);
/* True on the writer thread itself. */
bool pt_writer_is_self(void);
/* Asks the writer to wake up and drain (signal-safe). */
void pt_writer_kick(void);
/* Drains everything, ends the stream and closes the file. from_signal: wait
 * on a flag (bounded) instead of pthread_join. */
void pt_writer_stop(bool from_signal);

#endif
