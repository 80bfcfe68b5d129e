/* `frames` records (DESIGN §3.3; Sentry/Firebase slow and frozen frames,
 * Matrix FrameTracer's dropped-frame levels): every frame-clock cycle of a
 * toplevel window, while it is mapped.
 *
 * A frame: GdkFrameClock's before-paint (begin) to after-paint (end) of one
 * cycle. Its duration is end − begin, except when the busy main loop held it
 * back: while the window animates (the previous cycle ran its update phase,
 * i.e. tick callbacks asked for the next frame) the next frame is due one
 * refresh interval after the previous one began; if the main loop did not
 * wait in poll since that moment (mainloop_wait_end), the frame was late
 * because the loop was busy, and its duration counts from when it was due —
 * Matrix's "frame cost from the vsync". A window that stopped animating and
 * starts again later waited in between, so no false delay is counted.
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
 * Records: one per window every PACER_FRAMES_INTERVAL_MS (default 10000)
 * of painting, and the rest when it unmaps (closed or hidden) or at exit,
 * with the counts of the frames since its previous record.
 *
 * Cost: three signal handlers per frame on the GTK thread, a clock read in
 * two of them, no allocation; the record is formatted and queued (the
 * pacer instance's lock) at most once per interval.
 */
#include "agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define FROZEN_NS 700000000
#define DEFAULT_REFRESH_NS 16666667

enum { BEST, NORMAL, MIDDLE, HIGH, FROZEN, N_LEVELS };
static const char *const level_names[N_LEVELS] = {"best", "normal", "middle", "high", "frozen"};
static const int level_min[N_LEVELS] = {0, 3, 9, 24, 42};

typedef struct win {
    GObject *obj; /* not a reference: the struct lives as long as the window */
    const char *class_name;
    GdkFrameClock *clock; /* a reference while mapped */
    gulong before_id, update_id, after_id;
    int64_t begin, prev_begin, refresh_ns;
    bool in_frame, update, prev_update;
    /* since the last record */
    uint64_t frames, slow, frozen, dropped, levels[N_LEVELS];
    int64_t delay_ns, max_ns, since;
    struct win *next;
} win;

static GQuark quark;
static win *all;
static int64_t interval_ns = -1;
static bool flushing; /* at exit, after the agent stopped */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void put_ms(char *buf, size_t cap, size_t *len, const char *key, int64_t ns)
{
    if (*len < cap)
        *len += (size_t)snprintf(buf + *len, cap - *len, ",\"%s\":%lld.%03lld", key, (long long)(ns / 1000000),
                                 (long long)(ns / 1000 % 1000));
}

static void emit(win *w, bool final)
{
    if (w->frames == 0)
        return;
    char buf[1024];
    size_t len = (size_t)snprintf(buf, sizeof(buf),
                                  "\"window\":\"%s\",\"instance\":%llu,\"final\":%s,\"frames\":%llu,\"slow\":%llu,"
                                  "\"frozen\":%llu,\"dropped_frames\":%llu",
                                  w->class_name, (unsigned long long)(uintptr_t)w->obj, final ? "true" : "false",
                                  (unsigned long long)w->frames, (unsigned long long)w->slow,
                                  (unsigned long long)w->frozen, (unsigned long long)w->dropped);
    put_ms(buf, sizeof(buf), &len, "delay_ms", w->delay_ns);
    put_ms(buf, sizeof(buf), &len, "max_frame_ms", w->max_ns);
    put_ms(buf, sizeof(buf), &len, "refresh_ms", w->refresh_ns);
    put_ms(buf, sizeof(buf), &len, "span_ms", now_ns() - w->since);
    for (int i = 0; i < N_LEVELS && len < sizeof(buf); i++)
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s\"%s\":%llu", i ? "," : ",\"levels\":{",
                                level_names[i], (unsigned long long)w->levels[i]);
    if (len + 2 >= sizeof(buf))
        return; /* cannot happen: a class name is short */
    buf[len++] = '}';
    buf[len] = '\0';
    pacer_t *p = pacer_default();
    agent_in_hook++;
    if (p && (agent_active() || flushing))
        pacer_emit(p, "frames", buf);
    agent_in_hook--;
    w->frames = w->slow = w->frozen = w->dropped = 0;
    for (int i = 0; i < N_LEVELS; i++)
        w->levels[i] = 0;
    w->delay_ns = w->max_ns = 0;
    w->since = now_ns();
}

