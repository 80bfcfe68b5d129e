/* Call stacks of the calling thread, taken cheaply and kept once each: the
 * creation stacks of GObjects, the stacks of references taken
 * (--leaks=refs) and of sampled allocations (--leaks=native, heap.c).
 *
 * Capture: glibc's backtrace(), i.e. libgcc's DWARF unwinder over each
 * module's .eh_frame (found without a lock through _dl_find_object): about
 * 1 µs for 20 frames here, and it needs no frame pointers. The first call
 * loads libgcc_s, which allocates: stackstore_init() makes that call at
 * activation, outside any hook, and nothing is captured before it.
 *
 * Interning: a stack is stored once, in an append-only region reserved
 * with mmap (nothing here calls malloc: allocation hooks capture stacks),
 * and named by a 32-bit id, its offset in 8-byte words (0: no stack). A
 * stored stack never moves or changes, so stackstore_get() reads without a
 * lock. The dedup table is open addressing, grown under the lock.
 *
 * Threads: any. One spin lock guards appends and the table; a thread that
 * re-enters (a signal handler that allocates while this thread holds the
 * lock) gets no stack instead of a deadlock. After fork the child's lock
 * is reset (stackstore_after_fork_child).
 */
#include "leaks.h"

#include <pacer/base/hash.h>

#include <execinfo.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#define REGION_BYTES (1ull << 30) /* reserved, touched as stacks are added */
#define REGION_SMALL (64ull << 20) /* where the kernel refuses a large reservation */

static uint64_t *region; /* word 0 unused: id 0 means "no stack" */
static size_t region_words, used_words = 1;
static uint64_t *table; /* slot: hash (high 32 bits) | id (low 32) */
static size_t table_cap, table_n;
static atomic_flag lock = ATOMIC_FLAG_INIT;
static _Atomic bool ready;
static __thread int busy __attribute__((tls_model("initial-exec")));

static void *map_region(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void lock_take(void)
{
    for (int spins = 0; atomic_flag_test_and_set_explicit(&lock, memory_order_acquire); spins++)
        if (spins > 64)
            sched_yield();
}

static void lock_give(void)
{
    atomic_flag_clear_explicit(&lock, memory_order_release);
}

bool stackstore_init(void)
{
    if (atomic_load(&ready))
        return true;
    region = map_region(REGION_BYTES);
    region_words = REGION_BYTES / 8;
    if (!region) {
        region = map_region(REGION_SMALL);
        region_words = REGION_SMALL / 8;
    }
    table_cap = 4096;
    table = map_region(table_cap * sizeof(*table));
    if (!region || !table)
        return false;
    leaks_own_region(region, region_words * 8);
    leaks_own_region(table, table_cap * sizeof(*table));
    void *prime[2];
    backtrace(prime, 2); /* loads libgcc_s now, not inside a hook */
    atomic_store(&ready, true);
    return true;
}

static bool table_grow(void)
{
    size_t ncap = table_cap * 2;
    uint64_t *n = map_region(ncap * sizeof(*n));
    if (!n)
        return false;
    for (size_t i = 0; i < table_cap; i++) {
        if (!table[i])
            continue;
        size_t j = (size_t)(table[i] >> 32) & (ncap - 1);
        while (n[j])
            j = (j + 1) & (ncap - 1);
        n[j] = table[i];
    }
    leaks_own_region(n, ncap * sizeof(*n));
    leaks_disown_region(table, table_cap * sizeof(*table));
    munmap(table, table_cap * sizeof(*table));
    table = n;
    table_cap = ncap;
    return true;
}

/* The id of pcs[0..n), stored when new; 0 when the store is full. Lock
 * held. */
static uint32_t intern(const uint64_t *pcs, size_t n, uint32_t h32)
{
    size_t i = h32 & (table_cap - 1);
    for (; table[i]; i = (i + 1) & (table_cap - 1)) {
        if ((uint32_t)(table[i] >> 32) != h32)
            continue;
        uint32_t id = (uint32_t)table[i];
        if (region[id] == n && memcmp(&region[id + 1], pcs, n * 8) == 0)
            return id;
    }
    if (used_words + 1 + n > region_words || used_words + 1 + n > UINT32_MAX)
        return 0;
    if (2 * (table_n + 1) > table_cap) {
        if (!table_grow())
            return 0;
        return intern(pcs, n, h32);
    }
    uint32_t id = (uint32_t)used_words;
    region[id] = n;
    memcpy(&region[id + 1], pcs, n * 8);
    used_words += 1 + n;
    table[i] = (uint64_t)h32 << 32 | id;
    table_n++;
    return id;
}

uint32_t stackstore_add(const uint64_t *pcs, size_t n)
{
    if (!atomic_load_explicit(&ready, memory_order_acquire) || n == 0 || busy)
        return 0;
    if (n > STACKSTORE_MAX_FRAMES)
        n = STACKSTORE_MAX_FRAMES;
    uint64_t h = fnv1a64(FNV1A64_INIT, pcs, n * 8);
    uint32_t h32 = (uint32_t)(h ^ (h >> 32));
    if (!h32)
        h32 = 1;
    busy++;
    lock_take();
    uint32_t id = intern(pcs, n, h32);
    lock_give();
    busy--;
    return id;
}

uint32_t stackstore_capture(unsigned skip)
{
    if (!atomic_load_explicit(&ready, memory_order_acquire) || busy)
        return 0;
    void *buf[STACKSTORE_MAX_FRAMES + 8];
    if (skip > 8)
        skip = 8;
    busy++;
    int n = backtrace(buf, (int)(STACKSTORE_MAX_FRAMES + skip + 1));
    busy--;
    /* buf[0] is this function; the caller asked to skip `skip` more */
    uint64_t pcs[STACKSTORE_MAX_FRAMES];
    size_t k = 0;
    for (int i = 1 + (int)skip; i < n && k < STACKSTORE_MAX_FRAMES; i++)
        pcs[k++] = (uint64_t)(uintptr_t)buf[i];
    return stackstore_add(pcs, k);
}

uint32_t stackstore_capture_from(uintptr_t first)
{
    if (!atomic_load_explicit(&ready, memory_order_acquire) || busy)
        return 0;
    void *buf[STACKSTORE_MAX_FRAMES + 8];
    busy++;
    int n = backtrace(buf, STACKSTORE_MAX_FRAMES + 8);
    busy--;
    int from = 0;
    while (from < n && (uintptr_t)buf[from] != first)
        from++;
    if (from == n)
        from = 1; /* not found (a tail call): all but this function */
    uint64_t pcs[STACKSTORE_MAX_FRAMES];
    size_t k = 0;
    for (int i = from; i < n && k < STACKSTORE_MAX_FRAMES; i++)
        pcs[k++] = (uint64_t)(uintptr_t)buf[i];
    return stackstore_add(pcs, k);
}

size_t stackstore_get(uint32_t id, const uint64_t **ret_pcs)
{
    if (!id || !region || id >= used_words) {
        *ret_pcs = NULL;
        return 0;
    }
    *ret_pcs = &region[id + 1];
    return (size_t)region[id];
}

void stackstore_fork_prepare(void)
{
    lock_take();
}

void stackstore_fork_parent(void)
{
    lock_give();
}

void stackstore_fork_child(void)
{
    atomic_flag_clear(&lock);
    busy = 0;
}
