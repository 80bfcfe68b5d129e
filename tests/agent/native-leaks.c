/* native-leaks: a plain C program (no GTK) with exactly three leaks, the
 * ground truth of test_native_leaks.py:
 *
 *   native_leak_direct   one block of DIRECT_BYTES, its pointer dropped;
 *   native_leak_list     a linked list of LIST_NODES nodes of NODE_BYTES
 *                        each, its head dropped (only the first node is
 *                        pointed to by nothing; the rest by their
 *                        predecessor);
 *   native_leak_thread   a thread that allocates THREAD_BYTES, drops the
 *                        pointer and ends.
 *
 * And memory that is not leaked, each kind a root the mark must see:
 * CHURN allocations of mixed sizes freed again (malloc, calloc, realloc,
 * posix_memalign, aligned_alloc, strdup), blocks kept in a global array, a
 * block only another kept block points to, a block in a thread-local
 * variable, and a block only the stack of a thread still blocked at exit
 * (in read) points to.
 *
 * --churn N changes CHURN (the benchmark runs it with more); --no-leaks
 * frees the three instead of losing them; --fork also forks a child that
 * allocates, leaks and exits through exit() (its atexit handlers run), and
 * execs a shell; --check-early asks for a leak check (pacer_leaks_check,
 * found with dlsym: the program does not link pacer) right after the
 * direct leak. Prints nothing; exits 0.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DIRECT_BYTES 100000
#define LIST_NODES 20000
#define NODE_BYTES 200
#define THREAD_BYTES 80000
#define KEPT 1000

struct node {
    struct node *next;
    char payload[NODE_BYTES - sizeof(struct node *)];
};

void *kept[KEPT]; /* not static: the compiler must keep the stores */
static __thread void *tls_block;
static int blocker_pipe[2];
static int no_leaks, do_fork, check_early;
static volatile unsigned long sink;

__attribute__((noinline)) static void native_leak_direct(void)
{
    char *volatile p = malloc(DIRECT_BYTES);
    memset(p, 1, DIRECT_BYTES);
    sink += (unsigned char)p[DIRECT_BYTES / 2];
    if (no_leaks)
        free(p);
}

__attribute__((noinline)) static struct node *list_push(struct node *head, int i)
{
    struct node *n = malloc(sizeof(*n));
    n->next = head;
    memset(n->payload, i & 0xff, sizeof(n->payload));
    return n;
}

__attribute__((noinline)) static void native_leak_list(void)
{
    struct node *head = NULL;
    for (int i = 0; i < LIST_NODES; i++)
        head = list_push(head, i);
    sink += (unsigned long)head->payload[0];
    while (no_leaks && head) {
        struct node *next = head->next;
        free(head);
        head = next;
    }
}

__attribute__((noinline)) static void *native_leak_thread(void *arg)
{
    char *p = malloc(THREAD_BYTES);
    memset(p, 2, THREAD_BYTES);
    sink += (unsigned char)p[1];
    if (no_leaks)
        free(p);
    return arg;
}

/* Blocked in read until the process exits, holding a block on its stack. */
static void *blocker(void *arg)
{
    char *volatile mine = malloc(4096);
    memset(mine, 3, 4096);
    char c;
    while (read(blocker_pipe[0], &c, 1) < 0)
        ;
    sink += (unsigned char)mine[0];
    return arg;
}

__attribute__((noinline)) static void churn(long n)
{
    void *live[64] = {0};
    unsigned x = 12345;
    for (long i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        size_t size = 8 + (x >> 8) % 2048;
        int slot = (int)((x >> 20) % 64);
        free(live[slot]);
        void *p = NULL;
        switch (i % 6) {
        case 0: p = malloc(size); break;
        case 1: p = calloc(1, size); break;
        case 2: p = realloc(malloc(16), size); break;
        case 3: if (posix_memalign(&p, 64, size) != 0) p = NULL; break;
        case 4: p = aligned_alloc(32, (size + 31) & ~(size_t)31); break;
        case 5: p = strdup("a string that is freed again"); break;
        }
        if (p)
            memset(p, 0, 8);
        live[slot] = p;
    }
    for (int i = 0; i < 64; i++)
        free(live[i]);
    free(malloc(1 << 20)); /* a large block, mmap-ed and freed */
}

int main(int argc, char **argv)
{
    long churn_n = 200000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--churn") == 0 && i + 1 < argc)
            churn_n = atol(argv[++i]);
        else if (strcmp(argv[i], "--no-leaks") == 0)
            no_leaks = 1;
        else if (strcmp(argv[i], "--fork") == 0)
            do_fork = 1;
        else if (strcmp(argv[i], "--check-early") == 0)
            check_early = 1;
    }
    for (int i = 1; i < KEPT; i++)
        kept[i] = malloc(32 + i % 200);
    void **inner = malloc(sizeof(void *)); /* reachable through kept[0] only */
    *inner = malloc(5000);
    kept[0] = inner;
    tls_block = malloc(3000);

    churn(churn_n / 2);
    native_leak_direct();
    if (check_early) {
        void (*check)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "pacer_leaks_check");
        if (check)
            check();
    }
    if (do_fork) {
        pid_t child = fork();
        if (child == 0) {
            sink += (unsigned long)malloc(12345); /* the child's leak: not reported */
            exit(0);
        }
        waitpid(child, NULL, 0);
        if (system("true") != 0)
            return 1;
    }
    native_leak_list();
    pthread_t t;
    pthread_create(&t, NULL, native_leak_thread, NULL);
    pthread_join(t, NULL);
    if (pipe(blocker_pipe) == 0) {
        pthread_t b;
        pthread_create(&b, NULL, blocker, NULL);
        pthread_detach(b);
    }
    churn(churn_n / 2);
    usleep(20000); /* the blocker is in read by now */
    sink += (unsigned long)tls_block + (unsigned long)kept[KEPT - 1];
    return 0;
}
