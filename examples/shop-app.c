/* shop-app: the demo GTK4 application pacer measures without a line of
 * pacer code in it. It is an ordinary GTK4 program; everything pacer knows
 * about it comes from the LD_PRELOAD agent (`pacer run -- shop-app …`).
 *
 * What it does, and what each step exercises in the agent:
 *   1. activate: a splash window (ShopSplashWindow, configured as splash)
 *      shows for --splash-ms.
 *   2. Then the home window (ShopHomeWindow, the main page, tag="1") is
 *      created. Inside its own init it sends GET /api/config with libsoup
 *      (soup_session_send_and_read_async), so the request must be counted
 *      for the page although the page pointer does not exist yet when it
 *      starts. When that answers it sends GET /api/list (soup_session_send_async
 *      + reading the stream) and fills a list: the final draw.
 *   3. The home window holds a GtkStack of two merchant pages
 *      (ShopMerchantPage, configured with /api/test1). Each loads /api/test1
 *      with libcurl on a worker thread: "nearby" with curl_easy_perform,
 *      "later" with the multi interface. "nearby" is visible at once;
 *      "later" is selected only --lazy-ms after the home window was created:
 *      the lazy page, whose total_ms must not count that wait.
 *   4. With --auto-exit the app closes itself --linger-ms after all of that
 *      is on screen: through g_application_quit(), or with --exit-mode=exit
 *      through exit(0) from inside a GLib timeout handler.
 *   5. With --warm it first closes every window, keeps running (held), and
 *      opens a new home window: a warm start.
 *
 * Options: --api URL (default http://127.0.0.1:8080), --splash-ms N (400),
 * --lazy-ms N (1500), --linger-ms N (800), --auto-exit, --exit-mode quit|exit,
 * --warm, --sync-config (load /api/config with soup_session_send_and_read,
 * the synchronous call, instead of the async one), --children (at start, fork
 * a child that exits through exit(), and spawn a second shop-app that runs
 * briefly: neither may be reported), --first-frame-exit (for the overhead
 * benchmark: print "first_frame_us=T", T = CLOCK_MONOTONIC µs of the first
 * window's first frame, and quit), --jank-ms N (once everything loaded,
 * press the "Recommendations" button by itself: its handler blocks the main
 * loop N ms inside shop_compute_recommendations(), the main-loop jank the
 * agent must report with that function in its stack; pressed by hand it
 * blocks 1000 ms), --log-requests (print "shop-app: request PATH START END"
 * to stderr for every request, START and END in CLOCK_MONOTONIC µs as the
 * app sees them: before the send call, and when libsoup's message emits
 * "finished" or libcurl's transfer returns — the app's own clock, which the
 * tests hold the agent's figures against).
 *
 * Environment: SHOP_STARTUP_DELAY_MS=N blocks the main loop N ms (a sleep,
 * as a slow synchronous init would) at activation, before the first window
 * is created: a slower build of the same app, for `pacer bench`'s test. Its
 * cold_ms and first_screen_ms grow by N; no page's own figures change. */
#include "shop-common.h"

#include <curl/curl.h>
#include <gtk/gtk.h>
#include <libsoup/soup.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Beside shop-common.h's options (`shop`), this app's own. */
static struct {
    gboolean exit_hard;
    gboolean warm;
    gboolean sync_config;
    gboolean children;
    gboolean first_frame_exit;
} opt;

static GtkApplication *app;
static SoupSession *session;
static int homes_opened;

static const char *message_path(GObject *msg)
{
    return g_uri_get_path(soup_message_get_uri(SOUP_MESSAGE(msg)));
}

/* A GET of URL whose start and end --log-requests reports; made just
 * before it is sent. */
static SoupMessage *api_message(const char *url)
{
    SoupMessage *msg = soup_message_new("GET", url);
    shop_log_message(G_OBJECT(msg), message_path);
    return msg;
}

/* ---- ShopMerchantPage: a stack page that loads /api/test1 with libcurl ---- */

#define SHOP_TYPE_MERCHANT_PAGE (shop_merchant_page_get_type())
G_DECLARE_FINAL_TYPE(ShopMerchantPage, shop_merchant_page, SHOP, MERCHANT_PAGE, GtkBox)

