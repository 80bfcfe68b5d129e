/* pacer — automatic performance monitoring for native Linux applications.
 *
 * This is the public API of libpacer. An application (or the LD_PRELOAD agent
 * acting for it) creates one pacer instance, feeds it lifecycle events — page
 * creation and draws, request start and end, start-up marks — and pacer turns
 * them into records (page load times, start-up costs, …) that a background
 * thread writes as JSON Lines. docs/records.md describes every record field;
 * docs/events.md describes the event vocabulary.
 *
 * Threads: every function taking a pacer_t may be called from any thread, at
 * the same time as any other, except pacer_free(), which must be the last call
 * on an instance. No function performs file or network I/O on the caller's
 * thread; records are queued and written by the instance's writer thread.
 *
 * Clocks: event times are CLOCK_MONOTONIC nanoseconds (pacer_now_ns()).
 *
 * Errors: functions returning int return 0 on success and a negative errno
 * value on failure; they never print.
 */
#ifndef PACER_PACER_H
#define PACER_PACER_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include <pacer/export.h>

#include <pacer/config.h>
#include <pacer/event.h>
#include <pacer/record.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PACER_VERSION "0.1.0"

typedef struct pacer pacer_t;

/* Called on the writer thread for every record, after it was written to the
 * output file (if any). `line` is one JSON object without a trailing newline,
 * valid only during the call. */
typedef void (*pacer_record_fn)(const char *line, size_t len, void *user_data);

typedef struct pacer_options {
    const char *app_name;      /* "app" field of every record; NULL → "unknown" */
    const char *app_version;   /* "version" field; NULL → "unknown" */
    const char *config_path;   /* XML page config (DESIGN §4); NULL → zero config */
    const char *out_path;      /* JSON Lines output, appended; "-" = stdout; NULL = none */
    /* When set, every event accepted by pacer_submit() is also written, as an
     * event line (docs/events.md), to this file, so a run can be replayed. */
    const char *raw_events_path;
    pacer_record_fn on_record; /* optional: receives every record */
    void *user_data;           /* passed to on_record */
    /* Session id written to every record; NULL → a random 16-hex-digit id. */
    const char *session;
    /* Maximum records waiting for the writer; beyond it new records are
     * dropped and counted (pacer_stats). 0 → 65536. */
    size_t queue_limit;
    /* When true, the writer thread also checks page deadlines against the
     * monotonic clock (live use). Replay leaves it false: there the event
     * times alone drive deadlines. */
    bool live_deadlines;
    /* When true, event times are always taken as given, 0 included (replay
     * of recorded events); otherwise t_ns == 0 means "now". */
    bool explicit_times;
    /* Upload (docs/otlp-mapping.md). With server_url set ("http://host:port"),
     * records also go to an on-disk spool and a background thread sends them
     * to the server as OTLP/HTTP (protobuf or JSON, gzip: below) or OTLP/gRPC,
     * with retries; the page config is fetched from the config service
     * (config_server_url: GET /v1/config/{app_name}), polled, applied live
     * and cached beside the spool for offline starts (the cached server
     * config takes precedence over config_path). With otlp_protocol "grpc"
     * the URL is the gRPC endpoint, http://host:port (HTTP/2 without TLS)
     * or https://host:port (TLS, ALPN h2), without a path: OTLP's gRPC port
     * is 4317. */
    const char *server_url;
    /* The app's ingest key (Authorization: Bearer). NULL: the key `pacer
     * run` hands over, if any: the file descriptor named by
     * PACER_SERVER_KEY_FD, which is read once, then closed and the
     * variable removed, so that the app's children inherit neither. */
    const char *server_key;
    const char *spool_path;    /* NULL: $XDG_STATE_HOME/pacer/spool.db or ~/.local/state/pacer/ */
    /* CA certificates (PEM) an https:// server's certificate is verified
     * against, e.g. for a self-signed one. NULL: $PACER_SERVER_CA, else the
     * system's. The certificate and its host name are always verified. */
    const char *server_ca_file;
    /* How the uploader sends: "protobuf" (OTLP/HTTP's default, what any
     * OpenTelemetry Collector takes), "json" (OTLP/HTTP JSON), or "grpc"
     * (OTLP/gRPC: a unary Export call per batch, protobuf, over HTTP/2);
     * NULL: $PACER_OTLP_PROTOCOL, else "protobuf". Another value, or "grpc"
     * with a server URL that has a path, fails pacer_new with -EINVAL. */
    const char *otlp_protocol;
    /* "gzip" or "none"; NULL: $PACER_OTLP_COMPRESSION, else "gzip". */
    const char *otlp_compression;
    /* Where the page config comes from: an http(s):// pacerd serving GET
     * /v1/config/{app_name} (the same key and CA as the server). NULL:
     * $PACER_CONFIG_SERVER_URL, else server_url over OTLP/HTTP; over gRPC,
     * none (a gRPC endpoint serves no config), and then no cached server
     * config is used either: config_path is the config. */
    const char *config_server_url;
} pacer_options;

