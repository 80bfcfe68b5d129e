/* The mark phase of --leaks=native (DESIGN §3.5), as LeakSanitizer and
 * KOOM do it: a block that no pointer reaches from the process's roots is a
 * leak.
 *
 * 1. Stop the world. Every other thread gets a real-time signal (the
 *    lowest one from SIGRTMIN+2 the app leaves at SIG_DFL; its handler
 *    stays installed and ignores anything but our own requests). The
 *    handler saves the thread's registers, stack pointer and thread
 *    pointer into its slot and waits on a futex until the mark is done. A
 *    thread inside a hook (heap.h: heap_self.depth) only notes the request
 *    and parks when it leaves the hook, so no lock the mark needs is held
 *    by a parked thread. A thread that blocks the signal (GLib's and
 *    Mesa's workers do; /proc/self/task/TID/status says so) is waited for
 *    10 ms only, any other a second at most: those that did not stop have
 *    their stacks scanned whole, not their registers, and their next
 *    allocation or free waits at the hooks' gate until the world resumes. The checking thread's own
 *    roots are its caller's frames and registers, never the check's own
 *    frames (full of its own pointers and of stale values).
 * 2. Roots, from /proc/self/maps read after the stop:
 *      - the writable segments of every loaded module (data, bss), from
 *        their program headers (collected before the stop: the loader's
 *        lock may be held by a stopped thread);
 *      - every live thread's stack from its stack pointer up, its
 *        registers, and so the static TLS and thread descriptor that sit
 *        at the top of its stack mapping; the main thread's TLS is in an
 *        anonymous mapping of the loader, scanned below;
 *      - every other private anonymous writable mapping, whole (memory the
 *        app or a library maps for itself), except: the allocator's own
 *        memory (the brk heap, glibc's thread arenas, and each mmap-ed
 *        chunk: what is there besides live blocks is freed memory, full of
 *        stale pointers), our own mappings (the slot maps, the table, the
 *        stacks), and the cached stacks of threads that ended (a
 *        registered thread's stack address whose tid is gone) up to their
 *        thread descriptor, which glibc keeps with its DTV for the next
 *        thread;
 *      File-backed mappings other than module segments, shared mappings
 *      (GPU and window buffers) and mappings without read and write access
 *      are not roots. Pages never touched (pagemap: neither present nor
 *      swapped) are skipped in large mappings.
 * 3. Mark: the live blocks are the slot maps' and the table's (heap.h);
 *    the table's blocks that lie in a granule get a HEAP_SLOT_TABLE slot
 *    for the time of the check, so one look-up in the slot map finds
 *    either: the nearest slot at or below a word, within the largest
 *    block's reach. Every aligned word of a root is a candidate pointer;
 *    one that falls inside a live block's requested bytes (interior
 *    pointers count, as in LSan) marks it, and marked blocks are scanned
 *    in turn (an explicit stack, no recursion). Candidates wait in a short
 *    queue while their slot map line is fetched, found blocks in another
 *    while their chunk header is: the misses overlap instead of coming one
 *    after another.
 * 4. Resume the world; everything after this allocates normally.
 * 5. Group the unmarked blocks. A sampled block names its own stack; an
 *    unsampled one is put with the sampled leaked block that points to it
 *    (forward, breadth first) or, failing that, with one of its component
 *    of leaked blocks linked by pointers either way: a lost list whose
 *    nodes were sampled one in a hundred is reported whole, with the exact
 *    count and bytes. A component with no sampled block has no stack: its
 *    blocks are counted in one record without a stack.
 *    Groups whose stack is the agent's own code are dropped.
 *    Each group is a `leak` record of kind "native": count, bytes,
 *    sampled, stack, signature (leakstack.c), origin "library" when a
 *    known leak matches it or when no frame is the app's. Blocks reported
 *    once are not reported again by a later check.
 *
 * Nothing between the stop and the resume allocates, takes a lock a
 * stopped thread might hold or calls stdio: system calls, our own mmap-ed
 * arrays and a radix sort through them.
 */
#include "heap.h"
#include "leaks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define MAX_THREADS 1024
#define MAX_REGS 32
#define STOP_TIMEOUT_NS 1000000000LL
#define BLOCKED_GRACE_NS 10000000LL
#define RED_ZONE 256
#define GLIBC_HEAP_MAX (64ull << 20) /* HEAP_MAX_SIZE on 64-bit */
#define PAGEMAP_FROM (4ull << 20)     /* mappings larger than this consult pagemap */

enum { SLOT_FREE = 0, SLOT_SIGNALLED, SLOT_PARKED, SLOT_RESUMED };

typedef struct park_slot {
    _Atomic pid_t tid;
    _Atomic int state;
    uintptr_t sp, tp;
    uintptr_t regs[MAX_REGS];
    int nregs;
} park_slot;

typedef struct range {
    uintptr_t start, end;
} range;

/* A growable array of mmap-ed memory (never malloc). */
typedef struct vec {
    void *p;
    size_t n, cap, elem;
} vec;

static park_slot *slots;
static size_t n_slots;
_Atomic int heap_world_stopped;
static _Atomic int n_parked;
static int stop_sig;
static _Atomic bool checking;

static pid_t gettid_raw(void)
{
    return (pid_t)syscall(SYS_gettid);
}

