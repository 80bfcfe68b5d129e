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
#include <curl/curl.h>
#include <gtk/gtk.h>
#include <libsoup/soup.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    const char *api;
    guint splash_ms, lazy_ms, linger_ms, jank_ms, quit_ms;
    gboolean auto_exit, log_requests, close_home, leak;
} opt = {"http://127.0.0.1:8080", 400, 1500, 800, 0, 2000, FALSE, FALSE, FALSE, FALSE};

static GtkWidget *kept_label; /* --leak */

static GtkApplication *app;
static SoupSession *session;

static void log_request(const char *path, gint64 start_us, gint64 end_us)
{
    if (opt.log_requests)
        fprintf(stderr, "shop-app-gtk3: request %s %" G_GINT64_FORMAT " %" G_GINT64_FORMAT "\n", path, start_us,
                end_us);
}

static void on_message_finished(SoupMessage *msg, gpointer start)
{
    log_request(soup_uri_get_path(soup_message_get_uri(msg)), *(gint64 *)start, g_get_monotonic_time());
}

static void free_start(gpointer start, GClosure *closure)
{
    (void)closure;
    g_free(start);
}

/* A GET of url whose start and end --log-requests reports; made just
 * before it is sent. */
static SoupMessage *api_message(const char *url)
{
    SoupMessage *msg = soup_message_new("GET", url);
    if (opt.log_requests) {
        gint64 *start = g_new(gint64, 1);
        *start = g_get_monotonic_time();
        g_signal_connect_data(msg, "finished", G_CALLBACK(on_message_finished), start, free_start, 0);
    }
    return msg;
}

static char *api_url(const char *path)
{
    return g_strconcat(opt.api, path, NULL);
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

static size_t curl_sink(char *data, size_t size, size_t n, void *user)
{
    g_string_append_len(user, data, (gssize)(size * n));
    return size * n;
}

/* Runs on a GTask worker thread: the whole transfer, easy or multi. */
static void merchant_fetch(GTask *task, gpointer source, gpointer data, GCancellable *cancel)
{
    gboolean use_multi = GPOINTER_TO_INT(data);
    GString *body = g_string_new(NULL);
    char *url = api_url("/api/test1");
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, curl_sink);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = CURLE_OK;
    gint64 start_us = g_get_monotonic_time();
    if (!use_multi) {
        rc = curl_easy_perform(h);
    } else {
        CURLM *m = curl_multi_init();
        curl_multi_add_handle(m, h);
        int running = 1;
        while (running) {
            curl_multi_perform(m, &running);
            if (running)
                curl_multi_poll(m, NULL, 0, 1000, NULL);
        }
        int left;
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(m, &left)))
            if (msg->msg == CURLMSG_DONE)
                rc = msg->data.result;
        curl_multi_remove_handle(m, h);
        curl_multi_cleanup(m);
    }
    log_request("/api/test1", start_us, g_get_monotonic_time());
    curl_easy_cleanup(h);
    g_free(url);
    if (rc != CURLE_OK) {
        g_string_free(body, TRUE);
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", curl_easy_strerror(rc));
        return;
    }
    g_task_return_pointer(task, g_string_free(body, FALSE), g_free);
}

static void merchant_loaded(GObject *source, GAsyncResult *res, gpointer user)
{
    ShopMerchantPage *self = SHOP_MERCHANT_PAGE(source);
    GError *error = NULL;
    char *body = g_task_propagate_pointer(G_TASK(res), &error);
    const char *name = body ? strstr(body, "\"merchant\":\"") : NULL;
    char *text;
    if (name) {
        name += strlen("\"merchant\":\"");
        text = g_strdup_printf("%.*s — open now", (int)strcspn(name, "\""), name);
    } else {
        text = g_strdup_printf("failed: %s", error ? error->message : "bad answer");
        if (error)
            g_printerr("shop-app-gtk3: request failed: %s\n", error->message);
    }
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
    g_task_run_in_thread(task, merchant_fetch);
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
             shop_compute_recommendations(opt.jank_ms ? opt.jank_ms : 1000));
    gtk_button_set_label(button, label);
}

static void home_step_done(GtkWidget *any_child)
{
    GtkWidget *top = gtk_widget_get_toplevel(any_child);
    if (!top || !SHOP_IS_HOME_WINDOW(top))
        return;
    ShopHomeWindow *self = SHOP_HOME_WINDOW(top);
    if (--self->steps_left == 0) {
        if (opt.jank_ms)
            gtk_button_clicked(GTK_BUTTON(self->recommend)); /* as by the user */
        finish_run(self);
    }
}

