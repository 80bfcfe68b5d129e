/* `frames` records of GTK 4 windows (DESIGN §3.3), timed by each toplevel
 * window's frame clock while it is mapped: the cycles and their grading are
 * gobject/frameclock.c's (clock_frames, shared with the GTK 3 adapter);
 * frames.c grades and writes them.
 *
 * What is GTK 4's: a cycle drew the window when it rendered its surface
 * (GdkSurface::render was emitted in it: a cycle that found nothing to draw
 * is no frame). A frame's phases come from the clock's phase marks
 * (gobject/frameclock.c, frameclock_phases), layout beginning when the
 * toplevel computes its size if that comes first (on_compute_size); with
 * --frames=detail, the widget types' own layout and paint times in it
 * (widget_times.c).
 *
 * The window's frame clock is followed through gobject/frameclock.c
 * (shared with the window's page). Cost: three listener calls per frame on
 * the GTK thread, no allocation.
 */
#include "gtk4.h"

typedef struct window_frames {
    clock_frames frames; /* first */
    GdkSurface *surface; /* while mapped: where render is watched */
} window_frames;

/* GdkSurface::render of every surface (an emission hook: it runs whatever
 * the handlers return): the cycle of the window it belongs to drew. */
static GQuark surface_quark;

static gboolean on_render(GSignalInvocationHint *hint, guint n, const GValue *params, gpointer data)
{
    GObject *surface = n > 0 ? g_value_get_object(&params[0]) : NULL;
    window_frames *f = surface ? g_object_get_qdata(surface, surface_quark) : NULL;
    if (f)
        f->frames.rendered = true;
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

static void on_unmapped(clock_frames *cf)
{
    window_frames *f = (window_frames *)cf;
    if (f->surface) {
        g_object_set_qdata((GObject *)f->surface, surface_quark, NULL);
        g_object_unref(f->surface);
        f->surface = NULL;
    }
    f->frames.draws_watched = false;
}

clock_frames *gtk4_frames_new(const char *class_name, uint64_t instance)
{
    window_frames *f = frameclock_frames_new(sizeof(*f), class_name, instance);
    if (!f)
        return NULL;
    f->frames.cycle_begins = gtk4_widget_times_reset;
    f->frames.widgets = gtk4_widget_times;
    f->frames.unmapped = on_unmapped;
    return &f->frames;
}

void gtk4_frames_on_map(clock_frames *cf, GtkWidget *window)
{
    window_frames *f = (window_frames *)cf;
    if (f && frameclock_frames_map(cf, (GObject *)gtk_widget_get_frame_clock(window))) {
        watch_compute_size();
        GdkSurface *surface = watch_renders() ? gtk_native_get_surface(GTK_NATIVE(window)) : NULL;
        if (surface) {
            f->surface = g_object_ref(surface);
            g_object_set_qdata((GObject *)surface, surface_quark, f);
        }
        f->frames.draws_watched = surface != NULL;
    }
}