static void futex_wait(_Atomic int *addr, int val)
{
    struct timespec ts = {0, 50 * 1000 * 1000};
    syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

static void futex_wake(_Atomic int *addr)
{
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

static void nap_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Memory given up during a check stays mapped until the check ends: the
 * maps read at the stop may list it, and the mark must never read memory
 * that is gone. */
#define GRAVEYARD 256
static struct {
    void *p;
    size_t bytes;
} graveyard[GRAVEYARD];
static size_t n_graves;

static void retire(void *p, size_t bytes)
{
    if (!p)
        return;
    if (n_graves < GRAVEYARD)
        graveyard[n_graves++].p = p, graveyard[n_graves - 1].bytes = bytes;
    else
        heap_unmap(p, bytes); /* cannot happen: vectors double */
}

static void bury(void)
{
    for (size_t i = 0; i < n_graves; i++)
        heap_unmap(graveyard[i].p, graveyard[i].bytes);
    n_graves = 0;
}

static bool vec_push(vec *v, const void *item)
{
    if (v->n == v->cap) {
        size_t ncap = v->cap ? v->cap * 2 : 4096 / v->elem + 1;
        void *np = heap_map(ncap * v->elem);
        if (!np)
            return false;
        if (v->p) {
            memcpy(np, v->p, v->n * v->elem);
            retire(v->p, v->cap * v->elem);
        }
        v->p = np;
        v->cap = ncap;
    }
    memcpy((char *)v->p + v->n * v->elem, item, v->elem);
    v->n++;
    return true;
}

static void vec_free(vec *v)
{
    retire(v->p, v->cap * v->elem);
    *v = (vec){.elem = v->elem};
}

/* ---- stopping the world ---- */

static uintptr_t current_sp(void)
{
#if defined(__x86_64__)
    uintptr_t sp;
    __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
    return sp;
#elif defined(__aarch64__)
    uintptr_t sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    return sp;
#else
    volatile uintptr_t here = 0;
    return (uintptr_t)&here;
#endif
}

static park_slot *my_slot(void)
{
    pid_t me = gettid_raw();
    for (size_t i = 0; i < n_slots; i++)
        if (atomic_load(&slots[i].tid) == me)
            return &slots[i];
    return NULL;
}

static void park(ucontext_t *uc)
{
    park_slot *s = my_slot();
    if (!s || atomic_load(&s->state) != SLOT_SIGNALLED)
        return;
    s->nregs = 0;
    s->tp = (uintptr_t)__builtin_thread_pointer();
    if (uc) {
#if defined(__x86_64__)
        for (int i = 0; i < NGREG && i < MAX_REGS; i++)
            s->regs[s->nregs++] = (uintptr_t)uc->uc_mcontext.gregs[i];
        s->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
        for (int i = 0; i < 31 && i < MAX_REGS; i++)
            s->regs[s->nregs++] = (uintptr_t)uc->uc_mcontext.regs[i];
        s->sp = (uintptr_t)uc->uc_mcontext.sp;
#else
        s->sp = current_sp();
#endif
    } else {
        __builtin_unwind_init(); /* callee-saved registers onto this frame */
        s->sp = current_sp();
    }
    atomic_store(&s->state, SLOT_PARKED);
    atomic_fetch_add(&n_parked, 1);
    while (atomic_load(&heap_world_stopped))
        futex_wait(&heap_world_stopped, 1);
    atomic_store(&s->state, SLOT_RESUMED);
}

static void on_stop_signal(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    if (si->si_code != SI_TKILL || si->si_pid != getpid() || !atomic_load(&heap_world_stopped))
        return;
    int e = errno;
    if (heap_self.depth > 0)
        atomic_store(&heap_self.stop_pending, 1);
    else
        park(ctx);
    errno = e;
}

void heap_park_deferred(void)
{
    atomic_store(&heap_self.stop_pending, 0);
    if (atomic_load(&heap_world_stopped))
        park(NULL);
}

void heap_gate_wait(void)
{
    while (atomic_load(&heap_world_stopped))
        futex_wait(&heap_world_stopped, 1);
}

static bool choose_signal(void)
{
    if (stop_sig)
        return true;
    for (int s = SIGRTMIN + 2; s <= SIGRTMAX - 2; s++) {
        struct sigaction old;
        if (sigaction(s, NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
            continue;
        struct sigaction sa = {.sa_sigaction = on_stop_signal, .sa_flags = SA_SIGINFO | SA_RESTART};
        sigfillset(&sa.sa_mask);
        if (sigaction(s, &sa, NULL) == 0) {
            stop_sig = s;
            return true;
        }
    }
    return false;
}

/* The threads of this process into tids (getdents64: no allocation). */
static size_t list_threads(pid_t *tids, size_t max)
{
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t n = 0;
    char buf[4096];
    for (;;) {
        long got = syscall(SYS_getdents64, fd, buf, sizeof(buf));
        if (got <= 0)
            break;
        for (long off = 0; off < got;) {
            struct dirent64 *d = (struct dirent64 *)(buf + off);
            off += d->d_reclen;
            if (d->d_name[0] < '0' || d->d_name[0] > '9')
                continue;
            if (n < max)
                tids[n++] = (pid_t)atol(d->d_name);
        }
    }
    close(fd);
    return n;
}

static bool slot_known(pid_t tid)
{
    for (size_t i = 0; i < n_slots; i++)
        if (atomic_load(&slots[i].tid) == tid)
            return true;
    return false;
}

/* Whether thread tid blocks signal sig now (its SigBlk in
 * /proc/self/task/TID/status; false when unreadable). */
static bool blocks_signal(pid_t tid, int sig)
{
    char path[48] = "/proc/self/task/", digits[12], buf[2048];
    size_t n = 0, at = strlen(path);
    for (unsigned v = (unsigned)tid; n == 0 || v; v /= 10)
        digits[n++] = (char)('0' + v % 10);
    while (n)
        path[at++] = digits[--n];
    memcpy(path + at, "/status", 8);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t got = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (got <= 0)
        return false;
    buf[got] = '\0';
    const char *line = strstr(buf, "\nSigBlk:");
    if (!line)
        return false;
    unsigned long long mask = strtoull(line + 9, NULL, 16);
    return sig >= 1 && sig <= 64 && (mask >> (sig - 1) & 1);
}

/* Stops every thread but this one. Returns how many parked. A thread that
 * blocks the signal (GLib's and Mesa's workers do, for good; a thread
 * starting or ending, for a moment) gets it too, but is waited for only
 * BLOCKED_GRACE_NS: it waits at the hooks' gate instead, its stack scanned
 * whole. */
static size_t stop_world(pid_t self, size_t *ret_unanswered)
{
    n_slots = 0;
    atomic_store(&n_parked, 0);
    atomic_store(&heap_world_stopped, 1);
    size_t sent = 0, blocking = 0;
    int64_t deadline = now_ns() + STOP_TIMEOUT_NS;
    pid_t tids[MAX_THREADS];
    for (int round = 0; round < 4; round++) {
        size_t n = list_threads(tids, MAX_THREADS), fresh = 0;
        for (size_t i = 0; i < n && n_slots < MAX_THREADS; i++) {
            if (tids[i] == self || slot_known(tids[i]))
                continue;
            park_slot *s = &slots[n_slots];
            *s = (park_slot){0};
            atomic_store(&s->tid, tids[i]);
            atomic_store(&s->state, SLOT_SIGNALLED);
            n_slots++;
            bool blocked = blocks_signal(tids[i], stop_sig);
            if (syscall(SYS_tgkill, getpid(), tids[i], stop_sig) == 0) {
                sent++;
                fresh++;
                blocking += blocked;
            } else {
                atomic_store(&s->state, SLOT_FREE);
            }
        }
        if (!fresh && round > 0)
            break;
        while ((size_t)atomic_load(&n_parked) < sent - blocking && now_ns() < deadline)
            nap_us(200);
    }
    int64_t grace = now_ns() + BLOCKED_GRACE_NS;
    while ((size_t)atomic_load(&n_parked) < sent && now_ns() < grace)
        nap_us(200);
    size_t parked = (size_t)atomic_load(&n_parked);
    *ret_unanswered = sent - parked;
    return parked;
}

static void resume_world(void)
{
    atomic_store(&heap_world_stopped, 0);
    futex_wake(&heap_world_stopped);
    int64_t deadline = now_ns() + STOP_TIMEOUT_NS;
    for (size_t i = 0; i < n_slots; i++) {
        while (atomic_load(&slots[i].state) == SLOT_PARKED && now_ns() < deadline)
            nap_us(100);
        /* a late deferred park sees heap_world_stopped == 0 and returns */
        atomic_store(&slots[i].tid, 0);
    }
}

/* ---- the address space ---- */

typedef struct mapping {
    uintptr_t start, end;
    char perms[5];
    unsigned long inode;
    char name[24]; /* start of the path, enough for [heap], [stack], [vdso] */
} mapping;

#define MAPS_TEXT (8u << 20)

/* Reads /proc/self/maps whole into `text` first, then parses it: nothing
 * we map while parsing is in the listing. */
static bool read_maps(vec *out, char *text)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t len = 0;
    long r;
    while (len < MAPS_TEXT && (r = read(fd, text + len, MAPS_TEXT - len)) > 0)
        len += (size_t)r;
    close(fd);
    char line[512];
    size_t ll = 0;
    {
        const char *buf = text;
        long got = (long)len;
        for (long i = 0; i < got; i++) {
            if (buf[i] != '\n') {
                if (ll < sizeof(line) - 1)
                    line[ll++] = buf[i];
                continue;
            }
            line[ll] = '\0';
            ll = 0;
            mapping m = {0};
            char *p = line, *end;
            m.start = strtoull(p, &end, 16);
            if (*end != '-')
                continue;
            m.end = strtoull(end + 1, &end, 16);
            while (*end == ' ')
                end++;
            memcpy(m.perms, end, 4);
            /* offset, dev, inode, path */
            for (int f = 0; f < 3 && *end; f++) {
                end = strchr(end, ' ');
                if (!end)
                    break;
                while (*end == ' ')
                    end++;
            }
            if (!end)
                continue;
            m.inode = strtoul(end, &end, 10);
            while (*end == ' ')
                end++;
            strncpy(m.name, end, sizeof(m.name) - 1);
            if (!vec_push(out, &m))
                return false;
        }
    }
    return true;
}

static int collect_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    vec *v = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W) || !ph->p_memsz)
            continue;
        range r = {info->dlpi_addr + ph->p_vaddr, info->dlpi_addr + ph->p_vaddr + ph->p_memsz};
        r.start &= ~(uintptr_t)7;
        vec_push(v, &r);
    }
    return 0;
}

