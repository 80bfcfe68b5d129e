/* What the core adds to records (record.h) beyond the public API. */
#ifndef PACER_CORE_RECORD_INT_H
#define PACER_CORE_RECORD_INT_H

#include <pacer/record.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Sets the common fields of a top-level record (strings copied; NULL:
 * absent) and its ts (unix ns). Returns 0 or -ENOMEM. */
int record_set_common(pacer_record *r, const char *app, const char *version, const char *session, int64_t pid,
                      int64_t ts);

/* A record of `type` (known or not) from `members`, the inside of a JSON
 * object (NULL or "" for none), as pacer_emit() takes them: fields the
 * type's shape names are typed and checked (but required ones may be
 * missing), others kept as extra members. Returns 0, -EINVAL (members that
 * are not valid JSON object members, or a field of the wrong type), or
 * -ENOMEM. */
int record_from_members(const char *type, const char *members, pacer_record **ret);

/* A record from a JSON object of len bytes holding its "type" and fields,
 * as a record event carries it (docs/events.md): like record_from_members,
 * required fields may be missing (the common ones are added later).
 * Returns 0, -EINVAL (no "type", not valid JSON, a field of the wrong
 * type), or -ENOMEM. */
int record_from_object(const char *json, size_t len, pacer_record **ret);

/* ---- a record as its JSON text reads back ----
 * What pacer_record_parse() makes of pacer_record_format()'s text, without
 * the text: the OTLP encoder (otlp.c) sends a typed record exactly as it
 * would send the record read back from its line. */

/* 0 when the reader takes r's text back; -EINVAL when it refuses it: a
 * required field not set, a value outside its field's list, a negative or
 * out-of-range duration (in r or any object or list element in it). */
int record_check(const pacer_record *r);

/* The number an MS field's text (jbuf_ms: milliseconds to the
 * microsecond) reads as. */
double record_ms_value(int64_t ns);

/* The nanoseconds an MS field holds once its text is read back, in
 * *ret; false for a value the reader refuses (negative, out of range). */
bool record_ms_reread(int64_t ns, int64_t *ret);

#endif
