/* OTLP/HTTP JSON decoding (otlp.h): one pass of base's pull parser (jread)
 * over the body.
 *
 * Order of checks for one request:
 *   1. one pass of the reader over a private copy of the body: syntax,
 *      UTF-8 and strings (unescaped in place, no \u0000), nesting (the
 *      reader refuses to go deeper than OTLP_MAX_DEPTH, which bounds the
 *      recursion here too), numbers (64-bit integers, finite reals:
 *      read_value), and the OTLP shape, appending items as they complete;
 *   2. when the reader failed: the nesting depth of the whole body, by a
 *      linear scan (json_depth_exceeded), so that "too deep" wins over
 *      every other reason wherever it is; a body the reader took whole is
 *      never too deep, and is not scanned again;
 *   3. the first syntax error, else the first wrong shape of a list, makes
 *      the whole request invalid: the batch is emptied.
 *
 * Items are validated once their object is complete, in the same order of
 * fields whatever the order in the text, so that the reasons do not depend
 * on how an SDK orders members. Whatever an enclosing object decides later
 * (a resource that turns out to be invalid, a metric without a valid name)
 * is applied by rolling the batch back to a mark taken when that object
 * began: items appended, items rejected and the first reason all return to
 * the mark, and the enclosing object's own rejection replaces them.
 */
#include "otlp.h"

#include <pacer/base/array.h>
#include <pacer/base/json.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- ids and integers ---- */

static int hex_val(char c)
{
    static const char digits[] = "0123456789abcdef0123456789ABCDEF";
    const char *p = c ? strchr(digits, c) : NULL;
    return p ? (int)((p - digits) % 16) : -1;
}

static int b64_val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

bool otlp_parse_id(const char *s, uint8_t *out, size_t n)
{
    size_t len = strlen(s);
    bool nonzero = false;
    if (len == 2 * n) {
        size_t i;
        for (i = 0; i < n; i++) {
            int hi = hex_val(s[2 * i]), lo = hex_val(s[2 * i + 1]);
            if (hi < 0 || lo < 0)
                break;
            out[i] = (uint8_t)(hi << 4 | lo);
            nonzero |= out[i] != 0;
        }
        if (i == n)
            return nonzero;
    }
    /* base64, padded or not: n bytes are ceil(4n/3) characters + padding */
    while (len > 0 && s[len - 1] == '=')
        len--;
    if (len != (4 * n + 2) / 3)
        return false;
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64_val(s[i]);
        if (v < 0)
            return false;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o == n)
                return false;
            out[o++] = (uint8_t)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    if (o != n || acc != 0) /* leftover bits must be zero */
        return false;
    for (size_t i = 0; i < n; i++)
        nonzero |= out[i] != 0;
    return nonzero;
}

bool otlp_parse_int64(const char *s, size_t len, int64_t *ret)
{
    bool neg = false;
    size_t i = 0;
    if (len > 0 && s[0] == '-') {
        neg = true;
        i = 1;
    }
    if (i == len || len - i > 20)
        return false;
    uint64_t acc = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (acc > (UINT64_MAX - d) / 10)
            return false;
        acc = acc * 10 + d;
    }
    if (neg) {
        if (acc > (uint64_t)INT64_MAX + 1)
            return false;
        *ret = acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc;
    } else {
        if (acc > INT64_MAX)
            return false;
        *ret = (int64_t)acc;
    }
    return true;
}

/* ---- values ----
 *
 * The JSON text is read by base's pull parser (jread, strings unescaped in
 * place into the batch's copy of the body). What the decoder adds is the
 * typed view below, with OTLP's limits: every number, also inside values
 * that are skipped, must be a 64-bit integer or a finite real, else the
 * request as a whole is invalid. */

/* A body the reader took whole is within the decoder's limit. */
_Static_assert(OTLP_MAX_DEPTH == JREAD_MAX_DEPTH, "the reader's nesting limit is the decoder's");

/* A JSON value as the decoder sees it: scalars with their value, objects
 * and arrays skipped (type only). */
typedef struct jv {
    char t; /* 0 absent, 's' string, 'i' integer, 'd' real, 'b' bool, 'n' null, 'o' object, 'a' array */
    const char *s;
    size_t len;
    int64_t i;
    double d;
    bool b;
} jv;

/* Reads any value at the position; objects and arrays are checked and
 * skipped. False on a syntax error (in r). */
static bool read_value(jread *r, jv *v)
{
    memset(v, 0, sizeof *v);
    jvalue x;
    if (!jread_value(r, &x))
        return false;
    switch (x.type) {
    case JT_OBJECT:
    case JT_ARRAY:
        v->t = x.type == JT_OBJECT ? 'o' : 'a';
        return true;
    case JT_STRING:
        v->t = 's';
        v->s = x.s;
        v->len = x.len;
        return true;
    case JT_NUMBER:
        /* in range: the reader checks every number (JREAD_NUMBERS_IN_RANGE) */
        if (x.integer) {
            jvalue_int64(&x, &v->i);
            v->t = 'i';
            v->d = (double)v->i;
        } else {
            jvalue_double(&x, &v->d);
            v->t = 'd';
        }
        return true;
    case JT_TRUE:
    case JT_FALSE:
        v->t = 'b';
        v->b = x.type == JT_TRUE;
        return true;
    default:
        v->t = 'n';
        return true;
    }
}

/* Skips the value at the position, checking it (its numbers too). */
static bool skip(jread *r)
{
    jv x;
    return read_value(r, &x);
}

static bool key_is(const char *k, size_t kl, const char *lit)
{
    size_t n = strlen(lit);
    return kl == n && memcmp(k, lit, n) == 0;
}

/* A member named in lowerCamelCase (OTLP JSON) or as the proto field
 * (snake_case), which proto3 JSON parsers accept both. */
static bool key_is2(const char *k, size_t kl, const char *camel, const char *snake)
{
    return key_is(k, kl, camel) || key_is(k, kl, snake);
}

static bool jv_int64(const jv *v, int64_t *ret)
{
    if (v->t == 'i') {
        *ret = v->i;
        return true;
    }
    return v->t == 's' && otlp_parse_int64(v->s, v->len, ret);
}

/* A double: a JSON number, or a string (proto3 JSON): "NaN", "Infinity",
 * "-Infinity" or a decimal number. */
static bool jv_double(const jv *v, double *ret)
{
    if (v->t == 'i' || v->t == 'd') {
        *ret = v->d;
        return true;
    }
    if (v->t != 's')
        return false;
    if (strcmp(v->s, "NaN") == 0) {
        *ret = NAN;
        return true;
    }
    if (strcmp(v->s, "Infinity") == 0 || strcmp(v->s, "-Infinity") == 0) {
        *ret = v->s[0] == '-' ? -INFINITY : INFINITY;
        return true;
    }
    /* a number as text: digits, sign, point, exponent only (no "inf", hex) */
    if (!v->len || strspn(v->s, "0123456789+-.eE") != v->len)
        return false;
    char *end;
    double d = strtod(v->s, &end);
    if (*end || !isfinite(d))
        return false;
    *ret = d;
    return true;
}

/* A non-negative integer below 2^32 (counts of dropped items, flags). */
static bool jv_u32(const jv *v, uint32_t *ret)
{
    int64_t x;
    if (!jv_int64(v, &x) || x < 0 || x > UINT32_MAX)
        return false;
    *ret = (uint32_t)x;
    return true;
}

/* An unsigned 64-bit nanosecond timestamp; pacerd keeps them signed (until
 * the year 2262). */
static bool parse_time(const jv *v, int64_t *ret)
{
    return jv_int64(v, ret) && *ret >= 0;
}

/* An enum given as an integer in [0, max] or as one of its names. */
static bool parse_enum(const jv *v, const char *const *names, int max, int *ret)
{
    if (v->t == 'i') {
        if (v->i < 0 || v->i > max)
            return false;
        *ret = (int)v->i;
        return true;
    }
    if (v->t == 's')
        for (int i = 0; i <= max; i++)
            if (names[i] && strcmp(v->s, names[i]) == 0) {
                *ret = i;
                return true;
            }
    return false;
}

static const char *const span_kinds[] = {
    "SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER",
    "SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER",
};
static const char *const status_codes[] = {"STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"};

/* ---- the decoder: batch, marks, rejections ---- */

typedef struct decoder {
    otlp_out o;  /* first: the batch being filled */
    jread r;     /* over the batch's copy of the body; r.src is the body */
    char ignore_msg[256]; /* the first unknown field skipped */
    bool has_ignore;
    const char *shape; /* the first wrong shape of a list (whole request) */
    char shape_buf[160];
} decoder;

otlp_mark otlp_out_mark(const otlp_out *o)
{
    const otlp_batch *b = o->b;
    return (otlp_mark){b->n_spans + b->n_logs + b->n_points, b->rejected, o->has_msg}; /* one kind per batch */
}

void otlp_out_restore(otlp_out *o, otlp_mark m)
{
    otlp_batch *b = o->b;
    if (b->spans)
        b->n_spans = m.items;
    else if (b->logs)
        b->n_logs = m.items;
    else if (b->points)
        b->n_points = m.items;
    b->rejected = m.rejected;
    o->has_msg = m.has_msg;
}

void otlp_out_reject(otlp_out *o, const char *fmt, ...)
{
    o->b->rejected++;
    if (o->has_msg)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->msg, sizeof o->msg, fmt, ap);
    va_end(ap);
    o->has_msg = true;
}

bool otlp_out_room(otlp_out *o, void *arr, size_t n, size_t *cap, size_t size)
{
    if (!array_grow(arr, cap, n + 1, size, 64))
        o->oom = true;
    return !o->oom;
}

void otlp_out_why(const char **why, const char *w)
{
    if (w && !*why)
        *why = w;
}

static void point_attrs(otlp_batch *b, otlp_attrs *a)
{
    a->kv = a->n ? b->kvs + a->first : NULL;
}

