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
 *    by a parked thread. Threads that do not answer within a second (they
 *    block the signal) are not waited for: their stacks are scanned whole,
 *    their registers are not.
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
 *        memory (the brk heap, glibc's thread arenas found from the chunk
 *        headers of live blocks, and each mmap-ed chunk: what is there
 *        besides live blocks is freed memory, full of stale pointers), our
 *        own mappings (the table, the stacks), and the cached stacks of
 *        threads that ended (a registered thread's stack address whose tid
 *        is gone);
 *      File-backed mappings other than module segments, shared mappings
 *      (GPU and window buffers) and mappings without read and write access
 *      are not roots. Pages never touched (pagemap: neither present nor
 *      swapped) are skipped in large mappings.
 * 3. Mark: every aligned word of a root is a candidate pointer; one that
 *    falls inside a live block (interior pointers count, as in LSan) marks
 *    it, and marked blocks are scanned in turn (an explicit stack, no
 *    recursion).
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
 * arrays and an in-place heap sort.
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
static _Atomic int world_stopped;
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
    while (atomic_load(&world_stopped))
        futex_wait(&world_stopped, 1);
    atomic_store(&s->state, SLOT_RESUMED);
}

static void on_stop_signal(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    if (si->si_code != SI_TKILL || si->si_pid != getpid() || !atomic_load(&world_stopped))
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
    if (atomic_load(&world_stopped))
        park(NULL);
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

/* Stops every thread but this one. Returns how many parked. */
static size_t stop_world(pid_t self, size_t *ret_unanswered)
{
    n_slots = 0;
    atomic_store(&n_parked, 0);
    atomic_store(&world_stopped, 1);
    size_t sent = 0;
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
            if (syscall(SYS_tgkill, getpid(), tids[i], stop_sig) == 0) {
                sent++;
                fresh++;
            } else {
                atomic_store(&s->state, SLOT_FREE);
            }
        }
        if (!fresh && round > 0)
            break;
        while ((size_t)atomic_load(&n_parked) < sent && now_ns() < deadline)
            nap_us(200);
    }
    size_t parked = (size_t)atomic_load(&n_parked);
    *ret_unanswered = sent - parked;
    return parked;
}

