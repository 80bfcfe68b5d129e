/* The record schema: every record type pacer produces, and every field of
 * each, in one table.
 *
 * This file is where record fields are named. Each type's fields are one
 * list below, a row per field:
 *
 *   X(ID, "name", TYPE, FLAGS, "unit", "values", "semconv", "column", SHAPE, "meaning")
 *
 *   ID       the field's constant: PACER_<TYPE>_<ID> (its index in the list)
 *   name     the member in a record's JSON, and the OTLP attribute pacer.<name>
 *            (for a metrics record: the metric pacer.<type>.<name>)
 *   TYPE     STRING, INT (int64), ID (uint64), MS (a duration: nanoseconds
 *            in memory, milliseconds with 3 decimals in JSON), BOOL, OBJECT
 *            and LIST (an object / an array of objects of SHAPE), STRINGS (an
 *            array of strings)
 *   FLAGS    PACER_FIELD_* below, or 0
 *   unit     "ms", "ns", "bytes", "count", or NULL
 *   values   the allowed values of a STRING or STRINGS field, '|'-separated,
 *            or NULL (any)
 *   semconv  an OpenTelemetry semantic-convention attribute that carries the
 *            value too, or NULL
 *   column   the column of the record type's store table that holds it, or
 *            NULL (kept with the row's other attributes)
 *
 * Everything else derives from these lists: the enums below, the tables in
 * src/core/schema.c, the record writer and reader (record.h), the OTLP
 * encoder, pacerd's ingest and store columns, `pacer report` and
 * `pacer schema`. docs/records.md is the human reference; a test holds it
 * and this table to each other. Adding a field is one row here plus the code
 * that measures it.
 */
#ifndef PACER_SCHEMA_H
#define PACER_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>

#include <pacer/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- common fields: every record has them ---- */
#define PACER_COMMON_FIELDS(X)                                                                                       \
    X(TYPE, "type", STRING, PACER_FIELD_REQUIRED, NULL, NULL, NULL, NULL, NONE,                                      \
      "the record type")                                                                                             \
    X(TS, "ts", INT, PACER_FIELD_REQUIRED, "ns", NULL, NULL, "ts", NONE,                                             \
      "wall-clock time (unix nanoseconds) at which what the record describes started")                              \
    X(APP, "app", STRING, 0, NULL, NULL, "service.name", "app", NONE, "application name")                            \
    X(VERSION, "version", STRING, 0, NULL, NULL, "service.version", "version", NONE, "application version")          \
    X(SESSION, "session", STRING, 0, NULL, NULL, NULL, "session", NONE, "id of this run of the application")         \
    X(PID, "pid", INT, 0, NULL, NULL, "process.pid", NULL, NONE, "process id of the run")

/* ---- page (DESIGN §3.1, seed 000) ---- */
#define PACER_PAGE_FIELDS(X)                                                                                         \
    X(CLASS, "page", STRING, PACER_FIELD_REQUIRED | PACER_FIELD_NAME, NULL, NULL, NULL, "page", NONE,                \
      "the page's class (GType name)")                                                                               \
    X(INSTANCE, "instance", ID, 0, NULL, NULL, NULL, "instance", NONE, "the page instance id the events used")       \
    X(KIND, "kind", STRING, 0, NULL, "window|page", NULL, "kind", NONE,                                              \
      "window (a toplevel window) or page (a page of a stack or notebook)")                                          \
    X(STATUS, "status", STRING, PACER_FIELD_REQUIRED, NULL,                                                          \
      "complete|deadline_exceeded|abandoned|incomplete|never_shown", NULL, "status", NONE,                           \
      "how the measurement ended")                                                                                   \
    X(MAIN, "main", BOOL, 0, NULL, NULL, NULL, "main", NONE, "the main page of the cold start")                      \
    X(INITIAL_DRAW_MS, "initial_draw_ms", MS, PACER_FIELD_METRIC | PACER_FIELD_SPAN_FALLBACK, "ms", NULL, NULL,      \
      "initial_draw_ms", NONE, "first render: create to the first draw")                                             \
    X(API_LOAD_MS, "api_load_ms", MS, PACER_FIELD_METRIC | PACER_FIELD_SPAN_FALLBACK, "ms", NULL, NULL,              \
      "api_load_ms", NONE, "initial data load: the first configured request started to all of them ended")           \
    X(FINAL_DRAW_MS, "final_draw_ms", MS, PACER_FIELD_METRIC, "ms", NULL, NULL, "final_draw_ms", NONE,               \
      "second render: the data in to the draw that shows it")                                                        \
    X(TOTAL_MS, "total_ms", MS, PACER_FIELD_METRIC | PACER_FIELD_SPAN_END, "ms", NULL, NULL, "total_ms", NONE,       \
      "create to the final draw, without the time a lazy page waited hidden")                                        \
    X(APIS, "apis", LIST, 0, NULL, NULL, NULL, NULL, PAGE_API, "the page's configured APIs, in config order")

