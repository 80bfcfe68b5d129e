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
 * Phases (a caller that knows them: frame_info.phases, adding up to the
 * frame's duration): summed over all frames (phases_ms) and over the slow
 * ones (slow_phases_ms); each frozen frame keeps its own (the first
 * MAX_FROZEN of a record). With --frames=detail the caller also gives the
 * widget types' own times in each frame: those of slow frames are summed
 * per type and phase, and the record names the MAX_WIDGETS_OUT longest.
 *
 * Cost: a few compares and adds per frame, no allocation; the record is
 * built and submitted (the pacer instance's lock) at most once per
 * interval. A series is used by one thread at a time (its caller's lock
 * or thread), which also writes what is pending at exit (frames_emit).
 */
#include "agent.h"

#include <pacer/base/clock.h>

#include <stdlib.h>
#include <string.h>

#define FROZEN_NS 700000000
#define DEFAULT_REFRESH_NS 16666667

enum { BEST, NORMAL, MIDDLE, HIGH, FROZEN, N_LEVELS };
static const int level_min[N_LEVELS] = {0, 3, 9, 24, 42};
static const unsigned level_field[N_LEVELS] = {PACER_LEVEL_BEST, PACER_LEVEL_NORMAL, PACER_LEVEL_MIDDLE,
                                               PACER_LEVEL_HIGH, PACER_LEVEL_FROZEN};

#define MAX_FROZEN 8
#define MAX_WIDGETS 32
#define MAX_WIDGETS_OUT 5

static const unsigned phase_field[FRAME_N_PHASES] = {PACER_FPHASE_EVENTS, PACER_FPHASE_UPDATE, PACER_FPHASE_LAYOUT,
                                                     PACER_FPHASE_PAINT, PACER_FPHASE_PRESENT};

struct frozen_frame {
    int64_t ns;
    bool has_phases;
    int64_t phases[FRAME_N_PHASES];
};

struct frame_stats {
    const char *window; /* interned */
    const char *source;
    uint64_t instance;
    int64_t refresh_ns;
    const char *refresh_from;
    /* since the last record */
    uint64_t frames, slow, frozen, dropped, levels[N_LEVELS];
    int64_t delay_ns, max_ns, since;
    bool has_phases;
    int64_t phases[FRAME_N_PHASES], slow_phases[FRAME_N_PHASES];
    unsigned n_frozen;
    struct frozen_frame frozen_list[MAX_FROZEN];
    unsigned n_widgets;
    frame_widget_time widgets[MAX_WIDGETS];
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

static void set_phases(pacer_record *r, unsigned field, const int64_t *phases)
{
    pacer_record *o = pacer_record_add(r, field);
    for (int i = 0; o && i < FRAME_N_PHASES; i++)
        pacer_record_set_ms(o, phase_field[i], phases[i]);
}

static int widget_longer(const void *a, const void *b)
{
    int64_t x = ((const frame_widget_time *)a)->ns, y = ((const frame_widget_time *)b)->ns;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The phases, frozen frames and widget types of a record. */
static void emit_phases(frame_stats *f, pacer_record *r)
{
    if (!f->has_phases)
        return;
    set_phases(r, PACER_FRAMES_PHASES_MS, f->phases);
    if (f->slow)
        set_phases(r, PACER_FRAMES_SLOW_PHASES_MS, f->slow_phases);
    for (unsigned i = 0; i < f->n_frozen; i++) {
        pacer_record *e = pacer_record_add(r, PACER_FRAMES_FROZEN_FRAMES);
        if (!e)
            break;
        pacer_record_set_ms(e, PACER_FROZEN_MS, f->frozen_list[i].ns);
        if (f->frozen_list[i].has_phases)
            set_phases(e, PACER_FROZEN_PHASES_MS, f->frozen_list[i].phases);
    }
    qsort(f->widgets, f->n_widgets, sizeof(f->widgets[0]), widget_longer);
    for (unsigned i = 0; i < f->n_widgets && i < MAX_WIDGETS_OUT; i++) {
        pacer_record *e = pacer_record_add(r, PACER_FRAMES_SLOW_WIDGETS);
        if (!e)
            break;
        pacer_record_set_str(e, PACER_SWIDGET_TYPE, f->widgets[i].type);
        pacer_record_set_str(e, PACER_SWIDGET_PHASE, f->widgets[i].phase == FRAME_PAINT ? "paint" : "layout");
        pacer_record_set_ms(e, PACER_SWIDGET_MS, f->widgets[i].ns);
        pacer_record_set_int(e, PACER_SWIDGET_CALLS, (int64_t)f->widgets[i].calls);
    }
}

/* A slow frame's widget times, summed per type and phase (a type that
 * finds no room is left out: the table keeps the first MAX_WIDGETS). */
static void add_widgets(frame_stats *f, const frame_widget_time *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned k = 0;
        while (k < f->n_widgets && !(f->widgets[k].type == w[i].type && f->widgets[k].phase == w[i].phase))
            k++;
        if (k == f->n_widgets) {
            if (k == MAX_WIDGETS)
                continue;
            f->widgets[k] = (frame_widget_time){w[i].type, w[i].phase, 0, 0};
            f->n_widgets++;
        }
        f->widgets[k].calls += w[i].calls;
        f->widgets[k].ns += w[i].ns;
    }
}

bool frames_detail(void)
{
    static _Atomic int detail = -1;
    int d = atomic_load_explicit(&detail, memory_order_relaxed);
    if (d < 0) {
        const char *v = getenv("PACER_FRAMES");
        d = v && strcmp(v, "detail") == 0;
        atomic_store_explicit(&detail, d, memory_order_relaxed);
    }
    return d;
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
        emit_phases(f, r);
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
    f->has_phases = false;
    for (int i = 0; i < FRAME_N_PHASES; i++)
        f->phases[i] = f->slow_phases[i] = 0;
    f->n_frozen = f->n_widgets = 0;
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
    frame_info fi = {.start = start, .end = end, .refresh_ns = refresh_ns, .refresh_from = refresh_from};
    frames_add_info(f, &fi);
}

void frames_add_info(frame_stats *f, const frame_info *fi)
{
    if (!f)
        return;
    int64_t start = fi->start, end = fi->end, refresh_ns = fi->refresh_ns;
    const char *refresh_from = fi->refresh_from;
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
    if (fi->has_phases) {
        f->has_phases = true;
        for (int i = 0; i < FRAME_N_PHASES; i++)
            f->phases[i] += fi->phases[i];
    }
    if (d > refresh) {
        f->slow++;
        f->delay_ns += d - refresh;
        if (fi->has_phases)
            for (int i = 0; i < FRAME_N_PHASES; i++)
                f->slow_phases[i] += fi->phases[i];
        add_widgets(f, fi->widgets, fi->n_widgets);
    }
    if (d > FROZEN_NS) {
        f->frozen++;
        if (f->n_frozen < MAX_FROZEN) {
            struct frozen_frame *z = &f->frozen_list[f->n_frozen++];
            z->ns = d;
            z->has_phases = fi->has_phases;
            for (int i = 0; i < FRAME_N_PHASES; i++)
                z->phases[i] = fi->has_phases ? fi->phases[i] : 0;
        }
    }
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
