/* The start-up model (DESIGN §3.2).
 *
 *   launch → agent_init → main → app_created → first_frame → main_frame → full_display
 *
 *  - launch: stamped by `pacer run` before execve, else the kernel's process
 *    start time: earlier than any code of the app (seed 000).
 *  - app_created: GApplication activate; without one, the creation of the
 *    first window (startup_on_page_create).
 *  - first_frame: the first draw of any page (Matrix firstScreenCost); in a
 *    run without a toolkit adapter (no pages), the first frame a top-level
 *    surface presented to the display (startup_on_display_frame).
 *  - main_frame: the first draw of the main page: the config's tag="1" page,
 *    else the first window that is not a splash window (Matrix coldCost,
 *    where the splash's time counts inside the cold start); without pages,
 *    the first frame presented.
 *  - full_display: the main page's final draw, or its initial draw when it
 *    had nothing to load (time to full display).
 *
 * A main page closed before its first draw is forgotten and the next
 * eligible page takes its place.
 *
 * The cold start record is due when the main page is reported, so that it
 * carries full_display; or at the end of data. A warm start begins when a
 * window opens in a process whose windows had all closed after the cold
 * start, and ends at that window's first draw (Matrix warmCost).
 *
 * Without pages the cold start record is due at the first frame presented.
 *
 * A handoff: a GApplication launched while an instance of it runs passes
 * its activation to that instance and exits without a window. That launch
 * is no cold start: at the end of data it gets a `handoff` record (launch →
 * the handoff) instead, unless it opened a window after all.
 */
#include "startup.h"

#include <stdlib.h>
#include <string.h>

static bool set(int64_t v)
{
    return v != PAGE_UNSET;
}

void startup_init(startup *s)
{
    memset(s, 0, sizeof(*s));
    for (int i = 0; i < N_PHASES; i++)
        s->phase[i] = PAGE_UNSET;
    s->handoff = PAGE_UNSET;
}

void startup_clear(startup *s)
{
    free(s->main_class);
    free(s->toolkit);
    free(s->frame_source_own);
    startup_init(s);
}

void startup_on_toolkit(startup *s, const char *name)
{
    if (!s->toolkit && name)
        s->toolkit = strdup(name);
}

bool startup_on_display_frame(startup *s, const char *source, int64_t t)
{
    if (s->any_window || set(s->phase[PHASE_FIRST_FRAME]) || s->cold_reported)
        return false; /* the toolkit's pages give the frames of the start */
    s->phase[PHASE_FIRST_FRAME] = t;
    s->phase[PHASE_MAIN_FRAME] = t;
    free(s->frame_source_own);
    s->frame_source_own = source ? strdup(source) : NULL;
    s->frame_source = s->frame_source_own;
    s->cold_reported = true;
    return true;
}

void startup_on_mark(startup *s, startup_phase phase, int64_t t)
{
    if (phase < N_PHASES && !set(s->phase[phase]))
        s->phase[phase] = t;
}

void startup_on_page_create(startup *s, page *p, bool cfg_has_main, int64_t t)
{
    if (p->kind == PACER_PAGE_WINDOW) {
        if (!set(s->phase[PHASE_APP_CREATED]))
            s->phase[PHASE_APP_CREATED] = t;
        if (s->live_windows == 0 && set(s->phase[PHASE_MAIN_FRAME]) && !s->warm_pending) {
            s->warm_pending = true;
            s->warm_page = p->id;
            s->warm_create = t;
        }
        s->live_windows++;
        s->any_window = true;
    }
    if (!s->main_chosen) {
        bool is_main = cfg_has_main ? p->is_main
                                    : (p->kind == PACER_PAGE_WINDOW && !p->is_splash);
        if (is_main) {
            s->main_chosen = true;
            s->main_page = p->id;
            free(s->main_class);
            s->main_class = strdup(p->class_name);
            p->is_main = true;
        }
    } else if (p->id != s->main_page) {
        p->is_main = false; /* a second instance of the main class */
    }
}

void startup_on_page_destroy(startup *s, const page *p)
{
    if (p->kind == PACER_PAGE_WINDOW && s->live_windows > 0)
        s->live_windows--;
    if (s->warm_pending && p->id == s->warm_page)
        s->warm_pending = false; /* closed before it ever drew */
}

bool startup_on_first_draw(startup *s, const page *p, int64_t t, startup_report *ret)
{
    if (!set(s->phase[PHASE_FIRST_FRAME])) {
        s->phase[PHASE_FIRST_FRAME] = t;
        s->frame_source = "page";
    }
    if (s->main_chosen && p->id == s->main_page && !set(s->phase[PHASE_MAIN_FRAME]))
        s->phase[PHASE_MAIN_FRAME] = t;
    if (s->warm_pending && p->id == s->warm_page) {
        s->warm_pending = false;
        memset(ret, 0, sizeof(*ret));
        ret->warm = true;
        ret->warm_ns = t - s->warm_create;
        ret->warm_create = s->warm_create;
        ret->warm_first_frame = t;
        ret->warm_class = p->class_name;
        return true;
    }
    return false;
}

bool startup_on_main_reported(startup *s, const page *p)
{
    if (s->cold_reported || !s->main_chosen || p->id != s->main_page)
        return false;
    if ((p->status == PAGE_ABANDONED || p->status == PAGE_NEVER_SHOWN) && !set(s->phase[PHASE_MAIN_FRAME])) {
        /* Closed before it ever drew: it was not what the user waited for.
         * The next eligible page becomes the main page. */
        s->main_chosen = false;
        free(s->main_class);
        s->main_class = NULL;
        return false;
    }
    if (p->status == PAGE_COMPLETE)
        s->phase[PHASE_FULL_DISPLAY] = set(p->final_draw_end) ? p->final_draw_end : p->initial_draw_end;
    s->cold_reported = true;
    return true;
}

void startup_on_handoff(startup *s, int64_t t)
{
    if (!set(s->handoff))
        s->handoff = t;
}

bool startup_on_finish(startup *s, bool *ret_handoff)
{
    *ret_handoff = false;
    if (s->cold_reported)
        return false;
    if (set(s->handoff) && !s->any_window) {
        s->cold_reported = true;
        *ret_handoff = true;
        return true;
    }
    for (int i = 0; i < N_PHASES; i++) {
        if (set(s->phase[i])) {
            s->cold_reported = true;
            return true;
        }
    }
    return false;
}

bool startup_cold_ns(const startup *s, startup_phase phase, int64_t *ret)
{
    if (!set(s->phase[PHASE_LAUNCH]) || !set(s->phase[phase]))
        return false;
    *ret = s->phase[phase] - s->phase[PHASE_LAUNCH];
    return true;
}

bool startup_is_outlier(const startup *s)
{
    int64_t v;
    return startup_cold_ns(s, PHASE_APP_CREATED, &v) && v > STARTUP_OUTLIER_NS;
}