struct _ShopMerchantPage {
    GtkBox parent;
    GtkWidget *label;
    gboolean use_multi;
    gboolean loaded;
};

G_DEFINE_TYPE(ShopMerchantPage, shop_merchant_page, GTK_TYPE_BOX)

static void home_step_done(GtkWidget *any_child);

static void merchant_loaded(GObject *source, GAsyncResult *res, gpointer user)
{
    ShopMerchantPage *self = SHOP_MERCHANT_PAGE(source);
    GError *error = NULL;
    char *body = g_task_propagate_pointer(G_TASK(res), &error);
    char *text = shop_merchant_text(body, error);
    gtk_label_set_text(GTK_LABEL(self->label), text);
    self->loaded = TRUE;
    g_free(text);
    g_free(body);
    g_clear_error(&error);
    home_step_done(GTK_WIDGET(self));
}

static void shop_merchant_page_start(ShopMerchantPage *self)
{
    GTask *task = g_task_new(self, NULL, merchant_loaded, NULL);
    g_task_set_task_data(task, GINT_TO_POINTER(self->use_multi), NULL);
    g_task_run_in_thread(task, shop_merchant_fetch);
    g_object_unref(task);
}

static void shop_merchant_page_init(ShopMerchantPage *self)
{
    gtk_orientable_set_orientation(GTK_ORIENTABLE(self), GTK_ORIENTATION_VERTICAL);
    gtk_box_set_spacing(GTK_BOX(self), 6);
    self->label = gtk_label_new("loading merchant…");
    gtk_box_append(GTK_BOX(self), self->label);
}

static void shop_merchant_page_class_init(ShopMerchantPageClass *klass)
{
}

static GtkWidget *shop_merchant_page_new(gboolean use_multi)
{
    ShopMerchantPage *self = g_object_new(SHOP_TYPE_MERCHANT_PAGE, NULL);
    self->use_multi = use_multi;
    shop_merchant_page_start(self);
    return GTK_WIDGET(self);
}

/* ---- ShopHomeWindow: the main page ---- */

#define SHOP_TYPE_HOME_WINDOW (shop_home_window_get_type())
G_DECLARE_FINAL_TYPE(ShopHomeWindow, shop_home_window, SHOP, HOME_WINDOW, GtkApplicationWindow)

struct _ShopHomeWindow {
    GtkApplicationWindow parent;
    GtkWidget *title;
    GtkWidget *list;
    GtkWidget *stack;
    GtkWidget *recommend;
    GCancellable *cancel;
    guint lazy_source;
    int steps_left; /* list loaded, 2 merchants loaded, lazy page shown */
};

G_DEFINE_TYPE(ShopHomeWindow, shop_home_window, GTK_TYPE_APPLICATION_WINDOW)

static void finish_run(void);

/* The slow code of the demo: ranks made-up products on the GTK thread for
 * `ms` milliseconds of CPU time, freezing the window meanwhile (a busy loop,
 * not a sleep: what a real computation does). Kept a separate, static,
 * non-inlined function so that it has its own frame in the stack. */
static __attribute__((noinline)) double shop_compute_recommendations(guint ms)
{
    gint64 until = g_get_monotonic_time() + (gint64)ms * 1000;
    double score = 0;
    for (unsigned i = 1; g_get_monotonic_time() < until; i++)
        score += (double)(i % 97) / (double)(i % 89 + 1); /* the "ranking" */
    return score;
}

static void on_recommend(GtkButton *button, gpointer user)
{
    guint ms = shop.jank_ms ? shop.jank_ms : 1000;
    double score = shop_compute_recommendations(ms);
    char label[64];
    snprintf(label, sizeof(label), "Recommendations (%.0f)", score);
    gtk_button_set_label(button, label);
}

static void home_step_done(GtkWidget *any_child)
{
    GtkRoot *root = gtk_widget_get_root(any_child);
    if (!root || !SHOP_IS_HOME_WINDOW(root))
        return;
    ShopHomeWindow *self = SHOP_HOME_WINDOW(root);
    if (--self->steps_left == 0) {
        if (shop.jank_ms)
            gtk_widget_activate(self->recommend); /* "clicked", as by the user */
        finish_run();
    }
}

