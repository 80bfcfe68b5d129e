/* pacer bench: a private X display (Xvfb) for runs on a machine without
 * one, as in most CI jobs. The server is started with -displayfd, so it
 * picks a free display number itself and no other X server is touched;
 * it listens on no TCP port.
 */
#ifndef PACER_CLI_BENCH_DISPLAY_H
#define PACER_CLI_BENCH_DISPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct bench_display {
    pid_t pid;     /* the Xvfb process; 0 when none was started */
    char name[40]; /* ":N" */
} bench_display;

/* Starts Xvfb, in a session of its own at niceness `nice` when nice_set
 * (bench_own_session), and waits (at most 30 s) until it names its
 * display. 0, or -1 with the reason in err (Xvfb missing: how to install
 * it). */
int bench_display_start(bench_display *d, bool nice_set, int nice, char *err, size_t err_len);

/* Stops the server (SIGTERM, then SIGKILL after 5 s) and reaps it.
 * Accepts a display that was never started. */
void bench_display_stop(bench_display *d);

#endif
