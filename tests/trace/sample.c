/* A traced program with a known call structure (tests/trace/test_trace.py
 * holds the expected tree). Built with -finstrument-functions.
 *
 *   main
 *     recurse(5) -> recurse(4) -> ... -> recurse(0)       recursion
 *     loop -> leaf x LEAF_CALLS                            many small calls
 *     lib_work -> lib_inner x 2                            shared library
 *     interrupted -> on_alarm -> leaf                      async signal handler
 *     jumper -> deep1 -> deep2 (longjmp back to jumper)    longjmp
 *     jumper -> after_jump
 *     spawn: threads worker-1, worker-2: worker -> leaf x WORKER_CALLS
 *   argv[1] == "exit": main -> finish -> exit(3) inside a call
 *   argv[1] == "kill": main -> finish -> raise(SIGTERM) inside a call
 *   argv[1] == "storm": only main -> storm: leaf in a loop while a 20 us
 *                       timer's handler (on_tick -> leaf) lands anywhere,
 *                       inside the hooks too, until it ran STORM_TICKS
 *                       times; prints "leaf=N ticks=M", the calls made
 */
#include "sample_lib.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define LEAF_CALLS 1000
#define STORM_TICKS 3000
#define WORKER_CALLS 100
#define NOINL __attribute__((noinline, noclone))

static volatile int sink;
static volatile sig_atomic_t alarmed;
static jmp_buf jump_env;

NOINL static void leaf(void)
{
    sink++;
}

NOINL static int recurse(int n)
{
    return n == 0 ? 0 : 1 + recurse(n - 1);
}

NOINL static void loop(void)
{
    for (int i = 0; i < LEAF_CALLS; i++)
        leaf();
}

NOINL static void on_alarm(int sig)
{
    (void)sig;
    leaf();
    alarmed = 1;
}

/* Spins without calling anything traced until the timer's handler ran, so
 * the handler is exactly one child of this function. */
NOINL static void interrupted(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 0}, {0, 2000}};
    setitimer(ITIMER_REAL, &it, NULL);
    while (!alarmed)
        sink++;
}

NOINL static void deep2(void)
{
    longjmp(jump_env, 1);
}

NOINL static void deep1(void)
{
    deep2();
    sink++;
}

NOINL static void after_jump(void)
{
    sink++;
}

NOINL static void jumper(void)
{
    if (setjmp(jump_env) == 0)
        deep1();
    else
        after_jump();
}

NOINL static void *worker(void *arg)
{
    pthread_setname_np(pthread_self(), (const char *)arg);
    for (int i = 0; i < WORKER_CALLS; i++)
        leaf();
    return NULL;
}

NOINL static void spawn(void)
{
    pthread_t t[2];
    pthread_create(&t[0], NULL, worker, "worker-1");
    pthread_create(&t[1], NULL, worker, "worker-2");
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
}

static volatile sig_atomic_t ticks;

NOINL static void on_tick(int sig)
{
    (void)sig;
    leaf();
    ticks++;
}

NOINL static void storm(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_tick;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 20}, {0, 20}};
    setitimer(ITIMER_REAL, &it, NULL);
    unsigned long n = 0;
    while (ticks < STORM_TICKS) {
        leaf();
        n++;
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("leaf=%lu ticks=%d\n", n, (int)ticks);
}

NOINL static void finish(const char *how)
{
    if (strcmp(how, "exit") == 0)
        exit(3);
    if (strcmp(how, "kill") == 0)
        raise(SIGTERM);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "storm") == 0) {
        storm();
        return 0;
    }
    recurse(5);
    loop();
    sink += lib_work(2);
    interrupted();
    jumper();
    spawn();
    if (argc > 1)
        finish(argv[1]);
    return 0;
}
