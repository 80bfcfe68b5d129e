/* Records (include/pacer/record.h): typed values in schema order, their
 * JSON text and its reader.
 *
 * Memory: the top-level record is one allocation (the struct and its value
 * slots); strings, nested objects, list elements and string arrays are
 * carved from a chain of chunks the top-level record owns, so freeing a
 * record is freeing its chunks. Nothing is ever freed on its own.
 *
 * Reading a line: one pass of the JSON reader over a copy of it. The type
 * must be known before the fields are (it decides their shape), so when
 * "type" is not the first member a first pass finds it. Semantic problems
 * (a field of the wrong type, …) are remembered and the pass goes on, so
 * that a syntax error anywhere in the line is the one reported, whatever
 * comes first.
 */
#include "record_int.h"

#include <pacer/base/json.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { V_ABSENT = 0, V_SET, V_NULL };

typedef struct strs {
    size_t n, cap;
    const char **v;
} strs;

typedef struct value {
    unsigned char state;
    union {
        int64_t i;      /* INT, MS (ns), BOOL */
        uint64_t u;     /* ID */
        const char *s;  /* STRING */
        pacer_record *child; /* OBJECT; LIST: the first element */
        strs *list;     /* STRINGS */
    };
} value;

typedef struct chunk {
    struct chunk *next;
    size_t used, size;
    max_align_t data[];
} chunk;

struct pacer_record {
    const pacer_shape *shape;
    const pacer_record_type *type; /* top level of a known type */
    pacer_record *root;            /* the top-level record (itself there) */
    pacer_record *next;            /* LIST: the next element */
    /* top level only */
    chunk *chunks;
    const char *common[PACER_COMMON_N_FIELDS]; /* TYPE, APP, VERSION, SESSION */
    int64_t ts, pid, time;
    char *extra;
    value v[];
};

/* ---- memory ---- */

