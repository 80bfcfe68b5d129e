/* --frames=detail for GTK 4 (gtk4.h, "widget_times.c"): each widget
 * type's own time in a frame's layout (its measure and size_allocate) and
 * paint (its snapshot), for window_frames.c to hand to frames.c with the
 * frame (frames.c keeps the slow frames').
 *
 * How: when a widget of a type not seen yet is constructed, every class
 * from its type up to GtkWidget (not included) that has a measure,
 * size_allocate or snapshot of its own (not its parent's) gets it
 * replaced by a trampoline that times the call and then calls the
 * class's own. A trampoline is one of a fixed set, each bound to one
 * original (SLOTS per virtual function: a class past them is not timed,
 * said once). Calls nest (a box measures its children): a call's own time
 * is its time minus its children's, counted for the type of the widget it
 * ran for; a class chaining up to its parent's function for the same
 * widget counts once. Nothing else changes: the original runs with the
 * same arguments, and its results are the caller's.
 *
 * Off unless PACER_FRAMES=detail (frames_detail()): the class tables are
 * then never touched. Cost when on: two clock reads per timed call. Main
 * thread (GTK's).
 */
#include "gtk4.h"

#include <pacer/base/clock.h>

#define SLOTS 48
#define MAX_DEPTH 64
#define MAX_CYCLE 64
#define SEEN_SIZE 1024 /* a power of two */

typedef void (*measure_fn)(GtkWidget *, GtkOrientation, int, int *, int *, int *, int *);
typedef void (*allocate_fn)(GtkWidget *, int, int, int);
typedef void (*snapshot_fn)(GtkWidget *, GtkSnapshot *);

static measure_fn orig_measure[SLOTS];
static allocate_fn orig_allocate[SLOTS];
static snapshot_fn orig_snapshot[SLOTS];
static unsigned used_measure, used_allocate, used_snapshot;

/* the calls open now, innermost last */
static struct open {
    GtkWidget *widget;
    int phase;
    int64_t t0, children;
} open_calls[MAX_DEPTH];
static int depth;

/* the cycle's times, per type and phase */
static frame_widget_time cycle[MAX_CYCLE];
static size_t n_cycle;

static bool enter(GtkWidget *w, int phase)
{
    if (depth > 0 && open_calls[depth - 1].widget == w && open_calls[depth - 1].phase == phase)
        return false; /* chaining up: the same call */
    if (depth == MAX_DEPTH)
        return false;
    open_calls[depth++] = (struct open){w, phase, mono_ns(), 0};
    return true;
}

static void leave(void)
{
    struct open o = open_calls[--depth];
    int64_t total = mono_ns() - o.t0;
    if (depth > 0)
        open_calls[depth - 1].children += total;
    const char *type = G_OBJECT_TYPE_NAME(o.widget);
    size_t k = 0;
    while (k < n_cycle && !(cycle[k].type == type && cycle[k].phase == o.phase))
        k++;
    if (k == n_cycle) {
        if (k == MAX_CYCLE)
            return;
        cycle[k] = (frame_widget_time){type, o.phase, 0, 0};
        n_cycle++;
    }
    cycle[k].calls++;
    cycle[k].ns += total > o.children ? total - o.children : 0;
}

/* Trampoline n (10…17, 20…27, …, 60…67: decimal literals) is bound to
 * slot SLOT(n) of the tables. */
