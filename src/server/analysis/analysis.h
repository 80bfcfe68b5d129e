/* The application layer (seed 001's "application layer": clean, cluster,
 * grade, file bugs): a thread that turns the stored records into a short
 * list of issues, each with its evidence, graded, followed across versions
 * and filed to webhooks and an issue tracker (docs/server.md, "Issues").
 *
 * A cycle, every interval-ms (at once after a cycle that left rows unread):
 *   read   the rows committed after the marks (store_rows_after), at most
 *          cycle-records per table: each row feeds the detectors
 *          (detect.c), which name the candidate it concerns (kind + key:
 *          a stack fingerprint, a URL pattern, a page class …) and what it
 *          adds to the candidate's figures of its version; page loads are
 *          matched with the requests of their session that ran inside them
 *          (n_plus_one, serial_requests)
 *   write  in one issues_db_write: the figures added up (issue_versions,
 *          issue_sessions, the evidence), the marks moved, and every
 *          touched candidate and open issue of the touched apps judged
 *          again (lifecycle.c): whether it is an issue in each version, its
 *          status, its grade; each transition to new or regressed and each
 *          change of severity queues one delivery per target, in the same
 *          transaction (so exactly once, whatever restarts)
 *   regress  for each pair of consecutive versions with new page loads or
 *          start-ups (and, once compared, twice the records of its last
 *          test, a minute after it at the earliest),
 *          the raw values of both (store_version_rows) are tested
 *          (regress.c); a second issues_db_write records the outcome and judges
 *          the regression candidates
 * Everything the analysis knows is in its tables (issues_db.h): a restart
 * (or a SIGKILL) goes on from the marks.
 */
#ifndef PACER_SERVER_ANALYSIS_H
#define PACER_SERVER_ANALYSIS_H

#include "analysis_config.h"
#include "issues_db.h"
#include "store/store.h"

#include <pacer/base/json.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct analysis analysis;

/* Where transitions are filed: target i of the deliveries (deliver.h). */
enum target_kind { TARGET_KIND_WEBHOOK, TARGET_KIND_GITHUB };

typedef struct analysis_stats {
    uint64_t cycles, failures, failures_in_a_row;
    uint64_t rows;          /* rows read */
    int64_t behind;         /* rows committed and not yet read, after the last cycle */
    double last_cycle_s;
    uint64_t transitions;   /* deliveries queued */
    int64_t issues[4];      /* new, ongoing, resolved, regressed, after the last cycle */
} analysis_stats;

/* Starts the thread. db: the application layer's tables; records: the
 * store whose rows it reads. targets: the kinds of the n configured targets (a
 * delivery is queued for each). cfg lives as long as the analysis. NULL
 * when out of memory. */
analysis *analysis_start(issues_db *db, store *records, const ana_config *cfg, const enum target_kind *targets,
                         size_t n_targets, void (*kick)(void *ctx), void *kick_ctx);
/* Stops after the cycle in progress. Accepts NULL. */
void analysis_stop(analysis *a);

void analysis_get_stats(analysis *a, analysis_stats *ret);

/* Sets an issue's status by hand (PATCH /api/v1/issues/{id}): resolved or
 * ongoing. Returns 0, -ENOENT (no such issue), -EIO. */
int analysis_set_status(analysis *a, const char *id, const char *status);

#endif
