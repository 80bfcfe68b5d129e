/* What the core adds to records (record.h) beyond the public API. */
#ifndef PACER_CORE_RECORD_INT_H
#define PACER_CORE_RECORD_INT_H

#include <pacer/record.h>

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

#endif
