/* Judging a candidate (docs/server.md, "Life cycle", "Severity"): whether
 * it is an issue in each of its versions, its status across versions, its
 * grade and title, and the deliveries its transitions queue. Runs inside
 * the analysis's issues_db_write (db is its connection).
 *
 * An issue in a version (sticky: a version once an issue stays one):
 *   jank, hang, leak, large_image, large_payload, n_plus_one,
 *   serial_requests     any occurrence
 *   frozen_frames       at least frozen-frames-min frozen frames
 *   net_error           at least net-error-min failures and net-error-rate
 *                       of the pattern's requests
 *   slow_page, slow_startup, slow_request
 *                       the version's p90 at or over the threshold, with
 *                       at least percentile-min-samples values
 *   page_regression, startup_regression
 *                       flagged by the test of the version against the one
 *                       before it (regress.h)
 *
 * Status (versions in the app's order: version-order, else first seen):
 *   ''        → new        it is an issue in some version
 *   new, regressed → ongoing  it is one in a version later than the one it
 *                             became new / regressed in
 *   new, ongoing, regressed → resolved
 *                       resolve-versions later versions with at least
 *                       resolve-sessions sessions each went without it, or
 *                       resolve-days passed since it was last seen while
 *                       the app kept sending; or by hand (PATCH)
 *   resolved  → regressed  it is an issue in a version later than its last
 *                          one when it was resolved
 * Becoming new or regressed, and a change of severity of an issue that is
 * not resolved, each queue one delivery per target.
 *
 * Severity, from the last version (its inputs are kept with it):
 *   share   = affected sessions / sessions of the version
 *   per_ms  = time lost in the version / sessions of the version
 *   critical  per_ms ≥ critical-ms-per-session
 *   major     per_ms ≥ major-ms-per-session, or share ≥ major-share
 *   minor     otherwise
 */
#ifndef PACER_SERVER_LIFECYCLE_H
#define PACER_SERVER_LIFECYCLE_H

#include "analysis.h"
#include "analysis_config.h"
#include "issues_db.h"

typedef struct sqlite3 sqlite3;
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lc_context {
    sqlite3 *db;
    const ana_config *cfg;
    const enum target_kind *targets;
    size_t n_targets;
    int64_t now_ns;
    uint64_t transitions; /* deliveries queued */
    /* the app being judged */
    char app[257];
    const ana_thresholds *t;
    iss_version *versions;
    size_t n_versions;
    int64_t newest_ns; /* the app's latest record */
} lc_context;

/* Loads the versions of app (once per app and transaction). 0 or -EIO. */
int lifecycle_set_app(lc_context *c, const char *app);
void lifecycle_free(lc_context *c);

/* Judges candidate id of the app set (its row must exist). status: NULL,
 * or a status set by hand ("resolved", "ongoing"). 0, -ENOENT, -EIO. */
int lifecycle_judge(lc_context *c, const char *id, const char *status);

#endif
