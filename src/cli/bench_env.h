/* pacer bench: what it notes about the machine, so that a baseline says
 * where it was taken and a run says how busy the machine was meanwhile.
 * Everything comes from /proc and /sys; a figure that cannot be read is
 * NAN (or NULL), never a guess.
 */
#ifndef PACER_CLI_BENCH_ENV_H
#define PACER_CLI_BENCH_ENV_H

#include "bench_samples.h"

#include <stdbool.h>
#include <sys/types.h>

/* Fills the CPU model, the CPU count, the kernel release, pacer's version
 * and this process's niceness (which the runs inherit) into env. 0 or
 * -ENOMEM. */
int bench_env_probe(bench_env *env);

/* The mean clock of the online CPUs now, in MHz: cpufreq's
 * scaling_cur_freq when the kernel has it, else /proc/cpuinfo's "cpu MHz"
 * (which a VM may report as a constant). NAN when neither is there. */
double bench_cpu_mhz(void);

/* The 1-minute load average; NAN when unknown. */
double bench_load1(void);

/* CPU time of the whole machine so far (/proc/stat, clock ticks). */
typedef struct bench_cpu_times {
    unsigned long long busy, total;
    bool ok;
} bench_cpu_times;

bench_cpu_times bench_cpu_times_now(void);

/* CPUs other processes kept busy between a and b, on average: the
 * machine's busy share times its CPU count, less the CPU time of the
 * measured program and of pacer's own processes (own_cpu_ms: pacer bench
 * and its Xvfb) over wall_ms. NAN when unknown; never below 0. */
double bench_background(bench_cpu_times a, bench_cpu_times b, long cpus, double own_cpu_ms, double wall_ms);

/* User + system CPU time of process pid so far (/proc/PID/stat), in ms;
 * NAN when it cannot be read. pid 0: this process. */
double bench_proc_cpu_ms(pid_t pid);

/* For a child pacer bench starts (the program, its Xvfb), before it execs:
 * a session of its own (setsid), and so, where the kernel groups
 * processes by session for scheduling (autogroup), a group of its own;
 * with set, that group's and the process's niceness become `nice`. A
 * niceness below 0 needs root or CAP_SYS_NICE. 0, or -errno of the step
 * that failed. */
int bench_own_session(bool set, int nice);

/* Whether bench_own_session(true, nice) works here: tried in a child. 0,
 * or the -errno it met. */
int bench_nice_probe(int nice);

/* The GTK 4 version process pid has loaded, read from the file name of the
 * libgtk-4.so.1.* it maps (GTK names it 1.(100·minor).micro): a malloc'd
 * "4.8.3", or NULL (no GTK 4 in it, or the process is gone). */
char *bench_gtk_version(pid_t pid);

#endif
