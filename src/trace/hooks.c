/* The -finstrument-functions hooks: the hot path of libpacer-trace.
 *
 * Design (every invariant here is relied on by chunks.c and writer.c):
 *
 *  1. Each thread fills its own chunk from tls.pos, two 64-bit words per
 *     event (tick, packed word; see runtime.h). Chunks are PT_CHUNK_BYTES
 *     long and aligned to that size, so "this chunk is full" is "pos is
 *     aligned": one TLS load and a test. pos == NULL (a new thread, or a
 *     chunk switch in progress) is aligned too. No locks, no allocation, no
 *     syscalls: the fast path is a mode test, that test, rdtsc and two stores.
 *  2. A slot is *reserved* (tls.pos advanced) before it is written, with a
 *     compiler fence in between: a signal handler that runs in the middle of
 *     a hook appends its own events after the reserved slot instead of
 *     overwriting it. The word is stored last (release); a zero word means
 *     "reserved, not written yet" and the writer waits for it (chunks are
 *     zeroed before reuse).
 *  3. When the chunk is full the slow path (pt_slow) publishes it to the
 *     writer and takes a fresh one. pt_thread.in_slow makes the slow path
 *     non-reentrant: a signal arriving during it drops its events and counts
 *     them as lost (the reader copes: exits carry the function address).
 *     While switching, tls.pos is NULL so that no hook can write into a
 *     half-installed chunk.
 *  4. A thread registers on its first event (slow path: pos == NULL) and is
 *     unregistered by a pthread key destructor, which publishes its partial
 *     chunk. The finalizer (runtime.c) publishes the chunks of threads still
 *     running at exit.
 *  5. pt_mode is read once per hook: PT_MODE_TSC is the inlined path; off
 *     (PT_MODE_OFF) costs that one predictable branch and a call that returns.
 */
#include "runtime.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static __thread struct pt_tls tls __attribute__((tls_model("initial-exec")));
static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

#define signal_fence() __atomic_signal_fence(__ATOMIC_SEQ_CST)


PT_NOINSTR static inline uint64_t pack(void *fn, uint64_t exit, uint64_t sp)
{
    return ((uint64_t)(uintptr_t)fn & PT_ADDR_MASK) | exit << PT_EXIT_SHIFT | (sp >> 4) << PT_SP_SHIFT;
}

PT_NOINSTR static void thread_gone(void *arg);

PT_NOINSTR static void make_key(void)
{
    if (pthread_key_create(&thread_key, thread_gone) != 0)
        thread_key = (pthread_key_t)-1;
}

/* Claims a pt_threads slot for the calling thread. NULL when the table is
 * full (the thread is then not traced). */
