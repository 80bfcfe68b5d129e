/* pacer bench: notes about the machine (bench_env.h). */
#include "bench_env.h"

#include <pacer/pacer.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

/* The value of the first "key : value" line of /proc/cpuinfo whose key is
 * `key`, into out; false when none. */
static bool cpuinfo_value(const char *key, char *out, size_t size)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return false;
    char line[512];
    bool found = false;
    size_t klen = strlen(key);
    while (!found && fgets(line, sizeof(line), f)) {
        if (strncmp(line, key, klen) != 0 || (line[klen] != '\t' && line[klen] != ' ' && line[klen] != ':'))
            continue;
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        v[strcspn(v, "\n")] = 0;
        snprintf(out, size, "%s", v);
        found = true;
    }
    fclose(f);
    return found;
}

int bench_env_probe(bench_env *env)
{
    char model[256] = "";
    if (!cpuinfo_value("model name", model, sizeof(model)))
        cpuinfo_value("Processor", model, sizeof(model)); /* some ARM kernels */
    struct utsname u;
    int r = 0;
    if (model[0])
        r |= bench_env_set(&env->cpu_model, model);
    if (uname(&u) == 0)
        r |= bench_env_set(&env->kernel, u.release);
    r |= bench_env_set(&env->pacer, PACER_VERSION);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    env->cpus = n > 0 ? n : 0;
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    env->nice = errno ? 0 : nice;
    return r < 0 ? -ENOMEM : 0;
}

double bench_cpu_mhz(void)
{
    double sum = 0;
    int n = 0;
    char path[96];
    for (int cpu = 0; cpu < 4096; cpu++) {
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq", cpu);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        unsigned long khz;
        if (fscanf(f, "%lu", &khz) == 1) {
            sum += (double)khz / 1000;
            n++;
        }
        fclose(f);
    }
    if (n)
        return sum / n;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return NAN;
    char line[256];
    while (fgets(line, sizeof(line), f)) {
        double mhz;
        if (strncmp(line, "cpu MHz", 7) == 0 && sscanf(strchr(line, ':') ? strchr(line, ':') + 1 : "", "%lf", &mhz) == 1) {
            sum += mhz;
            n++;
        }
    }
    fclose(f);
    return n ? sum / n : NAN;
}

double bench_load1(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f)
        return NAN;
    double l;
    int ok = fscanf(f, "%lf", &l);
    fclose(f);
    return ok == 1 ? l : NAN;
}

bench_cpu_times bench_cpu_times_now(void)
{
    bench_cpu_times t = {0};
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return t;
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                   &v[7]);
    fclose(f);
    if (n < 4)
        return t;
    for (int i = 0; i < 8; i++)
        t.total += v[i];
    t.busy = t.total - v[3] - v[4]; /* less idle and iowait */
    t.ok = true;
    return t;
}

double bench_background(bench_cpu_times a, bench_cpu_times b, long cpus, double own_cpu_ms, double wall_ms)
{
    if (!a.ok || !b.ok || b.total <= a.total || cpus <= 0 || !(wall_ms > 0))
        return NAN;
    double busy = (double)(b.busy - a.busy) / (double)(b.total - a.total) * (double)cpus;
    double own = isnan(own_cpu_ms) ? 0 : own_cpu_ms / wall_ms;
    double bg = busy - own;
    return bg > 0 ? bg : 0;
}

double bench_proc_cpu_ms(pid_t pid)
{
    char path[64];
    if (pid)
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    else
        snprintf(path, sizeof(path), "/proc/self/stat");
    FILE *f = fopen(path, "r");
    if (!f)
        return NAN;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    /* after the command, which is in parentheses and may hold anything */
    const char *p = strrchr(buf, ')');
    unsigned long utime, stime;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
        return NAN;
    long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? (double)(utime + stime) * 1000.0 / (double)hz : NAN;
}

int bench_own_session(bool set, int nice)
{
    if (setsid() < 0)
        return -errno;
    if (!set)
        return 0;
    if (setpriority(PRIO_PROCESS, 0, nice) < 0)
        return -errno;
    /* with autogroup scheduling the niceness of a process only ranks it
     * within its session: the session's group has a niceness of its own */
    int fd = open("/proc/self/autogroup", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    char text[16];
    int n = snprintf(text, sizeof(text), "%d", nice);
    int r = write(fd, text, (size_t)n) == n ? 0 : -errno;
    close(fd);
    return r;
}

int bench_nice_probe(int nice)
{
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0)
        _exit(-bench_own_session(true, nice) & 0xff);
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -ECHILD;
    return -WEXITSTATUS(status);
}

char *bench_gtk_version(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char line[4096];
    char *out = NULL;
    while (!out && fgets(line, sizeof(line), f)) {
        const char *lib = strstr(line, "/libgtk-4.so.1.");
        if (!lib)
            continue;
        unsigned long mid, last;
        char tail;
        if (sscanf(lib + strlen("/libgtk-4.so.1."), "%lu.%lu%c", &mid, &last, &tail) < 2)
            continue;
        char v[64];
        snprintf(v, sizeof(v), "4.%lu.%lu", mid / 100, mid % 100 + last);
        out = strdup(v);
    }
    fclose(f);
    return out;
}