int otlp_out_end(otlp_out *o, const char *bad, const char *ignored, char *err, size_t err_size)
{
    otlp_batch *b = o->b;
    if (o->oom)
        goto oom;
    if (bad) {
        snprintf(err, err_size, "%s", bad);
        otlp_batch_clear(b);
        return -EBADMSG;
    }
    for (size_t x = 0; x < b->n_resources; x++)
        point_attrs(b, &b->resources[x].attrs);
    for (size_t x = 0; x < b->n_scopes; x++)
        point_attrs(b, &b->scopes[x].attrs);
    for (size_t x = 0; x < b->n_spans; x++)
        point_attrs(b, &b->spans[x].attrs);
    for (size_t x = 0; x < b->n_events; x++)
        point_attrs(b, &b->events[x].attrs);
    for (size_t x = 0; x < b->n_links; x++)
        point_attrs(b, &b->links[x].attrs);
    for (size_t x = 0; x < b->n_logs; x++)
        point_attrs(b, &b->logs[x].attrs);
    for (size_t x = 0; x < b->n_points; x++)
        point_attrs(b, &b->points[x].attrs);
    for (size_t x = 0; x < b->n_exemplars; x++)
        point_attrs(b, &b->exemplars[x].attrs);
    if (o->has_msg && !(b->reject_message = strdup(o->msg)))
        goto oom;
    if (ignored && !(b->ignore_message = strdup(ignored)))
        goto oom;
    return 0;
oom:
    otlp_batch_clear(b);
    snprintf(err, err_size, "out of memory");
    return -ENOMEM;
}

struct otlp_chunk {
    struct otlp_chunk *next;
    size_t used, size;
    max_align_t data[];
};

void *otlp_batch_alloc(otlp_batch *b, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    otlp_chunk *c = b->pool;
    if (!c || c->size - c->used < n) {
        size_t size = n > 65536 ? n : 65536;
        c = malloc(sizeof *c + size);
        if (!c)
            return NULL;
        c->next = b->pool;
        c->used = 0;
        c->size = size;
        b->pool = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

void otlp_batch_clear(otlp_batch *b)
{
    for (otlp_chunk *c = b->pool, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(b->scopes);
    free(b->events);
    free(b->links);
    free(b->exemplars);
    free(b->ignore_message);
    free(b->text);
    free(b->kvs);
    free(b->resources);
    free(b->spans);
    free(b->logs);
    free(b->points);
    free(b->reject_message);
    memset(b, 0, sizeof *b);
}

/* ---- reading objects and arrays ----
 *
 * Every object the decoder understands is read by read_object() as its
 * object_kind says: the members that are plain values are listed in a table
 * of fields (name → the jv at an offset in the caller's struct); a member
 * that needs more than a value (a nested object, a list, attributes) goes to
 * the kind's more(); anything else is skipped. Arrays are read by
 * read_array(), one call per element. Both return 1 once the value is read,
 * 0 when the value at the position is of another type (it is then skipped:
 * the caller says what that means), and -1 on a syntax error or out of
 * memory. */

/* Enters the object or array at the position when it is one (1), else
 * skips the value (0); -1 on a syntax error. *ret_start: where the value
 * began. */
static int enter(jread *r, jtype type, size_t *ret_start)
{
    jtype t = jread_peek(r);
    *ret_start = r->pos;
    if (t != type)
        return skip(r) ? 0 : -1;
    return (type == JT_OBJECT ? jread_enter_object(r) : jread_enter_array(r)) ? 1 : -1;
}

typedef struct field {
    const char *name;
    size_t len, off; /* off: of its jv in the struct read into */
} field;
#define FIELD(type, name, member) {name, sizeof name - 1, offsetof(type, member)}
/* A field under both of the names OTLP/JSON accepts: the lowerCamelCase
 * one and the proto field's own. */
#define FIELD2(type, camel, snake, member) FIELD(type, camel, member), FIELD(type, snake, member)
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Reads the member `key` (the reader at its value) into ctx: 1 read, 0 not
 * one of its own (the caller skips it), -1 on a syntax error or out of
 * memory. */
typedef int member_fn(decoder *d, void *ctx, const char *key, size_t kl);

typedef struct object_kind {
    const field *fields;
    size_t n_fields;
    member_fn *more; /* or NULL */
    const char *what; /* an OTLP message whose unknown members are counted as ignored ("span"), or NULL */
} object_kind;

/* An unknown member of an OTLP message: skipped, as OTLP requires, and
 * counted, so that the answer says what was not stored. */
static void ignored(decoder *d, const char *what, const char *key, size_t kl)
{
    d->o.b->ignored++;
    if (d->has_ignore)
        return;
    snprintf(d->ignore_msg, sizeof d->ignore_msg, "unknown field \"%.*s\" of a %s", (int)(kl > 100 ? 100 : kl),
             key, what);
    d->has_ignore = true;
}

/* read_object, which also gives where the value began. */
static int read_object_at(decoder *d, const object_kind *kind, void *ctx, size_t *ret_start)
{
    jread *p = &d->r;
    int r = enter(p, JT_OBJECT, ret_start);
    if (r <= 0)
        return r;
    const char *key;
    size_t kl;
    while ((r = jread_member(p, &key, &kl)) > 0) {
        size_t x = 0;
        while (x < kind->n_fields && (kind->fields[x].len != kl || memcmp(kind->fields[x].name, key, kl) != 0))
            x++;
        int done = x < kind->n_fields ? (read_value(p, (jv *)((char *)ctx + kind->fields[x].off)) ? 1 : -1)
                   : kind->more        ? kind->more(d, ctx, key, kl)
                                       : 0;
        if (done == 0) {
            if (kind->what)
                ignored(d, kind->what, key, kl);
            done = skip(p) ? 1 : -1;
        }
        if (done < 0)
            return -1;
    }
    return r == 0 ? 1 : -1;
}

static int read_object(decoder *d, const object_kind *kind, void *ctx)
{
    size_t start;
    return read_object_at(d, kind, ctx, &start);
}

/* Reads element `index` of an array into ctx; false on a syntax error or
 * out of memory. */
typedef bool element_fn(decoder *d, void *ctx, size_t index);

/* read_array, which also gives where the value began. */
static int read_array_at(decoder *d, element_fn *each, void *ctx, size_t *ret_start)
{
    jread *p = &d->r;
    int r = enter(p, JT_ARRAY, ret_start);
    if (r <= 0)
        return r;
    for (size_t n = 0; (r = jread_element(p)) > 0; n++)
        if (!each(d, ctx, n))
            return -1;
    return r == 0 ? 1 : -1;
}

static int read_array(decoder *d, element_fn *each, void *ctx)
{
    size_t start;
    return read_array_at(d, each, ctx, &start);
}

/* ---- attribute values ---- */

static bool parse_kvs(decoder *d, bool keep, otlp_attrs *ret, const char **why);
static bool parse_any(decoder *d, otlp_value *out, const char **why);

/* {"values":[…]} of an arrayValue or a kvlistValue. */
typedef struct any_list {
    bool kv;
    const char *shape; /* its own reason when not of that shape */
    const char **bad;
} any_list;

static bool any_element(decoder *d, void *ctx, size_t index)
{
    any_list *l = ctx;
    otlp_value e;
    const char *w = NULL;
    (void)index;
    if (!parse_any(d, &e, &w))
        return false;
    otlp_out_why(l->bad, w);
    return true;
}

static int any_list_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    any_list *l = ctx;
    if (!key_is(key, kl, "values"))
        return 0;
    if (jread_peek(&d->r) != JT_ARRAY) {
        otlp_out_why(l->bad, l->shape);
        return skip(&d->r) ? 1 : -1;
    }
    if (l->kv) {
        otlp_attrs nested;
        const char *w = NULL;
        if (!parse_kvs(d, false, &nested, &w))
            return -1;
        otlp_out_why(l->bad, w);
        return 1;
    }
    return read_array(d, any_element, l) < 0 ? -1 : 1;
}

typedef struct any_in {
    otlp_value *out;
    unsigned kinds; /* 1 << otlp_value_type of each kind seen */
    const char *bad;
} any_in;

static int any_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    static const object_kind list_kind = {NULL, 0, any_list_member, NULL};
    any_in *in = ctx;
    otlp_value *out = in->out;
    otlp_value_type t;
    if (key_is2(key, kl, "arrayValue", "array_value") || key_is2(key, kl, "kvlistValue", "kvlist_value")) {
        bool kv = key[0] == 'k';
        t = kv ? OTLP_KVLIST : OTLP_ARRAY;
        any_list l = {kv, kv ? "kvlistValue must be {\"values\":[…]}" : "arrayValue must be {\"values\":[…]}",
                      &in->bad};
        int r = read_object(d, &list_kind, &l);
        if (r < 0)
            return -1;
        if (r == 0)
            otlp_out_why(&in->bad, l.shape);
    } else {
        jv x;
        if (!read_value(&d->r, &x))
            return -1;
        const char *w = NULL;
        if (key_is2(key, kl, "stringValue", "string_value")) {
            t = OTLP_STRING;
            if (x.t != 's')
                w = "stringValue must be a string";
            out->s = x.s;
            out->len = x.len;
        } else if (key_is2(key, kl, "boolValue", "bool_value")) {
            t = OTLP_BOOL;
            if (x.t != 'b')
                w = "boolValue must be true or false";
            out->b = x.b;
        } else if (key_is2(key, kl, "intValue", "int_value")) {
            t = OTLP_INT;
            if (!jv_int64(&x, &out->i))
                w = "intValue must be a 64-bit integer (number or decimal string)";
        } else if (key_is2(key, kl, "doubleValue", "double_value")) {
            t = OTLP_DOUBLE;
            if (!jv_double(&x, &out->d))
                w = "doubleValue must be a number, or \"NaN\", \"Infinity\", \"-Infinity\"";
        } else if (key_is2(key, kl, "bytesValue", "bytes_value")) {
            t = OTLP_BYTES;
            if (x.t != 's')
                w = "bytesValue must be a base64 string";
            out->s = x.s;
            out->len = x.len;
        } else {
            ignored(d, "value (AnyValue)", key, kl); /* already read */
            return 1;
        }
        otlp_out_why(&in->bad, w);
    }
    in->kinds |= 1u << t;
    out->type = t;
    return 1;
}

/* An AnyValue at pos (any JSON value). Sets *why to the first reason it is
 * invalid (and leaves it set when it was already). Returns false on a
 * syntax error or out of memory. */
static bool parse_any(decoder *d, otlp_value *out, const char **why)
{
    static const object_kind kind = {NULL, 0, any_member, NULL};
    jread *p = &d->r;
    memset(out, 0, sizeof *out);
    size_t start;
    any_in in = {out, 0, NULL};
    int r = read_object_at(d, &kind, &in, &start);
    if (r < 0)
        return false;
    if (r == 0) {
        otlp_out_why(why, "a value must be an object (AnyValue)");
        return true;
    }
    if (!in.bad && (in.kinds & (in.kinds - 1)))
        in.bad = "a value holds more than one of stringValue, intValue, …";
    otlp_out_why(why, in.bad);
    out->json = p->src + start;
    out->json_len = p->pos - start;
    return true;
}

/* One {"key","value"} of a KeyValue list. */
typedef struct kv_in {
    jv key;
    otlp_value value;
    bool has_value;
    const char *vwhy; /* the last "value"'s reason */
} kv_in;

static int kv_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    kv_in *in = ctx;
    if (!key_is(key, kl, "value"))
        return 0;
    in->vwhy = NULL;
    if (!parse_any(d, &in->value, &in->vwhy))
        return -1;
    in->has_value = true;
    return 1;
}