/* ---- the mark ---- */

/* A granule as the mark sees it: heap.c's slot map (a table block's slot
 * holds HEAP_SLOT_TABLE during the check) and our marks, one bit per
 * slot. A slot is 16 bytes of address; a block is named by its first. */
typedef struct gran {
    uintptr_t base;
    _Atomic uint8_t *slots;
    uint64_t *marks;
    size_t wlo, whi;          /* the 8-slot words holding blocks: [wlo, whi) */
    uint64_t max_slots;       /* the largest block, in slots, plus one */
    uintptr_t last, last_end; /* the highest block and its end */
    bool non_main;
} gran;

typedef struct pending {
    uintptr_t addr;
    uint64_t size;
} pending;

#define AHEAD 16

typedef struct ahead {
    struct gran *g;
    size_t slot;
    uintptr_t w;
} ahead;

typedef struct marker {
    heap_block *b;    /* the table's blocks, sorted */
    size_t n;
    uintptr_t lo, hi; /* b's lowest start, highest end */
    uintptr_t alo, ahi; /* bounds of every block: a word outside is no pointer */
    uint64_t *pages;  /* open addressing: page << 24 | (first block touching it, relative), 0 empty */
    uint32_t *page_first;
    size_t page_cap;
    gran *g;          /* by granule index (heap_granules) */
    size_t ng;
    uint64_t *bm;     /* every granule's marks, one mapping */
    uint64_t sblocks; /* blocks in the slot maps */
    vec stack;        /* of pending */
    uintptr_t words[AHEAD]; /* candidate pointers, their slot map lines being fetched */
    unsigned words_head, words_n;
    ahead ahead[AHEAD];     /* blocks found, their chunk headers being fetched */
    unsigned ahead_head, ahead_n;
    int pagemap;
    uint64_t scanned; /* bytes */
} marker;

/* Sorts by address: LSD radix sort on 16-bit digits through a second
 * buffer (no allocation but mmap; linear, unlike a comparison sort over
 * hundreds of thousands of blocks). */
static bool sort_blocks(heap_block *b, size_t n)
{
    heap_block *tmp = heap_map(n * sizeof(*b) + 1);
    size_t *count = heap_map(65536 * sizeof(size_t));
    if (!tmp || !count) {
        retire(tmp, n * sizeof(*b) + 1);
        retire(count, 65536 * sizeof(size_t));
        return false;
    }
    heap_block *from = b, *to = tmp;
    for (int shift = 0; shift < 64; shift += 16) {
        memset(count, 0, 65536 * sizeof(size_t));
        for (size_t i = 0; i < n; i++)
            count[(from[i].addr >> shift) & 0xffff]++;
        if (count[(from[0].addr >> shift) & 0xffff] == n)
            continue; /* one digit value: this pass moves nothing */
        size_t at = 0;
        for (size_t d = 0; d < 65536; d++) {
            size_t c = count[d];
            count[d] = at;
            at += c;
        }
        for (size_t i = 0; i < n; i++)
            to[count[(from[i].addr >> shift) & 0xffff]++] = from[i];
        heap_block *t = from;
        from = to;
        to = t;
    }
    if (from != b)
        memcpy(b, from, n * sizeof(*b));
    retire(tmp, n * sizeof(*b) + 1);
    retire(count, 65536 * sizeof(size_t));
    return true;
}

static inline size_t page_slot(uintptr_t page, size_t cap)
{
    return (size_t)((page * UINT64_C(0x9E3779B97F4A7C15)) >> 20) & (cap - 1);
}

/* The index of every page a block touches → the first block touching it,
 * so a word that points nowhere is rejected with one probe. */
static bool index_pages(marker *m)
{
    size_t pages = 0;
    for (size_t i = 0; i < m->n; i++)
        pages += ((m->b[i].addr + (m->b[i].size ? m->b[i].size : 1) - 1) >> 12) - (m->b[i].addr >> 12) + 1;
    size_t cap = 1024;
    while (cap < 2 * pages)
        cap *= 2;
    m->pages = heap_map(cap * sizeof(uint64_t));
    m->page_first = heap_map(cap * sizeof(uint32_t));
    if (!m->pages || !m->page_first)
        return false;
    m->page_cap = cap;
    for (size_t i = 0; i < m->n; i++) {
        uintptr_t first = m->b[i].addr >> 12, last = (m->b[i].addr + (m->b[i].size ? m->b[i].size : 1) - 1) >> 12;
        for (uintptr_t pg = first; pg <= last; pg++) {
            size_t k = page_slot(pg, cap);
            while (m->pages[k] && m->pages[k] != pg + 1)
                k = (k + 1) & (cap - 1);
            if (!m->pages[k]) {
                m->pages[k] = pg + 1;
                m->page_first[k] = (uint32_t)i;
            }
        }
    }
    return true;
}

