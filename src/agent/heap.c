/* Native allocation tracking (--leaks=native; DESIGN §3.5): the malloc
 * family, interposed by libpacer-agent-heap.so, which `pacer run` preloads
 * instead of libpacer-agent.so only when asked: without --leaks=native no
 * allocation passes through pacer at all.
 *
 * Every live block is in the table (address → requested size, stack), so
 * the mark phase (heap_mark.c) knows all the memory it must scan; only the
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
 * A sampled stack costs about a microsecond (stackstore.c); everything else
 * is a table insert or delete under one of SHARDS spin locks, picked by
 * address: no system call, no allocation, and threads seldom meet.
 *
 * Table: SHARDS open-addressing tables (linear probing, deletion by
 * backward shift), grown under their lock with mmap — never malloc, which
 * would re-enter. An entry is 16 bytes: the address, and the size (40
 * bits) with the stack id (24 bits; a stack beyond that range is dropped).
 *
 * Order: a block enters the table after the real malloc returned it and
 * leaves before the real free gets it, so an address freed by one thread
 * and returned to another is never deleted by the first.
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
 *     table or the stack store (heap_self.depth) and the thread parks when
 *     it leaves (heap_park_deferred), so no thread is ever stopped holding
 *     a lock the mark needs;
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
#define SIZE_BITS 40
#define STACK_BITS 24
#define MAX_SEEN 4096
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
    uint64_t meta;  /* size << STACK_BITS | stack */
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
                out[n] = (heap_block){s->slots[i].addr, s->slots[i].meta >> STACK_BITS,
                                      (uint32_t)(s->slots[i].meta & ((1u << STACK_BITS) - 1)), 0, 0};
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
            seen[i] = (heap_thread_seen){tid, here};
    }
}

/* ---- tracking ---- */

static void track(void *p, size_t n, uintptr_t caller)
{
    heap_thread *t = &heap_self;
    t->depth++;
    uint32_t st = 0;
    if (sampling) {
        if (!t->sampling_ready)
            thread_start(t);
        bool sample = n >= always_bytes;
        if (!sample) {
            t->countdown -= (int64_t)n;
            if (t->countdown < 0) {
                sample = true;
                t->countdown = next_interval(t);
            }
        }
        if (sample && t->depth == 1) {
            st = stackstore_capture_from(caller);
            if (st >> STACK_BITS)
                st = 0;
        }
    }
    uint64_t size = n >> SIZE_BITS ? (UINT64_C(1) << SIZE_BITS) - 1 : n;
    table_insert((uintptr_t)p, size << STACK_BITS | st);
    if (--t->depth == 0 && atomic_load_explicit(&t->stop_pending, memory_order_relaxed))
        heap_park_deferred();
}

static bool untrack(void *p, uint64_t *ret_meta)
{
    heap_thread *t = &heap_self;
    t->depth++;
    bool found = table_remove((uintptr_t)p, ret_meta);
    if (--t->depth == 0 && atomic_load_explicit(&t->stop_pending, memory_order_relaxed))
        heap_park_deferred();
    return found;
}

static void retrack(void *p, uint64_t meta)
{
    heap_thread *t = &heap_self;
    t->depth++;
    table_insert((uintptr_t)p, meta);
    if (--t->depth == 0 && atomic_load_explicit(&t->stop_pending, memory_order_relaxed))
        heap_park_deferred();
}

static inline bool on(void)
{
    return atomic_load_explicit(&tracking, memory_order_relaxed);
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
    void *p = real.malloc(n);
    if (__builtin_expect(p != NULL, 1) && on())
        track(p, n, CALLER);
    return p;
}

AGENT_EXPORT void free(void *p)
{
    if (!p || is_boot(p))
        return;
    uint64_t meta;
    if (on())
        untrack(p, &meta);
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
    void *p = real.calloc(nmemb, size);
    if (__builtin_expect(p != NULL, 1) && on())
        track(p, n, CALLER);
    return p;
}

static void *realloc_tracked(void *p, size_t n, uintptr_t caller)
{
    if (!p) {
        if (!ready())
            return boot_alloc(n, 16);
        void *q = real.malloc(n);
        if (q && on())
            track(q, n, caller);
        return q;
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
    uint64_t meta = 0;
    bool found = on() && untrack(p, &meta);
    void *q = real.realloc(p, n);
    if (!q) {
        if (found && n)
            retrack(p, meta); /* still p's */
        return NULL;
    }
    if (on())
        track(q, n, caller);
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
    void *p = fn(align, n);
    if (p && on())
        track(p, n, caller);
    return p;
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
    int r = real.posix_memalign(ret, align, n);
    if (r == 0 && on())
        track(*ret, n, CALLER);
    return r;
}

AGENT_EXPORT void *valloc(size_t n)
{
    if (!ready() || !real.valloc)
        return boot_alloc(n, 4096);
    void *p = real.valloc(n);
    if (p && on())
        track(p, n, CALLER);
    return p;
}

AGENT_EXPORT void *pvalloc(size_t n)
{
    if (!ready() || !real.pvalloc)
        return boot_alloc(n, 4096);
    void *p = real.pvalloc(n);
    if (p && on())
        track(p, n, CALLER);
    return p;
}

/* ---- life cycle ---- */

static void fork_prepare(void)
{
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
}

static void fork_child(void)
{
    atomic_store(&tracking, false);
    stackstore_fork_child();
    for (size_t k = 0; k < SHARDS; k++)
        atomic_flag_clear(&shards[k].lock);
    atomic_flag_clear(&regions_lock);
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
