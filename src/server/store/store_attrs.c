/* The one reader of stored attribute lists (store_attrs.h), their
 * canonical values and the attribute filters of the read APIs
 * (store.h, store_attrs_match). */
#include "store_attrs.h"

#include <pacer/base/hash.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t store_attrs_hash(const char *key, size_t key_len, const char *text, size_t len)
{
    uint64_t h = fnv1a64(FNV1A64_INIT, key, key_len);
    h = fnv1a64(h, "", 1);
    return fnv1a64(h, text, len) & INT64_MAX; /* an SQLite integer */
}

static void canon_double(double d, char *out, size_t size)
{
    if (isnan(d))
        snprintf(out, size, "NaN");
    else if (isinf(d))
        snprintf(out, size, d < 0 ? "-Infinity" : "Infinity");
    else if (d == floor(d) && fabs(d) < 1e15)
        snprintf(out, size, "%.0f", d);
    else
        snprintf(out, size, "%.17g", d);
}

void store_attrs_filter_text(const store_attr_filter *f, char *out, size_t size)
{
    char *end;
    errno = 0;
    long long i = strtoll(f->value, &end, 10);
    if (*f->value && !*end && !errno) {
        snprintf(out, size, "%lld", i);
        return;
    }
    double d = strtod(f->value, &end);
    if (*f->value && !*end && strspn(f->value, "+-0123456789.eE") == strlen(f->value)) {
        canon_double(d, out, size);
        return;
    }
    snprintf(out, size, "%s", f->value);
}

static bool same(const char *k, size_t kl, const char *lit)
{
    return kl == strlen(lit) && memcmp(k, lit, kl) == 0;
}

/* An integer from a JSON number or a string that is one integer. */
static bool int_of(const jvalue *v, int64_t *ret)
{
    if (v->type == JT_NUMBER)
        return jvalue_int64(v, ret);
    if (v->type != JT_STRING || !v->len)
        return false;
    char *end;
    errno = 0;
    long long x = strtoll(v->s, &end, 10);
    if (errno || end != v->s + v->len)
        return false;
    *ret = x;
    return true;
}

/* Calls fn with each member of the object at r, its value still to read:
 * fn reads it (1), leaves it to be skipped here (0) or fails (-1). False
 * on a syntax error or fn's failure. */
static bool members(jread *r, int (*fn)(void *ctx, const char *k, size_t kl, jread *r), void *ctx)
{
    const char *k;
    size_t kl;
    jvalue skip;
    if (!jread_enter_object(r))
        return false;
    int m;
    while ((m = jread_member(r, &k, &kl)) > 0) {
        int taken = fn(ctx, k, kl, r);
        if (taken < 0 || (!taken && !jread_value(r, &skip)))
            return false;
    }
    return m == 0;
}

/* A member of an array's element: its string. */
static int on_element(void *ctx, const char *k, size_t kl, jread *r)
{
    store_attr *a = ctx;
    jvalue v;
    if (!jread_value(r, &v))
        return -1;
    if (same(k, kl, "stringValue") && v.type == JT_STRING && a->n_items < STORE_ATTR_MAX_ITEMS) {
        a->items[a->n_items] = v.s;
        a->item_lens[a->n_items++] = v.len;
    }
    return 1;
}

/* A member of an ArrayValue: {"values":[{"stringValue":…},…]}. */
static int on_array(void *ctx, const char *k, size_t kl, jread *r)
{
    if (!same(k, kl, "values") || jread_peek(r) != JT_ARRAY)
        return 0;
    jread_enter_array(r);
    jvalue skip;
    while (jread_element(r) > 0)
        if (jread_peek(r) == JT_OBJECT ? !members(r, on_element, ctx) : !jread_value(r, &skip))
            return -1;
    return 1;
}

/* A member of an AnyValue: the last this reader knows is its value. */
static int on_value(void *ctx, const char *k, size_t kl, jread *r)
{
    store_attr *a = ctx;
    if (same(k, kl, "arrayValue") && jread_peek(r) == JT_OBJECT) {
        a->type = SA_ARRAY;
        return members(r, on_array, a) ? 1 : -1;
    }
    jvalue v;
    if (!jread_value(r, &v))
        return -1;
    double d;
    if (same(k, kl, "stringValue") && v.type == JT_STRING) {
        a->type = SA_STRING;
        a->text = v.s;
        a->len = v.len;
    } else if (same(k, kl, "boolValue") && (v.type == JT_TRUE || v.type == JT_FALSE)) {
        a->type = SA_BOOL;
        a->text = v.type == JT_TRUE ? "true" : "false";
        a->len = strlen(a->text);
    } else if (same(k, kl, "intValue") && int_of(&v, &a->i)) {
        a->type = SA_INT;
        snprintf(a->num, sizeof a->num, "%" PRId64, a->i);
        a->text = a->num;
        a->len = strlen(a->num);
    } else if (same(k, kl, "doubleValue") && (v.type == JT_NUMBER || v.type == JT_STRING)) {
        if (v.type == JT_NUMBER && jvalue_double(&v, &d))
            ;
        else if (v.type == JT_STRING && strcmp(v.s, "NaN") == 0)
            d = NAN;
        else if (v.type == JT_STRING && (strcmp(v.s, "Infinity") == 0 || strcmp(v.s, "-Infinity") == 0))
            d = v.s[0] == '-' ? -INFINITY : INFINITY;
        else if (v.type == JT_STRING)
            d = strtod(v.s, NULL);
        else
            return 1;
        a->type = SA_DOUBLE;
        a->d = d;
        canon_double(d, a->num, sizeof a->num);
        a->text = a->num;
        a->len = strlen(a->num);
    }
    return 1;
}

