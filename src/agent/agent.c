/* The agent's life cycle: whether to activate, the pacer instance, the
 * features and what happens at setup, at fork and at exit.
 *
 * States (agent_state):
 *   DORMANT  — the initial state, and the final one of every process that
 *              must not be measured. Hooks only forward to the real
 *              functions. Reasons: no PACER_OUT / PACER_RAW_EVENTS /
 *              PACER_SERVER_URL (nowhere to send records), or
 *              PACER_AGENT_DISABLE set, or not a GTK4 program (libgtk-4 not
 *              loaded at start, or a function of the toolkit missing), or an
 *              ancestor already claimed the run (PACER_AGENT_PID names
 *              another process: see below), or the pacer instance could not
 *              be created (said once on stderr).
 *   ACTIVE   — entered at the end of the constructor (agent_ctor).
 *   STOPPED  — entered at exit (agent_finish: from atexit, or from the exit
 *              thread when a signal ends the program, exit.c) or in the child of a fork
 *              (on_fork_child: the child has no writer thread and must not
 *              report the parent's pages a second time).
 *
 * Features: the table below is the whole life cycle. At setup (agent_setup:
 * main() entered, or the first window built before main()) each feature's
 * install runs once, in table order, on the GTK thread. At exit each stop
 * runs, then each flush, in reverse order, then pacer_shutdown() writes the
 * rest. Hooks that need no set-up (curl.c's, types.c's, pages.c's) are
 * always in place and check agent_active().
 *
 * Config: the core owns it (the local file, then what the server sends).
 * agent_config() hands out the one in force, so the page hooks measure what
 * the model measures, and a config that arrives from the server applies to
 * instances created after it.
 *
 * No double reporting across exec: the process that activates exports
 * PACER_AGENT_PID=<its pid>. A child it execs inherits LD_PRELOAD and loads
 * the agent, sees a pid that is not its own and stays dormant.
 *
 * Exit: atexit(agent_atexit) is registered from the constructor, before
 * main() registers anything, so it runs after the application's own atexit
 * handlers — also when exit() is called from inside a GTK signal handler.
 * Threads of the app that still call hooks meanwhile find the agent
 * STOPPED, and the core ignores late calls on the instance (its memory
 * stays allocated). A process killed by a signal loses at most the
 * writer's flush interval.
 */
#include "agent.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { DORMANT = 0, ACTIVE = 1, STOPPED = 2 };

__thread int agent_in_hook __attribute__((tls_model("initial-exec")));
_Atomic uint64_t agent_net_epoch;

static _Atomic int agent_state = DORMANT;
static pid_t owner_pid;
static pthread_t gtk_thread;
static bool quiet;
static _Atomic bool exiting; /* at exit: pending records are still taken */

typedef struct agent_feature {
    const char *name;
    void (*install)(void); /* at setup, GTK thread */
    void (*stop)(void);    /* at exit: stop producing */
    void (*flush)(void);   /* at exit, after every stop: write what is pending */
} agent_feature;

static const agent_feature features[] = {
    {"exit-signals", exit_signals_install, NULL, NULL},
    {"start", start_install, NULL, NULL},
    {"soup", soup_install, NULL, NULL},
    {"mainloop", mainloop_install, NULL, NULL},
    {"watchdog", watchdog_start, watchdog_stop, NULL},
    {"frames", NULL, NULL, frames_flush_all},
    {"leaks", leaks_install, heap_exit_check, NULL},
};
#define N_FEATURES (sizeof(features) / sizeof(features[0]))

bool agent_active(void)
{
    return atomic_load_explicit(&agent_state, memory_order_acquire) == ACTIVE;
}

bool agent_on_gtk_thread(void)
{
    return pthread_equal(pthread_self(), gtk_thread);
}

void agent_setup(void)
{
    static bool done;
    if (done || !agent_active() || !agent_on_gtk_thread())
        return;
    done = true;
    agent_in_hook++;
    for (size_t i = 0; i < N_FEATURES; i++)
        if (features[i].install)
            features[i].install();
    agent_in_hook--;
}

pacer_config *agent_config(void)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static pacer_config *cached;
    static uint64_t generation = UINT64_MAX;
    pacer_t *p = pacer_default();
    if (!p)
        return NULL;
    uint64_t g = pacer_config_generation(p);
    pthread_mutex_lock(&mu);
    if (!cached || g != generation) {
        pacer_config_unref(cached);
        cached = pacer_get_config(p);
        generation = g;
    }
    pacer_config *r = pacer_config_ref(cached);
    pthread_mutex_unlock(&mu);
    return r;
}

void agent_submit(const pacer_event *ev)
{
    if (!agent_active())
        return;
    pacer_t *p = pacer_default();
    if (p)
        pacer_submit(p, ev);
}

void agent_submit_record(pacer_record *rec)
{
    pacer_t *p = pacer_default();
    if (rec && p && (agent_active() || atomic_load(&exiting)))
        pacer_submit_record(p, rec);
    else
        pacer_record_free(rec);
}

