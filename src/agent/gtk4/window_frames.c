/* `frames` records of GTK 4 windows (DESIGN §3.3), timed by each toplevel
 * window's frame clock while it is mapped; frames.c grades and writes them.
 *
 * A frame: a cycle of the window's GdkFrameClock that rendered its surface
 * (GdkSurface::render was emitted in it: a cycle that found nothing to
 * draw is no frame), from before-paint (begin) to after-paint (end). Its
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
 * (gobject/frameclock.c, frameclock_phases), layout beginning when the
 * toplevel computes its size if that comes first (on_compute_size); with --frames=detail, the widget
 * types' own layout and paint times in it (widget_times.c).
 *
 * The refresh interval is the one gdk_frame_clock_get_refresh_info()
 * reports (the output's, as GDK knows it), else 60 Hz.
 *
 * The window's frame clock is followed through gobject/frameclock.c
 * (shared with the window's page). Cost: three listener calls per frame on
 * the GTK thread, no allocation.
 */
#include "gtk4.h"

#include <pacer/base/clock.h>

#include <stdlib.h>

struct window_frames {
    clock_listener listener; /* first: the callbacks get it */
    frame_stats *stats;
    int64_t begin, prev_begin, prev_end;
    bool in_frame, update, prev_update, rendered;
    GdkSurface *surface; /* while mapped: where render is watched */
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
    gtk4_widget_times_reset();
}

/* GdkSurface::render of every surface (an emission hook: it runs whatever
 * the handlers return): the cycle of the window it belongs to drew. */
static GQuark surface_quark;

static gboolean on_render(GSignalInvocationHint *hint, guint n, const GValue *params, gpointer data)
{
    GObject *surface = n > 0 ? g_value_get_object(&params[0]) : NULL;
    window_frames *f = surface ? g_object_get_qdata(surface, surface_quark) : NULL;
    if (f)
        f->rendered = true;
    return TRUE; /* keep the hook */
}

static bool watch_renders(void)
{
    static int state; /* 0 not yet, 1 on, -1 off */
    if (state == 0) {
        surface_quark = g_quark_from_static_string("pacer-agent-frames-surface");
        guint id = g_signal_lookup("render", gdk_surface_get_type());
        if (id && g_signal_add_emission_hook(id, 0, on_render, NULL, NULL)) {
            state = 1;
        } else {
            state = -1;
            agent_note_once("render", "GdkSurface has no render signal; frames records count every frame-clock "
                                      "cycle");
        }
    }
    return state > 0;
}

/* GdkToplevel::compute-size (an emission hook): the toplevel measures its
 * widgets for its size. GDK's X11 backend asks for it at the end of the
 * update phase, before layout: that time is layout's. */
static gboolean on_compute_size(GSignalInvocationHint *hint, guint n, const GValue *params, gpointer data)
{
    GObject *surface = n > 0 ? g_value_get_object(&params[0]) : NULL;
    if (surface)
        frameclock_mark((GObject *)gdk_surface_get_frame_clock((GdkSurface *)surface), CLOCK_LAYOUT);
    return TRUE; /* keep the hook */
}

static void watch_compute_size(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    guint id = g_signal_lookup("compute-size", gdk_toplevel_get_type());
    if (!id || !g_signal_add_emission_hook(id, 0, on_compute_size, NULL, NULL))
        agent_note_once("compute-size", "GdkToplevel has no compute-size signal; a toplevel's size computed "
                                        "before layout counts as update");
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
    if (f->surface && !f->rendered) {
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
    fi.widgets = gtk4_widget_times(&fi.n_widgets);
    frames_add_info(f->stats, &fi);
}

window_frames *gtk4_frames_new(const char *class_name, uint64_t instance)
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

void gtk4_frames_on_map(window_frames *f, GtkWidget *window)
{
    if (!f || f->listener.clock)
        return;
    if (frameclock_listen(&f->listener, (GObject *)gtk_widget_get_frame_clock(window))) {
        watch_compute_size();
        frames_begin(f->stats);
        f->in_frame = false;
        f->prev_begin = f->prev_end = 0;
        GdkSurface *surface = watch_renders() ? gtk_native_get_surface(GTK_NATIVE(window)) : NULL;
        if (surface) {
            f->surface = g_object_ref(surface);
            g_object_set_qdata((GObject *)surface, surface_quark, f);
        }
    }
}

void gtk4_frames_on_unmap(window_frames *f)
{
    if (!f)
        return;
    frameclock_unlisten(&f->listener);
    if (f->surface) {
        g_object_set_qdata((GObject *)f->surface, surface_quark, NULL);
        g_object_unref(f->surface);
        f->surface = NULL;
    }
    frames_emit(f->stats, true);
}

void gtk4_frames_free(window_frames *f)
{
    if (!f)
        return;
    gtk4_frames_on_unmap(f);
    for (window_frames **it = &all; *it; it = &(*it)->next)
        if (*it == f) {
            *it = f->next;
            break;
        }
    frames_free(f->stats);
    free(f);
}

void gtk4_frames_flush_all(void)
{
    for (window_frames *f = all; f; f = f->next)
        frames_emit(f->stats, true);
}
