/* Test helper: captures the records a pacer instance produces (through its
 * on_record callback) and finds them by type and field. */
#ifndef PACER_TEST_RECORDS_H
#define PACER_TEST_RECORDS_H

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>

typedef struct rec_capture {
    pthread_mutex_t mu;
    json_t *all; /* array of every record, in order */
    size_t bad;  /* lines that were not valid JSON objects */
} rec_capture;

void rec_capture_init(rec_capture *c);
void rec_capture_clear(rec_capture *c);
void rec_capture_fn(const char *line, size_t len, void *user_data); /* pacer_record_fn */

size_t rec_count(rec_capture *c, const char *type);
/* The n-th (0-based) record of `type` whose member `key` equals the string
 * `val` (key NULL: any), or NULL. Borrowed reference. */
json_t *rec_find(rec_capture *c, const char *type, const char *key, const char *val, size_t n);

/* Number member as double; fails the test when absent or not a number. */
double rec_num(json_t *rec, const char *key);
/* Whether the member is present. */
int rec_has(json_t *rec, const char *key);
const char *rec_str(json_t *rec, const char *key);


#include <pacer/pacer.h>

/* A pacer instance for tests: explicit event times, records captured into
 * `c`, config parsed from `xml` (NULL: none). Fails the test on error. */
pacer_t *test_pacer_new(rec_capture *c, const char *xml);

/* Submits an event at `ms` milliseconds (explicit time). */
void ev_at(pacer_t *p, double ms, pacer_event_type type, uint64_t page);
void ev_create(pacer_t *p, double ms, uint64_t page, const char *cls, pacer_page_kind kind);
void ev_api(pacer_t *p, double ms, pacer_event_type type, const char *url, uint64_t req, int status);

#endif
