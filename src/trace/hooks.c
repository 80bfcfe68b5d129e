/* The hooks' slow path and the per-thread buffers of libpacer-trace.
 *
 * Design (every invariant here is relied on by hooks_x86_64.S, chunks.c
 * and writer.c):
 *
 *  1. Each thread appends its events to its own chunk, already encoded as
 *     trace_format.h's PT_REC_CHUNK events, from pt_tls.pos; pt_tls.last is
 *     the tick of the last event, which the next one is a delta from. The
 *     writer sends the chunk to the file as it is: it never reads an event.
 *  2. Recording is restartable (rseq, hooks_x86_64.S): an event is
 *     committed by one store of {pos, last}; a hook interrupted before it
 *     starts again. So a signal handler's calls land whole between two
 *     events of the code it interrupted, and every byte below pos is an
 *     event written in full: a chunk can be published at any moment.
 *  3. pos >= limit sends the assembly hooks here (pt_slow_enter/exit):
 *     the thread has no chunk yet, its chunk is full, tracing is off, or
 *     the portable path is in use (limit stays 0). The slow path switches
 *     chunks, then records the event through pt_rseq_append (the same
 *     critical section, with a tick read here).
 *  4. Switching chunks is not restartable: pt_thread.in_slow marks it, and
 *     limit and end are 0 meanwhile, so a signal handler's hooks come here
 *     and drop their events (whole calls: the handler runs inside the
 *     switch), counted as lost. To keep that window short, the next chunk
 *     is taken ahead, after the switch (pt_thread.spare), and the full one
 *     is published after it (pt_thread.pending): the window itself is a
 *     few stores to memory the thread owns.
 *  5. The portable path (no rseq, another CPU, or CLOCK_MONOTONIC ticks
 *     without rseq): every hook comes here and appends with plain stores
 *     under pt_tls.busy; a signal handler's hooks that find busy set drop
 *     their events, counted as lost (again whole calls).
 *  6. A thread registers on its first event and is unregistered by a
 *     pthread key destructor, which publishes its partial chunk. The
 *     finalizer (runtime.c) publishes the chunks of threads still running.
 */
#include "runtime.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__) && defined(__GLIBC__)
#include <sys/rseq.h>
#define PT_HAVE_RSEQ_HOOKS 1
#endif

__thread struct pt_tls pt_tls __attribute__((tls_model("initial-exec")));
long pt_rseq_delta = PT_TLS_SCRATCH;

static bool use_rseq; /* pt_rseq_append is in use */
static bool use_fast; /* and the assembly hooks' fast path (TSC ticks) */
static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

#define signal_fence() __atomic_signal_fence(__ATOMIC_SEQ_CST)

PT_NOINSTR void pt_slow_enter(void *fn, uint64_t sp16);
PT_NOINSTR void pt_slow_exit(void *fn);
#ifdef PT_HAVE_RSEQ_HOOKS
int pt_rseq_append(uint64_t kind, uint64_t fn, uint64_t sp16, uint64_t tick);
#else
/* Elsewhere the compiler's hooks are plain C: everything takes the slow
 * path's portable append. */
PT_EXPORT PT_NOINSTR void __cyg_profile_func_enter(void *fn, void *call_site);
PT_EXPORT PT_NOINSTR void __cyg_profile_func_exit(void *fn, void *call_site);

void __cyg_profile_func_enter(void *fn, void *call_site)
{
    (void)call_site;
    pt_slow_enter(fn, (uint64_t)(uintptr_t)__builtin_frame_address(0) >> 4);
}

void __cyg_profile_func_exit(void *fn, void *call_site)
{
    (void)call_site;
    pt_slow_exit(fn);
}
#endif

bool pt_hooks_setup(void)
{
#ifdef PT_HAVE_RSEQ_HOOKS
    /* glibc (2.35 and later) registers every thread's struct rseq at the
     * same offset from the thread pointer, and its signature is the
     * kernel's x86 convention, which the hooks' abort labels carry. */
    if (__rseq_size >= 20) {
        char *tp = __builtin_thread_pointer();
        char *mine = (char *)&pt_tls;
        /* Materialised as an address: an executable linked with the static
         * library has its initial-exec access relaxed by the linker, which
         * knows only the mov/add forms of it. */
        __asm__("" : "+r"(mine));
        pt_rseq_delta = (long)(__rseq_offset + 8) - (long)(mine - tp);
        use_rseq = true;
        use_fast = pt_use_tsc;
    }
#endif
    return use_fast;
}

PT_NOINSTR static void thread_gone(void *arg);

/* Whether the kernel took glibc's rseq registration for the calling thread
 * (glibc marks a refused one with a negative cpu_id). */
