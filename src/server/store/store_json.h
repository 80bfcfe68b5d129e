/* Rows of the read APIs as OTLP JSON with pacerd's members (docs/server.md,
 * "Reading data back"), from a store_row: the ClickHouse store's writers
 * (store_ch_read.c). They write what SQLite's (store_query.c) write from
 * its statements, member for member; tests/server/test_backends.py holds
 * the two to the same answers. resource and scope: the JSON of the row's
 * resource and scope, or NULL. Strings of the row are NUL-terminated. */
#ifndef PACER_SERVER_STORE_JSON_H
#define PACER_SERVER_STORE_JSON_H

#include "store.h"

void store_json_span(jbuf *b, const store_row *row, const char *resource, const char *scope);
void store_json_log(jbuf *b, const store_row *row, const char *resource, const char *scope);
void store_json_point(jbuf *b, const store_row *row, const char *resource, const char *scope);

#endif
