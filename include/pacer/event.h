/* pacer events: the one vocabulary every source speaks (docs/events.md).
 *
 * On the wire an event is one JSON object per line:
 *   {"t": <CLOCK_MONOTONIC ns>, "ev": NAME, ...fields}
 * pacer_event_parse() reads such a line, pacer_event_format() writes one.
 */
#ifndef PACER_EVENT_H
#define PACER_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include <pacer/export.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pacer_event_type {
    PACER_EV_LAUNCH = 1,        /* process launch (start of the cold start) */
    PACER_EV_AGENT_INIT,        /* instrumentation initialised */
    PACER_EV_MAIN,              /* main() entered */
    PACER_EV_APP_CREATED,       /* application created (GApplication activate) */
    PACER_EV_PAGE_CREATE,       /* page, class, kind */
    PACER_EV_PAGE_VIEW_CREATED, /* page */
    PACER_EV_PAGE_DRAW,         /* page */
    PACER_EV_PAGE_SELECT,       /* page */
    PACER_EV_PAGE_SCROLL,       /* page */
    PACER_EV_PAGE_DESTROY,      /* page */
    PACER_EV_API_START,         /* url, req */
    PACER_EV_API_END,           /* url, req, status */
    PACER_EV_PAGE_SHOW,         /* page: it could be seen for the first time (mapped) */
    PACER_EV_HANDOFF,           /* the launch handed its work to an instance already running */
    PACER_EV_RECORD,            /* record: a record measured outside the page and start-up models */
    PACER_EV_TOOLKIT,           /* class: the toolkit adapter that measures the pages (gtk4, gtk3) */
    PACER_EV_FIRST_FRAME,       /* source: a top-level surface's first frame presented, no toolkit adapter */
} pacer_event_type;

#define PACER_EV_FIRST PACER_EV_LAUNCH
#define PACER_EV_LAST PACER_EV_FIRST_FRAME

typedef enum pacer_page_kind {
    PACER_PAGE_WINDOW = 0, /* a toplevel window (Activity) */
    PACER_PAGE_PAGE = 1,   /* a page inside a stack/notebook (Fragment) */
} pacer_page_kind;

/* One event. Strings are borrowed: pacer_submit() copies what it keeps. */
typedef struct pacer_event {
    int64_t t_ns;            /* CLOCK_MONOTONIC ns; 0 = now (pacer_submit) */
    pacer_event_type type;
    uint64_t page;           /* page instance id (page_* events) */
    const char *class_name;  /* page_create; toolkit: the adapter's name */
    pacer_page_kind kind;    /* page_create */
    const char *url;         /* api_* */
    uint64_t req;            /* api_*: request id, 0 = unknown */
    int status;              /* api_end: HTTP status; <= 0 = transport failure */
    /* record: the record as a JSON object (docs/records.md) with its "type"
     * and fields, without the common fields the instance adds; record_len
     * bytes, not NUL-terminated by the parser */
    const char *record;
    size_t record_len;
    /* first_frame: how the frame reached the display (wayland, x11_present,
     * x11_image, glx, egl, vulkan) */
    const char *source;
} pacer_event;

/* The wire name of a type ("page_create"), or NULL for an unknown value. */
PACER_API const char *pacer_event_name(pacer_event_type type);

/* Parses one line (no trailing newline needed; surrounding whitespace is
 * allowed). On success fills *ret and returns 0; the strings in *ret point
 * into `scratch`, a caller buffer of at least `len + 1` bytes, and stay valid
 * while it does. On failure returns -EINVAL and writes a one-line reason into
 * err (e.g. "missing field \"page\"", "unknown event \"foo\""); the line
 * number is the caller's to add. Unknown extra fields are ignored. */
PACER_API int pacer_event_parse(const char *line, size_t len, char *scratch, pacer_event *ret,
                      char *err, size_t err_len);

/* Writes `ev` as one JSON line (with trailing newline) into buf. Returns the
 * length written (excluding the terminating NUL), or the length needed when
 * it does not fit (like snprintf), or -EINVAL for an invalid event. */
PACER_API int pacer_event_format(const pacer_event *ev, char *buf, size_t buf_len);

#ifdef __cplusplus
}
#endif

#endif