#define SLOT(n) (((n) / 10 - 1) * 8 + (n) % 10)
#define TRAMPOLINES(n)                                                                                                 \
    static void measure_##n(GtkWidget *w, GtkOrientation o, int for_size, int *min, int *nat, int *min_b, int *nat_b) \
    {                                                                                                                  \
        bool timed = enter(w, FRAME_LAYOUT);                                                                           \
        orig_measure[SLOT(n)](w, o, for_size, min, nat, min_b, nat_b);                                                 \
        if (timed)                                                                                                     \
            leave();                                                                                                   \
    }                                                                                                                  \
    static void allocate_##n(GtkWidget *w, int width, int height, int baseline)                                       \
    {                                                                                                                  \
        bool timed = enter(w, FRAME_LAYOUT);                                                                           \
        orig_allocate[SLOT(n)](w, width, height, baseline);                                                            \
        if (timed)                                                                                                     \
            leave();                                                                                                   \
    }                                                                                                                  \
    static void snapshot_##n(GtkWidget *w, GtkSnapshot *s)                                                            \
    {                                                                                                                  \
        bool timed = enter(w, FRAME_PAINT);                                                                            \
        orig_snapshot[SLOT(n)](w, s);                                                                                  \
        if (timed)                                                                                                     \
            leave();                                                                                                   \
    }
#define EACH8(X, a) X(a##0) X(a##1) X(a##2) X(a##3) X(a##4) X(a##5) X(a##6) X(a##7)
#define EACH_SLOT(X) EACH8(X, 1) EACH8(X, 2) EACH8(X, 3) EACH8(X, 4) EACH8(X, 5) EACH8(X, 6)

EACH_SLOT(TRAMPOLINES)

#define MEASURE_ENTRY(n) measure_##n,
#define ALLOCATE_ENTRY(n) allocate_##n,
#define SNAPSHOT_ENTRY(n) snapshot_##n,
static const measure_fn measure_slots[SLOTS] = {EACH_SLOT(MEASURE_ENTRY)};
static const allocate_fn allocate_slots[SLOTS] = {EACH_SLOT(ALLOCATE_ENTRY)};
static const snapshot_fn snapshot_slots[SLOTS] = {EACH_SLOT(SNAPSHOT_ENTRY)};

/* Whether fn is one of the trampolines. */
static bool is_slot(const void *fn, const void *const *slots)
{
    for (int i = 0; i < SLOTS; i++)
        if (slots[i] == fn)
            return true;
    return false;
}

/* Replaces *vfunc by a free trampoline bound to it, unless it is one
 * already, or the class inherits it (parent's is the same). */
#define WRAP(vfunc, parent_fn, orig, slots, used)                                                                     \
    do {                                                                                                               \
        if (!(vfunc) || (vfunc) == (parent_fn) || is_slot((const void *)(vfunc), (const void *const *)(slots)))       \
            break;                                                                                                     \
        if ((used) == SLOTS) {                                                                                         \
            agent_note_once("widget-slots", "--frames=detail: more widget classes than it can time; the rest are "   \
                                            "not named");                                                             \
            break;                                                                                                     \
        }                                                                                                              \
        (orig)[(used)] = (vfunc);                                                                                      \
        (vfunc) = (slots)[(used)++];                                                                                   \
    } while (0)

static GType seen[SEEN_SIZE];

void gtk4_widget_times_on_construct(GType type)
{
    if (!frames_detail())
        return;
    size_t h = (size_t)(type >> 3) & (SEEN_SIZE - 1), probes = 0;
    while (seen[h] && seen[h] != type && probes++ < SEEN_SIZE)
        h = (h + 1) & (SEEN_SIZE - 1);
    if (seen[h] == type)
        return;
    if (!seen[h])
        seen[h] = type; /* a full table: looked at again, which is harmless */
    GType widget = gtk_widget_get_type();
    for (GType t = type; t && t != widget; t = g_type_parent(t)) {
        GtkWidgetClass *c = g_type_class_peek(t), *p = g_type_class_peek(g_type_parent(t));
        if (!c || !p)
            break;
        WRAP(c->measure, p->measure, orig_measure, measure_slots, used_measure);
        WRAP(c->size_allocate, p->size_allocate, orig_allocate, allocate_slots, used_allocate);
        WRAP(c->snapshot, p->snapshot, orig_snapshot, snapshot_slots, used_snapshot);
    }
}

void gtk4_widget_times_reset(void)
{
    n_cycle = 0;
}

const frame_widget_time *gtk4_widget_times(size_t *ret_n)
{
    *ret_n = n_cycle;
    return cycle;
}
