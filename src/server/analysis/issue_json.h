/* An issue as the outside sees it: the JSON object of the issues API and of
 * the webhook payload, and the Markdown body of an issue tracker's issue
 * (docs/server.md, "Issues API", "Webhooks"). Built from the issues and
 * issue_versions rows, on whichever connection the caller holds.
 */
#ifndef PACER_SERVER_ISSUE_JSON_H
#define PACER_SERVER_ISSUE_JSON_H

#include "analysis_config.h"
#include "issues_db.h"

#include <pacer/base/json.h>

#include <stdbool.h>
#include <stddef.h>

/* The issue as a JSON object into b: id, app, kind, title, severity,
 * status, fingerprint (where one applies), first_seen, last_seen (unix s),
 * first_version, last_version, count, sessions, evidence, grade,
 * versions, tracker. 0 or -EIO. */
int issue_json_write(sqlite3 *db, const ana_config *cfg, const iss_issue *i, jbuf *b);

/* The same for the issue id; -ENOENT when it is not an issue. */
int issue_json_write_id(sqlite3 *db, const ana_config *cfg, const char *id, jbuf *b);

/* The Markdown body of a tracker's issue: the title's facts, the grade
 * and its inputs, the evidence (a representative stack as a code block),
 * the versions. */
int issue_json_markdown(sqlite3 *db, const ana_config *cfg, const iss_issue *i, jbuf *b);

/* A member of a JSON object text: a string (copied into out) or a number.
 * False when absent or of another type. */
bool issue_json_str(const char *json, const char *key, char *out, size_t size);
bool issue_json_num(const char *json, const char *key, double *ret);

/* The unit of an issue kind's values ("ms", "bytes", "requests"). */
const char *issue_json_value_unit(const char *kind);

/* The issues API's answers, each in one snapshot of the tables. */
#define ISSUE_LIST_MAX 100 /* iss_query.limit at most */
/* GET /api/v1/issues: "issues":[…] and, when more follow, "next":CURSOR
 * ("LASTSEEN_NS.ID"), as members of the open object b. 0, -EINVAL (a
 * limit over ISSUE_LIST_MAX), -EIO. */
int issue_json_list(issues_db *db, const ana_config *cfg, const iss_query *q, jbuf *b);
/* GET /api/v1/issues/{id}: the issue as an object into b. 0, -ENOENT, -EIO. */
int issue_json_one(issues_db *db, const ana_config *cfg, const char *id, jbuf *b);

#endif
