/* Threads of pacer's own (thread.h). */
#include <pacer/base/clock.h>
#include <pacer/base/thread.h>

#include <errno.h>
#include <signal.h>

int thread_start(pthread_t *ret, const char *name, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int r = pthread_create(ret, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0)
        return -r;
    if (name)
        pthread_setname_np(*ret, name);
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