#define PACER_PAGE_API_FIELDS(X)                                                                                     \
    X(URL, "url", STRING, PACER_FIELD_REQUIRED, NULL, NULL, NULL, NULL, NONE, "the configured path")                 \
    X(MS, "ms", MS, 0, "ms", NULL, NULL, NULL, NONE, "the request's start to its end")                               \
    X(STATUS, "status", INT, 0, NULL, NULL, NULL, NULL, NONE, "HTTP status; 0 or negative: transport failure")

/* ---- startup (DESIGN §3.2, seeds 000 and 002) ---- */
#define PACER_STARTUP_FIELDS(X)                                                                                      \
    X(KIND, "kind", STRING, PACER_FIELD_REQUIRED | PACER_FIELD_NAME, NULL, "cold|warm|handoff", NULL, "kind", NONE,  \
      "cold, warm, or handoff (the launch passed its work to an instance already running)")                          \
    X(COLD_MS, "cold_ms", MS, PACER_FIELD_METRIC | PACER_FIELD_SPAN_END, "ms", NULL, NULL, "cold_ms", NONE,          \
      "cold: launch to the first frame of the main page")                                                            \
    X(FIRST_SCREEN_MS, "first_screen_ms", MS, PACER_FIELD_METRIC, "ms", NULL, NULL, "first_screen_ms", NONE,         \
      "cold: launch to the first frame of any page")                                                                 \
    X(APP_COST_MS, "app_cost_ms", MS, PACER_FIELD_METRIC, "ms", NULL, NULL, "app_cost_ms", NONE,                     \
      "cold: launch to the application created")                                                                     \
    X(FULL_DISPLAY_MS, "full_display_ms", MS, PACER_FIELD_METRIC, "ms", NULL, NULL, "full_display_ms", NONE,         \
      "cold: launch to the main page's final draw")                                                                  \
    X(WARM_MS, "warm_ms", MS, PACER_FIELD_METRIC | PACER_FIELD_SPAN_END, "ms", NULL, NULL, "warm_ms", NONE,          \
      "warm: a window created after all had closed to its first draw")                                               \
    X(HANDOFF_MS, "handoff_ms", MS, PACER_FIELD_METRIC | PACER_FIELD_SPAN_END, "ms", NULL, NULL, "handoff_ms", NONE,  \
      "handoff: launch to the handoff to the running instance")                                                      \
    X(OUTLIER, "outlier", BOOL, 0, NULL, NULL, NULL, "outlier", NONE, "slower than 30 s: left out of percentiles")   \
    X(MAIN_PAGE, "main_page", STRING, 0, NULL, NULL, NULL, "main_page", NONE, "cold: class of the main page")        \
    X(PAGE, "page", STRING, 0, NULL, NULL, NULL, "page", NONE, "warm: class of the window that opened")              \
    X(TOOLKIT, "toolkit", STRING, 0, NULL, NULL, NULL, NULL, NONE,                                                   \
      "cold: the toolkit adapter that measured the pages (gtk4, gtk3)")                                             \
    X(FRAME_SOURCE, "frame_source", STRING, 0, NULL, "page|wayland|x11_present|x11_image|glx|egl|vulkan", NULL,     \
      NULL, NONE, "cold: what gave first_frame: a page's draw, or how a top-level surface's frame reached the "      \
      "display")                                                                                                     \
    X(PHASES, "phases", OBJECT, 0, NULL, NULL, NULL, NULL, STARTUP_PHASES, "the phase timestamps that were seen")

