/* A client of ClickHouse's HTTP interface (libcurl), for the ClickHouse
 * store (ch_store.c), and the RowBinary format both ways.
 *
 * Queries go as POST bodies; an INSERT's rows (RowBinary) go as the body,
 * its text in the URL. Every answer is read whole into memory, bounded
 * (CH_MAX_REPLY). Connections are kept alive in a pool of handles, one per
 * thread using it at a time. Values never reach SQL text unquoted:
 * ch_client_quote writes a string literal, numbers are printed by the caller.
 */
#ifndef PACER_SERVER_CH_CLIENT_H
#define PACER_SERVER_CH_CLIENT_H

#include "rb.h"

#include <pacer/base/json.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "http://[USER[:PASSWORD]@]HOST[:PORT]/[DATABASE][?cluster=NAME]" */
typedef struct ch_url {
    char *base;       /* scheme://host:port/ without credentials */
    char *user, *password; /* decoded; NULL when absent */
    char *database;   /* default "pacer" */
    char *cluster;    /* NULL: one server */
    char *shown;      /* what messages name: the URL without the password */
} ch_url;

/* Parses url into ret (free with ch_client_url_clear). Returns 0, or -EINVAL
 * with the reason in err. */
int ch_client_url_parse(const char *url, ch_url *ret, char *err, size_t err_size);
void ch_client_url_clear(ch_url *u);

#define CH_MAX_REPLY ((size_t)512 << 20)

typedef struct ch_client ch_client;

/* A client of the server at url (copied). timeout_ms bounds each request
 * (connect included). NULL when out of memory. */
ch_client *ch_client_new(const ch_url *url, long timeout_ms);
void ch_client_free(ch_client *c);
const ch_url *ch_client_url(const ch_client *c);

typedef struct ch_reply {
    char *body;        /* the answer (NUL-terminated), malloc'd; NULL after a failure */
    size_t len;
    long http_status;  /* 0: no answer */
    int code;          /* ClickHouse's error code, or 0 */
    bool transport;    /* the failure was the connection's (refused, timed out, cut) */
    char error[400];   /* what failed, "" on success */
} ch_reply;

/* Runs sql (in the URL when data is given, as the body otherwise) with
 * data as the body (an INSERT's rows), in the URL's database, with the
 * extra settings ("name=value&…", or NULL). Returns 0 (ret holds the
 * answer) or -EIO (ret->error says why). Any thread. */
int ch_client_query(ch_client *c, const char *sql, const void *data, size_t len, const char *settings, ch_reply *ret);
/* The same, for a statement run outside any database (CREATE DATABASE). */
int ch_client_query_nodb(ch_client *c, const char *sql, ch_reply *ret);
void ch_client_reply_free(ch_reply *r);

/* Several INSERTs at once (each on a connection of its own): ret[i] gets
 * the answer to rqs[i] (to be freed, whatever the result). 0 when all
 * succeeded, else -EIO. At most 64. */
typedef struct ch_request {
    const char *sql;
    const void *data;
    size_t len;
} ch_request;
int ch_client_query_many(ch_client *c, size_t n, const ch_request *rqs, const char *settings, ch_reply *ret);

/* A string literal for ClickHouse: quotes, backslashes and every byte
 * below 0x20 or 0x7f escaped (\xHH). */
void ch_client_quote(jbuf *b, const char *s, size_t n);

#endif
