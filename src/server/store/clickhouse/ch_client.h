/* A client of ClickHouse's HTTP interface (libcurl), for the ClickHouse
 * store (store_clickhouse.c), and the RowBinary format both ways.
 *
 * Queries go as POST bodies; an INSERT's rows (RowBinary) go as the body,
 * its text in the URL. Every answer is read whole into memory, bounded
 * (CH_MAX_REPLY). Connections are kept alive in a pool of handles, one per
 * thread using it at a time. Values never reach SQL text unquoted:
 * ch_quote writes a string literal, numbers are printed by the caller.
 */
#ifndef PACER_SERVER_CH_CLIENT_H
#define PACER_SERVER_CH_CLIENT_H

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

/* Parses url into ret (free with ch_url_clear). Returns 0, or -EINVAL
 * with the reason in err. */
int ch_url_parse(const char *url, ch_url *ret, char *err, size_t err_size);
void ch_url_clear(ch_url *u);

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
int ch_query(ch_client *c, const char *sql, const void *data, size_t len, const char *settings, ch_reply *ret);
/* The same, for a statement run outside any database (CREATE DATABASE). */
int ch_query_nodb(ch_client *c, const char *sql, ch_reply *ret);
void ch_reply_free(ch_reply *r);

/* Several INSERTs at once (each on a connection of its own): ret[i] gets
 * the answer to rqs[i] (to be freed, whatever the result). 0 when all
 * succeeded, else -EIO. At most 64. */
typedef struct ch_request {
    const char *sql;
    const void *data;
    size_t len;
} ch_request;
int ch_query_many(ch_client *c, size_t n, const ch_request *rqs, const char *settings, ch_reply *ret);

/* A string literal for ClickHouse: quotes, backslashes and every byte
 * below 0x20 or 0x7f escaped (\xHH). */
void ch_quote(jbuf *b, const char *s, size_t n);

/* ---- RowBinary ---- */

typedef struct rb_buf {
    uint8_t *p;
    size_t len, cap;
    bool failed; /* out of memory: the content is incomplete */
} rb_buf;

void rb_init(rb_buf *b);
void rb_free(rb_buf *b);
void rb_u8(rb_buf *b, uint8_t v);
void rb_u16(rb_buf *b, uint16_t v);
void rb_u32(rb_buf *b, uint32_t v);
void rb_u64(rb_buf *b, uint64_t v);
void rb_i64(rb_buf *b, int64_t v);
void rb_f64(rb_buf *b, double v);
void rb_str(rb_buf *b, const void *s, size_t n); /* String: length, bytes */
void rb_fixed(rb_buf *b, const void *s, size_t n); /* FixedString(n) */
void rb_varint(rb_buf *b, uint64_t v);

/* Reads an answer in RowBinary; a read past the end sets bad and gives 0. */
typedef struct rb_reader {
    const uint8_t *p;
    size_t len, pos;
    bool bad;
} rb_reader;

void rb_reader_init(rb_reader *r, const void *p, size_t len);
bool rb_more(const rb_reader *r);
uint8_t rb_get_u8(rb_reader *r);
uint16_t rb_get_u16(rb_reader *r);
uint32_t rb_get_u32(rb_reader *r);
uint64_t rb_get_u64(rb_reader *r);
int64_t rb_get_i64(rb_reader *r);
double rb_get_f64(rb_reader *r);
uint64_t rb_get_varint(rb_reader *r);
/* A String: its bytes (in the answer, not NUL-terminated) and length. */
const char *rb_get_str(rb_reader *r, size_t *ret_len);
const uint8_t *rb_get_fixed(rb_reader *r, size_t n);

#endif
