/* Workers and admission (http_int.h).
 *
 * Admission is by waiting time, not by queue length alone: with W workers
 * all busy, a request admitted now would wait about ⌈(queued + 1) / W⌉
 * handler times (a moving average of what handlers took), and the oldest
 * queued request has already waited its age. A request is admitted while
 * both are at most max_wait; else it gets 429 with Retry-After: the
 * seconds the queue needs to drain. What is admitted can still meet a
 * longer wait than predicted (many bodies completing at once): a worker
 * answers such a request 429 without running it, so that no request that
 * is run has waited longer than max_wait.
 */
#include "http_int.h"

#include <pacer/base/clock.h>
#include <pacer/base/thread.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SERVICE_INIT_NS 10e6 /* before anything was measured: 10 ms */
#define SERVICE_ALPHA 0.2
#define RETRY_MAX_S 60

/* Called with the lock. */
static unsigned retry_after_s(const pool *p)
{
    double s = ceil((double)p->queued / (double)p->n_workers) * p->service_ns / 1e9;
    unsigned r = (unsigned)ceil(s);
    return r < 1 ? 1 : r > RETRY_MAX_S ? RETRY_MAX_S : r;
}

static void *worker_main(void *arg)
{
    pool *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->work, &p->lock);
        pool_item *it = p->head;
        if (!it)
            break; /* stopping, and nothing queued */
        p->head = it->next;
        if (!p->head)
            p->tail = NULL;
        p->queued--;
        int64_t now = mono_ns();
        int64_t waited = now - it->queued_ns;
        bool shed = p->stopping || waited > p->max_wait_ns;
        unsigned retry = p->stopping ? 5 : retry_after_s(p);
        if (!shed) {
            latency_add(&p->wait, waited);
            p->running++;
        }
        pthread_mutex_unlock(&p->lock);

        p->run(it, shed, retry);

        pthread_mutex_lock(&p->lock);
        if (!shed) {
            int64_t took = mono_ns() - now;
            latency_add(&p->handler, took);
            p->service_ns = p->service_ns * (1 - SERVICE_ALPHA) + (double)took * SERVICE_ALPHA;
            p->running--;
        }
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int http_pool_start(pool *p, size_t workers, unsigned max_wait_ms, size_t max_body_bytes, pool_run_fn run)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    cond_init_monotonic(&p->idle);
    p->n_workers = workers ? workers : 1;
    p->max_wait_ns = (int64_t)max_wait_ms * 1000000LL;
    p->max_body_bytes = max_body_bytes;
    p->service_ns = SERVICE_INIT_NS;
    p->run = run;
    p->threads = calloc(p->n_workers, sizeof *p->threads);
    if (!p->threads)
        return -ENOMEM;
    for (size_t i = 0; i < p->n_workers; i++) {
        int r = thread_start(&p->threads[i], "pacerd-worker", worker_main, p);
        if (r < 0) {
            http_pool_stop(p);
            return r;
        }
        p->started++;
    }
    return 0;
}

void http_pool_stop(pool *p)
{
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (size_t i = 0; i < p->started; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    p->threads = NULL;
    p->started = 0;
}

int http_pool_admit(pool *p, unsigned *ret_retry_s)
{
    pthread_mutex_lock(&p->lock);
    int64_t now = mono_ns();
    int64_t oldest = p->head ? now - p->head->queued_ns : 0;
    int64_t predicted = 0;
    if (p->running + p->queued >= p->n_workers)
        predicted = (int64_t)(ceil((double)(p->queued + 1) / (double)p->n_workers) * p->service_ns);
    int r = 0;
    if (predicted > p->max_wait_ns || oldest > p->max_wait_ns) {
        *ret_retry_s = retry_after_s(p);
        r = -EAGAIN;
    } else {
        p->admitted++;
    }
    pthread_mutex_unlock(&p->lock);
    return r;
}

void http_pool_unadmit(pool *p)
{
    pthread_mutex_lock(&p->lock);
    if (--p->admitted == 0)
        pthread_cond_broadcast(&p->idle);
    pthread_mutex_unlock(&p->lock);
}

bool http_pool_body_fits(pool *p, size_t n)
{
    pthread_mutex_lock(&p->lock);
    bool ok = p->body_bytes + n <= p->max_body_bytes;
    pthread_mutex_unlock(&p->lock);
    return ok;
}

bool http_pool_body_take(pool *p, size_t n)
{
    pthread_mutex_lock(&p->lock);
    bool ok = p->body_bytes + n <= p->max_body_bytes;
    if (ok)
        p->body_bytes += n;
    pthread_mutex_unlock(&p->lock);
    return ok;
}

void http_pool_body_give(pool *p, size_t n)
{
    if (!n)
        return;
    pthread_mutex_lock(&p->lock);
    p->body_bytes -= n;
    pthread_mutex_unlock(&p->lock);
}

void http_pool_push(pool *p, pool_item *it)
{
    it->next = NULL;
    it->queued_ns = mono_ns();
    pthread_mutex_lock(&p->lock);
    if (p->tail)
        p->tail->next = it;
    else
        p->head = it;
    p->tail = it;
    p->queued++;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->lock);
}

size_t http_pool_wait_idle(pool *p, int64_t deadline_ns)
{
    pthread_mutex_lock(&p->lock);
    while (p->admitted && cond_wait_until(&p->idle, &p->lock, deadline_ns) != ETIMEDOUT)
        ;
    size_t n = p->admitted;
    pthread_mutex_unlock(&p->lock);
    return n;
}
