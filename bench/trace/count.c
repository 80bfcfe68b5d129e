/* A counting hook: the calls a -finstrument-functions program makes,
 * counted with nothing of pacer's, to check the calls a trace holds.
 * Preloaded; per-thread counters, summed when each thread ends and at
 * exit, written as "enters=N exits=M" to $COUNT_OUT (or stderr). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static __thread unsigned long enters, exits;
static unsigned long total_enters, total_exits; /* atomic */
static pthread_key_t key;

void __cyg_profile_func_enter(void *fn, void *site);
void __cyg_profile_func_exit(void *fn, void *site);

void __cyg_profile_func_enter(void *fn, void *site)
{
    (void)fn, (void)site;
    if (!enters++)
        pthread_setspecific(key, &enters); /* so that the thread's end adds it */
}

void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)fn, (void)site;
    exits++;
}

static void add(void)
{
    __atomic_add_fetch(&total_enters, enters, __ATOMIC_RELAXED);
    __atomic_add_fetch(&total_exits, exits, __ATOMIC_RELAXED);
    enters = exits = 0;
}

static void thread_end(void *arg)
{
    (void)arg;
    add();
}

__attribute__((constructor)) static void start(void)
{
    pthread_key_create(&key, thread_end);
}

__attribute__((destructor)) static void done(void)
{
    add();
    const char *path = getenv("COUNT_OUT");
    FILE *out = path ? fopen(path, "w") : stderr;
    if (!out)
        return;
    fprintf(out, "enters=%lu exits=%lu\n", total_enters, total_exits);
    if (path)
        fclose(out);
}