PT_NOINSTR static bool rseq_registered(void)
{
#ifdef PT_HAVE_RSEQ_HOOKS
    char *tp = __builtin_thread_pointer();
    const volatile int32_t *cpu_id = (const volatile int32_t *)(tp + __rseq_offset + 4);
    return *cpu_id >= 0;
#else
    return false;
#endif
}

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
            th->gap = 0;
            th->chunk = NULL;
            th->spare = NULL;
            th->pending = NULL;
            th->named = false;
            th->portable = !use_rseq || !rseq_registered();
            __atomic_store_n(&th->tls, &pt_tls, __ATOMIC_RELEASE);
            if (thread_key != (pthread_key_t)-1)
                pthread_setspecific(thread_key, th);
            return th;
        }
    }
    return NULL;
}

/* Takes th's chunk off it, with whatever the owner committed so far (its
 * used and lost fields set). Any thread: pos is read once, and every byte
 * below it is written (2.). */
PT_NOINSTR static struct pt_chunk *detach(struct pt_thread *th)
{
    struct pt_chunk *c = th->chunk;
    if (!c)
        return NULL;
    struct pt_tls *t = __atomic_load_n(&th->tls, __ATOMIC_ACQUIRE);
    uint8_t *pos = t ? __atomic_load_n(&t->pos, __ATOMIC_ACQUIRE) : NULL;
    uint8_t *ev = c->mem + PT_CHUNK_HEAD;
    uint32_t used = 0;
    if (pos >= ev && pos <= c->mem + PT_CHUNK_BYTES)
        used = (uint32_t)(pos - ev);
    th->chunk = NULL;
    c->used = used;
    /* One instruction: a signal handler's hooks add to lost meanwhile. */
    c->lost = __atomic_exchange_n(&th->lost, 0, __ATOMIC_RELAXED);
    return c;
}

/* Publishes the chunk a switch detached and left for after its window.
 * A signal handler's own switch publishes it first, so a thread's chunks
 * reach the writer in order. */
PT_NOINSTR static void publish_pending(struct pt_thread *th)
{
    struct pt_chunk *c = __atomic_exchange_n(&th->pending, NULL, __ATOMIC_ACQ_REL);
    if (c)
        pt_chunk_publish(c, c->used, c->lost);
}