/* A member of a KeyValue: its key, its value. */
static int on_kv(void *ctx, const char *k, size_t kl, jread *r)
{
    store_attr *a = ctx;
    if (same(k, kl, "value") && jread_peek(r) == JT_OBJECT)
        return members(r, on_value, a) ? 1 : -1;
    jvalue v;
    if (!jread_value(r, &v))
        return -1;
    if (same(k, kl, "key") && v.type == JT_STRING) {
        a->key = v.s;
        a->key_len = v.len;
    }
    return 1;
}

/* The KeyValue object at r: 1 with a key and a known value, 0 without
 * (the object read whole), -1 on a syntax error. */
static int read_kv(jread *r, store_attr *ret)
{
    size_t index = ret->index;
    memset(ret, 0, offsetof(store_attr, items));
    ret->index = index;
    if (!members(r, on_kv, ret))
        return -1;
    return ret->key && ret->type != SA_OTHER;
}

bool store_attrs_read_one(jread *r, store_attr *ret)
{
    ret->index = 0;
    return read_kv(r, ret) == 1;
}

void store_attrs_read(jread *r, bool (*fn)(void *ctx, const store_attr *a), void *ctx)
{
    if (!jread_enter_array(r))
        return;
    store_attr a;
    a.index = 0;
    while (jread_element(r) > 0) {
        if (jread_peek(r) != JT_OBJECT) {
            jvalue skip;
            if (!jread_value(r, &skip))
                return;
            a.index++;
            continue;
        }
        int k = read_kv(r, &a);
        if (k < 0 || (k > 0 && !fn(ctx, &a)))
            return;
        a.index++;
    }
}

void store_attrs_each(const char *json, size_t len, bool (*fn)(void *ctx, const store_attr *a), void *ctx)
{
    if (!json || !len)
        return;
    char small[2048];
    char *buf = len < sizeof small ? small : malloc(len + 1);
    if (!buf)
        return;
    memcpy(buf, json, len);
    buf[len] = 0;
    jread r;
    jread_init(&r, buf, len, NULL, 0);
    store_attrs_read(&r, fn, ctx);
    if (buf != small)
        free(buf);
}

typedef struct strings_of {
    const char *key;
    size_t key_len;
    bool first;
    void (*fn)(void *ctx, const char *s, size_t n);
    void *ctx;
} strings_of;

static bool on_strings(void *ctx, const store_attr *a)
{
    strings_of *s = ctx;
    if (a->key_len != s->key_len || memcmp(a->key, s->key, a->key_len) != 0)
        return true;
    if (a->type == SA_STRING)
        s->fn(s->ctx, a->text, a->len);
    for (size_t i = 0; a->type == SA_ARRAY && i < a->n_items; i++)
        s->fn(s->ctx, a->items[i], a->item_lens[i]);
    return !s->first;
}

void store_attrs_strings(const char *json, size_t len, const char *key, bool first,
                        void (*fn)(void *ctx, const char *s, size_t n), void *ctx)
{
    strings_of s = {key, strlen(key), first, fn, ctx};
    store_attrs_each(json, len, on_strings, &s);
}

/* ---- the read APIs' attribute filters ---- */

typedef struct matching {
    const store_attr_filter *filters;
    size_t n;
    char (*want)[1100];
    bool found[STORE_MAX_FILTERS];
} matching;

static bool on_match(void *ctx, const store_attr *a)
{
    matching *m = ctx;
    if (a->type == SA_ARRAY)
        return true;
    for (size_t i = 0; i < m->n; i++)
        m->found[i] = m->found[i] ||
                      (strlen(m->filters[i].key) == a->key_len &&
                       memcmp(m->filters[i].key, a->key, a->key_len) == 0 && strlen(m->want[i]) == a->len &&
                       memcmp(m->want[i], a->text, a->len) == 0);
    return true;
}

bool store_attrs_match(const char *json, size_t len, const store_attr_filter *filters, size_t n)
{
    if (!n)
        return true;
    if (!json)
        return false;
    char want[STORE_MAX_FILTERS][1100];
    for (size_t i = 0; i < n; i++)
        store_attrs_filter_text(&filters[i], want[i], sizeof want[i]);
    matching m = {filters, n, want, {false}};
    store_attrs_each(json, len, on_match, &m);
    for (size_t i = 0; i < n; i++)
        if (!m.found[i])
            return false;
    return true;
}
