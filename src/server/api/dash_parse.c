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

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Calls fn for each {"key":K,"value":{...}} of an attribute list (JSON
 * text, copied: the reader unescapes in place), with the value's type key
 * ("stringValue", …) and its value. */
typedef void (*attr_fn)(void *ctx, const char *key, const char *vtype, jread *r);

static void attrs_walk_reader(jread *r, attr_fn fn, void *ctx)
{
    if (!jread_enter_array(r))
        return;
    while (jread_element(r) > 0) {
        if (!jread_enter_object(r))
            return;
        const char *k, *key = NULL;
        size_t kl;
        int m;
        while ((m = jread_member(r, &k, &kl)) > 0) {
            jvalue v;
            if (strcmp(k, "key") == 0) {
                if (!jread_value(r, &v))
                    return;
                key = v.type == JT_STRING ? v.s : NULL;
            } else if (strcmp(k, "value") == 0 && key && jread_peek(r) == JT_OBJECT) {
                jread_enter_object(r);
                const char *vt;
                size_t vtl;
                int vm;
                while ((vm = jread_member(r, &vt, &vtl)) > 0) {
                    size_t before = r->pos;
                    fn(ctx, key, vt, r);
                    if (r->pos == before && !jread_value(r, &v)) /* fn left it: skip */
                        return;
                }
                if (vm < 0)
                    return;
            } else if (!jread_value(r, &v)) {
                return;
            }
        }
        if (m < 0)
            return;
    }
}

static char *copy_text(const void *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = 0;
    }
    return s;
}

/* An api event's attributes: pacer.url, pacer.ms, pacer.status. */
static void api_attr(void *ctx, const char *key, const char *vtype, jread *r)
{
    jbuf *b = ctx;
    jvalue v;
    if (strncmp(key, "pacer.", 6) != 0 || !jread_value(r, &v))
        return;
    key += 6;
    if (v.type == JT_STRING && strcmp(vtype, "stringValue") == 0) {
        jbuf_kv_str(b, key, v.s);
    } else if (v.type == JT_STRING && strcmp(vtype, "intValue") == 0) {
        char *end;
        errno = 0;
        long long x = strtoll(v.s, &end, 10);
        if (!errno && end != v.s && !*end)
            jbuf_kv_i64(b, key, x);
    } else if (v.type == JT_NUMBER) {
        double x;
        if (jvalue_double(&v, &x))
            jbuf_kv_double(b, key, x);
    } else if (v.type == JT_TRUE || v.type == JT_FALSE) {
        jbuf_kv_bool(b, key, v.type == JT_TRUE);
    }
}