/* Publishes th's chunks: the pending one, then the current one. */
PT_NOINSTR static void flush_thread(struct pt_thread *th)
{
    publish_pending(th);
    struct pt_chunk *c = detach(th);
    if (c)
        pt_chunk_publish(c, c->used, c->lost);
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

/* Stops the hooks of this thread from appending (both paths test end or
 * limit first). */
PT_NOINSTR static void close_tls(struct pt_tls *t)
{
    __atomic_store_n(&t->limit, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&t->end, NULL, __ATOMIC_RELAXED);
}

PT_NOINSTR static void thread_gone(void *arg)
{
    struct pt_thread *th = arg;
    th->in_slow = 1;
    close_tls(&pt_tls);
    signal_fence();
    name_chunk(th->chunk);
    if (__atomic_load_n(&pt_mode, __ATOMIC_RELAXED))
        flush_thread(th);
    struct pt_chunk *spare = __atomic_exchange_n(&th->spare, NULL, __ATOMIC_ACQ_REL);
    if (spare)
        pt_chunk_release(spare);
    pt_tls.pos = NULL;
    pt_tls.th = NULL;
    pt_tls.dead = true;
    signal_fence();
    __atomic_store_n(&th->tls, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&th->in_use, 0, __ATOMIC_RELEASE);
}

void pt_hooks_stop_thread(void)
{
    close_tls(&pt_tls);
}

void pt_hooks_flush_all(void)
{
    for (unsigned i = 0; i < PT_MAX_THREADS; i++) {
        struct pt_thread *th = &pt_threads[i];
        if (!__atomic_load_n(&th->in_use, __ATOMIC_ACQUIRE))
            continue;
        struct pt_tls *t = __atomic_load_n(&th->tls, __ATOMIC_ACQUIRE);
        if (t)
            close_tls(t);
        flush_thread(th);
    }
}

/* Publishes the thread's full chunk and installs a fresh one. False when
 * none could be had (the events are then dropped and counted as a gap). */
PT_NOINSTR static bool switch_chunk(struct pt_thread *th, uint64_t fn)
{
    th->in_slow = 1;
    close_tls(&pt_tls);
    signal_fence();
    publish_pending(th); /* none, unless a switch was interrupted right after its window */
    struct pt_chunk *old = detach(th); /* reads pt_tls.pos, the end of the full chunk */
    struct pt_chunk *c = __atomic_exchange_n(&th->spare, NULL, __ATOMIC_ACQ_REL);
    if (!c)
        c = pt_chunk_acquire(th->tid, true);
    if (!c) {
        if (old)
            pt_chunk_publish(old, old->used, old->lost);
        __atomic_add_fetch(&th->gap, 1, __ATOMIC_RELAXED);
        signal_fence();
        th->in_slow = 0;
        return false;
    }
    if (!th->named) {
        name_chunk(c);
        th->named = true;
    }
    c->base_tick = pt_tls.last;
    c->fn_base = fn;
    c->gap = __atomic_exchange_n(&th->gap, 0, __ATOMIC_RELAXED);
    th->chunk = c;
    uint8_t *end = c->mem + PT_CHUNK_BYTES - PT_EVENT_ROOM;
    pt_tls.fn_base = fn;
    pt_tls.pos = c->mem + PT_CHUNK_HEAD;
    if (old)
        __atomic_store_n(&th->pending, old, __ATOMIC_RELEASE);
    signal_fence();
    pt_tls.end = end;
    if (use_fast && !th->portable)
        pt_tls.limit = end;
    signal_fence();
    th->in_slow = 0;
    publish_pending(th);
    /* The next chunk, outside the window; none when the pool is short (the
     * next switch then waits for one). A signal handler may switch and
     * take or put a spare meanwhile: exchanges only. */
    if (!__atomic_load_n(&th->spare, __ATOMIC_RELAXED)) {
        struct pt_chunk *next = pt_chunk_acquire(th->tid, false);
        if (next && (next = __atomic_exchange_n(&th->spare, next, __ATOMIC_ACQ_REL)))
            pt_chunk_release(next);
    }
    return true;
}

/* The portable append (5.): plain stores, under busy. */
PT_NOINSTR static void append_plain(struct pt_thread *th, unsigned kind, uint64_t fn, uint64_t sp16)
{
    if (pt_tls.busy) {
        __atomic_add_fetch(&th->lost, 1, __ATOMIC_RELAXED);
        return;
    }
    pt_tls.busy = 1;
    signal_fence();
    if (pt_tls.pos >= pt_tls.end && !switch_chunk(th, fn))
        goto out;
    uint64_t tick = pt_tick();
    uint64_t d = tick - pt_tls.last;
    if (tick < pt_tls.last || d >> (PT_PV_MAX_BITS - 2))
        d = 0;
    uint8_t *p = pt_tls.pos;
    p += pt_put_pv(p, d << 2 | kind);
    if (kind != PT_KIND_EXIT) {
        p[0] = (uint8_t)sp16;
        p[1] = (uint8_t)(sp16 >> 8);
        p += 2;
    }
    if (kind == PT_KIND_ENTER) {
        int64_t off = (int64_t)(fn - pt_tls.fn_base);
        p += pt_put_pv(p, pt_zigzag(off));
    }
    pt_tls.last = tick;
    signal_fence();
    pt_tls.pos = p;
out:
    signal_fence();
    pt_tls.busy = 0;
}

/* Records one event of the calling thread from C. */
PT_NOINSTR static void record(unsigned kind, uint64_t fn, uint64_t sp16)
{
    if (!__atomic_load_n(&pt_mode, __ATOMIC_RELAXED) || pt_tls.dead)
        return;
    struct pt_thread *th = pt_tls.th;
    if (!th) {
        th = register_thread();
        if (!th) {
            pt_tls.dead = true;
            return;
        }
        pt_tls.th = th;
    }
    if (th->in_slow) {
        __atomic_add_fetch(&th->lost, 1, __ATOMIC_RELAXED);
        return;
    }
#ifdef PT_HAVE_RSEQ_HOOKS
    if (!th->portable) {
        for (;;) {
            if (pt_tls.pos >= pt_tls.end && !switch_chunk(th, fn))
                return;
            int r = pt_rseq_append(kind, fn, sp16, pt_tick());
            if (r == 0)
                return;
            if (r == 1 && !switch_chunk(th, fn))
                return;
        }
    }
#endif
    append_plain(th, kind, fn, sp16);
}

void pt_slow_enter(void *fn, uint64_t sp16)
{
    record(PT_KIND_ENTER, (uint64_t)(uintptr_t)fn, sp16 & 0xffff);
}

void pt_slow_exit(void *fn)
{
    record(PT_KIND_EXIT, (uint64_t)(uintptr_t)fn, 0);
}

void pt_record_longjmp(uint64_t sp16)
{
    record(PT_KIND_LONGJMP, pt_tls.fn_base, sp16 & 0xffff);
}
