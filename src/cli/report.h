/* pacer report: what the summary sections share.
 *
 * `pacer report` reads a records file (JSON Lines, docs/records.md) one line at a
 * time and hands each record to the section that summarises its type. Adding a
 * summary for a record type means writing one report_section and listing it in
 * the table in cmd_report.c; records of a type without a section are only
 * counted, under "other".
 *
 * Every line goes through three steps:
 *   1. pacer_record_parse(): is it a record, and does it follow the schema
 *      (include/pacer/schema.h: types, required fields, allowed values,
 *      durations not negative)? The reason it gives is the report's message.
 *   2. check(), when a section has one: what the report needs beyond the
 *      schema. Steps 1 and 2 run on every record, whatever the filters, so
 *      the exit status does not depend on --page or --app.
 *   3. add(): fold it into the summary. Runs only for records that passed
 *      and the --app filter. Keeps numbers and names only, never the record,
 *      so memory grows with the number of measurements, not bytes.
 * At the end the section prints itself as text or writes its JSON member.
 *
 * A section takes what it summarises from the schema, not from names of its
 * own: see report_fields.h.
 *
 * Nothing here is thread-safe; the report runs on one thread.
 */
#ifndef PACER_CLI_REPORT_H
#define PACER_CLI_REPORT_H

#include <pacer/base/json.h>
#include <pacer/record.h>

#include <stddef.h>
#include <stdio.h>

/* Longest reason a check writes, including the terminating NUL. */
#define REPORT_REASON_MAX 256

typedef struct report_options {
    const char *page; /* --page CLASS, or NULL */
    const char *app;  /* --app NAME, or NULL */
} report_options;

typedef struct report_section {
    pacer_record_id type; /* the record type this section summarises */
    const char *json_key; /* its member in the --format json document */

    /* Returns a new, empty summary, or NULL when out of memory. */
    void *(*state_new)(void);
    /* Frees a summary; accepts NULL. */
    void (*state_free)(void *state);

    /* Optional (NULL: the schema says it all). Returns 0 when the record,
     * which follows the schema, is one the section can summarise; otherwise
     * -EINVAL with a one-line reason (no trailing newline) written into
     * reason[REPORT_REASON_MAX]. */
    int (*check)(const pacer_record *rec, char *reason);

    /* Adds a record that passed the checks. Returns 0, or -ENOMEM. */
    int (*add)(void *state, const pacer_record *rec, const report_options *opt);

    /* Prints the section as an aligned table. Sorts the summary in place. */
    void (*print_text)(void *state, FILE *out, const report_options *opt);

    /* Writes the section's JSON value into out, whose member key has been
     * written. Running out of memory shows as out->failed. Sorts the summary
     * in place. */
    void (*to_json)(void *state, jbuf *out, const report_options *opt);
} report_section;

extern const report_section report_page_section;
extern const report_section report_startup_section;
extern const report_section report_net_section;
extern const report_section report_jank_section;
extern const report_section report_frames_section;
extern const report_section report_leaks_section;

#endif
