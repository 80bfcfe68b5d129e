/* pages-app: a window that gets a new page of the app's own type LatePage
 * every --every-ms, --pages times (appended to a box: every page stays
 * visible), then quits. Each page, in its
 * own init, starts a libcurl request to --url on a worker thread; when the
 * request ends the worker hands the result to the GTK thread, which shows
 * it in the page. A spinner keeps the window painting every frame, so the
 * agent sees paints land while requests end on other threads. It quits
 * 300 ms after the last result was shown.
 *
 *   pages-app --url URL [--pages N] [--every-ms MS]
 *
 * Prints one line per page to stdout: "page K created T" (T: CLOCK_MONOTONIC
 * ns when its init began), so a test can tell which pages were created
 * after a config changed.
 */
#include <curl/curl.h>
#include <gtk/gtk.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *url;
static int pages = 5, every_ms = 300, made, shown;
static GtkWidget *list;
static GtkApplication *app;

#define LATE_TYPE_PAGE (late_page_get_type())
G_DECLARE_FINAL_TYPE(LatePage, late_page, LATE, PAGE, GtkBox)

struct _LatePage {
    GtkBox parent;
    GtkWidget *label;
};

G_DEFINE_TYPE(LatePage, late_page, GTK_TYPE_BOX)

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
    return size * n;
}

typedef struct fetch {
    LatePage *page; /* a reference, dropped on the GTK thread */
    long status;
} fetch;

static gboolean quit(gpointer data)
{
    g_application_quit(G_APPLICATION(app));
    return G_SOURCE_REMOVE;
}

static gboolean show_result(gpointer data)
{
    fetch *f = data;
    char text[64];
    snprintf(text, sizeof(text), "status %ld", f->status);
    gtk_label_set_text(GTK_LABEL(f->page->label), text);
    g_object_unref(f->page);
    free(f);
    if (++shown == pages)
        g_timeout_add(300, quit, NULL);
    return G_SOURCE_REMOVE;
}

static gpointer worker(gpointer data)
{
    fetch *f = data;
    CURL *c = curl_easy_init();
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &f->status);
    else
        fprintf(stderr, "pages-app: request failed: %s\n", errbuf);
    curl_easy_cleanup(c);
    g_idle_add(show_result, f);
    return NULL;
}

static void late_page_init(LatePage *self)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    printf("page %d created %lld\n", made, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    fflush(stdout);
    self->label = gtk_label_new("loading");
    gtk_box_append(GTK_BOX(self), self->label);
    fetch *f = calloc(1, sizeof(*f));
    f->page = g_object_ref(self);
    g_thread_unref(g_thread_new("fetch", worker, f));
}

static void late_page_class_init(LatePageClass *klass)
{
}

static gboolean add_page(gpointer data)
{
    if (made >= pages)
        return G_SOURCE_REMOVE;
    made++;
    gtk_box_append(GTK_BOX(list), g_object_new(LATE_TYPE_PAGE, NULL));
    return G_SOURCE_CONTINUE;
}

static void activate(GtkApplication *a, gpointer data)
{
    GtkWidget *win = gtk_application_window_new(a);
    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
    GtkWidget *spinner = gtk_spinner_new();
    gtk_spinner_start(GTK_SPINNER(spinner));
    list = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
    gtk_box_append(GTK_BOX(box), spinner);
    gtk_box_append(GTK_BOX(box), list);
    gtk_window_set_child(GTK_WINDOW(win), box);
    gtk_window_present(GTK_WINDOW(win));
    g_timeout_add(every_ms, add_page, NULL);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--url") == 0 && i + 1 < argc)
            url = argv[++i];
        else if (strcmp(argv[i], "--pages") == 0 && i + 1 < argc)
            pages = atoi(argv[++i]);
        else if (strcmp(argv[i], "--every-ms") == 0 && i + 1 < argc)
            every_ms = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: pages-app --url URL [--pages N] [--every-ms MS]\n");
            return 2;
        }
    }
    if (!url) {
        fprintf(stderr, "pages-app: --url is required\n");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    app = gtk_application_new("dev.pacer.PagesApp", G_APPLICATION_NON_UNIQUE);
    g_signal_connect(app, "activate", G_CALLBACK(activate), NULL);
    int rc = g_application_run(G_APPLICATION(app), 1, argv);
    g_object_unref(app);
    curl_global_cleanup();
    return rc;
}
