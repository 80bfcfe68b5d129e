/* Native allocation tracking (--leaks=native; DESIGN §3.5): the malloc
 * family, interposed by libpacer-agent-heap.so, which `pacer run` preloads
 * instead of libpacer-agent.so only when asked: without --leaks=native no
 * allocation passes through pacer at all.
 *
 * The mark phase (heap_mark.c) must know every live block; only the
 * sampled ones carry their allocation stack:
 *   - every allocation of at least PACER_LEAKS_ALWAYS_BYTES (default
 *     64 KiB);
 *   - of the rest, a Poisson sample by bytes, as tcmalloc and heapprofd
 *     sample: each thread counts down an exponentially distributed number
 *     of bytes, mean PACER_LEAKS_SAMPLE_BYTES (default 64 KiB); the
 *     allocation that crosses zero is sampled. So a block is sampled with
 *     probability 1 - exp(-size / mean): a leak site that keeps leaking is
 *     found, and a program that allocates a lot pays for one stack per
 *     mean bytes, not per call.
 * A sampled stack costs about a microsecond (stackstore.c).
 *
 * Where a block is known (heap.h):
 *   - in a slot map: with glibc's allocator, a block that is not sampled
 *     is one byte (HEAP_SLOT_LIVE | its slack: the chunk's usable size
 *     less the size asked for) in the map of its 64 MiB granule, one byte
 *     per 16 bytes of address, stored after the real malloc and cleared
 *     before the real free, with plain stores: no lock, no atomic
 *     read-modify-write, and the map's line for a block is shared by its
 *     neighbours in the heap. Its size comes back from the chunk header
 *     and the slack. The hook notes the granule when it is not the
 *     thread's last one (a 4 MiB map, reserved at start, touched a page per
 *     64 KiB of heap);
 *   - in the table (address → requested size, stack): sampled blocks,
 *     mmap-ed chunks, blocks of a granule beyond the map's room, and every
 *     block when the allocator is not glibc's. SHARDS open-addressing
 *     tables (linear probing, deletion by backward shift) under spin locks
 *     picked by address, grown with mmap — never malloc, which would
 *     re-enter. An entry is 16 bytes: the address, and the size (40 bits)
 *     with the stack id (24 bits; a stack beyond that range is dropped).
 * Nothing the app sees changes: blocks are glibc's own, untouched (no
 * header, no padding), so sizes, alignment, malloc_usable_size, calloc's
 * zeroing and realloc's semantics are glibc's.
 *
 * Order: a block's slot or table entry is made after the real malloc
 * returned it and removed before the real free gets it, so an address
 * freed by one thread and returned to another is never forgotten by the
 * first. realloc removes the old one first and makes the new one before
 * the mark may look (heap_self.depth defers the stop meanwhile), putting
 * the old one back if the allocator refuses.
 *
 * Re-entrancy:
 *   - dlsym(RTLD_NEXT) finds the real functions at the first call; what it
 *     allocates meanwhile comes from a static buffer (boot_alloc) that
 *     free() ignores and realloc() copies out of;
 *   - the stack capture allocates nothing once stackstore_init() loaded the
 *     unwinder (from the constructor); until then blocks are tracked
 *     without stacks, and an allocation made inside the capture (depth > 1)
 *     is tracked without one;
 *   - the mark's stop signal defers itself while the thread is inside the
 *     table, the stack store or realloc (heap_self.depth) and the thread
 *     parks when it leaves (heap_park_deferred), so no thread is ever
 *     stopped holding a lock the mark needs; a thread that does not stop
 *     waits at the gate of its next hook until the mark is done;
 *   - fork: the prepare handler takes every lock, so the child starts with
 *     none held; the child then stops tracking (its leaks would repeat its
 *     parent's), and only forwards.
 * Threads start with their counters zeroed (static TLS): the first
 * allocation of a thread draws its countdown and notes its stack for the
 * mark (heap_threads_seen).
 *
 * Activation: tracking is on from the first allocation (the process may
 * allocate before any constructor runs) and the constructor keeps it only
 * when PACER_LEAKS names native and there is somewhere to write records;
 * otherwise every hook forwards. Leaks are checked at exit (heap_check
 * from the agent's exit sequence, or from atexit in a program that is not
 * GTK) and on demand: pacer_leaks_check().
 */
