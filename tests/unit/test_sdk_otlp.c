/* The uploader's OTLP, built from the record (src/core/otlp.c), against the
 * path it replaced (otlp_ref.c: the record's JSON line read back, written
 * as OTLP JSON, then turned into protobuf by otlp_json_to_proto):
 *  - for every record type of the schema, with every field set (several
 *    value sets), only the required ones, each one left out, nullable ones
 *    null: the protobuf request is the same bytes, from the typed record
 *    (the writer's path) and from its spooled JSON line (an earlier
 *    version's spool); the JSON request says the same, reads back with an
 *    independent reader (jansson) and turns into the same protobuf;
 *  - every field of the schema has its place in the request (a field the
 *    encoder left out fails here, whatever the reference does);
 *  - batches of several runs, custom records (pacer_emit), strings that are
 *    not UTF-8, long names, records the reader refuses, spooled bodies that
 *    are not pacer's;
 *  - the protobuf → JSON walk refuses what is not a request.
 */
#include "otlp.h"
#include "otlp_ref.h"
#include "record_int.h"
#include "schema_records.h"

#include <pacer/record.h>

#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const char BATCH[] = "0123456789abcdef0123456789abcdef";
#define DROPPED 17
/* 1970-12: variant 3's durations (schema_records.h) end inside int64 */
#define TS INT64_C(30000000123456789)

/* ---- the two paths ---- */

typedef struct bytes {
    uint8_t *p;
    size_t len;
} bytes;

/* The reference's protobuf of `lines` (NULL when it could not encode). */
static bytes reference(pacer_signal sig, char **lines, size_t n, size_t *ret_skipped)
{
    size_t jl, skipped;
    char *json = ref_otlp_encode(sig, lines, n, BATCH, DROPPED, &jl, &skipped);
    assert_non_null(json);
    bytes b = {0};
    b.p = otlp_json_to_proto(sig, json, jl, &b.len);
    free(json);
    if (ret_skipped)
        *ret_skipped = skipped;
    return b;
}

static spool_batch batch_of(pacer_signal sig, spool_form form)
{
    spool_batch b = {.signal = sig, .form = form};
    memcpy(b.id, BATCH, sizeof BATCH);
    return b;
}

static void batch_push(spool_batch *b, const void *body, size_t len)
{
    b->records = realloc(b->records, (b->n + 1) * sizeof *b->records);
    b->lens = realloc(b->lens, (b->n + 1) * sizeof *b->lens);
    assert_non_null(b->records);
    assert_non_null(b->lens);
    char *copy = malloc(len + 1);
    memcpy(copy, body, len);
    copy[len] = '\0';
    b->records[b->n] = copy;
    b->lens[b->n++] = len;
}

/* The record's line, as the writer formats it. */
static char *line_of(const pacer_record *r)
{
    size_t len;
    char *line = pacer_record_format(r, &len);
    assert_non_null(line);
    return line;
}

/* Prints a request as JSON, for a failure's message. */
static void show(const char *what, pacer_signal sig, const bytes *b)
{
    size_t n;
    char *j = b->p ? otlp_proto_to_json(sig, b->p, b->len, &n) : NULL;
    fprintf(stderr, "%s (%zu bytes): %s\n", what, b->len, j ? j : "(not a request)");
    free(j);
}

static void assert_same(pacer_signal sig, const bytes *want, const bytes *got, const char *what)
{
    if (want->len == got->len && memcmp(want->p, got->p, want->len) == 0)
        return;
    show("reference", sig, want);
    show(what, sig, got);
    fail_msg("%s: the request differs from the reference's", what);
}

/* JSON equality as OTLP JSON readers see it: an absent member, [] and {}
 * are the same; numbers by value. */
static bool empty(json_t *v)
{
    if (!v)
        return true;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (!empty(json_array_get(v, i)))
                return false;
        return json_array_size(v) == 0;
    }
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) if (!empty(x)) return false;
        return true;
    }
    return false;
}

static bool json_same(json_t *a, json_t *b)
{
    if (empty(a) && empty(b))
        return true;
    if (!a || !b)
        return false;
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    if (json_typeof(a) != json_typeof(b))
        return false;
    if (json_is_string(a))
        return strcmp(json_string_value(a), json_string_value(b)) == 0;
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!json_same(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    }
    if (json_is_object(a)) {
        const char *k;
        json_t *x;
        json_object_foreach(a, k, x) if (!json_same(x, json_object_get(b, k))) return false;
        json_object_foreach(b, k, x) if (!json_same(json_object_get(a, k), x)) return false;
        return true;
    }
    return true; /* true, false, null */
}

