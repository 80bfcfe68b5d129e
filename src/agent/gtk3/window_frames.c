/* `frames` records of GTK 3 windows (DESIGN §3.3), timed by each toplevel
 * window's frame clock while it is mapped, as GTK 4's are
 * (gtk4/window_frames.c); frames.c grades and writes them.
 *
 * A frame: a cycle of the window's GdkFrameClock in which the window drew
 * (its "draw" signal ran: a cycle that found nothing to draw is no frame),
 * from before-paint (begin) to after-paint (end). Its
 * duration is end − begin, except when the busy main loop held it back:
 * while the window animates (the previous cycle ran its update phase, i.e.
 * tick callbacks asked for the next frame) the next frame is due one
 * refresh interval after the previous one began; if the main loop did not
 * wait in poll since that moment (mainloop_wait_end), the frame was late
 * because the loop was busy, and its duration counts from when it was due —
 * Matrix's "frame cost from the vsync" — but never from before the previous
 * cycle ended (or the record's span began): frames never overlap, so the
 * delays add up to at most the span and the dropped frames to at most
 * span / refresh. A window that stopped animating and starts again later
 * waited in between, so no false delay is counted.
 *
 * A frame's phases (frames.c sums them): from the clock's phase marks
 * (gobject/frameclock.c, frameclock_phases).
 *
 * The refresh interval is the one gdk_frame_clock_get_refresh_info()
 * reports (the output's, as GDK knows it), else 60 Hz.
 *
 * The window's frame clock is followed through gobject/frameclock.c
 * (shared with the window's page). Cost: three listener calls and one
 * signal handler per frame on the GTK thread, no allocation.
 */
#include "gtk3.h"

#include <pacer/base/clock.h>

#include <stdlib.h>

struct window_frames {
    clock_listener listener; /* first: the callbacks get it */
    frame_stats *stats;
    int64_t begin, prev_begin, prev_end;
    bool in_frame, update, prev_update, rendered;
    GtkWidget *window; /* while mapped: where "draw" is watched */
    gulong draw_id;
    window_frames *next;
};

static window_frames *all;

static void on_before_paint(clock_listener *l, int64_t now)
{
    window_frames *f = (window_frames *)l;
    f->begin = now;
    f->in_frame = true;
    f->update = false;
    f->rendered = false;
}

/* The window drew in this cycle. FALSE: the emission goes on. */
static gboolean on_draw(GtkWidget *w, cairo_t *cr, gpointer data)
{
    ((window_frames *)data)->rendered = true;
    return FALSE;
}

static void on_update(clock_listener *l)
{
    ((window_frames *)l)->update = true;
}

static void on_after_paint(clock_listener *l, GObject *clock, int64_t end)
{
    window_frames *f = (window_frames *)l;
    if (!f->in_frame)
        return;
    f->in_frame = false;
    if (!f->rendered) {
        /* nothing drawn: no frame; it still took its time on the clock */
        f->prev_begin = f->begin;
        f->prev_update = f->update;
        f->prev_end = end;
        return;
    }
    GdkFrameClock *fc = (GdkFrameClock *)clock;
    gint64 refresh_us = 0, presentation_us = 0;
    gdk_frame_clock_get_refresh_info(fc, gdk_frame_clock_get_frame_time(fc), &refresh_us, &presentation_us);
    int64_t refresh = refresh_us > 0 ? (int64_t)refresh_us * 1000 : 0;
    int64_t due_refresh = refresh ? refresh : 16666667;

    int64_t start = f->begin;
    if (f->prev_update && f->prev_begin) {
        int64_t due = f->prev_begin + due_refresh;
        if (due < start && mainloop_wait_end() <= due)
            start = due; /* late because the loop was busy */
    }
    /* never before the previous cycle ended, nor before this record's span */
    if (start < f->prev_end)
        start = f->prev_end;
    if (start < frames_since(f->stats))
        start = frames_since(f->stats);
    f->prev_begin = f->begin;
    f->prev_update = f->update;
    f->prev_end = end;
    frame_info fi = {.start = start, .end = end, .refresh_ns = refresh, .refresh_from = "frame_clock"};
    fi.has_phases = frameclock_phases(frameclock_marks(clock), start, end, fi.phases);
    frames_add_info(f->stats, &fi);
}

window_frames *gtk3_frames_new(const char *class_name, uint64_t instance)
{
    window_frames *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->stats = frames_new(class_name, instance, FRAMES_SOURCE_FRAME_CLOCK);
    if (!f->stats) {
        free(f);
        return NULL;
    }
    f->listener.before_paint = on_before_paint;
    f->listener.update = on_update;
    f->listener.after_paint = on_after_paint;
    f->next = all;
    all = f;
    return f;
}

void gtk3_frames_on_map(window_frames *f, GtkWidget *window)
{
    if (!f || f->listener.clock)
        return;
    if (frameclock_listen(&f->listener, (GObject *)gtk_widget_get_frame_clock(window))) {
        frames_begin(f->stats);
        f->in_frame = false;
        f->prev_begin = f->prev_end = 0;
        f->window = window; /* not a reference: unmapped before it goes */
        f->draw_id = g_signal_connect_data(window, "draw", G_CALLBACK(on_draw), f, NULL, 0);
    }
}

void gtk3_frames_on_unmap(window_frames *f)
{
    if (!f)
        return;
    frameclock_unlisten(&f->listener);
    if (f->window && f->draw_id)
        g_signal_handler_disconnect(f->window, f->draw_id);
    f->window = NULL;
    f->draw_id = 0;
    frames_emit(f->stats, true);
}

void gtk3_frames_free(window_frames *f)
{
    if (!f)
        return;
    gtk3_frames_on_unmap(f);
    for (window_frames **it = &all; *it; it = &(*it)->next)
        if (*it == f) {
            *it = f->next;
            break;
        }
    frames_free(f->stats);
    free(f);
}

void gtk3_frames_flush_all(void)
{
    for (window_frames *f = all; f; f = f->next)
        frames_emit(f->stats, true);
}
