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

#endif