typedef struct kvs_in {
    bool keep;
    const char **why;
} kvs_in;

static bool kvs_element(decoder *d, void *ctx, size_t index)
{
    static const field fields[] = {FIELD(kv_in, "key", key)};
    static const object_kind kind = {fields, N_OF(fields), kv_member, "attribute (KeyValue)"};
    kvs_in *l = ctx;
    jread *p = &d->r;
    otlp_batch *b = d->o.b;
    (void)index;
    size_t start;
    kv_in in = {0};
    int r = read_object_at(d, &kind, &in, &start);
    if (r < 0)
        return false;
    const char *bad = r == 0 || in.key.t != 's' ? "an attribute must be an object with a string \"key\""
                      : in.key.len > OTLP_MAX_NAME ? "an attribute key is longer than 1024 bytes"
                                                   : in.vwhy;
    if (bad) {
        otlp_out_why(l->why, bad);
        return true;
    }
    if (!l->keep || *l->why)
        return true;
    if (!otlp_out_room(&d->o, &b->kvs, b->n_kvs, &d->o.cap_kvs, sizeof *b->kvs))
        return false;
    b->kvs[b->n_kvs++] = (otlp_kv){
        .key = in.key.s,
        .key_len = in.key.len,
        .value = in.value,
        .has_value = in.has_value,
        .json = p->src + start,
        .json_len = p->pos - start,
    };
    return true;
}

/* A KeyValue list at pos. keep: append its entries to the batch (else only
 * check them). *why: the first reason it is invalid. Returns false on a
 * syntax error or out of memory. */
static bool parse_kvs(decoder *d, bool keep, otlp_attrs *ret, const char **why)
{
    jread *p = &d->r;
    memset(ret, 0, sizeof *ret);
    ret->first = d->o.b->n_kvs;
    size_t start;
    kvs_in l = {keep, why};
    int r = read_array_at(d, kvs_element, &l, &start);
    if (r < 0)
        return false;
    if (r == 0) {
        otlp_out_why(why, "attributes must be an array of {\"key\",\"value\"}");
        return true;
    }
    ret->n = d->o.b->n_kvs - ret->first;
    ret->json = p->src + start;
    ret->json_len = p->pos - start;
    return true;
}

const otlp_value *otlp_attr(const otlp_attrs *attrs, const char *key)
{
    size_t n = strlen(key);
    for (size_t i = 0; i < attrs->n; i++) {
        const otlp_kv *kv = &attrs->kv[i];
        if (kv->key_len == n && memcmp(kv->key, key, n) == 0)
            return kv->has_value ? &kv->value : NULL;
    }
    return NULL;
}

bool otlp_value_string(const otlp_value *v, const char **ret)
{
    if (!v || v->type != OTLP_STRING)
        return false;
    *ret = v->s;
    return true;
}

bool otlp_value_double(const otlp_value *v, double *ret)
{
    if (v && v->type == OTLP_DOUBLE) {
        *ret = v->d;
        return true;
    }
    if (v && v->type == OTLP_INT) {
        *ret = (double)v->i;
        return true;
    }
    return false;
}

bool otlp_value_int(const otlp_value *v, int64_t *ret)
{
    if (v && v->type == OTLP_INT) {
        *ret = v->i;
        return true;
    }
    if (v && v->type == OTLP_DOUBLE) {
        double x = v->d;
        if (x == floor(x) && x >= -9.2e18 && x <= 9.2e18) {
            *ret = (int64_t)x;
            return true;
        }
    }
    return false;
}

/* ---- writing what a batch holds as OTLP JSON ---- */

/* A value written by hand: the separator jbuf would write first. */
static void raw_value(jbuf *b, const char *text, size_t len)
{
    if (b->need_comma)
        jbuf_raw(b, ",", 1);
    jbuf_raw(b, text, len);
    b->need_comma = true;
}

/* JSON text of the body, without its whitespace. */
static void write_compact(jbuf *b, const char *json, size_t len)
{
    char small[1024];
    char *t = len < sizeof small ? small : malloc(len + 1);
    if (!t) {
        b->failed = true;
        return;
    }
    size_t n = json_compact(json, len, t);
    raw_value(b, t, n);
    if (t != small)
        free(t);
}

static void write_base64(jbuf *b, const uint8_t *p, size_t n)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t out_len = (n + 2) / 3 * 4;
    if (!n) {
        jbuf_str(b, "");
        return;
    }
    char small[256] = "";
    char *t = out_len < sizeof small ? small : malloc(out_len + 1);
    if (!t) {
        b->failed = true;
        return;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        t[o++] = digits[v >> 18 & 63];
        t[o++] = digits[v >> 12 & 63];
        t[o++] = i + 1 < n ? digits[v >> 6 & 63] : '=';
        t[o++] = i + 2 < n ? digits[v & 63] : '=';
    }
    jbuf_strn(b, t, o);
    if (t != small)
        free(t);
}

/* A double as OTLP JSON writes it: a number, or "NaN", "Infinity",
 * "-Infinity". */
void otlp_write_double(jbuf *b, double d)
{
    if (isnan(d))
        jbuf_str(b, "NaN");
    else if (isinf(d))
        jbuf_str(b, d < 0 ? "-Infinity" : "Infinity");
    else
        jbuf_double(b, d);
}

void otlp_write_value(jbuf *b, const otlp_value *v)
{
    if (v->json) {
        write_compact(b, v->json, v->json_len);
        return;
    }
    char num[24];
    jbuf_open(b, '{');
    switch (v->type) {
    case OTLP_EMPTY: break;
    case OTLP_STRING:
        jbuf_key(b, "stringValue");
        jbuf_strn(b, v->s, v->len);
        break;
    case OTLP_BOOL: jbuf_kv_bool(b, "boolValue", v->b); break;
    case OTLP_INT:
        snprintf(num, sizeof num, "%" PRId64, v->i);
        jbuf_kv_str(b, "intValue", num);
        break;
    case OTLP_DOUBLE:
        jbuf_key(b, "doubleValue");
        otlp_write_double(b, v->d);
        break;
    case OTLP_BYTES:
        jbuf_key(b, "bytesValue");
        write_base64(b, (const uint8_t *)v->s, v->len);
        break;
    case OTLP_ARRAY:
    case OTLP_KVLIST:
        jbuf_key(b, v->type == OTLP_ARRAY ? "arrayValue" : "kvlistValue");
        jbuf_open(b, '{');
        jbuf_key(b, "values");
        otlp_proto_write_list(b, v->type, (const uint8_t *)v->s, v->len);
        jbuf_close(b, '}');
        break;
    }
    jbuf_close(b, '}');
}

void otlp_write_kv(jbuf *b, const otlp_kv *kv)
{
    if (kv->json) {
        write_compact(b, kv->json, kv->json_len);
        return;
    }
    jbuf_open(b, '{');
    jbuf_key(b, "key");
    jbuf_strn(b, kv->key, kv->key_len);
    if (kv->has_value) {
        jbuf_key(b, "value");
        otlp_write_value(b, &kv->value);
    }
    jbuf_close(b, '}');
}

void otlp_write_attrs(jbuf *b, const otlp_attrs *a)
{
    if (a->json) {
        write_compact(b, a->json, a->json_len);
        return;
    }
    jbuf_open(b, '[');
    for (size_t i = 0; i < a->n; i++)
        otlp_write_kv(b, &a->kv[i]);
    jbuf_close(b, ']');
}

bool otlp_value_bool(const otlp_value *v, bool *ret)
{
    if (!v || v->type != OTLP_BOOL)
        return false;
    *ret = v->b;
    return true;
}

/* ---- the OTLP shape ---- */

/* What differs between /v1/traces, /v1/logs and /v1/metrics. Lists are
 * named in OTLP JSON (lowerCamelCase) and as proto fields (snake_case);
 * old_scopes is the deprecated InstrumentationLibrary… list, read as
 * scopes. */
typedef struct signal {
    const char *list, *list_snake;     /* "resourceSpans", "resource_spans" */
    const char *scopes, *scopes_snake; /* "scopeSpans", "scope_spans" */
    const char *old_scopes, *old_scopes_snake;
    const char *items, *items_snake;   /* "spans" */
    bool reject_each;                  /* a bad resource rejects each item under it (else once) */
    bool (*item)(decoder *d, size_t i, size_t j, size_t k);
} signal;