void agent_note_once(const char *key, const char *fmt, ...)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static const char *said[32];
    static size_t n_said;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < n_said; i++) {
        if (said[i] == key || strcmp(said[i], key) == 0) {
            pthread_mutex_unlock(&mu);
            return;
        }
    }
    if (n_said < sizeof(said) / sizeof(said[0]))
        said[n_said++] = key;
    pthread_mutex_unlock(&mu);
    if (quiet)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "pacer-agent: %s\n", msg);
}

static void on_fork_child(void)
{
    atomic_store(&agent_state, STOPPED);
}

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* After the last upload attempt: what a user of --server must know. */
static void report_upload(void)
{
    pacer_stats st;
    pacer_get_stats(pacer_default(), &st);
    if (!env_nonempty("PACER_SERVER_URL"))
        return;
    if (st.records_rejected)
        agent_note_once("upload-rejected", "the server rejected %llu record(s): %s",
                        (unsigned long long)st.records_rejected,
                        st.upload_message[0] ? st.upload_message : "no reason given");
    if (st.batches_refused)
        agent_note_once("upload", "the server refused %llu batch(es) of records (HTTP %d); check the key "
                        "(--key) and the app name (--app) against the server's keys file",
                        (unsigned long long)st.batches_refused, st.upload_last_error);
    else if (st.upload_retries && !st.batches_sent)
        agent_note_once("upload", "records could not be sent (%s %d); they wait in the spool for the next run",
                        st.upload_last_error ? "HTTP" : "connection failed", st.upload_last_error);
}

void agent_finish(bool gtk_still)
{
    if (getpid() != owner_pid)
        return;
    int expected = ACTIVE;
    if (!atomic_compare_exchange_strong(&agent_state, &expected, STOPPED))
        return;
    atomic_store(&exiting, true);
    for (size_t i = N_FEATURES; i-- > 0;)
        if (features[i].stop)
            features[i].stop();
    /* what is pending belongs to GTK objects: written only while the GTK
     * thread holds still (it is the one exiting, or it is in the handler) */
    for (size_t i = N_FEATURES; gtk_still && i-- > 0;)
        if (features[i].flush)
            features[i].flush();
    pacer_shutdown();
    atomic_store(&exiting, false);
    report_upload();
}

static void agent_atexit(void)
{
    agent_finish(agent_on_gtk_thread());
}

/* Whether the program itself loaded GTK 4 (a DT_NEEDED of the executable or
 * of its libraries), and the toolkit's functions are all there. */
static bool gtk4_loaded(void)
{
    void *h = dlopen("libgtk-4.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return false;
    dlclose(h);
    const char *missing = NULL;
    if (!agent_api_load(&missing)) {
        agent_note_once("api", "GTK 4 lacks %s; this program is not measured", missing);
        return false;
    }
    return true;
}

__attribute__((constructor)) static void agent_ctor(void)
{
    const char *out = env_nonempty("PACER_OUT");
    const char *raw = env_nonempty("PACER_RAW_EVENTS");
    const char *server = env_nonempty("PACER_SERVER_URL");
    quiet = env_nonempty("PACER_AGENT_QUIET") != NULL;
    if (env_nonempty("PACER_AGENT_DISABLE") || (!out && !raw && !server))
        return;
    const char *claimed = env_nonempty("PACER_AGENT_PID");
    if (claimed && strtol(claimed, NULL, 10) != (long)getpid())
        return;
    if (!gtk4_loaded())
        return;

    owner_pid = getpid();
    gtk_thread = pthread_self();
    char pid[24];
    snprintf(pid, sizeof(pid), "%ld", (long)owner_pid);
    setenv("PACER_AGENT_PID", pid, 1);

    const char *config_path = env_nonempty("PACER_CONFIG");
    pacer_options opts = {
        .app_name = env_nonempty("PACER_APP") ? env_nonempty("PACER_APP") : program_invocation_short_name,
        .app_version = env_nonempty("PACER_APP_VERSION"),
        .config_path = config_path,
        .out_path = out,
        .raw_events_path = raw,
        .session = env_nonempty("PACER_SESSION"),
        .server_url = server,
        .server_key = env_nonempty("PACER_SERVER_KEY"),
        .spool_path = env_nonempty("PACER_SPOOL"),
        .live_deadlines = true,
    };
    char *err = NULL;
    int rc = pacer_init(&opts, &err);
    if (rc == -EINVAL && config_path) {
        /* a bad config file: measure without one */
        agent_note_once("config", "%s; measuring without a config", err ? err : config_path);
        free(err);
        err = NULL;
        opts.config_path = NULL;
        rc = pacer_init(&opts, &err);
    }
    if (rc < 0) {
        agent_note_once("init", "disabled: %s", err ? err : strerror(-rc));
        free(err);
        return;
    }

    pthread_atfork(NULL, NULL, on_fork_child);
    atexit(agent_atexit);
    atomic_store(&agent_state, ACTIVE);

    pacer_event ev = {.type = PACER_EV_LAUNCH, .t_ns = pacer_launch_time_ns()};
    if (ev.t_ns > 0)
        agent_submit(&ev);
    ev = (pacer_event){.type = PACER_EV_AGENT_INIT};
    agent_submit(&ev);
    types_check();
}