static void on_before_paint(GdkFrameClock *clock, gpointer data)
{
    win *w = data;
    w->begin = now_ns();
    w->in_frame = true;
    w->update = false;
}

static void on_update(GdkFrameClock *clock, gpointer data)
{
    ((win *)data)->update = true;
}

static void on_after_paint(GdkFrameClock *clock, gpointer data)
{
    win *w = data;
    if (!w->in_frame)
        return;
    w->in_frame = false;
    int64_t end = now_ns();
    gint64 refresh_us = 0, presentation_us = 0;
    if (gdk_frame_clock_get_refresh_info && gdk_frame_clock_get_frame_time)
        gdk_frame_clock_get_refresh_info(clock, gdk_frame_clock_get_frame_time(clock), &refresh_us,
                                         &presentation_us);
    int64_t refresh = refresh_us > 0 ? (int64_t)refresh_us * 1000 : DEFAULT_REFRESH_NS;
    w->refresh_ns = refresh;

    int64_t start = w->begin;
    if (w->prev_update && w->prev_begin) {
        int64_t due = w->prev_begin + refresh;
        if (due < start && mainloop_wait_end() <= due)
            start = due; /* late because the loop was busy */
    }
    w->prev_begin = w->begin;
    w->prev_update = w->update;

    int64_t d = end - start;
    int64_t dropped = d / refresh;
    int level = N_LEVELS - 1;
    while (level > 0 && dropped < level_min[level])
        level--;
    w->frames++;
    w->levels[level]++;
    w->dropped += (uint64_t)dropped;
    if (d > refresh) {
        w->slow++;
        w->delay_ns += d - refresh;
    }
    if (d > FROZEN_NS)
        w->frozen++;
    if (d > w->max_ns)
        w->max_ns = d;
    if (end - w->since >= interval_ns)
        emit(w, false);
}

static void disconnect(win *w)
{
    if (!w->clock)
        return;
    g_signal_handler_disconnect(w->clock, w->before_id);
    g_signal_handler_disconnect(w->clock, w->update_id);
    g_signal_handler_disconnect(w->clock, w->after_id);
    g_object_unref(w->clock);
    w->clock = NULL;
    w->in_frame = false;
    w->prev_begin = 0;
}

static void on_map(GtkWidget *widget, gpointer data)
{
    win *w = data;
    if (w->clock)
        return;
    GdkFrameClock *clock = gtk_widget_get_frame_clock(widget);
    if (!clock)
        return;
    w->clock = g_object_ref(clock);
    w->since = now_ns();
    w->before_id = g_signal_connect_data(clock, "before-paint", G_CALLBACK(on_before_paint), w, NULL, 0);
    w->update_id = g_signal_connect_data(clock, "update", G_CALLBACK(on_update), w, NULL, 0);
    w->after_id = g_signal_connect_data(clock, "after-paint", G_CALLBACK(on_after_paint), w, NULL, 0);
}

static void on_unmap(GtkWidget *widget, gpointer data)
{
    win *w = data;
    disconnect(w);
    emit(w, true);
}

static void win_free(gpointer data)
{
    win *w = data;
    disconnect(w);
    emit(w, true);
    for (win **it = &all; *it; it = &(*it)->next) {
        if (*it == w) {
            *it = w->next;
            break;
        }
    }
    free(w);
}

void frames_track(GtkWindow *window, const char *class_name)
{
    if (interval_ns < 0) {
        const char *v = getenv("PACER_FRAMES_INTERVAL_MS");
        long ms = v && *v ? strtol(v, NULL, 10) : 0;
        interval_ns = (ms > 0 ? ms : 10000) * (int64_t)1000000;
        quark = g_quark_from_static_string("pacer-agent-frames");
    }
    if (!class_name || g_object_get_qdata((GObject *)window, quark))
        return;
    win *w = calloc(1, sizeof(*w));
    if (!w) {
        agent_note_once("oom", "out of memory; some pages are not measured");
        return;
    }
    w->obj = (GObject *)window;
    w->class_name = class_name;
    w->next = all;
    all = w;
    g_object_set_qdata_full((GObject *)window, quark, w, win_free);
    g_signal_connect_data(window, "map", G_CALLBACK(on_map), w, NULL, 0);
    g_signal_connect_data(window, "unmap", G_CALLBACK(on_unmap), w, NULL, 0);
}

void frames_flush_all(void)
{
    flushing = true;
    for (win *w = all; w; w = w->next)
        emit(w, true);
    flushing = false;
}
