/* `frames` records (DESIGN §3.3; Sentry/Firebase slow and frozen frames,
 * Matrix FrameTracer's dropped-frame levels): every frame-clock cycle of a
 * toplevel window, while it is mapped.
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
 *   refresh   the interval gdk_frame_clock_get_refresh_info() reports
 *             (16.667 ms when it reports none)
 *   slow      duration > refresh
 *   frozen    duration > 700 ms
 *   dropped   ⌊duration / refresh⌋ per frame; each frame is graded by it
 *             with Matrix's levels: best < 3 ≤ normal < 9 ≤ middle < 24 ≤
 *             high < 42 ≤ frozen
 *   delay     Σ (duration − refresh) over slow frames
 *
 * Records: one per window every frames-interval-ms (config <thresholds>,
 * default 10000; PACER_FRAMES_INTERVAL_MS overrides it) of painting, and
 * the rest when it unmaps (closed or hidden) or at exit, with the counts of
 * the frames since its previous record.
 *
 * The window's frame clock is followed through frameclock.c (shared with
 * the window's page). Cost: three listener calls per frame on the GTK
 * thread, no allocation; the record is built and submitted (the pacer
 * instance's lock) at most once per interval.
 */
#include "agent.h"

#include <pacer/base/clock.h>

#include <stdlib.h>

#define FROZEN_NS 700000000
#define DEFAULT_REFRESH_NS 16666667

enum { BEST, NORMAL, MIDDLE, HIGH, FROZEN, N_LEVELS };
static const int level_min[N_LEVELS] = {0, 3, 9, 24, 42};
static const unsigned level_field[N_LEVELS] = {PACER_LEVEL_BEST, PACER_LEVEL_NORMAL, PACER_LEVEL_MIDDLE,
                                               PACER_LEVEL_HIGH, PACER_LEVEL_FROZEN};

struct frame_stats {
    clock_listener listener; /* first: the callbacks get it */
    const char *class_name;  /* interned */
    uint64_t instance;
    int64_t begin, prev_begin, prev_end, refresh_ns;
    bool in_frame, update, prev_update, rendered;
    GdkSurface *surface; /* while mapped: where render is watched */
    /* since the last record */
    uint64_t frames, slow, frozen, dropped, levels[N_LEVELS];
    int64_t delay_ns, max_ns, since;
    frame_stats *next;
};

static frame_stats *all;

/* The record interval: the config's, unless the environment overrides it;
 * read again when the config changes (GTK thread). */
static int64_t interval_ns(void)
{
    static int64_t cached = -1;
    static uint64_t generation;
    uint64_t g = pacer_config_generation(pacer_default());
    if (cached < 0 || g != generation) {
        const char *v = getenv("PACER_FRAMES_INTERVAL_MS");
        long ms = v && *v ? strtol(v, NULL, 10) : 0;
        if (ms <= 0) {
            pacer_config *cfg = agent_config();
            ms = (long)pacer_config_frames_interval_ms(cfg);
            pacer_config_unref(cfg);
        }
        cached = (int64_t)ms * 1000000;
        generation = g;
    }
    return cached;
}

static void emit(frame_stats *f, bool final)
{
    if (f->frames == 0)
        return;
    pacer_record *r = pacer_record_new(PACER_RECORD_FRAMES);
    pacer_record *lv = r ? pacer_record_add(r, PACER_FRAMES_LEVELS) : NULL;
    if (lv) {
        pacer_record_set_str(r, PACER_FRAMES_WINDOW, f->class_name);
        pacer_record_set_id(r, PACER_FRAMES_INSTANCE, f->instance);
        pacer_record_set_bool(r, PACER_FRAMES_FINAL, final);
        pacer_record_set_int(r, PACER_FRAMES_FRAMES, (int64_t)f->frames);
        pacer_record_set_int(r, PACER_FRAMES_SLOW, (int64_t)f->slow);
        pacer_record_set_int(r, PACER_FRAMES_FROZEN, (int64_t)f->frozen);
        pacer_record_set_int(r, PACER_FRAMES_DROPPED_FRAMES, (int64_t)f->dropped);
        pacer_record_set_ms(r, PACER_FRAMES_DELAY_MS, f->delay_ns);
        pacer_record_set_ms(r, PACER_FRAMES_MAX_FRAME_MS, f->max_ns);
        pacer_record_set_ms(r, PACER_FRAMES_REFRESH_MS, f->refresh_ns);
        pacer_record_set_ms(r, PACER_FRAMES_SPAN_MS, mono_ns() - f->since);
        for (int i = 0; i < N_LEVELS; i++)
            pacer_record_set_int(lv, level_field[i], (int64_t)f->levels[i]);
        agent_in_hook++;
        agent_submit_record(r);
        agent_in_hook--;
    } else {
        pacer_record_free(r);
    }
    f->frames = f->slow = f->frozen = f->dropped = 0;
    for (int i = 0; i < N_LEVELS; i++)
        f->levels[i] = 0;
    f->delay_ns = f->max_ns = 0;
    f->since = mono_ns();
}