#define PACER_STARTUP_PHASES_FIELDS(X)                                                                               \
    X(LAUNCH, "launch", INT, 0, "ns", NULL, NULL, NULL, NONE, "cold: the process launch")                            \
    X(AGENT_INIT, "agent_init", INT, 0, "ns", NULL, NULL, NULL, NONE, "cold: instrumentation initialised")           \
    X(MAIN, "main", INT, 0, "ns", NULL, NULL, NULL, NONE, "cold: main() entered")                                    \
    X(APP_CREATED, "app_created", INT, 0, "ns", NULL, NULL, NULL, NONE, "cold: the application created")             \
    X(FIRST_FRAME, "first_frame", INT, 0, "ns", NULL, NULL, NULL, NONE,                                              \
      "the first draw of any page, or without pages the first frame presented")                                     \
    X(MAIN_FRAME, "main_frame", INT, 0, "ns", NULL, NULL, NULL, NONE, "cold: the first draw of the main page")       \
    X(FULL_DISPLAY, "full_display", INT, 0, "ns", NULL, NULL, NULL, NONE, "cold: the main page's final draw")        \
    X(CREATE, "create", INT, 0, "ns", NULL, NULL, NULL, NONE, "warm: the window's creation")                         \
    X(HANDOFF, "handoff", INT, 0, "ns", NULL, NULL, NULL, NONE, "handoff: activation passed to the running instance")

/* ---- net (DESIGN §3.4, seed 001) ---- */
#define PACER_NET_FIELDS(X)                                                                                          \
    X(LIB, "lib", STRING, 0, NULL, "soup|curl", NULL, NULL, NONE, "the HTTP library")                                \
    X(METHOD, "method", STRING, PACER_FIELD_NAME, NULL, NULL, "http.request.method", "method", NONE, "HTTP method")  \
    X(URL, "url", STRING, PACER_FIELD_REQUIRED | PACER_FIELD_NAME | PACER_FIELD_URL, NULL, NULL, "url.full", "url",  \
      NONE, "the full URL")                                                                                          \
    X(STATUS, "status", INT, PACER_FIELD_REQUIRED, NULL, NULL, "http.response.status_code", "status", NONE,          \
      "HTTP status; 0: transport failure")                                                                           \
    X(TOTAL_MS, "total_ms", MS, PACER_FIELD_METRIC | PACER_FIELD_SPAN_END, "ms", NULL, NULL, "total_ms", NONE,       \
      "request start to end")                                                                                        \
    X(DNS_MS, "dns_ms", MS, PACER_FIELD_METRIC | PACER_FIELD_NULLABLE, "ms", NULL, NULL, "dns_ms", NONE,             \
      "time resolving the host")                                                                                     \
    X(CONNECT_MS, "connect_ms", MS, PACER_FIELD_METRIC | PACER_FIELD_NULLABLE, "ms", NULL, NULL, "connect_ms", NONE, \
      "TCP connect time")                                                                                            \
    X(TLS_MS, "tls_ms", MS, PACER_FIELD_METRIC | PACER_FIELD_NULLABLE, "ms", NULL, NULL, "tls_ms", NONE,             \
      "TLS handshake time")                                                                                          \
    X(FIRST_BYTE_MS, "first_byte_ms", MS, PACER_FIELD_METRIC | PACER_FIELD_NULLABLE, "ms", NULL, NULL,               \
      "first_byte_ms", NONE, "request start to the first response byte")                                             \
    X(BYTES_SENT, "bytes_sent", INT, PACER_FIELD_NULLABLE, "bytes", NULL, NULL, "bytes_sent", NONE,                  \
      "request headers and body")                                                                                    \
    X(BYTES_RECEIVED, "bytes_received", INT, PACER_FIELD_NULLABLE, "bytes", NULL, NULL, "bytes_received", NONE,      \
      "response headers and body")                                                                                   \
    X(CONTENT_TYPE, "content_type", STRING, PACER_FIELD_NULLABLE, NULL, NULL, NULL, "content_type", NONE,            \
      "the response's Content-Type")                                                                                 \
    X(ERROR, "error", STRING, PACER_FIELD_NULLABLE, NULL, NULL, NULL, "error", NONE, "transport error text")         \
    X(PAGE, "page", STRING, 0, NULL, NULL, NULL, "page", NONE, "the page visible when the request ended")            \
    X(CLASSES, "classes", STRINGS, 0, NULL, "error|large_image|slow", NULL, NULL, NONE,                              \
      "seed 001's classification")

