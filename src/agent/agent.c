/* The agent's life cycle: whether to activate, the pacer instance, the
 * features and what happens at setup, at fork and at exit.
 *
 * States (agent_state):
 *   DORMANT  — the initial state, and the final one of every process that
 *              must not be measured. Hooks only forward to the real
 *              functions. Reasons: no PACER_OUT / PACER_RAW_EVENTS /
 *              PACER_SERVER_URL (nowhere to send records), or
 *              PACER_AGENT_DISABLE set, or a function of the toolkit
 *              missing, or an ancestor already claimed the run
 *              (PACER_AGENT_PID names another process: see below), or the
 *              pacer instance could not be created (said once on stderr).
 *              A program that has loaded neither a display client library
 *              (libwayland-client, libxcb, libX11, libEGL, libGL, libGLX,
 *              libvulkan) nor a toolkit the agent knows at start is
 *              DORMANT and waiting (agent_waiting): dlopen.c activates it
 *              when one is loaded later (PyGObject, GJS, SDL's video),
 *              else it ends dormant: a shell script or a command-line
 *              tool is never measured, the program it starts may be.
 *   ACTIVE   — entered at the end of the constructor (agent_ctor), or
 *              when the toolkit or display arrives
 *              (agent_on_libraries_loaded). With or without a toolkit
 *              adapter: the neutral part measures start-up, frames at the
 *              display, the main loop and libcurl in any program.
 *   STOPPED  — entered at exit (agent_finish: from atexit, or from the exit
 *              thread when a signal or _exit ends the program, exit.c) or
 *              in the child of a fork (on_fork_child: the child has no
 *              writer thread and must not report the parent's pages a
 *              second time).
 *
 * Features: the table below is the whole life cycle. At setup (agent_setup:
 * main() entered, or the first window built before main()) each feature's
 * install runs once, in table order, on the main thread. At exit each stop
 * runs, then each flush, in reverse order, then pacer_shutdown() writes the
 * rest. Hooks that need no set-up (curl.c's, the adapters' construction
 * and GTK call hooks) are always in place and check agent_active().
 *
 * Adapters (adapter.h): the toolkit adapter in force is the first whose
 * library is loaded, noticed in the constructor or after a dlopen; it is
 * attached at once and installed with the features at setup (or, noticed
 * later, at once on the main thread, else at the next agent_setup call).
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
 * (Activated late, it is registered then, and runs before the handlers
 * registered earlier.) Threads of the app that still call hooks meanwhile
 * find the agent STOPPED, and the core ignores late calls on the instance
 * (its memory stays allocated). A signal that ends the program, or _exit
 * (GDK's way out when the display went away), runs the same sequence first
 * (exit.c).
 */
#include "agent.h"
#include "adapter.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { DORMANT = 0, ACTIVE = 1, STOPPED = 2 }; /* agent.h reads ACTIVE as 1 */

__thread int agent_in_hook __attribute__((tls_model("initial-exec")));
__thread bool agent_main_thread_tls __attribute__((tls_model("initial-exec")));
_Atomic uint64_t agent_net_epoch;

_Atomic int agent_state = DORMANT;
static _Atomic bool waiting; /* dormant until a toolkit or a display library is loaded */
static pid_t owner_pid;
static char measured_name[256]; /* the records' "app", for the run summary */
static bool quiet;
static _Atomic bool exiting; /* at exit: pending records are still taken */
static const char *unmeasured; /* why this process is not measured, for the run summary */

/* ---- adapters (adapter.h) ---- */

static const agent_adapter *const adapters[] = {&agent_adapter_gtk4, &agent_adapter_gtk3, &agent_adapter_qt6,
                                                 &agent_adapter_qt5};
#define N_ADAPTERS (sizeof(adapters) / sizeof(adapters[0]))

static _Atomic(const agent_adapter *) in_force;
static _Atomic bool adapter_tried[N_ADAPTERS];
static bool adapter_installed; /* main thread */
static bool setup_done;        /* main thread */