/* The request of a batch, checked: its JSON form says the same (against
 * the reference's JSON too when given) and goes back to the same bytes. */
static bytes request(const spool_batch *b, const char *ref_json, size_t *ret_skipped)
{
    bytes pb = {0};
    size_t skipped, jl, skipped_j;
    pb.p = otlp_request(b, DROPPED, false, &pb.len, &skipped);
    assert_non_null(pb.p);
    char *json = (char *)otlp_request(b, DROPPED, true, &jl, &skipped_j);
    assert_non_null(json);
    assert_int_equal(skipped, skipped_j);
    json_error_t err;
    json_t *doc = json_loadb(json, jl, 0, &err);
    if (!doc)
        fail_msg("the JSON request does not read: %s: %s", err.text, json);
    if (ref_json) {
        json_t *ref = json_loads(ref_json, 0, &err);
        assert_non_null(ref);
        if (!json_same(ref, doc))
            fail_msg("JSON differs:\n%s\n%s", ref_json, json);
        json_decref(ref);
    }
    json_decref(doc);
    bytes back = {0};
    back.p = otlp_json_to_proto(b->signal, json, jl, &back.len);
    assert_non_null(back.p);
    assert_same(b->signal, &pb, &back, "JSON request turned into protobuf");
    free(back.p);
    free(json);
    if (ret_skipped)
        *ret_skipped = skipped;
    return pb;
}

/* Records (all sent) of one signal: the writer's path and an earlier
 * version's spooled lines give the reference's bytes. */
static void expect_as_reference(pacer_signal sig, pacer_record **recs, size_t n)
{
    char **lines = calloc(n, sizeof *lines);
    spool_batch otlp = batch_of(sig, SPOOL_OTLP), json = batch_of(sig, SPOOL_JSON);
    pbuf body = {0};
    for (size_t i = 0; i < n; i++) {
        lines[i] = line_of(recs[i]);
        if (otlp_spool_body(recs[i], lines[i], strlen(lines[i]), &body) < 0)
            fail_msg("a record the reader takes is not spooled: %s", lines[i]);
        batch_push(&otlp, body.p, body.len);
        batch_push(&json, lines[i], strlen(lines[i]));
    }
    size_t skipped, jl;
    bytes want = reference(sig, lines, n, &skipped);
    assert_non_null(want.p);
    assert_int_equal(skipped, 0);
    char *ref_json = ref_otlp_encode(sig, lines, n, BATCH, DROPPED, &jl, &skipped);
    bytes got = request(&otlp, ref_json, &skipped);
    assert_int_equal(skipped, 0);
    assert_same(sig, &want, &got, "from the typed records");
    free(got.p);
    got = request(&json, ref_json, &skipped);
    assert_int_equal(skipped, 0);
    assert_same(sig, &want, &got, "from spooled JSON lines");
    free(got.p);
    free(ref_json);
    free(want.p);
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
    pb_free(&body);
    spool_batch_clear(&otlp);
    spool_batch_clear(&json);
}

static void expect_one(pacer_record *r)
{
    expect_as_reference(otlp_signal_of(r), &r, 1);
}

/* ---- every record type ---- */

static void test_every_type_every_variant(void **state)
{
    (void)state;
    size_t cases = 0;
    for (int id = 0; id < PACER_N_RECORD_TYPES; id++) {
        const pacer_record_type *t = pacer_record_type_get((pacer_record_id)id);
        for (unsigned v = 0; v < 4; v++) {
            pacer_record *r = schema_record((pacer_record_id)id, v, SCHEMA_ALL_FIELDS, false, TS);
            expect_one(r);
            pacer_record_free(r);
            cases++;
        }
        pacer_record *r = schema_record((pacer_record_id)id, 0, SCHEMA_ALL_FIELDS, true, TS);
        expect_one(r);
        pacer_record_free(r);
        for (unsigned skip = 0; skip < t->shape->n_fields; skip++) {
            const pacer_field *f = &t->shape->fields[skip];
            r = schema_record((pacer_record_id)id, skip, skip, false, TS);
            if (f->flags & PACER_FIELD_REQUIRED) {
                /* not sent, as the reader refuses its line */
                pbuf body = {0};
                char *line = line_of(r);
                assert_int_equal(otlp_spool_body(r, line, strlen(line), &body), -EINVAL);
                size_t skipped;
                bytes ref = reference(t->signal, &line, 1, &skipped);
                assert_int_equal(skipped, 1);
                free(ref.p);
                free(line);
                pb_free(&body);
            } else {
                expect_one(r);
                if (f->flags & PACER_FIELD_NULLABLE) {
                    pacer_record_set_null(r, skip);
                    expect_one(r);
                }
            }
            pacer_record_free(r);
            cases++;
        }
    }
    assert_true(cases > 60);
}