#include "heap.h"
#include "leaks.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SHARDS 256
#define SHARD_INITIAL 256
#define MAX_SEEN 4096
#define MAX_GRANS 256 /* 64 MiB granules with blocks: 16 GiB of arenas */
#define MAX_REGIONS 1024
#define BOOT_BYTES (64 * 1024)
#define DEFAULT_SAMPLE_BYTES (64 * 1024)
#define DEFAULT_ALWAYS_BYTES (64 * 1024)

__thread heap_thread heap_self __attribute__((tls_model("initial-exec")));

typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void *(*reallocarray_fn)(void *, size_t, size_t);
typedef void *(*memalign_fn)(size_t, size_t);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*valloc_fn)(size_t);

static struct {
    malloc_fn malloc;
    free_fn free;
    calloc_fn calloc;
    realloc_fn realloc;
    reallocarray_fn reallocarray;
    memalign_fn memalign, aligned_alloc;
    posix_memalign_fn posix_memalign;
    valloc_fn valloc, pvalloc;
} real;

static _Atomic int resolve_state; /* 0, 1 resolving, 2 done */
static __thread bool resolving __attribute__((tls_model("initial-exec")));
static _Alignas(64) unsigned char boot[BOOT_BYTES];
static _Atomic size_t boot_used;

static _Atomic bool tracking = true;
static bool sampling;
static int64_t sample_bytes = DEFAULT_SAMPLE_BYTES;
static uint64_t always_bytes = DEFAULT_ALWAYS_BYTES;
static pid_t owner_pid;
static bool glibc;

/* ---- our own memory ---- */

static heap_region regions[MAX_REGIONS];
static size_t n_regions;
static atomic_flag regions_lock = ATOMIC_FLAG_INIT;

static void spin_take(atomic_flag *l)
{
    for (int spins = 0; atomic_flag_test_and_set_explicit(l, memory_order_acquire); spins++)
        if (spins > 100)
            sched_yield();
}

static void spin_give(atomic_flag *l)
{
    atomic_flag_clear_explicit(l, memory_order_release);
}

void leaks_own_region(const void *start, size_t len)
{
    heap_self.depth++;
    spin_take(&regions_lock);
    if (n_regions < MAX_REGIONS)
        regions[n_regions++] = (heap_region){(uintptr_t)start, (uintptr_t)start + len};
    spin_give(&regions_lock);
    heap_self.depth--;
}

void leaks_disown_region(const void *start, size_t len)
{
    heap_self.depth++;
    spin_take(&regions_lock);
    for (size_t i = 0; i < n_regions; i++) {
        if (regions[i].start == (uintptr_t)start && regions[i].end == (uintptr_t)start + len) {
            regions[i] = regions[--n_regions];
            break;
        }
    }
    spin_give(&regions_lock);
    heap_self.depth--;
}

size_t heap_own_regions(heap_region *out, size_t max)
{
    spin_take(&regions_lock);
    size_t n = n_regions < max ? n_regions : max;
    memcpy(out, regions, n * sizeof(*out));
    spin_give(&regions_lock);
    return n;
}

void *heap_map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    leaks_own_region(p, bytes);
    return p;
}

void heap_unmap(void *p, size_t bytes)
{
    if (!p)
        return;
    leaks_disown_region(p, bytes);
    munmap(p, bytes);
}

/* ---- the table ---- */

typedef struct hent {
    uintptr_t addr; /* 0: empty */
    uint64_t meta;  /* size << HEAP_STACK_BITS | stack */
} hent;

typedef struct shard {
    atomic_flag lock;
    size_t cap, n;
    hent *slots;
} __attribute__((aligned(64))) shard;

static shard shards[SHARDS];

static inline uint64_t addr_hash(uintptr_t a)
{
    return (uint64_t)(a >> 4) * UINT64_C(0x9E3779B97F4A7C15);
}

