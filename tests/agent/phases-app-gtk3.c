/* phases-app-gtk3: phases-app.c's twin on GTK 3 (test_frame_phases.py):
 * one widget (PhasesSlowWidget3) whose size request (get_preferred_width
 * and _height) or draw takes --work-ms (default 40) of CPU per call while
 * a tick callback queues a resize (and a draw), or a draw, every frame for
 * --run-ms (default 1500); then the window (PhasesApp3Window) closes and
 * the app quits. It contains no pacer code.
 *
 *   phases-app-gtk3 --slow layout|paint [--work-ms N] [--run-ms N]
 */
#include <gtk/gtk.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app-clock.h"

static int slow_layout, work_ms = 40, run_ms = 1500;
static unsigned frames;

typedef struct {
    GtkDrawingArea parent;
} PhasesSlowWidget3;
typedef struct {
    GtkDrawingAreaClass parent_class;
} PhasesSlowWidget3Class;

GType phases_slow_widget3_get_type(void);
G_DEFINE_TYPE(PhasesSlowWidget3, phases_slow_widget3, GTK_TYPE_DRAWING_AREA)

static void preferred(GtkWidget *w, gint *min, gint *nat)
{
    if (slow_layout)
        busy(work_ms);
    *min = 50;
    *nat = 100 + (int)(frames % 2);
}

static gboolean draw(GtkWidget *w, cairo_t *cr)
{
    if (!slow_layout)
        busy(work_ms);
    cairo_set_source_rgb(cr, (frames % 10) / 10.0, 0.4, 0.6);
    cairo_paint(cr);
    return FALSE;
}

static void phases_slow_widget3_class_init(PhasesSlowWidget3Class *klass)
{
    GTK_WIDGET_CLASS(klass)->get_preferred_width = preferred;
    GTK_WIDGET_CLASS(klass)->get_preferred_height = preferred;
    GTK_WIDGET_CLASS(klass)->draw = draw;
}

static void phases_slow_widget3_init(PhasesSlowWidget3 *self)
{
}

static int64_t started;

static gboolean tick(GtkWidget *w, GdkFrameClock *clock, gpointer data)
{
    if (now_ms() - started >= run_ms) {
        gtk_widget_destroy(GTK_WIDGET(data));
        return G_SOURCE_REMOVE;
    }
    frames++;
    if (slow_layout)
        gtk_widget_queue_resize(w);
    gtk_widget_queue_draw(w);
    return G_SOURCE_CONTINUE;
}

static GType window_type(void)
{
    static GType t;
    if (!t) {
        GTypeQuery q;
        g_type_query(GTK_TYPE_WINDOW, &q);
        t = g_type_register_static_simple(GTK_TYPE_WINDOW, "PhasesApp3Window", q.class_size, NULL, q.instance_size,
                                          NULL, 0);
    }
    return t;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--slow") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(v, "layout") != 0 && strcmp(v, "paint") != 0) {
                fprintf(stderr, "phases-app-gtk3: --slow wants layout or paint\n");
                return 2;
            }
            slow_layout = strcmp(v, "layout") == 0;
        } else if (strcmp(argv[i], "--work-ms") == 0 && i + 1 < argc) {
            work_ms = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--run-ms") == 0 && i + 1 < argc) {
            run_ms = atoi(argv[++i]);
        } else {
            fprintf(stderr, "phases-app-gtk3: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    gtk_init(&argc, &argv);
    GtkWidget *win = g_object_new(window_type(), "type", GTK_WINDOW_TOPLEVEL, NULL);
    gtk_window_set_default_size(GTK_WINDOW(win), 300, 200);
    g_signal_connect(win, "destroy", G_CALLBACK(gtk_main_quit), NULL);
    GtkWidget *slow = g_object_new(phases_slow_widget3_get_type(), NULL);
    gtk_container_add(GTK_CONTAINER(win), slow);
    started = now_ms();
    gtk_widget_add_tick_callback(slow, tick, win, NULL);
    gtk_widget_show_all(win);
    gtk_main();
    return 0;
}
