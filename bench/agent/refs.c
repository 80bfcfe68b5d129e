/* ns per g_object_ref + g_object_unref pair, on a plain GObject and on a
 * GtkLabel. refs.py runs it without the agent, with it (the hooks forward),
 * and with --leaks=refs (every call on the label, a widget, is recorded
 * with its stack; the plain object is only looked up).
 * Prints "plain N label N" (ns per pair). */
#include <gtk/gtk.h>

#include <stdio.h>
#include <time.h>

#define PAIRS 2000000
#define LABEL_PAIRS 20000

static double per_pair(gpointer obj, int n)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++)
        g_object_unref(g_object_ref(obj));
    clock_gettime(CLOCK_MONOTONIC, &b);
    return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n;
}

int main(void)
{
    gtk_init();
    GObject *plain = g_object_new(G_TYPE_OBJECT, NULL);
    GtkWidget *label = g_object_ref_sink(gtk_label_new("x"));
    per_pair(plain, 1000);
    printf("plain %.1f label %.1f\n", per_pair(plain, PAIRS), per_pair(label, LABEL_PAIRS));
    return 0;
}
