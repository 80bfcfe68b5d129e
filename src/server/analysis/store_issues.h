/* The application layer's own tables, in the store's SQLite file
 * (docs/server.md, "Issues"), and its hooks on the store's writer.
 *
 * Tables (all SQL on them is in store_issues.c):
 *   clean_counts     per (app, reason): records kept out of the statistics
 *                    (clean.h), the last time one was, what it was
 *   ana_marks        per source table: the last row the analysis read
 *   ana_versions     per (app, version): its place in first-seen order,
 *                    first and last record time, sessions
 *   ana_sessions     per (app, version, session): seen
 *   issues           per candidate (app, kind, key) — every page class,
 *                    request pattern, stack fingerprint … the analysis
 *                    judges —: its status ('' while it never was an
 *                    issue), severity, first and last time and version,
 *                    counts, the evidence it gathered (details, JSON), the
 *                    grade's inputs (JSON), the issue tracker's reference
 *   issue_versions   per (candidate, version): occurrences, their
 *                    denominator, time lost, affected sessions, the
 *                    distribution of its values (a DDSketch), whether it
 *                    is an issue in that version
 *   issue_sessions   per (candidate, version, session): affected
 *   issue_deliveries per notification of a transition: its target, its
 *                    payload, its idempotency key, its state and retries
 *   ana_pairs        per pair of versions compared: the records each had
 *                    at the last test and when it ran (the test runs again
 *                    when one has twice as many, a minute later at the
 *                    earliest)
 *
 * Hooks: the writer calls issues_store_hooks()'s functions for every
 * record of a new batch. A cleaned record (store_record.clean) and a copy
 * of one already stored are kept out and counted by reason; start-up
 * outliers are counted. A batch sent with an id is stored once by that id
 * (store.h); copies are looked for among the records that came without
 * one (an SDK that sends no batch id, resending a batch), against the
 * newest dedupe-records records that came so, whose ids the hook keeps in
 * memory (filled at start from the newest rows of each table). Counts
 * reach clean_counts in the same transaction as the batch, so a batch sent
 * again (its batch id known) or a failed transaction counts nothing.
 *
 * A record's id: a span's app, trace id and span id; a pacer log record's
 * (jank, leak) app, session, time, type and body; a pacer data point's
 * (pacer.*) app, session, time, name and attributes. Plain OpenTelemetry
 * data has none: it is never taken for a copy.
 */
#ifndef PACER_SERVER_STORE_ISSUES_H
#define PACER_SERVER_STORE_ISSUES_H

#include "analysis_config.h"
#include "ingest/clean.h"
#include "store/sketch.h"
#include "store/store.h"

#include <pacer/base/json.h>

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct issues_store issues_store;

/* Made before the store opens (its hooks go into store_options). NULL
 * when out of memory. */
issues_store *issues_store_new(const ana_config *cfg);
store_hooks issues_store_hooks(issues_store *is);

/* Once the store is open: creates the tables (when missing), loads the
 * counts, fills the record ids from the newest rows (as many as can be
 * read: a damaged page does not keep pacerd from starting). 0, or
 * negative errno with the reason in err. */
int issues_store_open(issues_store *is, store *st, char *err, size_t err_size);
void issues_store_free(issues_store *is);

/* Records kept out or counted, by reason, all apps, since the file was
 * made (for /metrics). */
void issues_clean_totals(issues_store *is, uint64_t ret[CLEAN_COUNT]);

/* GET /api/v1/cleaning: the members "reasons":[…] of app into out (an
 * open object). 0 or -EIO. */
int issues_clean_json(store *st, const char *app, jbuf *out);

/* ---- rows of the analysis (in store_write's function: db is the
 * writer's; or in store_read's) ---- */

#define ISSUE_ID_LEN 16 /* hex digits */