/* Creates an instance. On success *ret is set and 0 returned. A config file
 * that cannot be loaded fails the call with -EINVAL, and `*ret_error` (when
 * not NULL) receives a malloc'd message naming the file, line and reason,
 * which the caller frees. An output file that cannot be opened gives -errno. */
PACER_API int pacer_new(const pacer_options *opts, pacer_t **ret, char **ret_error);

/* Ends the measurement: reports every page still measuring (status
 * "incomplete", or "deadline_exceeded" when its deadline passed by the latest
 * event time) and the start-up record if it is still pending, waits until
 * every record is written, and gives the uploader (with a server) up to 3 s
 * to deliver what is spooled. Later events and records are refused with
 * -ESHUTDOWN; pacer_get_stats() still answers, with the final upload
 * figures. Calling it again does nothing. Accepts NULL. */
PACER_API void pacer_finish(pacer_t *p);

/* pacer_finish() if not done yet, then stops the writer thread and frees the
 * instance. Accepts NULL. */
PACER_API void pacer_free(pacer_t *p);

/* Feeds one event through the model. Events with t_ns == 0 take the current
 * monotonic time (unless the instance was created with explicit_times). Returns 0, or -EINVAL for an event missing a field its type
 * requires (the event is ignored). */
PACER_API int pacer_submit(pacer_t *p, const pacer_event *ev);

/* Convenience wrappers around pacer_submit() stamped with pacer_now_ns(). */
PACER_API int pacer_mark(pacer_t *p, pacer_event_type mark);  /* LAUNCH … APP_CREATED */
PACER_API int pacer_page_create(pacer_t *p, uint64_t page, const char *class_name, pacer_page_kind kind);
PACER_API int pacer_page_view_created(pacer_t *p, uint64_t page);
PACER_API int pacer_page_draw(pacer_t *p, uint64_t page);
PACER_API int pacer_page_select(pacer_t *p, uint64_t page);
PACER_API int pacer_page_scroll(pacer_t *p, uint64_t page);
PACER_API int pacer_page_destroy(pacer_t *p, uint64_t page);
PACER_API int pacer_page_show(pacer_t *p, uint64_t page);
PACER_API int pacer_request_start(pacer_t *p, const char *url, uint64_t req);
/* status: the HTTP status, or 0 (or negative) for a transport failure. A
 * failed request counts as finished. */
PACER_API int pacer_request_end(pacer_t *p, const char *url, uint64_t req, int status);

/* Emits a record of the given type. `fields_json` holds extra members as the
 * inside of a JSON object (e.g. "\"url\":\"/x\",\"ms\":1.5") or NULL; the common
 * fields (type, ts, app, version, session, pid) are added. Returns -EINVAL when
 * type is empty or fields_json does not look like object members. */
PACER_API int pacer_emit(pacer_t *p, const char *type, const char *fields_json);

/* Submits a record built with record.h (net, jank, frames, …: what
 * instrumentation measures outside the page model), taking ownership of it
 * whatever the result. The core adds the common fields; ts is the record's
 * time (pacer_record_set_time) or now. Returns 0, -EINVAL for a record of a
 * type the schema does not know, -ESHUTDOWN after pacer_finish(). */
PACER_API int pacer_submit_record(pacer_t *p, pacer_record *rec);