/* ---- jank (DESIGN §3.3, seeds 001 and 002) ---- */
#define PACER_JANK_FIELDS(X)                                                                                         \
    X(KIND, "kind", STRING, PACER_FIELD_REQUIRED, NULL, "jank|hang", NULL, NULL, NONE, "jank, or hang past hang-ms") \
    X(DURATION_MS, "duration_ms", MS, PACER_FIELD_METRIC, "ms", NULL, NULL, NULL, NONE,                              \
      "busy time of the main-loop iteration")                                                                        \
    X(ONGOING, "ongoing", BOOL, 0, NULL, NULL, NULL, NULL, NONE, "the process ended while it was still busy")        \
    X(PAGE, "page", STRING, 0, NULL, NULL, NULL, NULL, NONE, "the page visible then")                                \
    X(STACK_STATUS, "stack_status", STRING, 0, NULL, "captured|no_answer|missed|unavailable", NULL, NULL, NONE,      \
      "whether and why not the stack was captured")                                                                  \
    X(STACK_METHOD, "stack_method", STRING, 0, NULL, "syscall|perf|signal", NULL, NULL, NONE,                        \
      "how the stack was taken")                                                                                     \
    X(FINGERPRINT, "fingerprint", STRING, 0, NULL, NULL, NULL, NULL, NONE,                                           \
      "16 hex digits naming the stuck code, stable across runs and builds")                                          \
    X(FINGERPRINT_VERSION, "fingerprint_version", INT, 0, NULL, NULL, NULL, NULL, NONE,                              \
      "the fingerprint's algorithm: fingerprints of different versions never match")                                 \
    X(STACK_TRUNCATED, "stack_truncated", BOOL, 0, NULL, NULL, NULL, NULL, NONE,                                     \
      "the unwinding stopped before the outermost frame")                                                            \
    X(STACK, "stack", LIST, 0, NULL, NULL, NULL, NULL, STACK_FRAME, "the main thread's stack, innermost frame first") \
    X(PROFILE_SAMPLES, "profile_samples", INT, 0, "count", NULL, NULL, NULL, NONE,                                  \
      "samples of the main thread's stack taken while the iteration was busy")                                      \
    X(PROFILE_INTERVAL_MS, "profile_interval_ms", MS, 0, "ms", NULL, NULL, NULL, NONE,                              \
      "the wall time each sample stands for")                                                                        \
    X(PROFILE, "profile", STRING, 0, NULL, NULL, NULL, NULL, NONE,                                                   \
      "the samples as folded stacks: one line per stack, outermost frame first, frames joined by ';', a space "    \
      "and the count")

#define PACER_STACK_FRAME_FIELDS(X)                                                                                  \
    X(ADDRESS, "address", STRING, 0, NULL, NULL, NULL, NULL, NONE, "hex; the call site for callers")                 \
    X(MODULE, "module", STRING, PACER_FIELD_NULLABLE, NULL, NULL, NULL, NULL, NONE, "ELF basename, or [vdso]")       \
    X(OFFSET, "offset", STRING, 0, NULL, NULL, NULL, NULL, NONE, "hex: the address minus the module's load address") \
    X(FUNCTION, "function", STRING, PACER_FIELD_REQUIRED, NULL, NULL, NULL, NULL, NONE,                              \
      "the symbol, or the address")                                                                                  \
    X(FILE, "file", STRING, 0, NULL, NULL, NULL, NULL, NONE, "source file (DWARF)")                                  \
    X(LINE, "line", INT, 0, NULL, NULL, NULL, NULL, NONE, "source line (DWARF)")                                     \
    X(IN_APP, "in_app", BOOL, 0, NULL, NULL, NULL, NULL, NONE, "a frame of the application's own code")

