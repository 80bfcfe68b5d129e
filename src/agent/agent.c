/* The agent's life cycle: whether to activate, the pacer instance, and what
 * happens at fork and at exit.
 *
 * States (agent_state):
 *   DORMANT  — the initial state, and the final one of every process that
 *              must not be measured. Hooks only forward to the real
 *              functions. Reasons: no PACER_OUT / PACER_RAW_EVENTS /
 *              PACER_SERVER_URL (nowhere to send records), or
 *              PACER_AGENT_DISABLE set, or not a GTK4 program (libgtk-4 not
 *              loaded at start), or an ancestor already claimed the run
 *              (PACER_AGENT_PID names another process: see below), or the
 *              pacer instance could not be created (said once on stderr).
 *   ACTIVE   — entered at the end of the constructor (agent_ctor).
 *   STOPPED  — entered at exit (agent_atexit, which then flushes through
 *              pacer_shutdown()) or in the child of a fork (on_fork_child:
 *              the child has no writer thread and must not report the
 *              parent's pages a second time).
 *
 * No double reporting across exec: the process that activates exports
 * PACER_AGENT_PID=<its pid>. A child it execs inherits LD_PRELOAD and loads
 * the agent, sees a pid that is not its own and stays dormant. A shell
 * script run under `pacer run` is not GTK and never claims, so the GTK
 * program it starts is the one measured.
 *
 * Exit: atexit(agent_atexit) is registered from the constructor, before
 * main() registers anything, so it runs after the application's own atexit
 * handlers — also when exit() is called from inside a GTK signal handler.
 * pacer_shutdown() reports pending pages and waits for the writer; threads
 * of the app that still call hooks meanwhile find the agent STOPPED, and
 * the core ignores late calls on the instance (its memory stays allocated).
 * A process killed by a signal loses at most the writer's flush interval.
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
static pacer_config *config;
static bool quiet;

bool agent_active(void)
{
    return atomic_load_explicit(&agent_state, memory_order_acquire) == ACTIVE;
}

pacer_config *agent_config(void)
{
    return config;
}

bool agent_on_gtk_thread(void)
{
    return pthread_equal(pthread_self(), gtk_thread);
}

void agent_submit(const pacer_event *ev)
{
    if (!agent_active())
        return;
    pacer_t *p = pacer_default();
    if (p)
        pacer_submit(p, ev);
}

void agent_emit(const char *type, const char *fields)
{
    if (!agent_active())
        return;
    pacer_t *p = pacer_default();
    if (p)
        pacer_emit(p, type, fields);
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

static const char *env_nonempty(const char *name);

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

static void agent_atexit(void)
{
    if (getpid() != owner_pid)
        return;
    int expected = ACTIVE;
    if (!atomic_compare_exchange_strong(&agent_state, &expected, STOPPED))
        return;
    watchdog_stop(); /* an iteration still stuck: its jank record, ongoing */
    if (agent_on_gtk_thread())
        frames_flush_all(); /* windows still open: the frames since their last record */
    pacer_shutdown();
    report_upload();
}

/* Whether the program itself loaded GTK 4 (a DT_NEEDED of the executable or
 * of its libraries): only then is there anything to measure. */
static bool gtk4_loaded(void)
{
    void *h = dlopen("libgtk-4.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return false;
    dlclose(h);
    /* The weak references this agent calls through must have resolved. */
    return gtk_window_get_type && gtk_widget_get_type && g_signal_connect_data && g_type_is_a &&
           g_signal_add_emission_hook && g_object_set_qdata_full && gtk_widget_get_frame_clock &&
           gtk_window_get_toplevels && g_list_model_get_item;
}

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
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
    if (config_path) {
        char *err = NULL;
        config = pacer_config_load(config_path, &err);
        if (!config) {
            agent_note_once("config", "%s; measuring without a config", err ? err : config_path);
            free(err);
            config_path = NULL;
        }
    }

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
    ev = (pacer_event){.type = PACER_EV_AGENT_INIT, .t_ns = pacer_now_ns()};
    agent_submit(&ev);
    types_check();
}
