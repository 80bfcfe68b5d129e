/* Clocks (base component: libc only). */
#ifndef PACER_BASE_CLOCK_H
#define PACER_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC now, in nanoseconds (through the vDSO: no system call). */
int64_t mono_ns(void);

/* CLOCK_REALTIME now, in nanoseconds since the epoch. */
int64_t wall_ns(void);

/* A nanosecond count as a timespec (for timed waits). */
static inline struct timespec ns_to_timespec(int64_t ns)
{
    return (struct timespec){.tv_sec = (time_t)(ns / 1000000000), .tv_nsec = (long)(ns % 1000000000)};
}

/* Sleeps ms milliseconds (resumed after signals). */
void sleep_ms(unsigned ms);

#endif
