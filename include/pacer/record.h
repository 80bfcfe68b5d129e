/* Records: typed values of one record type (schema.h), built by whoever
 * measures something and handed to the core (pacer_submit_record), which
 * adds the common fields and writes them.
 *
 * A record owns everything in it: strings are copied in, nested objects and
 * list elements belong to the record at the top. Fields are addressed by
 * their constants (PACER_NET_TOTAL_MS, …) in the record's shape, or in a
 * nested object's shape for the objects pacer_record_add() returns.
 *
 * A field is absent (never set), set, or null (a NULLABLE field that was
 * not measured). The JSON text of a record writes set fields in schema
 * order, null ones as null, and leaves absent ones out (docs/records.md).
 *
 * Threads: a record is used by one thread at a time; once submitted it
 * belongs to the core.
 */
#ifndef PACER_RECORD_H
#define PACER_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pacer/export.h>
#include <pacer/schema.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pacer_record pacer_record;

/* A new, empty record of a type the schema knows. NULL on ENOMEM. */
PACER_API pacer_record *pacer_record_new(pacer_record_id type);
/* Frees a record and everything in it. Accepts NULL. */
PACER_API void pacer_record_free(pacer_record *r);

/* ---- building ----
 * Each setter returns 0, -EINVAL when the field is not of that type (or out
 * of range), or -ENOMEM (the field is left as it was). */
/* STRING. NULL makes a NULLABLE field null and any other absent. */
PACER_API int pacer_record_set_str(pacer_record *r, unsigned field, const char *s);
PACER_API int pacer_record_set_strn(pacer_record *r, unsigned field, const char *s, size_t n);
/* INT; also ID and BOOL. */
PACER_API int pacer_record_set_int(pacer_record *r, unsigned field, int64_t v);
/* ID */
PACER_API int pacer_record_set_id(pacer_record *r, unsigned field, uint64_t v);
/* MS: a duration in nanoseconds. */
PACER_API int pacer_record_set_ms(pacer_record *r, unsigned field, int64_t ns);
PACER_API int pacer_record_set_bool(pacer_record *r, unsigned field, bool v);
/* A NULLABLE field: null (not measured). */
PACER_API int pacer_record_set_null(pacer_record *r, unsigned field);
/* LIST: appends a new element and returns it; OBJECT: returns the object,
 * created on the first call. The result belongs to r. NULL on error. */
PACER_API pacer_record *pacer_record_add(pacer_record *r, unsigned field);
/* LIST, STRINGS: present, with no elements yet (an empty array). */
PACER_API int pacer_record_set_empty(pacer_record *r, unsigned field);
/* STRINGS: appends a string. */
PACER_API int pacer_record_add_str(pacer_record *r, unsigned field, const char *s);
/* When what the record describes began (CLOCK_MONOTONIC ns); 0, the
 * default, means when it is submitted. */
PACER_API void pacer_record_set_time(pacer_record *r, int64_t t_ns);

/* ---- reading ---- */

/* The record's type; NULL for a type the schema does not know. */
PACER_API const pacer_record_type *pacer_record_type_of(const pacer_record *r);
/* The record's "type" member (also for unknown types). */
PACER_API const char *pacer_record_type_name(const pacer_record *r);
/* The shape r's fields follow (a record type's, or a nested object's). */
PACER_API const pacer_shape *pacer_record_shape(const pacer_record *r);
/* Common fields (PACER_COMMON_*): strings, or NULL when absent. */
PACER_API const char *pacer_record_common(const pacer_record *r, unsigned field);
PACER_API int64_t pacer_record_ts(const pacer_record *r);   /* unix ns */
PACER_API int64_t pacer_record_pid(const pacer_record *r);
PACER_API int64_t pacer_record_time(const pacer_record *r); /* pacer_record_set_time's */

/* Set (not absent, not null). */
PACER_API bool pacer_record_has(const pacer_record *r, unsigned field);
PACER_API bool pacer_record_is_null(const pacer_record *r, unsigned field);
/* The value, or NULL / 0 when the field is not set. int gives INT, ID (as
 * the same bits), MS (nanoseconds) and BOOL (0, 1). */
PACER_API const char *pacer_record_str(const pacer_record *r, unsigned field);
PACER_API int64_t pacer_record_int(const pacer_record *r, unsigned field);
PACER_API uint64_t pacer_record_u64(const pacer_record *r, unsigned field);
/* An MS field in milliseconds. */
PACER_API double pacer_record_ms(const pacer_record *r, unsigned field);
/* LIST: the first element (then pacer_record_next); OBJECT: the object.
 * NULL when there is none. */
PACER_API const pacer_record *pacer_record_child(const pacer_record *r, unsigned field);
PACER_API const pacer_record *pacer_record_next(const pacer_record *element);
/* LIST: elements; STRINGS: strings. */
PACER_API size_t pacer_record_count(const pacer_record *r, unsigned field);
PACER_API const char *pacer_record_str_at(const pacer_record *r, unsigned field, size_t i);
/* Members the record's type does not name (from pacer_emit or a parsed
 * line), as the inside of a JSON object ("\"x\":1,\"y\":[2]"), or NULL. */
PACER_API const char *pacer_record_extra(const pacer_record *r);

/* ---- JSON (docs/records.md) ---- */

/* The record as one JSON object without a newline; malloc'd, NULL on
 * ENOMEM. */
PACER_API char *pacer_record_format(const pacer_record *r, size_t *ret_len);

/* Reads one line. A record of a known type is checked against the schema:
 * a field of the wrong type, a required field missing, a value outside the
 * field's list or a negative duration fail with -EINVAL and a one-line
 * reason in err (e.g. "field \"total_ms\" is a string, expected a number of
 * milliseconds"); JSON null counts as absent (null for a NULLABLE field).
 * Members the schema does not name are kept (pacer_record_extra). Returns 0
 * and the new record in *ret, -EINVAL, or -ENOMEM. */
PACER_API int pacer_record_parse(const char *line, size_t len, pacer_record **ret, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
