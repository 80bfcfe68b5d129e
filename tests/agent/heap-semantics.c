/* heap-semantics: what a program sees of the malloc family, checked by the
 * program itself, for test_native_leaks.py to run plain and under
 * `pacer run --leaks=native` (the hooks must not change any of it):
 *
 *   - malloc: 16-byte alignment, malloc_usable_size at least the size asked
 *     for and all of it writable;
 *   - calloc: zeroed even where freed memory was dirty; overflow: NULL and
 *     ENOMEM;
 *   - realloc: contents kept growing and shrinking, realloc(NULL, n) is
 *     malloc, realloc(p, 0) frees and returns NULL (glibc), reallocarray
 *     overflow: NULL, ENOMEM, the block untouched;
 *   - posix_memalign, aligned_alloc, memalign, valloc, pvalloc: aligned,
 *     usable, reallocatable; posix_memalign of a bad alignment: EINVAL;
 *   - threads: THREADS threads allocate, reallocate and free, and hand
 *     blocks to each other to free, while the main thread asks for leak
 *     checks on demand (pacer_leaks_check, found with dlsym);
 *   - fork: a child allocates, frees and exits 0.
 * Everything is freed: a leak check must report nothing. Prints "ok" and
 * exits 0, or names the first broken promise and exits 1.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 4
#define OPS 100000
#define RING 256

static int failures;
/* Sizes the compiler cannot see, so it does not refuse the calls that must
 * fail. */
static volatile size_t huge = SIZE_MAX / 2;
static void *(*volatile realloc_array)(void *, size_t, size_t) = reallocarray;

#define CHECK(cond, ...)                                                                                   \
    do {                                                                                                   \
        if (!(cond)) {                                                                                     \
            if (!failures++) {                                                                             \
                fprintf(stderr, "heap-semantics: %s:%d: ", __FILE__, __LINE__);                            \
                fprintf(stderr, __VA_ARGS__);                                                              \
                fputc('\n', stderr);                                                                       \
            }                                                                                              \
        }                                                                                                  \
    } while (0)

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed + i * 31);
}

static int same(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(seed + i * 31))
            return 0;
    return 1;
}

static void check_malloc(void)
{
    static const size_t sizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 100, 200, 1000, 1023,
                                   1024, 1025, 4096, 65535, 65536, 100000, 131072, 1 << 20, 5 << 20};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k];
        unsigned char *p = malloc(n);
        CHECK(p, "malloc(%zu) failed", n);
        if (!p)
            continue;
        CHECK((uintptr_t)p % 16 == 0, "malloc(%zu) = %p: not 16-byte aligned", n, (void *)p);
        size_t u = malloc_usable_size(p);
        CHECK(u >= n, "malloc_usable_size(malloc(%zu)) = %zu", n, u);
        memset(p, 0xa5, u); /* all of it is the program's */
        free(p);
    }
    CHECK(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL) != 0");
    free(NULL);
}

static void check_calloc(void)
{
    for (size_t n = 1; n <= 4096; n = n * 3 + 1) {
        unsigned char *dirty = malloc(n);
        memset(dirty, 0xff, n);
        free(dirty);
        unsigned char *p = calloc(1, n);
        CHECK(p, "calloc(1, %zu) failed", n);
        for (size_t i = 0; p && i < n; i++)
            if (p[i]) {
                CHECK(0, "calloc(1, %zu): byte %zu is %d", n, i, p[i]);
                break;
            }
        free(p);
    }
    errno = 0;
    void *big = calloc(huge, 4);
    CHECK(!big && errno == ENOMEM, "calloc overflow: %p, errno %d", big, errno);
}

static void check_realloc(void)
{
    unsigned char *p = realloc(NULL, 40);
    CHECK(p, "realloc(NULL, 40) failed");
    fill(p, 40, 1);
    size_t steps[] = {80, 4000, 300000, 20, 3, 1 << 21, 64};
    size_t have = 40;
    for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
        unsigned char *q = realloc(p, steps[k]);
        CHECK(q, "realloc to %zu failed", steps[k]);
        if (!q)
            return;
        size_t keep = have < steps[k] ? have : steps[k];
        CHECK(same(q, keep, 1), "realloc %zu → %zu lost the contents", have, steps[k]);
        CHECK(malloc_usable_size(q) >= steps[k], "usable size after realloc to %zu", steps[k]);
        fill(q, steps[k], 1);
        p = q;
        have = steps[k];
    }
    errno = 0;
    void *r = realloc_array(p, huge, 4);
    CHECK(!r && errno == ENOMEM, "reallocarray overflow: %p, errno %d", r, errno);
    CHECK(same(p, have, 1), "reallocarray overflow touched the block");
    CHECK(realloc(p, 0) == NULL, "realloc(p, 0) did not return NULL");
}

