/* The call-heavy program of the trace benchmark: N calls of a tiny function,
 * timed from inside (CLOCK_MONOTONIC and the thread's CPU time around the
 * loop), so that start-up and the tracer's final flush are reported apart
 * from the per-call cost. Prints "loop_ns=<ns> loop_cpu_ns=<ns> calls=<N>".
 * Built with and without -finstrument-functions by run.py. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned sink;

__attribute__((noinline)) static unsigned step(unsigned x)
{
    __asm__ volatile("" ::: "memory");
    return x * 2654435761u + 1;
}

static unsigned long long now_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
    unsigned x = 1;
    unsigned long long t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    for (unsigned long i = 0; i < n; i++)
        x = step(x);
    unsigned long long t1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    sink = x;
    printf("loop_ns=%llu loop_cpu_ns=%llu calls=%lu\n", t1 - t0, c1 - c0, n);
    return 0;
}
