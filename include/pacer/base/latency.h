/* A latency histogram with fixed bounds (1 ms to 10 s), as /metrics shows
 * it. Not thread-safe: its owner keeps it under a lock. */
#ifndef PACER_BASE_LATENCY_H
#define PACER_BASE_LATENCY_H

#include <stddef.h>
#include <stdint.h>

#define LATENCY_BUCKETS 14 /* the last one is +Inf */

typedef struct latency {
    uint64_t count;
    double sum_s;
    uint64_t buckets[LATENCY_BUCKETS]; /* not cumulative: bucket i holds (bound i-1, bound i] */
} latency;

/* The upper bound of bucket i (i < LATENCY_BUCKETS - 1), in seconds. */
static inline double latency_bound(size_t i)
{
    static const double bounds[LATENCY_BUCKETS - 1] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                       0.25,  0.5,    1,     2.5,  5,     10};
    return bounds[i];
}

static inline void latency_add(latency *l, int64_t ns)
{
    double s = (double)ns / 1e9;
    size_t i = 0;
    while (i < LATENCY_BUCKETS - 1 && s > latency_bound(i))
        i++;
    l->buckets[i]++;
    l->count++;
    l->sum_s += s;
}

#endif
