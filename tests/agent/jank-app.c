/* jank-app: a small GTK4 program the agent tests run under `pacer run` to
 * check `jank` and `frames` records against known ground truth. Like the
 * demo, it contains no pacer code.
 *
 *   --animate-ms N      a window (JankAppWindow) whose drawing area animates
 *                       (a tick callback queues a draw every frame) for N ms,
 *                       then closes and the app quits
 *   --slow-frame-ms M   with --animate-ms: one frame, a third of the way in,
 *                       spends M ms inside its tick callback (busy loop):
 *                       one frame at least M ms long
 *   --busy-frame-ms B   with --animate-ms: every frame spends B ms inside its
 *                       tick callback (a window that keeps up at a lower rate)
 *   --janks K           K main-loop janks in a row, 100 ms apart (--gap-ms), each a
 *   --jank-ms M         timeout handler busy for M ms in jank_app_busy_work()
 *   --gap-ms G          the idle time between two janks (default 100)
 *   --block-signals     two extra threads that block every signal and idle
 *   --main-blocks-signals  the main thread blocks every signal while it is
 *                       busy (the agent's capture signal stays pending)
 *   --block KIND        one timeout handler blocks the main thread for
 *   --block-ms M        M ms in jank_app_block(): KIND is usleep, poll (a
 *                       pipe without data, timeout M), read (a pipe another
 *                       thread writes to after M), waitpid (a child that
 *                       lives M), g_usleep or futex (a mutex another thread
 *                       holds for M); it prints "block KIND ms=D errno=E
 *                       result=R", its own measure of the call
 *   --stall a|b         one timeout handler sleeps --block-ms M (usleep) in
 *                       jank_app_stall_a() or jank_app_stall_b(): two stalls
 *                       with the same library frames, different app code;
 *                       --stall mixed: M/2 ms busy in jank_app_mixed_busy(),
 *                       then M/2 ms in usleep in jank_app_mixed_sleep(); it
 *                       prints "mixed busy ms=B sleep ms=S errno=E
 *                       result=R", its own measure of both halves
 *   --idle-ms N         the window stays open N ms, drawing nothing new
 *   --handle-term       its own SIGTERM handler (sigaction): prints "handled
 *                       SIGTERM" and exits 3
 *   --print-dispositions  prints "SIGTERM=dfl|other SIGINT=… SIGHUP=…
 *                       SIGABRT=… SIGTRAP=…", what sigaction() tells it at
 *                       start
 *   --end HOW           ends itself from a timeout handler N ms (--end-ms,
 *   --end-ms N          default 1000) after the window's first frame, in one of
 *                       the ways a GTK program dies without exit(): abort
 *                       (abort(), SIGABRT), g_error (SIGTRAP), _exit
 *                       (_exit(5), GDK's way when its display is gone)
 *   --builder-stack     the window's child is a GtkStack built from a GtkBuilder
 *                       file, pages named "home" and "settings"; "settings" is
 *                       selected 200 ms after the window's first frame, the
 *                       window closes 400 ms later
 *   --say-drawn         prints "drawn" once the window's first frame painted
 *   --unique            a unique GApplication (org.pacer.JankApp on the session
 *                       bus): a second launch hands its activation to the
 *                       first and exits; prints "activated" at each activate
 * Exits 0 when done; with no --animate-ms the window closes after the janks.
 */
#include <gtk/gtk.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct {
    guint animate_ms, slow_frame_ms, busy_frame_ms, janks, jank_ms, gap_ms, block_ms, idle_ms;
    gboolean block_signals, main_blocks, handle_term, print_dispositions, unique, builder_stack, say_drawn;
    guint end_ms;
    const char *block, *end;
    const char *stall;
} opt;

static GtkWindow *window;
static gint64 anim_start;
static gboolean slow_done;
static guint janks_left;