/* The block containing address a, or -1. */
static long find_block(const marker *m, uintptr_t a)
{
    if (a < m->lo || a >= m->hi)
        return -1;
    size_t lo = 0, hi = m->n;
    if (m->pages) {
        uintptr_t pg = a >> 12;
        size_t k = page_slot(pg, m->page_cap);
        while (m->pages[k] && m->pages[k] != pg + 1)
            k = (k + 1) & (m->page_cap - 1);
        if (!m->pages[k])
            return -1;
        lo = m->page_first[k];
        hi = lo + 258 < m->n ? lo + 258 : m->n; /* a page holds at most 256 block starts, plus one reaching in */
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->b[mid].addr <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const heap_block *blk = &m->b[lo - 1];
    uint64_t size = blk->size ? blk->size : 1;
    if (a >= blk->addr + size)
        return -1;
    /* glibc's pointer to the next chunk (an arena's top, a free list)
     * points into this block's last word: it is not the block's */
    if (blk->next_chunk && a - blk->addr == blk->next_chunk)
        return -1;
    return (long)(lo - 1);
}

enum { MARK_REACHED = 1u << 0, MARK_REPORTED = 1u << 1, MARK_SLOT = 1u << 2 /* its slot holds HEAP_SLOT_TABLE */ };

#define MARK_WORDS (HEAP_GRAN_SLOTS / 64) /* a granule's mark bits */

static void push(marker *m, uintptr_t addr, uint64_t size)
{
    pending e = {addr, size};
    vec_push(&m->stack, &e);
}

static gran *gran_at(const marker *m, uintptr_t a)
{
    uintptr_t gn = a >> HEAP_GRAN_SHIFT;
    if (gn >= HEAP_GRAN_COUNT)
        return NULL;
    uint32_t st = atomic_load_explicit(&heap_gran_map[gn], memory_order_relaxed);
    return st && st <= m->ng && m->g[st - 1].marks ? &m->g[st - 1] : NULL;
}

/* Slots 8 wi .. 8 wi + 7 of g as one word, slot 8 wi + i in byte i
 * (little-endian). */
static inline uint64_t slot_word(const gran *g, size_t wi)
{
    uint64_t x;
    memcpy(&x, (const void *)(g->slots + 8 * wi), sizeof(x));
    return x;
}

static inline uint8_t slot_at(const gran *g, size_t k)
{
    return atomic_load_explicit(&g->slots[k], memory_order_relaxed);
}

/* The size a slot map block was asked for: its usable size (from the
 * chunk header) less the slack its slot records. */
static inline uint64_t slot_size(uintptr_t p, uint8_t slot)
{
    uint64_t usable = heap_glibc_usable(p), slack = slot & HEAP_SLOT_SLACK;
    return usable > slack ? usable - slack : 0;
}

/* Table block i reached (word w points into it). */
static void reach_table(marker *m, long i)
{
    if (i < 0 || (m->b[i].mark & MARK_REACHED))
        return;
    m->b[i].mark |= MARK_REACHED;
    gran *g = gran_at(m, m->b[i].addr);
    if (g) {
        size_t k = (m->b[i].addr - g->base) >> 4;
        g->marks[k >> 6] |= UINT64_C(1) << (k & 63);
    }
    push(m, m->b[i].addr, m->b[i].size);
}

/* Word w points at or after slot map block k of g: it reaches it when it
 * lies inside (and is not glibc's pointer to the next chunk). */
static void settle(marker *m, gran *g, size_t k, uintptr_t w)
{
    uint64_t mask = UINT64_C(1) << (k & 63);
    if (g->marks[k >> 6] & mask)
        return; /* reached meanwhile */
    uintptr_t s = g->base + k * 16;
    uint64_t chunk = ((const uint64_t *)s)[-1] & ~(uint64_t)7, size = slot_size(s, slot_at(g, k));
    if (w >= s + (size ? size : 1))
        return;
    /* glibc's pointer to the next chunk (an arena's top, a free list)
     * points into this block's last word: it is not the block's */
    if (w - s == chunk - 16)
        return;
    g->marks[k >> 6] |= mask;
    push(m, s, size);
}

/* The oldest block waiting for its chunk header. */
static void settle_next(marker *m)
{
    ahead *e = &m->ahead[m->ahead_head];
    m->ahead_head = (m->ahead_head + 1) % AHEAD;
    m->ahead_n--;
    settle(m, e->g, e->slot, e->w);
}

/* The block of granule g starting at slot k holds w, or w points into
 * the gap after it. A slot map block waits in the queue while its chunk
 * header is fetched: one cache miss per block otherwise dominates the
 * mark. */
static void reach_slot(marker *m, gran *g, size_t k, uintptr_t w)
{
    if (g->marks[k >> 6] & (UINT64_C(1) << (k & 63)))
        return; /* marked already */
    if (slot_at(g, k) == HEAP_SLOT_TABLE) {
        reach_table(m, find_block(m, w));
        return;
    }
    uintptr_t s = g->base + k * 16;
    __builtin_prefetch((const void *)(s - 8));  /* the chunk's size */
    __builtin_prefetch((const void *)(s + 16)); /* the first words */
    if (m->ahead_n == AHEAD)
        settle_next(m);
    m->ahead[(m->ahead_head + m->ahead_n) % AHEAD] = (ahead){g, k, w};
    m->ahead_n++;
}

/* The highest non-zero byte of x (little-endian: byte i is bits 8i..8i+7). */
static inline size_t top_byte(uint64_t x)
{
    return (size_t)(63 - __builtin_clzll(x)) / 8;
}

/* Word w as a pointer into granule g's blocks: false when no block of g
 * starts at or below it within the largest block's reach. */
static bool consider_gran(marker *m, gran *g, uintptr_t w)
{
    size_t k = (w - g->base) >> 4, wi = k >> 3;
    if (wi < g->wlo)
        return false;
    uint64_t x;
    if (wi >= g->whi) {
        wi = g->whi - 1;
        x = slot_word(g, wi);
    } else {
        x = slot_word(g, wi) & (~UINT64_C(0) >> (8 * (7 - (k & 7))));
    }
    size_t floor_k = k > g->max_slots ? k - g->max_slots : 0;
    size_t floor_w = floor_k >> 3 > g->wlo ? floor_k >> 3 : g->wlo;
    while (!x) {
        if (wi <= floor_w)
            return false;
        x = slot_word(g, --wi);
    }
    size_t start = wi * 8 + top_byte(x);
    if (start < floor_k)
        return false;
    reach_slot(m, g, start, w);
    return true;
}

/* Word w as a pointer, its slot map line fetched. */
static void consider_now(marker *m, uintptr_t w)
{
    gran *g = gran_at(m, w);
    if (g && consider_gran(m, g, w))
        return;
    /* a block that began in the granule before and reaches into this one */
    uintptr_t from = w & ~(uintptr_t)(HEAP_GRAN_BYTES - 1);
    gran *prev = from ? gran_at(m, from - 1) : NULL;
    if (prev && w < prev->last_end) {
        reach_slot(m, prev, (prev->last - prev->base) >> 4, w);
        return;
    }
    if (m->n)
        reach_table(m, find_block(m, w));
}

/* Word w as a pointer: it waits in the queue while the line of the slot
 * map it falls in is fetched (the map is a sixteenth of the heap: it
 * does not stay in cache either). */
static void consider(marker *m, uintptr_t w)
{
    gran *g = gran_at(m, w);
    if (g)
        __builtin_prefetch((const void *)&g->slots[(w - g->base) >> 4]);
    if (m->words_n == AHEAD) {
        uintptr_t old = m->words[m->words_head];
        m->words_head = (m->words_head + 1) % AHEAD;
        m->words_n--;
        consider_now(m, old);
    }
    m->words[(m->words_head + m->words_n) % AHEAD] = w;
    m->words_n++;
}

static void scan_words(marker *m, uintptr_t lo, uintptr_t hi)
{
    lo = (lo + 7) & ~(uintptr_t)7;
    for (uintptr_t p = lo; p + 8 <= hi; p += 8) {
        uintptr_t w = *(const uintptr_t *)p;
        if (w >= m->alo && w < m->ahi)
            consider(m, w);
    }
    m->scanned += hi > lo ? hi - lo : 0;
}

/* Scans [lo, hi), skipping pages never touched when the range is large. */
static void scan_range(marker *m, uintptr_t lo, uintptr_t hi)
{
    if (hi <= lo)
        return;
    if (hi - lo < PAGEMAP_FROM || m->pagemap < 0) {
        scan_words(m, lo, hi);
        return;
    }
    uintptr_t page = 4096;
    uint64_t ent[512];
    for (uintptr_t a = lo & ~(page - 1); a < hi; a += 512 * page) {
        size_t pages = (hi - a + page - 1) / page;
        if (pages > 512)
            pages = 512;
        ssize_t got = pread(m->pagemap, ent, pages * 8, (off_t)(a / page * 8));
        if (got != (ssize_t)(pages * 8)) {
            scan_words(m, a < lo ? lo : a, hi < a + pages * page ? hi : a + pages * page);
            continue;
        }
        for (size_t k = 0; k < pages; k++) {
            if (!(ent[k] & (3ull << 62))) /* neither present nor swapped: zeros */
                continue;
            uintptr_t s = a + k * page, e = s + page;
            scan_words(m, s < lo ? lo : s, e > hi ? hi : e);
        }
    }
}

static void drain(marker *m)
{
    for (;;) {
        while (m->stack.n) {
            pending e = ((pending *)m->stack.p)[--m->stack.n];
            scan_words(m, e.addr, e.addr + e.size);
        }
        if (m->words_n) {
            uintptr_t w = m->words[m->words_head];
            m->words_head = (m->words_head + 1) % AHEAD;
            m->words_n--;
            consider_now(m, w);
        } else if (m->ahead_n) {
            settle_next(m);
        } else {
            break;
        }
    }
}

static int by_start(const void *a, const void *b)
{
    const range *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* An in-place sort of ranges (insertion sort: a few hundred of them), no
 * allocation. */
static void sort_ranges(range *r, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        range t = r[i];
        size_t j = i;
        while (j > 0 && by_start(&r[j - 1], &t) > 0) {
            r[j] = r[j - 1];
            j--;
        }
        r[j] = t;
    }
}

/* Scans [lo, hi) minus the sorted excluded ranges. */
static void scan_except(marker *m, uintptr_t lo, uintptr_t hi, const range *ex, size_t n_ex)
{
    for (size_t i = 0; i < n_ex && lo < hi; i++) {
        if (ex[i].end <= lo)
            continue;
        if (ex[i].start >= hi)
            break;
        if (ex[i].start > lo)
            scan_range(m, lo, ex[i].start);
        if (ex[i].end > lo)
            lo = ex[i].end;
    }
    if (lo < hi)
        scan_range(m, lo, hi);
}

static bool contains(const mapping *mp, uintptr_t a)
{
    return a >= mp->start && a < mp->end;
}

/* ---- the blocks ---- */

/* The granules heap.c saw: their maps' extent, the table's blocks that lie
 * in them (their slots hold HEAP_SLOT_TABLE until unmark_table), the
 * highest block of each. */
static bool find_blocks(marker *m)
{
    heap_gran *hg;
    m->ng = heap_gran_map ? heap_granules(&hg) : 0;
    if (!m->ng)
        return true;
    m->g = heap_map(m->ng * sizeof(gran));
    m->bm = heap_map(m->ng * MARK_WORDS * sizeof(uint64_t));
    if (!m->g || !m->bm)
        return false;
    for (size_t i = 0; i < m->ng; i++) {
        gran *g = &m->g[i];
        *g = (gran){.base = hg[i].base, .slots = hg[i].slots, .marks = m->bm + i * MARK_WORDS,
                    .wlo = HEAP_GRAN_SLOTS / 8, .non_main = hg[i].non_main};
        g->max_slots = atomic_load(&hg[i].max_size) / 16 + 2;
        const size_t page_words = 4096 / 8, pages = HEAP_GRAN_SLOTS / 4096;
        uint64_t ent[256];
        for (size_t pg = 0; pg < pages; pg++) {
            /* pages of the map never touched hold no block */
            if (m->pagemap >= 0 && pg % 256 == 0 &&
                pread(m->pagemap, ent, sizeof(ent), (off_t)(((uintptr_t)g->slots / 4096 + pg) * 8)) != sizeof(ent))
                memset(ent, 0xff, sizeof(ent));
            if (m->pagemap >= 0 && !(ent[pg % 256] & (3ull << 62)))
                continue;
            for (size_t w = pg * page_words; w < (pg + 1) * page_words; w++) {
                uint64_t x = slot_word(g, w);
                if (!x)
                    continue;
                if (w < g->wlo)
                    g->wlo = w;
                g->whi = w + 1;
                m->sblocks += (uint64_t)__builtin_popcountll(x & UINT64_C(0x8080808080808080));
            }
        }
    }
    for (size_t i = 0; i < m->n; i++) {
        gran *g = gran_at(m, m->b[i].addr);
        if (!g)
            continue;
        size_t k = (m->b[i].addr - g->base) >> 4, wi = k >> 3;
        if (slot_at(g, k))
            continue; /* cannot be: a block is in one place */
        atomic_store_explicit(&g->slots[k], HEAP_SLOT_TABLE, memory_order_relaxed);
        m->b[i].mark |= MARK_SLOT;
        if (wi < g->wlo)
            g->wlo = wi;
        if (wi + 1 > g->whi)
            g->whi = wi + 1;
        if (m->b[i].size / 16 + 2 > g->max_slots)
            g->max_slots = m->b[i].size / 16 + 2;
    }
    for (size_t i = 0; i < m->ng; i++) {
        gran *g = &m->g[i];
        if (g->wlo >= g->whi) {
            g->marks = NULL; /* no blocks: nothing to look up */
            continue;
        }
        size_t k = (g->whi - 1) * 8 + top_byte(slot_word(g, g->whi - 1));
        uint8_t v = slot_at(g, k);
        g->last = g->base + k * 16;
        if (v == HEAP_SLOT_TABLE) {
            long j = find_block(m, g->last);
            g->last_end = g->last + (j >= 0 && m->b[j].size ? m->b[j].size : 1);
        } else {
            uint64_t size = slot_size(g->last, v);
            g->last_end = g->last + (size ? size : 1);
        }
        if (g->base + g->wlo * 8 * 16 < m->alo)
            m->alo = g->base + g->wlo * 8 * 16;
        if (g->last_end > m->ahi)
            m->ahi = g->last_end;
    }
    return true;
}

/* The table blocks' slots back to 0, before the world resumes. */
static void unmark_table(marker *m)
{
    for (size_t i = 0; i < m->n; i++) {
        gran *g = m->b[i].mark & MARK_SLOT ? gran_at(m, m->b[i].addr) : NULL;
        if (g)
            atomic_store_explicit(&g->slots[(m->b[i].addr - g->base) >> 4], 0, memory_order_relaxed);
        m->b[i].mark &= ~MARK_SLOT;
    }
}

/* The allocator's own memory, from glibc's chunk headers: the arena of
 * each non-main-arena chunk, and the mapping of each mmap-ed one. */
static void glibc_excludes(marker *m, vec *ex)
{
    uintptr_t last_heap = 0;
    for (size_t i = 0; i < m->n; i++) {
        uintptr_t p = m->b[i].addr;
        uint64_t sz = ((const uint64_t *)p)[-1];
        if (!(sz & 2) && (sz & ~(uint64_t)7) >= 32)
            m->b[i].next_chunk = (sz & ~(uint64_t)7) - 16;
        if (sz & 2) { /* IS_MMAPPED: prev_size is the offset into the mapping */
            uintptr_t chunk = p - 16;
            uint64_t pre = ((const uint64_t *)chunk)[0];
            range r = {chunk - pre, chunk + (sz & ~(uint64_t)7)};
            vec_push(ex, &r);
        } else if (sz & 4) { /* NON_MAIN_ARENA: heap_for_ptr */
            uintptr_t heap = p & ~(uintptr_t)(GLIBC_HEAP_MAX - 1);
            if (heap != last_heap) {
                range r = {heap, heap + GLIBC_HEAP_MAX};
                vec_push(ex, &r);
                last_heap = heap;
            }
        }
    }
    for (size_t i = 0; i < m->ng; i++)
        if (m->g[i].non_main)
            vec_push(ex, &(range){m->g[i].base, m->g[i].base + HEAP_GRAN_BYTES});
}

/* The blocks nothing reached, sorted, into out (mmap-ed). */
static size_t collect_leaked(marker *m, heap_block **out, size_t *ret_cap)
{
    const uint64_t live = UINT64_C(0x8080808080808080);
    size_t n = 0;
    for (size_t i = 0; i < m->ng; i++) {
        const gran *g = &m->g[i];
        for (size_t w = g->marks ? g->wlo : 0; g->marks && w < g->whi; w++) {
            uint64_t x = slot_word(g, w) & live;
            for (; x; x &= x - 1) {
                size_t k = w * 8 + (size_t)__builtin_ctzll(x) / 8;
                n += !(g->marks[k >> 6] & (UINT64_C(1) << (k & 63)));
            }
        }
    }
    for (size_t i = 0; i < m->n; i++)
        n += !(m->b[i].mark & MARK_REACHED);
    *out = NULL;
    *ret_cap = n + 1;
    heap_block *b = heap_map(*ret_cap * sizeof(*b));
    if (!b)
        return 0;
    size_t k = 0;
    for (size_t i = 0; i < m->ng; i++) {
        const gran *g = &m->g[i];
        for (size_t w = g->marks ? g->wlo : 0; g->marks && w < g->whi; w++) {
            uint64_t x = slot_word(g, w) & live;
            for (; x && k < n; x &= x - 1) {
                size_t s = w * 8 + (size_t)__builtin_ctzll(x) / 8;
                if (g->marks[s >> 6] & (UINT64_C(1) << (s & 63)))
                    continue;
                uintptr_t p = g->base + s * 16;
                uint64_t chunk = ((const uint64_t *)p)[-1] & ~(uint64_t)7;
                b[k++] = (heap_block){p, slot_size(p, slot_at(g, s)), 0, 0, chunk - 16};
            }
        }
    }
    for (size_t i = 0; i < m->n && k < n; i++)
        if (!(m->b[i].mark & MARK_REACHED))
            b[k++] = m->b[i], b[k - 1].mark = 0;
    if (k)
        sort_blocks(b, k);
    *out = b;
    return k;
}

/* The bounds find_block needs, and its page index, over m->b. */
static void index_blocks(marker *m)
{
    m->lo = m->n ? m->b[0].addr : 0;
    m->hi = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->b[i].addr + (m->b[i].size ? m->b[i].size : 1) > m->hi)
            m->hi = m->b[i].addr + (m->b[i].size ? m->b[i].size : 1);
    if (m->n && !index_pages(m))
        m->pages = NULL; /* binary search over all blocks then */
}

