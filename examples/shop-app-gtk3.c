/* shop-app-gtk3: the demo shop as a GTK 3 application on libsoup-2.4 and
 * libcurl, what most GTK 3 programs are built on. Like shop-app (its GTK 4
 * twin), it contains no pacer code; `pacer run -- shop-app-gtk3 …` measures
 * it through the agent's GTK 3 adapter, with the same config
 * (examples/shop.xml).
 *
 *   1. activate: a splash window (ShopSplashWindow, configured as splash)
 *      shows for --splash-ms.
 *   2. Then the home window (ShopHomeWindow, the main page) is created.
 *      Inside its own init it queues GET /api/config with libsoup-2.4
 *      (soup_session_queue_message, the classic 2.4 call), so the request
 *      counts for the page although the page does not exist for the app
 *      yet. When that answers it sends GET /api/list
 *      (soup_session_send_async, reading the stream) and fills a list: the
 *      final draw.
 *   3. The home window holds a GtkStack of two merchant pages
 *      (ShopMerchantPage, configured with /api/test1), each loading
 *      /api/test1 with libcurl on a worker thread: "nearby" with
 *      curl_easy_perform, "later" with the multi interface. "later" is
 *      selected only --lazy-ms after the home window was created: the lazy
 *      page.
 *   4. With --auto-exit the app quits --linger-ms after all of that is on
 *      screen.
 *
 * Options: --api URL (default http://127.0.0.1:8080), --splash-ms N (400),
 * --lazy-ms N (1500), --linger-ms N (800), --auto-exit, --jank-ms N (once
 * everything loaded, the "Recommendations" button is pressed by itself: its
 * handler blocks the main loop N ms in shop_compute_recommendations()),
 * --log-requests (prints "shop-app-gtk3: request PATH START END" on stderr
 * for every request, START and END in CLOCK_MONOTONIC µs as the app sees
 * them: before the send call, and when libsoup's message emits "finished"
 * or libcurl's transfer returns), --close-home (at the end, closes the home
 * window and quits --quit-ms later, default 2000: it is destroyed while the
 * app runs), --leak (with --close-home: a reference to the home window's
 * title label is kept in a global when it closes, the leak the agent
 * reports).
 */
#include "shop-common.h"

#include <curl/curl.h>
#include <gtk/gtk.h>
#include <libsoup/soup.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Beside shop-common.h's options (`shop`), this app's own. */
static struct {
    guint quit_ms;
    gboolean close_home, leak;
} opt = {2000, FALSE, FALSE};

static GtkWidget *kept_label; /* --leak */

static GtkApplication *app;
static SoupSession *session;

static const char *message_path(GObject *msg)
{
    return soup_uri_get_path(soup_message_get_uri(SOUP_MESSAGE(msg)));
}

/* A GET of url whose start and end --log-requests reports; made just
 * before it is sent. */
static SoupMessage *api_message(const char *url)
{
    SoupMessage *msg = soup_message_new("GET", url);
    shop_log_message(G_OBJECT(msg), message_path);
    return msg;
}

static void home_step_done(GtkWidget *any_child);

/* ---- ShopMerchantPage: a stack page that loads /api/test1 with libcurl ---- */

#define SHOP_TYPE_MERCHANT_PAGE (shop_merchant_page_get_type())
G_DECLARE_FINAL_TYPE(ShopMerchantPage, shop_merchant_page, SHOP, MERCHANT_PAGE, GtkBox)

struct _ShopMerchantPage {
    GtkBox parent;
    GtkWidget *label;
    gboolean use_multi;
};

G_DEFINE_TYPE(ShopMerchantPage, shop_merchant_page, GTK_TYPE_BOX)

static void merchant_loaded(GObject *source, GAsyncResult *res, gpointer user)
{
    ShopMerchantPage *self = SHOP_MERCHANT_PAGE(source);
    GError *error = NULL;
    char *body = g_task_propagate_pointer(G_TASK(res), &error);
    char *text = shop_merchant_text(body, error);
    gtk_label_set_text(GTK_LABEL(self->label), text);
    g_free(text);
    g_free(body);
    g_clear_error(&error);
    home_step_done(GTK_WIDGET(self));
}

static void shop_merchant_page_init(ShopMerchantPage *self)
{
    gtk_orientable_set_orientation(GTK_ORIENTABLE(self), GTK_ORIENTATION_VERTICAL);
    gtk_box_set_spacing(GTK_BOX(self), 6);
    self->label = gtk_label_new("loading merchant…");
    gtk_container_add(GTK_CONTAINER(self), self->label);
}

static void shop_merchant_page_class_init(ShopMerchantPageClass *klass)
{
}

