/* The dashboard's parsers (dash_parse.h).
 *
 * Stored attribute lists and records are what clients sent, compacted:
 * valid JSON, but of any shape. Each reader here takes only the members
 * it knows, with the types it expects, skips anything else, and stops at
 * the first syntax error (what it wrote up to then is complete JSON: every
 * object it opened is closed). Nothing of the input is copied into an
 * answer unparsed.
 */
#include "dash_parse.h"
#include "store/store_attrs.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *dash_parse_copy(const void *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = 0;
    }
    return s;
}

/* An api event's attributes: pacer.url, pacer.ms, pacer.status. */
static bool api_attr(void *ctx, const store_attr *a)
{
    jbuf *b = ctx;
    if (a->key_len <= 6 || strncmp(a->key, "pacer.", 6) != 0)
        return true;
    const char *key = a->key + 6;
    switch (a->type) {
    case SA_STRING: jbuf_kv_str(b, key, a->text); break;
    case SA_INT: jbuf_kv_i64(b, key, a->i); break;
    case SA_DOUBLE:
        if (isfinite(a->d))
            jbuf_kv_double(b, key, a->d);
        break;
    case SA_BOOL: jbuf_kv_bool(b, key, a->text[0] == 't'); break;
    default: break;
    }
    return true;
}

/* events: [{"name":"api","attributes":[…]}, …] → "apis":[{url, ms, status}] */
void dash_parse_apis(jbuf *b, const char *events, size_t len)
{
    char *text = dash_parse_copy(events, len);
    if (!text)
        return;
    jread r;
    jread_init(&r, text, len, NULL, JREAD_NO_NUL);
    bool open = false;
    if (jread_enter_array(&r)) {
        while (jread_element(&r) > 0 && jread_enter_object(&r)) {
            const char *k;
            size_t kl;
            bool api = false;
            int m;
            while ((m = jread_member(&r, &k, &kl)) > 0) {
                jvalue v;
                if (strcmp(k, "name") == 0) {
                    if (!jread_value(&r, &v))
                        break;
                    api = jvalue_is(&v, "api");
                } else if (strcmp(k, "attributes") == 0 && api) {
                    if (!open) {
                        jbuf_key(b, "apis");
                        jbuf_open(b, '[');
                        open = true;
                    }
                    jbuf_open(b, '{');
                    store_attrs_read(&r, api_attr, b);
                    jbuf_close(b, '}');
                } else if (!jread_value(&r, &v)) {
                    break;
                }
            }
            if (m != 0)
                break;
        }
    }
    if (open)
        jbuf_close(b, ']');
    free(text);
}

/* extra: pacer.phases.* → "phases":{…}; pacer.classes → "classes":[…] */
typedef struct extra_out {
    jbuf phases, classes;
} extra_out;

static bool extra_attr(void *ctx, const store_attr *a)
{
    extra_out *o = ctx;
    if (a->key_len > 13 && strncmp(a->key, "pacer.phases.", 13) == 0 && a->type == SA_INT)
        jbuf_kv_i64(&o->phases, a->key + 13, a->i);
    else if (a->key_len == 13 && memcmp(a->key, "pacer.classes", 13) == 0 && a->type == SA_ARRAY)
        for (size_t i = 0; i < a->n_items; i++)
            jbuf_strn(&o->classes, a->items[i], a->item_lens[i]);
    return true;
}

void dash_parse_extra(jbuf *b, const char *extra, size_t len)
{
    extra_out o;
    jbuf_init(&o.phases);
    jbuf_init(&o.classes);
    jbuf_open(&o.phases, '{');
    jbuf_open(&o.classes, '[');
    store_attrs_each(extra, len, extra_attr, &o);
    jbuf_close(&o.phases, '}');
    jbuf_close(&o.classes, ']');
    /* each a complete value of our own writing: raw, then a member was written */
    if (!o.phases.failed && o.phases.len > 2) {
        jbuf_key(b, "phases");
        jbuf_raw(b, o.phases.data, o.phases.len);
        b->need_comma = true;
    }
    if (!o.classes.failed && o.classes.len > 2) {
        jbuf_key(b, "classes");
        jbuf_raw(b, o.classes.data, o.classes.len);
        b->need_comma = true;
    }
    jbuf_free(&o.phases);
    jbuf_free(&o.classes);
}


