/* One subscription per frame clock (gobj.h, "frameclock.c").
 *
 * A window's GdkFrameClock drives its paints (GTK 3 and GTK 4 give it the
 * same signals), and several parts of an adapter follow it: the window's
 * own page (its draws), the stack pages inside it (theirs), and the
 * window's frame statistics. Each of them is a
 * clock_listener; the first listener of a clock connects the four signals
 * the agent uses (before-paint, update, paint, after-paint) once, and the
 * last one to leave disconnects them. The hub lives as qdata on the clock.
 * Each signal reads the monotonic clock once and calls the listeners in the
 * order they started listening.
 *
 * Where a cycle's time goes: emission hooks on the clock's before-paint,
 * update, layout, paint and after-paint (they run before every handler of
 * the emission, GDK's own included, so each marks when its phase began)
 * write the cycle's phase marks into the clock's hub; listeners read them
 * at after-paint (frameclock_marks). A phase the cycle skipped (nothing
 * asked for an update or a layout) has no mark. Cost: a clock read and a
 * qdata lookup per phase per cycle (a phase emitted again in the same cycle
 * — GDK repeats layout while it is asked for — keeps its first mark), of every frame clock once the first
 * listener started.
 *
 * A listener holds a reference to its clock while listening, so the clock
 * (and its hub) outlives every listener. Main thread only.
 *
 * A window's frames (clock_frames, for the adapters' window_frames.c; frames.c
 * grades and writes them): a frame is a cycle of the window's clock that
 * drew the window (what "drew" means is the adapter's: GTK 3's "draw", GTK
 * 4's GdkSurface::render; a cycle that found nothing to draw is no frame),
 * from before-paint (begin) to after-paint (end). Its duration is end −
 * begin, except when the busy main loop held it back: while the window
 * animates (the previous cycle ran its update phase, i.e. tick callbacks
 * asked for the next frame) the next frame is due one refresh interval
 * after the previous one began; if the main loop did not wait in poll
 * since that moment (mainloop_wait_end), the frame was late because the
 * loop was busy, and its duration counts from when it was due — Matrix's
 * "frame cost from the vsync" — but never from before the previous cycle
 * ended (or the record's span began): frames never overlap, so the delays
 * add up to at most the span and the dropped frames to at most span /
 * refresh. A window that stopped animating and starts again later waited
 * in between, so no false delay is counted. A frame's phases come from the
 * cycle's marks (frameclock_phases). The refresh interval is the one
 * gdk_frame_clock_get_refresh_info() reports (the output's, as GDK knows
 * it), else 60 Hz. Cost: three listener calls per frame, no allocation.
 */
#include "gobj.h"

#include <pacer/base/clock.h>

#include <stdlib.h>

typedef struct hub {
    GObject *clock; /* not a reference: the hub is the clock's qdata */
    clock_listener *first;
    gulong ids[4];
    int64_t marks[CLOCK_N_MARKS];
} hub;

static GQuark hub_quark;

/* Listeners are not expected to stop listening from inside a callback;
 * `next` is read before each call so that one that does is still safe. */

static void on_before_paint(GObject *clock, gpointer data)
{
    int64_t now = mono_ns();
    for (clock_listener *l = ((hub *)data)->first, *next; l; l = next) {
        next = l->next;
        if (l->before_paint)
            l->before_paint(l, now);
    }
}

static void on_update(GObject *clock, gpointer data)
{
    for (clock_listener *l = ((hub *)data)->first, *next; l; l = next) {
        next = l->next;
        if (l->update)
            l->update(l);
    }
}

static void on_paint(GObject *clock, gpointer data)
{
    for (clock_listener *l = ((hub *)data)->first, *next; l; l = next) {
        next = l->next;
        if (l->paint)
            l->paint(l);
    }
}

static void on_after_paint(GObject *clock, gpointer data)
{
    int64_t now = mono_ns();
    for (clock_listener *l = ((hub *)data)->first, *next; l; l = next) {
        next = l->next;
        if (l->after_paint)
            l->after_paint(l, clock, now);
    }
}