/* events: [{"name":"api","attributes":[…]}, …] → "apis":[{url, ms, status}] */
void dash_apis_json(jbuf *b, const char *events, size_t len)
{
    char *text = copy_text(events, len);
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
                    attrs_walk_reader(&r, api_attr, b);
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

static void extra_attr(void *ctx, const char *key, const char *vtype, jread *r)
{
    extra_out *o = ctx;
    jvalue v;
    if (strncmp(key, "pacer.phases.", 13) == 0 && strcmp(vtype, "intValue") == 0) {
        if (!jread_value(r, &v))
            return;
        int64_t x;
        if ((v.type == JT_STRING && sscanf(v.s, "%" SCNd64, &x) == 1) || (v.type == JT_NUMBER && jvalue_int64(&v, &x)))
            jbuf_kv_i64(&o->phases, key + 13, x);
    } else if (strcmp(key, "pacer.classes") == 0 && strcmp(vtype, "arrayValue") == 0) {
        if (!jread_enter_object(r))
            return;
        const char *k;
        size_t kl;
        while (jread_member(r, &k, &kl) > 0) {
            if (strcmp(k, "values") != 0 || !jread_enter_array(r)) {
                if (!jread_value(r, &v))
                    return;
                continue;
            }
            while (jread_element(r) > 0 && jread_enter_object(r)) {
                const char *vk;
                size_t vkl;
                while (jread_member(r, &vk, &vkl) > 0 && jread_value(r, &v))
                    if (v.type == JT_STRING)
                        jbuf_str(&o->classes, v.s);
            }
        }
    }
}

void dash_extra_json(jbuf *b, const char *extra, size_t len)
{
    char *text = copy_text(extra, len);
    if (!text)
        return;
    extra_out o;
    jbuf_init(&o.phases);
    jbuf_init(&o.classes);
    jbuf_open(&o.phases, '{');
    jbuf_open(&o.classes, '[');
    jread r;
    jread_init(&r, text, len, NULL, JREAD_NO_NUL);
    attrs_walk_reader(&r, extra_attr, &o);
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
    free(text);
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

int dash_jank_read(char *buf, size_t len, dash_jank *ret)
{
    memset(ret, 0, sizeof *ret);
    ret->duration_ms = NAN;
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
    }
    if (m != 0 || r.failed || isnan(ret->duration_ms) || ret->duration_ms < 0) {
        memset(ret, 0, sizeof *ret);
        return -EINVAL;
    }
    return 0;
}

void dash_stack_json(jbuf *b, const dash_frame *frames, size_t n)
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

/* ---- the Cookie header ---- */

bool dash_cookie(const char *header, const char *name, char *out, size_t out_size)
{
    size_t nl = strlen(name);
    for (const char *p = header; p && *p;) {
        while (*p == ' ' || *p == ';')
            p++;
        const char *end = p + strcspn(p, ";");
        if ((size_t)(end - p) > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
            size_t n = (size_t)(end - p) - nl - 1;
            while (n && p[nl + 1 + n - 1] == ' ')
                n--;
            if (n >= out_size)
                return false;
            memcpy(out, p + nl + 1, n);
            out[n] = 0;
            return true;
        }
        p = end;
    }
    return false;
}

/* ---- attribute lists ---- */

void dash_attr_strings(const char *json, size_t len, const char *key, bool first,
                       void (*fn)(void *ctx, const char *s, size_t n), void *ctx)
{
    if (!len)
        return;
    char *buf = malloc(len + 1);
    if (!buf)
        return;
    memcpy(buf, json, len);
    buf[len] = 0;
    jread r;
    jread_init(&r, buf, len, NULL, 0);
    if (!jread_enter_array(&r)) {
        free(buf);
        return;
    }
    size_t kl = strlen(key);
    bool done = false;
    while (!done && jread_element(&r) > 0) {
        if (jread_peek(&r) != JT_OBJECT) {
            jvalue skip;
            if (!jread_value(&r, &skip))
                break;
            continue;
        }
        jread_enter_object(&r);
        const char *k;
        size_t n;
        bool ours = false;
        int m;
        while ((m = jread_member(&r, &k, &n)) > 0) {
            jvalue x;
            if (n == 3 && memcmp(k, "key", 3) == 0) {
                if (!jread_value(&r, &x))
                    break;
                ours = x.type == JT_STRING && x.len == kl && memcmp(x.s, key, kl) == 0;
            } else if (n == 5 && memcmp(k, "value", 5) == 0 && ours && jread_peek(&r) == JT_OBJECT) {
                /* "key" came first: OTLP's JSON and what pacerd stores */
                jread_enter_object(&r);
                int vm;
                while ((vm = jread_member(&r, &k, &n)) > 0) {
                    if (n == 11 && memcmp(k, "stringValue", 11) == 0) {
                        if (!jread_value(&r, &x))
                            break;
                        if (x.type == JT_STRING)
                            fn(ctx, x.s, x.len);
                    } else if (n == 10 && memcmp(k, "arrayValue", 10) == 0 && jread_peek(&r) == JT_OBJECT) {
                        jread_enter_object(&r);
                        int am;
                        while ((am = jread_member(&r, &k, &n)) > 0) {
                            if (!(n == 6 && memcmp(k, "values", 6) == 0 && jread_peek(&r) == JT_ARRAY)) {
                                if (!jread_value(&r, &x))
                                    break;
                                continue;
                            }
                            jread_enter_array(&r);
                            while (jread_element(&r) > 0) {
                                if (jread_peek(&r) != JT_OBJECT) {
                                    if (!jread_value(&r, &x))
                                        break;
                                    continue;
                                }
                                jread_enter_object(&r);
                                int em;
                                while ((em = jread_member(&r, &k, &n)) > 0) {
                                    if (!jread_value(&r, &x))
                                        break;
                                    if (n == 11 && memcmp(k, "stringValue", 11) == 0 && x.type == JT_STRING)
                                        fn(ctx, x.s, x.len);
                                }
                            }
                        }
                    } else if (!jread_value(&r, &x)) {
                        break;
                    }
                }
                if (first)
                    done = true;
            } else if (!jread_value(&r, &x)) {
                break;
            }
        }
        if (m < 0 || r.failed)
            break;
    }
    free(buf);
}
