/* The chunk pool: bounded memory between the hooks and the writer thread.
 *
 *  - One mmap reserves the whole pool (PACER_TRACE_BUFFER_MB, default 64 MiB)
 *    with MAP_NORESERVE, in transparent huge pages where the kernel gives
 *    them: memory is used only once first touched (2 MiB at a time), and
 *    then stays resident for reuse. Descriptors live in a static array.
 *    The writer thread pre-faults the first 2 MiB at start, so the program
 *    does not take a page fault every 4 KiB of events; acquire prefers the
 *    lowest free chunk, so a writer that keeps up keeps the program in that
 *    warm part of the pool.
 *  - A chunk moves FREE -> FILLING (pt_chunk_acquire, by CAS on its state:
 *    no ABA, no lock) -> FULL (pt_chunk_publish, pushed on a lock-free
 *    stack) -> FREE (pt_chunk_release by the writer, once written). A
 *    chunk is not cleared for reuse: its events are read up to `used`
 *    only.
 *  - The writer takes the whole stack at once (exchange with NULL) and
 *    reverses it. A thread publishes its chunks one after another, so the
 *    reversed list keeps each thread's chunks in order.
 *  - When every chunk is in use, acquire wakes the writer and sleeps in
 *    100 us steps for up to ~2 s (the program slows down rather than losing
 *    events), then gives up and the caller counts the event as lost.
 */
#include "runtime.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MAX_CHUNKS 16384u

static struct pt_chunk chunks[MAX_CHUNKS];
static unsigned n_chunks;
static unsigned free_hint; /* atomic: a low index that was freed recently */
static struct pt_chunk *published; /* atomic stack head */
static unsigned n_published; /* atomic */

int pt_chunks_init(size_t max_bytes)
{
    size_t chunk_bytes = PT_CHUNK_BYTES;
    size_t n = max_bytes / chunk_bytes;
    if (n < 4)
        n = 4;
    if (n > MAX_CHUNKS)
        n = MAX_CHUNKS;
    /* 2 MiB more than needed, to align the pool for transparent huge
     * pages: the chunks in use then take one page fault, and one page for
     * the kernel to pin when it writes them out (O_DIRECT), per 2 MiB
     * instead of per 4 KiB. */
    size_t align = 2u << 20;
    void *raw = mmap(NULL, n * chunk_bytes + align, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
        return -errno;
    void *mem = (void *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
#ifdef MADV_HUGEPAGE
    madvise(mem, n * chunk_bytes, MADV_HUGEPAGE); /* a hint: without it, 4 KiB pages */
#endif
    for (size_t i = 0; i < n; i++) {
        chunks[i].mem = (uint8_t *)mem + i * chunk_bytes;
        chunks[i].state = PT_CHUNK_FREE;
    }
    n_chunks = (unsigned)n;
    return 0;
}

PT_NOINSTR static struct pt_chunk *try_acquire(void)
{
    unsigned start = __atomic_load_n(&free_hint, __ATOMIC_RELAXED);
    for (unsigned k = 0; k < n_chunks; k++) {
        unsigned i = start + k;
        if (i >= n_chunks)
            i -= n_chunks;
        struct pt_chunk *c = &chunks[i];
        uint32_t expect = PT_CHUNK_FREE;
        if (__atomic_load_n(&c->state, __ATOMIC_RELAXED) == PT_CHUNK_FREE &&
            __atomic_compare_exchange_n(&c->state, &expect, PT_CHUNK_FILLING, false,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            __atomic_store_n(&free_hint, i + 1 < n_chunks ? i + 1 : 0, __ATOMIC_RELAXED);
            return c;
        }
    }
    return NULL;
}

void pt_chunks_prefault(size_t bytes)
{
    size_t chunk_bytes = PT_CHUNK_BYTES;
    size_t n = bytes / chunk_bytes;
    if (n > n_chunks)
        n = n_chunks;
    if (n == 0)
        return;
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
    if (madvise(chunks[0].mem, n * chunk_bytes, MADV_POPULATE_WRITE) == 0)
        return;
    /* Older kernels: write-fault one byte per page with an atomic OR of
     * zero, which leaves whatever a hook may be writing there as it is. */
    for (size_t i = 0; i < n; i++)
        for (size_t b = 0; b < chunk_bytes; b += 4096)
            __atomic_fetch_or(&chunks[i].mem[b], 0, __ATOMIC_RELAXED);
}

struct pt_chunk *pt_chunk_acquire(uint32_t tid, bool wait)
{
    struct pt_chunk *c = try_acquire();
    for (int i = 0; !c && wait && i < 20000; i++) {
        pt_writer_kick();
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
        c = try_acquire();
    }
    if (c) {
        c->tid = tid;
        c->used = 0;
        c->lost = 0;
        c->gap = 0;
        c->name[0] = '\0';
        c->next = NULL;
    }
    return c;
}

void pt_chunk_publish(struct pt_chunk *c, uint32_t used, uint32_t lost)
{
    c->used = used;
    c->lost = lost;
    __atomic_store_n(&c->state, PT_CHUNK_FULL, __ATOMIC_RELAXED);
    struct pt_chunk *head = __atomic_load_n(&published, __ATOMIC_RELAXED);
    do {
        c->next = head;
    } while (!__atomic_compare_exchange_n(&published, &head, c, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    __atomic_add_fetch(&n_published, 1, __ATOMIC_RELAXED);
}

unsigned pt_chunks_published(void)
{
    return __atomic_load_n(&n_published, __ATOMIC_RELAXED);
}

struct pt_chunk *pt_chunks_take(void)
{
    struct pt_chunk *list = __atomic_exchange_n(&published, NULL, __ATOMIC_ACQUIRE);
    struct pt_chunk *rev = NULL;
    unsigned n = 0;
    while (list) {
        n++;
        struct pt_chunk *next = list->next;
        list->next = rev;
        rev = list;
        list = next;
    }
    if (n)
        __atomic_sub_fetch(&n_published, n, __ATOMIC_RELAXED);
    return rev;
}

void pt_chunk_release(struct pt_chunk *c)
{
    c->used = 0;
    unsigned idx = (unsigned)(c - chunks);
    __atomic_store_n(&c->state, PT_CHUNK_FREE, __ATOMIC_RELEASE);
    if (idx < __atomic_load_n(&free_hint, __ATOMIC_RELAXED))
        __atomic_store_n(&free_hint, idx, __ATOMIC_RELAXED);
}