/* The phase marks: an emission hook per phase, its mark as the data. */
static gboolean on_phase(GSignalInvocationHint *hint, guint n, const GValue *params, gpointer data)
{
    GObject *clock = n > 0 ? g_value_get_object(&params[0]) : NULL;
    hub *h = clock ? g_object_get_qdata(clock, hub_quark) : NULL;
    if (h) {
        int mark = (int)(intptr_t)data;
        int64_t now = mono_ns();
        if (mark == CLOCK_BEFORE_PAINT)
            for (int i = 0; i < CLOCK_N_MARKS; i++)
                h->marks[i] = 0;
        if (!h->marks[mark]) /* the first emission: GDK runs layout up to 4 times a cycle */
            h->marks[mark] = now;
    }
    return TRUE; /* keep the hook */
}

static void hook_phases(GObject *clock)
{
    static bool done;
    static const char *const names[CLOCK_N_MARKS] = {"before-paint", "update", "layout", "paint", "after-paint"};
    if (done)
        return;
    done = true;
    for (int i = 0; i < CLOCK_N_MARKS; i++) {
        guint id = g_signal_lookup(names[i], G_OBJECT_TYPE(clock));
        if (!id || !g_signal_add_emission_hook(id, 0, on_phase, (gpointer)(intptr_t)i, NULL))
            agent_note_once("frame-phases", "the frame clock's phases cannot be followed; frames records come "
                                            "without phases_ms");
    }
}

void frameclock_mark(GObject *clock, int mark)
{
    hub *h = clock && hub_quark ? g_object_get_qdata(clock, hub_quark) : NULL;
    if (h && h->marks[CLOCK_BEFORE_PAINT] && !h->marks[CLOCK_AFTER_PAINT] && !h->marks[mark])
        h->marks[mark] = mono_ns();
}

const int64_t *frameclock_marks(GObject *clock)
{
    hub *h = clock && hub_quark ? g_object_get_qdata(clock, hub_quark) : NULL;
    return h ? h->marks : NULL;
}

static void connect(hub *h)
{
    static const char *const names[4] = {"before-paint", "update", "paint", "after-paint"};
    GCallback fns[4] = {G_CALLBACK(on_before_paint), G_CALLBACK(on_update), G_CALLBACK(on_paint),
                        G_CALLBACK(on_after_paint)};
    for (int i = 0; i < 4; i++)
        h->ids[i] = g_signal_connect_data(h->clock, names[i], fns[i], h, NULL, 0);
}

static void disconnect(hub *h)
{
    for (int i = 0; i < 4; i++) {
        if (h->ids[i])
            g_signal_handler_disconnect(h->clock, h->ids[i]);
        h->ids[i] = 0;
    }
}

bool frameclock_listen(clock_listener *l, GObject *clock)
{
    if (l->clock)
        return true;
    if (!clock)
        return false;
    if (!hub_quark)
        hub_quark = g_quark_from_static_string("pacer-agent-frameclock");
    hub *h = g_object_get_qdata(clock, hub_quark);
    if (!h) {
        h = calloc(1, sizeof(*h));
        if (!h) {
            agent_note_once("oom", "out of memory; some pages are not measured");
            return false;
        }
        h->clock = clock;
        g_object_set_qdata_full(clock, hub_quark, h, free);
    }
    if (!h->first)
        connect(h);
    hook_phases(clock);
    l->clock = g_object_ref(clock);
    l->next = NULL;
    clock_listener **tail = &h->first;
    while (*tail)
        tail = &(*tail)->next;
    *tail = l;
    return true;
}

void frameclock_unlisten(clock_listener *l)
{
    if (!l->clock)
        return;
    GObject *clock = l->clock;
    hub *h = g_object_get_qdata(clock, hub_quark);
    if (h) {
        for (clock_listener **it = &h->first; *it; it = &(*it)->next)
            if (*it == l) {
                *it = l->next;
                break;
            }
        if (!h->first)
            disconnect(h);
    }
    l->clock = NULL;
    l->next = NULL;
    g_object_unref(clock);
}