static void on_before_paint(clock_listener *l, int64_t now)
{
    frame_stats *f = (frame_stats *)l;
    f->begin = now;
    f->in_frame = true;
    f->update = false;
    f->rendered = false;
}

/* GdkSurface::render of every surface (an emission hook: it runs whatever
 * the handlers return): the cycle of the window it belongs to drew. */
static GQuark surface_quark;

static gboolean on_render(GSignalInvocationHint *hint, guint n, const GValue *params, gpointer data)
{
    GObject *surface = n > 0 ? g_value_get_object(&params[0]) : NULL;
    frame_stats *f = surface ? g_object_get_qdata(surface, surface_quark) : NULL;
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

static void on_update(clock_listener *l)
{
    ((frame_stats *)l)->update = true;
}

static void on_after_paint(clock_listener *l, GdkFrameClock *clock, int64_t end)
{
    frame_stats *f = (frame_stats *)l;
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
    gint64 refresh_us = 0, presentation_us = 0;
    gdk_frame_clock_get_refresh_info(clock, gdk_frame_clock_get_frame_time(clock), &refresh_us, &presentation_us);
    int64_t refresh = refresh_us > 0 ? (int64_t)refresh_us * 1000 : DEFAULT_REFRESH_NS;
    f->refresh_ns = refresh;

    int64_t start = f->begin;
    if (f->prev_update && f->prev_begin) {
        int64_t due = f->prev_begin + refresh;
        if (due < start && mainloop_wait_end() <= due)
            start = due; /* late because the loop was busy */
    }
    /* never before the previous cycle ended, nor before this record's span */
    if (start < f->prev_end)
        start = f->prev_end;
    if (start < f->since)
        start = f->since;
    f->prev_begin = f->begin;
    f->prev_update = f->update;
    f->prev_end = end;

    int64_t d = end - start;
    int64_t dropped = d / refresh;
    int level = N_LEVELS - 1;
    while (level > 0 && dropped < level_min[level])
        level--;
    f->frames++;
    f->levels[level]++;
    f->dropped += (uint64_t)dropped;
    if (d > refresh) {
        f->slow++;
        f->delay_ns += d - refresh;
    }
    if (d > FROZEN_NS)
        f->frozen++;
    if (d > f->max_ns)
        f->max_ns = d;
    if (end - f->since >= interval_ns())
        emit(f, false);
}

frame_stats *frames_new(const char *class_name, uint64_t instance)
{
    frame_stats *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->listener.before_paint = on_before_paint;
    f->listener.update = on_update;
    f->listener.after_paint = on_after_paint;
    f->class_name = class_name;
    f->instance = instance;
    f->next = all;
    all = f;
    return f;
}

void frames_on_map(frame_stats *f, GtkWidget *window)
{
    if (!f || f->listener.clock)
        return;
    if (frameclock_listen(&f->listener, window)) {
        f->since = mono_ns();
        f->in_frame = false;
        f->prev_begin = f->prev_end = 0;
        GdkSurface *surface = watch_renders() ? gtk_native_get_surface(GTK_NATIVE(window)) : NULL;
        if (surface) {
            f->surface = g_object_ref(surface);
            g_object_set_qdata((GObject *)surface, surface_quark, f);
        }
    }
}

void frames_on_unmap(frame_stats *f)
{
    if (!f)
        return;
    frameclock_unlisten(&f->listener);
    if (f->surface) {
        g_object_set_qdata((GObject *)f->surface, surface_quark, NULL);
        g_object_unref(f->surface);
        f->surface = NULL;
    }
    emit(f, true);
}

void frames_free(frame_stats *f)
{
    if (!f)
        return;
    frames_on_unmap(f);
    for (frame_stats **it = &all; *it; it = &(*it)->next)
        if (*it == f) {
            *it = f->next;
            break;
        }
    free(f);
}

void frames_flush_all(void)
{
    for (frame_stats *f = all; f; f = f->next)
        emit(f, true);
}
