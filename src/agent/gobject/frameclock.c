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
