/* The ClickHouse tables' physical columns (ch_int.h), built once from
 * the layout (store_layout.c), and a record's row in RowBinary both ways.
 *
 * Every encoding here is exact: a value read back is the value written,
 * bit for bit (a double that is not a whole number of microseconds or
 * nanoseconds is kept as a double; -0.0 too).
 *
 * `rest` holds the packed columns' values that are not NULL and, for each
 * MS column holding CH_MS_IN_REST, the double its column could not hold;
 * each as a 2-byte tag (little-endian: the column's key << 3 | the wire
 * type) and its value: a zigzag varint (INTEGER; end_ts: its residual),
 * 8 bytes (REAL, MS, resource_id/scope_id), length-prefixed bytes (TEXT,
 * BLOB) or nothing (an explicit NULL). A column's key is 13 bits of the
 * hash of its name, so a row reads the same whatever columns the layout
 * gains, loses or reorders after it was written: a tag no column has is
 * skipped, a column no tag has is NULL (as a column SQLite adds). A span
 * name the SDK gave is left out and made again on reading; a NULL one is
 * an explicit NULL.
 */
#include "ch_int.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ch_table tables[TABLE_COUNT];
static char names[8192];
static size_t names_used;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static const char *keep(const char *s)
{
    size_t n = strlen(s) + 1;
    if (names_used + n > sizeof names)
        return "";
    char *p = names + names_used;
    memcpy(p, s, n);
    names_used += n;
    return p;
}

static bool is_span_table(enum store_table tb)
{
    return store_layout_table(tb)->kind != KIND_NONE;
}

static ch_col *add(ch_table *t, const char *name, const char *type, enum ch_enc enc, int logical)
{
    if (t->n_cols == CH_MAX_COLS)
        return NULL;
    ch_col *c = &t->cols[t->n_cols++];
    snprintf(c->name, sizeof c->name, "%s", name);
    c->type = type;
    c->enc = enc;
    c->logical = logical;
    return c;
}

/* Whether the record table's span names are written by pacer's SDK as
 * "PREFIX NAME…" (span_name() of the core's OTLP encoder). */
static bool sdk_span_names(const store_table_desc *d)
{
    if (!d->type || !d->type->span_prefix)
        return false;
    const pacer_shape *sh = d->type->shape;
    for (size_t i = 0; i < sh->n_fields; i++)
        if ((sh->fields[i].flags & PACER_FIELD_NAME) && (sh->fields[i].flags & PACER_FIELD_URL))
            return false;
    return true;
}

static bool is_ms(const store_column *c)
{
    return c->source == SRC_FIELD && c->field && c->field->type == PACER_TYPE_MS;
}

/* A span table's columns of their own (the rest are packed). */
static bool own_column(enum store_table tb, size_t i)
{
    const store_table_desc *d = store_layout_table(tb);
    const store_column *c = &d->cols[i];
    const store_kind_desc *kd = store_layout_kind(d->kind);
    for (size_t k = 0; k < kd->n_name_cols; k++)
        if (kd->name_cols[k] == (int)i)
            return true;
    switch (c->source) {
    case SRC_COMMON:
    case SRC_FAILED:
    case SRC_TRACE_ID:
    case SRC_SPAN_ID: return true;
    case SRC_FIELD:
        if ((int)i == kd->excluded_col)
            return true; /* read with the metrics */
        return is_ms(c);
    case SRC_END_TS:
    case SRC_ATTRIBUTES: return tb == TABLE_SPANS; /* span search filters on them */
    default: return false;
    }
}

/* rest's key of a column: 13 bits of its name's hash; one taken already
 * (by a column before it in the layout) hashes again with a suffix. */
static void set_key(ch_table *t, const store_table_desc *d, int col)
{
    for (uint32_t salt = 0;; salt++) {
        uint32_t h = 2166136261u;
        for (const char *p = d->cols[col].name; *p; p++)
            h = (h ^ (uint8_t)*p) * 16777619u;
        for (uint32_t s = salt; s; s >>= 8)
            h = (h ^ (s & 0xff)) * 16777619u;
        uint16_t key = (uint16_t)((h ^ (h >> 13) ^ (h >> 26)) & 0x1fff);
        bool taken = false;
        for (size_t k = 0; k < t->n_keyed; k++)
            taken |= t->key[t->keyed[k]] == key;
        if (!taken) {
            t->key[col] = key;
            t->keyed[t->n_keyed++] = col;
            return;
        }
    }
}