static __attribute__((noinline)) void jank_app_busy_work(guint ms)
{
    sigset_t all, old;
    if (opt.main_blocks) {
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
    }
    gint64 until = g_get_monotonic_time() + (gint64)ms * 1000;
    volatile double x = 0;
    while (g_get_monotonic_time() < until)
        x += 1.0;
    if (opt.main_blocks)
        pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int fds[2];
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t holding;

/* Another thread: writes to the pipe, or releases the mutex, after M ms. */
static void *late_helper(void *arg)
{
    if (strcmp(opt.block, "futex") == 0) {
        pthread_mutex_lock(&held);
        pthread_barrier_wait(&holding);
        usleep(opt.block_ms * 1000);
        pthread_mutex_unlock(&held);
    } else {
        usleep(opt.block_ms * 1000);
        if (write(fds[1], "x", 1) != 1)
            abort();
    }
    return NULL;
}

/* Blocks the main thread in one system call of KIND for about M ms. */
static __attribute__((noinline)) void jank_app_block(void)
{
    pthread_t t = 0;
    pid_t child = -1;
    /* from before the helper starts its M ms: the call lasts at least M */
    double t0 = mono_ms();
    if (pipe(fds) != 0)
        abort();
    if (strcmp(opt.block, "futex") == 0) {
        pthread_barrier_init(&holding, NULL, 2);
        pthread_create(&t, NULL, late_helper, NULL);
        pthread_barrier_wait(&holding); /* it holds the mutex now */
    } else if (strcmp(opt.block, "read") == 0) {
        pthread_create(&t, NULL, late_helper, NULL);
    } else if (strcmp(opt.block, "waitpid") == 0) {
        child = fork();
        if (child == 0) {
            usleep(opt.block_ms * 1000);
            _exit(0);
        }
    }
    char c;
    struct pollfd p = {fds[0], POLLIN, 0};
    errno = 0;
    long result = 0;
    if (strcmp(opt.block, "usleep") == 0)
        result = usleep(opt.block_ms * 1000);
    else if (strcmp(opt.block, "poll") == 0)
        result = poll(&p, 1, (int)opt.block_ms);
    else if (strcmp(opt.block, "read") == 0)
        result = read(fds[0], &c, 1);
    else if (strcmp(opt.block, "waitpid") == 0)
        result = waitpid(child, NULL, 0) == child;
    else if (strcmp(opt.block, "g_usleep") == 0)
        g_usleep((gulong)opt.block_ms * 1000);
    else if (strcmp(opt.block, "futex") == 0)
        result = pthread_mutex_lock(&held);
    int err = errno;
    double dt = mono_ms() - t0;
    if (strcmp(opt.block, "futex") == 0)
        pthread_mutex_unlock(&held);
    if (t)
        pthread_join(t, NULL);
    close(fds[0]);
    close(fds[1]);
    printf("block %s ms=%.1f errno=%d result=%ld\n", opt.block, dt, err, result);
    fflush(stdout);
}

static __attribute__((noinline)) void jank_app_stall_a(void)
{
    usleep(opt.block_ms * 1000);
    puts("stall a");
}

static __attribute__((noinline)) void jank_app_stall_b(void)
{
    usleep(opt.block_ms * 1000);
    fputs("stall b\n", stdout);
    fflush(stdout);
}

static __attribute__((noinline)) double jank_app_mixed_busy(void)
{
    double t0 = mono_ms();
    jank_app_busy_work(opt.block_ms / 2);
    return mono_ms() - t0;
}

static __attribute__((noinline)) double jank_app_mixed_sleep(int *ret_errno, int *ret_result)
{
    double t0 = mono_ms();
    errno = 0;
    *ret_result = usleep(opt.block_ms / 2 * 1000);
    *ret_errno = errno;
    return mono_ms() - t0;
}

static __attribute__((noinline)) void jank_app_stall_mixed(void)
{
    int err, result;
    double busy = jank_app_mixed_busy();
    double slept = jank_app_mixed_sleep(&err, &result);
    printf("mixed busy ms=%.1f sleep ms=%.1f errno=%d result=%d\n", busy, slept, err, result);
    fflush(stdout);
}

static gboolean finish(gpointer data)
{
    gtk_window_destroy(window);
    return G_SOURCE_REMOVE;
}

static gboolean one_block(gpointer data)
{
    jank_app_block();
    g_timeout_add(300, finish, NULL);
    return G_SOURCE_REMOVE;
}

static gboolean one_stall(gpointer data)
{
    if (strcmp(opt.stall, "a") == 0)
        jank_app_stall_a();
    else if (strcmp(opt.stall, "mixed") == 0)
        jank_app_stall_mixed();
    else
        jank_app_stall_b();
    g_timeout_add(300, finish, NULL);
    return G_SOURCE_REMOVE;
}

static gboolean one_jank(gpointer data)
{
    jank_app_busy_work(opt.jank_ms);
    if (--janks_left > 0)
        return G_SOURCE_CONTINUE;
    if (!opt.animate_ms)
        g_timeout_add(300, finish, NULL);
    return G_SOURCE_REMOVE;
}

static gboolean tick(GtkWidget *w, GdkFrameClock *clock, gpointer data)
{
    gint64 now = g_get_monotonic_time();
    if (!anim_start)
        anim_start = now;
    gint64 elapsed_ms = (now - anim_start) / 1000;
    if (opt.slow_frame_ms && !slow_done && elapsed_ms >= opt.animate_ms / 3) {
        slow_done = TRUE;
        jank_app_busy_work(opt.slow_frame_ms); /* inside the frame's update phase */
    }
    if (opt.busy_frame_ms)
        jank_app_busy_work(opt.busy_frame_ms);
    gtk_widget_queue_draw(w);
    if (elapsed_ms >= opt.animate_ms) {
        g_idle_add(finish, NULL);
        return G_SOURCE_REMOVE;
    }
    return G_SOURCE_CONTINUE;
}

static void draw(GtkDrawingArea *area, cairo_t *cr, int width, int height, gpointer data)
{
    double phase = (double)(g_get_monotonic_time() % 1000000) / 1000000.0;
    cairo_set_source_rgb(cr, phase, 0.3, 1.0 - phase);
    cairo_rectangle(cr, phase * (width - 40), height / 2.0 - 20, 40, 40);
    cairo_fill(cr);
}

static void *signal_blocker(void *arg)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    for (;;)
        pause(); /* never returns: every signal is blocked */
    return NULL;
}