/* ---- jank records ---- */

static void read_frame(jread *r, dash_frame *f)
{
    *f = (dash_frame){.line = -1};
    const char *k;
    size_t kl;
    jvalue v;
    while (jread_member(r, &k, &kl) > 0 && jread_value(r, &v)) {
        const char **s = strcmp(k, "function") == 0 ? &f->function
                         : strcmp(k, "module") == 0 ? &f->module
                         : strcmp(k, "file") == 0   ? &f->file
                         : strcmp(k, "address") == 0 ? &f->address
                         : strcmp(k, "offset") == 0  ? &f->offset
                                                     : NULL;
        if (s && v.type == JT_STRING)
            *s = v.s;
        else if (strcmp(k, "line") == 0 && (!jvalue_int64(&v, &f->line) || f->line < 0))
            f->line = -1;
        else if (strcmp(k, "in_app") == 0)
            f->in_app = v.type == JT_TRUE;
    }
}

int dash_parse_jank(char *buf, size_t len, dash_jank *ret)
{
    memset(ret, 0, sizeof *ret);
    ret->duration_ms = NAN;
    ret->profile_interval_ms = NAN;
    jread r;
    jread_init(&r, buf, len, NULL, JREAD_NO_NUL);
    if (!jread_enter_object(&r))
        return -EINVAL;
    const char *k;
    size_t kl;
    jvalue v;
    int m;
    while ((m = jread_member(&r, &k, &kl)) > 0) {
        if (strcmp(k, "stack") == 0 && jread_peek(&r) == JT_ARRAY) {
            jread_enter_array(&r);
            int e;
            size_t n = 0;
            while ((e = jread_element(&r)) > 0) {
                if (jread_peek(&r) != JT_OBJECT) {
                    if (!jread_value(&r, &v))
                        break;
                    n = SIZE_MAX; /* not a frame: the stack is not one */
                    continue;
                }
                jread_enter_object(&r);
                dash_frame f;
                read_frame(&r, &f);
                if (n < DASH_MAX_FRAMES)
                    ret->frames[n++] = f;
                else if (n != SIZE_MAX)
                    ret->more_frames = true;
            }
            if (e < 0)
                break;
            ret->n_frames = n == SIZE_MAX ? 0 : n;
            continue;
        }
        if (!jread_value(&r, &v))
            break;
        if (strcmp(k, "fingerprint") == 0 && v.type == JT_STRING)
            ret->fingerprint = v.s;
        else if (strcmp(k, "page") == 0 && v.type == JT_STRING)
            ret->page = v.s;
        else if (strcmp(k, "kind") == 0 && v.type == JT_STRING)
            ret->kind = v.s;
        else if (strcmp(k, "duration_ms") == 0 && !jvalue_double(&v, &ret->duration_ms))
            ret->duration_ms = NAN;
        else if (strcmp(k, "profile") == 0 && v.type == JT_STRING)
            ret->profile = v.s;
        else if (strcmp(k, "profile_interval_ms") == 0 && !jvalue_double(&v, &ret->profile_interval_ms))
            ret->profile_interval_ms = NAN;
    }
    if (m != 0 || r.failed || isnan(ret->duration_ms) || ret->duration_ms < 0) {
        memset(ret, 0, sizeof *ret);
        return -EINVAL;
    }
    return 0;
}

void dash_parse_stack(jbuf *b, const dash_frame *frames, size_t n)
{
    jbuf_open(b, '[');
    for (size_t i = 0; i < n; i++) {
        const dash_frame *f = &frames[i];
        jbuf_open(b, '{');
        if (f->address)
            jbuf_kv_str(b, "address", f->address);
        if (f->module)
            jbuf_kv_str(b, "module", f->module);
        if (f->offset)
            jbuf_kv_str(b, "offset", f->offset);
        jbuf_kv_str(b, "function", f->function ? f->function : "?");
        if (f->file) {
            jbuf_kv_str(b, "file", f->file);
            if (f->line >= 0)
                jbuf_kv_i64(b, "line", f->line);
        }
        jbuf_kv_bool(b, "in_app", f->in_app);
        jbuf_close(b, '}');
    }
    jbuf_close(b, ']');
}
