/* `frames` records (DESIGN §3.3; Sentry/Firebase slow and frozen frames,
 * Matrix FrameTracer's dropped-frame levels), whoever timed the frames: a
 * toolkit adapter from its frame clock (gtk4/window_frames.c), or the
 * display layer from the frames a top-level surface presented.
 *
 * The caller gives each frame its start and end, never overlapping the
 * previous frame and never before the record's span began
 * (frames_since()), so the delays add up to at most the span and the
 * dropped frames to at most span / refresh. Here each frame is graded:
 *
 *   refresh   the interval the caller read (frame clock, output), else
 *             16.667 ms (60 Hz), and the record says which
 *   slow      duration > refresh
 *   frozen    duration > 700 ms
 *   dropped   ⌊duration / refresh⌋ per frame; each frame is graded by it
 *             with Matrix's levels: best < 3 ≤ normal < 9 ≤ middle < 24 ≤
 *             high < 42 ≤ frozen
 *   delay     Σ (duration − refresh) over slow frames
 *
 * Records: one per series every frames-interval-ms (config <thresholds>,
 * default 10000; PACER_FRAMES_INTERVAL_MS overrides it) of frames, and the
 * rest when the window unmaps (closed or hidden) or at exit, with the
 * counts of the frames since the series' previous record.
 *
 * Cost: a few compares and adds per frame, no allocation; the record is
 * built and submitted (the pacer instance's lock) at most once per
 * interval. A series is used by one thread at a time (its caller's lock
 * or thread), which also writes what is pending at exit (frames_emit).
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
    const char *window; /* interned */
    const char *source;
    uint64_t instance;
    int64_t refresh_ns;
    const char *refresh_from;
    /* since the last record */
    uint64_t frames, slow, frozen, dropped, levels[N_LEVELS];
    int64_t delay_ns, max_ns, since;
    int64_t interval;     /* the record interval, as last read */
    unsigned until_check; /* frames before the interval is read again */
};

/* The record interval: the config's, unless the environment overrides it;
 * read again when the config changes. */
static int64_t interval_ns(void)
{
    static _Atomic int64_t cached = -1;
    static _Atomic uint64_t generation;
    uint64_t g = pacer_config_generation(pacer_default());
    int64_t c = atomic_load_explicit(&cached, memory_order_relaxed);
    if (c < 0 || g != atomic_load_explicit(&generation, memory_order_relaxed)) {
        const char *v = getenv("PACER_FRAMES_INTERVAL_MS");
        long ms = v && *v ? strtol(v, NULL, 10) : 0;
        if (ms <= 0) {
            pacer_config *cfg = agent_config();
            ms = (long)pacer_config_frames_interval_ms(cfg);
            pacer_config_unref(cfg);
        }
        c = (int64_t)ms * 1000000;
        atomic_store_explicit(&cached, c, memory_order_relaxed);
        atomic_store_explicit(&generation, g, memory_order_relaxed);
    }
    return c;
}

void frames_emit(frame_stats *f, bool final)
{
    if (!f || f->frames == 0)
        return;
    pacer_record *r = pacer_record_new(PACER_RECORD_FRAMES);
    pacer_record *lv = r ? pacer_record_add(r, PACER_FRAMES_LEVELS) : NULL;
    if (lv) {
        pacer_record_set_str(r, PACER_FRAMES_WINDOW, f->window);
        pacer_record_set_id(r, PACER_FRAMES_INSTANCE, f->instance);
        pacer_record_set_bool(r, PACER_FRAMES_FINAL, final);
        pacer_record_set_int(r, PACER_FRAMES_FRAMES, (int64_t)f->frames);
        pacer_record_set_int(r, PACER_FRAMES_SLOW, (int64_t)f->slow);
        pacer_record_set_int(r, PACER_FRAMES_FROZEN, (int64_t)f->frozen);
        pacer_record_set_int(r, PACER_FRAMES_DROPPED_FRAMES, (int64_t)f->dropped);
        pacer_record_set_ms(r, PACER_FRAMES_DELAY_MS, f->delay_ns);
        pacer_record_set_ms(r, PACER_FRAMES_MAX_FRAME_MS, f->max_ns);
        pacer_record_set_ms(r, PACER_FRAMES_REFRESH_MS, f->refresh_ns);
        pacer_record_set_str(r, PACER_FRAMES_REFRESH_SOURCE, f->refresh_from ? f->refresh_from : "default");
        pacer_record_set_str(r, PACER_FRAMES_SOURCE, f->source);
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

frame_stats *frames_new(const char *window, uint64_t instance, const char *source)
{
    frame_stats *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->window = window;
    f->instance = instance;
    f->source = source;
    f->since = mono_ns();
    f->refresh_ns = DEFAULT_REFRESH_NS;
    return f;
}

void frames_begin(frame_stats *f)
{
    if (f)
        f->since = mono_ns();
}

void frames_begin_at(frame_stats *f, int64_t t)
{
    if (f)
        f->since = t;
}

int64_t frames_since(const frame_stats *f)
{
    return f ? f->since : 0;
}

void frames_add(frame_stats *f, int64_t start, int64_t end, int64_t refresh_ns, const char *refresh_from)
{
    if (!f)
        return;
    int64_t refresh = refresh_ns > 0 ? refresh_ns : DEFAULT_REFRESH_NS;
    f->refresh_ns = refresh;
    f->refresh_from = refresh_ns > 0 ? refresh_from : "default";
    int64_t d = end > start ? end - start : 0;
    int64_t dropped = d < refresh ? 0 : d / refresh;
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
    /* the interval (a config lookup) is read again every 64 frames and
     * before a record is due by the last one */
    if (!f->until_check-- || end - f->since >= f->interval) {
        f->interval = interval_ns();
        f->until_check = 64;
    }
    if (end - f->since >= f->interval)
        frames_emit(f, false);
}

void frames_free(frame_stats *f)
{
    if (!f)
        return;
    frames_emit(f, true);
    free(f);
}