/* Where the mapping puts each field (docs/otlp-mapping.md), looked up in
 * the request's JSON: a field the encoder leaves out fails here. */
static json_t *items_of(json_t *req, pacer_signal sig)
{
    static const char *const top[] = {"resourceSpans", "resourceLogs", "resourceMetrics"};
    static const char *const scoped[] = {"scopeSpans", "scopeLogs", "scopeMetrics"};
    static const char *const items[] = {"spans", "logRecords", "metrics"};
    json_t *rs = json_array_get(json_object_get(req, top[sig]), 0);
    return json_object_get(json_array_get(json_object_get(rs, scoped[sig]), 0), items[sig]);
}

static bool has_attr(json_t *holder, const char *key)
{
    json_t *kv;
    size_t i;
    json_array_foreach(json_object_get(holder, "attributes"), i, kv) if (strcmp(json_string_value(json_object_get(kv, "key")), key) == 0) return true;
    return false;
}

static bool has_metric(json_t *metrics, const char *name)
{
    json_t *m;
    size_t i;
    json_array_foreach(metrics, i, m) if (strcmp(json_string_value(json_object_get(m, "name")), name) == 0) return true;
    return false;
}

static bool scalar(pacer_type t)
{
    return t != PACER_TYPE_OBJECT && t != PACER_TYPE_LIST;
}

static void test_every_field_has_its_place(void **state)
{
    (void)state;
    pbuf body = {0};
    for (int id = 0; id < PACER_N_RECORD_TYPES; id++) {
        const pacer_record_type *t = pacer_record_type_get((pacer_record_id)id);
        pacer_record *r = schema_record((pacer_record_id)id, 0, SCHEMA_ALL_FIELDS, false, TS);
        char *line = line_of(r);
        assert_int_equal(otlp_spool_body(r, line, strlen(line), &body), 0);
        spool_batch b = batch_of(t->signal, SPOOL_OTLP);
        batch_push(&b, body.p, body.len);
        size_t jl;
        char *json = (char *)otlp_request(&b, 0, true, &jl, NULL);
        json_t *req = json_loads(json, 0, NULL);
        assert_non_null(req);
        json_t *items = items_of(req, t->signal);
        json_t *item = json_array_get(items, 0);
        assert_non_null(item);
        char key[256];
        for (size_t i = 0; i < t->shape->n_fields; i++) {
            const pacer_field *f = &t->shape->fields[i];
            if (t->signal == PACER_SIGNAL_METRICS) {
                /* a dimension on every point, a number a gauge, an object a
                 * gauge per number in it; nothing else has a place */
                if (f->flags & PACER_FIELD_DIMENSION) {
                    snprintf(key, sizeof key, "pacer.%s", f->name);
                    json_t *m;
                    size_t k;
                    json_array_foreach(items, k, m) {
                        json_t *p = json_array_get(json_object_get(json_object_get(m, "gauge"), "dataPoints"), 0);
                        if (!has_attr(p, key))
                            fail_msg("%s: the dimension %s is not on every point", t->name, f->name);
                    }
                } else if (f->type == PACER_TYPE_INT || f->type == PACER_TYPE_MS) {
                    snprintf(key, sizeof key, "pacer.%s.%s", t->name, f->name);
                    if (!has_metric(items, key))
                        fail_msg("%s: no gauge %s", t->name, key);
                } else if (f->type == PACER_TYPE_OBJECT) {
                    for (size_t k = 0; k < f->shape->n_fields; k++) {
                        snprintf(key, sizeof key, "pacer.%s.%s.%s", t->name, f->name, f->shape->fields[k].name);
                        if (!has_metric(items, key))
                            fail_msg("%s: no gauge %s", t->name, key);
                    }
                } else if (f->type == PACER_TYPE_LIST) {
                    /* a gauge per number of its elements (and of their
                     * objects), the element's index on its point */
                    for (size_t k = 0; k < f->shape->n_fields; k++) {
                        const pacer_field *ef = &f->shape->fields[k];
                        if (ef->type == PACER_TYPE_INT || ef->type == PACER_TYPE_MS) {
                            snprintf(key, sizeof key, "pacer.%s.%s.%s", t->name, f->name, ef->name);
                            if (!has_metric(items, key))
                                fail_msg("%s: no gauge %s", t->name, key);
                        } else if (ef->type == PACER_TYPE_OBJECT) {
                            for (size_t j = 0; j < ef->shape->n_fields; j++) {
                                snprintf(key, sizeof key, "pacer.%s.%s.%s.%s", t->name, f->name, ef->name,
                                         ef->shape->fields[j].name);
                                if (!has_metric(items, key))
                                    fail_msg("%s: no gauge %s", t->name, key);
                            }
                        }
                    }
                } else {
                    fail_msg("%s: field %s is neither a dimension nor a number: it has no place in OTLP metrics",
                             t->name, f->name);
                }
                continue;
            }
            if (scalar(f->type)) {
                snprintf(key, sizeof key, "pacer.%s", f->name);
                if (!has_attr(item, key))
                    fail_msg("%s: no attribute %s", t->name, key);
                if (f->semconv && !has_attr(item, f->semconv))
                    fail_msg("%s: no attribute %s", t->name, f->semconv);
            } else if (f->type == PACER_TYPE_OBJECT) {
                for (size_t k = 0; k < f->shape->n_fields; k++) {
                    if (!scalar(f->shape->fields[k].type))
                        continue;
                    snprintf(key, sizeof key, "pacer.%s.%s", f->name, f->shape->fields[k].name);
                    if (!has_attr(item, key))
                        fail_msg("%s: no attribute %s", t->name, key);
                }
            } else if (t->signal == PACER_SIGNAL_TRACES) { /* a list: events */
                size_t n = 0, k;
                json_t *ev;
                size_t kl = strlen(f->name);
                snprintf(key, sizeof key, "%.*s", (int)(kl > 1 && f->name[kl - 1] == 's' ? kl - 1 : kl), f->name);
                json_array_foreach(json_object_get(item, "events"), k, ev) {
                    if (strcmp(json_string_value(json_object_get(ev, "name")), key) != 0)
                        continue;
                    n++;
                    for (size_t j = 0; j < f->shape->n_fields; j++) {
                        char ak[256];
                        snprintf(ak, sizeof ak, "pacer.%s", f->shape->fields[j].name);
                        if (scalar(f->shape->fields[j].type) && !has_attr(ev, ak))
                            fail_msg("%s: event %s has no attribute %s", t->name, key, ak);
                    }
                }
                if (n != 2)
                    fail_msg("%s: %zu events %s for a list of 2", t->name, n, key);
            } else { /* a list of a log record: in its body, the record's line */
                json_t *body_v = json_object_get(json_object_get(item, "body"), "stringValue");
                snprintf(key, sizeof key, "\"%s\":[", f->name);
                if (!strstr(json_string_value(body_v), key))
                    fail_msg("%s: list %s not in the log body", t->name, f->name);
            }
        }
        json_decref(req);
        free(json);
        free(line);
        spool_batch_clear(&b);
        pacer_record_free(r);
    }
    pb_free(&body);
}