static void list_fill(ShopHomeWindow *self, const char *json)
{
    int n = 0;
    for (const char *p = json; (p = strstr(p, "\"name\":\"")); n++) {
        p += strlen("\"name\":\"");
        char *name = g_strndup(p, strcspn(p, "\""));
        gtk_container_add(GTK_CONTAINER(self->list), gtk_label_new(name));
        g_free(name);
    }
    if (n == 0)
        gtk_container_add(GTK_CONTAINER(self->list), gtk_label_new("no items"));
    gtk_widget_show_all(self->list);
}

typedef struct {
    ShopHomeWindow *self;
    GInputStream *stream;
    GByteArray *buf;
    guint8 chunk[4096];
} list_read;

static void list_read_more(list_read *lr);

static void list_chunk(GObject *src, GAsyncResult *res, gpointer user)
{
    list_read *lr = user;
    GError *error = NULL;
    gssize n = g_input_stream_read_finish(G_INPUT_STREAM(src), res, &error);
    if (n > 0) {
        g_byte_array_append(lr->buf, lr->chunk, (guint)n);
        list_read_more(lr);
        return;
    }
    if (n == 0) {
        g_byte_array_append(lr->buf, (const guint8 *)"", 1);
        list_fill(lr->self, (const char *)lr->buf->data);
        home_step_done(GTK_WIDGET(lr->self));
    } else if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        home_step_done(GTK_WIDGET(lr->self));
    }
    g_clear_error(&error);
    g_input_stream_close(lr->stream, NULL, NULL);
    g_object_unref(lr->stream);
    g_byte_array_unref(lr->buf);
    g_object_unref(lr->self);
    g_free(lr);
}

static void list_read_more(list_read *lr)
{
    g_input_stream_read_async(lr->stream, lr->chunk, sizeof(lr->chunk), G_PRIORITY_DEFAULT, lr->self->cancel,
                              list_chunk, lr);
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
    list_read *lr = g_new0(list_read, 1);
    lr->self = self; /* keeps the reference taken for the send */
    lr->stream = stream;
    lr->buf = g_byte_array_new();
    list_read_more(lr);
}

/* libsoup-2.4's queue callback: /api/config answered (or failed). */
static void config_loaded(SoupSession *s, SoupMessage *msg, gpointer user)
{
    ShopHomeWindow *self = user;
    if (msg->status_code == SOUP_STATUS_CANCELLED) {
        g_object_unref(self);
        return;
    }
    const char *t = msg->response_body->data ? strstr(msg->response_body->data, "\"title\":\"") : NULL;
    if (SOUP_STATUS_IS_SUCCESSFUL(msg->status_code) && t) {
        t += strlen("\"title\":\"");
        char *title = g_strndup(t, strcspn(t, "\""));
        gtk_label_set_text(GTK_LABEL(self->title), title);
        g_free(title);
    } else {
        gtk_label_set_text(GTK_LABEL(self->title), msg->reason_phrase);
        if (!SOUP_STATUS_IS_SUCCESSFUL(msg->status_code))
            g_printerr("shop-app-gtk3: request failed: %s\n", msg->reason_phrase);
    }
    /* Second request, streamed: GET /api/list. */
    char *url = api_url("/api/list");
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
    char *url = api_url("/api/config");
    SoupMessage *msg = api_message(url);
    soup_session_queue_message(session, msg, config_loaded, g_object_ref(self)); /* takes msg */
    g_free(url);

    self->lazy_source = g_timeout_add(opt.lazy_ms, show_lazy_page, self);
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
    if (opt.auto_exit)
        g_timeout_add(opt.linger_ms, leave, home);
}

static void on_activate(GApplication *application)
{
    GtkWindow *splash = g_object_new(SHOP_TYPE_SPLASH_WINDOW, "application", application, NULL);
    gtk_window_present(splash);
    g_timeout_add(opt.splash_ms, splash_done, splash);
}

static guint parse_ms(const char *s, const char *name)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*end || v > 600000) {
        fprintf(stderr, "shop-app-gtk3: bad %s '%s'\n", name, s);
        exit(2);
    }
    return (guint)v;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--api") == 0 && v)
            opt.api = argv[++i];
        else if (strcmp(a, "--splash-ms") == 0 && v)
            opt.splash_ms = parse_ms(argv[++i], a);
        else if (strcmp(a, "--lazy-ms") == 0 && v)
            opt.lazy_ms = parse_ms(argv[++i], a);
        else if (strcmp(a, "--linger-ms") == 0 && v)
            opt.linger_ms = parse_ms(argv[++i], a);
        else if (strcmp(a, "--jank-ms") == 0 && v)
            opt.jank_ms = parse_ms(argv[++i], a);
        else if (strcmp(a, "--quit-ms") == 0 && v)
            opt.quit_ms = parse_ms(argv[++i], a);
        else if (strcmp(a, "--leak") == 0)
            opt.leak = TRUE;
        else if (strcmp(a, "--auto-exit") == 0)
            opt.auto_exit = TRUE;
        else if (strcmp(a, "--log-requests") == 0)
            opt.log_requests = TRUE;
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
