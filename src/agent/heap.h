/* --leaks=native (libpacer-agent-heap.so): what heap.c (the allocation
 * hooks and the table of live blocks) and heap_mark.c (the mark phase)
 * share. Nothing here allocates: these run inside malloc.
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
} heap_thread;
extern __thread heap_thread heap_self __attribute__((tls_model("initial-exec")));

/* One live block, as the mark sees it. */
typedef struct heap_block {
    uintptr_t addr;
    uint64_t size;   /* as requested */
    uint32_t stack;  /* its allocation stack when sampled, else 0 */
    uint32_t mark;   /* heap_mark.c's */
    uint64_t next_chunk; /* glibc: offset of the next chunk's header, which
                          * may lie inside the block's last bytes; else 0 */
} heap_block;

/* Every shard of the table locked: a thread that did not stop for the mark
 * waits in its next hook, so no block is freed (and maybe unmapped) while
 * the mark reads it. heap_unlock_all() releases them. */
void heap_lock_all(void);
void heap_unlock_all(void);
/* The live blocks, copied into out[0..max), with every shard locked.
 * Returns how many there were (may exceed max: call again). */
size_t heap_snapshot(heap_block *out, size_t max);
/* Blocks live now (approximate while threads allocate). */
size_t heap_live_blocks(void);
/* Whether the allocator behind the hooks is glibc's (its chunk layout
 * tells the mark which memory is the allocator's own). */
bool heap_allocator_is_glibc(void);

/* Threads that allocated: their tid and a stack address seen then, so the
 * mark can tell a dead thread's cached stack from a live one's. */
typedef struct heap_thread_seen {
    pid_t tid;
    uintptr_t sp;
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

/* heap_mark.c: runs the mark and writes the native leak records of blocks
 * not reported before. Any thread but a signal handler's. */
void heap_check(bool at_exit);

/* mmap'd memory that the mark never scans; NULL on failure. */
void *heap_map(size_t bytes);
void heap_unmap(void *p, size_t bytes);

#endif
