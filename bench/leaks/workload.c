/* workload: the program bench/leaks/heap.py runs plain, under
 * `pacer run --leaks=native` and under heaptrack, side by side. Work that
 * allocates as programs do: it makes N pseudo-random documents, splits each
 * into words (one strdup'd string per word), counts them in a hash table
 * (a node per new word, kept), ranks the document's 20 most frequent words
 * (an array, sorted, freed) and frees the document's words. At the end it
 * leaks what tests/agent/native-leaks.c leaks: one block of 100000 bytes,
 * a lost list of 20000 nodes of 200 bytes, and 80000 bytes in a thread.
 *   workload [DOCS]   (default 20000)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 65536

struct word {
    struct word *next;
    char *text;
    long count;
};

struct node {
    struct node *next;
    char payload[192];
};

static struct word *table[BUCKETS];
static volatile unsigned long sink;

static unsigned long hash(const char *s)
{
    unsigned long h = 5381;
    while (*s)
        h = h * 33 + (unsigned char)*s++;
    return h;
}

static void count(const char *w)
{
    unsigned long h = hash(w) % BUCKETS;
    for (struct word *x = table[h]; x; x = x->next)
        if (strcmp(x->text, w) == 0) {
            x->count++;
            return;
        }
    struct word *x = malloc(sizeof(*x));
    x->text = strdup(w);
    x->count = 1;
    x->next = table[h];
    table[h] = x;
}

static int by_count(const void *a, const void *b)
{
    const struct word *x = *(struct word *const *)a, *y = *(struct word *const *)b;
    return (y->count > x->count) - (y->count < x->count);
}

static void document(unsigned *seed)
{
    char *words[400];
    int n = 100 + (int)(*seed % 300);
    for (int i = 0; i < n; i++) {
        char buf[16];
        *seed = *seed * 1103515245u + 12345u;
        int len = 2 + (int)((*seed >> 16) % 9);
        unsigned v = *seed >> 8;
        for (int k = 0; k < len; k++, v = v * 7 + 13)
            buf[k] = (char)('a' + v % 13);
        buf[len] = '\0';
        words[i] = strdup(buf);
        count(words[i]);
    }
    struct word **rank = malloc(sizeof(*rank) * 64);
    int r = 0;
    for (int i = 0; i < n && r < 64; i++) {
        unsigned long h = hash(words[i]) % BUCKETS;
        for (struct word *x = table[h]; x; x = x->next)
            if (strcmp(x->text, words[i]) == 0) {
                rank[r++] = x;
                break;
            }
    }
    qsort(rank, (size_t)r, sizeof(*rank), by_count);
    sink += (unsigned long)rank[0]->count;
    free(rank);
    for (int i = 0; i < n; i++)
        free(words[i]);
}

__attribute__((noinline)) static void workload_leak_direct(void)
{
    char *volatile p = malloc(100000);
    memset(p, 1, 100000);
}

__attribute__((noinline)) static void workload_leak_list(void)
{
    struct node *head = NULL;
    for (int i = 0; i < 20000; i++) {
        struct node *n = malloc(sizeof(*n));
        n->next = head;
        memset(n->payload, i & 0xff, sizeof(n->payload));
        head = n;
    }
    sink += (unsigned long)head->payload[0];
}

__attribute__((noinline)) static void *workload_leak_thread(void *arg)
{
    char *volatile p = malloc(80000);
    memset(p, 2, 80000);
    return arg;
}

int main(int argc, char **argv)
{
    long docs = argc > 1 ? atol(argv[1]) : 20000;
    unsigned seed = 42;
    for (long i = 0; i < docs; i++)
        document(&seed);
    workload_leak_direct();
    workload_leak_list();
    pthread_t t;
    pthread_create(&t, NULL, workload_leak_thread, NULL);
    pthread_join(t, NULL);
    return 0;
}
