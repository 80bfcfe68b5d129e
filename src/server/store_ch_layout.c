/* The ClickHouse tables' physical columns (store_ch.h), built once from
 * the layout (store_layout.c), and a record's row in RowBinary both ways.
 *
 * Every encoding here is exact: a value read back is the value written,
 * bit for bit (a double that is not a whole number of microseconds or
 * nanoseconds is kept as a double; -0.0 too).
 */
#include "store_ch.h"

#include <math.h>
#include <stdint.h>
#include <pthread.h>
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
    return store_table(tb)->kind != KIND_NONE;
}

static ch_col *add(ch_table *t, const char *name, const char *suffix, const char *type, enum ch_enc enc, int logical)
{
    if (t->n_cols == CH_MAX_COLS)
        return NULL;
    ch_col *c = &t->cols[t->n_cols++];
    snprintf(c->name, sizeof c->name, "%s%s", name, suffix);
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

static void build_table(enum store_table tb)
{
    const store_table_desc *d = store_table(tb);
    ch_table *t = &tables[tb];
    t->name = d->name;
    bool spans = is_span_table(tb);
    t->ts_col = t->trace_col = t->span_col = t->name_col = t->version_col = t->session_col = t->attrs_col = -1;
    t->origin_cols[0] = t->origin_cols[1] = -1;
    size_t n_end = 0;
    for (size_t i = 0; i < d->n_cols; i++) {
        const store_column *c = &d->cols[i];
        bool nn = strstr(c->decl, "NOT NULL") != NULL;
        int li = (int)i;
        if (c->source == SRC_COMMON && c->index == PACER_COMMON_TS) {
            add(t, c->name, "", "Int64", CE_TS, li);
            t->ts_col = li;
            continue;
        }
        if (c->source == SRC_COMMON && c->index == PACER_COMMON_VERSION)
            t->version_col = li;
        if (c->source == SRC_COMMON && c->index == PACER_COMMON_SESSION)
            t->session_col = li;
        if (c->source == SRC_ATTRIBUTES)
            t->attrs_col = li;
        if (c->source == SRC_SPAN_NAME || c->source == SRC_METRIC_NAME)
            t->name_col = li;
        if (strncmp(c->decl, "TEXT", 4) == 0) {
            if (c->source == SRC_SPAN_NAME && sdk_span_names(d))
                add(t, c->name, "", "Nullable(String)", CE_SPAN_NAME, li);
            else
                add(t, c->name, "", nn ? "String" : "Nullable(String)", nn ? CE_STR : CE_NSTR, li);
        } else if (strncmp(c->decl, "INTEGER", 7) == 0) {
            if (c->source == SRC_END_TS)
                add(t, c->name, "", nn ? "Int64" : "Nullable(Int64)", CE_END, li);
            else if (c->source == SRC_RESOURCE_ID || c->source == SRC_SCOPE_ID) {
                add(t, c->name, "", "UInt64", CE_ORIGIN, li);
                t->origin_cols[c->source == SRC_SCOPE_ID] = li;
            } else
                add(t, c->name, "", nn ? "Int64" : "Nullable(Int64)", nn ? CE_INT : CE_NINT, li);
        } else if (strncmp(c->decl, "REAL", 4) == 0) {
            if (c->source == SRC_FIELD && c->field && c->field->type == PACER_TYPE_MS) {
                add(t, c->name, "", "Nullable(Int64)", CE_MS_US, li);
                add(t, c->name, "_ns", "Nullable(Int64)", CE_MS_NS, li);
                add(t, c->name, "_f", "Nullable(Float64)", CE_MS_F, li);
                if ((c->field->flags & PACER_FIELD_SPAN_END) && n_end < STORE_MAX_METRICS)
                    t->end_metric[n_end++] = li;
            } else {
                add(t, c->name, "", "Nullable(Float64)", CE_REAL, li);
            }
        } else { /* BLOB: the ids */
            size_t len = c->source == SRC_TRACE_ID ? 16 : 8;
            bool must = spans && (c->source == SRC_TRACE_ID || c->source == SRC_SPAN_ID);
            ch_col *col = add(t, c->name, "", must ? (len == 16 ? "FixedString(16)" : "FixedString(8)")
                                                   : (len == 16 ? "Nullable(FixedString(16))" : "Nullable(FixedString(8))"),
                              must ? CE_ID : CE_NID, li);
            if (col)
                col->id_len = len;
            if (c->source == SRC_TRACE_ID)
                t->trace_col = li;
            if (c->source == SRC_SPAN_ID)
                t->span_col = li;
        }
    }
    t->end_metric[n_end] = -1;
    if (!spans)
        add(t, "rid", "", "UInt64", CE_RID, -1);
    add(t, "rday", "", "UInt32", CE_RDAY, -1);
    char buf[4096];
    size_t o = 0;
    for (size_t i = 0; i < t->n_cols && o < sizeof buf; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? ", " : "", t->cols[i].name);
    t->columns = keep(buf);
    if (spans) {
        t->order_by = "app, intDiv(ts, 3600000000000), ifNull(session, ''), ts, trace_id, span_id";
        t->shard_key = "cityHash64(span_id)";
    } else if (tb == TABLE_METRIC_POINTS) {
        t->order_by = "app, name, intDiv(ts, 3600000000000), ts, rid";
        t->shard_key = "rid";
    } else {
        t->order_by = "app, intDiv(ts, 3600000000000), ts, rid";
        t->shard_key = "rid";
    }
}

static void build(void)
{
    for (enum store_table tb = 0; tb < TABLE_COUNT; tb++)
        build_table(tb);
}

const ch_table *ch_table_of(enum store_table t)
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

int64_t ch_end_pred(const ch_table *t, const store_value *cols)
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

/* An MS value as the integer that holds it exactly: µs (scale 1e3) or ns
 * (1e6); false when neither does. */
static bool exact_int(double d, double scale, int64_t *ret)
{
    if (!(fabs(d) < 9e15 / scale) || (d == 0 && signbit(d)))
        return false;
    int64_t v = llround(d * scale);
    if ((double)v / scale != d)
        return false;
    *ret = v;
    return true;
}

static size_t text_len(const store_value *v)
{
    return v->n ? v->n : strlen(v->p);
}

/* The SDK's span name of a record row: "PREFIX NAME…" into out; its
 * length, or SIZE_MAX when it does not fit. */
#define NAME_CAP 4096
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

void ch_encode_row(const ch_table *t, const store_record *rec, uint64_t rid, uint32_t rday, rb_buf *out)
{
    const store_table_desc *d = store_table(rec->table);
    const store_value *cols = rec->cols;
    for (size_t i = 0; i < t->n_cols; i++) {
        const ch_col *c = &t->cols[i];
        const store_value *v = c->logical >= 0 ? &cols[c->logical] : NULL;
        double dv;
        int64_t iv;
        switch (c->enc) {
        case CE_TS:
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
        case CE_SPAN_NAME: {
            char canon[NAME_CAP];
            size_t n = sdk_name(d, cols, canon, sizeof canon);
            bool same = v->type == SV_TEXT && n != SIZE_MAX && text_len(v) == n && memcmp(v->p, canon, n) == 0;
            nullable(out, same);
            if (!same)
                rb_str(out, v->type == SV_TEXT ? v->p : "", v->type == SV_TEXT ? text_len(v) : 0);
            break;
        }
        case CE_REAL:
            if (v->type == SV_TEXT) { /* "NaN", "Infinity", "-Infinity" (ingest's v_number) */
                const char *s = v->p;
                dv = strcmp(s, "NaN") == 0 ? NAN : s[0] == '-' ? -INFINITY : INFINITY;
                nullable(out, false);
                rb_f64(out, dv);
            } else if (value_double(v, &dv)) {
                nullable(out, false);
                rb_f64(out, dv);
            } else {
                nullable(out, true);
            }
            break;
        case CE_MS_US: {
            bool has = value_double(v, &dv) && exact_int(dv, 1e3, &iv);
            nullable(out, !has);
            if (has)
                rb_i64(out, iv);
            break;
        }
        case CE_MS_NS: {
            bool has = value_double(v, &dv) && !exact_int(dv, 1e3, &iv) && exact_int(dv, 1e6, &iv);
            nullable(out, !has);
            if (has)
                rb_i64(out, iv);
            break;
        }
        case CE_MS_F: {
            bool has = value_double(v, &dv) && !exact_int(dv, 1e3, &iv) && !exact_int(dv, 1e6, &iv);
            nullable(out, !has);
            if (has)
                rb_f64(out, dv);
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
        case CE_END: {
            bool has = v->type == SV_INT;
            if (strcmp(c->type, "Int64") != 0)
                nullable(out, !has);
            else if (!has)
                has = true; /* NOT NULL: always written */
            if (has) {
                int64_t ts = cols[t->ts_col].type == SV_INT ? cols[t->ts_col].i : 0;
                uint64_t res = (uint64_t)(v->type == SV_INT ? v->i : ts) - (uint64_t)ts -
                               (uint64_t)ch_end_pred(t, cols);
                rb_i64(out, (int64_t)res);
            }
            break;
        }
        case CE_ORIGIN: {
            const store_origin *o = t->origin_cols[0] == c->logical ? rec->resource : rec->scope;
            rb_u64(out, o ? (o->hash ? o->hash : 1) : 0);
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
    bool synth; /* a span name to make from the row (CE_SPAN_NAME NULL) */
} text_ref;

bool ch_decode_row(const ch_table *t, rb_reader *r, ch_row *ret)
{
    const store_table_desc *d = store_table((enum store_table)(t - tables));
    store_row *row = &ret->row;
    row->table = (enum store_table)(t - tables);
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
    for (size_t i = 0; i < t->n_cols && !r->bad; i++) {
        const ch_col *c = &t->cols[i];
        store_value *v = c->logical >= 0 ? &row->cols[c->logical] : NULL;
        bool null;
        size_t n;
        const char *s;
        switch (c->enc) {
        case CE_TS:
        case CE_INT: *v = (store_value){.type = SV_INT, .i = rb_get_i64(r)}; break;
        case CE_NINT:
            if (!rb_get_u8(r))
                *v = (store_value){.type = SV_INT, .i = rb_get_i64(r)};
            break;
        case CE_STR:
        case CE_NSTR:
        case CE_SPAN_NAME:
            null = c->enc != CE_STR && rb_get_u8(r);
            if (!null) {
                s = rb_get_str(r, &n);
                texts[n_texts++] = (text_ref){c->logical, s, n, false};
            } else if (c->enc == CE_SPAN_NAME) {
                texts[n_texts++] = (text_ref){c->logical, NULL, 0, true};
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
        case CE_MS_US:
        case CE_MS_NS:
            if (!rb_get_u8(r))
                *v = (store_value){.type = SV_REAL, .d = (double)rb_get_i64(r) / (c->enc == CE_MS_US ? 1e3 : 1e6)};
            break;
        case CE_MS_F:
            if (!rb_get_u8(r))
                *v = (store_value){.type = SV_REAL, .d = rb_get_f64(r)};
            break;
        case CE_ID:
        case CE_NID:
            if (c->enc == CE_ID || !rb_get_u8(r)) {
                const uint8_t *p = rb_get_fixed(r, c->id_len);
                if (p)
                    *v = (store_value){.type = SV_BLOB, .p = p, .n = c->id_len};
            }
            break;
        case CE_END:
            end_col = c->logical;
            end_has = strcmp(c->type, "Int64") == 0 || !rb_get_u8(r);
            if (end_has)
                end_res = rb_get_i64(r);
            break;
        case CE_ORIGIN: ret->origin[t->origin_cols[1] == c->logical] = rb_get_u64(r); break;
        case CE_RID: ret->rid = rb_get_u64(r); break;
        case CE_RDAY: (void)rb_get_u32(r); break;
        }
    }
    if (r->bad)
        return false;
    if (end_col >= 0 && end_has) {
        int64_t ts = row->cols[t->ts_col].i;
        row->cols[end_col] =
            (store_value){.type = SV_INT, .i = (int64_t)((uint64_t)ts + (uint64_t)end_res + (uint64_t)ch_end_pred(t, row->cols))};
    }
    /* the strings, NUL-terminated, in one block */
    size_t total = 0;
    for (size_t i = 0; i < n_texts; i++)
        total += texts[i].synth ? NAME_CAP : texts[i].n + 1;
    if (n_texts) {
        char *block = malloc(total ? total : 1);
        if (!block)
            return false;
        ret->owned = block;
        size_t o = 0;
        /* the name fields first: a synthesized span name reads them */
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

void ch_row_clear(ch_row *r)
{
    free(r->owned);
    r->owned = NULL;
}
