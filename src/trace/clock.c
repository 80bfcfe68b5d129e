/* Which clock the hooks read. The TSC costs one instruction and no syscall;
 * it is used only when it ticks at a constant rate in every power state and
 * on every core (CPUID "invariant TSC") and the kernel has not marked it
 * unstable (its clocksource is "tsc"). Otherwise CLOCK_MONOTONIC through the
 * vDSO. PACER_TRACE_CLOCK=monotonic|tsc overrides the choice. */
#include "runtime.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

PT_NOINSTR static bool cpu_has_invariant_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (__get_cpuid_max(0x80000000, NULL) < 0x80000007)
        return false;
    __cpuid(0x80000007, a, b, c, d);
    return (d >> 8) & 1;
#else
    return false;
#endif
}

/* True unless the kernel's current clocksource is readable and not "tsc". */
PT_NOINSTR static bool kernel_trusts_tsc(void)
{
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return true;
    char buf[32] = {0};
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return true;
    return strncmp(buf, "tsc", 3) == 0;
}

bool pt_clock_choose_tsc(void)
{
    const char *force = getenv("PACER_TRACE_CLOCK");
    bool have = cpu_has_invariant_tsc();
    if (force && strcmp(force, "monotonic") == 0)
        return false;
    if (force && strcmp(force, "tsc") == 0)
        return have || cpu_has_invariant_tsc();
    return have && kernel_trusts_tsc();
}
