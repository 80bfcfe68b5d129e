/* Cost of the agent's main-loop monitor per GMainContext iteration
 * (src/agent/loop_glib.c): iterations of a context with one always-ready
 * idle source, g_main_context_iteration(ctx, FALSE) in a loop, measured
 * side by side in alternating rounds:
 *
 *   plain     GLib's own poll function (g_poll)
 *   floor     an empty wrapper: a poll function that only calls g_poll
 *             (what any poll-function hook costs: one indirect call)
 * Run by loop.py twice in alternation: without the agent (g_poll = the
 * floor of GLib's own loop; empty wrapper = what any poll-function hook
 * costs) and under the agent, which wrapped the default context at main()
 * and keeps its monitor in front of whatever poll function is set (it
 * interposes g_main_context_set_poll_func). Prints the median of ROUNDS
 * rounds of N iterations per column.
 */
#include <gtk/gtk.h> /* linked so that the agent activates (it measures GTK 4 programs only) */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 15
#define N 200000

static gint floor_poll(GPollFD *fds, guint n, gint timeout)
{
    return g_poll(fds, n, timeout);
}

static gboolean idle(gpointer data)
{
    return G_SOURCE_CONTINUE;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double round_ns(GMainContext *ctx)
{
    double t0 = now();
    for (int i = 0; i < N; i++)
        g_main_context_iteration(ctx, FALSE);
    return (now() - t0) / N;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *label = argc > 1 ? argv[1] : "run";
    (void)gtk_get_major_version(); /* GTK is linked, never initialised: no display needed */
    GMainContext *ctx = g_main_context_default();
    g_idle_add(idle, NULL);
    double plain[ROUNDS], fl[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        g_main_context_set_poll_func(ctx, NULL);
        plain[r] = round_ns(ctx);
        g_main_context_set_poll_func(ctx, floor_poll);
        fl[r] = round_ns(ctx);
    }
    qsort(plain, ROUNDS, sizeof(double), cmp);
    qsort(fl, ROUNDS, sizeof(double), cmp);
    printf("%s: ns per iteration, median of %d rounds of %d: g_poll %.1f, empty wrapper %.1f\n", label, ROUNDS, N,
           plain[ROUNDS / 2], fl[ROUNDS / 2]);
    return 0;
}