/* Client libraries of a display: a program that loads one of them shows
 * windows, and is measured with or without a toolkit adapter. */
static const char *const display_libs[] = {
    "libwayland-client.so.0", "libxcb.so.1", "libX11.so.6", "libEGL.so.1", "libGL.so.1", "libGLX.so.0",
    "libvulkan.so.1",
};

static bool display_loaded(void)
{
    for (size_t i = 0; i < sizeof(display_libs) / sizeof(display_libs[0]); i++)
        if (agent_lib_loaded(display_libs[i]))
            return true;
    return false;
}

const agent_adapter *agent_adapter_in_force(void)
{
    return atomic_load_explicit(&in_force, memory_order_acquire);
}

const char *agent_visible_page(void)
{
    const agent_adapter *a = agent_adapter_in_force();
    return a && a->visible_page ? a->visible_page() : NULL;
}

/* Attaches the first adapter whose library is loaded now, unless one is
 * in force already. Returns it (the one in force) or NULL. Any thread. */
static const agent_adapter *notice_adapter(void)
{
    const agent_adapter *a = agent_adapter_in_force();
    if (a)
        return a;
    for (size_t i = 0; i < N_ADAPTERS; i++) {
        if (!agent_lib_loaded(adapters[i]->soname) || atomic_exchange(&adapter_tried[i], true))
            continue;
        const char *missing = NULL;
        if (adapters[i]->attach(&missing) < 0) {
            agent_note_once(adapters[i]->name, "%s lacks %s; its pages are not measured", adapters[i]->title,
                            missing ? missing : "a function the agent needs");
            continue;
        }
        const agent_adapter *none = NULL;
        if (atomic_compare_exchange_strong(&in_force, &none, adapters[i]))
            return adapters[i];
        return none;
    }
    return NULL;
}

/* Whether the program is one the agent measures now: a toolkit that
 * shows windows, or a display library, is loaded. The adapter of a
 * toolkit whose core library also serves programs without windows (QtCore)
 * is attached at once, but waits for a display library. */
static bool measurable(void)
{
    const agent_adapter *a = notice_adapter();
    return (a && !(a->measures & ADAPTER_NEEDS_DISPLAY)) || display_loaded();
}

/* Says which adapter measures the pages (the startup record's toolkit). */
static void submit_toolkit(const agent_adapter *a)
{
    if (!a)
        return;
    pacer_event ev = {.type = PACER_EV_TOOLKIT, .class_name = a->name};
    agent_submit(&ev);
}

static void adapter_install(void)
{
    const agent_adapter *a = agent_adapter_in_force();
    if (!a || adapter_installed)
        return;
    adapter_installed = true;
    a->install();
}

static void adapter_stop(void)
{
    const agent_adapter *a = agent_adapter_in_force();
    if (a && a->stop)
        a->stop();
}

static void adapter_flush(void)
{
    const agent_adapter *a = agent_adapter_in_force();
    if (a && a->flush)
        a->flush();
}

typedef struct agent_feature {
    const char *name;
    void (*install)(void); /* at setup, main thread */
    void (*stop)(void);    /* at exit: stop producing */
    void (*flush)(void);   /* at exit, after every stop: write what is pending */
} agent_feature;

static const agent_feature features[] = {
    {"exit", exit_install, NULL, NULL},
    {"adapter", adapter_install, adapter_stop, adapter_flush},
    {"loop-wait", loop_wait_install, NULL, NULL},
    {"loop-glib", loop_glib_install, NULL, NULL},
    {"watchdog", watchdog_start, watchdog_stop, NULL},
    {"display", NULL, NULL, display_flush},
    {"leaks", leaks_install, heap_exit_check, NULL},
};
#define N_FEATURES (sizeof(features) / sizeof(features[0]))

bool agent_is_owner(void)
{
    return owner_pid && getpid() == owner_pid;
}