static void *arena_alloc(pacer_record *r, size_t n)
{
    pacer_record *root = r->root;
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    chunk *c = root->chunks;
    if (!c || c->size - c->used < n) {
        size_t size = n > 1024 ? n : 1024;
        c = malloc(sizeof(*c) + size);
        if (!c)
            return NULL;
        c->next = root->chunks;
        c->used = 0;
        c->size = size;
        root->chunks = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

static char *arena_strndup(pacer_record *r, const char *s, size_t n)
{
    char *d = arena_alloc(r, n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static pacer_record *record_alloc(const pacer_shape *shape, pacer_record *root)
{
    size_t size = sizeof(pacer_record) + shape->n_fields * sizeof(value);
    pacer_record *r = root ? arena_alloc(root, size) : malloc(size);
    if (!r)
        return NULL;
    memset(r, 0, size);
    r->shape = shape;
    r->root = root ? root : r;
    return r;
}

static pacer_record *record_new_typed(const pacer_record_type *type, const char *name, size_t name_len)
{
    static const pacer_shape no_fields = {"", NULL, 0};
    pacer_record *r = record_alloc(type ? type->shape : &no_fields, NULL);
    if (!r)
        return NULL;
    r->type = type;
    r->common[PACER_COMMON_TYPE] = type ? type->name : arena_strndup(r, name, name_len);
    if (!r->common[PACER_COMMON_TYPE]) {
        pacer_record_free(r);
        return NULL;
    }
    return r;
}

PACER_API pacer_record *pacer_record_new(pacer_record_id id)
{
    const pacer_record_type *type = pacer_record_type_get(id);
    return type ? record_new_typed(type, NULL, 0) : NULL;
}

PACER_API void pacer_record_free(pacer_record *r)
{
    if (!r)
        return;
    for (chunk *c = r->chunks, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(r->extra);
    free(r);
}

/* ---- building ---- */

static value *slot(pacer_record *r, unsigned field, pacer_type want)
{
    if (!r || field >= r->shape->n_fields || r->shape->fields[field].type != want)
        return NULL;
    return &r->v[field];
}

PACER_API int pacer_record_set_strn(pacer_record *r, unsigned field, const char *s, size_t n)
{
    value *v = slot(r, field, PACER_TYPE_STRING);
    if (!v)
        return -EINVAL;
    if (!s) {
        v->state = (r->shape->fields[field].flags & PACER_FIELD_NULLABLE) ? V_NULL : V_ABSENT;
        return 0;
    }
    char *copy = arena_strndup(r, s, n);
    if (!copy)
        return -ENOMEM;
    v->s = copy;
    v->state = V_SET;
    return 0;
}

PACER_API int pacer_record_set_str(pacer_record *r, unsigned field, const char *s)
{
    return pacer_record_set_strn(r, field, s, s ? strlen(s) : 0);
}

/* Sets a scalar field of type `want` to `bits` (i and u share them). */
static int set_scalar(pacer_record *r, unsigned field, pacer_type want, int64_t bits)
{
    value *v = slot(r, field, want);
    if (!v)
        return -EINVAL;
    v->i = bits;
    v->state = V_SET;
    return 0;
}

PACER_API int pacer_record_set_int(pacer_record *r, unsigned field, int64_t x)
{
    if (!r || field >= r->shape->n_fields)
        return -EINVAL;
    pacer_type t = r->shape->fields[field].type;
    if (t == PACER_TYPE_BOOL)
        return set_scalar(r, field, t, x != 0);
    if (t == PACER_TYPE_ID && x < 0)
        return -EINVAL;
    return set_scalar(r, field, t == PACER_TYPE_ID ? t : PACER_TYPE_INT, x);
}

PACER_API int pacer_record_set_id(pacer_record *r, unsigned field, uint64_t x)
{
    return set_scalar(r, field, PACER_TYPE_ID, (int64_t)x);
}

PACER_API int pacer_record_set_ms(pacer_record *r, unsigned field, int64_t ns)
{
    return set_scalar(r, field, PACER_TYPE_MS, ns);
}

PACER_API int pacer_record_set_bool(pacer_record *r, unsigned field, bool x)
{
    return set_scalar(r, field, PACER_TYPE_BOOL, x);
}

PACER_API int pacer_record_set_null(pacer_record *r, unsigned field)
{
    if (!r || field >= r->shape->n_fields || !(r->shape->fields[field].flags & PACER_FIELD_NULLABLE))
        return -EINVAL;
    r->v[field].state = V_NULL;
    return 0;
}

PACER_API pacer_record *pacer_record_add(pacer_record *r, unsigned field)
{
    if (!r || field >= r->shape->n_fields)
        return NULL;
    const pacer_field *f = &r->shape->fields[field];
    value *v = &r->v[field];
    if (f->type == PACER_TYPE_OBJECT && v->state == V_SET)
        return v->child;
    if (f->type != PACER_TYPE_OBJECT && f->type != PACER_TYPE_LIST)
        return NULL;
    pacer_record *c = record_alloc(f->shape, r->root);
    if (!c)
        return NULL;
    if (f->type == PACER_TYPE_LIST && v->state == V_SET && v->child) {
        pacer_record *last = v->child;
        while (last->next)
            last = last->next;
        last->next = c;
    } else {
        v->child = c;
        v->state = V_SET;
    }
    return c;
}

PACER_API int pacer_record_set_empty(pacer_record *r, unsigned field)
{
    if (!r || field >= r->shape->n_fields)
        return -EINVAL;
    pacer_type t = r->shape->fields[field].type;
    value *v = &r->v[field];
    if (t == PACER_TYPE_LIST) {
        if (v->state != V_SET)
            v->child = NULL;
    } else if (t == PACER_TYPE_STRINGS) {
        if (v->state != V_SET) {
            v->list = arena_alloc(r, sizeof(strs));
            if (!v->list)
                return -ENOMEM;
            memset(v->list, 0, sizeof(strs));
        }
    } else {
        return -EINVAL;
    }
    v->state = V_SET;
    return 0;
}

PACER_API int pacer_record_add_str(pacer_record *r, unsigned field, const char *s)
{
    value *v = slot(r, field, PACER_TYPE_STRINGS);
    if (!v || !s)
        return -EINVAL;
    if (v->state != V_SET) {
        v->list = arena_alloc(r, sizeof(strs));
        if (!v->list)
            return -ENOMEM;
        memset(v->list, 0, sizeof(strs));
        v->state = V_SET;
    }
    strs *l = v->list;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        const char **nv = arena_alloc(r, cap * sizeof(*nv));
        if (!nv)
            return -ENOMEM;
        if (l->n)
            memcpy(nv, l->v, l->n * sizeof(*nv));
        l->v = nv;
        l->cap = cap;
    }
    char *copy = arena_strndup(r, s, strlen(s));
    if (!copy)
        return -ENOMEM;
    l->v[l->n++] = copy;
    return 0;
}

PACER_API void pacer_record_set_time(pacer_record *r, int64_t t_ns)
{
    if (r)
        r->root->time = t_ns;
}

int record_set_common(pacer_record *r, const char *app, const char *version, const char *session, int64_t pid,
                      int64_t ts)
{
    const char *in[3] = {app, version, session};
    static const unsigned at[3] = {PACER_COMMON_APP, PACER_COMMON_VERSION, PACER_COMMON_SESSION};
    for (int i = 0; i < 3; i++) {
        r->common[at[i]] = in[i] ? arena_strndup(r, in[i], strlen(in[i])) : NULL;
        if (in[i] && !r->common[at[i]])
            return -ENOMEM;
    }
    r->pid = pid;
    r->ts = ts;
    return 0;
}

/* ---- reading ---- */

PACER_API const pacer_record_type *pacer_record_type_of(const pacer_record *r)
{
    return r ? r->root->type : NULL;
}

PACER_API const char *pacer_record_type_name(const pacer_record *r)
{
    return r ? r->root->common[PACER_COMMON_TYPE] : NULL;
}

PACER_API const pacer_shape *pacer_record_shape(const pacer_record *r)
{
    return r ? r->shape : NULL;
}

PACER_API const char *pacer_record_common(const pacer_record *r, unsigned field)
{
    return r && field < PACER_COMMON_N_FIELDS ? r->root->common[field] : NULL;
}

PACER_API int64_t pacer_record_ts(const pacer_record *r)
{
    return r ? r->root->ts : 0;
}

PACER_API int64_t pacer_record_pid(const pacer_record *r)
{
    return r ? r->root->pid : 0;
}

PACER_API int64_t pacer_record_time(const pacer_record *r)
{
    return r ? r->root->time : 0;
}

PACER_API bool pacer_record_has(const pacer_record *r, unsigned field)
{
    return r && field < r->shape->n_fields && r->v[field].state == V_SET;
}

PACER_API bool pacer_record_is_null(const pacer_record *r, unsigned field)
{
    return r && field < r->shape->n_fields && r->v[field].state == V_NULL;
}

PACER_API const char *pacer_record_str(const pacer_record *r, unsigned field)
{
    return pacer_record_has(r, field) && r->shape->fields[field].type == PACER_TYPE_STRING ? r->v[field].s : NULL;
}

PACER_API int64_t pacer_record_int(const pacer_record *r, unsigned field)
{
    if (!pacer_record_has(r, field))
        return 0;
    switch (r->shape->fields[field].type) {
    case PACER_TYPE_INT:
    case PACER_TYPE_MS:
    case PACER_TYPE_BOOL:
        return r->v[field].i;
    case PACER_TYPE_ID:
        return (int64_t)r->v[field].u;
    default:
        return 0;
    }
}

PACER_API uint64_t pacer_record_u64(const pacer_record *r, unsigned field)
{
    return (uint64_t)pacer_record_int(r, field);
}

PACER_API double pacer_record_ms(const pacer_record *r, unsigned field)
{
    return pacer_record_has(r, field) && r->shape->fields[field].type == PACER_TYPE_MS ? (double)r->v[field].i / 1e6
                                                                                        : 0;
}

PACER_API const pacer_record *pacer_record_child(const pacer_record *r, unsigned field)
{
    if (!pacer_record_has(r, field))
        return NULL;
    pacer_type t = r->shape->fields[field].type;
    return t == PACER_TYPE_OBJECT || t == PACER_TYPE_LIST ? r->v[field].child : NULL;
}

PACER_API const pacer_record *pacer_record_next(const pacer_record *e)
{
    return e ? e->next : NULL;
}

PACER_API size_t pacer_record_count(const pacer_record *r, unsigned field)
{
    if (!pacer_record_has(r, field))
        return 0;
    pacer_type t = r->shape->fields[field].type;
    if (t == PACER_TYPE_STRINGS)
        return r->v[field].list->n;
    size_t n = 0;
    if (t == PACER_TYPE_LIST)
        for (const pacer_record *e = r->v[field].child; e; e = e->next)
            n++;
    return n;
}

PACER_API const char *pacer_record_str_at(const pacer_record *r, unsigned field, size_t i)
{
    if (!pacer_record_has(r, field) || r->shape->fields[field].type != PACER_TYPE_STRINGS ||
        i >= r->v[field].list->n)
        return NULL;
    return r->v[field].list->v[i];
}

PACER_API const char *pacer_record_extra(const pacer_record *r)
{
    return r ? r->root->extra : NULL;
}

/* ---- JSON text ---- */

static void write_fields(jbuf *b, const pacer_record *r);

static void write_value(jbuf *b, const pacer_field *f, const value *v)
{
    if (v->state == V_NULL) {
        jbuf_null(b);
        return;
    }
    switch (f->type) {
    case PACER_TYPE_STRING: jbuf_str(b, v->s); break;
    case PACER_TYPE_INT: jbuf_i64(b, v->i); break;
    case PACER_TYPE_ID: jbuf_u64(b, v->u); break;
    case PACER_TYPE_MS: jbuf_ms(b, v->i); break;
    case PACER_TYPE_BOOL: jbuf_bool(b, v->i != 0); break;
    case PACER_TYPE_OBJECT:
        jbuf_open(b, '{');
        write_fields(b, v->child);
        jbuf_close(b, '}');
        break;
    case PACER_TYPE_LIST:
        jbuf_open(b, '[');
        for (const pacer_record *e = v->child; e; e = e->next) {
            jbuf_open(b, '{');
            write_fields(b, e);
            jbuf_close(b, '}');
        }
        jbuf_close(b, ']');
        break;
    case PACER_TYPE_STRINGS:
        jbuf_open(b, '[');
        for (size_t i = 0; i < v->list->n; i++)
            jbuf_str(b, v->list->v[i]);
        jbuf_close(b, ']');
        break;
    }
}

static void write_fields(jbuf *b, const pacer_record *r)
{
    for (size_t i = 0; i < r->shape->n_fields; i++) {
        if (r->v[i].state == V_ABSENT)
            continue;
        jbuf_key(b, r->shape->fields[i].name);
        write_value(b, &r->shape->fields[i], &r->v[i]);
    }
}

PACER_API char *pacer_record_format(const pacer_record *r, size_t *ret_len)
{
    if (!r)
        return NULL;
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    jbuf_kv_str(&b, "type", r->common[PACER_COMMON_TYPE]);
    jbuf_kv_i64(&b, "ts", r->ts);
    jbuf_kv_str(&b, "app", r->common[PACER_COMMON_APP]);
    jbuf_kv_str(&b, "version", r->common[PACER_COMMON_VERSION]);
    jbuf_kv_str(&b, "session", r->common[PACER_COMMON_SESSION]);
    jbuf_kv_i64(&b, "pid", r->pid);
    write_fields(&b, r);
    if (r->extra && *r->extra) {
        jbuf_raw(&b, ",", 1);
        jbuf_puts(&b, r->extra);
    }
    jbuf_close(&b, '}');
    return jbuf_steal(&b, ret_len);
}

/* ---- reading JSON ---- */

typedef struct parse {
    jread r;
    const char *src;
    char *reason;   /* the first semantic problem, or "" */
    size_t reason_len;
    bool oom;
    bool lenient; /* required fields may be missing (record_from_members) */
    jbuf extra;
} parse;

static void problem(parse *p, const char *prefix, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void problem(parse *p, const char *prefix, const char *fmt, ...)
{
    if (p->reason[0])
        return;
    int n = snprintf(p->reason, p->reason_len, "%s", prefix);
    if (n < 0 || (size_t)n >= p->reason_len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->reason + n, p->reason_len - (size_t)n, fmt, ap);
    va_end(ap);
}

/* How a JSON value's type is named in messages. */
static const char *json_type_name(const jvalue *v)
{
    switch (v->type) {
    case JT_STRING: return "a string";
    case JT_NUMBER: return v->integer ? "an integer" : "a number";
    case JT_TRUE:
    case JT_FALSE: return "a boolean";
    case JT_NULL: return "null";
    case JT_OBJECT: return "an object";
    case JT_ARRAY: return "an array";
    default: return "nothing";
    }
}

static const char *expected(pacer_type t)
{
    switch (t) {
    case PACER_TYPE_STRING: return "a string";
    case PACER_TYPE_INT:
    case PACER_TYPE_ID: return "an integer";
    case PACER_TYPE_MS: return "a number of milliseconds";
    case PACER_TYPE_BOOL: return "true or false";
    case PACER_TYPE_OBJECT: return "an object";
    case PACER_TYPE_LIST:
    case PACER_TYPE_STRINGS: return "an array";
    }
    return "?";
}

/* A string for a message, on one line: its first 40 bytes, quotes,
 * backslashes and control characters escaped, "..." when cut. cap >= 8. */
static void quoted(char *out, size_t cap, const char *s, size_t n)
{
    size_t o = 0, i = 0;
    out[o++] = '"';
    for (; i < n && i < 40 && o + 9 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            o += (size_t)snprintf(out + o, cap - o, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
        else
            out[o++] = (char)c;
    }
    snprintf(out + o, cap - o, "%s\"", i < n ? "..." : "");
}

static void enum_problem(parse *p, const char *prefix, const pacer_field *f, const jvalue *v)
{
    char list[256] = "", shown[176];
    size_t o = 0;
    for (const char *s = f->values; *s && o + 2 < sizeof(list);) {
        size_t k = strcspn(s, "|");
        o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%.*s", o ? ", " : "", (int)k, s);
        s += k + (s[k] == '|');
    }
    quoted(shown, sizeof(shown), v->s, v->len);
    problem(p, prefix, "field \"%s\" is %s, expected one of %s", f->name, shown, list);
}

static bool read_fields(parse *p, pacer_record *r, const char *prefix, bool top);

/* llround of a duration in ns, 0 ≤ ns < 2^63, without libm (the core links
 * nothing it can do without: the agent carries its dependencies into every
 * program). The truncation is exact, and so is the fraction below 2^53;
 * above, every double is an integer. */
static int64_t round_ns(double ns)
{
    int64_t i = (int64_t)ns;
    return ns - (double)i >= 0.5 ? i + 1 : i;
}

/* Reads the value at the reader into field f of r. */
static bool read_field(parse *p, pacer_record *r, unsigned fi, const char *prefix)
{
    const pacer_field *f = &r->shape->fields[fi];
    value *slot_v = &r->v[fi];
    jtype t = jread_peek(&p->r);
    if (t == JT_NONE) {
        jvalue x;
        return jread_value(&p->r, &x); /* the syntax error */
    }
    if (t == JT_NULL) {
        jvalue x;
        if (!jread_value(&p->r, &x))
            return false;
        slot_v->state = (f->flags & PACER_FIELD_NULLABLE) ? V_NULL : V_ABSENT;
        return true;
    }
    if (f->type == PACER_TYPE_OBJECT && t == JT_OBJECT) {
        pacer_record *c = pacer_record_add(r, fi);
        if (!c) {
            p->oom = true;
            return false;
        }
        char sub[160];
        snprintf(sub, sizeof(sub), "%s%s: ", prefix, f->name);
        return read_fields(p, c, sub, false);
    }
    if ((f->type == PACER_TYPE_LIST || f->type == PACER_TYPE_STRINGS) && t == JT_ARRAY) {
        if (!jread_enter_array(&p->r))
            return false;
        slot_v->state = V_ABSENT; /* an empty array is present: */
        if (pacer_record_set_empty(r, fi) < 0) {
            p->oom = true;
            return false;
        }
        int n;
        size_t i = 0;
        while ((n = jread_element(&p->r)) > 0) {
            char sub[160];
            snprintf(sub, sizeof(sub), "%s%s[%zu]", prefix, f->name, i++);
            jtype et = jread_peek(&p->r);
            if (f->type == PACER_TYPE_LIST && et == JT_OBJECT) {
                pacer_record *c = pacer_record_add(r, fi);
                if (!c) {
                    p->oom = true;
                    return false;
                }
                strcat(sub, ": ");
                if (!read_fields(p, c, sub, false))
                    return false;
                continue;
            }
            jvalue x;
            if (!jread_value(&p->r, &x))
                return false;
            if (f->type == PACER_TYPE_STRINGS && x.type == JT_STRING) {
                if (!pacer_field_allows(f, x.s, x.len)) {
                    char shown[176];
                    quoted(shown, sizeof(shown), x.s, x.len);
                    problem(p, "", "%s is %s, not one of %s", sub, shown, f->values);
                } else if (pacer_record_add_str(r, fi, x.s) < 0) {
                    p->oom = true;
                    return false;
                }
            } else {
                problem(p, "", "%s is %s, expected %s", sub, json_type_name(&x),
                        f->type == PACER_TYPE_LIST ? "an object" : "a string");
            }
        }
        return n == 0;
    }

    jvalue v;
    if (!jread_value(&p->r, &v))
        return false;
    switch (f->type) {
    case PACER_TYPE_STRING:
        if (v.type != JT_STRING)
            break;
        if (!pacer_field_allows(f, v.s, v.len)) {
            enum_problem(p, prefix, f, &v);
            return true;
        }
        if (pacer_record_set_strn(r, fi, v.s, v.len) < 0)
            p->oom = true;
        return !p->oom;
    case PACER_TYPE_INT: {
        int64_t x;
        if (v.type != JT_NUMBER || !v.integer)
            break;
        if (!jvalue_int64(&v, &x)) {
            problem(p, prefix, "field \"%s\" is out of range, expected a 64-bit integer", f->name);
            return true;
        }
        slot_v->i = x;
        slot_v->state = V_SET;
        return true;
    }
    case PACER_TYPE_ID: {
        uint64_t x;
        if (v.type != JT_NUMBER || !v.integer)
            break;
        if (!jvalue_uint64(&v, &x)) {
            problem(p, prefix, "field \"%s\" is out of range, expected an unsigned 64-bit integer", f->name);
            return true;
        }
        slot_v->u = x;
        slot_v->state = V_SET;
        return true;
    }
    case PACER_TYPE_MS: {
        double ms;
        if (v.type != JT_NUMBER)
            break;
        if (!jvalue_double(&v, &ms) || fabs(ms) > 9.2e12) {
            problem(p, prefix, "field \"%s\" is out of range, expected a duration", f->name);
            return true;
        }
        if (ms < 0) {
            problem(p, prefix, "field \"%s\" is negative (%g), expected a duration", f->name, ms);
            return true;
        }
        slot_v->i = round_ns(ms * 1e6);
        slot_v->state = V_SET;
        return true;
    }
    case PACER_TYPE_BOOL:
        if (v.type != JT_TRUE && v.type != JT_FALSE)
            break;
        slot_v->i = v.type == JT_TRUE;
        slot_v->state = V_SET;
        return true;
    default:
        break;
    }
    problem(p, prefix, "field \"%s\" is %s, expected %s", f->name, json_type_name(&v), expected(f->type));
    return true;
}

/* A member the shape does not name: kept in `extra` at the top level. */
static bool keep_extra(parse *p, const char *key, size_t key_len, bool top)
{
    jvalue v;
    jread_peek(&p->r); /* skips whitespace: the value starts here */
    size_t from = p->r.pos;
    if (!jread_value(&p->r, &v))
        return false;
    if (!top)
        return true;
    size_t n = p->r.pos - from;
    char *compact = malloc(n + 1);
    if (!compact) {
        p->oom = true;
        return false;
    }
    size_t cn = json_compact(p->src + from, n, compact);
    jbuf_strn(&p->extra, key, key_len); /* a separator first from the second on */
    jbuf_raw(&p->extra, ":", 1);
    jbuf_raw(&p->extra, compact, cn);
    free(compact);
    return true;
}

static const char *const common_names[PACER_COMMON_N_FIELDS] = {"type", "ts", "app", "version", "session", "pid"};

/* A common member of the top-level record. */
static bool read_common(parse *p, pacer_record *r, unsigned which)
{
    jvalue v;
    if (!jread_value(&p->r, &v))
        return false;
    if (v.type == JT_NULL)
        return true;
    if (which == PACER_COMMON_TYPE) {
        if (v.type != JT_STRING)
            problem(p, "", "field \"type\" is %s, expected a string", json_type_name(&v));
        else if (strlen(r->common[PACER_COMMON_TYPE]) != v.len || memcmp(r->common[PACER_COMMON_TYPE], v.s, v.len))
            problem(p, "", "field \"type\" appears twice");
        return true;
    }
    if (which == PACER_COMMON_TS || which == PACER_COMMON_PID) {
        int64_t x;
        if (v.type != JT_NUMBER || !v.integer || !jvalue_int64(&v, &x)) {
            problem(p, "", "field \"%s\" is %s, expected an integer", common_names[which], json_type_name(&v));
            return true;
        }
        if (which == PACER_COMMON_TS)
            r->ts = x;
        else
            r->pid = x;
        return true;
    }
    if (v.type != JT_STRING) {
        problem(p, "", "field \"%s\" is %s, expected a string", common_names[which], json_type_name(&v));
        return true;
    }
    r->common[which] = arena_strndup(r, v.s, v.len);
    if (!r->common[which])
        p->oom = true;
    return !p->oom;
}

static bool read_fields(parse *p, pacer_record *r, const char *prefix, bool top)
{
    if (!jread_enter_object(&p->r))
        return false;
    const char *key;
    size_t kl;
    int n;
    while ((n = jread_member(&p->r, &key, &kl)) > 0) {
        if (top) {
            long c = -1;
            for (long i = 0; i < PACER_COMMON_N_FIELDS && c < 0; i++)
                if (strlen(common_names[i]) == kl && memcmp(common_names[i], key, kl) == 0)
                    c = i;
            if (c >= 0) {
                if (!read_common(p, r, (unsigned)c))
                    return false;
                continue;
            }
        }
        long fi = pacer_shape_find(r->shape, key, kl);
        if (fi >= 0 && r->v[fi].state != V_ABSENT)
            problem(p, prefix, "field \"%.*s\" appears twice", (int)(kl > 40 ? 40 : kl), key);
        if (!(fi >= 0 ? read_field(p, r, (unsigned)fi, prefix) : keep_extra(p, key, kl, top)))
            return false;
    }
    if (n < 0)
        return false;
    for (size_t i = 0; i < r->shape->n_fields && !p->lenient; i++) {
        const pacer_field *f = &r->shape->fields[i];
        if ((f->flags & PACER_FIELD_REQUIRED) && r->v[i].state != V_SET)
            problem(p, prefix, "missing field \"%s\" (%s)", f->name, expected(f->type));
    }
    return true;
}

/* The "type" member of the object in line, found by a pass of its own (for
 * lines where it is not the first member). Returns false when there is none
 * or the line is not valid JSON (the main pass says why). */
static bool find_type(const char *line, size_t len, char **ret, size_t *ret_len)
{
    char *buf = malloc(len + 1);
    if (!buf)
        return false;
    memcpy(buf, line, len);
    jread r;
    jread_init(&r, buf, len, NULL, JREAD_LINE | JREAD_NO_NUL);
    const char *key;
    size_t kl;
    bool found = false;
    if (jread_enter_object(&r)) {
        while (!found && jread_member(&r, &key, &kl) > 0) {
            jvalue v;
            if (!jread_value(&r, &v))
                break;
            if (kl == 4 && memcmp(key, "type", 4) == 0 && v.type == JT_STRING) {
                *ret = malloc(v.len + 1);
                if (*ret) {
                    memcpy(*ret, v.s, v.len);
                    (*ret)[v.len] = '\0';
                    *ret_len = v.len;
                    found = true;
                }
            }
        }
    }
    free(buf);
    return found;
}

/* The common case, read off the text without decoding anything: the
 * first member is "type" and its value a plain ASCII string. */
static bool first_member_type(const char *s, size_t len, const char **ret, size_t *ret_len)
{
    static const char want[] = "\"type\"";
    size_t i = 0;
#define WS() while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++
    WS();
    if (i >= len || s[i++] != '{')
        return false;
    WS();
    if (len - i < sizeof(want) - 1 || memcmp(s + i, want, sizeof(want) - 1) != 0)
        return false;
    i += sizeof(want) - 1;
    WS();
    if (i >= len || s[i++] != ':')
        return false;
    WS();
    if (i >= len || s[i++] != '"')
        return false;
#undef WS
    size_t start = i;
    while (i < len && s[i] != '"') {
        unsigned char c = (unsigned char)s[i++];
        if (c == '\\' || c < 0x20 || c >= 0x80)
            return false;
    }
    if (i >= len)
        return false;
    *ret = s + start;
    *ret_len = i - start;
    return true;
}

/* Reads line into a record: of `type` when given (its members may then
 * lack required fields: lenient), else of the type the line names. */
static int parse_line(const char *line, size_t len, const char *type_name, pacer_record **ret, char *err,
                      size_t err_len)
{
    char dummy[1];
    if (!err || !err_len) {
        err = dummy;
        err_len = sizeof(dummy);
    }
    err[0] = '\0';
    *ret = NULL;
    char *buf = malloc(len + 1);
    if (!buf)
        return -ENOMEM;
    memcpy(buf, line, len);
    char reason[256] = "";
    parse p = {.src = line, .reason = reason, .reason_len = sizeof(reason), .lenient = type_name != NULL};
    jbuf_init(&p.extra);
    jread_init(&p.r, buf, len, line, JREAD_LINE | JREAD_NO_NUL);
    int rc = -EINVAL;
    pacer_record *r = NULL;
    char *found = NULL;
    const char *tname = type_name;
    size_t tlen = type_name ? strlen(type_name) : 0;

    jtype t = jread_peek(&p.r);
    if (t != JT_OBJECT) {
        jvalue x;
        if (jread_value(&p.r, &x) && jread_end(&p.r, "value"))
            snprintf(err, err_len, "not a JSON object");
        goto syntax;
    }
    if (!tname && !first_member_type(line, len, &tname, &tlen) && find_type(line, len, &found, &tlen))
        tname = found;
    if (!tname) {
        /* a record without a type: still checked for syntax */
        jvalue x;
        if (jread_value(&p.r, &x) && jread_end(&p.r, "object"))
            snprintf(err, err_len, "missing field \"type\" (a string)");
        goto syntax;
    }
    r = record_new_typed(pacer_record_type_find(tname, tlen), tname, tlen);
    if (!r) {
        rc = -ENOMEM;
        goto out;
    }
    if (!read_fields(&p, r, "", true) || !jread_end(&p.r, "object")) {
        if (p.oom) {
            rc = -ENOMEM;
            goto out;
        }
        goto syntax;
    }
    if (p.oom || p.extra.failed) {
        rc = -ENOMEM;
        goto out;
    }
    if (reason[0]) {
        snprintf(err, err_len, "%s", reason);
        goto out;
    }
    if (p.extra.len) {
        r->extra = jbuf_steal(&p.extra, NULL);
        if (!r->extra) {
            rc = -ENOMEM;
            goto out;
        }
    }
    *ret = r;
    r = NULL;
    rc = 0;
    goto out;
syntax:
    if (p.r.failed)
        snprintf(err, err_len, "not valid JSON (column %zu): %s", p.r.error_at + 1, p.r.message);
out:
    free(found);
    jbuf_free(&p.extra);
    pacer_record_free(r);
    free(buf);
    return rc;
}

/* ---- a record as its text reads back ---- */

double record_ms_value(int64_t ns)
{
    /* jbuf_ms's digits: |ns| to the nearest microsecond (INT64_MIN as
     * INT64_MAX), three decimals. Below 2^53 microseconds both the count
     * and 1000 are exact doubles, so the quotient is the correctly rounded
     * value of the decimal text: what strtod makes of it. */
    bool neg = ns < 0;
    uint64_t a = neg ? (ns == INT64_MIN ? (uint64_t)INT64_MAX : (uint64_t)-ns) : (uint64_t)ns;
    uint64_t us = a / 1000 + (a % 1000 >= 500);
    double d;
    if (us < (UINT64_C(1) << 53)) {
        d = (double)us / 1000.0;
    } else {
        char text[32];
        snprintf(text, sizeof(text), "%" PRIu64 ".%03" PRIu64, us / 1000, us % 1000);
        d = strtod(text, NULL);
    }
    return neg ? -d : d;
}

bool record_ms_reread(int64_t ns, int64_t *ret)
{
    double ms = record_ms_value(ns);
    if (fabs(ms) > 9.2e12 || ms < 0) /* read_field's limits */
        return false;
    *ret = round_ns(ms * 1e6);
    return true;
}

int record_check(const pacer_record *r)
{
    for (size_t i = 0; i < r->shape->n_fields; i++) {
        const pacer_field *f = &r->shape->fields[i];
        const value *v = &r->v[i];
        if (v->state != V_SET) {
            if (f->flags & PACER_FIELD_REQUIRED)
                return -EINVAL;
            continue;
        }
        int64_t ns;
        switch (f->type) {
        case PACER_TYPE_STRING:
            if (!pacer_field_allows(f, v->s, strlen(v->s)))
                return -EINVAL;
            break;
        case PACER_TYPE_MS:
            if (!record_ms_reread(v->i, &ns))
                return -EINVAL;
            break;
        case PACER_TYPE_OBJECT:
        case PACER_TYPE_LIST:
            for (const pacer_record *c = v->child; c; c = f->type == PACER_TYPE_LIST ? c->next : NULL)
                if (record_check(c) < 0)
                    return -EINVAL;
            break;
        case PACER_TYPE_STRINGS:
            for (size_t k = 0; k < v->list->n; k++)
                if (!pacer_field_allows(f, v->list->v[k], strlen(v->list->v[k])))
                    return -EINVAL;
            break;
        default:
            break;
        }
    }
    return 0;
}

PACER_API int pacer_record_parse(const char *line, size_t len, pacer_record **ret, char *err, size_t err_len)
{
    return parse_line(line, len, NULL, ret, err, err_len);
}

int record_from_members(const char *type, const char *members, pacer_record **ret)
{
    size_t n = members ? strlen(members) : 0;
    char *text = malloc(n + 3);
    if (!text)
        return -ENOMEM;
    text[0] = '{';
    if (n)
        memcpy(text + 1, members, n);
    text[n + 1] = '}';
    text[n + 2] = '\0';
    int r = parse_line(text, n + 2, type, ret, NULL, 0);
    free(text);
    return r;
}

int record_from_object(const char *json, size_t len, pacer_record **ret)
{
    const char *tname;
    size_t tlen;
    char *found = NULL;
    *ret = NULL;
    if (!first_member_type(json, len, &tname, &tlen)) {
        if (!find_type(json, len, &found, &tlen))
            return -EINVAL;
        tname = found;
    }
    char *type = strndup(tname, tlen);
    free(found);
    if (!type)
        return -ENOMEM;
    int r = type[0] ? parse_line(json, len, type, ret, NULL, 0) : -EINVAL;
    free(type);
    return r;
}