static GtkWidget *shop_merchant_page_new(gboolean use_multi)
{
    ShopMerchantPage *self = g_object_new(SHOP_TYPE_MERCHANT_PAGE, NULL);
    self->use_multi = use_multi;
    GTask *task = g_task_new(self, NULL, merchant_loaded, NULL);
    g_task_set_task_data(task, GINT_TO_POINTER(use_multi), NULL);
    g_task_run_in_thread(task, shop_merchant_fetch);
    g_object_unref(task);
    return GTK_WIDGET(self);
}

/* ---- ShopHomeWindow: the main page ---- */

#define SHOP_TYPE_HOME_WINDOW (shop_home_window_get_type())
G_DECLARE_FINAL_TYPE(ShopHomeWindow, shop_home_window, SHOP, HOME_WINDOW, GtkApplicationWindow)

struct _ShopHomeWindow {
    GtkApplicationWindow parent;
    GtkWidget *title, *list, *stack, *recommend;
    GCancellable *cancel;
    guint lazy_source;
    int steps_left; /* list loaded, 2 merchants loaded, lazy page shown */
};

G_DEFINE_TYPE(ShopHomeWindow, shop_home_window, GTK_TYPE_APPLICATION_WINDOW)

static void finish_run(ShopHomeWindow *home);

/* The slow code of the demo: busy on the GTK thread for ms (a computation,
 * not a sleep), in a frame of its own. */
static __attribute__((noinline)) double shop_compute_recommendations(guint ms)
{
    gint64 until = g_get_monotonic_time() + (gint64)ms * 1000;
    double score = 0;
    for (unsigned i = 1; g_get_monotonic_time() < until; i++)
        score += (double)(i % 97) / (double)(i % 89 + 1);
    return score;
}

static void on_recommend(GtkButton *button, gpointer user)
{
    char label[64];
    snprintf(label, sizeof(label), "Recommendations (%.0f)",
             shop_compute_recommendations(shop.jank_ms ? shop.jank_ms : 1000));
    gtk_button_set_label(button, label);
}

static void home_step_done(GtkWidget *any_child)
{
    GtkWidget *top = gtk_widget_get_toplevel(any_child);
    if (!top || !SHOP_IS_HOME_WINDOW(top))
        return;
    ShopHomeWindow *self = SHOP_HOME_WINDOW(top);
    if (--self->steps_left == 0) {
        if (shop.jank_ms)
            gtk_button_clicked(GTK_BUTTON(self->recommend)); /* as by the user */
        finish_run(self);
    }
}

static void list_add(gpointer list, const char *name)
{
    gtk_container_add(GTK_CONTAINER(list), gtk_label_new(name));
}

/* /api/list read to its end (or failed). */
static void list_read(GObject *owner, const char *body, GError *error)
{
    ShopHomeWindow *self = SHOP_HOME_WINDOW(owner);
    if (body) {
        shop_list_fill(body, list_add, self->list);
        gtk_widget_show_all(self->list);
        home_step_done(GTK_WIDGET(self));
    } else if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
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
            g_printerr("shop-app-gtk3: request failed: %s\n", error->message);
            home_step_done(GTK_WIDGET(self));
        }
        g_error_free(error);
        g_object_unref(self);
        return;
    }
    shop_read_all(stream, &self->cancel, G_OBJECT(self), list_read); /* the reference taken for the send */
}

