/* A stored record's fields as docs/records.md writes them: the answers
 * that give records back (the dashboard's /api/v1/page_loads and the
 * like, /api/v1/samples). */
#ifndef PACER_SERVER_RECORD_JSON_H
#define PACER_SERVER_RECORD_JSON_H

#include "store/store.h"

#include <pacer/base/json.h>
#include <pacer/schema.h>

/* The member of field f with its stored value v (as the layout holds it),
 * into the open object b; nothing when v is NULL or not of f's type. */
void record_json_field(jbuf *b, const pacer_field *f, const store_value *v);

/* A row of a record table as a record object into b: "type", the fields
 * that have a store column (the common ts, app, version, session and the
 * type's); with evidence also its trace and span ids, its API calls and
 * other attributes (dash_parse.h) and its URL pattern. */
void record_json_write(jbuf *b, const pacer_record_type *type, const store_row *row, bool evidence);

#endif