/* Replaces the config at run time (atomic swap). Pages already measuring keep
 * the snapshot they were created with; new pages use the new config. The
 * instance takes its own reference to `cfg`. */
PACER_API void pacer_set_config(pacer_t *p, pacer_config *cfg);

/* The config in force now (the last one swapped in, an empty config when
 * there is none), as a new reference the caller releases with
 * pacer_config_unref(). NULL only when p is NULL. Takes the instance mutex:
 * poll it from a background thread, not per frame. */
PACER_API pacer_config *pacer_get_config(pacer_t *p);

/* How many configs were swapped in so far: an atomic read, cheap on any
 * thread. Code that keeps a copy of the config (pacer_get_config) polls it
 * and fetches the config again when it changed. */
PACER_API uint64_t pacer_config_generation(pacer_t *p);

/* Loads `path` and swaps it in. On failure the old config stays in force and
 * *ret_error (when not NULL) receives a malloc'd message. */
PACER_API int pacer_reload_config(pacer_t *p, const char *path, char **ret_error);

/* Blocks until every record queued so far was written. Not for use on a
 * latency-sensitive thread. */
PACER_API void pacer_flush(pacer_t *p);

typedef struct pacer_stats {
    uint64_t events;          /* events accepted */
    uint64_t records;         /* records produced */
    uint64_t records_dropped; /* records dropped because the queue was full */
    uint64_t write_errors;    /* records the writer failed to write */
    uint64_t batches_sent;    /* upload: batches the server accepted */
    uint64_t batches_refused; /* upload: batches refused for good (dropped) */
    uint64_t upload_retries;  /* upload: failed attempts that will be retried */
    uint64_t configs_applied; /* upload: configs received from the server */
    int upload_last_error;    /* upload: HTTP status of the last refused or failed
                                 attempt (0: a transport failure or none; over
                                 gRPC, upload_grpc_status says more) */
    uint64_t records_rejected; /* upload: items the server rejected in an accepted
                                  batch (OTLP partialSuccess) */
    char upload_message[160];  /* upload: the server's last partialSuccess errorMessage */
    uint64_t spool_errors;    /* records that could not be spooled */
    int upload_grpc_status;   /* upload over gRPC: the status code (1-16) of the last
                                 refused or failed call, 0: none */
    char upload_error[160];   /* upload over gRPC: its grpc-message, or what failed */
} pacer_stats;

PACER_API void pacer_get_stats(pacer_t *p, pacer_stats *ret);

/* The last failed or refused upload attempt of `st` as the server (or the
 * way to it) gave it, NUL-terminated in `buf` (cut to `size`): "HTTP 400",
 * "gRPC UNAUTHENTICATED: unknown key", "connection failed". */
PACER_API void pacer_upload_failure(const pacer_stats *st, char *buf, size_t size);

/* True on pacer's own threads (the record writer, the uploader): what they
 * do — file writes, HTTP requests through libcurl — is pacer's, and
 * instrumentation must not record it as the application's. */
PACER_API bool pacer_thread_is_internal(void);

/* CLOCK_MONOTONIC now, in nanoseconds. */
PACER_API int64_t pacer_now_ns(void);

/* The launch time of this process on the CLOCK_MONOTONIC scale: the value of
 * the environment variable PACER_LAUNCH_NS when set and valid (stamped by
 * `pacer run` before execve), otherwise the kernel's start time of the
 * process from /proc/self/stat. Returns 0 when neither is available. */
PACER_API int64_t pacer_launch_time_ns(void);

/* Process-wide default instance, for code that has no place to keep a
 * pacer_t (the agent, or an application's main()). pacer_init() creates it
 * once (a second call returns -EALREADY); pacer_default() returns it or NULL.
 * pacer_shutdown() is pacer_finish() on it: call it at exit. Its memory stays
 * allocated, so threads still holding the pointer while the process exits do
 * no harm. */
PACER_API int pacer_init(const pacer_options *opts, char **ret_error);
PACER_API pacer_t *pacer_default(void);
PACER_API void pacer_shutdown(void);

#ifdef __cplusplus
}
#endif

#endif
