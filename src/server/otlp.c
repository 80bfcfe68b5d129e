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
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
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

static bool jv_int64(const jv *v, int64_t *ret)
{
    if (v->t == 'i') {
        *ret = v->i;
        return true;
    }
    return v->t == 's' && otlp_parse_int64(v->s, v->len, ret);
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

static bool grow(void **arr, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 64;
    void *p = realloc(*arr, c * size);
    if (!p)
        return false;
    *arr = p;
    *cap = c;
    return true;
}

typedef struct decoder {
    jread r;     /* over the batch's copy of the body; r.src is the body */
    otlp_batch *b;
    size_t cap_res, cap_items, cap_kvs;
    bool oom;
    const char *shape; /* the first wrong shape of a list (whole request) */
    char shape_buf[160];
    char msg[512];     /* the first rejection's reason */
    bool has_msg;
} decoder;

/* Where to roll back to. */
typedef struct mark {
    size_t items, rejected;
    bool has_msg;
} mark;

static size_t n_items(const decoder *d)
{
    return d->b->n_spans + d->b->n_logs + d->b->n_points; /* one kind per batch */
}

static mark mark_take(const decoder *d)
{
    return (mark){n_items(d), d->b->rejected, d->has_msg};
}

static void mark_restore(decoder *d, mark m)
{
    otlp_batch *b = d->b;
    if (b->spans)
        b->n_spans = m.items;
    else if (b->logs)
        b->n_logs = m.items;
    else if (b->points)
        b->n_points = m.items;
    b->rejected = m.rejected;
    d->has_msg = m.has_msg;
}

static void reject(decoder *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reject(decoder *d, const char *fmt, ...)
{
    d->b->rejected++;
    if (d->has_msg)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    va_end(ap);
    d->has_msg = true;
}

void otlp_batch_clear(otlp_batch *b)
{
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
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Reads the member `key` (the reader at its value) into ctx: 1 read, 0 not
 * one of its own (the caller skips it), -1 on a syntax error or out of
 * memory. */
typedef int member_fn(decoder *d, void *ctx, const char *key, size_t kl);

typedef struct object_kind {
    const field *fields;
    size_t n_fields;
    member_fn *more; /* or NULL */
} object_kind;

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
        if (done == 0)
            done = skip(p) ? 1 : -1;
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

/* Room for one more entry in *arr; false (out of memory, noted) if none. */
static bool room(decoder *d, void **arr, size_t n, size_t *cap, size_t size)
{
    if (grow(arr, n, cap, size))
        return true;
    d->oom = true;
    return false;
}

/* Keeps the first reason. */
static void first_why(const char **why, const char *w)
{
    if (w && !*why)
        *why = w;
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
    first_why(l->bad, w);
    return true;
}

static int any_list_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    any_list *l = ctx;
    if (!key_is(key, kl, "values"))
        return 0;
    if (jread_peek(&d->r) != JT_ARRAY) {
        first_why(l->bad, l->shape);
        return skip(&d->r) ? 1 : -1;
    }
    if (l->kv) {
        otlp_attrs nested;
        const char *w = NULL;
        if (!parse_kvs(d, false, &nested, &w))
            return -1;
        first_why(l->bad, w);
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
    static const object_kind list_kind = {NULL, 0, any_list_member};
    any_in *in = ctx;
    otlp_value *out = in->out;
    otlp_value_type t;
    if (key_is(key, kl, "arrayValue") || key_is(key, kl, "kvlistValue")) {
        bool kv = key[0] == 'k';
        t = kv ? OTLP_KVLIST : OTLP_ARRAY;
        any_list l = {kv, kv ? "kvlistValue must be {\"values\":[…]}" : "arrayValue must be {\"values\":[…]}",
                      &in->bad};
        int r = read_object(d, &list_kind, &l);
        if (r < 0)
            return -1;
        if (r == 0)
            first_why(&in->bad, l.shape);
    } else {
        jv x;
        if (!read_value(&d->r, &x))
            return -1;
        const char *w = NULL;
        if (key_is(key, kl, "stringValue")) {
            t = OTLP_STRING;
            if (x.t != 's')
                w = "stringValue must be a string";
            out->s = x.s;
            out->len = x.len;
        } else if (key_is(key, kl, "boolValue")) {
            t = OTLP_BOOL;
            if (x.t != 'b')
                w = "boolValue must be true or false";
            out->b = x.b;
        } else if (key_is(key, kl, "intValue")) {
            t = OTLP_INT;
            if (!jv_int64(&x, &out->i))
                w = "intValue must be a 64-bit integer (number or decimal string)";
        } else if (key_is(key, kl, "doubleValue")) {
            t = OTLP_DOUBLE;
            if (x.t != 'i' && x.t != 'd')
                w = "doubleValue must be a number";
            out->d = x.d;
        } else if (key_is(key, kl, "bytesValue")) {
            t = OTLP_BYTES;
            if (x.t != 's')
                w = "bytesValue must be a base64 string";
            out->s = x.s;
            out->len = x.len;
        } else {
            return 1; /* unknown members are ignored (already read) */
        }
        first_why(&in->bad, w);
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
    static const object_kind kind = {NULL, 0, any_member};
    jread *p = &d->r;
    memset(out, 0, sizeof *out);
    size_t start;
    any_in in = {out, 0, NULL};
    int r = read_object_at(d, &kind, &in, &start);
    if (r < 0)
        return false;
    if (r == 0) {
        first_why(why, "a value must be an object (AnyValue)");
        return true;
    }
    if (!in.bad && (in.kinds & (in.kinds - 1)))
        in.bad = "a value holds more than one of stringValue, intValue, …";
    first_why(why, in.bad);
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
    static const object_kind kind = {fields, N_OF(fields), kv_member};
    kvs_in *l = ctx;
    jread *p = &d->r;
    otlp_batch *b = d->b;
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
        first_why(l->why, bad);
        return true;
    }
    if (!l->keep || *l->why)
        return true;
    if (!room(d, (void **)&b->kvs, b->n_kvs, &d->cap_kvs, sizeof *b->kvs))
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
    ret->first = d->b->n_kvs;
    size_t start;
    kvs_in l = {keep, why};
    int r = read_array_at(d, kvs_element, &l, &start);
    if (r < 0)
        return false;
    if (r == 0) {
        first_why(why, "attributes must be an array of {\"key\",\"value\"}");
        return true;
    }
    ret->n = d->b->n_kvs - ret->first;
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

bool otlp_value_bool(const otlp_value *v, bool *ret)
{
    if (!v || v->type != OTLP_BOOL)
        return false;
    *ret = v->b;
    return true;
}

/* ---- the OTLP shape ---- */

/* What differs between /v1/traces, /v1/logs and /v1/metrics. */
typedef struct signal {
    const char *list, *scopes, *items; /* "resourceSpans", "scopeSpans", "spans" */
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

/* Each item parser reads its object into a struct of jvs, then checks the
 * fields in a fixed order; "must be an object" and every reason are
 * reported under the item's JSON path. */

typedef struct span_in {
    jv trace, span, parent, name, kind, start, end;
    jv code, message; /* status.code, status.message */
    bool has_status, status_obj;
    const char *attrs_why;
    otlp_span out;
} span_in;

static int span_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    static const field status_fields[] = {FIELD(span_in, "code", code), FIELD(span_in, "message", message)};
    static const object_kind status = {status_fields, N_OF(status_fields), NULL};
    span_in *in = ctx;
    if (!key_is(key, kl, "status"))
        return item_attrs(d, key, kl, &in->out.attrs, &in->attrs_why);
    in->has_status = true;
    in->code.t = in->message.t = 0;
    int r = read_object(d, &status, in);
    in->status_obj = r > 0;
    return r < 0 ? -1 : 1;
}

static bool parse_span(decoder *d, size_t i, size_t j, size_t k)
{
    static const field fields[] = {
        FIELD(span_in, "traceId", trace),
        FIELD(span_in, "spanId", span),
        FIELD(span_in, "parentSpanId", parent),
        FIELD(span_in, "name", name),
        FIELD(span_in, "kind", kind),
        FIELD(span_in, "startTimeUnixNano", start),
        FIELD(span_in, "endTimeUnixNano", end),
    };
    static const object_kind kind = {fields, N_OF(fields), span_member};
    span_in in = {.status_obj = true};
    int r = read_object(d, &kind, &in);
    if (r < 0)
        return false;
    otlp_span *out = &in.out;
    const char *bad = NULL;
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
    else if (in.has_status && !in.status_obj)
        bad = "status must be an object";
    else if (in.code.t && !parse_enum(&in.code, status_codes, 2, &out->status_code))
        bad = "status.code: expected 0-2 or a STATUS_CODE_* name";
    else if (in.message.t && in.message.t != 's')
        bad = "status.message must be a string";
    else
        bad = in.attrs_why;
    if (bad) {
        reject(d, "resourceSpans[%zu].scopeSpans[%zu].spans[%zu].%s", i, j, k, bad);
        return true;
    }
    out->name = in.name.s;
    out->status_message = in.message.t ? in.message.s : NULL;
    otlp_batch *b = d->b;
    if (!room(d, (void **)&b->spans, b->n_spans, &d->cap_items, sizeof *b->spans))
        return false;
    b->spans[b->n_spans++] = *out;
    return true;
}

typedef struct log_in {
    jv time, observed, severity, text;
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
        FIELD(log_in, "timeUnixNano", time),
        FIELD(log_in, "observedTimeUnixNano", observed),
        FIELD(log_in, "severityNumber", severity),
        FIELD(log_in, "severityText", text),
    };
    static const object_kind kind = {fields, N_OF(fields), log_member};
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
    else
        bad = in.body_why ? in.body_why : in.attrs_why;
    if (bad) {
        reject(d, "resourceLogs[%zu].scopeLogs[%zu].logRecords[%zu].%s", i, j, k, bad);
        return true;
    }
    out->severity_text = in.text.t ? in.text.s : NULL;
    otlp_batch *b = d->b;
    if (!room(d, (void **)&b->logs, b->n_logs, &d->cap_items, sizeof *b->logs))
        return false;
    b->logs[b->n_logs++] = *out;
    return true;
}

static const struct {
    const char *field, *type;
    bool histogram;
} metric_kinds[] = {
    {"gauge", "gauge", false},
    {"sum", "sum", false},
    {"histogram", "histogram", true},
    {"exponentialHistogram", "exponential_histogram", true},
    {"summary", "summary", true},
};
#define N_METRIC_KINDS (sizeof metric_kinds / sizeof metric_kinds[0])

typedef struct point_in {
    jv time, count, sum, as_double, as_int;
    const char *attrs_why;
    otlp_point out;
} point_in;

static int point_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    point_in *in = ctx;
    return item_attrs(d, key, kl, &in->out.attrs, &in->attrs_why);
}

static bool parse_point(decoder *d, size_t kind, size_t i, size_t j, size_t k, size_t m)
{
    static const field fields[] = {
        FIELD(point_in, "timeUnixNano", time),
        FIELD(point_in, "count", count),
        FIELD(point_in, "sum", sum),
        FIELD(point_in, "asDouble", as_double),
        FIELD(point_in, "asInt", as_int),
    };
    static const object_kind point = {fields, N_OF(fields), point_member};
    point_in in = {0};
    int r = read_object(d, &point, &in);
    if (r < 0)
        return false;
    otlp_point *out = &in.out;
    const char *bad = NULL;
    int64_t iv;
    out->count = -1;
    if (r == 0)
        bad = "must be an object";
    else if (!parse_time(&in.time, &out->time_ns) || out->time_ns == 0)
        bad = "timeUnixNano: expected a positive 64-bit integer";
    else if (metric_kinds[kind].histogram) {
        if (!jv_int64(&in.count, &out->count) || out->count < 0)
            bad = "count: expected a non-negative 64-bit integer";
        else if (in.sum.t && in.sum.t != 'i' && in.sum.t != 'd')
            bad = "sum must be a number";
        else
            out->value = in.sum.t ? in.sum.d : 0;
    } else if (in.as_double.t == 'i' || in.as_double.t == 'd') {
        out->value = in.as_double.d;
    } else if (!in.as_double.t && in.as_int.t && jv_int64(&in.as_int, &iv)) {
        out->value = (double)iv;
    } else {
        bad = "expected asDouble (a number) or asInt (a 64-bit integer)";
    }
    if (!bad && !isfinite(out->value))
        bad = "the value is not finite";
    if (!bad)
        bad = in.attrs_why;
    if (bad) {
        reject(d, "resourceMetrics[%zu].scopeMetrics[%zu].metrics[%zu].%s.dataPoints[%zu].%s", i, j, k,
               metric_kinds[kind].field, m, bad);
        return true;
    }
    out->type = metric_kinds[kind].type;
    otlp_batch *b = d->b;
    if (!room(d, (void **)&b->points, b->n_points, &d->cap_items, sizeof *b->points))
        return false;
    b->points[b->n_points++] = *out;
    return true;
}

typedef struct metric_in {
    size_t i, j, k;
    mark m0;
    jv name, unit;
    long kind; /* index in metric_kinds, or -1 */
    bool data_bad;
} metric_in;

static bool metric_point(decoder *d, void *ctx, size_t index)
{
    metric_in *in = ctx;
    return parse_point(d, (size_t)in->kind, in->i, in->j, in->k, index);
}

/* A member of {"dataPoints":[…]}. */
static int metric_data_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    metric_in *in = ctx;
    if (!key_is(key, kl, "dataPoints"))
        return 0;
    int r = read_array(d, metric_point, in);
    if (r == 0)
        in->data_bad = true;
    return r < 0 ? -1 : 1;
}

static int metric_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    static const object_kind data = {NULL, 0, metric_data_member};
    metric_in *in = ctx;
    long kd = -1;
    for (size_t x = 0; x < N_METRIC_KINDS && kd < 0; x++)
        if (key_is(key, kl, metric_kinds[x].field))
            kd = (long)x;
    if (kd < 0 || (in->kind >= 0 && kd >= in->kind))
        return 0;
    mark_restore(d, in->m0);
    in->kind = kd;
    in->data_bad = false;
    int r = read_object(d, &data, in);
    if (r == 0)
        in->data_bad = true;
    return r < 0 ? -1 : 1;
}

