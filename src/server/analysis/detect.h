/* The detectors: stored rows → occurrences of candidate issues
 * (docs/server.md, "Issue kinds").
 *
 * Each row of a source table names the candidates it concerns, by kind and
 * key, and what it adds to their figures in its version (an occurrence):
 *
 *   table         kind            key                      count / total (the denominator)
 *   page_loads    slow_page       PAGE METRIC              loads at or over the threshold / loads
 *   startups      slow_startup    cold | warm              starts at or over / starts (outliers left out)
 *   requests      net_error       METHOD PATTERN           failed / requests
 *                 slow_request    METHOD PATTERN           at or over slow-request-ms / requests
 *                 large_image     METHOD PATTERN           image bodies over large-image-bytes
 *                 large_payload   METHOD PATTERN           other bodies over large-payload-bytes
 *   logs          jank, hang      v2:FINGERPRINT           janks (no stack: nostack:PAGE)
 *                 leak            SIGNATURE                leak records of the app's own (not library leaks)
 *   metric_points frozen_frames   WINDOW                   frozen frames / frames
 *   page load +   n_plus_one      PAGE METHOD PATTERN      loads with the pattern requested ≥ n-plus-one-count times
 *     requests    serial_requests PAGE PATTERN, PATTERN…   loads with ≥ serial-count requests one after another
 *
 * with the time lost beyond the threshold (docs/server.md lists it per
 * kind), the value whose distribution the issue shows, the affected
 * session, and the evidence (the page, the outcome, the representative
 * occurrence as a JSON object).
 *
 * A request belongs to a page load when it ran inside it: the same app and
 * session, started at or after the page's creation and ended by its end
 * (its ts + total_ms); a request record's ts is when it ended (records.md),
 * so it ran over [ts − total_ms, ts]. The requests of the newest
 * DETECT_REQUESTS rows are kept for the page loads that come after them.
 */
#ifndef PACER_SERVER_DETECT_H
#define PACER_SERVER_DETECT_H

#include "analysis_config.h"
#include "profile_frames.h"
#include "store/store.h"

#include <stdbool.h>
#include <stdint.h>

#define DETECT_REQUESTS 50000

typedef struct occ {
    const char *app, *version, *session;
    const char *kind, *key;
    const char *fingerprint; /* or NULL */
    int64_t ts;
    int64_t count, total;
    double lost_ms;
    double value;            /* for the distribution; NAN: none */
    bool affected;           /* the session counts as affected */
    const char *page;        /* evidence: counted per page (count times), or NULL */
    const char *status;      /* evidence: counted per outcome, or NULL */
    int64_t levels[5];
    double bytes;
    const char *profile;     /* a jank's folded stacks: merged into the profile_top, or NULL */
    const profile_frames_hint *profile_hints; /* its stack's frames, for where each profile frame was */
    size_t n_profile_hints;
    const char *example;     /* JSON object, or NULL */
    double example_value;
} occ;

typedef void (*occ_fn)(void *ctx, const occ *o);

typedef struct detector detector;

detector *detect_new(const ana_config *cfg, occ_fn emit, void *ctx);
void detect_free(detector *d);

/* The columns the detectors read of table t (into want). */
void detect_columns(enum store_table t, bool want[STORE_MAX_COLS]);

/* One row (of the tables detect_columns names). */
void detect_row(detector *d, const store_mark_row *row);

/* A request row seen before the marks (at start): kept for the page loads
 * to come, no occurrence. */
void detect_remember(detector *d, const store_mark_row *row);

/* The end of a cycle's rows: the page loads of the cycle against the
 * requests kept, the last frames record. */
void detect_flush(detector *d);

#endif