/* ---- batches, custom records, odd strings ---- */

static void test_batch_of_several_runs(void **state)
{
    (void)state;
    for (int sig = 0; sig < PACER_N_SIGNALS; sig++) {
        pacer_record *recs[12];
        size_t n = 0;
        for (int id = 0; id < PACER_N_RECORD_TYPES; id++) {
            if (pacer_record_type_get((pacer_record_id)id)->signal != (pacer_signal)sig)
                continue;
            for (unsigned k = 0; k < 4 && n < 12; k++) {
                pacer_record *r = schema_record((pacer_record_id)id, k, SCHEMA_ALL_FIELDS, false, TS + n);
                /* runs: two apps, a missing version, a second pid */
                const char *app = k == 1 ? "other" : "shop";
                record_set_common(r, app, k == 2 ? NULL : "1.0", "s1", k == 3 ? 43 : 42, TS + (int64_t)n);
                recs[n++] = r;
            }
        }
        expect_as_reference((pacer_signal)sig, recs, n);
        for (size_t i = 0; i < n; i++)
            pacer_record_free(recs[i]);
    }
}

static void test_custom_records(void **state)
{
    (void)state;
    static const char *const members[] = {
        "\"a\":1,\"b\":\"x\",\"c\":true,\"d\":2.5,\"e\":null,\"huge\":123456789012345678901234,\"tiny\":-0.0",
        "\"o\":{\"k\":2.5,\"s\":\"t\",\"n\":{\"deep\":1},\"l\":[1]},\"items\":[{\"n\":1},{\"n\":2,\"m\":\"y\"},3],"
        "\"words\":[\"a\",\"b\"],\"s\":[]",
        "\"big\":1e300,\"exp\":-3E-5,\"unicode\":\"\\u00e9\\ud83d\\ude00\",\"ctl\":\"\\u0001\"",
    };
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
        pacer_record *r;
        assert_int_equal(record_from_members("custom", members[i], &r), 0);
        record_set_common(r, "shop", "1.0", "s1", 42, TS);
        expect_one(r);
        pacer_record_free(r);
    }
    /* a known type with members the schema does not name */
    pacer_record *r;
    assert_int_equal(record_from_members("page", "\"page\":\"Home\",\"status\":\"complete\",\"total_ms\":5,"
                                                 "\"extra\":{\"x\":1},\"marks\":[{\"t\":1}]",
                                         &r),
                     0);
    record_set_common(r, "shop", "1.0", "s1", 42, TS);
    expect_one(r);
    pacer_record_free(r);
}