#define JANK_TYPE_APP_WINDOW (jank_app_window_get_type())
G_DECLARE_FINAL_TYPE(JankAppWindow, jank_app_window, JANK, APP_WINDOW, GtkApplicationWindow)
struct _JankAppWindow {
    GtkApplicationWindow parent;
};
G_DEFINE_TYPE(JankAppWindow, jank_app_window, GTK_TYPE_APPLICATION_WINDOW)
static void jank_app_window_init(JankAppWindow *self)
{
    GtkWidget *area = gtk_drawing_area_new();
    gtk_widget_set_size_request(area, 320, 200);
    gtk_drawing_area_set_draw_func(GTK_DRAWING_AREA(area), draw, NULL, NULL);
    gtk_window_set_child(GTK_WINDOW(self), area);
    if (opt.animate_ms)
        gtk_widget_add_tick_callback(area, tick, NULL, NULL);
}
static void jank_app_window_class_init(JankAppWindowClass *klass)
{
}

static const char stack_ui[] =
    "<interface>"
    "  <object class=\"GtkStack\" id=\"stack\">"
    "    <child><object class=\"GtkStackPage\"><property name=\"name\">home</property>"
    "      <property name=\"child\"><object class=\"GtkLabel\"><property name=\"label\">home</property></object>"
    "      </property></object></child>"
    "    <child><object class=\"GtkStackPage\"><property name=\"name\">settings</property>"
    "      <property name=\"child\"><object class=\"GtkLabel\"><property name=\"label\">settings</property>"
    "      </object></property></object></child>"
    "  </object>"
    "</interface>";

static gboolean select_settings(gpointer stack)
{
    gtk_stack_set_visible_child_name(GTK_STACK(stack), "settings");
    g_timeout_add(400, finish, NULL);
    return G_SOURCE_REMOVE;
}

static gboolean end_now(gpointer data)
{
    if (strcmp(opt.end, "abort") == 0)
        abort();
    if (strcmp(opt.end, "g_error") == 0)
        g_error("jank-app: ended by g_error");
    _exit(5);
}

static void on_first_paint(GdkFrameClock *clock, gpointer data)
{
    g_signal_handlers_disconnect_by_func(clock, on_first_paint, data);
    if (opt.say_drawn) {
        puts("drawn");
        fflush(stdout);
    }
    if (opt.end)
        g_timeout_add(opt.end_ms, end_now, NULL);
    if (opt.builder_stack)
        g_timeout_add(200, select_settings, gtk_window_get_child(window));
}

static void on_map(GtkWidget *w, gpointer data)
{
    g_signal_connect(gtk_widget_get_frame_clock(w), "after-paint", G_CALLBACK(on_first_paint), NULL);
}

static void on_activate(GApplication *app)
{
    window = g_object_new(JANK_TYPE_APP_WINDOW, "application", app, NULL);
    if (opt.builder_stack) {
        GtkBuilder *b = gtk_builder_new_from_string(stack_ui, -1);
        GtkWidget *stack = GTK_WIDGET(gtk_builder_get_object(b, "stack"));
        gtk_window_set_child(window, stack);
        g_object_unref(b);
    }
    if (opt.builder_stack || opt.say_drawn || opt.end)
        g_signal_connect(window, "map", G_CALLBACK(on_map), NULL);
    gtk_window_present(window);
    if (opt.unique) {
        puts("activated");
        fflush(stdout);
    }
    if (opt.builder_stack) {
        /* select_settings ends it */
    } else if (opt.block) {
        g_timeout_add(opt.gap_ms, one_block, NULL);
    } else if (opt.stall) {
        g_timeout_add(opt.gap_ms, one_stall, NULL);
    } else if (opt.janks) {
        janks_left = opt.janks;
        g_timeout_add(opt.gap_ms, one_jank, NULL);
    } else if (!opt.animate_ms) {
        g_timeout_add(opt.idle_ms ? opt.idle_ms : 300, finish, NULL);
    }
}