/* One metric: its points are decoded as they come and given the metric's
 * name, unit and type at its end, or rolled back when the metric is bad.
 * Of several data kinds, the first in metric_kinds counts (as before). */
static bool parse_metric(decoder *d, size_t i, size_t j, size_t k)
{
    static const field fields[] = {FIELD(metric_in, "name", name), FIELD(metric_in, "unit", unit)};
    static const object_kind metric = {fields, N_OF(fields), metric_member};
    metric_in in = {.i = i, .j = j, .k = k, .m0 = mark_take(d), .kind = -1};
    int r = read_object(d, &metric, &in);
    if (r < 0)
        return false;
    if (r == 0 || in.name.t != 's' || in.name.len > OTLP_MAX_NAME || (in.unit.t && in.unit.t != 's')) {
        mark_restore(d, in.m0);
        reject(d, "resourceMetrics[%zu].scopeMetrics[%zu].metrics[%zu]: expected a string name (at most 1024 "
                  "bytes) and unit", i, j, k);
        return true;
    }
    if (in.kind < 0 || in.data_bad) {
        mark_restore(d, in.m0);
        reject(d, "resourceMetrics[%zu].scopeMetrics[%zu].metrics[%zu]: expected one of gauge, sum, "
                  "histogram, exponentialHistogram, summary with a \"dataPoints\" array", i, j, k);
        return true;
    }
    for (size_t x = in.m0.items; x < d->b->n_points; x++) {
        d->b->points[x].name = in.name.s;
        d->b->points[x].unit = in.unit.t ? in.unit.s : NULL;
    }
    return true;
}