static inline shard *shard_of(uintptr_t a, uint64_t *ret_h)
{
    uint64_t h = addr_hash(a);
    *ret_h = h;
    return &shards[h >> 56];
}

static inline size_t home_of(uint64_t h, size_t cap)
{
    return (size_t)(h >> 16) & (cap - 1);
}

/* Lock held. */
static bool shard_grow(shard *s)
{
    size_t ncap = s->cap ? s->cap * 2 : SHARD_INITIAL;
    hent *n = heap_map(ncap * sizeof(hent));
    if (!n)
        return false;
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->slots[i].addr)
            continue;
        size_t j = home_of(addr_hash(s->slots[i].addr), ncap);
        while (n[j].addr)
            j = (j + 1) & (ncap - 1);
        n[j] = s->slots[i];
    }
    heap_unmap(s->slots, s->cap * sizeof(hent));
    s->slots = n;
    s->cap = ncap;
    return true;
}

static void table_insert(uintptr_t a, uint64_t meta)
{
    uint64_t h;
    shard *s = shard_of(a, &h);
    spin_take(&s->lock);
    if ((s->n + 1) * 8 > s->cap * 5 && !shard_grow(s)) {
        spin_give(&s->lock);
        return; /* out of memory: the block goes untracked */
    }
    size_t i = home_of(h, s->cap);
    while (s->slots[i].addr && s->slots[i].addr != a)
        i = (i + 1) & (s->cap - 1);
    if (!s->slots[i].addr)
        s->n++;
    s->slots[i] = (hent){a, meta};
    spin_give(&s->lock);
}

/* Removes a; returns its meta in *ret_meta. False when a was not there. */
static bool table_remove(uintptr_t a, uint64_t *ret_meta)
{
    uint64_t h;
    shard *s = shard_of(a, &h);
    spin_take(&s->lock);
    bool found = false;
    if (s->cap) {
        size_t i = home_of(h, s->cap);
        while (s->slots[i].addr && s->slots[i].addr != a)
            i = (i + 1) & (s->cap - 1);
        if (s->slots[i].addr) {
            found = true;
            *ret_meta = s->slots[i].meta;
            s->slots[i].addr = 0;
            s->n--;
            for (size_t j = (i + 1) & (s->cap - 1); s->slots[j].addr; j = (j + 1) & (s->cap - 1)) {
                size_t home = home_of(addr_hash(s->slots[j].addr), s->cap);
                if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
                    s->slots[i] = s->slots[j];
                    s->slots[j].addr = 0;
                    i = j;
                }
            }
        }
    }
    spin_give(&s->lock);
    return found;
}

void heap_lock_all(void)
{
    for (size_t k = 0; k < SHARDS; k++)
        spin_take(&shards[k].lock);
}

void heap_unlock_all(void)
{
    for (size_t k = SHARDS; k-- > 0;)
        spin_give(&shards[k].lock);
}

size_t heap_snapshot(heap_block *out, size_t max)
{
    size_t n = 0;
    for (size_t k = 0; k < SHARDS; k++) {
        shard *s = &shards[k];
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->slots[i].addr)
                continue;
            if (n < max)
                out[n] = (heap_block){s->slots[i].addr, heap_meta_size(s->slots[i].meta),
                                      heap_meta_stack(s->slots[i].meta), 0, 0};
            n++;
        }
    }
    return n;
}

size_t heap_live_blocks(void)
{
    size_t n = 0;
    for (size_t k = 0; k < SHARDS; k++)
        n += atomic_load_explicit((_Atomic size_t *)&shards[k].n, memory_order_relaxed);
    return n;
}

bool heap_allocator_is_glibc(void)
{
    return glibc;
}

/* ---- threads ---- */

static heap_thread_seen *seen;
static _Atomic size_t n_seen;

size_t heap_threads_seen(const heap_thread_seen **ret)
{
    size_t n = atomic_load(&n_seen);
    *ret = seen;
    return seen ? (n < MAX_SEEN ? n : MAX_SEEN) : 0;
}

/* ln(x) for x in (0, 1], to a few parts in 10^5: enough to draw sample
 * intervals, without libm. */