bool frameclock_phases(const int64_t *marks, int64_t start, int64_t end, int64_t phases[FRAME_N_PHASES])
{
    if (!marks || !marks[CLOCK_BEFORE_PAINT] || end < start)
        return false;
    /* each phase begins at its mark (update: at before-paint), a skipped
     * one is empty; walked from the end so they tile [start, end] */
    const int64_t begins[FRAME_N_PHASES] = {start, marks[CLOCK_BEFORE_PAINT], marks[CLOCK_LAYOUT], marks[CLOCK_PAINT],
                                            marks[CLOCK_AFTER_PAINT]};
    int64_t next = end;
    for (int i = FRAME_N_PHASES - 1; i >= 0; i--) {
        int64_t b = begins[i] ? begins[i] : next;
        if (b > next)
            b = next;
        if (b < start)
            b = start;
        phases[i] = next - b;
        next = b;
    }
    return true;
}

/* ---- a window's frames ---- */

static clock_frames *all_frames;

static void frames_before_paint(clock_listener *l, int64_t now)
{
    clock_frames *f = (clock_frames *)l;
    f->begin = now;
    f->in_frame = true;
    f->update = false;
    f->rendered = false;
    if (f->cycle_begins)
        f->cycle_begins();
}

static void frames_update(clock_listener *l)
{
    ((clock_frames *)l)->update = true;
}

static void frames_after_paint(clock_listener *l, GObject *clock, int64_t end)
{
    clock_frames *f = (clock_frames *)l;
    if (!f->in_frame)
        return;
    f->in_frame = false;
    if (f->draws_watched && !f->rendered) {
        /* nothing drawn: no frame; it still took its time on the clock */
        f->prev_begin = f->begin;
        f->prev_update = f->update;
        f->prev_end = end;
        return;
    }
    gint64 refresh_us = 0, presentation_us = 0;
    gobj_gtk.gdk_frame_clock_get_refresh_info(clock, gobj_gtk.gdk_frame_clock_get_frame_time(clock), &refresh_us,
                                              &presentation_us);
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
    if (f->widgets)
        fi.widgets = f->widgets(&fi.n_widgets);
    frames_add_info(f->stats, &fi);
}

void *frameclock_frames_new(size_t size, const char *class_name, uint64_t instance)
{
    clock_frames *f = calloc(1, size);
    if (!f)
        return NULL;
    f->stats = frames_new(class_name, instance, FRAMES_SOURCE_FRAME_CLOCK);
    if (!f->stats) {
        free(f);
        return NULL;
    }
    f->listener.before_paint = frames_before_paint;
    f->listener.update = frames_update;
    f->listener.after_paint = frames_after_paint;
    f->next = all_frames;
    all_frames = f;
    return f;
}

bool frameclock_frames_map(clock_frames *f, GObject *clock)
{
    if (f->listener.clock || !frameclock_listen(&f->listener, clock))
        return false;
    frames_begin(f->stats);
    f->in_frame = false;
    f->prev_begin = f->prev_end = 0;
    return true;
}

void frameclock_frames_unmap(clock_frames *f)
{
    if (!f)
        return;
    frameclock_unlisten(&f->listener);
    if (f->unmapped)
        f->unmapped(f);
    frames_emit(f->stats, true);
}

void frameclock_frames_free(clock_frames *f)
{
    if (!f)
        return;
    frameclock_frames_unmap(f);
    for (clock_frames **it = &all_frames; *it; it = &(*it)->next)
        if (*it == f) {
            *it = f->next;
            break;
        }
    frames_free(f->stats);
    free(f);
}

void frameclock_frames_flush_all(void)
{
    for (clock_frames *f = all_frames; f; f = f->next)
        frames_emit(f->stats, true);
}