static void list_add(gpointer list, const char *name)
{
    gtk_list_box_append(GTK_LIST_BOX(list), gtk_label_new(name));
}

/* /api/list read to its end (or failed). */
static void list_read(GObject *owner, const char *body, GError *error)
{
    ShopHomeWindow *self = SHOP_HOME_WINDOW(owner);
    if (body) {
        shop_list_fill(body, list_add, self->list);
        home_step_done(GTK_WIDGET(self));
    } else if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        gtk_list_box_append(GTK_LIST_BOX(self->list), gtk_label_new(error->message));
        home_step_done(GTK_WIDGET(self));
    }
}

static void list_sent(GObject *src, GAsyncResult *res, gpointer user)
{
    ShopHomeWindow *self = user;
    GError *error = NULL;
    GInputStream *stream = soup_session_send_finish(SOUP_SESSION(src), res, &error);
    if (!stream) {
        if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
            g_printerr("shop-app: request failed: %s\n", error->message);
            gtk_list_box_append(GTK_LIST_BOX(self->list), gtk_label_new(error->message));
            home_step_done(GTK_WIDGET(self));
        }
        g_error_free(error);
        g_object_unref(self);
        return;
    }
    shop_read_all(stream, &self->cancel, G_OBJECT(self), list_read); /* the reference taken for the send */
}

static void config_apply(ShopHomeWindow *self, GBytes *body, GError *error)
{
    const char *data = body ? g_bytes_get_data(body, NULL) : NULL;
    char *title = data ? shop_answer_field(data, (gssize)g_bytes_get_size(body), "title") : NULL;
    if (title) {
        gtk_label_set_text(GTK_LABEL(self->title), title);
        g_free(title);
    } else {
        gtk_label_set_text(GTK_LABEL(self->title), error ? error->message : "no config");
        if (error)
            g_printerr("shop-app: request failed: %s\n", error->message);
    }
    /* Second request, streamed: GET /api/list. */
    char *url = shop_api_url("/api/list");
    SoupMessage *msg = api_message(url);
    soup_session_send_async(session, msg, G_PRIORITY_DEFAULT, self->cancel, list_sent, g_object_ref(self));
    g_object_unref(msg);
    g_free(url);
}

static void config_loaded(GObject *src, GAsyncResult *res, gpointer user)
{
    ShopHomeWindow *self = user;
    GError *error = NULL;
    GBytes *body = soup_session_send_and_read_finish(SOUP_SESSION(src), res, &error);
    if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        config_apply(self, body, error);
    if (body)
        g_bytes_unref(body);
    g_clear_error(&error);
    g_object_unref(self);
}

static gboolean show_lazy_page(gpointer user)
{
    ShopHomeWindow *self = user;
    self->lazy_source = 0;
    gtk_stack_set_visible_child_name(GTK_STACK(self->stack), "later");
    home_step_done(GTK_WIDGET(self));
    return G_SOURCE_REMOVE;
}

