/* pacer report: what the sections take from the schema (include/pacer/schema.h).
 *
 * No section spells a field's name. It reads a field by its constant
 * (PACER_NET_TOTAL_MS), finds the metrics it summarises by the
 * PACER_FIELD_METRIC flag, takes the categories it counts from a field's
 * list of allowed values, and prints and writes the schema's names. A metric
 * added to a record type, or a value added to a list, reaches the report
 * without an edit here.
 */
#ifndef PACER_CLI_REPORT_FIELDS_H
#define PACER_CLI_REPORT_FIELDS_H

#include <pacer/record.h>
#include <pacer/schema.h>

#include <stdbool.h>
#include <stddef.h>

/* The fields of record type `type`; the schema's, never NULL for a
 * PACER_RECORD_* constant. */
const pacer_shape *report_shape(pacer_record_id type);

/* The name of field `field` (a PACER_<TYPE>_* constant) of record type `type`. */
const char *report_field_name(pacer_record_id type, unsigned field);

/* A set number field of r as a double: MS in milliseconds, INT and ID as
 * they are. Returns false (and leaves *ret alone) when the field is absent,
 * null or not a number. */
bool report_number(const pacer_record *r, unsigned field, double *ret);

/* The allowed values of a STRING field, in the schema's order. */
typedef struct report_values {
    char *text;      /* the '|'-separated list, split in place: owned */
    const char **v;  /* n pointers into text: owned */
    size_t n;
} report_values;

/* Splits f's list into *ret. Returns 0, -EINVAL when f has no list, or
 * -ENOMEM; *ret is empty on error. Release with report_values_release. */
int report_values_init(report_values *ret, const pacer_field *f);

/* The index of s in the list, or -1. */
long report_values_find(const report_values *vals, const char *s);

/* Frees what init allocated and leaves *vals empty; accepts an empty one. */
void report_values_release(report_values *vals);

#endif
