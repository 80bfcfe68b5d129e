/* pacer report: what the summary sections share.
 *
 * `pacer report` reads a records file (JSON Lines, docs/records.md) one line at a
 * time and hands each record to the section that summarises its `type`. Adding a
 * summary for a new record type means writing one report_section and listing it
 * in the table in cmd_report.c; records of a type without a section are only
 * counted, under "other".
 *
 * Every record goes through two steps:
 *   1. check(): is it well-formed? This runs on every record, whatever the
 *      filters, so the exit status does not depend on --page or --app.
 *   2. add():   fold it into the summary. Runs only for records that passed
 *      check() and the --app filter. Keeps numbers and names only, never the
 *      raw record, so memory grows with the number of measurements, not bytes.
 * At the end the section prints itself as text or builds its JSON member.
 *
 * Nothing here is thread-safe; the report runs on one thread.
 */
#ifndef PACER_CLI_REPORT_H
#define PACER_CLI_REPORT_H

#include <jansson.h>

#include <stddef.h>
#include <stdio.h>

/* Longest reason a check() writes, including the terminating NUL. */
#define REPORT_REASON_MAX 256

typedef struct report_options {
    const char *page; /* --page CLASS, or NULL */
    const char *app;  /* --app NAME, or NULL */
} report_options;

typedef struct report_section {
    const char *type;     /* the record `type` this section summarises */
    const char *json_key; /* its member in the --format json document */

    /* Returns a new, empty summary, or NULL when out of memory. */
    void *(*state_new)(void);
    /* Frees a summary; accepts NULL. */
    void (*state_free)(void *state);

    /* Returns 0 when `rec` is well-formed, otherwise -EINVAL with a
     * one-line reason (no trailing newline) written into reason[REPORT_REASON_MAX].
     * The common fields (type, app) have been checked already. */
    int (*check)(json_t *rec, char *reason);

    /* Adds a record that passed check(). Returns 0, or -ENOMEM. */
    int (*add)(void *state, json_t *rec, const report_options *opt);

    /* Prints the section as an aligned table. Sorts the summary in place. */
    void (*print_text)(void *state, FILE *out, const report_options *opt);

    /* Returns the section's JSON member (new reference), or NULL when out of
     * memory. Sorts the summary in place. */
    json_t *(*to_json)(void *state, const report_options *opt);
} report_section;

extern const report_section report_page_section;
extern const report_section report_startup_section;
extern const report_section report_net_section;
extern const report_section report_jank_section;
extern const report_section report_frames_section;

#endif