/* ---- frames (DESIGN §3.3; Sentry, Firebase, Matrix FrameTracer) ---- */
#define PACER_FRAMES_FIELDS(X)                                                                                       \
    X(WINDOW, "window", STRING, PACER_FIELD_REQUIRED | PACER_FIELD_DIMENSION, NULL, NULL, NULL, NULL, NONE,          \
      "the window's class (GType name), or a top-level surface's application id")                                   \
    X(INSTANCE, "instance", ID, PACER_FIELD_DIMENSION, NULL, NULL, NULL, NULL, NONE,                                 \
      "the window instance (as page records' instance)")                                                             \
    X(FINAL, "final", BOOL, PACER_FIELD_DIMENSION, NULL, NULL, NULL, NULL, NONE,                                     \
      "written when the window unmapped or the run ended")                                                           \
    X(FRAMES, "frames", INT, PACER_FIELD_REQUIRED, "count", NULL, NULL, NULL, NONE, "frames in this record")         \
    X(SLOW, "slow", INT, 0, "count", NULL, NULL, NULL, NONE, "frames longer than the refresh interval")              \
    X(FROZEN, "frozen", INT, 0, "count", NULL, NULL, NULL, NONE, "frames longer than 700 ms")                        \
    X(DROPPED_FRAMES, "dropped_frames", INT, 0, "count", NULL, NULL, NULL, NONE,                                     \
      "the sum of floor(duration / refresh)")                                                                        \
    X(DELAY_MS, "delay_ms", MS, 0, "ms", NULL, NULL, NULL, NONE, "the sum of (duration - refresh) over slow frames")  \
    X(MAX_FRAME_MS, "max_frame_ms", MS, 0, "ms", NULL, NULL, NULL, NONE, "the longest frame")                        \
    X(REFRESH_MS, "refresh_ms", MS, PACER_FIELD_DIMENSION, "ms", NULL, NULL, NULL, NONE,                             \
      "the refresh interval frames are graded against")                                                              \
    X(REFRESH_SOURCE, "refresh_source", STRING, PACER_FIELD_DIMENSION, NULL, "frame_clock|output|default", NULL,     \
      NULL, NONE, "where refresh_ms came from: the frame clock, the output's mode, or none (60 Hz)")                \
    X(SOURCE, "source", STRING, PACER_FIELD_DIMENSION, NULL, "frame_clock|wayland|x11_present|x11_image|glx|egl|vulkan", \
      NULL, NULL, NONE, "where the frames were timed: the toolkit's frame clock, or the display path")              \
    X(SPAN_MS, "span_ms", MS, 0, "ms", NULL, NULL, NULL, NONE, "the time this record covers")                        \
    X(LEVELS, "levels", OBJECT, 0, NULL, NULL, NULL, NULL, FRAME_LEVELS, "frames per Matrix level")               \
    X(PHASES_MS, "phases_ms", OBJECT, 0, NULL, NULL, NULL, NULL, FRAME_PHASES,                                      \
      "time per phase of a frame, summed over all frames")                                                           \
    X(SLOW_PHASES_MS, "slow_phases_ms", OBJECT, 0, NULL, NULL, NULL, NULL, FRAME_PHASES,                            \
      "time per phase of a frame, summed over the slow frames")                                                      \
    X(FROZEN_FRAMES, "frozen_frames", LIST, 0, NULL, NULL, NULL, NULL, FROZEN_FRAME,                                \
      "each frozen frame with its phases (the first 8)")                                                             \
    X(SLOW_WIDGETS, "slow_widgets", LIST, 0, NULL, NULL, NULL, NULL, SLOW_WIDGET,                                   \
      "--frames=detail: the widget types whose layout or paint took longest in slow frames")

#define PACER_FRAME_LEVELS_FIELDS(X)                                                                                 \
    X(BEST, "best", INT, 0, "count", NULL, NULL, NULL, NONE, "fewer than 3 dropped")                                 \
    X(NORMAL, "normal", INT, 0, "count", NULL, NULL, NULL, NONE, "3 to 8 dropped")                                   \
    X(MIDDLE, "middle", INT, 0, "count", NULL, NULL, NULL, NONE, "9 to 23 dropped")                                  \
    X(HIGH, "high", INT, 0, "count", NULL, NULL, NULL, NONE, "24 to 41 dropped")                                     \
    X(FROZEN, "frozen", INT, 0, "count", NULL, NULL, NULL, NONE, "42 or more dropped")

#define PACER_FRAME_PHASES_FIELDS(X)                                                                                 \
    X(EVENTS, "events", MS, 0, "ms", NULL, NULL, NULL, NONE,                                                         \
      "from when the frame was due or its cycle began to before-paint: events flushed, the loop held it back")     \
    X(UPDATE, "update", MS, 0, "ms", NULL, NULL, NULL, NONE, "before-paint and update: tick callbacks, animations")  \
    X(LAYOUT, "layout", MS, 0, "ms", NULL, NULL, NULL, NONE, "layout: measure and allocate")                         \
    X(PAINT, "paint", MS, 0, "ms", NULL, NULL, NULL, NONE, "paint: snapshot or draw, and the renderer")              \
    X(PRESENT, "present", MS, 0, "ms", NULL, NULL, NULL, NONE, "after-paint: the frame handed to the display")

#define PACER_FROZEN_FRAME_FIELDS(X)                                                                                 \
    X(MS, "ms", MS, PACER_FIELD_REQUIRED, "ms", NULL, NULL, NULL, NONE, "the frame's duration")                      \
    X(PHASES_MS, "phases_ms", OBJECT, 0, NULL, NULL, NULL, NULL, FRAME_PHASES, "its time per phase")

