/* The issue state: the application layer's own tables, in a SQLite file
 * (docs/server.md, "Issues") — its own (issues_db_open: pacerd on
 * ClickHouse, --state) or the SQLite store's, beside the records, reached
 * through the store's writer (issues_db_open_in).
 *
 * Tables (all SQL on them is in issues_db.c):
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
 */
#ifndef PACER_SERVER_ISSUES_DB_H
#define PACER_SERVER_ISSUES_DB_H

#include "analysis_config.h"
#include "store/sketch.h"
#include "store/store.h"

#include <pacer/base/json.h>

#include <stdbool.h>
#include <stdint.h>

typedef struct sqlite3 sqlite3;

typedef struct issues_db issues_db;

/* A file that holds the tables for another owner: fn runs on its
 * connection, read in one snapshot, or written in a transaction of its
 * own (a failure of fn undoes what fn did); each returns what fn returned,
 * or negative errno when the file could not be read or the transaction
 * not committed. Any thread. */
typedef struct issues_db_host {
    int (*read)(void *ctx, int (*fn)(void *fn_ctx, sqlite3 *db), void *fn_ctx);
    int (*write)(void *ctx, int (*fn)(void *fn_ctx, sqlite3 *db), void *fn_ctx);
    void *ctx;
} issues_db_host;

/* Opens (creating when needed) the tables in a file of their own, in WAL
 * mode. NULL with "PATH: reason" in err. */
issues_db *issues_db_open(const char *path, char *err, size_t err_size);
/* The tables in the host's file (created when missing). NULL with the
 * reason in err. */
issues_db *issues_db_open_in(const issues_db_host *host, char *err, size_t err_size);
/* Accepts NULL. */
void issues_db_close(issues_db *db);

/* fn's reads in one snapshot; fn's writes in one transaction (fn < 0:
 * none of them). Each returns what fn returned, -EIO when the file could
 * not be read or the transaction not committed. Any thread; writes one
 * at a time. */
int issues_db_read(issues_db *db, int (*fn)(void *ctx, sqlite3 *db), void *ctx);
int issues_db_write(issues_db *db, int (*fn)(void *ctx, sqlite3 *db), void *ctx);

/* ---- rows (in issues_db_write's function, or issues_db_read's) ---- */

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

void issues_db_vstat_init(iss_vstat *v);
void issues_db_vstat_reset(iss_vstat *v);

/* One candidate: a row of issues. Strings are owned (issues_db_issue_reset). */
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

void issues_db_issue_reset(iss_issue *i);

/* The words of issues, each list in its order and NULL-terminated: what
 * grading gives (lifecycle.c), the issues API takes as filters and
 * /api/v1/schema names, so that no reader keeps a list of its own.
 * Severities go from the most severe. */
enum iss_severity { ISS_CRITICAL, ISS_MAJOR, ISS_MINOR, ISS_N_SEVERITIES };
extern const char *const issues_db_severities[ISS_N_SEVERITIES + 1];
extern const char *const issues_db_statuses[];
extern const char *const issues_db_kinds[];

/* The candidate's id: 16 hex digits of FNV-1a 64 over "app\nkind\nkey". */
void issues_db_id(const char *app, const char *kind, const char *key, char out[ISSUE_ID_LEN + 1]);

/* Loads the row of id (i->exists false when there is none; then id is
 * set and nothing else). 0 or -EIO. */
int issues_db_issue_load(sqlite3 *db, const char *id, iss_issue *i);
int issues_db_issue_save(sqlite3 *db, const iss_issue *i);

/* The issue_versions row of (id, version); v->version is set either way.
 * *ret_found tells whether it was there. */
int issues_db_vstat_load(sqlite3 *db, const char *id, const char *version, iss_vstat *v, bool *ret_found);
int issues_db_vstat_save(sqlite3 *db, const char *id, const iss_vstat *v);
/* Every version row of id, in no order: cb returns false to stop. */
int issues_db_vstat_each(sqlite3 *db, const char *id, bool (*cb)(void *ctx, const iss_vstat *v), void *ctx);

/* An affected session: 1 when it was new for (id, version), 0 when known. */
int issues_db_session_add(sqlite3 *db, const char *id, const char *version, const char *session);

/* Versions of the apps. */
typedef struct iss_version {
    char version[257];
    int64_t seq;       /* first-seen order */
    int64_t first_ns, last_ns, sessions, records;
} iss_version;

/* Adds a record of app/version at ts from session (NULL: none) to
 * ana_versions and ana_sessions. */
int issues_db_version_touch(sqlite3 *db, const char *app, const char *version, int64_t ts, const char *session,
                      int64_t records);
/* Every version of app, in first-seen order. *ret is malloc'd. */
int issues_db_versions(sqlite3 *db, const char *app, iss_version **ret, size_t *ret_n);

/* The analysis's marks: the last row read of each source (0: none). */
int issues_db_mark_get(sqlite3 *db, const char *source, int64_t *ret);
int issues_db_mark_set(sqlite3 *db, const char *source, int64_t rowid);

/* Pairs of versions compared for regressions: the records each version
 * had at the last test that compared something (0, 0 before any) and when
 * it ran (wall ns). */
int issues_db_pair_get(sqlite3 *db, const char *app, const char *base, const char *version, int64_t *ret_base,
                 int64_t *ret_version, int64_t *ret_tested_ns);
int issues_db_pair_set(sqlite3 *db, const char *app, const char *base, const char *version, int64_t n_base,
                 int64_t n_version, int64_t tested_ns);

/* Ids of the issues of app whose status is not '' nor resolved (the open
 * ones, whose life cycle each cycle reviews), at most max. */
int issues_db_open_ids(sqlite3 *db, const char *app, char (*ret)[ISSUE_ID_LEN + 1], size_t max, size_t *ret_n);
/* Candidates of app (any status). */
int64_t issues_db_candidates(sqlite3 *db, const char *app);

/* ---- deliveries ---- */

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
int issues_db_delivery_add(sqlite3 *db, int target, const char *issue, const char *event, const char *key,
                     const char *payload);
/* Pending deliveries due by now_ns, oldest first, at most max, none of an
 * issue and target with an older one still pending. *ret malloc'd; free
 * each payload. */
int issues_db_deliveries_due(sqlite3 *db, int64_t now_ns, size_t max, iss_delivery **ret, size_t *ret_n);
/* When the next pending delivery that waits for no other is due (INT64_MAX:
 * none). */
int issues_db_deliveries_next(sqlite3 *db, int64_t *ret_ns);
/* Marks one done (delivered or given up: state "delivered" / "failed")
 * or to try again at next_ns. */
int issues_db_delivery_update(sqlite3 *db, int64_t seq, const char *state, int64_t attempts, int64_t next_ns,
                        const char *error);
/* The tracker reference of an issue (JSON), malloc'd, or NULL. */
int issues_db_tracker_get(sqlite3 *db, const char *issue, char **ret);
int issues_db_tracker_set(sqlite3 *db, const char *issue, const char *json);

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
int issues_db_list(sqlite3 *db, const iss_query *q, char (*ret)[ISSUE_ID_LEN + 1], int64_t *ret_last_ns, size_t *ret_n,
             bool *ret_more);

/* Retention: deliveries done over 30 days ago; the sessions kept to count
 * distinct ones, of versions (and candidates' versions) whose latest
 * record is over 180 days old (a record of such a version arriving later
 * may count its session again). 0 or -EIO. */
int issues_db_prune(sqlite3 *db, int64_t now_ns);

/* Counts of the issues by status, all apps (for /metrics). */
int issues_db_status_counts(sqlite3 *db, int64_t ret[5]);

#endif
