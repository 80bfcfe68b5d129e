/* bench-frames: a GTK 4 window that animates for N frames (a tick callback
 * queues a draw each frame) and quits, for bench/agent/profile.py: the
 * main thread's CPU time per frame, without the agent, with it (frames and
 * their phases) and with --frames=detail. At the end it prints
 * "frames=N main_cpu_ns=C" (the kernel's time on a CPU of the main
 * thread, /proc/thread-self/schedstat).
 *
 * usage: bench-frames N
 */
#include <gtk/gtk.h>

#include <stdio.h>
#include <stdlib.h>

static int frames, want;

static gboolean tick(GtkWidget *w, GdkFrameClock *clock, gpointer data)
{
    if (++frames >= want) {
        gtk_window_destroy(GTK_WINDOW(data));
        return G_SOURCE_REMOVE;
    }
    gtk_widget_queue_draw(w);
    return G_SOURCE_CONTINUE;
}

static void draw(GtkDrawingArea *area, cairo_t *cr, int width, int height, gpointer data)
{
    cairo_set_source_rgb(cr, (frames % 60) / 60.0, 0.3, 0.5);
    cairo_rectangle(cr, 0, 0, width / 2, height / 2);
    cairo_fill(cr);
}

static void activate(GtkApplication *app, gpointer data)
{
    GtkWidget *win = gtk_application_window_new(app);
    gtk_window_set_default_size(GTK_WINDOW(win), 200, 150);
    GtkWidget *area = gtk_drawing_area_new();
    gtk_drawing_area_set_draw_func(GTK_DRAWING_AREA(area), draw, NULL, NULL);
    gtk_window_set_child(GTK_WINDOW(win), area);
    gtk_widget_add_tick_callback(area, tick, win, NULL);
    gtk_window_present(GTK_WINDOW(win));
}

int main(int argc, char **argv)
{
    want = argc > 1 ? atoi(argv[1]) : 300;
    GtkApplication *app = gtk_application_new(NULL, G_APPLICATION_NON_UNIQUE);
    g_signal_connect(app, "activate", G_CALLBACK(activate), NULL);
    int rc = g_application_run(G_APPLICATION(app), 1, argv);
    g_object_unref(app);
    unsigned long long cpu = 0;
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (f) {
        if (fscanf(f, "%llu", &cpu) != 1)
            cpu = 0;
        fclose(f);
    }
    printf("frames=%d main_cpu_ns=%llu\n", frames, cpu);
    return rc;
}