/* One candidate in one version: a row of issue_versions. */
typedef struct iss_vstat {
    char version[257];
    int64_t count;    /* occurrences */
    int64_t total;    /* what they are counted among (requests of the pattern, loads of the page …) */
    double lost_ms;   /* time lost beyond the threshold */
    int64_t sessions; /* affected */
    int64_t first_ns, last_ns;
    bool qualifies;   /* an issue in this version */
    int64_t check_a, check_b; /* regressions: the sample sizes of the last test */
    sketch values;
} iss_vstat;

void iss_vstat_init(iss_vstat *v);
void iss_vstat_reset(iss_vstat *v);

/* One candidate: a row of issues. Strings are owned (iss_issue_reset). */
typedef struct iss_issue {
    char id[ISSUE_ID_LEN + 1];
    char *app, *kind, *key, *fingerprint, *title;
    char status[16];   /* "" (never an issue), new, ongoing, resolved, regressed */
    char severity[16]; /* "" , minor, major, critical */
    int64_t first_ns, last_ns;  /* of its occurrences while an issue */
    char *first_version, *last_version;
    char *since_version;        /* new/regressed: the version it became so in; resolved: its last version then */
    int64_t count, sessions;
    char *details;     /* JSON object: what the evidence is made of (analysis.c) */
    char *grade;       /* JSON object: the severity's inputs */
    char *tracker;     /* JSON object: the issue tracker's issue, once filed */
    int64_t seq;       /* transitions so far */
    int64_t updated_ns;
    bool exists;       /* a row was loaded */
} iss_issue;

void iss_issue_reset(iss_issue *i);

/* The words of issues, each list in its order and NULL-terminated: what
 * grading gives (lifecycle.c), the issues API takes as filters and
 * /api/v1/schema names, so that no reader keeps a list of its own.
 * Severities go from the most severe. */
enum iss_severity { ISS_CRITICAL, ISS_MAJOR, ISS_MINOR, ISS_N_SEVERITIES };
extern const char *const iss_severities[ISS_N_SEVERITIES + 1];
extern const char *const iss_statuses[];
extern const char *const iss_kinds[];

/* The candidate's id: 16 hex digits of FNV-1a 64 over "app\nkind\nkey". */
void iss_id(const char *app, const char *kind, const char *key, char out[ISSUE_ID_LEN + 1]);

/* Loads the row of id (i->exists false when there is none; then id is
 * set and nothing else). 0 or -EIO. */
int iss_issue_load(sqlite3 *db, const char *id, iss_issue *i);
int iss_issue_save(sqlite3 *db, const iss_issue *i);

/* The issue_versions row of (id, version); v->version is set either way.
 * *ret_found tells whether it was there. */
int iss_vstat_load(sqlite3 *db, const char *id, const char *version, iss_vstat *v, bool *ret_found);
int iss_vstat_save(sqlite3 *db, const char *id, const iss_vstat *v);
/* Every version row of id, in no order: cb returns false to stop. */
int iss_vstat_each(sqlite3 *db, const char *id, bool (*cb)(void *ctx, const iss_vstat *v), void *ctx);

/* An affected session: 1 when it was new for (id, version), 0 when known. */
int iss_session_add(sqlite3 *db, const char *id, const char *version, const char *session);

/* Versions of the apps. */
typedef struct iss_version {
    char version[257];
    int64_t seq;       /* first-seen order */
    int64_t first_ns, last_ns, sessions, records;
} iss_version;

/* Adds a record of app/version at ts from session (NULL: none) to
 * ana_versions and ana_sessions. */
int iss_version_touch(sqlite3 *db, const char *app, const char *version, int64_t ts, const char *session,
                      int64_t records);
/* Every version of app, in first-seen order. *ret is malloc'd. */
int iss_versions(sqlite3 *db, const char *app, iss_version **ret, size_t *ret_n);

/* The analysis's marks: the last row read of each source (0: none). */
int iss_mark_get(sqlite3 *db, const char *source, int64_t *ret);
int iss_mark_set(sqlite3 *db, const char *source, int64_t rowid);