#define PACER_SLOW_WIDGET_FIELDS(X)                                                                                  \
    X(TYPE, "type", STRING, PACER_FIELD_REQUIRED, NULL, NULL, NULL, NULL, NONE, "the widget's type (GType name)")    \
    X(PHASE, "phase", STRING, PACER_FIELD_REQUIRED, NULL, "layout|paint", NULL, NULL, NONE,                         \
      "layout (its measure and allocate) or paint (its snapshot or draw)")                                          \
    X(MS, "ms", MS, PACER_FIELD_REQUIRED, "ms", NULL, NULL, NULL, NONE,                                              \
      "its own time in that phase over the slow frames, without its children's")                                     \
    X(CALLS, "calls", INT, 0, "count", NULL, NULL, NULL, NONE, "its calls in that phase over the slow frames")

/* ---- leak (DESIGN §3.5, seed 001: LeakCanary, KOOM) ---- */
#define PACER_LEAK_FIELDS(X)                                                                                         \
    X(KIND, "kind", STRING, PACER_FIELD_REQUIRED, NULL, "object|native", NULL, NULL, NONE,                           \
      "object: GObjects of a destroyed page still alive after the grace period; native: heap blocks nothing "      \
      "points to")                                                                                                   \
    X(SIGNATURE, "signature", STRING, PACER_FIELD_REQUIRED, NULL, NULL, NULL, NULL, NONE,                            \
      "16 hex digits naming the leak's shape, the key repeated leaks group under")                                  \
    X(ORIGIN, "origin", STRING, PACER_FIELD_REQUIRED, NULL, "app|library|unknown", NULL, NULL, NONE,                 \
      "app, library (a known leak, or native: no frame of the app's) or unknown (native: no stack)")                 \
    X(KNOWN_LEAK, "known_leak", STRING, 0, NULL, NULL, NULL, NULL, NONE, "the known-leak entry it matched")          \
    X(PAGE, "page", STRING, 0, NULL, NULL, NULL, NULL, NONE, "object: the destroyed page's class")                   \
    X(INSTANCE, "instance", ID, 0, NULL, NULL, NULL, NULL, NONE, "object: the page instance (as page records')")     \
    X(PAGE_KIND, "page_kind", STRING, 0, NULL, "window|page", NULL, NULL, NONE, "object: the page's kind")           \
    X(RETAINED, "retained", INT, 0, "count", NULL, NULL, NULL, NONE, "object: objects still alive")                  \
    X(CHECK_MS, "check_ms", MS, 0, "ms", NULL, NULL, NULL, NONE, "object: from the destroy to the second check")     \
    X(TYPES, "types", LIST, 0, NULL, NULL, NULL, NULL, LEAK_TYPE, "object: retained objects by type")                \
    X(OBJECTS, "objects", LIST, 0, NULL, NULL, NULL, NULL, LEAK_OBJECT, "object: the retained objects")             \
    X(COUNT, "count", INT, 0, "count", NULL, NULL, NULL, NONE, "native: leaked blocks")                              \
    X(BYTES, "bytes", INT, 0, "bytes", NULL, NULL, NULL, NONE, "native: their size, as requested")                   \
    X(SAMPLED, "sampled", INT, 0, "count", NULL, NULL, NULL, NONE, "native: blocks of them sampled with this stack")  \
    X(STACK, "stack", LIST, 0, NULL, NULL, NULL, NULL, STACK_FRAME, "native: the allocation stack, its caller first")

#define PACER_LEAK_TYPE_FIELDS(X)                                                                                    \
    X(TYPE, "type", STRING, PACER_FIELD_REQUIRED, NULL, NULL, NULL, NULL, NONE, "GType name")                        \
    X(COUNT, "count", INT, PACER_FIELD_REQUIRED, "count", NULL, NULL, NULL, NONE, "retained objects of the type")

#define PACER_LEAK_OBJECT_FIELDS(X)                                                                                  \
    X(TYPE, "type", STRING, PACER_FIELD_REQUIRED, NULL, NULL, NULL, NULL, NONE, "GType name")                        \
    X(REF_COUNT, "ref_count", INT, 0, "count", NULL, NULL, NULL, NONE, "its reference count at the second check")    \
    X(CREATED, "created", LIST, 0, NULL, NULL, NULL, NULL, STACK_FRAME, "where it was constructed")                  \
    X(REFS, "refs", LIST, 0, NULL, NULL, NULL, NULL, LEAK_REF, "references taken and never dropped (--leaks=refs)")  \
    X(REFS_UNSEEN, "refs_unseen", INT, 0, "count", NULL, NULL, NULL, NONE,                                           \
      "references held that no recorded ref accounts for")

