/* pacer report: checking the fields of one record.
 *
 * Each check returns 0 when obj[key] has the expected type, or is absent and
 * not required; otherwise -EINVAL with a one-line reason written into
 * reason[REPORT_REASON_MAX], naming the field, what it held and what was
 * expected. A JSON null counts as absent: "no value" is what it says.
 */
#ifndef PACER_CLI_REPORT_FIELDS_H
#define PACER_CLI_REPORT_FIELDS_H

#include "report.h"

#include <jansson.h>

/* obj[key], or NULL when absent or null. */
json_t *report_field(json_t *obj, const char *key);

int report_check_string(json_t *obj, const char *key, int required, char *reason);
int report_check_integer(json_t *obj, const char *key, int required, char *reason);
int report_check_bool(json_t *obj, const char *key, int required, char *reason);
int report_check_object(json_t *obj, const char *key, int required, char *reason);
int report_check_array(json_t *obj, const char *key, int required, char *reason);

/* A duration in milliseconds: an optional number, not negative. */
int report_check_ms(json_t *obj, const char *key, char *reason);

/* A string that is one of the NULL-terminated `values`. */
int report_check_enum(json_t *obj, const char *key, int required, const char *const *values, char *reason);

#endif