/* Pairs of versions compared for regressions: the records each version
 * had at the last test that compared something (0, 0 before any) and when
 * it ran (wall ns). */
int iss_pair_get(sqlite3 *db, const char *app, const char *base, const char *version, int64_t *ret_base,
                 int64_t *ret_version, int64_t *ret_tested_ns);
int iss_pair_set(sqlite3 *db, const char *app, const char *base, const char *version, int64_t n_base,
                 int64_t n_version, int64_t tested_ns);

/* Ids of the issues of app whose status is not '' nor resolved (the open
 * ones, whose life cycle each cycle reviews), at most max. */
int iss_open_ids(sqlite3 *db, const char *app, char (*ret)[ISSUE_ID_LEN + 1], size_t max, size_t *ret_n);
/* Candidates of app (any status). */
int64_t iss_candidates(sqlite3 *db, const char *app);

/* ---- deliveries ---- */

enum iss_target_kind { TARGET_WEBHOOK, TARGET_GITHUB };

typedef struct iss_delivery {
    int64_t seq;
    int target;        /* index into the configured targets */
    char issue[ISSUE_ID_LEN + 1];
    char event[32];    /* issue.new, issue.regressed, issue.severity */
    char key[64];      /* idempotency key */
    char *payload;     /* JSON */
    int64_t attempts, next_ns;
} iss_delivery;

/* Adds a delivery (in the transition's transaction). */
int iss_delivery_add(sqlite3 *db, int target, const char *issue, const char *event, const char *key,
                     const char *payload);
/* Pending deliveries due by now_ns, oldest first, at most max, none of an
 * issue and target with an older one still pending. *ret malloc'd; free
 * each payload. */
int iss_deliveries_due(sqlite3 *db, int64_t now_ns, size_t max, iss_delivery **ret, size_t *ret_n);
/* When the next pending delivery that waits for no other is due (INT64_MAX:
 * none). */
int iss_deliveries_next(sqlite3 *db, int64_t *ret_ns);
/* Marks one done (delivered or given up: state "delivered" / "failed")
 * or to try again at next_ns. */
int iss_delivery_update(sqlite3 *db, int64_t seq, const char *state, int64_t attempts, int64_t next_ns,
                        const char *error);
/* Counts by state (pending, delivered, failed). */
int iss_deliveries_count(sqlite3 *db, int64_t ret[3]);
/* The tracker reference of an issue (JSON), malloc'd, or NULL. */
int iss_tracker_get(sqlite3 *db, const char *issue, char **ret);
int iss_tracker_set(sqlite3 *db, const char *issue, const char *json);

/* ---- the API's listing ---- */

typedef struct iss_query {
    const char *app;
    const char *statuses[8], *kinds[16], *severities[4]; /* NULL-terminated lists; none: any */
    const char *version;  /* an issue in that version */
    int64_t before_ns;    /* cursor: last_ns < before, or last_ns == before and id < before_id */
    char before_id[ISSUE_ID_LEN + 1];
    size_t limit;
} iss_query;

/* The ids of the issues that match, newest (last seen) first; *ret_more:
 * there are more. Ids into ret (room for limit). */
int iss_list(sqlite3 *db, const iss_query *q, char (*ret)[ISSUE_ID_LEN + 1], int64_t *ret_last_ns, size_t *ret_n,
             bool *ret_more);

/* Retention: deliveries done over 30 days ago; the sessions kept to count
 * distinct ones, of versions (and candidates' versions) whose latest
 * record is over 180 days old (a record of such a version arriving later
 * may count its session again). 0 or -EIO. */
int iss_prune(sqlite3 *db, int64_t now_ns);

/* Counts of the issues by status, all apps (for /metrics). */
int iss_status_counts(sqlite3 *db, int64_t ret[5]);

#endif
