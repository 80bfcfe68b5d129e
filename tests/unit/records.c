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