static const char *const severity_levels[] = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"};

static bool parse_severity(const jv *v, int *ret)
{
    static const char *const sev[25] = {"SEVERITY_NUMBER_UNSPECIFIED"};
    if (parse_enum(v, sev, 24, ret))
        return true;
    /* names other than UNSPECIFIED: SEVERITY_NUMBER_<LEVEL><n> */
    if (v->t != 's' || strncmp(v->s, "SEVERITY_NUMBER_", 16) != 0)
        return false;
    const char *s = v->s;
    for (int lv = 0; lv < 6; lv++) {
        size_t n = strlen(severity_levels[lv]);
        if (strncmp(s + 16, severity_levels[lv], n) == 0) {
            int sub = s[16 + n] ? s[16 + n] - '0' : 1;
            if (sub >= 1 && sub <= 4 && (!s[16 + n] || !s[17 + n])) {
                *ret = lv * 4 + sub;
                return true;
            }
        }
    }
    return false;
}

/* The "attributes" of an item (span, log record, data point): the last one
 * counts, with its own reason in *why. A member_fn's answer. */
static int item_attrs(decoder *d, const char *key, size_t kl, otlp_attrs *attrs, const char **why)
{
    if (!key_is(key, kl, "attributes"))
        return 0;
    *why = NULL;
    return parse_kvs(d, true, attrs, why) ? 1 : -1;
}

/* An optional id: absent or "" (how OTLP JSON writes an unset id) leaves
 * *has false; otherwise it must be valid. */
static bool optional_id(const jv *v, uint8_t *out, size_t n, bool *has)
{
    *has = false;
    if (!v->t || (v->t == 's' && v->len == 0))
        return true;
    return v->t == 's' && (*has = otlp_parse_id(v->s, out, n));
}

/* Each item parser reads its object into a struct of jvs, then checks the
 * fields in a fixed order; "must be an object" and every reason are
 * reported under the item's JSON path. */

/* ---- span events and links ---- */

typedef struct event_in {
    jv time, name, dropped;
    const char *attrs_why;
    otlp_event out;
} event_in;

static int event_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    event_in *in = ctx;
    return item_attrs(d, key, kl, &in->out.attrs, &in->attrs_why);
}

/* Reads one event into the batch; *why: the first reason one is invalid. */
typedef struct sub_in {
    const char *why;
    size_t index; /* of the first invalid one */
} sub_in;

/* Notes that element index is invalid, for bad: only the first one counts. */
static void sub_note(sub_in *l, const char *bad, size_t index)
{
    if (!l->why) {
        l->why = bad;
        l->index = index;
    }
}

static bool span_event(decoder *d, void *ctx, size_t index)
{
    static const field fields[] = {
        FIELD2(event_in, "timeUnixNano", "time_unix_nano", time),
        FIELD(event_in, "name", name),
        FIELD2(event_in, "droppedAttributesCount", "dropped_attributes_count", dropped),
    };
    static const object_kind kind = {fields, N_OF(fields), event_member, "span event"};
    sub_in *l = ctx;
    event_in in = {0};
    int r = read_object(d, &kind, &in);
    if (r < 0)
        return false;
    const char *bad = NULL;
    otlp_event *out = &in.out;
    if (r == 0)
        bad = "must be an object";
    else if (!parse_time(&in.time, &out->time_ns))
        bad = "timeUnixNano: expected a non-negative 64-bit integer";
    else if (in.name.t && in.name.t != 's')
        bad = "name: expected a string";
    else if (in.name.t && in.name.len > OTLP_MAX_NAME)
        bad = "name: longer than 1024 bytes";
    else if (in.dropped.t && !jv_u32(&in.dropped, &out->dropped_attributes))
        bad = "droppedAttributesCount: expected a 32-bit unsigned integer";
    else
        bad = in.attrs_why;
    if (bad) {
        sub_note(l, bad, index);
        return true;
    }
    out->name = in.name.t ? in.name.s : "";
    otlp_batch *b = d->o.b;
    if (!otlp_out_room(&d->o, &b->events, b->n_events, &d->o.cap_events, sizeof *b->events))
        return false;
    b->events[b->n_events++] = *out;
    return true;
}

typedef struct link_in {
    jv trace, span, state, dropped, flags;
    const char *attrs_why;
    otlp_link out;
} link_in;

static int link_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    link_in *in = ctx;
    return item_attrs(d, key, kl, &in->out.attrs, &in->attrs_why);
}

static bool span_link(decoder *d, void *ctx, size_t index)
{
    static const field fields[] = {
        FIELD2(link_in, "traceId", "trace_id", trace),
        FIELD2(link_in, "spanId", "span_id", span),
        FIELD2(link_in, "traceState", "trace_state", state),
        FIELD2(link_in, "droppedAttributesCount", "dropped_attributes_count", dropped),
        FIELD(link_in, "flags", flags),
    };
    static const object_kind kind = {fields, N_OF(fields), link_member, "span link"};
    sub_in *l = ctx;
    link_in in = {0};
    int r = read_object(d, &kind, &in);
    if (r < 0)
        return false;
    const char *bad = NULL;
    otlp_link *out = &in.out;
    if (r == 0)
        bad = "must be an object";
    else if (in.trace.t != 's' || !otlp_parse_id(in.trace.s, out->trace_id, 16))
        bad = "traceId: expected 32 hex digits or base64 of 16 bytes, not all zero";
    else if (in.span.t != 's' || !otlp_parse_id(in.span.s, out->span_id, 8))
        bad = "spanId: expected 16 hex digits or base64 of 8 bytes, not all zero";
    else if (in.state.t && in.state.t != 's')
        bad = "traceState: expected a string";
    else if (in.dropped.t && !jv_u32(&in.dropped, &out->dropped_attributes))
        bad = "droppedAttributesCount: expected a 32-bit unsigned integer";
    else if (in.flags.t && !(out->has_flags = jv_u32(&in.flags, &out->flags)))
        bad = "flags: expected a 32-bit unsigned integer";
    else
        bad = in.attrs_why;
    if (bad) {
        sub_note(l, bad, index);
        return true;
    }
    out->trace_state = in.state.t && in.state.len ? in.state.s : NULL;
    otlp_batch *b = d->o.b;
    if (!otlp_out_room(&d->o, &b->links, b->n_links, &d->o.cap_links, sizeof *b->links))
        return false;
    b->links[b->n_links++] = *out;
    return true;
}

/* ---- spans ---- */

typedef struct span_in {
    jv trace, span, parent, name, kind, start, end, state, flags;
    jv dropped_attrs, dropped_events, dropped_links;
    jv code, message; /* status.code, status.message */
    bool has_status, status_obj, events_bad, links_bad;
    const char *attrs_why;
    sub_in events, links;
    otlp_span out;
} span_in;

static int span_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    static const field status_fields[] = {FIELD(span_in, "code", code), FIELD(span_in, "message", message)};
    static const object_kind status = {status_fields, N_OF(status_fields), NULL, "span status"};
    span_in *in = ctx;
    int r;
    if (key_is(key, kl, "events")) {
        r = read_array(d, span_event, &in->events);
        in->events_bad |= r == 0;
        return r < 0 ? -1 : 1;
    }
    if (key_is(key, kl, "links")) {
        r = read_array(d, span_link, &in->links);
        in->links_bad |= r == 0;
        return r < 0 ? -1 : 1;
    }
    if (!key_is(key, kl, "status"))
        return item_attrs(d, key, kl, &in->out.attrs, &in->attrs_why);
    in->has_status = true;
    in->code.t = in->message.t = 0;
    r = read_object(d, &status, in);
    in->status_obj = r > 0;
    return r < 0 ? -1 : 1;
}

