/* Rows of the read APIs as OTLP JSON with pacerd's members (docs/server.md,
 * "Reading data back"), from the columns of a row in its table's layout
 * order: the one writer of both backends' read APIs (SQLite's
 * sqlite_query.c, ClickHouse's ch_read.c). resource and scope: the
 * JSON of the row's resource and scope, or NULL. Texts of the row are
 * NUL-terminated. */
#ifndef PACER_SERVER_STORE_JSON_H
#define PACER_SERVER_STORE_JSON_H

#include "store.h"

/* A row of a span table (plain spans or a record table) as an OTLP span. */
void store_json_span(jbuf *b, enum store_table tb, const store_value *cols, const char *resource, const char *scope);
/* A row of logs as an OTLP log record. */
void store_json_log(jbuf *b, const store_value *cols, const char *resource, const char *scope);
/* A row of metric_points as a data point with its metric's members. */
void store_json_point(jbuf *b, const store_value *cols, const char *resource, const char *scope);

#endif