/* Sets the resource (and, for spans, the scope) of items [from, now). */
static void set_owner(decoder *d, size_t from, long resource, const char *scope, bool set_scope)
{
    otlp_batch *b = d->b;
    for (size_t x = from; x < b->n_spans; x++) {
        if (resource >= 0)
            b->spans[x].resource = (uint32_t)resource;
        if (set_scope)
            b->spans[x].scope = scope;
    }
    if (resource < 0)
        return;
    for (size_t x = from; x < b->n_logs; x++)
        b->logs[x].resource = (uint32_t)resource;
    for (size_t x = from; x < b->n_points; x++)
        b->points[x].resource = (uint32_t)resource;
}

/* One scope entry (scopeSpans[j], …). */
typedef struct scope_in {
    const signal *sg;
    size_t i, j;
    size_t *count; /* items seen under the resource */
    jv name;       /* scope.name (the last one) */
    bool items_bad;
} scope_in;

static bool scope_item(decoder *d, void *ctx, size_t index)
{
    scope_in *in = ctx;
    if (!in->sg->item(d, in->i, in->j, index))
        return false;
    ++*in->count;
    return true;
}

static int scope_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    static const field scope_fields[] = {FIELD(scope_in, "name", name)};
    static const object_kind scope = {scope_fields, N_OF(scope_fields), NULL};
    scope_in *in = ctx;
    int r;
    if (key_is(key, kl, in->sg->items)) {
        r = read_array(d, scope_item, in);
        if (r == 0)
            in->items_bad = true;
    } else if (key_is(key, kl, "scope")) {
        r = read_object(d, &scope, in); /* any other value: ignored */
    } else {
        return 0;
    }
    return r < 0 ? -1 : 1;
}

