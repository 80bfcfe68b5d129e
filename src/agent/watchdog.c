/* The watchdog thread (DESIGN §3.3): notices a main-loop iteration that has
 * been busy for jank_ms, has the main thread's stack taken while it is
 * still stuck, and writes one `jank` record per long iteration when it
 * ends.
 *
 * Each round (the thread never touches the toolkit):
 *   1. every second: thresholds from the config in force
 *      (pacer_get_config: a config swapped in by the uploader applies live);
 *      the jank threshold is passed on to the main thread's hook;
 *   2. long iterations that ended (mainloop_take_long) become records; the
 *      one whose stack was captured gets it (matched by its start time),
 *      others say why they have none (stack_status);
 *   3. if the iteration running now has been busy ≥ jank_ms and its stack
 *      was not taken yet: stack_capture() (signal, copy, unwind) and keep
 *      the stack until the iteration ends;
 *   4. profiles (profile.c): once the running iteration has been busy for
 *      the profile threshold, a sample of its stack every interval until
 *      it ends; the samples go with its record, or are forgotten when it
 *      ended below jank_ms;
 *   5. sleep until the running iteration would reach jank_ms or its next
 *      sample, or half the threshold (10..250 ms; at most three quarters of
 *      the profile threshold) when the loop is idle. An iteration is seen
 *      busy at least once before it reaches the threshold, so its stack is
 *      taken within a few ms of it. Once the loop has waited through
 *      rounds for QUIET_NS (no iteration began), the thread instead sleeps
 *      until the next iteration begins — the main thread wakes it as it
 *      leaves that wait — or the next config read: an idle app pays no
 *      periodic wakes but one a second.
 *
 * The record waits for the iteration's end so that it carries the whole
 * duration; an iteration still stuck at exit is written by watchdog_stop
 * with `ongoing`. A process killed while stuck loses that record.
 *
 * Signals: the thread blocks every signal, so process-directed signals go
 * to the app's threads as before the agent.
 */
#include "agent.h"

#include <pacer/base/clock.h>
#include <pacer/base/thread.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#define CAPTURE_TIMEOUT_MS 200
#define QUIET_NS 200000000LL /* the loop waited this long: sleep until it iterates */

static pthread_t thread;
static bool started;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;
static bool stopping;
static _Atomic bool stop_sleeping; /* stopping, for the sleep outside mu */

static int64_t jank_ns = (int64_t)PACER_DEFAULT_JANK_MS * 1000000;
static int64_t hang_ns = (int64_t)PACER_DEFAULT_HANG_MS * 1000000;

/* The captured iteration: its start, its stack and the page then. */
static int64_t captured_start;
static stack_trace captured;
static const char *captured_status;
static const char *captured_method;
static const char *captured_page;

static void read_thresholds(void)
{
    pacer_config *cfg = agent_config();
    if (!cfg)
        return;
    int64_t j = (int64_t)pacer_config_jank_ms(cfg) * 1000000;
    int64_t h = (int64_t)pacer_config_hang_ms(cfg) * 1000000;
    pacer_config_unref(cfg);
    if (j <= 0)
        j = (int64_t)PACER_DEFAULT_JANK_MS * 1000000;
    if (h < j)
        h = j;
    jank_ns = j;
    hang_ns = h;
    mainloop_set_jank_ns(j);
}

static void report(const loop_span *s, bool ongoing)
{
    bool mine = captured_start && s->start == captured_start;
    static stack_trace sampled;
    const char *sampled_method;
    if (!mine && profile_last(s->start, &sampled, &sampled_method)) {
        /* it ended while the watchdog was taking a sample of it: that
         * sample, taken while it was stuck, is its stack */
        jank_emit(s, hang_ns, &sampled, "captured", sampled_method, agent_visible_page(), ongoing);
        return;
    }
    jank_emit(s, hang_ns, mine && captured.n ? &captured : NULL, mine ? captured_status : "missed",
              mine ? captured_method : NULL, mine ? captured_page : agent_visible_page(), ongoing);
    if (mine)
        captured_start = 0;
}

