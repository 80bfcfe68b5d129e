/* Test and benchmark helper: records of every type of the schema, built
 * through the record API from the schema's lists alone, so that a field
 * added to include/pacer/schema.h is in them without a change here. */
#ifndef PACER_TESTS_SCHEMA_RECORDS_H
#define PACER_TESTS_SCHEMA_RECORDS_H

#include <pacer/record.h>

#include <stdbool.h>
#include <stdint.h>

#define SCHEMA_ALL_FIELDS ((unsigned)-1)

/* Sets every field of r's shape (a record's or a nested object's) but
 * `skip` (SCHEMA_ALL_FIELDS: none), or only the required ones, to values
 * chosen by `variant` from the field's type, flags and value list (0 to 3
 * give different ones; 3 has durations past 2^53 us, so a record of it
 * must start before 1971 for its span to end in the int64 range); objects
 * are filled the same way, lists get two elements. Fails the test (abort) when the record API refuses a value. */
void schema_fill(pacer_record *r, unsigned variant, unsigned skip, bool required_only);

/* A record of type `id` filled as schema_fill, with its common fields
 * (app "shop", version "1.0", session "s1", pid 42) and ts. */
pacer_record *schema_record(pacer_record_id id, unsigned variant, unsigned skip, bool required_only, int64_t ts);

#endif