static bool parse_scope(decoder *d, const signal *sg, size_t i, size_t j, size_t *count)
{
    static const object_kind kind = {NULL, 0, scope_member};
    mark m0 = mark_take(d);
    scope_in in = {.sg = sg, .i = i, .j = j, .count = count};
    int r = read_object(d, &kind, &in);
    if (r < 0)
        return false;
    if (r == 0 || in.items_bad) {
        mark_restore(d, m0);
        reject(d, "%s[%zu].%s[%zu]: expected an object with a \"%s\" array", sg->list, i, sg->scopes, j, sg->items);
        return true;
    }
    set_owner(d, m0.items, -1, in.name.t == 's' ? in.name.s : NULL, true);
    return true;
}

/* One resource entry (resourceSpans[i], …). */
typedef struct entry_in {
    const signal *sg;
    size_t i;
    const char *why; /* the first reason the resource is invalid */
    otlp_attrs attrs;
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
    static const object_kind resource = {NULL, 0, resource_member};
    entry_in *in = ctx;
    int r;
    if (key_is(key, kl, "resource")) {
        r = read_object(d, &resource, in);
        if (r == 0)
            first_why(&in->why, "resource must be an object");
    } else if (key_is(key, kl, in->sg->scopes)) {
        r = read_array(d, entry_scope, in);
        if (r == 0)
            in->scopes_bad = true;
    } else {
        return 0;
    }
    return r < 0 ? -1 : 1;
}

