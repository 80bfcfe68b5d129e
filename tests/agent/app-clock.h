/* The test apps' own clock (CLOCK_MONOTONIC), and a busy loop of a known
 * length: the ground truth their records are checked against. Header
 * only, C and C++. */
#ifndef PACER_TESTS_APP_CLOCK_H
#define PACER_TESTS_APP_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t now_ms(void)
{
    return now_ns() / 1000000;
}

/* Spends `ms` of CPU in a loop: at least ms, to the nanosecond (a whole
 * millisecond's clock would end up to 1 ms early). */
static inline void busy(int ms)
{
    int64_t end = now_ns() + (int64_t)ms * 1000000;
    volatile unsigned x = 0;
    while (now_ns() < end)
        x = x + 1;
}

#endif
