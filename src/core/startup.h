/* The start-up model (seed 000's cold start, seed 002's Matrix StartupTracer,
 * DESIGN §3.2). model.c feeds it marks and page lifecycle; it decides which
 * page is the main page and says when a cold or warm start record is due. */
#ifndef PACER_CORE_STARTUP_H
#define PACER_CORE_STARTUP_H

#include "page.h"

#include <pacer/config.h>

#include <stdbool.h>
#include <stdint.h>

/* Matrix drops starts slower than this; pacer flags them. */
#define STARTUP_OUTLIER_NS (30LL * 1000000000)

typedef enum startup_phase {
    PHASE_LAUNCH = 0,
    PHASE_AGENT_INIT,
    PHASE_MAIN,
    PHASE_APP_CREATED,
    PHASE_FIRST_FRAME,
    PHASE_MAIN_FRAME,
    PHASE_FULL_DISPLAY,
    N_PHASES
} startup_phase;

typedef struct startup {
    int64_t phase[N_PHASES];      /* PAGE_UNSET until seen */
    bool main_chosen;
    uint64_t main_page;           /* id of the main page, once chosen */
    char *main_class;
    bool cold_reported;
    int live_windows;
    bool any_window;       /* a window was created */
    int64_t handoff;       /* PAGE_UNSET, or when the launch handed off */
    /* warm start in progress: every window had closed, then this one opened */
    bool warm_pending;
    uint64_t warm_page;
    int64_t warm_create;
    char *toolkit;            /* the toolkit adapter that measures pages, or NULL */
    const char *frame_source; /* what gave first_frame: "page" or a display path (static or owned) */
    char *frame_source_own;
} startup;

/* A record the start-up model wants written. */
typedef struct startup_report {
    bool warm;
    int64_t warm_ns;        /* warm: create → first paint */
    int64_t warm_create;
    int64_t warm_first_frame;
    const char *warm_class;
} startup_report;

void startup_init(startup *s);
void startup_clear(startup *s);

/* A start-up mark (launch … app_created). The first of each wins. */
void startup_on_mark(startup *s, startup_phase phase, int64_t t);

/* A page was created. Marks it main when it is the main page of the cold
 * start: the config's tag="1" page, or, when the config names none, the
 * first window that is not a splash window. Counts live windows and starts
 * a warm start when a window opens after all had closed. */
void startup_on_page_create(startup *s, page *p, bool cfg_has_main, int64_t t);
void startup_on_page_destroy(startup *s, const page *p);

/* The page's first draw: first frame, main frame, warm start end. Returns
 * true and fills *ret when a warm start record is due. */
bool startup_on_first_draw(startup *s, const page *p, int64_t t, startup_report *ret);

/* The toolkit adapter that measures the pages (gtk4, gtk3). The first
 * wins. */
void startup_on_toolkit(startup *s, const char *name);

/* A top-level surface's first frame presented, in a run without a toolkit
 * adapter (source: wayland, x11_image …). When no window page exists, it
 * is the first frame and the main frame; returns true when the cold start
 * record is due now (there is no main page to wait for). */
bool startup_on_display_frame(startup *s, const char *source, int64_t t);

/* The main page was reported: its final draw (complete pages) is the full
 * display. Returns true when the cold start record is now due. */
bool startup_on_main_reported(startup *s, const page *p);

/* The launch handed its work to an instance already running (GApplication
 * remote activation). The first wins. */
void startup_on_handoff(startup *s, int64_t t);

/* End of data: true when a start-up record is still due (some mark was
 * seen but the main page never finished). *ret_handoff says it is a handoff
 * record (the launch handed off and opened no window), not a cold start. */
bool startup_on_finish(startup *s, bool *ret_handoff);

/* Cold start metrics (ns from launch); false when absent. */
bool startup_cold_ns(const startup *s, startup_phase phase, int64_t *ret);
bool startup_is_outlier(const startup *s);

#endif