void agent_setup(void)
{
    if (!agent_active() || !agent_on_main_thread())
        return;
    agent_in_hook++;
    if (!setup_done) {
        setup_done = true;
        for (size_t i = 0; i < N_FEATURES; i++)
            if (features[i].install)
                features[i].install();
    } else {
        adapter_install(); /* an adapter attached after setup, off the main thread */
    }
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
    char why[200];
    pacer_upload_failure(&st, why, sizeof why);
    if (st.batches_refused)
        agent_note_once("upload", "the server refused %llu batch(es) of records (%s); check the key "
                        "(--key-file or $PACER_KEY) and the app name (--app) against the server's keys file",
                        (unsigned long long)st.batches_refused, why);
    else if (st.upload_retries && !st.batches_sent)
        agent_note_once("upload", "records could not be sent (%s); they wait in the spool for the next run", why);
}

/* ---- the run summary: one line on stderr for a `pacer run` ----
 *
 * `pacer run` exports PACER_RUN_PID (the program's pid: it execs) and
 * PACER_RUN_OUT_SIZE (the records file's size before the run, -1 when it
 * did not exist). The process that measured says where its records went;
 * the program's own process, when it was not measured and no process
 * started from it was (the records file did not grow), says why. Written
 * with write(2): it may run on the exit thread while the app is held in a
 * signal handler, and must not wait for a stdio lock. */

static bool launched_by_run(void)
{
    return env_nonempty("PACER_RUN_PID") != NULL;
}

static void say(const char *msg)
{
    if (quiet)
        return;
    size_t n = strlen(msg);
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, msg, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        msg += w;
        n -= (size_t)w;
    }
}

/* What this process was measured for: the adapter in force and what it
 * adds, or the neutral part alone. */
static void what_measured(char *buf, size_t size)
{
    const agent_adapter *a = agent_adapter_in_force();
    if (!a) {
        snprintf(buf, size, "no toolkit adapter: start-up, frames, main loop, libcurl requests");
        return;
    }
    snprintf(buf, size, "%s: %s%s%s", a->title, a->measures & ADAPTER_PAGES ? "pages, " : "",
             "frames, ", a->measures & ADAPTER_REQUESTS ? "requests" : "libcurl requests");
}

static void summary_measured(void)
{
    if (!launched_by_run())
        return;
    pacer_stats st;
    pacer_get_stats(pacer_default(), &st);
    const char *out = env_nonempty("PACER_OUT");
    const char *server = env_nonempty("PACER_SERVER_URL");
    char what[160];
    what_measured(what, sizeof(what));
    char msg[1024];
    const char *name = measured_name[0] ? measured_name : program_invocation_short_name;
    int n = snprintf(msg, sizeof(msg), "pacer: %s (pid %ld), %s; %llu record%s", name,
                     (long)getpid(), what, (unsigned long long)st.records, st.records == 1 ? "" : "s");
    if (out && n > 0 && (size_t)n < sizeof(msg))
        n += snprintf(msg + n, sizeof(msg) - (size_t)n, " written to %s", out);
    if (server && n > 0 && (size_t)n < sizeof(msg))
        n += snprintf(msg + n, sizeof(msg) - (size_t)n, "%s sent to %s (%llu batch%s accepted)", out ? ", and" : "",
                      server, (unsigned long long)st.batches_sent, st.batches_sent == 1 ? "" : "es");
    if (n > 0 && (size_t)n < sizeof(msg) - 2)
        snprintf(msg + n, sizeof(msg) - (size_t)n, "\n");
    say(msg);
}

