/* `frames` records of GTK 3 windows (DESIGN §3.3), timed by each toplevel
 * window's frame clock while it is mapped, as GTK 4's are: the cycles and
 * their grading are gobject/frameclock.c's (clock_frames, shared with the
 * GTK 4 adapter); frames.c grades and writes them.
 *
 * What is GTK 3's: a cycle drew the window when the window's "draw" signal
 * ran in it (a cycle that found nothing to draw is no frame). A frame's
 * phases come from the clock's phase marks (frameclock_phases).
 *
 * The window's frame clock is followed through gobject/frameclock.c
 * (shared with the window's page). Cost: three listener calls and one
 * signal handler per frame on the GTK thread, no allocation.
 */
#include "gtk3.h"

typedef struct window_frames {
    clock_frames frames; /* first */
    GtkWidget *window;   /* while mapped: where "draw" is watched */
    gulong draw_id;
} window_frames;

/* The window drew in this cycle. FALSE: the emission goes on. */
static gboolean on_draw(GtkWidget *w, cairo_t *cr, gpointer data)
{
    ((window_frames *)data)->frames.rendered = true;
    return FALSE;
}

static void on_unmapped(clock_frames *cf)
{
    window_frames *f = (window_frames *)cf;
    if (f->window && f->draw_id)
        g_signal_handler_disconnect(f->window, f->draw_id);
    f->window = NULL;
    f->draw_id = 0;
}

clock_frames *gtk3_frames_new(const char *class_name, uint64_t instance)
{
    window_frames *f = frameclock_frames_new(sizeof(*f), class_name, instance);
    if (!f)
        return NULL;
    f->frames.draws_watched = true; /* on_draw */
    f->frames.unmapped = on_unmapped;
    return &f->frames;
}

void gtk3_frames_on_map(clock_frames *cf, GtkWidget *window)
{
    window_frames *f = (window_frames *)cf;
    if (f && frameclock_frames_map(cf, (GObject *)gtk_widget_get_frame_clock(window))) {
        f->window = window; /* not a reference: unmapped before it goes */
        f->draw_id = g_signal_connect_data(window, "draw", G_CALLBACK(on_draw), f, NULL, 0);
    }
}