/* libsoup-2.4's queue callback: /api/config answered (or failed). */
static void config_loaded(SoupSession *s, SoupMessage *msg, gpointer user)
{
    ShopHomeWindow *self = user;
    if (msg->status_code == SOUP_STATUS_CANCELLED) {
        g_object_unref(self);
        return;
    }
    char *title = shop_answer_field(msg->response_body->data, -1, "title");
    if (SOUP_STATUS_IS_SUCCESSFUL(msg->status_code) && title) {
        gtk_label_set_text(GTK_LABEL(self->title), title);
    } else {
        gtk_label_set_text(GTK_LABEL(self->title), msg->reason_phrase);
        if (!SOUP_STATUS_IS_SUCCESSFUL(msg->status_code))
            g_printerr("shop-app-gtk3: request failed: %s\n", msg->reason_phrase);
    }
    g_free(title);
    /* Second request, streamed: GET /api/list. */
    char *url = shop_api_url("/api/list");
    SoupMessage *list = api_message(url);
    soup_session_send_async(session, list, self->cancel, list_sent, self); /* our reference goes on */
    g_object_unref(list);
    g_free(url);
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
    gtk_window_set_title(GTK_WINDOW(self), "pacer shop (GTK 3)");
    gtk_window_set_default_size(GTK_WINDOW(self), 480, 560);

    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 8);
    self->title = gtk_label_new("loading…");
    gtk_container_add(GTK_CONTAINER(box), self->title);

    self->stack = gtk_stack_new();
    gtk_stack_add_titled(GTK_STACK(self->stack), shop_merchant_page_new(FALSE), "nearby", "Nearby");
    gtk_stack_add_titled(GTK_STACK(self->stack), shop_merchant_page_new(TRUE), "later", "Later");
    GtkWidget *switcher = gtk_stack_switcher_new();
    gtk_stack_switcher_set_stack(GTK_STACK_SWITCHER(switcher), GTK_STACK(self->stack));
    gtk_container_add(GTK_CONTAINER(box), switcher);
    gtk_container_add(GTK_CONTAINER(box), self->stack);

    self->recommend = gtk_button_new_with_label("Recommendations");
    g_signal_connect(self->recommend, "clicked", G_CALLBACK(on_recommend), NULL);
    gtk_container_add(GTK_CONTAINER(box), self->recommend);

    self->list = gtk_list_box_new();
    GtkWidget *scroller = gtk_scrolled_window_new(NULL, NULL);
    gtk_widget_set_vexpand(scroller, TRUE);
    gtk_container_add(GTK_CONTAINER(scroller), self->list);
    gtk_container_add(GTK_CONTAINER(box), scroller);
    gtk_container_add(GTK_CONTAINER(self), box);
    gtk_widget_show_all(box);

    /* The page starts its first request while it is still being built. */
    char *url = shop_api_url("/api/config");
    SoupMessage *msg = api_message(url);
    soup_session_queue_message(session, msg, config_loaded, g_object_ref(self)); /* takes msg */
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
    GtkWidget *label = gtk_label_new("pacer shop\nstarting…");
    gtk_container_add(GTK_CONTAINER(self), label);
    gtk_widget_show(label);
}

static void shop_splash_window_class_init(ShopSplashWindowClass *klass)
{
}

/* ---- application flow ---- */

static gboolean splash_done(gpointer user)
{
    GtkWindow *home = g_object_new(SHOP_TYPE_HOME_WINDOW, "application", app, NULL);
    gtk_window_present(home);
    gtk_widget_destroy(GTK_WIDGET(user));
    return G_SOURCE_REMOVE;
}

static gboolean quit(gpointer user)
{
    g_application_quit(G_APPLICATION(app));
    return G_SOURCE_REMOVE;
}

static gboolean leave(gpointer user)
{
    if (!opt.close_home)
        return quit(NULL);
    ShopHomeWindow *home = user;
    if (opt.leak)
        kept_label = g_object_ref(home->title); /* outlives its window */
    g_application_hold(G_APPLICATION(app));
    gtk_widget_destroy(GTK_WIDGET(home));
    g_timeout_add(opt.quit_ms, quit, NULL);
    return G_SOURCE_REMOVE;
}

static void finish_run(ShopHomeWindow *home)
{
    if (shop.auto_exit)
        g_timeout_add(shop.linger_ms, leave, home);
}

static void on_activate(GApplication *application)
{
    GtkWindow *splash = g_object_new(SHOP_TYPE_SPLASH_WINDOW, "application", application, NULL);
    gtk_window_present(splash);
    g_timeout_add(shop.splash_ms, splash_done, splash);
}

int main(int argc, char **argv)
{
    shop.prog = "shop-app-gtk3";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (shop_option(argc, argv, &i))
            continue;
        if (strcmp(a, "--quit-ms") == 0 && v)
            opt.quit_ms = shop_parse_ms(argv[++i], a);
        else if (strcmp(a, "--leak") == 0)
            opt.leak = TRUE;
        else if (strcmp(a, "--close-home") == 0)
            opt.close_home = TRUE;
        else {
            fprintf(stderr, "usage: shop-app-gtk3 [--api URL] [--splash-ms N] [--lazy-ms N] [--linger-ms N]\n"
                            "                     [--auto-exit] [--jank-ms N] [--log-requests]\n"
                            "                     [--close-home [--quit-ms N] [--leak]]\n");
            return strcmp(a, "--help") == 0 ? 0 : 2;
        }
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    session = soup_session_new();
    app = gtk_application_new("org.pacer.ShopGtk3", G_APPLICATION_NON_UNIQUE);
    g_signal_connect(app, "activate", G_CALLBACK(on_activate), NULL);
    char *args[] = {argv[0], NULL};
    int status = g_application_run(G_APPLICATION(app), 1, args);
    g_object_unref(app);
    g_object_unref(session);
    curl_global_cleanup();
    return status;
}
