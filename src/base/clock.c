/* Clocks (clock.h). */
#include <pacer/base/clock.h>

#include <errno.h>

static int64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t mono_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

int64_t wall_ns(void)
{
    return clock_ns(CLOCK_REALTIME);
}

void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}