static void build_table(enum store_table tb)
{
    const store_table_desc *d = store_layout_table(tb);
    ch_table *t = &tables[tb];
    t->name = d->name;
    t->aliases = "";
    bool spans = is_span_table(tb);
    t->sdk_names = sdk_span_names(d);
    t->ts_col = t->trace_col = t->span_col = t->attrs_col = -1;
    size_t n_end = 0;
    bool any_packed = false;
    for (size_t i = 0; i < d->n_cols; i++) {
        const store_column *c = &d->cols[i];
        bool nn = strstr(c->decl, "NOT NULL") != NULL;
        int li = (int)i;
        if (c->source == SRC_COMMON && c->index == PACER_COMMON_TS)
            t->ts_col = li;
        if (c->source == SRC_ATTRIBUTES)
            t->attrs_col = li;
        if (c->source == SRC_TRACE_ID)
            t->trace_col = li;
        if (c->source == SRC_SPAN_ID)
            t->span_col = li;
        if (is_ms(c) && (c->field->flags & PACER_FIELD_SPAN_END) && n_end < STORE_MAX_METRICS)
            t->end_metric[n_end++] = li;
        if (spans && !own_column(tb, i)) {
            t->packed[i] = any_packed = true;
            continue;
        }
        if (c->source == SRC_COMMON && c->index == PACER_COMMON_TS) {
            add(t, "ts_s", "Int64", CE_TS_S, li);
            add(t, "ts_ns", "UInt32", CE_TS_NS, li);
        } else if (strncmp(c->decl, "TEXT", 4) == 0) {
            add(t, c->name, nn ? "String" : "Nullable(String)", nn ? CE_STR : CE_NSTR, li);
        } else if (strncmp(c->decl, "INTEGER", 7) == 0) {
            if (c->source == SRC_END_TS)
                add(t, c->name, nn ? "Int64" : "Nullable(Int64)", CE_END, li);
            else if (c->source == SRC_RESOURCE_ID || c->source == SRC_SCOPE_ID)
                add(t, c->name, "UInt64", CE_ORIGIN, li);
            else
                add(t, c->name, nn ? "Int64" : "Nullable(Int64)", nn ? CE_INT : CE_NINT, li);
        } else if (strncmp(c->decl, "REAL", 4) == 0) {
            add(t, c->name, is_ms(c) ? "Nullable(Int64)" : "Nullable(Float64)", is_ms(c) ? CE_MS : CE_REAL, li);
        } else if (spans && c->source == SRC_SPAN_ID) {
            ch_col *col = add(t, "span_xor", "FixedString(8)", CE_SPAN, li);
            if (col)
                col->id_len = 8;
        } else { /* BLOB: the ids */
            size_t len = c->source == SRC_TRACE_ID ? 16 : 8;
            bool must = spans && c->source == SRC_TRACE_ID;
            ch_col *col = add(t, c->name,
                              must ? (len == 16 ? "FixedString(16)" : "FixedString(8)")
                                   : (len == 16 ? "Nullable(FixedString(16))" : "Nullable(FixedString(8))"),
                              must ? CE_ID : CE_NID, li);
            if (col)
                col->id_len = len;
        }
    }
    t->end_metric[n_end] = -1;
    /* what SQL written by hand (and the tests) names: the values themselves */
#define TS_ALIAS ", ts Int64 ALIAS ts_s * 1000000000 + ts_ns"
    if (t->ts_col >= 0)
        t->aliases = spans ? TS_ALIAS ", span_id FixedString(8) ALIAS toFixedString(reinterpretAsString(bitXor("
                                      "reinterpretAsUInt64(span_xor), reinterpretAsUInt64(substring(trace_id, 9, 8)))), 8)"
                           : TS_ALIAS;
#undef TS_ALIAS
    for (size_t i = 0; i < d->n_cols; i++)
        if (t->packed[i] || is_ms(&d->cols[i]))
            set_key(t, d, (int)i);
    if (any_packed)
        add(t, "rest", "String", CE_REST, -1);
    if (!spans)
        add(t, "rid", "UInt64", CE_RID, -1);
    add(t, "rday", "UInt32", CE_RDAY, -1);
    char buf[4096];
    size_t o = 0;
    for (size_t i = 0; i < t->n_cols && o < sizeof buf; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? ", " : "", t->cols[i].name);
    t->columns = keep(buf);
    if (spans) {
        t->order_by = "app, intDiv(ts_s, 3600), ifNull(session, ''), ts_s, ts_ns, trace_id, span_xor";
        t->shard_key = "cityHash64(trace_id, span_xor)";
    } else if (tb == TABLE_METRIC_POINTS) {
        t->order_by = "app, name, intDiv(ts_s, 3600), ts_s, ts_ns, rid";
        t->shard_key = "rid";
    } else {
        t->order_by = "app, intDiv(ts_s, 3600), ts_s, ts_ns, rid";
        t->shard_key = "rid";
    }
}

static void lean_list(const ch_table *t, enum store_kind k, char *out, size_t size);
static char lean[KIND_COUNT][1024];

static void build(void)
{
    for (enum store_table tb = 0; tb < TABLE_COUNT; tb++)
        build_table(tb);
    for (enum store_kind k = 0; k < KIND_COUNT; k++)
        lean_list(&tables[store_layout_kind(k)->table], k, lean[k], sizeof lean[k]);
}

const ch_table *ch_layout_table(enum store_table t)
{
    pthread_once(&once, build);
    return &tables[t];
}

/* ---- values ---- */

static bool value_double(const store_value *v, double *ret)
{
    if (v->type == SV_REAL)
        *ret = v->d;
    else if (v->type == SV_INT)
        *ret = (double)v->i;
    else
        return false;
    return true;
}

