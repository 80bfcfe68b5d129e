/* Threads of pacer's own (base component: libc and pthreads only). */
#ifndef PACER_BASE_THREAD_H
#define PACER_BASE_THREAD_H

#include <pthread.h>
#include <stdint.h>

/* Starts a thread with every signal blocked, so that signals meant for the
 * application never land on it, and names it (at most 15 characters).
 * Returns 0 or a negative errno. */
int thread_start(pthread_t *ret, const char *name, void *(*fn)(void *), void *arg);

/* A condition variable timed against CLOCK_MONOTONIC. */
void cond_init_monotonic(pthread_cond_t *cv);

/* Waits on cv until signalled or until the monotonic time deadline_ns.
 * Returns 0 when signalled (or woken spuriously), ETIMEDOUT at the
 * deadline. */
int cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ns);

#endif
