/* phases-app: a GTK 4 program with one slow widget (PhasesSlowWidget), for
 * the agent's frame phases (test_frame_phases.py). Like the demo, it
 * contains no pacer code.
 *
 *   --slow layout     the widget's measure takes --work-ms (default 40) of
 *                     CPU per call while a tick callback queues a resize
 *                     (and a draw) every frame
 *   --slow paint      its snapshot takes --work-ms per call while a tick
 *                     callback queues a draw every frame
 *   --run-ms N        how long the tick callback keeps asking (default
 *                     1500); then the window closes and the app quits
 *
 * Its window is PhasesAppWindow. Exits 0.
 */
#include <gtk/gtk.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app-clock.h"

static int slow_layout, work_ms = 40, run_ms = 1500;

#define PHASES_TYPE_SLOW_WIDGET (phases_slow_widget_get_type())
G_DECLARE_FINAL_TYPE(PhasesSlowWidget, phases_slow_widget, PHASES, SLOW_WIDGET, GtkWidget)

struct _PhasesSlowWidget {
    GtkWidget parent;
    unsigned frames;
};

G_DEFINE_TYPE(PhasesSlowWidget, phases_slow_widget, GTK_TYPE_WIDGET)

static void slow_measure(GtkWidget *w, GtkOrientation o, int for_size, int *min, int *nat, int *min_b, int *nat_b)
{
    if (slow_layout)
        busy(work_ms);
    *min = 50;
    *nat = 100 + (int)(PHASES_SLOW_WIDGET(w)->frames % 2);
}

static void slow_snapshot(GtkWidget *w, GtkSnapshot *s)
{
    if (!slow_layout)
        busy(work_ms);
    PhasesSlowWidget *self = PHASES_SLOW_WIDGET(w);
    GdkRGBA c = {(self->frames % 10) / 10.0f, 0.4f, 0.6f, 1.0f};
    gtk_snapshot_append_color(s, &c,
                              &GRAPHENE_RECT_INIT(0, 0, gtk_widget_get_width(w), gtk_widget_get_height(w)));
}

static void phases_slow_widget_class_init(PhasesSlowWidgetClass *klass)
{
    GTK_WIDGET_CLASS(klass)->measure = slow_measure;
    GTK_WIDGET_CLASS(klass)->snapshot = slow_snapshot;
}

static void phases_slow_widget_init(PhasesSlowWidget *self)
{
}

static int64_t started;

static gboolean tick(GtkWidget *w, GdkFrameClock *clock, gpointer data)
{
    PhasesSlowWidget *self = PHASES_SLOW_WIDGET(w);
    if (now_ms() - started >= run_ms) {
        gtk_window_destroy(GTK_WINDOW(data));
        return G_SOURCE_REMOVE;
    }
    self->frames++;
    if (slow_layout)
        gtk_widget_queue_resize(w);
    gtk_widget_queue_draw(w);
    return G_SOURCE_CONTINUE;
}

static void activate(GtkApplication *app, gpointer data)
{
    GType window_type = GPOINTER_TO_SIZE(data);
    GtkWidget *win = g_object_new(window_type, "application", app, NULL);
    gtk_window_set_default_size(GTK_WINDOW(win), 300, 200);
    GtkWidget *slow = g_object_new(PHASES_TYPE_SLOW_WIDGET, NULL);
    gtk_window_set_child(GTK_WINDOW(win), slow);
    started = now_ms();
    gtk_widget_add_tick_callback(slow, tick, win, NULL);
    gtk_window_present(GTK_WINDOW(win));
}

/* The window's own type, so that its records name it. */
static GType window_type(void)
{
    static GType t;
    if (!t) {
        GTypeQuery q;
        g_type_query(GTK_TYPE_WINDOW, &q);
        t = g_type_register_static_simple(GTK_TYPE_WINDOW, "PhasesAppWindow", q.class_size, NULL, q.instance_size,
                                          NULL, 0);
    }
    return t;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--slow") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(v, "layout") == 0)
                slow_layout = 1;
            else if (strcmp(v, "paint") == 0)
                slow_layout = 0;
            else {
                fprintf(stderr, "phases-app: --slow wants layout or paint\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--work-ms") == 0 && i + 1 < argc) {
            work_ms = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--run-ms") == 0 && i + 1 < argc) {
            run_ms = atoi(argv[++i]);
        } else {
            fprintf(stderr, "phases-app: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    GtkApplication *app = gtk_application_new(NULL, G_APPLICATION_NON_UNIQUE);
    g_signal_connect(app, "activate", G_CALLBACK(activate), GSIZE_TO_POINTER(window_type()));
    int rc = g_application_run(G_APPLICATION(app), 1, argv);
    g_object_unref(app);
    return rc;
}