int64_t ch_layout_end_pred(const ch_table *t, const store_value *cols)
{
    for (size_t i = 0; t->end_metric[i] >= 0; i++) {
        double d;
        if (value_double(&cols[t->end_metric[i]], &d)) {
            if (!(fabs(d) < 9e12)) /* beyond ~100 days: no prediction */
                return 0;
            return llround(d * 1e6);
        }
    }
    return 0;
}

/* An MS value as its column holds it: 2 us or 2 ns + 1; false when
 * neither is exact. */
static bool ms_int(double d, int64_t *ret)
{
    if (!(fabs(d) < 4e15 / 1e6) || (d == 0 && signbit(d)))
        return false;
    int64_t us = llround(d * 1e3);
    if ((double)us / 1e3 == d) {
        *ret = 2 * us;
        return true;
    }
    int64_t ns = llround(d * 1e6);
    if ((double)ns / 1e6 == d) {
        *ret = 2 * ns + 1;
        return true;
    }
    return false;
}

static double ms_value(int64_t v)
{
    return v & 1 ? (double)((v - 1) / 2) / 1e6 : (double)(v / 2) / 1e3;
}

static size_t text_len(const store_value *v)
{
    return v->n ? v->n : strlen(v->p);
}

#define NAME_CAP 4096

/* The SDK's span name of a record row: "PREFIX NAME…" into out; its
 * length, or SIZE_MAX when it does not fit. */
static size_t sdk_name(const store_table_desc *d, const store_value *cols, char *out, size_t cap)
{
    size_t o = (size_t)snprintf(out, cap, "%s", d->type->span_prefix);
    const pacer_shape *sh = d->type->shape;
    for (size_t i = 0; i < sh->n_fields && o < cap; i++) {
        if (!(sh->fields[i].flags & PACER_FIELD_NAME) || d->field_cols[i] < 0)
            continue;
        const store_value *v = &cols[d->field_cols[i]];
        if (v->type != SV_TEXT)
            continue;
        o += (size_t)snprintf(out + o, cap - o, "%s%.*s", o ? " " : "", (int)text_len(v), (const char *)v->p);
    }
    return o < cap ? o : SIZE_MAX;
}

static void nullable(rb_buf *b, bool null)
{
    rb_u8(b, null ? 1 : 0);
}