static bool parse_entry(decoder *d, const signal *sg, size_t i)
{
    static const object_kind kind = {NULL, 0, entry_member};
    otlp_batch *b = d->b;
    mark m0 = mark_take(d);
    entry_in in = {.sg = sg, .i = i, .attrs.first = b->n_kvs};
    int r = read_object(d, &kind, &in);
    if (r < 0)
        return false;
    if (r == 0)
        in.why = "must be an object"; /* nothing under it: rejected once */
    if (in.why) {
        mark_restore(d, m0);
        size_t n = sg->reject_each && in.count ? in.count : 1;
        for (size_t x = 0; x < n; x++)
            reject(d, "%s[%zu]: %s", sg->list, i, in.why);
        return true;
    }
    if (in.scopes_bad) {
        mark_restore(d, m0);
        reject(d, "%s[%zu].%s must be an array", sg->list, i, sg->scopes);
        return true;
    }
    if (!room(d, (void **)&b->resources, b->n_resources, &d->cap_res, sizeof *b->resources))
        return false;
    otlp_resource *rs = &b->resources[b->n_resources];
    memset(rs, 0, sizeof *rs);
    rs->attrs = in.attrs;
    rs->attrs.kv = in.attrs.n ? b->kvs + in.attrs.first : NULL; /* for the lookups below; set again at the end */
    otlp_value_string(otlp_attr(&rs->attrs, "service.name"), &rs->service_name);
    otlp_value_string(otlp_attr(&rs->attrs, "service.version"), &rs->service_version);
    otlp_value_string(otlp_attr(&rs->attrs, "pacer.session"), &rs->session);
    set_owner(d, m0.items, (long)b->n_resources++, NULL, false);
    return true;
}

