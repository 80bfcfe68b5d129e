/* What the dashboard's answers parse (dash_parse.c): text that clients
 * sent, as pacerd stored it — a page's API list (span events), a record's
 * other attributes (extra: a start-up's phases, a request's classes), a
 * jank record (a log body). Each works on a copy it makes or is given,
 * never past its length, and writes only valid JSON whatever the input;
 * attribute lists through the store's one reader (store/store_attrs.h),
 * base's JSON reader and writer (the fuzzer, tests/fuzz/fuzz-dash.c, links
 * this file and that reader alone). */
#ifndef PACER_SERVER_DASH_PARSE_H
#define PACER_SERVER_DASH_PARSE_H

#include <pacer/base/json.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* events (OTLP JSON: [{"name":"api","attributes":[{"key":"pacer.url",…}]}])
 * → "apis":[{"url":…,"ms":…,"status":…}] as a member of the open object b;
 * nothing when there is no api event. */
void dash_parse_apis(jbuf *b, const char *events, size_t len);

/* extra (an OTLP attribute list) → "phases":{NAME: ns, …} from the
 * pacer.phases.NAME integers and "classes":[…] from pacer.classes, as
 * members of the open object b; each only when present. */
void dash_parse_extra(jbuf *b, const char *extra, size_t len);

/* A copy of n bytes of stored text, NUL-terminated (free it), for the
 * readers that unescape in place; NULL when out of memory. */
char *dash_parse_copy(const void *p, size_t n);

#define DASH_MAX_FRAMES 256

typedef struct dash_frame {
    const char *function, *module, *file, *address, *offset; /* or NULL */
    int64_t line;                                            /* -1: none */
    bool in_app;
} dash_frame;

/* A jank record (docs/records.md) read from its JSON text. Strings point
 * into the buffer given to dash_parse_jank. */
typedef struct dash_jank {
    const char *fingerprint, *page, *kind; /* or NULL */
    const char *profile;                   /* folded stacks ("f;g;h COUNT" per line), or NULL */
    double duration_ms;
    double profile_interval_ms;            /* NAN when absent */
    size_t n_frames; /* the first DASH_MAX_FRAMES of the stack, innermost first */
    bool more_frames;
    dash_frame frames[DASH_MAX_FRAMES];
} dash_jank;

/* Reads buf (len bytes of text, room for one more; unescaped in place).
 * 0, or -EINVAL when it is not a JSON object with a duration_ms ≥ 0 (a
 * record pacer did not write): then nothing of it counts. A stack that is
 * not a list of frame objects is left out (n_frames 0). */
int dash_parse_jank(char *buf, size_t len, dash_jank *ret);

/* Writes frames as a "stack" list of frame objects (docs/records.md)
 * into b, as a value. */
void dash_parse_stack(jbuf *b, const dash_frame *frames, size_t n);

#endif