static void summary_unmeasured(void)
{
    if (agent_active() || atomic_load(&agent_state) == STOPPED || getpid() != owner_pid)
        return;
    const char *why = atomic_load(&waiting) ? "it loaded no display library (the agent measures programs that "
                                              "show windows: Wayland, X11, EGL, GLX or Vulkan clients)"
                                            : unmeasured;
    if (!why)
        return;
    /* a process started from this one was measured: it said so */
    const char *size = env_nonempty("PACER_RUN_OUT_SIZE");
    const char *out = env_nonempty("PACER_OUT");
    struct stat sb;
    if (size && out && stat(out, &sb) == 0 && (long long)sb.st_size > strtoll(size, NULL, 10))
        return;
    char msg[768];
    snprintf(msg, sizeof(msg), "pacer: %s (pid %ld) was not measured: %s\n", program_invocation_short_name,
             (long)getpid(), why);
    say(msg);
}

/* _exit() and _Exit() skip atexit. GDK ends a GTK 4 process with _exit(1)
 * when its display goes away (the X server or the Wayland compositor
 * closed the connection): in the measured process the exit sequence runs
 * first (exit.c: on the exit thread, waited for at most a few seconds); a
 * program that ends so without being measured (dash does) says why here.
 * The real _exit follows with the caller's status. A child of a fork or
 * vfork has another pid: it exits at once, touching nothing. */
typedef void (*exit_fn)(int) __attribute__((noreturn));
static exit_fn real_exit;

AGENT_EXPORT void _exit(int status)
{
    if (!real_exit)
        real_exit = (exit_fn)dlsym(RTLD_NEXT, "_exit");
    if (agent_is_owner()) {
        exit_on_exit_call();
        summary_unmeasured();
    }
    if (real_exit)
        real_exit(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}

AGENT_EXPORT void _Exit(int status)
{
    _exit(status);
}

void agent_finish(bool main_still)
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
    /* what is pending belongs to the toolkit's objects: written only while
     * the main thread holds still (it is the one exiting, or it is in the
     * handler) */
    for (size_t i = N_FEATURES; main_still && i-- > 0;)
        if (features[i].flush)
            features[i].flush();
    pacer_shutdown();
    atomic_store(&exiting, false);
    report_upload();
    summary_measured();
}

static void agent_atexit(void)
{
    agent_finish(agent_on_main_thread());
}

/* The application's name: PACER_APP; else, for a script run by an
 * interpreter (python3 app.py, gjs app.js, python3 -m pkg), the script's
 * or module's name without extension; else the program's. */
static const char *default_app_name(void)
{
    static char name[256];
    const char *prog = program_invocation_short_name;
    if (strncmp(prog, "python", 6) != 0 && strncmp(prog, "gjs", 3) != 0)
        return prog;
    char args[4096];
    FILE *f = fopen("/proc/self/cmdline", "re");
    size_t n = f ? fread(args, 1, sizeof(args) - 1, f) : 0;
    if (f)
        fclose(f);
    args[n] = '\0';
    bool module = false;
    for (size_t i = strlen(args) + 1; i < n; i += strlen(args + i) + 1) {
        const char *a = args + i;
        if (strcmp(a, "-m") == 0) {
            module = true;
            continue;
        }
        if (a[0] == '-' || !a[0])
            continue;
        const char *base = module ? a : (strrchr(a, '/') ? strrchr(a, '/') + 1 : a);
        snprintf(name, sizeof(name), "%s", base);
        char *dot = strrchr(name, '.');
        if (dot && !module && dot != name)
            *dot = '\0';
        return name[0] ? name : prog;
    }
    return prog;
}

/* Creates the pacer instance and goes ACTIVE: in the constructor, or in
 * the dlopen() call that loaded the toolkit, after its adapter attached. */