static void zigzag(rb_buf *b, int64_t v)
{
    rb_varint(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static int64_t unzigzag(rb_reader *r)
{
    uint64_t u = rb_get_varint(r);
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static int64_t end_residual(const ch_table *t, const store_value *cols, const store_value *v)
{
    int64_t ts = cols[t->ts_col].type == SV_INT ? cols[t->ts_col].i : 0;
    return (int64_t)((uint64_t)(v->type == SV_INT ? v->i : ts) - (uint64_t)ts - (uint64_t)ch_layout_end_pred(t, cols));
}

static uint64_t origin_id(const store_origin *o)
{
    return o ? (o->hash ? o->hash : 1) : 0;
}

enum { WT_VARINT, WT_FIXED64, WT_BYTES, WT_NULL };

static void tag(rb_buf *b, const ch_table *t, size_t col, int wt)
{
    rb_u16(b, (uint16_t)(t->key[col] << 3 | wt));
}

/* One layout column into rest: nothing when NULL. */
static void pack(const ch_table *t, const store_record *rec, size_t i, rb_buf *b)
{
    const store_table_desc *d = store_layout_table(rec->table);
    const store_column *c = &d->cols[i];
    const store_value *v = &rec->cols[i];
    double dv;
    if (c->source == SRC_RESOURCE_ID || c->source == SRC_SCOPE_ID) {
        uint64_t id = origin_id(c->source == SRC_RESOURCE_ID ? rec->resource : rec->scope);
        if (id) {
            tag(b, t, i, WT_FIXED64);
            rb_u64(b, id);
        }
        return;
    }
    if (c->source == SRC_SPAN_NAME && t->sdk_names) {
        char canon[NAME_CAP];
        size_t n = sdk_name(d, rec->cols, canon, sizeof canon);
        if (v->type == SV_TEXT && n != SIZE_MAX && text_len(v) == n && memcmp(v->p, canon, n) == 0)
            return; /* the SDK's: made again on reading */
        if (v->type != SV_TEXT) {
            tag(b, t, i, WT_NULL);
            return;
        }
    } else if (c->source == SRC_END_TS) {
        if (v->type == SV_INT) {
            tag(b, t, i, WT_VARINT);
            zigzag(b, end_residual(t, rec->cols, v));
        }
        return;
    }
    if (strncmp(c->decl, "TEXT", 4) == 0) {
        if (v->type == SV_TEXT) {
            tag(b, t, i, WT_BYTES);
            rb_str(b, v->p, text_len(v));
        }
    } else if (strncmp(c->decl, "INTEGER", 7) == 0) {
        if (v->type == SV_INT) {
            tag(b, t, i, WT_VARINT);
            zigzag(b, v->i);
        }
    } else if (strncmp(c->decl, "REAL", 4) == 0) {
        bool has = value_double(v, &dv) || v->type == SV_TEXT;
        if (v->type == SV_TEXT)
            dv = strcmp(v->p, "NaN") == 0 ? NAN : ((const char *)v->p)[0] == '-' ? -INFINITY : INFINITY;
        if (has) {
            tag(b, t, i, WT_FIXED64);
            rb_f64(b, dv);
        }
    } else if (v->type == SV_BLOB) {
        tag(b, t, i, WT_BYTES);
        rb_str(b, v->p, v->n);
    }
}

/* The span id's column: its 8 bytes (zeros when absent) XOR the trace id's
 * last 8 (zeros when absent), into out. Pacer's SDK gives a span the trace
 * id's low half: 8 zero bytes, which compress to nothing; another SDK's
 * random span id stays as random. Its own inverse: the decoder makes the
 * span id again with it. */
static void span_xor(const store_value *trace, const store_value *span, uint8_t out[8])
{
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)((span->type == SV_BLOB && span->n == 8 ? ((const uint8_t *)span->p)[i] : 0) ^
                           (trace->type == SV_BLOB && trace->n == 16 ? ((const uint8_t *)trace->p)[8 + i] : 0));
}

void ch_layout_encode_row(const ch_table *t, const store_record *rec, uint64_t rid, uint32_t rday, rb_buf *out)
{
    const store_table_desc *d = store_layout_table(rec->table);
    const store_value *cols = rec->cols;
    for (size_t i = 0; i < t->n_cols; i++) {
        const ch_col *c = &t->cols[i];
        const store_value *v = c->logical >= 0 ? &cols[c->logical] : NULL;
        double dv;
        int64_t iv;
        switch (c->enc) {
        case CE_TS_S: rb_i64(out, ch_ts_s(v->type == SV_INT ? v->i : 0)); break;
        case CE_TS_NS: {
            int64_t ts = v->type == SV_INT ? v->i : 0;
            rb_u32(out, (uint32_t)((uint64_t)ts - (uint64_t)ch_ts_s(ts) * 1000000000u));
            break;
        }
        case CE_INT: rb_i64(out, v->type == SV_INT ? v->i : 0); break;
        case CE_NINT:
            nullable(out, v->type != SV_INT);
            if (v->type == SV_INT)
                rb_i64(out, v->i);
            break;
        case CE_STR:
            if (v->type == SV_TEXT)
                rb_str(out, v->p, text_len(v));
            else
                rb_str(out, "", 0);
            break;
        case CE_NSTR:
            nullable(out, v->type != SV_TEXT);
            if (v->type == SV_TEXT)
                rb_str(out, v->p, text_len(v));
            break;
        case CE_REAL:
            if (v->type == SV_TEXT) { /* "NaN", "Infinity", "-Infinity" (ingest's v_number) */
                const char *s = v->p;
                nullable(out, false);
                rb_f64(out, strcmp(s, "NaN") == 0 ? NAN : s[0] == '-' ? -INFINITY : INFINITY);
            } else if (value_double(v, &dv)) {
                nullable(out, false);
                rb_f64(out, dv);
            } else {
                nullable(out, true);
            }
            break;
        case CE_MS: {
            bool has = value_double(v, &dv);
            nullable(out, !has);
            if (has) /* a value no integer holds: the sentinel, the double in rest */
                rb_i64(out, ms_int(dv, &iv) ? iv : CH_MS_IN_REST);
            break;
        }
        case CE_ID:
        case CE_NID: {
            bool has = v->type == SV_BLOB && v->n == c->id_len;
            if (c->enc == CE_NID)
                nullable(out, !has);
            if (has) {
                rb_fixed(out, v->p, c->id_len);
            } else if (c->enc == CE_ID) {
                static const uint8_t zeros[16];
                rb_fixed(out, zeros, c->id_len);
            }
            break;
        }
        case CE_SPAN: {
            uint8_t x[8] = {0};
            span_xor(&cols[t->trace_col], v, x);
            rb_fixed(out, x, 8);
            break;
        }
        case CE_END: {
            bool nn = strcmp(c->type, "Int64") == 0;
            if (!nn)
                nullable(out, v->type != SV_INT);
            if (nn || v->type == SV_INT)
                rb_i64(out, end_residual(t, cols, v));
            break;
        }
        case CE_ORIGIN:
            rb_u64(out, origin_id(d->cols[c->logical].source == SRC_RESOURCE_ID ? rec->resource : rec->scope));
            break;
        case CE_REST: {
            rb_buf rest;
            rb_init(&rest);
            for (size_t k = 0; k < d->n_cols; k++)
                if (t->packed[k])
                    pack(t, rec, k, &rest);
            /* the MS values their column could not hold */
            for (size_t k = 0; k < t->n_cols; k++)
                if (t->cols[k].enc == CE_MS) {
                    int l = t->cols[k].logical;
                    if (value_double(&cols[l], &dv) && !ms_int(dv, &iv)) {
                        tag(&rest, t, (size_t)l, WT_FIXED64);
                        rb_f64(&rest, dv);
                    }
                }
            if (rest.failed)
                out->failed = true;
            rb_str(out, rest.p, rest.len);
            rb_free(&rest);
            break;
        }
        case CE_RID: rb_u64(out, rid); break;
        case CE_RDAY: rb_u32(out, rday); break;
        }
    }
}

/* ---- reading ---- */

typedef struct text_ref {
    int col;
    const char *p;
    size_t n;
    bool synth; /* a span name to make from the row */
} text_ref;

static int wire_of(const store_column *c)
{
    if (c->source == SRC_RESOURCE_ID || c->source == SRC_SCOPE_ID)
        return WT_FIXED64;
    if (c->source == SRC_END_TS || strncmp(c->decl, "INTEGER", 7) == 0)
        return WT_VARINT;
    if (strncmp(c->decl, "REAL", 4) == 0)
        return WT_FIXED64;
    return WT_BYTES; /* TEXT, BLOB */
}

static int col_of_key(const ch_table *t, unsigned key)
{
    for (size_t k = 0; k < t->n_keyed; k++)
        if (t->key[t->keyed[k]] == key)
            return t->keyed[k];
    return -1;
}

/* rest's values into ret (its columns NULL before); false when rest is
 * not one. */
static bool unpack(const ch_table *t, const store_table_desc *d, const char *s, size_t n, ch_row *ret,
                   text_ref *texts, size_t *n_texts, int *end_col, int64_t *end_res, bool *end_has)
{
    rb_reader r;
    rb_reader_init(&r, s, n);
    bool seen[STORE_MAX_COLS] = {false};
    while (rb_more(&r) && !r.bad) {
        uint16_t tg = rb_get_u16(&r);
        int wt = tg & 7;
        int col = col_of_key(t, tg >> 3);
        if (wt > WT_NULL || (col >= 0 && seen[col]))
            return false;
        if (col >= 0)
            seen[col] = true;
        if (col < 0 || (wt != WT_NULL && wt != wire_of(&d->cols[col]))) {
            /* a column this layout does not have (or not so): skipped */
            if (wt == WT_VARINT)
                (void)rb_get_varint(&r);
            else if (wt == WT_FIXED64)
                (void)rb_get_fixed(&r, 8);
            else if (wt == WT_BYTES)
                (void)rb_get_str(&r, &(size_t){0});
            continue;
        }
        if (wt == WT_NULL)
            continue;
        const store_column *c = &d->cols[col];
        store_value *v = &ret->row.cols[col];
        const char *p;
        size_t len;
        if (c->source == SRC_RESOURCE_ID || c->source == SRC_SCOPE_ID) {
            ret->origin[c->source == SRC_SCOPE_ID] = rb_get_u64(&r);
        } else if (c->source == SRC_END_TS) {
            *end_col = col;
            *end_has = true;
            *end_res = unzigzag(&r);
        } else if (strncmp(c->decl, "TEXT", 4) == 0) {
            p = rb_get_str(&r, &len);
            texts[(*n_texts)++] = (text_ref){col, p, len, false};
        } else if (strncmp(c->decl, "INTEGER", 7) == 0) {
            *v = (store_value){.type = SV_INT, .i = unzigzag(&r)};
        } else if (strncmp(c->decl, "REAL", 4) == 0) {
            double dv = rb_get_f64(&r);
            if (is_ms(c)) /* a value its MS column could not hold */
                *v = (store_value){.type = SV_REAL, .d = dv};
            else if (isnan(dv))
                *v = (store_value){.type = SV_TEXT, .p = "NaN", .n = 3};
            else if (isinf(dv))
                *v = dv < 0 ? (store_value){.type = SV_TEXT, .p = "-Infinity", .n = 9}
                            : (store_value){.type = SV_TEXT, .p = "Infinity", .n = 8};
            else
                *v = (store_value){.type = SV_REAL, .d = dv};
        } else {
            p = rb_get_str(&r, &len);
            *v = (store_value){.type = SV_BLOB, .p = p, .n = len};
        }
    }
    if (r.bad)
        return false;
    if (t->sdk_names) /* the SDK's span name, left out */
        for (size_t i = 0; i < d->n_cols; i++)
            if (t->packed[i] && d->cols[i].source == SRC_SPAN_NAME && !seen[i])
                texts[(*n_texts)++] = (text_ref){(int)i, NULL, 0, true};
    return true;
}

bool ch_layout_decode_row(const ch_table *t, rb_reader *r, ch_row *ret)
{
    enum store_table tb = (enum store_table)(t - tables);
    const store_table_desc *d = store_layout_table(tb);
    store_row *row = &ret->row;
    row->table = tb;
    row->n = d->n_cols;
    for (size_t i = 0; i < d->n_cols; i++)
        row->cols[i] = (store_value){.type = SV_NULL};
    ret->origin[0] = ret->origin[1] = 0;
    ret->rid = 0;
    ret->owned = NULL;
    text_ref texts[STORE_MAX_COLS];
    size_t n_texts = 0;
    int end_col = -1;
    int64_t end_res = 0;
    bool end_has = false;
    const uint8_t *span = NULL;
    for (size_t i = 0; i < t->n_cols && !r->bad; i++) {
        const ch_col *c = &t->cols[i];
        store_value *v = c->logical >= 0 ? &row->cols[c->logical] : NULL;
        size_t n;
        const char *s;
        switch (c->enc) {
        case CE_TS_S: /* ts_ns follows: the sum wraps as the difference did */
            *v = (store_value){.type = SV_INT, .i = (int64_t)((uint64_t)rb_get_i64(r) * 1000000000u)};
            break;
        case CE_TS_NS: v->i = (int64_t)((uint64_t)v->i + rb_get_u32(r)); break;
        case CE_INT: *v = (store_value){.type = SV_INT, .i = rb_get_i64(r)}; break;
        case CE_NINT:
            if (!rb_get_u8(r))
                *v = (store_value){.type = SV_INT, .i = rb_get_i64(r)};
            break;
        case CE_STR:
        case CE_NSTR:
            if (c->enc == CE_STR || !rb_get_u8(r)) {
                s = rb_get_str(r, &n);
                texts[n_texts++] = (text_ref){c->logical, s, n, false};
            }
            break;
        case CE_REAL:
            if (!rb_get_u8(r)) {
                double dv = rb_get_f64(r);
                if (isnan(dv))
                    *v = (store_value){.type = SV_TEXT, .p = "NaN", .n = 3};
                else if (isinf(dv))
                    *v = dv < 0 ? (store_value){.type = SV_TEXT, .p = "-Infinity", .n = 9}
                                : (store_value){.type = SV_TEXT, .p = "Infinity", .n = 8};
                else
                    *v = (store_value){.type = SV_REAL, .d = dv};
            }
            break;
        case CE_MS:
            if (!rb_get_u8(r)) {
                int64_t m = rb_get_i64(r);
                if (m != CH_MS_IN_REST) /* else: rest has it */
                    *v = (store_value){.type = SV_REAL, .d = ms_value(m)};
            }
            break;
        case CE_ID:
        case CE_NID:
            if (c->enc == CE_ID || !rb_get_u8(r)) {
                const uint8_t *p = rb_get_fixed(r, c->id_len);
                if (p)
                    *v = (store_value){.type = SV_BLOB, .p = p, .n = c->id_len};
            }
            break;
        case CE_SPAN:
            span = rb_get_fixed(r, 8);
            break;
        case CE_END:
            end_col = c->logical;
            end_has = strcmp(c->type, "Int64") == 0 || !rb_get_u8(r);
            if (end_has)
                end_res = rb_get_i64(r);
            break;
        case CE_ORIGIN: ret->origin[d->cols[c->logical].source == SRC_SCOPE_ID] = rb_get_u64(r); break;
        case CE_REST: {
            s = rb_get_str(r, &n);
            if (!r->bad && !unpack(t, d, s, n, ret, texts, &n_texts, &end_col, &end_res, &end_has))
                r->bad = true;
            break;
        }
        case CE_RID: ret->rid = rb_get_u64(r); break;
        case CE_RDAY: (void)rb_get_u32(r); break;
        }
    }
    if (r->bad)
        return false;
    if (end_col >= 0 && end_has) {
        int64_t ts = row->cols[t->ts_col].i;
        row->cols[end_col] = (store_value){
            .type = SV_INT, .i = (int64_t)((uint64_t)ts + (uint64_t)end_res + (uint64_t)ch_layout_end_pred(t, row->cols))};
    }
    /* the span id and the strings, NUL-terminated, in one block */
    size_t total = span ? 8 : 0;
    for (size_t i = 0; i < n_texts; i++)
        total += texts[i].synth ? NAME_CAP : texts[i].n + 1;
    if (total) {
        char *block = malloc(total);
        if (!block)
            return false;
        ret->owned = block;
        size_t o = 0;
        if (span) {
            store_value x = {.type = SV_BLOB, .p = span, .n = 8};
            span_xor(&row->cols[t->trace_col], &x, (uint8_t *)block);
            row->cols[t->span_col] = (store_value){.type = SV_BLOB, .p = block, .n = 8};
            o = 8;
        }
        /* the name fields first: a span name made again reads them */
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; i < n_texts; i++) {
                text_ref *x = &texts[i];
                if (x->synth != (pass == 1))
                    continue;
                char *p = block + o;
                size_t n = x->n;
                if (x->synth) {
                    n = sdk_name(d, row->cols, p, NAME_CAP);
                    if (n == SIZE_MAX)
                        n = 0; /* not written so: cannot be */
                } else {
                    memcpy(p, x->p, n);
                }
                p[n] = 0;
                o += x->synth ? NAME_CAP : n + 1;
                row->cols[x->col] = (store_value){.type = SV_TEXT, .p = p, .n = n};
            }
    }
    return true;
}

void ch_layout_row_clear(ch_row *r)
{
    free(r->owned);
    r->owned = NULL;
}

/* ---- the values of a rollup kind's rows (cut hours) ---- */

static void lean_list(const ch_table *t, enum store_kind k, char *out, size_t size)
{
    const store_kind_desc *kd = store_layout_kind(k);
    const store_table_desc *d = store_layout_table(kd->table);
    size_t o = 0;
    for (size_t i = 0; i < kd->n_name_cols; i++)
        o += (size_t)snprintf(out + o, size - o, "%s%s", i ? ", " : "", d->cols[kd->name_cols[i]].name);
    int failed = -1, end = -1;
    for (size_t i = 0; i < d->n_cols; i++) {
        if (d->cols[i].source == SRC_FAILED)
            failed = (int)i;
        if (d->cols[i].source == SRC_END_TS)
            end = (int)i;
    }
    o += (size_t)snprintf(out + o, size - o, ", %s", failed >= 0 ? d->cols[failed].name : "toNullable(toInt64(0))");
    o += (size_t)snprintf(out + o, size - o, ", %s",
                          kd->excluded_col >= 0 ? d->cols[kd->excluded_col].name : "toNullable(toInt64(0))");
    bool any_rest = false;
    for (size_t m = 0; m < kd->n_metrics; m++) {
        if (kd->metric_cols[m] < 0) /* a plain span's duration: end_ts holds end - ts */
            o += (size_t)snprintf(out + o, size - o, ", %s", end >= 0 ? d->cols[end].name : "0");
        else
            o += (size_t)snprintf(out + o, size - o, ", %s", d->cols[kd->metric_cols[m]].name);
        any_rest |= kd->metric_cols[m] >= 0;
    }
    /* rest only for the rows that need it */
    bool has_rest = false;
    for (size_t i = 0; i < t->n_cols; i++)
        has_rest |= t->cols[i].enc == CE_REST;
    if (any_rest && has_rest) {
        o += (size_t)snprintf(out + o, size - o, ", if(0");
        for (size_t m = 0; m < kd->n_metrics; m++)
            if (kd->metric_cols[m] >= 0)
                o += (size_t)snprintf(out + o, size - o, " OR ifNull(%s = %lld, 0)", d->cols[kd->metric_cols[m]].name,
                                      (long long)CH_MS_IN_REST);
        o += (size_t)snprintf(out + o, size - o, ", rest, '')");
    } else {
        o += (size_t)snprintf(out + o, size - o, ", ''");
    }
}

const char *ch_layout_values_columns(enum store_kind k)
{
    pthread_once(&once, build);
    return lean[k];
}

/* A nullable column of the values' SELECT, as the text it holds (NULL:
 * ret->type SV_NULL). */
static void read_name_col(const ch_table *t, int logical, rb_reader *r, const char **ret, size_t *ret_len)
{
    bool nn = false;
    for (size_t i = 0; i < t->n_cols; i++)
        if (t->cols[i].logical == logical)
            nn = t->cols[i].enc == CE_STR;
    if (!nn && rb_get_u8(r)) {
        *ret = NULL;
        return;
    }
    *ret = rb_get_str(r, ret_len);
}

bool ch_layout_decode_values(enum store_kind k, rb_reader *r, char *name, size_t cap, bool *ret_named, bool *ret_failed,
                      bool *ret_excluded, double *metrics)
{
    const store_kind_desc *kd = store_layout_kind(k);
    const ch_table *t = ch_layout_table(kd->table);
    const store_table_desc *d = store_layout_table(kd->table);
    size_t o = 0;
    bool named = true;
    for (size_t i = 0; i < kd->n_name_cols; i++) {
        const char *s;
        size_t n = 0;
        read_name_col(t, kd->name_cols[i], r, &s, &n);
        if (!s) {
            named = false;
            continue;
        }
        if (o + n + 2 > cap) {
            named = false;
            continue;
        }
        if (i)
            name[o++] = ' ';
        memcpy(name + o, s, n);
        o += n;
    }
    name[o] = 0;
    *ret_named = named;
    /* Nullable: a flag, and the value unless NULL */
    *ret_failed = !rb_get_u8(r) && rb_get_i64(r) != 0;
    *ret_excluded = !rb_get_u8(r) && rb_get_i64(r) != 0;
    bool need_rest = false;
    for (size_t m = 0; m < kd->n_metrics; m++) {
        metrics[m] = NAN;
        if (kd->metric_cols[m] < 0) { /* a plain span: end_ts - ts */
            metrics[m] = (double)rb_get_i64(r) / 1e6;
            continue;
        }
        if (rb_get_u8(r))
            continue;
        int64_t v = rb_get_i64(r);
        if (v == CH_MS_IN_REST)
            need_rest = true;
        else
            metrics[m] = ms_value(v);
    }
    size_t rn;
    const char *rest = rb_get_str(r, &rn);
    if (r->bad)
        return false;
    if (need_rest) {
        /* the doubles no integer held */
        ch_row tmp = {.row = {.table = kd->table, .n = d->n_cols}};
        for (size_t i = 0; i < d->n_cols; i++)
            tmp.row.cols[i] = (store_value){.type = SV_NULL};
        text_ref texts[STORE_MAX_COLS];
        size_t n_texts = 0;
        int end_col = -1;
        int64_t end_res = 0;
        bool end_has = false;
        if (!unpack(t, d, rest, rn, &tmp, texts, &n_texts, &end_col, &end_res, &end_has))
            return false;
        for (size_t m = 0; m < kd->n_metrics; m++) {
            int l = kd->metric_cols[m];
            if (l >= 0 && tmp.row.cols[l].type == SV_REAL)
                metrics[m] = tmp.row.cols[l].d;
        }
    }
    return true;
}

/* ---- rollup rows ---- */

void ch_layout_srow_reset(ch_srow *row)
{
    for (size_t i = 0; i < STORE_MAX_METRICS; i++)
        sketch_reset(&row->m[i]);
    free(row->owned);
    row->owned = NULL;
}

void ch_layout_write_srow(rb_buf *b, const ch_srow *row)
{
    rb_u8(b, (uint8_t)row->kind);
    rb_str(b, row->app, strlen(row->app));
    rb_str(b, row->version, strlen(row->version));
    rb_str(b, row->name, strlen(row->name));
    rb_u8(b, row->grain);
    rb_u32(b, (uint32_t)row->t);
    rb_u64(b, row->cnt);
    rb_u64(b, row->failed);
    rb_buf sk;
    rb_init(&sk);
    for (size_t i = 0; row->kind >= 0 && i < store_layout_kind((enum store_kind)row->kind)->n_metrics; i++) {
        uint8_t *enc;
        size_t len;
        if (!row->m[i].count)
            continue;
        if (sketch_encode(&row->m[i], &enc, &len) < 0) {
            sk.failed = true;
            continue;
        }
        rb_u8(&sk, (uint8_t)i);
        rb_str(&sk, enc, len);
        free(enc);
    }
    if (sk.failed)
        b->failed = true;
    rb_str(b, sk.p, sk.len);
    rb_free(&sk);
}

bool ch_layout_read_srow(rb_reader *r, ch_srow *ret)
{
    const char **dst[3] = {&ret->app, &ret->version, &ret->name};
    for (size_t i = 0; i < STORE_MAX_METRICS; i++)
        sketch_init(&ret->m[i]);
    ret->owned = NULL;
    ret->kind = (int8_t)rb_get_u8(r);
    const char *s[3];
    size_t n[3];
    for (int i = 0; i < 3; i++)
        s[i] = rb_get_str(r, &n[i]);
    if (r->bad)
        return false;
    char *block = malloc(n[0] + n[1] + n[2] + 3);
    if (!block)
        return false;
    ret->owned = block;
    for (int i = 0; i < 3; i++) {
        memcpy(block, s[i], n[i]);
        block[n[i]] = 0;
        *dst[i] = block;
        block += n[i] + 1;
    }
    ret->grain = rb_get_u8(r);
    ret->t = (int32_t)rb_get_u32(r);
    ret->cnt = rb_get_u64(r);
    ret->failed = rb_get_u64(r);
    size_t sk_len;
    const char *sk = rb_get_str(r, &sk_len);
    if (r->bad) {
        ch_layout_srow_reset(ret);
        return false;
    }
    rb_reader sr;
    rb_reader_init(&sr, sk, sk_len);
    size_t n_metrics = ret->kind >= 0 && ret->kind < KIND_COUNT ? store_layout_kind((enum store_kind)ret->kind)->n_metrics : 0;
    while (rb_more(&sr)) {
        uint8_t i = rb_get_u8(&sr);
        size_t len;
        const char *enc = rb_get_str(&sr, &len);
        if (sr.bad || i >= n_metrics || sketch_decode(&ret->m[i], (const uint8_t *)enc, len) < 0) {
            ch_layout_srow_reset(ret);
            return false;
        }
    }
    return true;
}


void ch_layout_srows_begin(ch_srows *s, const void *body, size_t len)
{
    rb_reader_init(&s->rd, body, len);
    s->held = s->have = false;
    s->app[0] = s->version[0] = s->name[0] = 0;
    s->prev = (ch_srow){.app = s->app, .version = s->version, .name = s->name};
    s->prev_slot = 0;
}

static bool same_key(const ch_srow *a, uint32_t sa, const ch_srow *b, uint32_t sb)
{
    return sa == sb && a->kind == b->kind && a->grain == b->grain && a->t == b->t && strcmp(a->name, b->name) == 0 &&
           strcmp(a->app, b->app) == 0 && strcmp(a->version, b->version) == 0;
}

int ch_layout_srows_next(ch_srows *s)
{
    for (;;) {
        if (s->held) {
            snprintf(s->app, sizeof s->app, "%s", s->row.app);
            snprintf(s->version, sizeof s->version, "%s", s->row.version);
            snprintf(s->name, sizeof s->name, "%s", s->row.name);
            s->prev.kind = s->row.kind;
            s->prev.grain = s->row.grain;
            s->prev.t = s->row.t;
            s->prev_slot = s->slot;
            s->have = true;
            ch_layout_srow_reset(&s->row);
            s->held = false;
        }
        if (!rb_more(&s->rd))
            return 0;
        s->slot = rb_get_u32(&s->rd);
        if (!ch_layout_read_srow(&s->rd, &s->row))
            return -EIO;
        s->held = true;
        if (!s->have || !same_key(&s->row, s->slot, &s->prev, s->prev_slot))
            return 1;
    }
}

void ch_layout_srows_end(ch_srows *s)
{
    if (s->held)
        ch_layout_srow_reset(&s->row);
    s->held = false;
}