static bool parse_span(decoder *d, size_t i, size_t j, size_t k)
{
    static const field fields[] = {
        FIELD2(span_in, "traceId", "trace_id", trace),
        FIELD2(span_in, "spanId", "span_id", span),
        FIELD2(span_in, "parentSpanId", "parent_span_id", parent),
        FIELD(span_in, "name", name),
        FIELD(span_in, "kind", kind),
        FIELD2(span_in, "startTimeUnixNano", "start_time_unix_nano", start),
        FIELD2(span_in, "endTimeUnixNano", "end_time_unix_nano", end),
        FIELD2(span_in, "traceState", "trace_state", state),
        FIELD(span_in, "flags", flags),
        FIELD2(span_in, "droppedAttributesCount", "dropped_attributes_count", dropped_attrs),
        FIELD2(span_in, "droppedEventsCount", "dropped_events_count", dropped_events),
        FIELD2(span_in, "droppedLinksCount", "dropped_links_count", dropped_links),
    };
    static const object_kind kind = {fields, N_OF(fields), span_member, "span"};
    otlp_batch *b = d->o.b;
    span_in in = {.status_obj = true};
    size_t first_event = b->n_events, first_link = b->n_links;
    int r = read_object(d, &kind, &in);
    if (r < 0)
        return false;
    otlp_span *out = &in.out;
    const char *bad = NULL;
    char sub[160];
    if (r == 0)
        bad = "must be an object";
    else if (in.trace.t != 's' || !otlp_parse_id(in.trace.s, out->trace_id, 16))
        bad = "traceId: expected 32 hex digits or base64 of 16 bytes, not all zero";
    else if (in.span.t != 's' || !otlp_parse_id(in.span.s, out->span_id, 8))
        bad = "spanId: expected 16 hex digits or base64 of 8 bytes, not all zero";
    else if (in.parent.t && in.parent.t != 's')
        bad = "parentSpanId must be a string";
    else if (in.parent.t && in.parent.len &&
             !(out->has_parent = otlp_parse_id(in.parent.s, out->parent_span_id, 8)))
        bad = "parentSpanId: expected 16 hex digits or base64 of 8 bytes";
    else if (in.name.t != 's')
        bad = "name: expected a string";
    else if (in.name.len > OTLP_MAX_NAME)
        bad = "name: longer than 1024 bytes";
    else if (in.kind.t && !parse_enum(&in.kind, span_kinds, 5, &out->kind))
        bad = "kind: expected 0-5 or a SPAN_KIND_* name";
    else if (!parse_time(&in.start, &out->start_ns))
        bad = "startTimeUnixNano: expected a non-negative 64-bit integer";
    else if (!parse_time(&in.end, &out->end_ns))
        bad = "endTimeUnixNano: expected a non-negative 64-bit integer";
    else if (out->end_ns < out->start_ns)
        bad = "endTimeUnixNano is before startTimeUnixNano";
    else if (in.state.t && in.state.t != 's')
        bad = "traceState: expected a string";
    else if (in.flags.t && !(out->has_flags = jv_u32(&in.flags, &out->flags)))
        bad = "flags: expected a 32-bit unsigned integer";
    else if ((in.dropped_attrs.t && !jv_u32(&in.dropped_attrs, &out->dropped_attributes)) ||
             (in.dropped_events.t && !jv_u32(&in.dropped_events, &out->dropped_events)) ||
             (in.dropped_links.t && !jv_u32(&in.dropped_links, &out->dropped_links)))
        bad = "dropped…Count: expected a 32-bit unsigned integer";
    else if (in.has_status && !in.status_obj)
        bad = "status must be an object";
    else if (in.code.t && !parse_enum(&in.code, status_codes, 2, &out->status_code))
        bad = "status.code: expected 0-2 or a STATUS_CODE_* name";
    else if (in.message.t && in.message.t != 's')
        bad = "status.message must be a string";
    else if (in.events_bad)
        bad = "events must be an array";
    else if (in.links_bad)
        bad = "links must be an array";
    else if (in.events.why)
        bad = (snprintf(sub, sizeof sub, "events[%zu].%s", in.events.index, in.events.why), sub);
    else if (in.links.why)
        bad = (snprintf(sub, sizeof sub, "links[%zu].%s", in.links.index, in.links.why), sub);
    else
        bad = in.attrs_why;
    if (bad) {
        b->n_events = first_event;
        b->n_links = first_link;
        otlp_out_reject(&d->o, "resourceSpans[%zu].scopeSpans[%zu].spans[%zu].%s", i, j, k, bad);
        return true;
    }
    out->name = in.name.s;
    out->trace_state = in.state.t && in.state.len ? in.state.s : NULL;
    out->status_message = in.message.t ? in.message.s : NULL;
    out->first_event = first_event;
    out->n_events = b->n_events - first_event;
    out->first_link = first_link;
    out->n_links = b->n_links - first_link;
    if (!otlp_out_room(&d->o, &b->spans, b->n_spans, &d->o.cap_items, sizeof *b->spans))
        return false;
    b->spans[b->n_spans++] = *out;
    return true;
}

/* ---- log records ---- */

typedef struct log_in {
    jv time, observed, severity, text, event_name, dropped, flags, trace, span;
    const char *attrs_why, *body_why;
    otlp_log out;
} log_in;

static int log_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    log_in *in = ctx;
    if (!key_is(key, kl, "body"))
        return item_attrs(d, key, kl, &in->out.attrs, &in->attrs_why);
    in->body_why = NULL;
    if (!parse_any(d, &in->out.body, &in->body_why))
        return -1;
    in->out.has_body = true;
    return 1;
}

static bool parse_log(decoder *d, size_t i, size_t j, size_t k)
{
    static const field fields[] = {
        FIELD2(log_in, "timeUnixNano", "time_unix_nano", time),
        FIELD2(log_in, "observedTimeUnixNano", "observed_time_unix_nano", observed),
        FIELD2(log_in, "severityNumber", "severity_number", severity),
        FIELD2(log_in, "severityText", "severity_text", text),
        FIELD2(log_in, "eventName", "event_name", event_name),
        FIELD2(log_in, "droppedAttributesCount", "dropped_attributes_count", dropped),
        FIELD(log_in, "flags", flags),
        FIELD2(log_in, "traceId", "trace_id", trace),
        FIELD2(log_in, "spanId", "span_id", span),
    };
    static const object_kind kind = {fields, N_OF(fields), log_member, "log record"};
    log_in in = {0};
    int r = read_object(d, &kind, &in);
    if (r < 0)
        return false;
    otlp_log *out = &in.out;
    int64_t t = 0, o = 0;
    const char *bad = NULL;
    if (r == 0)
        bad = "must be an object";
    else if (in.time.t && !parse_time(&in.time, &t))
        bad = "timeUnixNano: expected a non-negative 64-bit integer";
    else if (in.observed.t && !parse_time(&in.observed, &o))
        bad = "observedTimeUnixNano: expected a non-negative 64-bit integer";
    else if (!(out->time_ns = t ? t : o))
        bad = "timeUnixNano: missing (and no observedTimeUnixNano)";
    else if (in.severity.t && !parse_severity(&in.severity, &out->severity_number))
        bad = "severityNumber: expected 0-24 or a SEVERITY_NUMBER_* name";
    else if (in.text.t && in.text.t != 's')
        bad = "severityText must be a string";
    else if (in.event_name.t && (in.event_name.t != 's' || in.event_name.len > OTLP_MAX_NAME))
        bad = "eventName: expected a string of at most 1024 bytes";
    else if (in.dropped.t && !jv_u32(&in.dropped, &out->dropped_attributes))
        bad = "droppedAttributesCount: expected a 32-bit unsigned integer";
    else if (in.flags.t && !(out->has_flags = jv_u32(&in.flags, &out->flags)))
        bad = "flags: expected a 32-bit unsigned integer";
    else if (!optional_id(&in.trace, out->trace_id, 16, &out->has_trace_id))
        bad = "traceId: expected 32 hex digits or base64 of 16 bytes, not all zero";
    else if (!optional_id(&in.span, out->span_id, 8, &out->has_span_id))
        bad = "spanId: expected 16 hex digits or base64 of 8 bytes, not all zero";
    else
        bad = in.body_why ? in.body_why : in.attrs_why;
    if (bad) {
        otlp_out_reject(&d->o, "resourceLogs[%zu].scopeLogs[%zu].logRecords[%zu].%s", i, j, k, bad);
        return true;
    }
    out->observed_ns = o;
    out->severity_text = in.text.t ? in.text.s : NULL;
    out->event_name = in.event_name.t && in.event_name.len ? in.event_name.s : NULL;
    otlp_batch *b = d->o.b;
    if (!otlp_out_room(&d->o, &b->logs, b->n_logs, &d->o.cap_items, sizeof *b->logs))
        return false;
    b->logs[b->n_logs++] = *out;
    return true;
}

/* ---- metrics ---- */

static const struct {
    const char *field, *snake, *type;
    bool histogram;
} metric_kinds[] = {
    {"gauge", "gauge", "gauge", false},
    {"sum", "sum", "sum", false},
    {"histogram", "histogram", "histogram", true},
    {"exponentialHistogram", "exponential_histogram", "exponential_histogram", true},
    {"summary", "summary", "summary", true},
};
#define N_METRIC_KINDS (sizeof metric_kinds / sizeof metric_kinds[0])
enum { MK_GAUGE, MK_SUM, MK_HISTOGRAM, MK_EXPONENTIAL, MK_SUMMARY };

/* A JSON array of numbers, copied into the batch's pool. */
typedef struct nums_in {
    bool doubles;
    uint64_t *u;
    double *f;
    size_t n, cap;
    bool bad;
} nums_in;

static bool num_element(decoder *d, void *ctx, size_t index)
{
    nums_in *l = ctx;
    jv x;
    (void)index;
    if (!read_value(&d->r, &x))
        return false;
    if (!(l->doubles ? ARRAY_GROW(l->f, l->cap, l->n + 1, 16) : ARRAY_GROW(l->u, l->cap, l->n + 1, 16))) {
        d->o.oom = true;
        return false;
    }
    int64_t v;
    if (l->doubles)
        l->bad |= !jv_double(&x, &l->f[l->n]);
    else if (jv_int64(&x, &v) && v >= 0)
        l->u[l->n] = (uint64_t)v;
    else if (x.t == 's' && x.len && strspn(x.s, "0123456789") == x.len && x.len <= 20 &&
             (errno = 0, l->u[l->n] = strtoull(x.s, NULL, 10), errno == 0))
        ; /* an unsigned 64-bit count above INT64_MAX */
    else
        l->bad = true;
    l->n++;
    return true;
}

/* Reads the array at the position into *ret (in the pool): 1 read, 0 not an
 * array or an element of the wrong type (*why set), -1 on a syntax error or
 * out of memory. */
static int read_nums(decoder *d, bool doubles, const void **ret, size_t *ret_n)
{
    nums_in l = {.doubles = doubles};
    int r = read_array(d, num_element, &l);
    void *tmp = doubles ? (void *)l.f : (void *)l.u;
    if (r > 0 && !l.bad && l.n) {
        void *p = otlp_batch_alloc(d->o.b, l.n * 8);
        if (!p) {
            d->o.oom = true;
            r = -1;
        } else {
            memcpy(p, tmp, l.n * 8);
            *ret = p;
            *ret_n = l.n;
        }
    } else if (r > 0 && !l.bad) {
        *ret = NULL;
        *ret_n = 0;
    }
    free(tmp);
    if (r > 0 && l.bad)
        return 0;
    return r;
}

typedef struct buckets_in {
    jv offset;
    bool bad;
    otlp_buckets *out;
} buckets_in;

static int buckets_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    buckets_in *in = ctx;
    if (!key_is2(key, kl, "bucketCounts", "bucket_counts"))
        return 0;
    int r = read_nums(d, false, (const void **)&in->out->counts, &in->out->n);
    in->bad |= r == 0;
    return r < 0 ? -1 : 1;
}