/* ---- grouping and records ---- */

typedef struct group {
    uint32_t stack;
    uint64_t count, bytes, sampled;
} group;

static uint32_t uf_find(uint32_t *parent, uint32_t i)
{
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

static int by_bytes(const void *a, const void *b)
{
    const group *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

/* leak[] lists the unmarked block indexes; owner[k] gets the stack each
 * is reported under (0: none known). A leaked block is put with the
 * nearest sampled leaked block (pointer hops, breadth first) that links
 * to it through blocks of its own size (a list of nodes), else through any
 * blocks; failing that, with a sampled block of its component (linked
 * either way: the nodes before the first sampled one). Same size first:
 * a leaked block's stale bytes can point anywhere. */
typedef struct attr {
    marker *m;
    const size_t *leak;
    size_t n;
    long *pos; /* block index → position in leak[], or -1 */
    uint32_t *owner, *parent;
    size_t *queue;
} attr;

/* The leaked block (position) word w points to, or -1. */
static inline long leaked_at(const attr *a, uintptr_t w, uint64_t same_size)
{
    if (w < a->m->lo || w >= a->m->hi)
        return -1;
    long j = find_block(a->m, w);
    if (j < 0 || a->pos[j] < 0 || (same_size && a->m->b[j].size != same_size))
        return -1;
    return a->pos[j];
}

static void spread(attr *a, bool same_size)
{
    size_t qh = 0, qt = 0;
    for (size_t k = 0; k < a->n; k++)
        if (a->owner[k])
            a->queue[qt++] = k;
    while (qh < qt) {
        size_t k = a->queue[qh++];
        const heap_block *b = &a->m->b[a->leak[k]];
        for (uintptr_t p = b->addr; p + 8 <= b->addr + b->size; p += 8) {
            long j = leaked_at(a, *(const uintptr_t *)p, same_size ? b->size : 0);
            if (j >= 0 && !a->owner[j]) {
                a->owner[j] = a->owner[k];
                a->queue[qt++] = (size_t)j;
            }
        }
    }
}

static void join_components(attr *a, bool same_size)
{
    for (size_t k = 0; k < a->n; k++)
        a->parent[k] = (uint32_t)k;
    for (size_t k = 0; k < a->n; k++) {
        const heap_block *b = &a->m->b[a->leak[k]];
        for (uintptr_t p = b->addr; p + 8 <= b->addr + b->size; p += 8) {
            long j = leaked_at(a, *(const uintptr_t *)p, same_size ? b->size : 0);
            if (j < 0)
                continue;
            uint32_t x = uf_find(a->parent, (uint32_t)k), y = uf_find(a->parent, (uint32_t)j);
            if (x != y)
                a->parent[x] = y;
        }
    }
    uint32_t *comp = (uint32_t *)a->queue; /* component root → a stack */
    for (size_t k = 0; k < a->n; k++)
        comp[k] = 0;
    for (size_t k = 0; k < a->n; k++)
        if (a->owner[k] && !comp[uf_find(a->parent, (uint32_t)k)])
            comp[uf_find(a->parent, (uint32_t)k)] = a->owner[k];
    for (size_t k = 0; k < a->n; k++)
        if (!a->owner[k])
            a->owner[k] = comp[uf_find(a->parent, (uint32_t)k)];
}

static bool all_owned(const attr *a)
{
    for (size_t k = 0; k < a->n; k++)
        if (!a->owner[k])
            return false;
    return true;
}

static void attribute(marker *m, const size_t *leak, size_t n, uint32_t *owner)
{
    attr a = {m, leak, n, malloc(m->n * sizeof(long)), owner, malloc(n * sizeof(uint32_t)),
              malloc(n * sizeof(size_t))};
    for (size_t k = 0; k < n; k++)
        owner[k] = m->b[leak[k]].stack;
    if (a.pos && a.parent && a.queue) {
        for (size_t i = 0; i < m->n; i++)
            a.pos[i] = -1;
        for (size_t k = 0; k < n; k++)
            a.pos[leak[k]] = (long)k;
        /* each pass only while some block has no stack yet */
        void (*const passes[])(attr *, bool) = {spread, join_components, spread, join_components};
        for (size_t p = 0; p < 4 && !all_owned(&a); p++)
            passes[p](&a, p < 2);
    }
    free(a.pos), free(a.parent), free(a.queue);
}

static void emit(pacer_t *own, const group *g, pacer_config *cfg)
{
    pacer_record *r = pacer_record_new(PACER_RECORD_LEAK);
    if (!r)
        return;
    char sig[17] = "0000000000000000";
    const char *known = g->stack ? leaks_known_native(cfg, g->stack) : NULL;
    if (g->stack)
        leakstack_signature(g->stack, sig);
    bool app = g->stack && !known && leakstack_in_app(g->stack);
    pacer_record_set_str(r, PACER_LEAK_KIND, "native");
    pacer_record_set_str(r, PACER_LEAK_SIGNATURE, sig);
    pacer_record_set_str(r, PACER_LEAK_ORIGIN, !g->stack ? "unknown" : app ? "app" : "library");
    pacer_record_set_str(r, PACER_LEAK_KNOWN_LEAK, known);
    pacer_record_set_int(r, PACER_LEAK_COUNT, (int64_t)g->count);
    pacer_record_set_int(r, PACER_LEAK_BYTES, (int64_t)g->bytes);
    pacer_record_set_int(r, PACER_LEAK_SAMPLED, (int64_t)g->sampled);
    if (g->stack)
        leakstack_add(r, PACER_LEAK_STACK, g->stack);
    if (own)
        pacer_submit_record(own, r);
    else
        agent_submit_record(r);
}

/* Where records go: the agent's instance, or (a program that is not GTK,
 * where the agent stays dormant) one of our own for the exit. */
static pacer_t *own_instance(void)
{
    if (agent_active() || pacer_default())
        return NULL;
    pacer_options o = {
        .app_name = getenv("PACER_APP") ? getenv("PACER_APP") : program_invocation_short_name,
        .app_version = getenv("PACER_APP_VERSION"),
        .out_path = getenv("PACER_OUT"),
        .session = getenv("PACER_SESSION"),
        .server_url = getenv("PACER_SERVER_URL"),
        .server_key = getenv("PACER_SERVER_KEY"),
        .spool_path = getenv("PACER_SPOOL"),
        .config_path = getenv("PACER_CONFIG"),
    };
    pacer_t *p = NULL;
    char *err = NULL;
    if (pacer_new(&o, &p, &err) < 0 && o.config_path) {
        free(err);
        err = NULL;
        o.config_path = NULL;
        pacer_new(&o, &p, &err);
    }
    if (!p)
        agent_note_once("heap-out", "native leaks cannot be written: %s", err ? err : "no output");
    free(err);
    return p;
}

static pacer_config *config_of(pacer_t *own)
{
    return own ? pacer_get_config(own) : agent_config();
}

static void report(marker *m, bool at_exit)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++)
        n += !(m->b[i].mark & (MARK_REACHED | MARK_REPORTED));
    pacer_t *own = NULL;
    if (at_exit || n)
        own = own_instance();
    if (n) {
        size_t *leak = malloc(n * sizeof(*leak));
        uint32_t *owner = malloc(n * sizeof(*owner));
        group *g = calloc(n + 1, sizeof(*g));
        if (leak && owner && g) {
            size_t k = 0;
            for (size_t i = 0; i < m->n; i++)
                if (!(m->b[i].mark & (MARK_REACHED | MARK_REPORTED)))
                    leak[k++] = i;
            attribute(m, leak, n, owner);
            size_t ng = 0;
            for (size_t k2 = 0; k2 < n; k2++) {
                size_t j = 0;
                while (j < ng && g[j].stack != owner[k2])
                    j++;
                if (j == ng)
                    g[ng++].stack = owner[k2];
                g[j].count++;
                g[j].bytes += m->b[leak[k2]].size;
                g[j].sampled += m->b[leak[k2]].stack == owner[k2] && owner[k2];
            }
            qsort(g, ng, sizeof(*g), by_bytes);
            pacer_config *cfg = config_of(own);
            for (size_t j = 0; j < ng; j++)
                if (!g[j].stack || !leakstack_is_agent(g[j].stack))
                    emit(own, &g[j], cfg);
            pacer_config_unref(cfg);
            for (size_t k2 = 0; k2 < n; k2++)
                m->b[leak[k2]].mark |= MARK_REPORTED;
        }
        free(leak), free(owner), free(g);
    }
    pacer_free(own);
}

