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