PT_NOINSTR static struct pt_thread *register_thread(void)
{
    pthread_once(&key_once, make_key);
    for (unsigned i = 0; i < PT_MAX_THREADS; i++) {
        struct pt_thread *th = &pt_threads[i];
        uint32_t expect = 0;
        if (__atomic_load_n(&th->in_use, __ATOMIC_RELAXED) == 0 &&
            __atomic_compare_exchange_n(&th->in_use, &expect, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            th->tid = (uint32_t)syscall(SYS_gettid);
            th->in_slow = 0;
            th->lost = 0;
            th->chunk = NULL;
            th->named = false;
            __atomic_store_n(&th->tls, &tls, __ATOMIC_RELEASE);
            if (thread_key != (pthread_key_t)-1)
                pthread_setspecific(thread_key, th);
            return th;
        }
    }
    return NULL;
}

/* Publishes th's chunk with whatever the owner wrote so far. */
PT_NOINSTR static void flush_thread(struct pt_thread *th)
{
    struct pt_chunk *c = th->chunk;
    if (!c)
        return;
    struct pt_tls *t = __atomic_load_n(&th->tls, __ATOMIC_ACQUIRE);
    uint64_t *pos = t ? __atomic_load_n(&t->pos, __ATOMIC_RELAXED) : NULL;
    uint32_t used = 0;
    if (pos >= c->words && pos <= c->words + PT_CHUNK_WORDS)
        used = (uint32_t)(pos - c->words);
    th->chunk = NULL;
    pt_chunk_publish(c, used, th->lost);
    th->lost = 0;
}

/* Names the chunk after its thread (prctl: once at the thread's start and
 * once at its end, never per event), for a writer that may only see the
 * chunk after the thread is gone. */
PT_NOINSTR static void name_chunk(struct pt_chunk *c)
{
    char name[17] = {0};
    if (c && prctl(PR_GET_NAME, name, 0, 0, 0) == 0)
        memcpy(c->name, name, sizeof c->name);
}

PT_NOINSTR static void thread_gone(void *arg)
{
    struct pt_thread *th = arg;
    th->in_slow = 1;
    signal_fence();
    name_chunk(th->chunk);
    if (__atomic_load_n(&pt_mode, __ATOMIC_RELAXED))
        flush_thread(th);
    tls.pos = NULL;
    tls.th = NULL;
    tls.dead = true;
    signal_fence();
    __atomic_store_n(&th->tls, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&th->in_use, 0, __ATOMIC_RELEASE);
}

void pt_hooks_flush_all(void)
{
    for (unsigned i = 0; i < PT_MAX_THREADS; i++) {
        struct pt_thread *th = &pt_threads[i];
        if (__atomic_load_n(&th->in_use, __ATOMIC_ACQUIRE))
            flush_thread(th);
    }
    tls.pos = NULL;
}

/* Full chunk, first event of a thread, or tracing turned off meanwhile. */
PT_NOINSTR __attribute__((noinline)) static void pt_slow(uint64_t word)
{
    uint64_t tick = pt_tick();
    if (!__atomic_load_n(&pt_mode, __ATOMIC_RELAXED) || tls.dead)
        return;
    struct pt_thread *th = tls.th;
    if (!th) {
        th = register_thread();
        if (!th) {
            tls.dead = true;
            return;
        }
        tls.th = th;
    }
    if (th->in_slow) {
        th->lost++;
        return;
    }
    th->in_slow = 1;
    signal_fence();
    if (th->chunk)
        flush_thread(th); /* reads tls.pos, the end of the full chunk */
    tls.pos = NULL;
    signal_fence();
    struct pt_chunk *c = pt_chunk_acquire(th->tid);
    if (!c) {
        th->lost++;
        tls.pos = NULL;
        signal_fence();
        th->in_slow = 0;
        return;
    }
    if (!th->named) {
        name_chunk(c);
        th->named = true;
    }
    th->chunk = c;
    c->words[0] = tick;
    c->words[1] = word;
    signal_fence();
    tls.pos = c->words + 2;
    signal_fence();
    th->in_slow = 0;
}

/* Reserves and fills one slot; tick read after the reservation (see 2.). */
PT_NOINSTR static inline __attribute__((always_inline)) void record_with(uint64_t word, bool tsc)
{
    uint64_t *p = tls.pos;
    if (PT_UNLIKELY(((uintptr_t)p & (PT_CHUNK_BYTES - 1)) == 0)) {
        pt_slow(word);
        return;
    }
    tls.pos = p + 2;
    signal_fence();
#if defined(__x86_64__) || defined(__i386__)
    p[0] = tsc ? __rdtsc() : pt_mono_ns();
#else
    (void)tsc;
    p[0] = pt_mono_ns();
#endif
    __atomic_store_n(&p[1], word, __ATOMIC_RELEASE);
}

/* Off, or CLOCK_MONOTONIC: out of line, so that the TSC path below needs no
 * saved registers and no stack frame beyond the frame pointer. */
PT_NOINSTR __attribute__((noinline)) static void record_other(uint64_t word)
{
    if (pt_mode == PT_MODE_MONO)
        record_with(word, false);
}

PT_NOINSTR static inline __attribute__((always_inline)) void record(uint64_t word)
{
    if (PT_UNLIKELY(pt_mode != PT_MODE_TSC)) {
        record_other(word);
        return;
    }
    record_with(word, true);
}

void pt_record_word(uint64_t word)
{
    record(word);
}

/* The enter hook records the instrumented function's stack pointer (for
 * longjmp, see longjmp.c): exactly the caller's rsp before its call, which an
 * assembly stub passes on (x86-64). Elsewhere the hook's frame address
 * stands in, with a constant offset the reader does not need to know. */
PT_NOINSTR __attribute__((used)) void pt_enter(void *fn, void *call_site, uint64_t sp);
PT_EXPORT PT_NOINSTR void __cyg_profile_func_exit(void *fn, void *call_site);

void pt_enter(void *fn, void *call_site, uint64_t sp)
{
    (void)call_site;
    record(pack(fn, 0, sp));
}

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl __cyg_profile_func_enter\n"
        ".type __cyg_profile_func_enter, @function\n"
        "__cyg_profile_func_enter:\n"
        "    lea 8(%rsp), %rdx\n"
        "    jmp pt_enter\n"
        ".size __cyg_profile_func_enter, .-__cyg_profile_func_enter\n");
#else
PT_EXPORT PT_NOINSTR void __cyg_profile_func_enter(void *fn, void *call_site);
void __cyg_profile_func_enter(void *fn, void *call_site)
{
    pt_enter(fn, call_site, (uint64_t)(uintptr_t)__builtin_frame_address(0));
}
#endif

void __cyg_profile_func_exit(void *fn, void *call_site)
{
    (void)call_site;
    record(pack(fn, 1, 0));
}