/* One {"quantile","value"} of a summary. */
typedef struct quantiles_in {
    otlp_quantile *q;
    size_t n, cap;
    bool bad;
} quantiles_in;

typedef struct quantile_in {
    jv quantile, value;
} quantile_in;

static bool quantile_element(decoder *d, void *ctx, size_t index)
{
    static const field fields[] = {FIELD(quantile_in, "quantile", quantile), FIELD(quantile_in, "value", value)};
    static const object_kind kind = {fields, N_OF(fields), NULL, "summary quantile"};
    quantiles_in *l = ctx;
    quantile_in in = {0};
    (void)index;
    int r = read_object(d, &kind, &in);
    if (r < 0)
        return false;
    otlp_quantile q = {0, 0};
    if (r == 0 || (in.quantile.t && !jv_double(&in.quantile, &q.quantile)) ||
        (in.value.t && !jv_double(&in.value, &q.value)) || !(q.quantile >= 0 && q.quantile <= 1)) {
        l->bad = true;
        return true;
    }
    if (!ARRAY_GROW(l->q, l->cap, l->n + 1, 8)) {
        d->o.oom = true;
        return false;
    }
    l->q[l->n++] = q;
    return true;
}

typedef struct exemplar_in {
    jv time, as_double, as_int, trace, span;
    const char *attrs_why;
    otlp_exemplar out;
} exemplar_in;

static int exemplar_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    exemplar_in *in = ctx;
    if (!key_is2(key, kl, "filteredAttributes", "filtered_attributes"))
        return 0;
    in->attrs_why = NULL;
    return parse_kvs(d, true, &in->out.attrs, &in->attrs_why) ? 1 : -1;
}

static bool point_exemplar(decoder *d, void *ctx, size_t index)
{
    static const field fields[] = {
        FIELD2(exemplar_in, "timeUnixNano", "time_unix_nano", time),
        FIELD2(exemplar_in, "asDouble", "as_double", as_double),
        FIELD2(exemplar_in, "asInt", "as_int", as_int),
        FIELD2(exemplar_in, "traceId", "trace_id", trace),
        FIELD2(exemplar_in, "spanId", "span_id", span),
    };
    static const object_kind kind = {fields, N_OF(fields), exemplar_member, "exemplar"};
    sub_in *l = ctx;
    exemplar_in in = {0};
    int r = read_object(d, &kind, &in);
    if (r < 0)
        return false;
    otlp_exemplar *out = &in.out;
    const char *bad = NULL;
    if (r == 0)
        bad = "must be an object";
    else if (in.time.t && !parse_time(&in.time, &out->time_ns))
        bad = "timeUnixNano: expected a non-negative 64-bit integer";
    else if (in.as_double.t && !jv_double(&in.as_double, &out->d))
        bad = "asDouble: expected a number";
    else if (!in.as_double.t && in.as_int.t && !(out->is_int = jv_int64(&in.as_int, &out->i)))
        bad = "asInt: expected a 64-bit integer";
    else if (!optional_id(&in.trace, out->trace_id, 16, &out->has_trace_id))
        bad = "traceId: expected 32 hex digits or base64 of 16 bytes";
    else if (!optional_id(&in.span, out->span_id, 8, &out->has_span_id))
        bad = "spanId: expected 16 hex digits or base64 of 8 bytes";
    else
        bad = in.attrs_why;
    if (bad) {
        sub_note(l, bad, index);
        return true;
    }
    otlp_batch *b = d->o.b;
    if (!otlp_out_room(&d->o, &b->exemplars, b->n_exemplars, &d->o.cap_exemplars, sizeof *b->exemplars))
        return false;
    b->exemplars[b->n_exemplars++] = *out;
    return true;
}

typedef struct point_in {
    jv time, start, flags, count, sum, as_double, as_int, min, max, scale, zero_count, zero_threshold;
    const char *attrs_why;
    bool counts_bad, bounds_bad, quantiles_bad, buckets_bad, exemplars_bad;
    buckets_in pos, neg;
    quantiles_in quantiles;
    sub_in exemplars;
    otlp_point out;
} point_in;

static int point_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    static const field bucket_fields[] = {FIELD(buckets_in, "offset", offset)};
    static const object_kind buckets = {bucket_fields, N_OF(bucket_fields), buckets_member, "buckets"};
    point_in *in = ctx;
    otlp_point *out = &in->out;
    int r;
    if (key_is2(key, kl, "bucketCounts", "bucket_counts")) {
        r = read_nums(d, false, (const void **)&out->bucket_counts, &out->n_bucket_counts);
        in->counts_bad |= r == 0;
    } else if (key_is2(key, kl, "explicitBounds", "explicit_bounds")) {
        r = read_nums(d, true, (const void **)&out->bounds, &out->n_bounds);
        in->bounds_bad |= r == 0;
    } else if (key_is(key, kl, "positive") || key_is(key, kl, "negative")) {
        buckets_in *bi = key[0] == 'p' ? &in->pos : &in->neg;
        bi->out = key[0] == 'p' ? &out->positive : &out->negative;
        r = read_object(d, &buckets, bi);
        in->buckets_bad |= r == 0;
    } else if (key_is2(key, kl, "quantileValues", "quantile_values")) {
        r = read_array(d, quantile_element, &in->quantiles);
        in->quantiles_bad |= r == 0;
    } else if (key_is(key, kl, "exemplars")) {
        r = read_array(d, point_exemplar, &in->exemplars);
        in->exemplars_bad |= r == 0;
    } else {
        return item_attrs(d, key, kl, &out->attrs, &in->attrs_why);
    }
    return r < 0 ? -1 : 1;
}

static bool parse_point(decoder *d, size_t kind, size_t i, size_t j, size_t k, size_t m)
{
    static const field fields[] = {
        FIELD2(point_in, "timeUnixNano", "time_unix_nano", time),
        FIELD2(point_in, "startTimeUnixNano", "start_time_unix_nano", start),
        FIELD(point_in, "flags", flags),
        FIELD(point_in, "count", count),
        FIELD(point_in, "sum", sum),
        FIELD(point_in, "min", min),
        FIELD(point_in, "max", max),
        FIELD2(point_in, "asDouble", "as_double", as_double),
        FIELD2(point_in, "asInt", "as_int", as_int),
        FIELD(point_in, "scale", scale),
        FIELD2(point_in, "zeroCount", "zero_count", zero_count),
        FIELD2(point_in, "zeroThreshold", "zero_threshold", zero_threshold),
    };
    static const object_kind point = {fields, N_OF(fields), point_member, "data point"};
    otlp_batch *b = d->o.b;
    size_t first_exemplar = b->n_exemplars;
    point_in in = {0};
    int r = read_object(d, &point, &in);
    if (r < 0) {
        free(in.quantiles.q);
        return false;
    }
    otlp_point *out = &in.out;
    const char *bad = NULL;
    char sub[160];
    int64_t iv;
    out->count = -1;
    if (r == 0)
        bad = "must be an object";
    else if (!parse_time(&in.time, &out->time_ns) || out->time_ns == 0)
        bad = "timeUnixNano: expected a positive 64-bit integer";
    else if (in.start.t && !parse_time(&in.start, &out->start_ns))
        bad = "startTimeUnixNano: expected a non-negative 64-bit integer";
    else if (in.flags.t && !jv_u32(&in.flags, &out->flags))
        bad = "flags: expected a 32-bit unsigned integer";
    else if (in.exemplars_bad)
        bad = "exemplars must be an array";
    else if (in.exemplars.why)
        bad = (snprintf(sub, sizeof sub, "exemplars[%zu].%s", in.exemplars.index, in.exemplars.why), sub);
    else if (metric_kinds[kind].histogram) {
        if (!jv_int64(&in.count, &out->count) || out->count < 0)
            bad = "count: expected a non-negative 64-bit integer";
        else if (in.sum.t && !(out->has_sum = jv_double(&in.sum, &out->sum)))
            bad = "sum must be a number";
        else if (in.min.t && !(out->has_min = jv_double(&in.min, &out->min)))
            bad = "min must be a number";
        else if (in.max.t && !(out->has_max = jv_double(&in.max, &out->max)))
            bad = "max must be a number";
        else if (in.counts_bad)
            bad = "bucketCounts: expected an array of non-negative 64-bit integers";
        else if (in.bounds_bad)
            bad = "explicitBounds: expected an array of numbers";
        else if (kind == MK_HISTOGRAM && out->n_bucket_counts && out->n_bucket_counts != out->n_bounds + 1)
            bad = "bucketCounts must have one more element than explicitBounds";
        else if (in.buckets_bad || in.pos.bad || in.neg.bad)
            bad = "positive, negative: expected {\"offset\": integer, \"bucketCounts\": [integers]}";
        else if ((in.pos.offset.t && (!jv_int64(&in.pos.offset, &iv) || iv < INT32_MIN || iv > INT32_MAX ||
                                      !((out->positive.offset = (int32_t)iv), true))) ||
                 (in.neg.offset.t && (!jv_int64(&in.neg.offset, &iv) || iv < INT32_MIN || iv > INT32_MAX ||
                                      !((out->negative.offset = (int32_t)iv), true))))
            bad = "offset: expected a 32-bit integer";
        else if (in.scale.t && (!jv_int64(&in.scale, &iv) || iv < -128 || iv > 128 || !((out->scale = (int32_t)iv), true)))
            bad = "scale: expected an integer in [-128, 128]";
        else if (in.zero_count.t && (!jv_int64(&in.zero_count, &iv) || iv < 0 ||
                                     !((out->zero_count = (uint64_t)iv), true)))
            bad = "zeroCount: expected a non-negative 64-bit integer";
        else if (in.zero_threshold.t && !jv_double(&in.zero_threshold, &out->zero_threshold))
            bad = "zeroThreshold must be a number";
        else if (in.quantiles_bad || in.quantiles.bad)
            bad = "quantileValues: expected [{\"quantile\": 0…1, \"value\": number}]";
        else
            out->value = out->has_sum ? out->sum : 0;
    } else if (in.as_double.t) {
        if (!jv_double(&in.as_double, &out->value))
            bad = "asDouble: expected a number, or \"NaN\", \"Infinity\", \"-Infinity\"";
    } else if (in.as_int.t) {
        if (!jv_int64(&in.as_int, &out->int_value))
            bad = "asInt: expected a 64-bit integer";
        out->is_int = true;
        out->value = (double)out->int_value;
    } else if (!(out->flags & 1)) { /* FLAG_NO_RECORDED_VALUE: no value is right */
        bad = "expected asDouble (a number) or asInt (a 64-bit integer)";
    } else {
        out->value = NAN;
    }
    if (!bad)
        bad = in.attrs_why;
    if (bad) {
        free(in.quantiles.q);
        b->n_exemplars = first_exemplar;
        otlp_out_reject(&d->o, "resourceMetrics[%zu].scopeMetrics[%zu].metrics[%zu].%s.dataPoints[%zu].%s", i, j, k,
               metric_kinds[kind].field, m, bad);
        return true;
    }
    if (in.quantiles.n) {
        otlp_quantile *q = otlp_batch_alloc(b, in.quantiles.n * sizeof *q);
        if (!q) {
            free(in.quantiles.q);
            d->o.oom = true;
            return false;
        }
        memcpy(q, in.quantiles.q, in.quantiles.n * sizeof *q);
        out->quantiles = q;
        out->n_quantiles = in.quantiles.n;
    }
    free(in.quantiles.q);
    out->type = metric_kinds[kind].type;
    out->temporality = out->monotonic = -1;
    out->first_exemplar = first_exemplar;
    out->n_exemplars = b->n_exemplars - first_exemplar;
    if (!otlp_out_room(&d->o, &b->points, b->n_points, &d->o.cap_items, sizeof *b->points))
        return false;
    b->points[b->n_points++] = *out;
    return true;
}