static double ln_unit(double x)
{
    union {
        double d;
        uint64_t u;
    } v = {x};
    int e = (int)((v.u >> 52) & 0x7ff) - 1023;
    v.u = (v.u & UINT64_C(0x000fffffffffffff)) | UINT64_C(0x3ff0000000000000);
    double y = (v.d - 1) / (v.d + 1), y2 = y * y;
    return e * 0.6931471805599453 + 2 * y * (1 + y2 * (1.0 / 3 + y2 * (1.0 / 5 + y2 * (1.0 / 7 + y2 / 9))));
}

static int64_t next_interval(heap_thread *t)
{
    t->rng ^= t->rng >> 12;
    t->rng ^= t->rng << 25;
    t->rng ^= t->rng >> 27;
    uint64_t r = t->rng * UINT64_C(2685821657736338717);
    double u = (double)((r >> 11) + 1) * (1.0 / 9007199254740992.0);
    return (int64_t)(-ln_unit(u) * (double)sample_bytes) + 1;
}

static void thread_start(heap_thread *t)
{
    uintptr_t here = (uintptr_t)&t;
    pid_t tid = (pid_t)syscall(SYS_gettid);
    t->rng = (uint64_t)tid * UINT64_C(0x9E3779B97F4A7C15) ^ (uint64_t)here ^ 0x5bd1e995u;
    if (!t->rng)
        t->rng = 1;
    t->countdown = next_interval(t);
    t->sampling_ready = true;
    if (seen && !t->registered) {
        t->registered = true;
        size_t i = atomic_fetch_add(&n_seen, 1);
        if (i < MAX_SEEN)
            seen[i] = (heap_thread_seen){tid, here, (uintptr_t)__builtin_thread_pointer()};
    }
}

/* ---- granules ---- */

_Atomic uint32_t *heap_gran_map;
static heap_gran *grans; /* max_grans of them, then their slot maps: one mapping */
static size_t max_grans;
static _Atomic size_t n_grans;
static atomic_flag gran_lock = ATOMIC_FLAG_INIT;
static bool shadow; /* glibc's allocator, and the granules reserved */

size_t heap_granules(heap_gran **ret)
{
    *ret = grans;
    return atomic_load_explicit(&n_grans, memory_order_acquire);
}

/* The granule map and room for the granules' slot maps, reserved: pages
 * are touched as blocks come (a 64 MiB granule's map is 4 MiB of address
 * space, of which a heap of n bytes touches n / 16). Fewer granules when
 * the address space is limited. */
static bool grans_reserve(void)
{
    size_t map_bytes = HEAP_GRAN_COUNT * sizeof(uint32_t);
    void *map = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED)
        return false;
    for (size_t want = MAX_GRANS; want >= 8; want /= 4) {
        size_t bytes = want * (sizeof(heap_gran) + HEAP_GRAN_SLOTS);
        void *g = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (g == MAP_FAILED)
            continue;
        leaks_own_region(map, map_bytes);
        leaks_own_region(g, bytes);
        heap_gran_map = map;
        grans = g;
        max_grans = want;
        return true;
    }
    munmap(map, map_bytes);
    return false;
}

/* The granule of block p, registered at its first block (chunk_size: its
 * chunk header, which says whether it is a thread arena's); NULL when the
 * block cannot have a slot. */
__attribute__((noinline)) static heap_gran *gran_register(heap_thread *t, uintptr_t p, uint64_t chunk_size)
{
    uintptr_t gn = p >> HEAP_GRAN_SHIFT;
    if (gn >= HEAP_GRAN_COUNT)
        return NULL;
    uint32_t st = atomic_load_explicit(&heap_gran_map[gn], memory_order_acquire);
    if (!st) {
        spin_take(&gran_lock);
        st = atomic_load_explicit(&heap_gran_map[gn], memory_order_relaxed);
        if (!st) {
            size_t i = atomic_load_explicit(&n_grans, memory_order_relaxed);
            if (i < max_grans) {
                heap_gran *g = &grans[i];
                g->base = gn << HEAP_GRAN_SHIFT;
                g->slots = (_Atomic uint8_t *)((char *)grans + max_grans * sizeof(heap_gran)) + i * HEAP_GRAN_SLOTS;
                g->non_main = (chunk_size & 4) != 0; /* NON_MAIN_ARENA */
                st = (uint32_t)i + 1;
                atomic_store_explicit(&n_grans, i + 1, memory_order_release);
            } else {
                st = HEAP_GRAN_FULL;
            }
            atomic_store_explicit(&heap_gran_map[gn], st, memory_order_release);
        }
        spin_give(&gran_lock);
    }
    if (st == HEAP_GRAN_FULL)
        return NULL;
    t->last_gran = gn;
    t->last_g = &grans[st - 1];
    return t->last_g;
}

