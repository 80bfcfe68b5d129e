/* --leaks=native (libpacer-agent-heap.so): what heap.c (the allocation
 * hooks, the slot maps and the table of live blocks) and heap_mark.c (the
 * mark phase) share. Nothing here allocates: these run inside malloc.
 */
#ifndef PACER_AGENT_HEAP_H
#define PACER_AGENT_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Per thread: how deep in a hook, and a stop request that arrived there. */
typedef struct heap_thread {
    int depth;
    _Atomic int stop_pending;
    bool registered;
    bool sampling_ready;
    int64_t countdown; /* bytes until the next sample */
    uint64_t rng;
    uintptr_t last_gran; /* the granule number of this thread's last block, */
    struct heap_gran *last_g; /* and the granule */
} heap_thread;
extern __thread heap_thread heap_self __attribute__((tls_model("initial-exec")));

/* Where the mark finds the live blocks (heap.c):
 *   - slot maps: with glibc's allocator, a block that is neither sampled
 *     nor an mmap-ed chunk is one byte, stored by malloc and cleared by
 *     free, in the map of its 64 MiB granule (the alignment of glibc's
 *     arena heaps), one byte per 16 bytes of address: slot k of granule g
 *     is the block starting at g's base + 16 k. The byte is
 *     HEAP_SLOT_LIVE | the block's slack (the allocator's usable size,
 *     from the chunk header, less the size asked for; at most 127);
 *   - the table: every other live block, with its requested size and
 *     stack (sampled blocks, mmap-ed chunks, a granule beyond the map, and
 *     every block when the allocator is not glibc's).
 * A byte is stored and cleared with plain stores: no atomic
 * read-modify-write, no lock, and one cache line of map covers 1 KiB of
 * heap.
 */
#define HEAP_STACK_BITS 24
#define HEAP_SIZE_BITS 40
#define HEAP_GRAN_SHIFT 26
#define HEAP_GRAN_BYTES (UINT64_C(1) << HEAP_GRAN_SHIFT)
#define HEAP_GRAN_SLOTS ((size_t)(HEAP_GRAN_BYTES / 16)) /* slots of a granule */
#define HEAP_GRAN_COUNT (UINT32_C(1) << (47 - HEAP_GRAN_SHIFT)) /* granules of the address space */
#define HEAP_SLOT_LIVE 0x80
#define HEAP_SLOT_SLACK 0x7f
#define HEAP_SLOT_TABLE 0x01 /* heap_mark.c's, during a check: a table block starts here */

typedef struct heap_gran {
    uintptr_t base;
    _Atomic uint8_t *slots;    /* HEAP_GRAN_SLOTS bytes */
    _Atomic uint64_t max_size; /* the largest usable size of a block seen here */
    bool non_main;             /* a glibc thread arena's heap */
} heap_gran;

/* Granule number → its index + 1 in heap_granules(), 0 when none was
 * seen, HEAP_GRAN_FULL when there was no room for it. */
#define HEAP_GRAN_FULL UINT32_MAX
extern _Atomic uint32_t *heap_gran_map;
size_t heap_granules(heap_gran **ret);

/* A glibc chunk's usable size, from its header (not for mmap-ed chunks). */
static inline uint64_t heap_glibc_usable(uintptr_t p)
{
    return (((const uint64_t *)p)[-1] & ~(uint64_t)7) - 8;
}

static inline uint64_t heap_meta_size(uint64_t meta)
{
    return meta >> HEAP_STACK_BITS;
}

static inline uint32_t heap_meta_stack(uint64_t meta)
{
    return (uint32_t)(meta & ((UINT64_C(1) << HEAP_STACK_BITS) - 1));
}

/* One live block, as the mark sees it. */
typedef struct heap_block {
    uintptr_t addr;
    uint64_t size;   /* as requested */
    uint32_t stack;  /* its allocation stack when sampled, else 0 */
    uint32_t mark;   /* heap_mark.c's */
    uint64_t next_chunk; /* glibc: offset of the next chunk's header, which
                          * may lie inside the block's last bytes; else 0 */
} heap_block;

/* Every shard of the table locked (the slot maps are held still by the
 * hooks' gate, heap_world_stopped): a thread that did not stop for the
 * mark waits in its next hook, so no block is freed (and maybe unmapped)
 * while the mark reads it. heap_unlock_all() releases them. */
void heap_lock_all(void);
void heap_unlock_all(void);
/* The table's blocks, copied into out[0..max), with every shard locked.
 * Returns how many there were (may exceed max: call again). */
size_t heap_snapshot(heap_block *out, size_t max);
/* The table's blocks now (approximate while threads allocate). */
size_t heap_live_blocks(void);
/* Whether the allocator behind the hooks is glibc's (its chunk layout
 * tells the mark which memory is the allocator's own). */
bool heap_allocator_is_glibc(void);

/* Threads that allocated: their tid, a stack address seen then and their
 * thread pointer, so the mark can tell a dead thread's cached stack from a
 * live one's (and keep its thread descriptor, which glibc reuses). */
typedef struct heap_thread_seen {
    pid_t tid;
    uintptr_t sp, tp;
} heap_thread_seen;
size_t heap_threads_seen(const heap_thread_seen **ret);

/* Our own mappings (never roots). */
typedef struct heap_region {
    uintptr_t start, end;
} heap_region;
size_t heap_own_regions(heap_region *out, size_t max);

/* heap_mark.c: the stop-the-world signal landed while the thread was in a
 * hook; it parks now that it left it. */
void heap_park_deferred(void);
/* heap_mark.c: set from the stop to the resume. A thread that did not stop
 * (it blocks signals) waits in its next hook (heap_gate_wait), so no block
 * is made or freed while the mark reads the arenas. */
extern _Atomic int heap_world_stopped;
void heap_gate_wait(void);

/* heap_mark.c: runs the mark and writes the native leak records of blocks
 * not reported before. Any thread but a signal handler's. */
void heap_check(bool at_exit);

/* mmap'd memory that the mark never scans; NULL on failure. */
void *heap_map(size_t bytes);
void heap_unmap(void *p, size_t bytes);

#endif