/* The app's own SIGTERM handler does only what is async-signal-safe: it
 * says so and raises a flag; the main loop then ends the process through
 * exit(3) and its atexit handlers (an exit() inside the handler could
 * deadlock on a lock the interrupted code held, malloc's or stdio's). */
static volatile sig_atomic_t term_seen;

static void on_term(int signo)
{
    static const char msg[] = "handled SIGTERM\n";
    (void)signo;
    if (write(1, msg, sizeof(msg) - 1) < 0)
        _exit(4);
    term_seen = 1;
}

static gboolean check_term(gpointer data)
{
    (void)data;
    if (term_seen)
        exit(3);
    return G_SOURCE_CONTINUE;
}

static const char *disposition(int signo)
{
    struct sigaction sa;
    if (sigaction(signo, NULL, &sa) != 0)
        return "error";
    return !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL ? "dfl" : "other";
}

int main(int argc, char **argv)
{
    opt.gap_ms = 100;
    opt.end_ms = 1000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        guint *target = strcmp(a, "--animate-ms") == 0      ? &opt.animate_ms
                        : strcmp(a, "--slow-frame-ms") == 0 ? &opt.slow_frame_ms
                        : strcmp(a, "--janks") == 0         ? &opt.janks
                        : strcmp(a, "--jank-ms") == 0       ? &opt.jank_ms
                        : strcmp(a, "--gap-ms") == 0        ? &opt.gap_ms
                        : strcmp(a, "--block-ms") == 0      ? &opt.block_ms
                        : strcmp(a, "--idle-ms") == 0       ? &opt.idle_ms
                        : strcmp(a, "--busy-frame-ms") == 0 ? &opt.busy_frame_ms
                        : strcmp(a, "--end-ms") == 0        ? &opt.end_ms
                                                            : NULL;
        if (target && i + 1 < argc)
            *target = (guint)strtoul(argv[++i], NULL, 10);
        else if (strcmp(a, "--block") == 0 && i + 1 < argc)
            opt.block = argv[++i];
        else if (strcmp(a, "--stall") == 0 && i + 1 < argc)
            opt.stall = argv[++i];
        else if (strcmp(a, "--end") == 0 && i + 1 < argc)
            opt.end = argv[++i];
        else if (strcmp(a, "--block-signals") == 0)
            opt.block_signals = TRUE;
        else if (strcmp(a, "--main-blocks-signals") == 0)
            opt.main_blocks = TRUE;
        else if (strcmp(a, "--handle-term") == 0)
            opt.handle_term = TRUE;
        else if (strcmp(a, "--print-dispositions") == 0)
            opt.print_dispositions = TRUE;
        else if (strcmp(a, "--unique") == 0)
            opt.unique = TRUE;
        else if (strcmp(a, "--builder-stack") == 0)
            opt.builder_stack = TRUE;
        else if (strcmp(a, "--say-drawn") == 0)
            opt.say_drawn = TRUE;
        else {
            fprintf(stderr, "jank-app: unknown option %s\n", a);
            return 2;
        }
    }
    if (opt.block_signals) {
        for (int i = 0; i < 2; i++) {
            pthread_t t;
            pthread_create(&t, NULL, signal_blocker, NULL);
            pthread_detach(t);
        }
    }
    if (opt.handle_term) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_term;
        sigaction(SIGTERM, &sa, NULL);
        g_timeout_add(10, check_term, NULL);
    }
    if (opt.print_dispositions) {
        printf("SIGTERM=%s SIGINT=%s SIGHUP=%s SIGABRT=%s SIGTRAP=%s\n", disposition(SIGTERM), disposition(SIGINT),
               disposition(SIGHUP), disposition(SIGABRT), disposition(SIGTRAP));
        fflush(stdout);
    }
    GtkApplication *app =
        gtk_application_new("org.pacer.JankApp", opt.unique ? G_APPLICATION_DEFAULT_FLAGS : G_APPLICATION_NON_UNIQUE);
    g_signal_connect(app, "activate", G_CALLBACK(on_activate), NULL);
    char *args[] = {argv[0], NULL};
    int status = g_application_run(G_APPLICATION(app), 1, args);
    g_object_unref(app);
    return status;
}