static void resume_world(void)
{
    atomic_store(&world_stopped, 0);
    futex_wake(&world_stopped);
    int64_t deadline = now_ns() + STOP_TIMEOUT_NS;
    for (size_t i = 0; i < n_slots; i++) {
        while (atomic_load(&slots[i].state) == SLOT_PARKED && now_ns() < deadline)
            nap_us(100);
        /* a late deferred park sees world_stopped == 0 and returns */
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

typedef struct marker {
    heap_block *b;
    size_t n;
    uintptr_t lo, hi; /* lowest block start, highest block end */
    uint64_t *pages;  /* open addressing: page << 24 | (first block touching it, relative), 0 empty */
    uint32_t *page_first;
    size_t page_cap;
    vec stack;        /* of size_t */
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

enum { MARK_REACHED = 1u << 0, MARK_REPORTED = 1u << 1 };

static void consider(marker *m, uintptr_t w)
{
    long i = find_block(m, w);
    if (i < 0 || (m->b[i].mark & MARK_REACHED))
        return;
    m->b[i].mark |= MARK_REACHED;
    size_t idx = (size_t)i;
    vec_push(&m->stack, &idx);
}

static void scan_words(marker *m, uintptr_t lo, uintptr_t hi)
{
    lo = (lo + 7) & ~(uintptr_t)7;
    for (uintptr_t p = lo; p + 8 <= hi; p += 8) {
        uintptr_t w = *(const uintptr_t *)p;
        if (w >= m->lo && w < m->hi)
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
    while (m->stack.n) {
        size_t i = ((size_t *)m->stack.p)[--m->stack.n];
        scan_words(m, m->b[i].addr, m->b[i].addr + m->b[i].size);
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
static long leaked_at(const attr *a, uintptr_t w, uint64_t same_size)
{
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
        spread(&a, true);
        join_components(&a, true);
        spread(&a, false);
        join_components(&a, false);
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

static void note_reported(const marker *m)
{
    for (size_t i = 0; i < m->n; i++)
        if ((m->b[i].mark & MARK_REPORTED) && !(m->b[i].mark & MARK_REACHED))
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

void heap_check(bool at_exit)
{
    if (atomic_exchange(&checking, true))
        return;
    heap_self.depth++; /* our own allocations until the stop: tracked, never sampled */
    __builtin_unwind_init();
    uintptr_t my_sp = current_sp();
    pid_t self = gettid_raw();
    marker m = {.stack = {.elem = sizeof(size_t)}, .pagemap = -1};
    vec maps = {.elem = sizeof(mapping)}, modules = {.elem = sizeof(range)}, ex = {.elem = sizeof(range)};
    heap_block *blocks = NULL;
    size_t cap = 0;
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
    stop_world(self, &unanswered);
    read_maps(&maps, maps_text);
    /* the blocks, sorted */
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
    if (!blocks || m.n > cap) {
        heap_unlock_all();
        resume_world();
        agent_note_once("heap-mark", "native leaks cannot be checked here (no memory for the mark)");
        goto out;
    }
    m.b = blocks;
    if (m.n)
        sort_blocks(m.b, m.n);
    m.lo = m.n ? m.b[0].addr : 0;
    for (size_t i = 0; i < m.n; i++)
        if (m.b[i].addr + (m.b[i].size ? m.b[i].size : 1) > m.hi)
            m.hi = m.b[i].addr + (m.b[i].size ? m.b[i].size : 1);
    if (!index_pages(&m))
        m.pages = NULL; /* binary search over all blocks then */

    /* what is not a root: everything we mapped so far (nothing we map is
     * unmapped before the check ends) */
    heap_region own[1100];
    size_t n_own = heap_own_regions(own, 1100);
    for (size_t i = 0; i < n_own; i++)
        vec_push(&ex, &(range){own[i].start, own[i].end});
    if (heap_allocator_is_glibc())
        glibc_excludes(&m, &ex);
    else
        for (size_t i = 0; i < m.n; i++)
            vec_push(&ex, &(range){m.b[i].addr, m.b[i].addr + m.b[i].size});
    const mapping *mp = maps.p;
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
        for (size_t s = 0; s < n_seen && !dead; s++) {
            if (!contains(&mp[i], seen[s].sp))
                continue;
            bool alive = false;
            for (size_t t = 0; t < n_live && !alive; t++)
                alive = live[t] == seen[s].tid;
            dead = !alive;
        }
        if (dead || strncmp(mp[i].name, "[heap]", 6) == 0)
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
            from = my_sp - RED_ZONE;
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
    for (size_t s = 0; s < n_slots; s++) {
        if (atomic_load(&slots[s].state) != SLOT_PARKED)
            continue;
        for (int k = 0; k < slots[s].nregs; k++)
            if (slots[s].regs[k] >= m.lo && slots[s].regs[k] < m.hi)
                consider(&m, slots[s].regs[k]);
        drain(&m);
    }
    heap_unlock_all();
    resume_world();
    heap_self.depth--;

    if (unanswered)
        agent_note_once("heap-unanswered", "%zu thread(s) did not stop for the leak check (they block signals); "
                                           "their registers were not scanned", unanswered);
    if (getenv("PACER_LEAKS_DEBUG")) {
        size_t reached = 0, sampled = 0;
        for (size_t i = 0; i < m.n; i++)
            reached += (m.b[i].mark & MARK_REACHED) != 0, sampled += m.b[i].stack != 0;
        fprintf(stderr, "pacer-agent: leak check: %zu blocks (%zu sampled), %zu reached, %llu bytes of roots and "
                        "blocks scanned, %zu threads stopped, %zu excluded ranges, %zu modules\n",
                m.n, sampled, reached, (unsigned long long)m.scanned, n_slots, ex.n, modules.n);
    }
    apply_reported(&m);
    report(&m, at_exit);
    heap_self.depth++;
    note_reported(&m);
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
    bury();
    heap_self.depth--;
    atomic_store(&checking, false);
}