static void fix_attrs(otlp_batch *b, otlp_attrs *a)
{
    a->kv = a->n ? b->kvs + a->first : NULL;
}

static bool top_entry(decoder *d, void *ctx, size_t index)
{
    return parse_entry(d, ctx, index);
}

/* A member of the request body: the signal's list, which must be an array. */
static int top_member(decoder *d, void *ctx, const char *key, size_t kl)
{
    const signal *sg = ctx;
    if (!key_is(key, kl, sg->list))
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
    static const object_kind top = {NULL, 0, top_member};
    b->text = malloc(len + 1);
    if (!b->text)
        goto oom;
    memcpy(b->text, body, len);
    decoder d = {.b = b};
    jread *r = &d.r;
    jread_init(r, b->text, len, body, JREAD_NO_NUL | JREAD_NUMBERS_IN_RANGE);
    jtype t = jread_peek(r);
    if (t == JT_OBJECT) {
        read_object(&d, &top, (void *)sg); /* a failure is in r or d.oom */
    } else if (t == JT_ARRAY) {
        skip(r);
        snprintf(d.shape_buf, sizeof d.shape_buf, "the request body must be a JSON object with \"%s\"", sg->list);
        d.shape = d.shape_buf;
    } else {
        jread_fail(r, r->pos, r->pos >= len ? "expected '[' or '{', not the end of the input" : "expected '[' or '{'");
    }
    if (!d.oom)
        jread_end(r, "top-level value");
    if (r->failed || d.oom) {
        size_t deep = json_depth_exceeded(body, len, OTLP_MAX_DEPTH);
        if (deep != (size_t)-1) {
            snprintf(err, err_size, "JSON nested deeper than %d levels at byte %zu", OTLP_MAX_DEPTH, deep);
            otlp_batch_clear(b);
            return -EBADMSG;
        }
    }
    if (d.oom)
        goto oom;
    if (r->failed) {
        snprintf(err, err_size, "invalid JSON at byte %zu: %s", r->error_at, r->message);
        otlp_batch_clear(b);
        return -EBADMSG;
    }
    if (d.shape) {
        snprintf(err, err_size, "%s", d.shape);
        otlp_batch_clear(b);
        return -EBADMSG;
    }
    for (size_t x = 0; x < b->n_resources; x++)
        fix_attrs(b, &b->resources[x].attrs);
    for (size_t x = 0; x < b->n_spans; x++)
        fix_attrs(b, &b->spans[x].attrs);
    for (size_t x = 0; x < b->n_logs; x++)
        fix_attrs(b, &b->logs[x].attrs);
    for (size_t x = 0; x < b->n_points; x++)
        fix_attrs(b, &b->points[x].attrs);
    if (d.has_msg && !(b->reject_message = strdup(d.msg)))
        goto oom;
    return 0;
oom:
    otlp_batch_clear(b);
    snprintf(err, err_size, "out of memory");
    return -ENOMEM;
}

int otlp_decode_traces(const char *body, size_t len, otlp_batch *b, char *err, size_t err_size)
{
    static const signal sg = {"resourceSpans", "scopeSpans", "spans", true, parse_span};
    return decode(body, len, b, &sg, err, err_size);
}

int otlp_decode_logs(const char *body, size_t len, otlp_batch *b, char *err, size_t err_size)
{
    static const signal sg = {"resourceLogs", "scopeLogs", "logRecords", true, parse_log};
    return decode(body, len, b, &sg, err, err_size);
}

int otlp_decode_metrics(const char *body, size_t len, otlp_batch *b, char *err, size_t err_size)
{
    static const signal sg = {"resourceMetrics", "scopeMetrics", "metrics", false, parse_metric};
    return decode(body, len, b, &sg, err, err_size);
}
