/* Threads of pacer's own (thread.h). */
#include <pacer/base/clock.h>
#include <pacer/base/thread.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct thread_start_args {
    void *(*fn)(void *);
    void *arg;
    char name[16];
} thread_start_args;

/* The new thread names itself: naming another thread opens, writes and
 * closes /proc/self/task/TID/comm, three system calls on the caller's
 * thread (an app's main thread, for the agent); one's own name is one
 * prctl. */
static void *run_named(void *p)
{
    thread_start_args a = *(thread_start_args *)p;
    free(p);
    if (a.name[0])
        pthread_setname_np(pthread_self(), a.name);
    return a.fn(a.arg);
}

int thread_start(pthread_t *ret, const char *name, void *(*fn)(void *), void *arg)
{
    thread_start_args *a = malloc(sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->fn = fn;
    a->arg = arg;
    snprintf(a->name, sizeof(a->name), "%s", name ? name : "");
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int r = pthread_create(ret, NULL, run_named, a);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0) {
        free(a);
        return -r;
    }
    return 0;
}

void cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

int cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ns)
{
    struct timespec ts = ns_to_timespec(deadline_ns < 0 ? 0 : deadline_ns);
    int r = pthread_cond_timedwait(cv, mu, &ts);
    return r == ETIMEDOUT ? ETIMEDOUT : 0;
}