typedef struct metric_in {
    size_t i, j, k;
    otlp_mark m0;
    jv name, unit, description;
    jv temporality, monotonic; /* of the data kind that counts */
    long kind; /* index in metric_kinds, or -1 */
    bool data_bad, several; /* several: more than one data kind (a oneof) */
} metric_in;

static bool metric_point(decoder *d, void *ctx, size_t index)
{
    metric_in *in = ctx;
    return parse_point(d, (size_t)in->kind, in->i, in->j, in->k, index);
}

/* A member of {"dataPoints":[…], "aggregationTemporality", "isMonotonic"}. */
static int metric_data_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    metric_in *in = ctx;
    if (!key_is2(key, kl, "dataPoints", "data_points"))
        return 0;
    int r = read_array(d, metric_point, in);
    if (r == 0)
        in->data_bad = true;
    return r < 0 ? -1 : 1;
}

static int metric_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    static const field data_fields[] = {
        FIELD2(metric_in, "aggregationTemporality", "aggregation_temporality", temporality),
        FIELD2(metric_in, "isMonotonic", "is_monotonic", monotonic),
    };
    static const object_kind data = {data_fields, N_OF(data_fields), metric_data_member, "metric's data"};
    metric_in *in = ctx;
    long kd = -1;
    for (size_t x = 0; x < N_METRIC_KINDS && kd < 0; x++)
        if (key_is2(key, kl, metric_kinds[x].field, metric_kinds[x].snake))
            kd = (long)x;
    if (kd < 0)
        return 0;
    if (in->kind >= 0)
        in->several = true; /* rejected at the end: which one was meant? */
    otlp_out_restore(&d->o, in->m0);
    in->kind = kd;
    in->data_bad = false;
    in->temporality.t = in->monotonic.t = 0;
    int r = read_object(d, &data, in);
    if (r == 0)
        in->data_bad = true;
    return r < 0 ? -1 : 1;
}

static const char *const temporalities[] = {"AGGREGATION_TEMPORALITY_UNSPECIFIED", "AGGREGATION_TEMPORALITY_DELTA",
                                            "AGGREGATION_TEMPORALITY_CUMULATIVE"};

/* One metric: its points are decoded as they come and given the metric's
 * name, unit and type at its end, or rolled back when the metric is bad.
 * A metric with several data kinds is rejected (they are a oneof). */
static bool parse_metric(decoder *d, size_t i, size_t j, size_t k)
{
    static const field fields[] = {FIELD(metric_in, "name", name), FIELD(metric_in, "unit", unit),
                                   FIELD(metric_in, "description", description)};
    static const object_kind metric = {fields, N_OF(fields), metric_member, "metric"};
    metric_in in = {.i = i, .j = j, .k = k, .m0 = otlp_out_mark(&d->o), .kind = -1};
    int r = read_object(d, &metric, &in);
    if (r < 0)
        return false;
    int temporality = -1, monotonic = -1;
    if (r == 0 || in.name.t != 's' || in.name.len > OTLP_MAX_NAME || (in.unit.t && in.unit.t != 's') ||
        (in.description.t && in.description.t != 's')) {
        otlp_out_restore(&d->o, in.m0);
        otlp_out_reject(&d->o, "resourceMetrics[%zu].scopeMetrics[%zu].metrics[%zu]: expected a string name (at most 1024 "
                  "bytes), unit and description", i, j, k);
        return true;
    }
    if (in.kind < 0 || in.data_bad || in.several) {
        otlp_out_restore(&d->o, in.m0);
        otlp_out_reject(&d->o, "resourceMetrics[%zu].scopeMetrics[%zu].metrics[%zu]: expected %s of gauge, sum, "
                  "histogram, exponentialHistogram, summary with a \"dataPoints\" array", i, j, k,
               in.several ? "only one" : "one");
        return true;
    }
    if ((in.kind == MK_SUM || in.kind == MK_HISTOGRAM || in.kind == MK_EXPONENTIAL) &&
        !(in.temporality.t ? parse_enum(&in.temporality, temporalities, 2, &temporality) : (temporality = 0, true))) {
        otlp_out_restore(&d->o, in.m0);
        otlp_out_reject(&d->o, "resourceMetrics[%zu].scopeMetrics[%zu].metrics[%zu].%s.aggregationTemporality: expected 0-2 or an "
                  "AGGREGATION_TEMPORALITY_* name", i, j, k, metric_kinds[in.kind].field);
        return true;
    }
    if (in.kind == MK_SUM) {
        if (in.monotonic.t && in.monotonic.t != 'b') {
            otlp_out_restore(&d->o, in.m0);
            otlp_out_reject(&d->o, "resourceMetrics[%zu].scopeMetrics[%zu].metrics[%zu].sum.isMonotonic: expected true or false",
                   i, j, k);
            return true;
        }
        monotonic = in.monotonic.t ? in.monotonic.b : 0;
    }
    for (size_t x = in.m0.items; x < d->o.b->n_points; x++) {
        otlp_point *p = &d->o.b->points[x];
        p->name = in.name.s;
        p->unit = in.unit.t && in.unit.len ? in.unit.s : NULL;
        p->description = in.description.t && in.description.len ? in.description.s : NULL;
        p->temporality = temporality;
        p->monotonic = monotonic;
    }
    return true;
}

void otlp_batch_set_owner(otlp_batch *b, size_t from, long resource, long scope, const char *scope_name)
{
    for (size_t x = from; x < b->n_spans; x++) {
        if (resource >= 0)
            b->spans[x].resource = (uint32_t)resource;
        if (scope >= 0) {
            b->spans[x].scope = (uint32_t)scope;
            b->spans[x].scope_name = scope_name;
        }
    }
    for (size_t x = from; x < b->n_logs; x++) {
        if (resource >= 0)
            b->logs[x].resource = (uint32_t)resource;
        if (scope >= 0)
            b->logs[x].scope = (uint32_t)scope;
    }
    for (size_t x = from; x < b->n_points; x++) {
        if (resource >= 0)
            b->points[x].resource = (uint32_t)resource;
        if (scope >= 0)
            b->points[x].scope = (uint32_t)scope;
    }
}

/* One scope entry (scopeSpans[j], …). */
typedef struct scope_in {
    const signal *sg;
    size_t i, j;
    size_t *count; /* items seen under the resource */
    jv name, version, dropped, schema_url; /* scope.name (the last one) … */
    const char *attrs_why;
    otlp_attrs attrs;
    bool items_bad, scope_bad;
} scope_in;

static bool scope_item(decoder *d, void *ctx, size_t index)
{
    scope_in *in = ctx;
    if (!in->sg->item(d, in->i, in->j, index))
        return false;
    ++*in->count;
    return true;
}

/* A member of the "scope" (or "instrumentationLibrary") object. */
static int scope_attrs_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    scope_in *in = ctx;
    return item_attrs(d, key, kl, &in->attrs, &in->attrs_why);
}

static int scope_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    static const field scope_fields[] = {
        FIELD(scope_in, "name", name), FIELD(scope_in, "version", version),
        FIELD2(scope_in, "droppedAttributesCount", "dropped_attributes_count", dropped),
    };
    static const object_kind scope = {scope_fields, N_OF(scope_fields), scope_attrs_member, "scope"};
    scope_in *in = ctx;
    int r;
    if (key_is2(key, kl, in->sg->items, in->sg->items_snake)) {
        r = read_array(d, scope_item, in);
        if (r == 0)
            in->items_bad = true;
    } else if (key_is(key, kl, "scope") || key_is2(key, kl, "instrumentationLibrary", "instrumentation_library")) {
        r = read_object(d, &scope, in);
        in->scope_bad |= r == 0;
    } else if (key_is2(key, kl, "schemaUrl", "schema_url")) {
        r = read_value(&d->r, &in->schema_url) ? 1 : -1;
    } else {
        return 0;
    }
    return r < 0 ? -1 : 1;
}

