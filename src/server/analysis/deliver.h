/* Filing issues where the team works (docs/server.md, "Webhooks", "Issue
 * tracker"): a thread that sends the deliveries the analysis queued
 * (issue_deliveries, issues_db.h) to their targets, over libcurl:
 *
 *   webhook   POST URL, the payload as it was queued (JSON), with
 *             Idempotency-Key and X-Pacer-Event; any 2xx is delivered
 *   github    the GitHub REST API of one repository (URL: its API base,
 *             https://api.github.com/repos/OWNER/REPO): a new issue is
 *             POST URL/issues {title, body (Markdown), labels}, answered
 *             201 with its number, which the issue keeps (tracker); a
 *             regression or a change of severity is a comment, POST
 *             URL/issues/NUMBER/comments {body}; the token (from a file)
 *             as Authorization: Bearer, the API's Accept and version
 *             headers, a User-Agent
 *
 * Retries: a failure of the network, 408, 425, 429 or 5xx is tried again
 * after 1 s, doubling to at most 10 min (a random half to whole of it; a
 * Retry-After, up to an hour, when longer), at most webhook-attempts times
 * in all; another answer gives up at once. A delivery of an issue to a
 * target waits until the earlier ones to that target are done, so a
 * comment never comes before its issue. The state of each delivery is in
 * the store: a restart goes on where it was. A delivery is marked done
 * after its answer; were pacerd killed between the two, it would be sent
 * again with the same idempotency key.
 */
#ifndef PACER_SERVER_DELIVER_H
#define PACER_SERVER_DELIVER_H

#include "analysis.h"
#include "analysis_config.h"
#include "issues_db.h"

#include <stddef.h>
#include <stdint.h>

typedef struct deliver_target {
    enum target_kind kind;
    char *url;
    char *token; /* github: the token (wiped when freed) */
} deliver_target;

typedef struct deliver deliver;

typedef struct deliver_stats {
    uint64_t delivered, attempts_failed, given_up;
} deliver_stats;

/* Starts the thread (targets and cfg live as long as it). NULL when out of
 * memory or libcurl cannot start. */
deliver *deliver_start(issues_db *db, const deliver_target *targets, size_t n, const ana_config *cfg);
/* Wakes it: deliveries were queued (an analysis kick: ctx is the deliver). */
void deliver_kick(void *ctx);
/* Stops after the delivery in progress (its outcome is stored). Accepts NULL. */
void deliver_stop(deliver *d);
void deliver_get_stats(deliver *d, deliver_stats *ret);

#endif
