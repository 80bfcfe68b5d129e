/* Clocks: the monotonic scale every event uses, the wall clock of records,
 * and the process launch time (DESIGN §2, "Application constructor"). */
#include "clock.h"

#include <pacer/pacer.h>

#include <pacer/base/clock.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static __thread bool internal_thread;

void clock_mark_internal_thread(void)
{
    internal_thread = true;
}

PACER_API bool pacer_thread_is_internal(void)
{
    return internal_thread;
}

PACER_API int64_t pacer_now_ns(void)
{
    return mono_ns();
}

int parse_i64(const char *s, int64_t *ret)
{
    if (!s || !*s)
        return -EINVAL;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return -EINVAL;
    *ret = v;
    return 0;
}

/* Start time of this process from /proc/self/stat (field 22, clock ticks
 * since boot, on the CLOCK_BOOTTIME scale), converted to CLOCK_MONOTONIC by
 * subtracting its age from now. */
static int64_t proc_start_mono_ns(void)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* comm may hold spaces and parentheses: fields resume after the last ')' */
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    p++;
    /* after ')' come fields 3..; starttime is field 22 → 20th after ')' */
    unsigned long long start_ticks = 0;
    int field = 2;
    char *save = NULL;
    for (char *tok = strtok_r(p, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        field++;
        if (field == 22) {
            start_ticks = strtoull(tok, NULL, 10);
            break;
        }
    }
    long hz = sysconf(_SC_CLK_TCK);
    if (field != 22 || hz <= 0)
        return 0;
    int64_t start_boot = (int64_t)(start_ticks * (1000000000ULL / (unsigned long long)hz));
    int64_t now_boot = clock_ns(CLOCK_BOOTTIME);
    int64_t now_mono = mono_ns();
    int64_t age = now_boot - start_boot;
    if (age < 0)
        age = 0;
    return now_mono - age;
}

PACER_API int64_t pacer_launch_time_ns(void)
{
    int64_t v;
    if (parse_i64(getenv("PACER_LAUNCH_NS"), &v) == 0 && v > 0 && v <= pacer_now_ns())
        return v;
    return proc_start_mono_ns();
}
