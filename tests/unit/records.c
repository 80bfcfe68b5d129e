/* Test helper: record capture (records.h). */
#include "records.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

void rec_capture_init(rec_capture *c)
{
    pthread_mutex_init(&c->mu, NULL);
    c->all = json_array();
    c->bad = 0;
}

void rec_capture_clear(rec_capture *c)
{
    json_decref(c->all);
    pthread_mutex_destroy(&c->mu);
}

void rec_capture_fn(const char *line, size_t len, void *user_data)
{
    rec_capture *c = user_data;
    json_error_t err;
    json_t *v = json_loadb(line, len, JSON_REJECT_DUPLICATES, &err);
    pthread_mutex_lock(&c->mu);
    if (v && json_is_object(v))
        json_array_append_new(c->all, v);
    else {
        c->bad++;
        json_decref(v);
    }
    pthread_mutex_unlock(&c->mu);
}

size_t rec_count(rec_capture *c, const char *type)
{
    size_t n = 0, i;
    json_t *r;
    json_array_foreach(c->all, i, r) {
        const char *t = json_string_value(json_object_get(r, "type"));
        if (t && strcmp(t, type) == 0)
            n++;
    }
    return n;
}

json_t *rec_find(rec_capture *c, const char *type, const char *key, const char *val, size_t n)
{
    size_t i;
    json_t *r;
    json_array_foreach(c->all, i, r) {
        const char *t = json_string_value(json_object_get(r, "type"));
        if (!t || strcmp(t, type) != 0)
            continue;
        if (key) {
            const char *v = json_string_value(json_object_get(r, key));
            if (!v || strcmp(v, val) != 0)
                continue;
        }
        if (n-- == 0)
            return r;
    }
    return NULL;
}

double rec_num(json_t *rec, const char *key)
{
    assert_non_null(rec);
    json_t *v = json_object_get(rec, key);
    if (!v || !json_is_number(v))
        fail_msg("record has no number \"%s\"", key);
    return json_number_value(v);
}

int rec_has(json_t *rec, const char *key)
{
    return rec && json_object_get(rec, key) != NULL;
}

const char *rec_str(json_t *rec, const char *key)
{
    assert_non_null(rec);
    const char *s = json_string_value(json_object_get(rec, key));
    if (!s)
        fail_msg("record has no string \"%s\"", key);
    return s;
}

pacer_t *test_pacer_new(rec_capture *c, const char *xml)
{
    rec_capture_init(c);
    pacer_options o = {
        .app_name = "test", .app_version = "1.0", .session = "s1",
        .on_record = rec_capture_fn, .user_data = c, .explicit_times = true,
    };
    pacer_t *p = NULL;
    char *err = NULL;
    if (pacer_new(&o, &p, &err) < 0)
        fail_msg("pacer_new: %s", err ? err : "?");
    if (xml) {
        pacer_config *cfg = pacer_config_parse(xml, strlen(xml), &err);
        if (!cfg)
            fail_msg("config: %s", err);
        pacer_set_config(p, cfg);
        pacer_config_unref(cfg);
    }
    return p;
}

static int64_t ms_to_ns(double ms)
{
    return (int64_t)(ms * 1e6 + (ms >= 0 ? 0.5 : -0.5));
}

void ev_at(pacer_t *p, double ms, pacer_event_type type, uint64_t page)
{
    pacer_event ev = {.t_ns = ms_to_ns(ms), .type = type, .page = page};
    assert_int_equal(pacer_submit(p, &ev), 0);
}

void ev_create(pacer_t *p, double ms, uint64_t page, const char *cls, pacer_page_kind kind)
{
    pacer_event ev = {.t_ns = ms_to_ns(ms), .type = PACER_EV_PAGE_CREATE, .page = page,
                      .class_name = cls, .kind = kind};
    assert_int_equal(pacer_submit(p, &ev), 0);
}

void ev_api(pacer_t *p, double ms, pacer_event_type type, const char *url, uint64_t req, int status)
{
    pacer_event ev = {.t_ns = ms_to_ns(ms), .type = type, .url = url, .req = req, .status = status};
    assert_int_equal(pacer_submit(p, &ev), 0);
}