static void capture(int64_t start)
{
    captured_start = start;
    captured_page = agent_visible_page();
    captured.n = 0;
    int r = stack_capture(&captured, CAPTURE_TIMEOUT_MS, &captured_method);
    captured_status = r == 0 ? "captured" : r == -EAGAIN ? "no_answer" : "unavailable";
}

static void *run(void *arg)
{
    (void)arg;
    int64_t next_config = 0;
    uint64_t lost_said = 0;
    uint64_t seen_iterations = 0;
    int64_t quiet_since = mono_ns(); /* no iteration began since */
    pthread_mutex_lock(&mu);
    while (!stopping) {
        pthread_mutex_unlock(&mu);
        int64_t now = mono_ns();
        if (now >= next_config) {
            read_thresholds();
            next_config = now + 1000000000;
        }
        loop_span s;
        while (mainloop_take_long(&s))
            report(&s, false);
        if (mainloop_lost() != lost_said) {
            lost_said = mainloop_lost();
            agent_note_once("jank-lost", "long main-loop iterations came faster than they could be reported; "
                                         "some were dropped");
        }
        int64_t b = mainloop_busy_since();
        now = mono_ns();
        if (b && b != captured_start && now - b >= jank_ns) {
            capture(b);
            now = mono_ns();
        }
        /* profiles: an iteration that ended takes its samples along
         * (drained first), one still busy gets its next sample */
        if (profile_pending() && profile_pending() != b)
            while (mainloop_take_long(&s))
                report(&s, false);
        int64_t profile_wake = profile_round(b, now);
        now = mono_ns();
        int64_t idle = jank_ns / 2;
        int64_t after = profile_after_ns();
        if (after > 0 && idle > after * 3 / 4)
            idle = after * 3 / 4; /* an iteration is seen before `after`, then sampled from it on time */
        idle = idle < 10000000 ? 10000000 : idle > 250000000 ? 250000000 : idle;
        int64_t wake = now + idle;
        if (b && b != captured_start && b + jank_ns < wake)
            wake = b + jank_ns;
        if (profile_wake < wake)
            wake = profile_wake;
        uint64_t it = loop_iterations();
        if (b || it != seen_iterations) {
            seen_iterations = it;
            quiet_since = now;
        } else if (now - quiet_since >= QUIET_NS && profile_wake == INT64_MAX && !profile_pending()) {
            mainloop_sleep_while_waiting(next_config, &stop_sleeping);
            pthread_mutex_lock(&mu);
            continue;
        }
        pthread_mutex_lock(&mu);
        while (!stopping && cond_wait_until(&cond, &mu, wake) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

void watchdog_start(void)
{
    if (started)
        return;
    (void)stack_init(); /* without it, records are still written, without stacks (said once) */
    cond_init_monotonic(&cond);
    /* every signal blocked: process-directed signals go to the app's threads */
    if (thread_start(&thread, "pacer-watchdog", run, NULL) < 0) {
        agent_note_once("watchdog", "cannot start the watchdog thread; main-loop jank is not measured");
        return;
    }
    started = true;
}

void watchdog_stop(void)
{
    if (!started)
        return;
    started = false;
    pthread_mutex_lock(&mu);
    stopping = true;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&mu);
    atomic_store(&stop_sleeping, true);
    mainloop_wake_watcher();
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 1;
    if (pthread_timedjoin_np(thread, NULL, &deadline) != 0)
        return; /* busy unwinding: leave it, the process is ending */
    loop_span s;
    while (mainloop_take_long(&s))
        report(&s, false);
    int64_t b = mainloop_busy_since();
    if (b && b == captured_start) {
        s = (loop_span){b, mono_ns()};
        report(&s, true);
    }
}
