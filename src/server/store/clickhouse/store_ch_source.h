/* The cleaning counts of every ClickHouse instance (ch_marks.c): the
 * records each kept out, as it wrote them into `cleaned` (once per
 * identity). */
#ifndef PACER_SERVER_STORE_CH_SOURCE_H
#define PACER_SERVER_STORE_CH_SOURCE_H

#include "store/store.h"
#include "ingest/clean.h"

#include <pacer/base/json.h>

int ch_source_clean_json(store *st, const char *app, jbuf *out);
int ch_source_clean_totals(store *st, uint64_t ret[CLEAN_COUNT]);

#endif