static void shop_home_window_init(ShopHomeWindow *self)
{
    self->cancel = g_cancellable_new();
    self->steps_left = 4;
    gtk_window_set_title(GTK_WINDOW(self), "pacer shop");
    gtk_window_set_default_size(GTK_WINDOW(self), 480, 560);

    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 8);
    self->title = gtk_label_new("loading…");
    gtk_box_append(GTK_BOX(box), self->title);

    self->stack = gtk_stack_new();
    gtk_stack_add_titled(GTK_STACK(self->stack), shop_merchant_page_new(FALSE), "nearby", "Nearby");
    gtk_stack_add_titled(GTK_STACK(self->stack), shop_merchant_page_new(TRUE), "later", "Later");
    GtkWidget *switcher = gtk_stack_switcher_new();
    gtk_stack_switcher_set_stack(GTK_STACK_SWITCHER(switcher), GTK_STACK(self->stack));
    gtk_box_append(GTK_BOX(box), switcher);
    gtk_box_append(GTK_BOX(box), self->stack);

    self->recommend = gtk_button_new_with_label("Recommendations");
    g_signal_connect(self->recommend, "clicked", G_CALLBACK(on_recommend), NULL);
    gtk_box_append(GTK_BOX(box), self->recommend);

    self->list = gtk_list_box_new();
    GtkWidget *scroller = gtk_scrolled_window_new();
    gtk_widget_set_vexpand(scroller, TRUE);
    gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(scroller), self->list);
    gtk_box_append(GTK_BOX(box), scroller);
    gtk_window_set_child(GTK_WINDOW(self), box);

    /* The page starts its first request while it is still being built. */
    char *url = shop_api_url("/api/config");
    SoupMessage *msg = api_message(url);
    if (opt.sync_config) {
        GError *error = NULL;
        GBytes *body = soup_session_send_and_read(session, msg, NULL, &error);
        config_apply(self, body, error);
        if (body)
            g_bytes_unref(body);
        g_clear_error(&error);
    } else {
        soup_session_send_and_read_async(session, msg, G_PRIORITY_DEFAULT, self->cancel, config_loaded,
                                         g_object_ref(self));
    }
    g_object_unref(msg);
    g_free(url);

    self->lazy_source = g_timeout_add(shop.lazy_ms, show_lazy_page, self);
}

static void shop_home_window_dispose(GObject *object)
{
    ShopHomeWindow *self = SHOP_HOME_WINDOW(object);
    if (self->cancel)
        g_cancellable_cancel(self->cancel);
    g_clear_object(&self->cancel);
    if (self->lazy_source)
        g_source_remove(self->lazy_source);
    self->lazy_source = 0;
    G_OBJECT_CLASS(shop_home_window_parent_class)->dispose(object);
}

static void shop_home_window_class_init(ShopHomeWindowClass *klass)
{
    G_OBJECT_CLASS(klass)->dispose = shop_home_window_dispose;
}

/* ---- ShopSplashWindow ---- */

#define SHOP_TYPE_SPLASH_WINDOW (shop_splash_window_get_type())
G_DECLARE_FINAL_TYPE(ShopSplashWindow, shop_splash_window, SHOP, SPLASH_WINDOW, GtkWindow)

struct _ShopSplashWindow {
    GtkWindow parent;
};

G_DEFINE_TYPE(ShopSplashWindow, shop_splash_window, GTK_TYPE_WINDOW)

static void shop_splash_window_init(ShopSplashWindow *self)
{
    gtk_window_set_title(GTK_WINDOW(self), "pacer shop");
    gtk_window_set_default_size(GTK_WINDOW(self), 320, 200);
    gtk_window_set_child(GTK_WINDOW(self), gtk_label_new("pacer shop\nstarting…"));
}

static void shop_splash_window_class_init(ShopSplashWindowClass *klass)
{
}

/* ---- application flow ---- */

static void open_home(void)
{
    homes_opened++;
    GtkWindow *home = g_object_new(SHOP_TYPE_HOME_WINDOW, "application", app, NULL);
    gtk_window_present(home);
}

static gboolean splash_done(gpointer user)
{
    GtkWindow *splash = user;
    open_home();
    gtk_window_destroy(splash);
    return G_SOURCE_REMOVE;
}

static gboolean reopen_home(gpointer user)
{
    open_home();
    g_application_release(G_APPLICATION(app));
    return G_SOURCE_REMOVE;
}

static gboolean leave(gpointer user)
{
    if (opt.warm && homes_opened == 1) {
        /* Close every window but keep the process: the next window is a warm start. */
        g_application_hold(G_APPLICATION(app));
        GList *windows = gtk_application_get_windows(app);
        for (GList *l = g_list_copy(windows), *it = l; it; it = it->next)
            gtk_window_destroy(it->data);
        g_timeout_add(300, reopen_home, NULL);
        return G_SOURCE_REMOVE;
    }
    if (opt.exit_hard)
        exit(0); /* from inside a handler, on purpose: the agent must still flush */
    g_application_quit(G_APPLICATION(app));
    return G_SOURCE_REMOVE;
}

static void finish_run(void)
{
    if (shop.auto_exit)
        g_timeout_add(shop.linger_ms, leave, NULL);
}