static void test_strings_as_the_reader_reads_them(void **state)
{
    (void)state;
    char long_name[700];
    /* 600 bytes, a 2-byte character across byte 505 (the span name's cut) */
    memset(long_name, 'a', 503);
    strcpy(long_name + 503, "é");
    memset(long_name + 505, 'b', 95);
    long_name[600] = '\0';
    /* 601 bytes, an invalid byte before the cut: the name is cut where
     * the text read back is, after U+FFFD took its place */
    char long_bad[700];
    memset(long_bad, 'a', 500);
    long_bad[500] = '\xff';
    memset(long_bad + 501, 'b', 100);
    long_bad[601] = '\0';
    const char *classes[] = {"Bad\xff\xfeName", long_name, "\xc3", "ok", long_bad};
    /* a host of 254 bytes, 256 once its invalid byte is U+FFFD: too long
     * for server.address in the text read back */
    char long_host[300] = "https://";
    memset(long_host + 8, 'h', 253);
    strcpy(long_host + 261, "\xff/p");
    const char *urls[] = {"https://h\xff.example/p\xfe/q", "https://host.example/\xe2\x82", "http://x/y", long_host};
    for (size_t i = 0; i < 5; i++) {
        pacer_record *r = schema_record(PACER_RECORD_PAGE, 0, SCHEMA_ALL_FIELDS, false, TS);
        pacer_record_set_str(r, PACER_PAGE_CLASS, classes[i]);
        record_set_common(r, i == 2 ? "app\xff" : "shop", "1.0", "s\x80", 42, TS);
        expect_one(r);
        pacer_record_free(r);
    }
    for (size_t i = 0; i < 4; i++) {
        pacer_record *r = schema_record(PACER_RECORD_NET, 0, SCHEMA_ALL_FIELDS, false, TS);
        pacer_record_set_str(r, PACER_NET_URL, urls[i]);
        pacer_record_set_str(r, PACER_NET_METHOD, i == 1 ? "G\xffT" : "GET");
        expect_one(r);
        pacer_record_free(r);
    }
    /* a custom type whose name is not UTF-8, and a long one */
    pacer_record *r;
    assert_int_equal(record_from_members("t\xff", "\"a\":1", &r), 0);
    record_set_common(r, "shop", "1.0", "s1", 42, TS);
    expect_one(r);
    pacer_record_free(r);
    assert_int_equal(record_from_members(long_name, NULL, &r), 0);
    record_set_common(r, NULL, NULL, NULL, 0, TS);
    expect_one(r);
    pacer_record_free(r);
}

static void test_durations_as_the_reader_reads_them(void **state)
{
    (void)state;
    static const int64_t ns[] = {0, 1, 499, 500, 999500, -1, -499, 1000000000000001,
                                 INT64_C(1125899906842624123), INT64_C(9007199254740993000),
                                 INT64_C(9199999999999999499)};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        pacer_record *r = schema_record(PACER_RECORD_FRAMES, 0, SCHEMA_ALL_FIELDS, false, TS);
        pacer_record_set_ms(r, PACER_FRAMES_DELAY_MS, ns[i]);
        pacer_record_set_ms(r, PACER_FRAMES_REFRESH_MS, ns[i]); /* a dimension: an attribute */
        expect_one(r);
        pacer_record_free(r);
        r = schema_record(PACER_RECORD_STARTUP, 0, SCHEMA_ALL_FIELDS, false, 1000);
        pacer_record_set_ms(r, PACER_STARTUP_COLD_MS, ns[i]); /* the span's end */
        expect_one(r);
        pacer_record_free(r);
    }
}

/* Lines an earlier version spooled, however written: member order, spaces,
 * more decimals than the writer gives, members the schema does not name. */