/* The granule of p when one was registered, else NULL. */
static inline heap_gran *gran_find(heap_thread *t, uintptr_t p)
{
    uintptr_t gn = p >> HEAP_GRAN_SHIFT;
    if (gn == t->last_gran && t->last_g)
        return t->last_g;
    if (gn >= HEAP_GRAN_COUNT)
        return NULL;
    uint32_t st = atomic_load_explicit(&heap_gran_map[gn], memory_order_acquire);
    return st && st != HEAP_GRAN_FULL ? &grans[st - 1] : NULL;
}

/* Block p of n bytes into its granule's slot map: false when it must go
 * to the table instead (an mmap-ed chunk, no granule). */
static inline bool shadow_set(heap_thread *t, void *p, size_t n)
{
    uint64_t chunk_size = ((const uint64_t *)p)[-1];
    if (chunk_size & 2)
        return false; /* IS_MMAPPED */
    heap_gran *g = t->last_g;
    if (__builtin_expect(!g || (uintptr_t)p >> HEAP_GRAN_SHIFT != t->last_gran, 0)) {
        g = gran_register(t, (uintptr_t)p, chunk_size);
        if (!g)
            return false;
    }
    uint64_t usable = (chunk_size & ~(uint64_t)7) - 8;
    uint64_t slack = usable > n ? usable - n : 0;
    uint64_t max = atomic_load_explicit(&g->max_size, memory_order_relaxed);
    while (usable > max &&
           !atomic_compare_exchange_weak_explicit(&g->max_size, &max, usable, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
    atomic_store_explicit(&g->slots[((uintptr_t)p - g->base) >> 4],
                          (uint8_t)(HEAP_SLOT_LIVE | (slack < HEAP_SLOT_SLACK ? slack : HEAP_SLOT_SLACK)),
                          memory_order_relaxed);
    return true;
}

/* Clears p's slot and returns what it held: 0 when it had none (a block
 * of the table). */
static inline uint8_t shadow_take(heap_thread *t, void *p)
{
    heap_gran *g = gran_find(t, (uintptr_t)p);
    if (!g)
        return 0;
    _Atomic uint8_t *slot = &g->slots[((uintptr_t)p - g->base) >> 4];
    uint8_t v = atomic_load_explicit(slot, memory_order_relaxed);
    if (!(v & HEAP_SLOT_LIVE))
        return 0;
    atomic_store_explicit(slot, 0, memory_order_relaxed);
    return v;
}

/* Puts back what shadow_take took (p's granule is registered). */
static inline void shadow_restore(heap_thread *t, void *p, uint8_t v)
{
    heap_gran *g = gran_find(t, (uintptr_t)p);
    atomic_store_explicit(&g->slots[((uintptr_t)p - g->base) >> 4], v, memory_order_relaxed);
}

/* ---- tracking ---- */

static inline bool on(void)
{
    return atomic_load_explicit(&tracking, memory_order_relaxed);
}

static inline uint64_t meta_of(size_t n, uint32_t stack)
{
    uint64_t size = n >> HEAP_SIZE_BITS ? (UINT64_C(1) << HEAP_SIZE_BITS) - 1 : n;
    return size << HEAP_STACK_BITS | stack;
}

static inline void leave(heap_thread *t)
{
    if (--t->depth == 0 && atomic_load_explicit(&t->stop_pending, memory_order_relaxed))
        heap_park_deferred();
}

/* A thread that did not stop for the mark waits here (never the mark's
 * own thread, nor one inside a hook: it parks when it leaves). */
static inline void gate(void)
{
    if (__builtin_expect(atomic_load_explicit(&heap_world_stopped, memory_order_relaxed), 0) && heap_self.depth == 0)
        heap_gate_wait();
}

/* A sampled block's stack (0 when none could be taken: inside a capture,
 * the store full). */
__attribute__((noinline)) static uint32_t capture(heap_thread *t, uintptr_t caller)
{
    uint32_t st = 0;
    t->depth++;
    if (t->depth == 1) {
        st = stackstore_capture_from(caller);
        if (st >> HEAP_STACK_BITS)
            st = 0;
    }
    leave(t);
    return st;
}

/* Whether a new block of n bytes is sampled. */
static inline bool sampled(heap_thread *t, size_t n)
{
    if (!sampling)
        return false;
    if (__builtin_expect(!t->sampling_ready, 0))
        thread_start(t);
    if (n >= always_bytes)
        return true;
    t->countdown -= (int64_t)n;
    if (__builtin_expect(t->countdown >= 0, 1))
        return false;
    t->countdown = next_interval(t);
    return true;
}

static void table_put(void *p, uint64_t meta)
{
    heap_thread *t = &heap_self;
    t->depth++;
    table_insert((uintptr_t)p, meta);
    leave(t);
}

static bool untrack(void *p, uint64_t *ret_meta)
{
    heap_thread *t = &heap_self;
    t->depth++;
    bool found = table_remove((uintptr_t)p, ret_meta);
    leave(t);
    return found;
}

/* A new block p of n bytes, tracking on: its slot, or (sampled, or not
 * for a slot map) its table entry. */
static inline void *track(void *p, size_t n, uintptr_t caller)
{
    heap_thread *t = &heap_self;
    bool chosen = sampled(t, n);
    if (__builtin_expect(!chosen, 1) && shadow && shadow_set(t, p, n))
        return p;
    table_put(p, meta_of(n, chosen ? capture(t, caller) : 0));
    return p;
}

/* Tracking on: p freed (or about to be handed to realloc). */
static inline void untrack_any(heap_thread *t, void *p)
{
    uint64_t meta;
    if (!(shadow && shadow_take(t, p)))
        untrack(p, &meta);
}

/* ---- the real functions ---- */

static void *boot_alloc(size_t n, size_t align)
{
    if (align < 16)
        align = 16;
    size_t need = n + align + 16;
    size_t at = atomic_fetch_add(&boot_used, need);
    if (at + need > BOOT_BYTES)
        return NULL;
    uintptr_t p = ((uintptr_t)&boot[at] + 16 + align - 1) & ~(uintptr_t)(align - 1);
    ((size_t *)p)[-1] = n;
    return (void *)p;
}

static bool is_boot(const void *p)
{
    return (const unsigned char *)p >= boot && (const unsigned char *)p < boot + BOOT_BYTES;
}

static void resolve(void)
{
    int expected = 0;
    if (atomic_compare_exchange_strong(&resolve_state, &expected, 1)) {
        resolving = true;
        *(void **)&real.calloc = dlsym(RTLD_NEXT, "calloc");
        *(void **)&real.free = dlsym(RTLD_NEXT, "free");
        *(void **)&real.realloc = dlsym(RTLD_NEXT, "realloc");
        *(void **)&real.reallocarray = dlsym(RTLD_NEXT, "reallocarray");
        *(void **)&real.memalign = dlsym(RTLD_NEXT, "memalign");
        *(void **)&real.aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
        *(void **)&real.posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
        *(void **)&real.valloc = dlsym(RTLD_NEXT, "valloc");
        *(void **)&real.pvalloc = dlsym(RTLD_NEXT, "pvalloc");
        void *m = dlsym(RTLD_NEXT, "malloc");
        Dl_info info;
        glibc = m && dladdr(m, &info) && info.dli_fname && strstr(info.dli_fname, "libc.so");
        shadow = glibc && grans_reserve();
        resolving = false;
        atomic_store_explicit((_Atomic(malloc_fn) *)&real.malloc, (malloc_fn)m, memory_order_release);
        atomic_store(&resolve_state, 2);
        return;
    }
    while (atomic_load(&resolve_state) != 2 && !resolving)
        sched_yield();
}

/* Whether the real functions are there; false while this thread resolves
 * them (its allocations then come from the boot buffer). */
static inline bool ready(void)
{
    if (__builtin_expect(real.malloc != NULL, 1))
        return true;
    if (resolving)
        return false;
    resolve();
    return real.malloc != NULL;
}

/* ---- the hooks ---- */

/* The hook's caller: where a sampled stack starts. */
#define CALLER ((uintptr_t)__builtin_return_address(0))

/* glibc declares these only in <malloc.h>, which would clash with ours. */
void *memalign(size_t align, size_t n);
void *pvalloc(size_t n);
/* On demand: the mark now; leaks not reported before become records. */
void pacer_leaks_check(void);

AGENT_EXPORT void *malloc(size_t n)
{
    if (!ready())
        return boot_alloc(n, 16);
    if (!on())
        return real.malloc(n);
    gate();
    void *p = real.malloc(n);
    return __builtin_expect(p != NULL, 1) ? track(p, n, CALLER) : NULL;
}

AGENT_EXPORT void free(void *p)
{
    if (!p || is_boot(p))
        return;
    if (on()) {
        gate();
        untrack_any(&heap_self, p);
    }
    if (ready())
        real.free(p);
}

AGENT_EXPORT void *calloc(size_t nmemb, size_t size)
{
    size_t n;
    if (__builtin_mul_overflow(nmemb, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    if (!ready() || !real.calloc)
        return boot_alloc(n, 16); /* the buffer is zeroed and never reused */
    if (!on())
        return real.calloc(nmemb, size);
    gate();
    void *p = real.calloc(nmemb, size);
    return p ? track(p, n, CALLER) : NULL;
}

/* The old block leaves its slot or the table entry before the real
 * realloc gets it, the new one gets its own before the mark may look
 * (heap_self.depth defers the stop until then): it is never missed. A
 * sampled block's stack is taken first. */
static void *realloc_tracked(void *p, size_t n, uintptr_t caller)
{
    if (!p) {
        if (!ready())
            return boot_alloc(n, 16);
        if (!on())
            return real.malloc(n);
        gate();
        void *q = real.malloc(n);
        return q ? track(q, n, caller) : NULL;
    }
    if (is_boot(p)) {
        void *q = malloc(n);
        if (q) {
            size_t old = ((size_t *)p)[-1];
            memcpy(q, p, old < n ? old : n);
        }
        return q;
    }
    if (!ready())
        return NULL;
    if (!on())
        return real.realloc(p, n);
    gate();
    heap_thread *t = &heap_self;
    bool chosen = n && sampled(t, n);
    uint32_t st = chosen ? capture(t, caller) : 0;
    t->depth++;
    uint64_t meta = 0;
    uint8_t slot = shadow ? shadow_take(t, p) : 0;
    bool in_table = !slot && table_remove((uintptr_t)p, &meta);
    void *q = real.realloc(p, n);
    if (!q) {
        if (n && slot) /* still p's (realloc(p, 0) freed it) */
            shadow_restore(t, p, slot);
        else if (n && in_table)
            table_insert((uintptr_t)p, meta);
        leave(t);
        return NULL;
    }
    if (chosen || !shadow || !shadow_set(t, q, n))
        table_insert((uintptr_t)q, meta_of(n, st));
    leave(t);
    return q;
}

AGENT_EXPORT void *realloc(void *p, size_t n)
{
    return realloc_tracked(p, n, CALLER);
}

AGENT_EXPORT void *reallocarray(void *p, size_t nmemb, size_t size)
{
    size_t n;
    if (__builtin_mul_overflow(nmemb, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc_tracked(p, n, CALLER);
}

static void *aligned_tracked(memalign_fn fn, size_t align, size_t n, uintptr_t caller)
{
    if (!ready() || !fn)
        return boot_alloc(n, align);
    if (!on())
        return fn(align, n);
    gate();
    void *p = fn(align, n);
    return p ? track(p, n, caller) : NULL;
}

AGENT_EXPORT void *memalign(size_t align, size_t n)
{
    return aligned_tracked(ready() ? real.memalign : NULL, align, n, CALLER);
}

AGENT_EXPORT void *aligned_alloc(size_t align, size_t n)
{
    return aligned_tracked(ready() ? real.aligned_alloc : NULL, align, n, CALLER);
}

AGENT_EXPORT int posix_memalign(void **ret, size_t align, size_t n)
{
    if (!ready() || !real.posix_memalign) {
        void *p = boot_alloc(n, align);
        if (!p)
            return ENOMEM;
        *ret = p;
        return 0;
    }
    if (!on())
        return real.posix_memalign(ret, align, n);
    gate();
    int r = real.posix_memalign(ret, align, n);
    if (r == 0)
        track(*ret, n, CALLER);
    return r;
}

AGENT_EXPORT void *valloc(size_t n)
{
    if (!ready() || !real.valloc)
        return boot_alloc(n, 4096);
    if (!on())
        return real.valloc(n);
    gate();
    void *p = real.valloc(n);
    return p ? track(p, n, CALLER) : NULL;
}

AGENT_EXPORT void *pvalloc(size_t n)
{
    if (!ready() || !real.pvalloc)
        return boot_alloc(n, 4096);
    if (!on())
        return real.pvalloc(n);
    gate();
    void *p = real.pvalloc(n);
    return p ? track(p, n, CALLER) : NULL;
}

/* ---- life cycle ---- */

static void fork_prepare(void)
{
    spin_take(&gran_lock);
    spin_take(&regions_lock);
    for (size_t k = 0; k < SHARDS; k++)
        spin_take(&shards[k].lock);
    stackstore_fork_prepare();
}

static void fork_parent(void)
{
    stackstore_fork_parent();
    for (size_t k = SHARDS; k-- > 0;)
        spin_give(&shards[k].lock);
    spin_give(&regions_lock);
    spin_give(&gran_lock);
}

static void fork_child(void)
{
    atomic_store(&tracking, false);
    stackstore_fork_child();
    for (size_t k = 0; k < SHARDS; k++)
        atomic_flag_clear(&shards[k].lock);
    atomic_flag_clear(&regions_lock);
    atomic_flag_clear(&gran_lock);
    heap_self.depth = 0;
    atomic_store(&heap_self.stop_pending, 0);
}

static long env_long(const char *name, long dflt, long min)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < min) {
        agent_note_once(name, "%s=\"%s\" is not a whole number of at least %ld; using %ld", name, v, min, dflt);
        return dflt;
    }
    return n;
}

bool heap_native_build(void)
{
    return true;
}

void heap_exit_check(void)
{
    static _Atomic bool done;
    if (atomic_exchange(&done, true) || !on() || getpid() != owner_pid)
        return;
    heap_check(true);
}

static void heap_atexit(void)
{
    heap_exit_check();
}

AGENT_EXPORT void pacer_leaks_check(void)
{
    if (on() && getpid() == owner_pid)
        heap_check(false);
}

__attribute__((constructor)) static void heap_ctor(void)
{
    ready();
    bool have_out = getenv("PACER_OUT") || getenv("PACER_SERVER_URL");
    if (getenv("PACER_AGENT_DISABLE") || !have_out || !leaks_native_mode()) {
        atomic_store(&tracking, false);
        return;
    }
    owner_pid = getpid();
    sample_bytes = env_long("PACER_LEAKS_SAMPLE_BYTES", DEFAULT_SAMPLE_BYTES, 1);
    always_bytes = (uint64_t)env_long("PACER_LEAKS_ALWAYS_BYTES", DEFAULT_ALWAYS_BYTES, 1);
    if (!stackstore_init())
        agent_note_once("heap-stacks", "no memory for allocation stacks; native leaks are reported without them");
    seen = heap_map(MAX_SEEN * sizeof(*seen));
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    atexit(heap_atexit);
    sampling = true;
}