/* Blocks reported by an earlier check (on demand), by address. */
static vec reported = {.elem = sizeof(uintptr_t)};

/* The leaked blocks reported now or before: the set the next check skips
 * (a block freed since drops out). */
static void note_reported(const marker *m)
{
    reported.n = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->b[i].mark & MARK_REPORTED)
            vec_push(&reported, &m->b[i].addr);
}

static int by_addr(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

static void apply_reported(marker *m)
{
    if (!reported.n)
        return;
    qsort(reported.p, reported.n, sizeof(uintptr_t), by_addr);
    for (size_t i = 0; i < m->n; i++)
        if (bsearch(&m->b[i].addr, reported.p, reported.n, sizeof(uintptr_t), by_addr))
            m->b[i].mark |= MARK_REPORTED;
}

/* The check on this thread, whose caller's frames begin at my_sp and
 * whose registers were regs[0..nregs). */
__attribute__((noinline)) static void check(bool at_exit, uintptr_t my_sp, const uintptr_t *regs, int nregs)
{
    int64_t t0 = now_ns(), t_stop = 0, t_resume = 0;
    heap_self.depth++; /* our own allocations until the stop: tracked, never sampled */
    pid_t self = gettid_raw();
    marker m = {.stack = {.elem = sizeof(pending)}, .pagemap = -1};
    marker lm = {.stack = {.elem = sizeof(pending)}, .pagemap = -1}; /* the leaked blocks */
    vec maps = {.elem = sizeof(mapping)}, modules = {.elem = sizeof(range)}, ex = {.elem = sizeof(range)};
    heap_block *blocks = NULL;
    size_t cap = 0, leaked_cap = 0;
    char *maps_text = NULL;
    if (!slots)
        slots = heap_map(MAX_THREADS * sizeof(*slots));
    if (!slots || !choose_signal()) {
        agent_note_once("heap-mark", "native leaks cannot be checked here (no signal or memory for the mark)");
        goto out;
    }
    dl_iterate_phdr(collect_module, &modules);
    m.pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

    maps_text = heap_map(MAPS_TEXT);
    if (!maps_text) {
        agent_note_once("heap-mark", "native leaks cannot be checked here (no memory for the mark)");
        goto out;
    }
    size_t unanswered = 0;
    size_t parked = stop_world(self, &unanswered);
    t_stop = now_ns();
    read_maps(&maps, maps_text);
    /* the table's blocks, sorted */
    heap_lock_all();
    for (int tries = 0; tries < 4; tries++) {
        size_t need = heap_live_blocks() + 1024;
        if (need > cap) {
            retire(blocks, cap * sizeof(*blocks));
            cap = need + need / 4;
            blocks = heap_map(cap * sizeof(*blocks));
            if (!blocks) {
                cap = 0;
                break;
            }
        }
        m.n = heap_snapshot(blocks, cap);
        if (m.n <= cap)
            break;
    }
    bool fail = !blocks || m.n > cap;
    m.b = blocks;
    if (!fail && m.n)
        sort_blocks(m.b, m.n);
    if (!fail)
        index_blocks(&m);
    m.alo = m.n ? m.lo : UINTPTR_MAX; /* every block's bounds: find_blocks widens them */
    m.ahi = m.n ? m.hi : 0;

    /* the slot maps' blocks */
    if (!fail && !find_blocks(&m))
        fail = true;
    if (fail) {
        unmark_table(&m);
        heap_unlock_all();
        resume_world();
        agent_note_once("heap-mark", "native leaks cannot be checked here (no memory for the mark)");
        goto out;
    }

    /* what is not a root: everything we mapped so far (nothing we map is
     * unmapped before the check ends), the allocator's memory */
    heap_region own[1100];
    size_t n_own = heap_own_regions(own, 1100);
    for (size_t i = 0; i < n_own; i++)
        vec_push(&ex, &(range){own[i].start, own[i].end});
    const mapping *mp = maps.p;
    if (heap_allocator_is_glibc())
        glibc_excludes(&m, &ex);
    else
        for (size_t i = 0; i < m.n; i++)
            vec_push(&ex, &(range){m.b[i].addr, m.b[i].addr + m.b[i].size});
    const heap_thread_seen *seen;
    size_t n_seen = heap_threads_seen(&seen);
    pid_t live[MAX_THREADS];
    size_t n_live = list_threads(live, MAX_THREADS);
    for (size_t i = 0; i < maps.n; i++) {
        bool has_live = contains(&mp[i], my_sp);
        for (size_t s = 0; s < n_slots && !has_live; s++)
            has_live = atomic_load(&slots[s].state) == SLOT_PARKED && contains(&mp[i], slots[s].sp);
        if (has_live)
            continue;
        bool dead = false;
        uintptr_t tcb = mp[i].end;
        for (size_t s = 0; s < n_seen && !dead; s++) {
            if (!contains(&mp[i], seen[s].sp))
                continue;
            bool alive = false;
            for (size_t t = 0; t < n_live && !alive; t++)
                alive = live[t] == seen[s].tid;
            dead = !alive;
            if (dead && contains(&mp[i], seen[s].tp))
                tcb = seen[s].tp; /* glibc's descriptor at the top stays: its cache reuses it (and its DTV) */
        }
        if (dead)
            vec_push(&ex, &(range){mp[i].start, tcb});
        else if (strncmp(mp[i].name, "[heap]", 6) == 0)
            vec_push(&ex, &(range){mp[i].start, mp[i].end});
    }
    sort_ranges(ex.p, ex.n);

    /* the roots */
    for (size_t i = 0; i < maps.n; i++) {
        const mapping *x = &mp[i];
        if (x->perms[0] != 'r' || x->perms[1] != 'w' || x->perms[3] != 'p' || x->inode != 0)
            continue;
        if (x->name[0] == '[' && strncmp(x->name, "[heap]", 6) != 0 && strncmp(x->name, "[stack", 6) != 0 &&
            strncmp(x->name, "[anon", 5) != 0)
            continue; /* [vvar], [vsyscall], [vdso] */
        if (x->name[0] == '/')
            continue; /* /dev/zero and the like */
        /* a stack from its lowest live stack pointer (less the red zone) */
        uintptr_t from = UINTPTR_MAX;
        if (contains(x, my_sp))
            from = my_sp;
        for (size_t s = 0; s < n_slots; s++)
            if (atomic_load(&slots[s].state) == SLOT_PARKED && contains(x, slots[s].sp) &&
                slots[s].sp - RED_ZONE < from)
                from = slots[s].sp - RED_ZONE;
        if (from == UINTPTR_MAX || from < x->start)
            from = x->start;
        scan_except(&m, from, x->end, ex.p, ex.n);
        drain(&m);
    }
    for (size_t i = 0; i < modules.n; i++) {
        const range *r = &((range *)modules.p)[i];
        /* our own bookkeeping sits in mmap-ed memory, not in our data */
        scan_except(&m, r->start, r->end, ex.p, ex.n);
        drain(&m);
    }
    for (int k = 0; k < nregs; k++)
        if (regs[k] >= m.alo && regs[k] < m.ahi)
            consider(&m, regs[k]);
    drain(&m);
    for (size_t s = 0; s < n_slots; s++) {
        if (atomic_load(&slots[s].state) != SLOT_PARKED)
            continue;
        for (int k = 0; k < slots[s].nregs; k++)
            if (slots[s].regs[k] >= m.alo && slots[s].regs[k] < m.ahi)
                consider(&m, slots[s].regs[k]);
        drain(&m);
    }
    /* what nothing reached, read while no block can be freed */
    lm.n = collect_leaked(&m, &lm.b, &leaked_cap);
    unmark_table(&m);
    heap_unlock_all();
    resume_world();
    t_resume = now_ns();
    heap_self.depth--;

    if (unanswered)
        agent_note_once("heap-unanswered", "%zu thread(s) did not stop for the leak check (they block signals); "
                                           "their registers were not scanned", unanswered);
    if (getenv("PACER_LEAKS_DEBUG")) {
        size_t sampled = 0;
        for (size_t i = 0; i < m.n; i++)
            sampled += m.b[i].stack != 0;
        size_t total = (size_t)m.sblocks + m.n;
        fprintf(stderr, "pacer-agent: leak check: %zu blocks (%zu sampled, %zu in slot maps), %zu reached, %llu bytes "
                        "of roots and blocks scanned, %zu threads stopped (%zu not), %zu excluded ranges, %zu modules\n",
                total, sampled, (size_t)m.sblocks, total - lm.n, (unsigned long long)m.scanned, parked, unanswered,
                ex.n, modules.n);
    }
    index_blocks(&lm);
    apply_reported(&lm);
    report(&lm, at_exit);
    heap_self.depth++;
    note_reported(&lm);
    if (getenv("PACER_LEAKS_DEBUG"))
        fprintf(stderr, "pacer-agent: leak check: %.1f ms to stop, %.1f ms stopped, %.1f ms to report\n",
                (double)(t_stop - t0) / 1e6, (double)(t_resume - t_stop) / 1e6, (double)(now_ns() - t_resume) / 1e6);
    heap_unmap(maps_text, MAPS_TEXT);
    maps_text = NULL;
out:
    heap_unmap(maps_text, maps_text ? MAPS_TEXT : 0);
    if (m.pagemap >= 0)
        close(m.pagemap);
    vec_free(&m.stack);
    vec_free(&maps);
    vec_free(&modules);
    vec_free(&ex);
    retire(blocks, cap * sizeof(*blocks));
    retire(m.pages, m.page_cap * sizeof(uint64_t));
    retire(m.page_first, m.page_cap * sizeof(uint32_t));
    retire(m.g, m.ng * sizeof(gran));
    retire(m.bm, m.ng * MARK_WORDS * sizeof(uint64_t));
    retire(lm.b, leaked_cap * sizeof(heap_block));
    retire(lm.pages, lm.page_cap * sizeof(uint64_t));
    retire(lm.page_first, lm.page_cap * sizeof(uint32_t));
    bury();
    heap_self.depth--;
}

void heap_check(bool at_exit)
{
    if (atomic_exchange(&checking, true))
        return;
    /* The roots of this thread are its caller's frames and registers: the
     * check's own frames (below this one) hold its own pointers and stale
     * values of earlier calls, never the app's. */
    ucontext_t uc;
    uintptr_t regs[MAX_REGS];
    int nregs = 0;
    if (getcontext(&uc) == 0) {
#if defined(__x86_64__)
        for (int i = 0; i < NGREG && nregs < MAX_REGS; i++)
            regs[nregs++] = (uintptr_t)uc.uc_mcontext.gregs[i];
#elif defined(__aarch64__)
        for (int i = 0; i < 31 && nregs < MAX_REGS; i++)
            regs[nregs++] = (uintptr_t)uc.uc_mcontext.regs[i];
#endif
    }
    check(at_exit, (uintptr_t)__builtin_frame_address(0), regs, nregs);
    atomic_store(&checking, false);
}