static void test_spooled_lines_of_any_spelling(void **state)
{
    (void)state;
    static char *lines[] = {
        "{\"ts\":30000000000000001,\"type\":\"page\",\"page\":\"P\",\"status\":\"complete\","
        "\"initial_draw_ms\":12.3456789,\"api_load_ms\":0.0004999}",
        " { \"type\" : \"net\" , \"url\" : \"http://h/x\" , \"status\" : 200 , \"total_ms\" : 1e2 ,"
        " \"dns_ms\" : null , \"app\" : \"shop\" , \"x\" : [ { \"k\" : 1 } ] } ",
        "{\"type\":\"startup\",\"kind\":\"warm\",\"warm_ms\":3.0000005,\"pid\":-1,\"session\":\"\"}",
        "{\"type\":\"other\"}",
    };
    size_t n = sizeof lines / sizeof lines[0], skipped;
    /* under every signal: as metrics, none of them has a number to send
     * (an empty item) */
    for (int sig = 0; sig < PACER_N_SIGNALS; sig++) {
        bytes want = reference((pacer_signal)sig, lines, n, &skipped);
        assert_int_equal(skipped, 0);
        spool_batch b = batch_of((pacer_signal)sig, SPOOL_JSON);
        for (size_t i = 0; i < n; i++)
            batch_push(&b, lines[i], strlen(lines[i]));
        size_t jl;
        char *ref_json = ref_otlp_encode((pacer_signal)sig, lines, n, BATCH, DROPPED, &jl, &skipped);
        bytes got = request(&b, ref_json, &skipped);
        assert_int_equal(skipped, 0);
        assert_same((pacer_signal)sig, &want, &got, "from hand-written lines");
        free(got.p);
        free(want.p);
        free(ref_json);
        spool_batch_clear(&b);
    }
    /* a batch whose items are all empty */
    bytes want = reference(PACER_SIGNAL_METRICS, &lines[n - 1], 1, &skipped);
    spool_batch b = batch_of(PACER_SIGNAL_METRICS, SPOOL_JSON);
    batch_push(&b, lines[n - 1], strlen(lines[n - 1]));
    bytes got = request(&b, NULL, &skipped);
    assert_same(PACER_SIGNAL_METRICS, &want, &got, "with an empty item");
    free(got.p);
    free(want.p);
    spool_batch_clear(&b);
}

/* Records the records reader refuses are not sent, as before. */
static void test_refused_records_are_not_sent(void **state)
{
    (void)state;
    pacer_record *bad[7];
    bad[0] = schema_record(PACER_RECORD_PAGE, 0, SCHEMA_ALL_FIELDS, false, TS);
    pacer_record_set_str(bad[0], PACER_PAGE_KIND, "sheet"); /* not in its list */
    bad[1] = schema_record(PACER_RECORD_PAGE, 0, SCHEMA_ALL_FIELDS, false, TS);
    pacer_record_set_ms(bad[1], PACER_PAGE_TOTAL_MS, -500); /* -0.001 ms */
    bad[2] = schema_record(PACER_RECORD_NET, 0, SCHEMA_ALL_FIELDS, false, TS);
    pacer_record_set_ms(bad[2], PACER_NET_TOTAL_MS, INT64_MAX); /* past 9.2e12 ms */
    bad[3] = schema_record(PACER_RECORD_NET, 0, SCHEMA_ALL_FIELDS, false, TS);
    pacer_record_add_str(bad[3], PACER_NET_CLASSES, "weird");
    bad[4] = pacer_record_new(PACER_RECORD_JANK); /* a frame without its function */
    record_set_common(bad[4], "shop", "1.0", "s1", 42, TS);
    pacer_record_set_str(bad[4], PACER_JANK_KIND, "jank");
    pacer_record_set_str(pacer_record_add(bad[4], PACER_JANK_STACK), PACER_STACK_MODULE, "m");
    bad[5] = schema_record(PACER_RECORD_LEAK, 0, SCHEMA_ALL_FIELDS, false, TS);
    pacer_record *obj = pacer_record_add(bad[5], PACER_LEAK_OBJECTS);
    pacer_record_set_str(obj, PACER_LEAKOBJ_TYPE, "GtkLabel");
    pacer_record_set_str(pacer_record_add(obj, PACER_LEAKOBJ_REFS), PACER_LEAKREF_OP, "unref");
    assert_int_equal(record_from_members("page", "\"page\":\"Home\"", &bad[6]), 0); /* no status */
    record_set_common(bad[6], "shop", "1.0", "s1", 42, TS);
    for (size_t i = 0; i < 7; i++) {
        pbuf body = {0};
        char *line = line_of(bad[i]);
        assert_int_equal(record_check(bad[i]), -EINVAL);
        assert_int_equal(otlp_spool_body(bad[i], line, strlen(line), &body), -EINVAL);
        size_t skipped;
        bytes ref = reference(otlp_signal_of(bad[i]), &line, 1, &skipped);
        if (skipped != 1)
            fail_msg("the reference sent a record its reader refuses: %s", line);
        free(ref.p);
        free(line);
        pb_free(&body);
        pacer_record_free(bad[i]);
    }
}