#define PACER_LEAK_REF_FIELDS(X)                                                                                     \
    X(OP, "op", STRING, PACER_FIELD_REQUIRED, NULL, "new|ref|ref_sink", NULL, NULL, NONE, "how it was taken")        \
    X(COUNT, "count", INT, 0, "count", NULL, NULL, NULL, NONE, "references taken at this stack")                     \
    X(STACK, "stack", LIST, 0, NULL, NULL, NULL, NULL, STACK_FRAME, "where, innermost frame first")

/* The record types: X(ID, "type", SIGNAL, "table", "span prefix", FIELDS, "meaning"). */
#define PACER_RECORD_TYPES(X)                                                                                        \
    X(PAGE, "page", TRACES, "page_loads", "page", PAGE, "one measured page instance")                                \
    X(STARTUP, "startup", TRACES, "startups", "startup", STARTUP, "a cold or a warm start")                          \
    X(NET, "net", TRACES, "requests", NULL, NET, "one HTTP request")                                                 \
    X(JANK, "jank", LOGS, NULL, NULL, JANK, "one main-loop iteration busy for at least jank-ms")                      \
    X(FRAMES, "frames", METRICS, NULL, NULL, FRAMES, "frame statistics of one window")                               \
    X(LEAK, "leak", LOGS, NULL, NULL, LEAK, "objects that outlived their page, heap blocks nothing points to")

/* ---- the C view of the lists ---- */

typedef enum pacer_type {
    PACER_TYPE_STRING = 1,
    PACER_TYPE_INT,
    PACER_TYPE_ID,
    PACER_TYPE_MS,
    PACER_TYPE_BOOL,
    PACER_TYPE_OBJECT,
    PACER_TYPE_LIST,
    PACER_TYPE_STRINGS,
} pacer_type;

enum {
    PACER_FIELD_REQUIRED = 1 << 0,      /* always present in a record of the type */
    PACER_FIELD_NULLABLE = 1 << 1,      /* may be null: not measured (as opposed to absent) */
    PACER_FIELD_METRIC = 1 << 2,        /* its distribution is summarised (percentiles, rollups) */
    PACER_FIELD_NAME = 1 << 3,          /* part of the span name, in field order */
    PACER_FIELD_URL = 1 << 4,           /* a URL: its path names the span, its host is server.address */
    PACER_FIELD_SPAN_END = 1 << 5,      /* the span lasts this long (the first one present) */
    PACER_FIELD_SPAN_FALLBACK = 1 << 6, /* without one: the longest of these */
    PACER_FIELD_DIMENSION = 1 << 7,     /* metrics records: an attribute of every point, not a point */
};

typedef enum pacer_signal {
    PACER_SIGNAL_TRACES = 0,
    PACER_SIGNAL_LOGS,
    PACER_SIGNAL_METRICS,
    PACER_N_SIGNALS,
} pacer_signal;

typedef struct pacer_shape pacer_shape;

typedef struct pacer_field {
    const char *name;
    pacer_type type;
    unsigned flags;
    const char *unit;
    const char *values;
    const char *semconv;
    const char *column;
    const pacer_shape *shape; /* OBJECT, LIST: the members */
    const char *meaning;
} pacer_field;

/* An object's fields: a record type's, or a nested object's. */
struct pacer_shape {
    const char *name;
    const pacer_field *fields;
    size_t n_fields;
};

typedef struct pacer_record_type {
    int id;                  /* PACER_RECORD_* */
    const char *name;        /* the record's "type" */
    pacer_signal signal;     /* how it travels as OTLP */
    const char *table;       /* pacerd's table for it, or NULL: the signal's generic table */
    const char *span_prefix; /* traces: the span name begins with it, or NULL */
    const pacer_shape *shape;
    const char *meaning;
} pacer_record_type;

/* Field constants: PACER_<SHAPE>_<ID>, the field's index in its shape. */
#define PACER__ROW_COMMON(ID, ...) PACER_COMMON_##ID,
#define PACER__ROW_PAGE(ID, ...) PACER_PAGE_##ID,
#define PACER__ROW_PAGE_API(ID, ...) PACER_PAGE_API_##ID,
#define PACER__ROW_STARTUP(ID, ...) PACER_STARTUP_##ID,
#define PACER__ROW_STARTUP_PHASES(ID, ...) PACER_PHASE_##ID,
#define PACER__ROW_NET(ID, ...) PACER_NET_##ID,
#define PACER__ROW_JANK(ID, ...) PACER_JANK_##ID,
#define PACER__ROW_STACK_FRAME(ID, ...) PACER_STACK_##ID,
#define PACER__ROW_FRAMES(ID, ...) PACER_FRAMES_##ID,
#define PACER__ROW_FRAME_LEVELS(ID, ...) PACER_LEVEL_##ID,
#define PACER__ROW_FRAME_PHASES(ID, ...) PACER_FPHASE_##ID,
#define PACER__ROW_FROZEN_FRAME(ID, ...) PACER_FROZEN_##ID,
#define PACER__ROW_SLOW_WIDGET(ID, ...) PACER_SWIDGET_##ID,
#define PACER__ROW_LEAK(ID, ...) PACER_LEAK_##ID,
#define PACER__ROW_LEAK_TYPE(ID, ...) PACER_LEAKTYPE_##ID,
#define PACER__ROW_LEAK_OBJECT(ID, ...) PACER_LEAKOBJ_##ID,
#define PACER__ROW_LEAK_REF(ID, ...) PACER_LEAKREF_##ID,

