/* What joins the agent to its Qt adapter, a library of its own.
 *
 * The agent is C and links no toolkit; the Qt adapter is C++ and links Qt,
 * so it cannot be inside the agent: a program that is not Qt must never map
 * it. The agent (qt.c) notices QtCore in the process (libQt6Core.so.6,
 * libQt5Core.so.5: at its constructor, or after the outermost dlopen that
 * loaded it), loads libpacer-qt6.so / libpacer-qt5.so from its own
 * directory and calls pacer_qt_adapter_init() with this table: everything
 * the adapter may ask of the agent. The adapter answers with its own table
 * (pacer_qt_ops). Both are plain C; no C++ exception crosses them.
 *
 * Versioned: fields are only ever added at the end; `size` is the size of
 * the struct the caller filled.
 */
#ifndef PACER_AGENT_QT_HOST_H
#define PACER_AGENT_QT_HOST_H

#include <pacer/event.h>

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PACER_QT_HOST_VERSION 1

/* One finished request, for its `net` record (docs/records.md). -1: not
 * known; strings may be NULL. */
typedef struct pacer_qt_request {
    const char *method;
    const char *url;
    int status;                 /* HTTP status, 0: transport failure */
    int64_t bytes_sent;         /* -1: unknown */
    int64_t bytes_received;     /* -1: unknown */
    int64_t body_received;      /* -1: unknown */
    const char *content_type;
    int64_t connect_ns;         /* connecting + TLS, -1: not measured */
    int64_t first_byte_ns;      /* start → headers received, -1: not measured */
    int64_t total_ns;
    const char *error;          /* Qt's error string; NULL on success */
    int64_t end_ns;
} pacer_qt_request;

/* One frame the adapter timed itself (a Qt Quick window's, from its scene
 * graph's signals), for its window's `frames` records: from start to end
 * (CLOCK_MONOTONIC ns), never overlapping the window's previous frame nor
 * before the series' span began (frames_since); its phases add up to
 * end − start, indexed by PACER_QT_PHASE_*. */
enum {
    PACER_QT_PHASE_EVENTS,
    PACER_QT_PHASE_UPDATE,
    PACER_QT_PHASE_LAYOUT,
    PACER_QT_PHASE_PAINT,
    PACER_QT_PHASE_PRESENT,
    PACER_QT_N_PHASES
};
typedef struct pacer_qt_frame {
    int64_t start, end;
    int64_t refresh_ns; /* 0: not known (60 Hz) */
    int64_t phases[PACER_QT_N_PHASES];
} pacer_qt_frame;

typedef struct pacer_qt_host {
    uint32_t version, size;
    int major;                  /* the Qt major the agent found: 5 or 6 */
    int64_t (*now_ns)(void);    /* CLOCK_MONOTONIC */
    bool (*on_main_thread)(void);
    /* A page or start-up event (pacer/event.h); any thread. */
    void (*submit)(const pacer_event *ev);
    /* The page the config in force names for a class name (the suffix Qt
     * gives QML types stripped by the caller), or -1. */
    long (*page_configured)(const char *class_name);
    /* Requests: the model's api_start / api_end, and the `net` record. */
    void (*request_start)(const char *url, const void *req, int64_t t_ns);
    void (*request_end)(const char *url, const void *req, int status, int64_t t_ns);
    void (*request_record)(const pacer_qt_request *r);
    /* Bumped after every request end: a page draws again (its final
     * draw) when its frame was painted in a newer epoch. */
    uint64_t (*net_epoch)(void);
    /* "pacer-agent: …" on stderr once per key. */
    void (*note)(const char *key, const char *text);
    /* Whether a library of that soname is loaded (no file opened). */
    bool (*lib_loaded)(const char *soname);
    /* A window's frames timed by the adapter: a series of `frames`
     * records (source "scene_graph") named `window`, whose span begins at
     * `since`; NULL on ENOMEM. A series is used by one thread at a time
     * (the adapter's lock): frames_add counts one frame (a record is
     * written every frames interval), frames_since is when the current
     * record's span began, frames_flush writes what is pending (at exit),
     * frames_close writes it and frees the series. */
    void *(*frames_open)(const char *window, uint64_t instance, int64_t since);
    void (*frames_add)(void *series, const pacer_qt_frame *f);
    int64_t (*frames_since)(void *series);
    void (*frames_flush)(void *series);
    void (*frames_close)(void *series);
    /* When the main loop's last wait ended (0: none yet). Any thread. */
    int64_t (*loop_wait_end)(void);
} pacer_qt_host;

/* What the adapter gives back. Every function may be NULL. */
typedef struct pacer_qt_ops {
    /* A frame was queued on a top-level surface by the main thread (a
     * commit, an image upload): the adapter binds the surface to the
     * window being painted. `kind`: display.h's surface_kind. */
    void (*frame_queued)(int kind, uint64_t handle);
    /* That surface's frame reached the display at t. Any thread; the
     * display's lock is held: no Qt call. */
    void (*frame_presented)(int kind, uint64_t handle, int64_t t);
    /* The page visible now (a class name that lives as long as the
     * process), or NULL. Any thread, lock-free. */
    const char *(*visible_page)(void);
    /* At exit: report nothing more. */
    void (*stop)(void);
    /* Whether the adapter times that top-level surface's frames itself
     * (adapter.h's frames_timed): the thread presenting it is rendering
     * one of its Qt Quick windows. The display's lock is held: no Qt
     * call. */
    bool (*frames_timed)(int kind, uint64_t handle);
    /* At exit, after stop: write the frames counted since the last
     * records. */
    void (*flush)(void);
} pacer_qt_ops;

/* Exported by libpacer-qt{5,6}.so. Installs the adapter in QtCore's hook
 * table. Returns 0 and fills *ops, or a negative errno and a reason in
 * *why (a static string). Called once, inside the agent's constructor or
 * a dlopen call. */
typedef int (*pacer_qt_adapter_init_fn)(const pacer_qt_host *host, pacer_qt_ops *ops, const char **why);
#define PACER_QT_ADAPTER_INIT "pacer_qt_adapter_init"

#ifdef __cplusplus
}
#endif

#endif
