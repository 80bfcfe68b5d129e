/* bench-stall: a program without a toolkit whose main loop waits in poll
 * (the agent's loop monitor sees each wait), for bench/agent/profile.py.
 *
 *   bench-stall idle MS        MS of a light loop: 2 ms of work, then a
 *                              10 ms wait, again and again (no jank)
 *   bench-stall stalls K MS    K iterations of MS each, the first half busy,
 *                              the second asleep (usleep), 200 ms apart
 *
 * At the end it prints one line per thread of the process: "thread NAME
 * cpu_ns=N" (the kernel's time on a CPU, /proc/self/task/TID/schedstat),
 * then "iterations=I".
 */
#include <dirent.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static __attribute__((noinline)) void busy(int64_t ns)
{
    int64_t end = now_ns() + ns;
    volatile unsigned x = 0;
    while (now_ns() < end)
        x++;
}

static __attribute__((noinline)) void stall(int ms)
{
    busy((int64_t)ms / 2 * 1000000);
    usleep((useconds_t)(ms - ms / 2) * 1000);
}

static void print_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[64] = "?";
        unsigned long long cpu = 0;
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fgets(comm, sizeof(comm), f))
                comm[strcspn(comm, "\n")] = '\0';
            fclose(f);
        }
        snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", e->d_name);
        f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%llu", &cpu) != 1)
                cpu = 0;
            fclose(f);
        }
        printf("thread %s cpu_ns=%llu\n", comm, cpu);
    }
    if (d)
        closedir(d);
}

int main(int argc, char **argv)
{
    unsigned long iterations = 0;
    if (argc == 3 && strcmp(argv[1], "idle") == 0) {
        int64_t end = now_ns() + (int64_t)atoi(argv[2]) * 1000000;
        while (now_ns() < end) {
            busy(2000000);
            poll(NULL, 0, 10);
            iterations++;
        }
    } else if (argc == 4 && strcmp(argv[1], "stalls") == 0) {
        int k = atoi(argv[2]), ms = atoi(argv[3]);
        for (int i = 0; i < k; i++) {
            poll(NULL, 0, 200);
            stall(ms);
            iterations++;
        }
        poll(NULL, 0, 200);
    } else {
        fprintf(stderr, "usage: bench-stall idle MS | stalls K MS\n");
        return 2;
    }
    print_threads();
    printf("iterations=%lu\n", iterations);
    return 0;
}