static bool agent_activate(int64_t main_ns)
{
    owner_pid = getpid();
    char pid[24];
    snprintf(pid, sizeof(pid), "%ld", (long)owner_pid);
    setenv("PACER_AGENT_PID", pid, 1);

    const char *config_path = env_nonempty("PACER_CONFIG");
    pacer_options opts = {
        .app_name = env_nonempty("PACER_APP") ? env_nonempty("PACER_APP") : default_app_name(),
        .app_version = env_nonempty("PACER_APP_VERSION"),
        .config_path = config_path,
        .out_path = env_nonempty("PACER_OUT"),
        .raw_events_path = env_nonempty("PACER_RAW_EVENTS"),
        .session = env_nonempty("PACER_SESSION"),
        .server_url = env_nonempty("PACER_SERVER_URL"),
        .server_key = env_nonempty("PACER_SERVER_KEY"),
        .spool_path = env_nonempty("PACER_SPOOL"),
        .live_deadlines = true,
    };
    snprintf(measured_name, sizeof(measured_name), "%s", opts.app_name);
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
        unmeasured = "pacer could not start in it (said above)";
        return false;
    }

    pthread_atfork(NULL, NULL, on_fork_child);
    atexit(agent_atexit);
    atomic_store(&agent_state, ACTIVE);

    pacer_event ev = {.type = PACER_EV_LAUNCH, .t_ns = pacer_launch_time_ns()};
    if (ev.t_ns > 0)
        agent_submit(&ev);
    if (main_ns) { /* main() ran before the toolkit was there */
        ev = (pacer_event){.type = PACER_EV_MAIN, .t_ns = main_ns};
        agent_submit(&ev);
    }
    ev = (pacer_event){.type = PACER_EV_AGENT_INIT};
    agent_submit(&ev);
    submit_toolkit(agent_adapter_in_force());
    return true;
}

bool agent_waiting(void)
{
    return atomic_load_explicit(&waiting, memory_order_relaxed);
}

static _Atomic int64_t main_entered_ns; /* main() entered while waiting */

void dlopen_on_main(void)
{
    atomic_store(&main_entered_ns, pacer_now_ns());
}

void agent_on_libraries_loaded(void)
{
    if (agent_active()) {
        loop_wait_refresh();
        if (!agent_adapter_in_force()) {
            /* a toolkit after the display (a plugin): its pages from now */
            const agent_adapter *a = notice_adapter();
            submit_toolkit(a);
            if (a && setup_done)
                agent_setup();
        }
        return;
    }
    if (!agent_waiting())
        return;
    if (!measurable())
        return;
    bool expected = true;
    if (!atomic_compare_exchange_strong(&waiting, &expected, false))
        return;
    /* Inside the call that loaded the toolkit, before the app can use it:
     * its types are registered later, on first use, so the adapter's
     * construction hooks are in place in time. */
    if (agent_activate(atomic_load(&main_entered_ns)) && agent_on_main_thread())
        agent_setup(); /* otherwise at the toolkit's first window */
}

__attribute__((constructor)) static void agent_ctor(void)
{
    real_exit = (exit_fn)dlsym(RTLD_NEXT, "_exit"); /* not in a signal handler later */
    quiet = env_nonempty("PACER_AGENT_QUIET") != NULL;
    const char *run_pid = env_nonempty("PACER_RUN_PID");
    if (run_pid && strtol(run_pid, NULL, 10) == (long)getpid()) {
        /* the program `pacer run` started: it reports at exit if unmeasured */
        owner_pid = getpid();
        atexit(summary_unmeasured);
    }
    if (env_nonempty("PACER_AGENT_DISABLE")) {
        unmeasured = "PACER_AGENT_DISABLE is set";
        return;
    }
    if (!env_nonempty("PACER_OUT") && !env_nonempty("PACER_RAW_EVENTS") && !env_nonempty("PACER_SERVER_URL"))
        return;
    const char *claimed = env_nonempty("PACER_AGENT_PID");
    if (claimed && strtol(claimed, NULL, 10) != (long)getpid())
        return;
    agent_main_thread_tls = true; /* the constructor runs on the thread that enters main() */
    if (!measurable()) {
        /* no window yet: dlopen.c watches for a toolkit or a display */
        atomic_store(&waiting, true);
        return;
    }
    agent_activate(0);
}
