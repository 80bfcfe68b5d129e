/* The toolkit adapter interface: what joins a toolkit's folder
 * (src/agent/gtk4/, src/agent/gtk3/, …) to the toolkit-neutral agent.
 *
 * The neutral part measures any dynamically linked program that shows
 * windows: start-up to the first frame presented, frames where they reach
 * the display, main-loop iterations at their wait, libcurl requests. An
 * adapter adds what only the toolkit knows — pages (windows and their
 * stack or notebook pages by class name), their draws, the application
 * created mark, the toolkit's own HTTP library — and may time its windows'
 * frames itself (from its frame clock, with the phases of each frame).
 *
 * Life of an adapter (agent.c drives it; every step at most once):
 *
 *   noticed   its library (`soname`) is in the process: in the agent's
 *             constructor (linked at start), or inside the dlopen() call
 *             that loaded it (PyGObject, GJS, a plugin): agent.c checks
 *             after every successful dlopen.
 *   attach    at once, inside that constructor or dlopen, before the
 *             program can call the toolkit: finds the toolkit's functions
 *             and puts in place what must precede the toolkit's own start
 *             (hooks on its type registration). Any thread. Returns 0, or
 *             a negative errno and *ret_missing naming what the toolkit
 *             lacks (the adapter then stays off, said once).
 *   install   when the agent sets up (main() entered, or at attach when
 *             that is later and on the main thread, or at the toolkit's
 *             first window): connects its signals. Main thread.
 *   stop      at exit, before any flush: produce nothing more. Any thread.
 *   flush     at exit, while the main thread holds still: write what is
 *             pending (frames counted since the last record, requests
 *             waiting for their error text). Any thread.
 *
 * While attached, the adapter sends page events itself (agent_submit:
 * page_create … page_draw, app_created, handoff) and writes `frames`
 * records through frames.c. The neutral part asks it for the page visible
 * now (jank and net records). One toolkit adapter is in force at a time:
 * the first whose library was noticed.
 */
#ifndef PACER_AGENT_ADAPTER_H
#define PACER_AGENT_ADAPTER_H

#include <stdbool.h>
#include <stdint.h>

/* What an adapter measures beyond the neutral part. */
enum {
    ADAPTER_PAGES = 1 << 0,    /* page records of its windows and pages */
    ADAPTER_FRAMES = 1 << 1,   /* frames records of its windows, from its frame clock (the display's are off) */
    ADAPTER_REQUESTS = 1 << 2, /* requests of its own HTTP library (with libcurl's) */
    ADAPTER_NEEDS_DISPLAY = 1 << 3, /* its library alone (QtCore) does not make a program that shows
                                       windows: attached at once, measured once a display library is in */
};

typedef struct agent_adapter {
    const char *name;    /* "gtk4": the startup record's `toolkit`, notes */
    const char *title;   /* "GTK 4": the run summary */
    const char *soname;  /* the library that makes a program this toolkit's */
    unsigned measures;   /* ADAPTER_* */
    int (*attach)(const char **ret_missing);
    void (*install)(void);
    void (*stop)(void);  /* may be NULL */
    void (*flush)(void); /* may be NULL */
    /* The page visible now (an interned class name) or NULL. Any thread,
     * lock-free: the watchdog asks while the main thread is stuck. */
    const char *(*visible_page)(void);
    /* For an adapter whose windows' frames the display times (no
     * ADAPTER_FRAMES; both may be NULL): a frame was queued on a top-level
     * surface by the main thread (`kind`: display.h's surface_kind), and
     * a top-level surface's frame reached the display at t (any thread,
     * the display's lock held). The adapter tells its windows' draws. */
    void (*frame_queued)(int kind, uint64_t handle);
    void (*frame_presented)(int kind, uint64_t handle, int64_t t);
    /* For an adapter that times some of its windows' frames itself
     * without ADAPTER_FRAMES (Qt Quick windows, from their scene graph's
     * signals; may be NULL): asked at a top-level surface's first frame
     * presented, on the thread that presented it, the display's lock
     * held. True: the adapter counts that surface's frames and the
     * display counts none of them (the frame is still told to
     * frame_presented, and may still be the process's first). */
    bool (*frames_timed)(int kind, uint64_t handle);
} agent_adapter;

/* The adapters built into the agent, in the order agent.c notices them. */
extern const agent_adapter agent_adapter_gtk4, agent_adapter_gtk3;
extern const agent_adapter agent_adapter_qt6, agent_adapter_qt5; /* qt/qt.c */

/* The adapter in force, or NULL (none noticed yet, or none for this
 * program). Any thread. */
const agent_adapter *agent_adapter_in_force(void);

#endif