static void check_aligned(void)
{
    for (size_t align = 16; align <= 8192; align *= 2) {
        size_t n = 3 * align + 5;
        void *p = NULL;
        CHECK(posix_memalign(&p, align, n) == 0 && p, "posix_memalign(%zu, %zu) failed", align, n);
        CHECK((uintptr_t)p % align == 0, "posix_memalign(%zu): %p", align, p);
        CHECK(malloc_usable_size(p) >= n, "posix_memalign(%zu): usable size", align);
        memset(p, 1, n);
        unsigned char *q = realloc(p, 2 * n);
        CHECK(q && q[n - 1] == 1, "realloc of a posix_memalign block");
        free(q);
        p = aligned_alloc(align, 2 * align);
        CHECK(p && (uintptr_t)p % align == 0, "aligned_alloc(%zu): %p", align, p);
        free(p);
        p = memalign(align, 100);
        CHECK(p && (uintptr_t)p % align == 0, "memalign(%zu): %p", align, p);
        free(p);
    }
    void *p = (void *)1;
    CHECK(posix_memalign(&p, 24, 100) == EINVAL && p == (void *)1, "posix_memalign(24) did not refuse");
    long page = sysconf(_SC_PAGESIZE);
    p = valloc(100);
    CHECK(p && (uintptr_t)p % (uintptr_t)page == 0, "valloc: %p", p);
    free(p);
    p = pvalloc(100);
    CHECK(p && (uintptr_t)p % (uintptr_t)page == 0 && malloc_usable_size(p) >= (size_t)page, "pvalloc: %p", p);
    free(p);
}

/* Blocks handed between threads: the next thread frees what this one
 * left in its slot. */
static _Atomic(void *) ring[THREADS][RING];
static _Atomic int running = THREADS;

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg, next = (me + 1) % THREADS;
    unsigned x = 2654435761u * (unsigned)(me + 1);
    void *mine[64] = {0};
    for (int i = 0; i < OPS; i++) {
        x = x * 1103515245u + 12345u;
        size_t n = 1 + (x >> 8) % (x & 1 ? 200 : 5000);
        int slot = (int)((x >> 20) % 64);
        switch ((x >> 4) % 4) {
        case 0:
            free(mine[slot]);
            mine[slot] = malloc(n);
            if (mine[slot])
                memset(mine[slot], me, n < 64 ? n : 64);
            break;
        case 1: {
            void *q = realloc(mine[slot], n);
            if (q)
                mine[slot] = q;
            break;
        }
        case 2: { /* give one away, free what was given */
            void *give = malloc(n);
            void *old = atomic_exchange(&ring[next][x % RING], give);
            free(old);
            break;
        }
        default:
            free(atomic_exchange(&ring[me][x % RING], NULL));
            break;
        }
    }
    for (int s = 0; s < 64; s++)
        free(mine[s]);
    atomic_fetch_sub(&running, 1);
    return NULL;
}

static void check_threads(void)
{
    void (*leak_check)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "pacer_leaks_check");
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0, "pthread_create");
    for (int k = 0; k < 3 && leak_check; k++) {
        usleep(20000);
        if (atomic_load(&running))
            leak_check(); /* while the workers allocate: nothing breaks, nothing is lost */
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++)
        for (int k = 0; k < RING; k++)
            free(atomic_exchange(&ring[i][k], NULL));
}

static void check_fork(void)
{
    void *before = malloc(1000);
    pid_t child = fork();
    if (child == 0) {
        void *p = malloc(5000);
        free(before); /* the parent's block, freed in the child */
        free(realloc(p, 10000));
        _exit(failures ? 1 : 0);
    }
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the forked child failed (status %d)", status);
    free(before);
}

int main(void)
{
    check_malloc();
    check_calloc();
    check_realloc();
    check_aligned();
    check_threads();
    check_fork();
    if (failures)
        return 1;
    puts("ok");
    return 0;
}