enum { PACER_COMMON_FIELDS(PACER__ROW_COMMON) PACER_COMMON_N_FIELDS };
enum { PACER_PAGE_FIELDS(PACER__ROW_PAGE) PACER_PAGE_N_FIELDS };
enum { PACER_PAGE_API_FIELDS(PACER__ROW_PAGE_API) PACER_PAGE_API_N_FIELDS };
enum { PACER_STARTUP_FIELDS(PACER__ROW_STARTUP) PACER_STARTUP_N_FIELDS };
enum { PACER_STARTUP_PHASES_FIELDS(PACER__ROW_STARTUP_PHASES) PACER_PHASE_N_FIELDS };
enum { PACER_NET_FIELDS(PACER__ROW_NET) PACER_NET_N_FIELDS };
enum { PACER_JANK_FIELDS(PACER__ROW_JANK) PACER_JANK_N_FIELDS };
enum { PACER_STACK_FRAME_FIELDS(PACER__ROW_STACK_FRAME) PACER_STACK_N_FIELDS };
enum { PACER_FRAMES_FIELDS(PACER__ROW_FRAMES) PACER_FRAMES_N_FIELDS };
enum { PACER_FRAME_LEVELS_FIELDS(PACER__ROW_FRAME_LEVELS) PACER_LEVEL_N_FIELDS };
enum { PACER_FRAME_PHASES_FIELDS(PACER__ROW_FRAME_PHASES) PACER_FPHASE_N_FIELDS };
enum { PACER_FROZEN_FRAME_FIELDS(PACER__ROW_FROZEN_FRAME) PACER_FROZEN_N_FIELDS };
enum { PACER_SLOW_WIDGET_FIELDS(PACER__ROW_SLOW_WIDGET) PACER_SWIDGET_N_FIELDS };
enum { PACER_LEAK_FIELDS(PACER__ROW_LEAK) PACER_LEAK_N_FIELDS };
enum { PACER_LEAK_TYPE_FIELDS(PACER__ROW_LEAK_TYPE) PACER_LEAKTYPE_N_FIELDS };
enum { PACER_LEAK_OBJECT_FIELDS(PACER__ROW_LEAK_OBJECT) PACER_LEAKOBJ_N_FIELDS };
enum { PACER_LEAK_REF_FIELDS(PACER__ROW_LEAK_REF) PACER_LEAKREF_N_FIELDS };

#define PACER__ROW_TYPE(ID, ...) PACER_RECORD_##ID,
typedef enum pacer_record_id { PACER_RECORD_TYPES(PACER__ROW_TYPE) PACER_N_RECORD_TYPES } pacer_record_id;

/* The common fields (they are in every record, outside its type's shape). */
PACER_API const pacer_shape *pacer_common_shape(void);

/* Every record type, in the order of PACER_RECORD_TYPES. */
PACER_API const pacer_record_type *pacer_record_type_get(pacer_record_id id);
/* The type named `name` (n bytes), or NULL for a type pacer does not know
 * (records of such types are still written: pacer_emit). */
PACER_API const pacer_record_type *pacer_record_type_find(const char *name, size_t n);

/* The field of `shape` named `name` (n bytes): its index, or -1. */
PACER_API long pacer_shape_find(const pacer_shape *shape, const char *name, size_t n);

/* Whether s (n bytes) is one of the field's allowed values (always true for
 * a field without a list). */
PACER_API bool pacer_field_allows(const pacer_field *f, const char *s, size_t n);

/* The word docs/records.md uses for a field's type: "string", "integer",
 * "number", "bool", "object", "array", "array of strings". */
PACER_API const char *pacer_type_name(pacer_type t);

#ifdef __cplusplus
}
#endif

#endif