/* What the earlier path could not send at all (the request failed, so the
 * batch was retried for ever) is now left out or sent. */
static void test_times_the_reference_could_not_send(void **state)
{
    (void)state;
    /* before 1970: not sent */
    pacer_record *r = schema_record(PACER_RECORD_NET, 0, SCHEMA_ALL_FIELDS, false, -5);
    char *line = line_of(r);
    pbuf body = {0};
    assert_int_equal(otlp_spool_body(r, line, strlen(line), &body), -EINVAL);
    bytes ref = reference(PACER_SIGNAL_TRACES, &line, 1, NULL);
    assert_null(ref.p);
    /* and as a spooled line: left out, counted */
    spool_batch b = batch_of(PACER_SIGNAL_TRACES, SPOOL_JSON);
    batch_push(&b, line, strlen(line));
    size_t skipped;
    bytes got = request(&b, NULL, &skipped);
    assert_int_equal(skipped, 1);
    free(got.p);
    spool_batch_clear(&b);
    free(line);
    pacer_record_free(r);
    /* a span that ends past 2262: sent, its end as fixed64 */
    r = schema_record(PACER_RECORD_NET, 0, SCHEMA_ALL_FIELDS, false, INT64_C(1700000000000000000));
    pacer_record_set_ms(r, PACER_NET_TOTAL_MS, INT64_C(9100000000000000000));
    line = line_of(r);
    ref = reference(PACER_SIGNAL_TRACES, &line, 1, NULL);
    assert_null(ref.p);
    assert_int_equal(otlp_spool_body(r, line, strlen(line), &body), 0);
    b = batch_of(PACER_SIGNAL_TRACES, SPOOL_OTLP);
    batch_push(&b, body.p, body.len);
    size_t jl;
    char *json = (char *)otlp_request(&b, 0, true, &jl, NULL);
    json_t *req = json_loads(json, 0, NULL);
    json_t *span = json_array_get(items_of(req, PACER_SIGNAL_TRACES), 0);
    assert_string_equal(json_string_value(json_object_get(span, "endTimeUnixNano")), "10800000000000000000");
    json_decref(req);
    free(json);
    spool_batch_clear(&b);
    free(line);
    pb_free(&body);
    pacer_record_free(r);
}

/* Spooled bodies that are not pacer's are left out and counted; the others
 * keep their index (their ids), as unreadable lines did. */
static void test_bodies_that_are_not_pacers(void **state)
{
    (void)state;
    pacer_record *r = schema_record(PACER_RECORD_JANK, 0, SCHEMA_ALL_FIELDS, false, TS);
    char *line = line_of(r);
    pbuf body = {0};
    assert_int_equal(otlp_spool_body(r, line, strlen(line), &body), 0);
    spool_batch b = batch_of(PACER_SIGNAL_LOGS, SPOOL_OTLP);
    batch_push(&b, body.p, body.len);
    batch_push(&b, "garbage", 7);
    batch_push(&b, body.p, body.len - 1); /* cut short */
    uint8_t *twice = malloc(body.len * 2);
    memcpy(twice, body.p, body.len);
    memcpy(twice + body.len, body.p, body.len); /* every field twice */
    batch_push(&b, twice, body.len * 2);
    batch_push(&b, "", 0);
    batch_push(&b, body.p, body.len);
    size_t skipped;
    bytes got = request(&b, NULL, &skipped);
    assert_int_equal(skipped, 4);
    char *lines[6] = {line, "garbage", "{", "{\"type\":", "", line};
    bytes want = reference(PACER_SIGNAL_LOGS, lines, 6, &skipped);
    assert_int_equal(skipped, 4);
    assert_same(PACER_SIGNAL_LOGS, &want, &got, "with bodies left out");
    /* a span's body under logs is not a log record */
    spool_batch_clear(&b);
    pacer_record *span = schema_record(PACER_RECORD_PAGE, 0, SCHEMA_ALL_FIELDS, false, TS);
    char *sl = line_of(span);
    assert_int_equal(otlp_spool_body(span, sl, strlen(sl), &body), 0);
    b = batch_of(PACER_SIGNAL_LOGS, SPOOL_OTLP);
    batch_push(&b, body.p, body.len);
    free(got.p);
    got = request(&b, NULL, &skipped);
    assert_int_equal(skipped, 1);
    free(got.p);
    free(want.p);
    free(twice);
    free(sl);
    free(line);
    pb_free(&body);
    spool_batch_clear(&b);
    pacer_record_free(span);
    pacer_record_free(r);
}

/* ---- the protobuf → JSON walk ---- */