/* Children an instrumented app may have: a plain fork that exits through
 * exit() (atexit handlers and stdio flushing run in the child), and a
 * second GTK program exec'd with the same environment. */
static void reaped(GPid pid, gint status, gpointer data)
{
    g_spawn_close_pid(pid);
}

static void spawn_children(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        g_usleep(100000);
        exit(0);
    }
    if (pid > 0)
        g_child_watch_add(pid, reaped, NULL);
    char *self = g_file_read_link("/proc/self/exe", NULL);
    if (!self)
        return;
    char *argv[] = {self, "--api", (char *)shop.api, "--splash-ms", "0", "--lazy-ms", "100",
                    "--linger-ms", "100", "--auto-exit", NULL};
    GError *error = NULL;
    if (!g_spawn_async(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, &error)) {
        fprintf(stderr, "shop-app: cannot spawn a child: %s\n", error->message);
        g_error_free(error);
    }
    g_free(self);
}

static void first_frame_done(GdkFrameClock *clock, gpointer data)
{
    static gboolean done;
    if (done)
        return;
    done = TRUE;
    printf("first_frame_us=%" G_GINT64_FORMAT "\n", g_get_monotonic_time());
    fflush(stdout);
    g_application_quit(G_APPLICATION(app));
}

static void first_frame_watch(GtkWidget *window, gpointer data)
{
    g_signal_connect(gtk_widget_get_frame_clock(window), "after-paint", G_CALLBACK(first_frame_done), NULL);
}

static guint startup_delay_ms;

static void on_activate(GApplication *application)
{
    if (startup_delay_ms)
        g_usleep((gulong)startup_delay_ms * 1000);
    if (opt.first_frame_exit) {
        GtkWindow *splash = g_object_new(SHOP_TYPE_SPLASH_WINDOW, "application", application, NULL);
        g_signal_connect(splash, "map", G_CALLBACK(first_frame_watch), NULL);
        gtk_window_present(splash);
        return;
    }
    if (opt.children)
        spawn_children();
    GtkWindow *splash = g_object_new(SHOP_TYPE_SPLASH_WINDOW, "application", application, NULL);
    gtk_window_present(splash);
    g_timeout_add(shop.splash_ms, splash_done, splash);
}

int main(int argc, char **argv)
{
    shop.prog = "shop-app";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (shop_option(argc, argv, &i))
            continue;
        if (strcmp(a, "--exit-mode") == 0 && v) {
            const char *m = argv[++i];
            if (strcmp(m, "exit") != 0 && strcmp(m, "quit") != 0) {
                fprintf(stderr, "shop-app: --exit-mode takes quit or exit\n");
                return 2;
            }
            opt.exit_hard = strcmp(m, "exit") == 0;
        } else if (strcmp(a, "--warm") == 0)
            opt.warm = TRUE;
        else if (strcmp(a, "--sync-config") == 0)
            opt.sync_config = TRUE;
        else if (strcmp(a, "--children") == 0)
            opt.children = TRUE;
        else if (strcmp(a, "--first-frame-exit") == 0)
            opt.first_frame_exit = TRUE;
        else {
            fprintf(stderr,
                    "usage: shop-app [--api URL] [--splash-ms N] [--lazy-ms N] [--linger-ms N]\n"
                    "                [--auto-exit] [--exit-mode quit|exit] [--warm] [--sync-config]\n"
                    "                [--children] [--first-frame-exit] [--jank-ms N] [--log-requests]\n");
            return strcmp(a, "--help") == 0 ? 0 : 2;
        }
    }
    const char *delay = getenv("SHOP_STARTUP_DELAY_MS");
    if (delay && *delay)
        startup_delay_ms = shop_parse_ms(delay, "SHOP_STARTUP_DELAY_MS");
    curl_global_init(CURL_GLOBAL_DEFAULT);
    session = soup_session_new();
    app = gtk_application_new("org.pacer.Shop", G_APPLICATION_NON_UNIQUE);
    g_signal_connect(app, "activate", G_CALLBACK(on_activate), NULL);
    char *args[] = {argv[0], NULL};
    int status = g_application_run(G_APPLICATION(app), 1, args);
    g_object_unref(app);
    g_object_unref(session);
    curl_global_cleanup();
    return status;
}
