/* leak-app: a small GTK4 program the agent tests run under `pacer run` to
 * check `leak` records (kind "object") against known ground truth. It
 * contains no pacer code.
 *
 * It opens a LeakAppWindow (a box with a GtkLabel and a GtkButton), closes
 * it with gtk_window_destroy() after --close-ms (default 300), and quits
 * --linger-ms (default 2500) later. Options:
 *   --keep-label      leak_app_stash_label() keeps a reference to the
 *                     window's label in a global, and never drops it: the
 *                     label outlives its window (one leak: GtkLabel);
 *   --release-ms N    with --keep-label: drop that reference N ms after the
 *                     window was destroyed (within the grace period: no
 *                     leak);
 *   --cached-dialog   also builds a LeakAppDialog once, shows it, and hides
 *                     it on close instead of destroying it, keeping it in a
 *                     global to show again (kept on purpose: no leak);
 *   --windows N       opens and closes N windows one after the other (each
 *                     with its own label when --keep-label), 200 ms apart.
 * Exits 0.
 */
#include <gtk/gtk.h>

#include <stdlib.h>
#include <string.h>

#define LEAK_APP_TYPE_WINDOW (leak_app_window_get_type())
G_DECLARE_FINAL_TYPE(LeakAppWindow, leak_app_window, LEAK_APP, WINDOW, GtkWindow)
struct _LeakAppWindow {
    GtkWindow parent;
    GtkWidget *label;
};
G_DEFINE_TYPE(LeakAppWindow, leak_app_window, GTK_TYPE_WINDOW)

#define LEAK_APP_TYPE_DIALOG (leak_app_dialog_get_type())
G_DECLARE_FINAL_TYPE(LeakAppDialog, leak_app_dialog, LEAK_APP, DIALOG, GtkWindow)
struct _LeakAppDialog {
    GtkWindow parent;
};
G_DEFINE_TYPE(LeakAppDialog, leak_app_dialog, GTK_TYPE_WINDOW)

static struct {
    guint close_ms, linger_ms, release_ms, windows;
    gboolean keep_label, cached_dialog;
} opt = {.close_ms = 300, .linger_ms = 2500, .windows = 1};

static GMainLoop *loop;
static GPtrArray *kept_labels; /* the leak: references never dropped */
static GtkWidget *cached_dialog; /* kept on purpose */
static guint windows_left;

static void leak_app_window_init(LeakAppWindow *self)
{
    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 6);
    self->label = gtk_label_new("a label the app keeps");
    gtk_box_append(GTK_BOX(box), self->label);
    gtk_box_append(GTK_BOX(box), gtk_button_new_with_label("a button"));
    gtk_window_set_child(GTK_WINDOW(self), box);
    gtk_window_set_default_size(GTK_WINDOW(self), 300, 200);
}

static void leak_app_window_class_init(LeakAppWindowClass *klass)
{
}

static void leak_app_dialog_init(LeakAppDialog *self)
{
    gtk_window_set_child(GTK_WINDOW(self), gtk_label_new("a dialog kept for later"));
    gtk_window_set_hide_on_close(GTK_WINDOW(self), TRUE);
}

static void leak_app_dialog_class_init(LeakAppDialogClass *klass)
{
}

/* The reference that is never dropped. */
__attribute__((noinline)) static void leak_app_stash_label(GtkWidget *label)
{
    g_ptr_array_add(kept_labels, g_object_ref(label));
}

static gboolean release_labels(gpointer data)
{
    g_ptr_array_set_size(kept_labels, 0); /* unrefs them */
    return G_SOURCE_REMOVE;
}

static gboolean quit(gpointer data)
{
    g_main_loop_quit(loop);
    return G_SOURCE_REMOVE;
}

static gboolean open_one(gpointer data);

static gboolean close_window(gpointer data)
{
    gtk_window_destroy(GTK_WINDOW(data));
    if (opt.release_ms)
        g_timeout_add(opt.release_ms, release_labels, NULL);
    if (--windows_left > 0)
        g_timeout_add(200, open_one, NULL);
    else
        g_timeout_add(opt.linger_ms, quit, NULL);
    return G_SOURCE_REMOVE;
}

static gboolean hide_dialog(gpointer data)
{
    gtk_window_close(GTK_WINDOW(cached_dialog)); /* hide-on-close: hidden, not destroyed */
    return G_SOURCE_REMOVE;
}

static gboolean open_one(gpointer data)
{
    LeakAppWindow *w = g_object_new(LEAK_APP_TYPE_WINDOW, NULL);
    if (opt.keep_label)
        leak_app_stash_label(w->label);
    gtk_window_present(GTK_WINDOW(w));
    g_timeout_add(opt.close_ms, close_window, w);
    return G_SOURCE_REMOVE;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : "0";
        if (strcmp(a, "--keep-label") == 0)
            opt.keep_label = TRUE;
        else if (strcmp(a, "--cached-dialog") == 0)
            opt.cached_dialog = TRUE;
        else if (strcmp(a, "--release-ms") == 0)
            opt.release_ms = (guint)atoi(v), i++;
        else if (strcmp(a, "--close-ms") == 0)
            opt.close_ms = (guint)atoi(v), i++;
        else if (strcmp(a, "--linger-ms") == 0)
            opt.linger_ms = (guint)atoi(v), i++;
        else if (strcmp(a, "--windows") == 0)
            opt.windows = (guint)atoi(v), i++;
    }
    gtk_init();
    loop = g_main_loop_new(NULL, FALSE);
    kept_labels = g_ptr_array_new_with_free_func(g_object_unref);
    if (opt.cached_dialog) {
        cached_dialog = g_object_new(LEAK_APP_TYPE_DIALOG, NULL);
        gtk_window_present(GTK_WINDOW(cached_dialog));
        g_timeout_add(150, hide_dialog, NULL);
    }
    windows_left = opt.windows;
    open_one(NULL);
    g_main_loop_run(loop);
    return 0;
}