static void test_walk_refuses_what_is_not_a_request(void **state)
{
    (void)state;
    size_t n;
    char *j = otlp_proto_to_json(PACER_SIGNAL_TRACES, (const uint8_t *)"", 0, &n);
    assert_string_equal(j, "{}");
    free(j);
    static const struct {
        const char *what;
        const char *bytes;
        size_t len;
    } bad[] = {
        {"a field the table lacks", "\x1a\x00", 2},
        {"a wrong wire type", "\x08\x01", 2},
        {"a length past the end", "\x0a\x05\x0a\x00", 4},
        {"a varint past the end", "\x0a\x02\x0a\x80", 4},
        /* resourceSpans { resource { attributes { key: "\xff" } } } */
        {"a string that is not UTF-8", "\x0a\x07\x0a\x05\x0a\x03\x0a\x01\xff", 9},
        {"a string with a NUL", "\x0a\x07\x0a\x05\x0a\x03\x0a\x01\x00", 9},
        /* resource twice */
        {"a field twice", "\x0a\x04\x0a\x00\x0a\x00", 6},
        /* scopeSpans { spans {} scope {} spans {} }: a repeated field apart */
        {"a repeated field apart", "\x0a\x08\x12\x06\x12\x00\x0a\x00\x12\x00", 10},
        /* scopeSpans { spans { kind: 2^40 } } */
        {"an enum out of range", "\x0a\x0b\x12\x09\x12\x07\x30\x80\x80\x80\x80\x80\x20", 13},
        /* a trace id of 33 bytes */
        {"an id too long", "\x0a\x27\x12\x25\x12\x23\x0a\x21" "0123456789abcdef0123456789abcdef0", 41},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *out = otlp_proto_to_json(PACER_SIGNAL_TRACES, (const uint8_t *)bad[i].bytes, bad[i].len, &n);
        if (out)
            fail_msg("%s: read as %s", bad[i].what, out);
    }
    /* attribute values nested 30 deep: arrayValue { values { arrayValue … } } */
    pbuf b = {0};
    size_t marks[64], k = 0;
    marks[k++] = pb_open(&b, 1); /* resourceSpans */
    marks[k++] = pb_open(&b, 1); /* resource */
    marks[k++] = pb_open(&b, 1); /* attributes */
    marks[k++] = pb_open(&b, 2); /* value */
    for (int d = 0; d < 30; d++) {
        marks[k++] = pb_open(&b, 5); /* arrayValue */
        marks[k++] = pb_open(&b, 1); /* values */
    }
    while (k)
        pb_close(&b, marks[--k]);
    assert_null(otlp_proto_to_json(PACER_SIGNAL_TRACES, b.p, b.len, &n));
    pb_free(&b);
}

static void test_pbuf_lengths(void **state)
{
    (void)state;
    /* a nested message of 127, 128 and 16384 bytes: its length in 1, 2, 3
     * bytes, the content moved intact */
    static const size_t sizes[] = {0, 127, 128, 16383, 16384, 300000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        pbuf b = {0};
        size_t outer = pb_open(&b, 1);
        size_t m = pb_open(&b, 2);
        for (size_t k = 0; k < sizes[i]; k++)
            pb_raw(&b, &(uint8_t){(uint8_t)k}, 1);
        pb_close(&b, m);
        pb_close(&b, outer);
        const uint8_t *p = b.p, *end = b.p + b.len;
        uint64_t key, len;
        assert_true(pb_read_varint(&p, end, &key) && key == (1 << 3 | 2));
        assert_true(pb_read_varint(&p, end, &len) && len == (uint64_t)(end - p));
        assert_true(pb_read_varint(&p, end, &key) && key == (2 << 3 | 2));
        assert_true(pb_read_varint(&p, end, &len) && len == sizes[i] && (uint64_t)(end - p) == len);
        for (size_t k = 0; k < sizes[i]; k++)
            assert_int_equal(p[k], (uint8_t)k);
        pb_free(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pbuf_lengths),
        cmocka_unit_test(test_every_type_every_variant),
        cmocka_unit_test(test_every_field_has_its_place),
        cmocka_unit_test(test_batch_of_several_runs),
        cmocka_unit_test(test_custom_records),
        cmocka_unit_test(test_strings_as_the_reader_reads_them),
        cmocka_unit_test(test_durations_as_the_reader_reads_them),
        cmocka_unit_test(test_spooled_lines_of_any_spelling),
        cmocka_unit_test(test_refused_records_are_not_sent),
        cmocka_unit_test(test_times_the_reference_could_not_send),
        cmocka_unit_test(test_bodies_that_are_not_pacers),
        cmocka_unit_test(test_walk_refuses_what_is_not_a_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
