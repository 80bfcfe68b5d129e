/* pacer bench: one measured run of a program.
 *
 * A run forks, sets the agent's environment in the child (launch.h) with a
 * records file of its own, and execs the program in a session (and process
 * group) of its own, at the --nice niceness (bench_own_session), its stdin
 * /dev/null and its output in a log file beside the records. The parent reads the records file as the agent writes it (the
 * writer flushes every 100 ms), every 20 ms, keeping the records of the
 * program's pid, until every --until condition holds; then it sends
 * SIGTERM to the group (the agent reports what is still pending at
 * SIGTERM), waits up to 5 s, and SIGKILLs what is left. A run fails when
 * the program exits before the conditions hold (or, with `exit`, with a
 * status other than 0), or when they do not hold within the timeout; the
 * message names the run, the condition and the end of the program's log.
 *
 * While it runs, the parent notes the machine's load (bench_env.h).
 * Single-threaded; one run at a time.
 */
#ifndef PACER_CLI_BENCH_RUNNER_H
#define PACER_CLI_BENCH_RUNNER_H

#include "bench_args.h"
#include "bench_samples.h"
#include "launch.h"

#include <signal.h>
#include <stdbool.h>

typedef struct bench_runner {
    launch_options launch; /* everything but `out`, which each run sets */
    const char *agent;     /* launch_check's path of the agent */
    const bench_until *until;
    size_t n_until;        /* 0: until the main page's record */
    int timeout_ms;
    const char *workdir;   /* where the runs' records and logs go */
    const char *display;   /* DISPLAY for the program, or NULL: as inherited */
    bool headless;         /* on a private display: the settings of a session without D-Bus */
    pid_t xvfb;            /* that display's server (its CPU time is pacer's, not background), or 0 */
    bool nice_set;         /* --nice: the runs' niceness */
    int nice;
    long cpus;
} bench_runner;

/* Set by the caller's SIGINT/SIGTERM/SIGHUP handler: the run in progress
 * stops its program and fails. */
extern volatile sig_atomic_t bench_interrupted;

/* Runs prog once, as the run called label (a file name: "a01"), and adds
 * it to set with its metrics and notes; the first run of a set that maps
 * GTK 4 notes its version in set->env.gtk. 0, or -1 when the run failed
 * (printed on stderr). */
int bench_runner_run(bench_runner *r, char **prog, const char *label, bench_set *set);

/* Removes the files run `label` left in the workdir. */
void bench_runner_clean(const bench_runner *r, const char *label);

/* A condition as the user wrote it, for messages, into buf. */
const char *bench_until_text(const bench_until *u, char *buf, size_t size);

#endif