static bool parse_scope(decoder *d, const signal *sg, size_t i, size_t j, size_t *count)
{
    static const object_kind kind = {NULL, 0, scope_member, "scope entry"};
    otlp_batch *b = d->o.b;
    otlp_mark m0 = otlp_out_mark(&d->o);
    scope_in in = {.sg = sg, .i = i, .j = j, .count = count};
    int r = read_object(d, &kind, &in);
    if (r < 0)
        return false;
    const char *bad = NULL;
    otlp_scope sc = {0};
    if (r == 0 || in.items_bad)
        bad = "expected an object with an array of items";
    else if (in.scope_bad)
        bad = "scope must be an object";
    else if ((in.name.t && in.name.t != 's') || (in.version.t && in.version.t != 's'))
        bad = "scope: expected a string name and version";
    else if (in.dropped.t && !jv_u32(&in.dropped, &sc.dropped_attributes))
        bad = "scope.droppedAttributesCount: expected a 32-bit unsigned integer";
    else if (in.schema_url.t && in.schema_url.t != 's')
        bad = "schemaUrl: expected a string";
    else
        bad = in.attrs_why;
    if (bad) {
        otlp_out_restore(&d->o, m0);
        if (r == 0 || in.items_bad)
            otlp_out_reject(&d->o, "%s[%zu].%s[%zu]: expected an object with a \"%s\" array", sg->list, i, sg->scopes, j,
                   sg->items);
        else
            otlp_out_reject(&d->o, "%s[%zu].%s[%zu].%s", sg->list, i, sg->scopes, j, bad);
        return true;
    }
    sc.name = in.name.t && in.name.len ? in.name.s : NULL;
    sc.version = in.version.t && in.version.len ? in.version.s : NULL;
    sc.schema_url = in.schema_url.t && in.schema_url.len ? in.schema_url.s : NULL;
    sc.attrs = in.attrs;
    if (!otlp_out_room(&d->o, &b->scopes, b->n_scopes, &d->o.cap_scopes, sizeof *b->scopes))
        return false;
    b->scopes[b->n_scopes] = sc;
    otlp_batch_set_owner(d->o.b, m0.items, -1, (long)b->n_scopes++, sc.name);
    return true;
}

/* One resource entry (resourceSpans[i], …). */
typedef struct entry_in {
    const signal *sg;
    size_t i;
    const char *why; /* the first reason the resource is invalid */
    otlp_attrs attrs;
    jv dropped, schema_url;
    size_t count; /* items seen under it */
    bool scopes_bad;
} entry_in;

/* A member of "resource": its attributes (unlike an item's, the first
 * reason of any of them counts). */
static int resource_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    entry_in *in = ctx;
    if (!key_is(key, kl, "attributes"))
        return 0;
    return parse_kvs(d, true, &in->attrs, &in->why) ? 1 : -1;
}

static bool entry_scope(decoder *d, void *ctx, size_t index)
{
    entry_in *in = ctx;
    return parse_scope(d, in->sg, in->i, index, &in->count);
}

static int entry_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    static const field resource_fields[] = {
        FIELD2(entry_in, "droppedAttributesCount", "dropped_attributes_count", dropped),
    };
    static const object_kind resource = {resource_fields, N_OF(resource_fields), resource_member, "resource"};
    entry_in *in = ctx;
    const signal *sg = in->sg;
    int r;
    if (key_is(key, kl, "resource")) {
        r = read_object(d, &resource, in);
        if (r == 0)
            otlp_out_why(&in->why, "resource must be an object");
    } else if (key_is2(key, kl, sg->scopes, sg->scopes_snake) ||
               key_is2(key, kl, sg->old_scopes, sg->old_scopes_snake)) {
        r = read_array(d, entry_scope, in);
        if (r == 0)
            in->scopes_bad = true;
    } else if (key_is2(key, kl, "schemaUrl", "schema_url")) {
        r = read_value(&d->r, &in->schema_url) ? 1 : -1;
    } else {
        return 0;
    }
    return r < 0 ? -1 : 1;
}

static bool parse_entry(decoder *d, const signal *sg, size_t i)
{
    static const object_kind kind = {NULL, 0, entry_member, "resource entry"};
    otlp_batch *b = d->o.b;
    otlp_mark m0 = otlp_out_mark(&d->o);
    entry_in in = {.sg = sg, .i = i, .attrs.first = b->n_kvs};
    int r = read_object(d, &kind, &in);
    if (r < 0)
        return false;
    uint32_t dropped = 0;
    if (r == 0)
        in.why = "must be an object"; /* nothing under it: rejected once */
    else if (in.dropped.t && !jv_u32(&in.dropped, &dropped))
        otlp_out_why(&in.why, "resource.droppedAttributesCount: expected a 32-bit unsigned integer");
    else if (in.schema_url.t && in.schema_url.t != 's')
        otlp_out_why(&in.why, "schemaUrl: expected a string");
    if (in.why) {
        otlp_out_restore(&d->o, m0);
        size_t n = sg->reject_each && in.count ? in.count : 1;
        for (size_t x = 0; x < n; x++)
            otlp_out_reject(&d->o, "%s[%zu]: %s", sg->list, i, in.why);
        return true;
    }
    if (in.scopes_bad) {
        otlp_out_restore(&d->o, m0);
        otlp_out_reject(&d->o, "%s[%zu].%s must be an array", sg->list, i, sg->scopes);
        return true;
    }
    if (!otlp_out_room(&d->o, &b->resources, b->n_resources, &d->o.cap_res, sizeof *b->resources))
        return false;
    otlp_resource *rs = &b->resources[b->n_resources];
    memset(rs, 0, sizeof *rs);
    rs->attrs = in.attrs;
    rs->dropped_attributes = dropped;
    rs->schema_url = in.schema_url.t && in.schema_url.len ? in.schema_url.s : NULL;
    rs->attrs.kv = in.attrs.n ? b->kvs + in.attrs.first : NULL; /* for the lookups below; set again at the end */
    otlp_value_string(otlp_attr(&rs->attrs, "service.name"), &rs->service_name);
    otlp_value_string(otlp_attr(&rs->attrs, "service.version"), &rs->service_version);
    otlp_value_string(otlp_attr(&rs->attrs, "pacer.session"), &rs->session);
    otlp_batch_set_owner(d->o.b, m0.items, (long)b->n_resources++, -1, NULL);
    return true;
}

static bool top_entry(decoder *d, void *ctx, size_t index)
{
    return parse_entry(d, ctx, index);
}

/* A member of the request body: the signal's list, which must be an array. */
static int top_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    const signal *sg = ctx;
    if (!key_is2(key, kl, sg->list, sg->list_snake))
        return 0;
    int r = read_array(d, top_entry, ctx);
    if (r == 0 && !d->shape) {
        snprintf(d->shape_buf, sizeof d->shape_buf, "\"%s\" must be an array", sg->list);
        d->shape = d->shape_buf;
    }
    return r < 0 ? -1 : 1;
}

static int decode(const char *body, size_t len, otlp_batch *b, const signal *sg, char *err, size_t err_size)
{
    static const object_kind top = {NULL, 0, top_member, "request"};
    decoder d = {.o = {.b = b}};
    b->text = malloc(len + 1);
    if (!b->text) {
        d.o.oom = true;
        return otlp_out_end(&d.o, NULL, NULL, err, err_size);
    }
    memcpy(b->text, body, len);
    jread *r = &d.r;
    jread_init(r, b->text, len, body, JREAD_NO_NUL | JREAD_NUMBERS_IN_RANGE);
    jtype t = jread_peek(r);
    if (t == JT_OBJECT) {
        read_object(&d, &top, (void *)sg); /* a failure is in r or d.o.oom */
    } else if (t == JT_ARRAY) {
        skip(r);
        snprintf(d.shape_buf, sizeof d.shape_buf, "the request body must be a JSON object with \"%s\"", sg->list);
        d.shape = d.shape_buf;
    } else {
        jread_fail(r, r->pos, r->pos >= len ? "expected '[' or '{', not the end of the input" : "expected '[' or '{'");
    }
    if (!d.o.oom)
        jread_end(r, "top-level value");
    if (r->failed || d.o.oom) {
        size_t deep = json_depth_exceeded(body, len, OTLP_MAX_DEPTH);
        if (deep != (size_t)-1) {
            snprintf(err, err_size, "JSON nested deeper than %d levels at byte %zu", OTLP_MAX_DEPTH, deep);
            otlp_batch_clear(b);
            return -EBADMSG;
        }
    }
    if (r->failed && !d.o.oom) {
        snprintf(err, err_size, "invalid JSON at byte %zu: %s", r->error_at, r->message);
        otlp_batch_clear(b);
        return -EBADMSG;
    }
    return otlp_out_end(&d.o, d.shape, d.has_ignore ? d.ignore_msg : NULL, err, err_size);
}

int otlp_decode_traces(const char *body, size_t len, otlp_batch *b, char *err, size_t err_size)
{
    static const signal sg = {"resourceSpans", "resource_spans", "scopeSpans", "scope_spans",
                              "instrumentationLibrarySpans", "instrumentation_library_spans", "spans", "spans",
                              true, parse_span};
    return decode(body, len, b, &sg, err, err_size);
}

int otlp_decode_logs(const char *body, size_t len, otlp_batch *b, char *err, size_t err_size)
{
    static const signal sg = {"resourceLogs", "resource_logs", "scopeLogs", "scope_logs",
                              "instrumentationLibraryLogs", "instrumentation_library_logs", "logRecords", "log_records",
                              true, parse_log};
    return decode(body, len, b, &sg, err, err_size);
}

int otlp_decode_metrics(const char *body, size_t len, otlp_batch *b, char *err, size_t err_size)
{
    static const signal sg = {"resourceMetrics", "resource_metrics", "scopeMetrics", "scope_metrics",
                              "instrumentationLibraryMetrics", "instrumentation_library_metrics", "metrics", "metrics",
                              false, parse_metric};
    return decode(body, len, b, &sg, err, err_size);
}
