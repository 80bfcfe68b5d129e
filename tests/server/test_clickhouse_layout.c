/* The ClickHouse store's encodings, without a server: URLs, string
 * literals, RowBinary, a record's row written and read back bit for bit
 * (every kind of value: MS fields exact in µs, exact in ns and neither,
 * -0.0, NULLs, the SDK's span name and another, end_ts, origins, NaN), a
 * row read by a layout with other packed columns, a
 * rollup row with its sketches, and the values a percentile query reads
 * from the same bytes. Runs under ASan + UBSan too (suite unit). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "store/clickhouse/ch_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_urls(void **state)
{
    (void)state;
    ch_url u;
    char err[256];
    assert_int_equal(ch_client_url_parse("http://127.0.0.1:8123/", &u, err, sizeof err), 0);
    assert_string_equal(u.base, "http://127.0.0.1:8123/");
    assert_string_equal(u.database, "pacer");
    assert_null(u.user);
    assert_null(u.cluster);
    ch_client_url_clear(&u);
    assert_int_equal(ch_client_url_parse("https://us%40er:p%3Ass@ch.example:8443/metrics_db?cluster=two", &u, err,
                                  sizeof err),
                     0);
    assert_string_equal(u.base, "https://ch.example:8443/");
    assert_string_equal(u.user, "us@er");
    assert_string_equal(u.password, "p:ss");
    assert_string_equal(u.database, "metrics_db");
    assert_string_equal(u.cluster, "two");
    assert_null(strstr(u.shown, "p:ss"));
    assert_null(strstr(u.shown, "p%3Ass"));
    assert_non_null(strstr(u.shown, "us@er@ch.example:8443"));
    ch_client_url_clear(&u);
    static const char *const bad[] = {"ftp://h/", "http:///db", "http://h/db-name", "http://h/db?x=1",
                                      "http://h/db?cluster=a-b", "http://u:p%zz@h/", "http://h/d#f",
                                      "http://h w/", "http://u:%00@h/", "h:8123/db"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(ch_client_url_parse(bad[i], &u, err, sizeof err), -EINVAL);
        assert_true(err[0] != 0);
    }
}

static void test_quote(void **state)
{
    (void)state;
    jbuf b;
    jbuf_init(&b);
    ch_client_quote(&b, "a'b\\c\n\x01\x7f\xc3\xa9", 10);
    assert_string_equal(b.data, "'a\\'b\\\\c\\x0a\\x01\\x7f\xc3\xa9'");
    jbuf_free(&b);
}

static void test_rowbinary(void **state)
{
    (void)state;
    rb_buf b;
    rb_init(&b);
    rb_u8(&b, 0xfe);
    rb_u16(&b, 0xbeef);
    rb_u32(&b, 0xdeadbeef);
    rb_i64(&b, -5);
    rb_f64(&b, -0.0);
    rb_varint(&b, 300);
    rb_str(&b, "hello", 5);
    rb_fixed(&b, "abcd", 4);
    rb_reader r;
    rb_reader_init(&r, b.p, b.len);
    assert_int_equal(rb_get_u8(&r), 0xfe);
    assert_int_equal(rb_get_u16(&r), 0xbeef);
    assert_int_equal(rb_get_u32(&r), 0xdeadbeef);
    assert_int_equal(rb_get_i64(&r), -5);
    double z = rb_get_f64(&r);
    assert_true(z == 0 && signbit(z));
    assert_int_equal(rb_get_varint(&r), 300);
    size_t n;
    const char *s = rb_get_str(&r, &n);
    assert_int_equal(n, 5);
    assert_memory_equal(s, "hello", 5);
    assert_memory_equal(rb_get_fixed(&r, 4), "abcd", 4);
    assert_false(rb_more(&r));
    assert_false(r.bad);
    (void)rb_get_u64(&r); /* past the end: bad, never out of bounds */
    assert_true(r.bad);
    /* a string whose length runs past the end */
    rb_reader_init(&r, "\x05" "ab", 3);
    (void)rb_get_str(&r, &n);
    assert_true(r.bad);
    rb_free(&b);
}

static int col_of(const store_table_desc *d, enum store_source src, const char *field)
{
    for (size_t i = 0; i < d->n_cols; i++)
        if (d->cols[i].source == src && (!field || (d->cols[i].field && strcmp(d->cols[i].field->name, field) == 0)))
            return (int)i;
    return -1;
}

static bool same_value(const store_value *a, const store_value *b)
{
    if (a->type != b->type) {
        /* an integer in a REAL column reads back as a double, as in SQLite */
        return a->type == SV_INT && b->type == SV_REAL && (double)a->i == b->d;
    }
    switch (a->type) {
    case SV_NULL: return true;
    case SV_INT: return a->i == b->i;
    case SV_REAL: return memcmp(&a->d, &b->d, sizeof a->d) == 0;
    case SV_TEXT: {
        size_t an = a->n ? a->n : strlen(a->p), bn = b->n ? b->n : strlen(b->p);
        return an == bn && memcmp(a->p, b->p, an) == 0;
    }
    case SV_BLOB: return a->n == b->n && memcmp(a->p, b->p, a->n) == 0;
    }
    return false;
}

/* A page record with the given metric values (NAN: absent) and span name. */
static void page_record(store_record *rec, const double *m, const char *span_name, const store_origin *res,
                        const store_origin *scope, uint8_t *tid, uint8_t *sid, int64_t end_delta)
{
    const store_table_desc *d = store_layout_table(TABLE_PAGE_LOADS);
    memset(rec, 0, sizeof *rec);
    rec->table = TABLE_PAGE_LOADS;
    rec->resource = res;
    rec->scope = scope;
    rec->kind = KIND_PAGE;
    for (size_t i = 0; i < d->n_cols; i++)
        rec->cols[i] = (store_value){.type = SV_NULL};
    int64_t ts = 1700000000123456789LL;
    rec->cols[col_of(d, SRC_COMMON, "ts")] = (store_value){.type = SV_INT, .i = ts};
    rec->cols[col_of(d, SRC_COMMON, "app")] = (store_value){.type = SV_TEXT, .p = "shop"};
    rec->cols[col_of(d, SRC_COMMON, "version")] = (store_value){.type = SV_TEXT, .p = "1.2"};
    rec->cols[col_of(d, SRC_FIELD, "page")] = (store_value){.type = SV_TEXT, .p = "HomeWindow"};
    rec->cols[col_of(d, SRC_FIELD, "instance")] = (store_value){.type = SV_INT, .i = -3};
    rec->cols[col_of(d, SRC_FIELD, "status")] = (store_value){.type = SV_TEXT, .p = "complete", .n = 8};
    static const char *const names[4] = {"initial_draw_ms", "api_load_ms", "final_draw_ms", "total_ms"};
    for (int k = 0; k < 4; k++)
        if (!isnan(m[k]))
            rec->cols[col_of(d, SRC_FIELD, names[k])] = (store_value){.type = SV_REAL, .d = m[k]};
    rec->cols[col_of(d, SRC_FAILED, NULL)] = (store_value){.type = SV_INT, .i = 1};
    rec->cols[col_of(d, SRC_TRACE_ID, NULL)] = (store_value){.type = SV_BLOB, .p = tid, .n = 16};
    rec->cols[col_of(d, SRC_SPAN_ID, NULL)] = (store_value){.type = SV_BLOB, .p = sid, .n = 8};
    rec->cols[col_of(d, SRC_PARENT_SPAN_ID, NULL)] = (store_value){.type = SV_BLOB, .p = sid, .n = 8};
    rec->cols[col_of(d, SRC_END_TS, NULL)] = (store_value){.type = SV_INT, .i = ts + end_delta};
    rec->cols[col_of(d, SRC_SPAN_NAME, NULL)] = (store_value){.type = SV_TEXT, .p = span_name};
    rec->cols[col_of(d, SRC_EXTRA, NULL)] = (store_value){.type = SV_TEXT, .p = "[{\"key\":\"x\"}]"};
    rec->cols[col_of(d, SRC_SPAN_KIND, NULL)] = (store_value){.type = SV_INT, .i = 1};
    rec->cols[col_of(d, SRC_STATUS_CODE, NULL)] = (store_value){.type = SV_INT, .i = 2};
}

/* Reads past one physical column of an encoded row. */
static void skip_col(rb_reader *r, const ch_col *col)
{
    size_t n;
    switch (col->enc) {
    case CE_TS_S:
    case CE_INT: (void)rb_get_i64(r); break;
    case CE_TS_NS: (void)rb_get_u32(r); break;
    case CE_NINT:
    case CE_MS:
    case CE_END:
        if ((col->enc == CE_END && strcmp(col->type, "Int64") == 0) || !rb_get_u8(r))
            (void)rb_get_i64(r);
        break;
    case CE_STR: (void)rb_get_str(r, &n); break;
    case CE_NSTR:
        if (!rb_get_u8(r))
            (void)rb_get_str(r, &n);
        break;
    case CE_REAL:
        if (!rb_get_u8(r))
            (void)rb_get_f64(r);
        break;
    case CE_ID:
    case CE_SPAN: (void)rb_get_fixed(r, col->id_len); break;
    case CE_NID:
        if (!rb_get_u8(r))
            (void)rb_get_fixed(r, col->id_len);
        break;
    case CE_ORIGIN:
    case CE_RID: (void)rb_get_u64(r); break;
    case CE_REST: (void)rb_get_str(r, &n); break;
    case CE_RDAY: (void)rb_get_u32(r); break;
    }
}

static void test_rows_round_trip(void **state)
{
    (void)state;
    const ch_table *t = ch_layout_table(TABLE_PAGE_LOADS);
    const store_table_desc *d = store_layout_table(TABLE_PAGE_LOADS);
    const store_kind_desc *kd = store_layout_kind(KIND_PAGE);
    uint8_t tid[16], sid[8];
    for (int i = 0; i < 16; i++)
        tid[i] = (uint8_t)(0xf0 + i);
    for (int i = 0; i < 8; i++)
        sid[i] = (uint8_t)(0x80 + i);
    store_origin res = {"{\"attributes\":[]}", 0x1234}, scope = {"{\"name\":\"s\"}", 0}; /* hash 0 is kept as 1 */
    static const struct {
        double m[4];
        const char *name;
        int64_t end;
    } cases[] = {
        {{12.345, NAN, 0.5, 512.3}, "page HomeWindow", 512300000},        /* µs exact; the SDK's name; end predicted */
        {{0.000001, 1.000000001, -0.0, 1e-300}, "my span", 42},            /* ns exact; neither; -0.0; tiny */
        {{NAN, NAN, NAN, NAN}, "page Other", -7},                          /* no metrics at all */
        {{1e15, 123456789.123, 3.0000000001, 77.5}, "page HomeWindow x", 0}, /* too large; not the SDK's name */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        store_record rec;
        page_record(&rec, cases[c].m, cases[c].name, &res, &scope, tid, sid, cases[c].end);
        rb_buf b;
        rb_init(&b);
        ch_layout_encode_row(t, &rec, 99, 19700, &b);
        ch_layout_encode_row(t, &rec, 99, 19700, &b); /* two rows: each reads its own */
        assert_false(b.failed);
        rb_reader r;
        rb_reader_init(&r, b.p, b.len);
        for (int k = 0; k < 2; k++) {
            ch_row row;
            assert_true(ch_layout_decode_row(t, &r, &row));
            for (size_t i = 0; i < d->n_cols; i++) {
                if (d->cols[i].source == SRC_RESOURCE_ID || d->cols[i].source == SRC_SCOPE_ID)
                    continue;
                if (!same_value(&rec.cols[i], &row.row.cols[i]))
                    fail_msg("case %zu: column %s differs", c, d->cols[i].name);
            }
            assert_int_equal(row.origin[0], 0x1234);
            assert_int_equal(row.origin[1], 1);
            ch_layout_row_clear(&row);
        }
        assert_false(rb_more(&r));
        /* what a percentile query reads of it */
        assert_non_null(strstr(ch_layout_values_columns(KIND_PAGE), "total_ms"));
        rb_buf v;
        rb_init(&v);
        /* the values' columns, as ClickHouse would answer them: name, failed, excluded, metrics, rest */
        rb_str(&v, "HomeWindow", 10);
        rb_u8(&v, 0);
        rb_i64(&v, 1);
        rb_u8(&v, 0); /* no outlier column: toNullable(toInt64(0)) */
        rb_i64(&v, 0);
        ch_row full;
        rb_reader_init(&r, b.p, b.len);
        assert_true(ch_layout_decode_row(t, &r, &full));
        /* the metric columns and rest of the encoded row, in the values' order */
        rb_reader er;
        rb_reader_init(&er, b.p, b.len);
        size_t rest_n = 0;
        const char *rest = "";
        int64_t mv[STORE_MAX_METRICS];
        bool mnull[STORE_MAX_METRICS];
        for (size_t i = 0; i < t->n_cols; i++) {
            const ch_col *col = &t->cols[i];
            if (col->enc == CE_MS) {
                for (size_t m = 0; m < kd->n_metrics; m++)
                    if (kd->metric_cols[m] == col->logical) {
                        mnull[m] = rb_get_u8(&er) != 0;
                        mv[m] = mnull[m] ? 0 : rb_get_i64(&er);
                    }
            } else if (col->enc == CE_REST) {
                rest = rb_get_str(&er, &rest_n);
            } else {
                skip_col(&er, col);
            }
        }
        assert_false(er.bad);
        for (size_t m = 0; m < kd->n_metrics; m++) {
            rb_u8(&v, mnull[m]);
            if (!mnull[m])
                rb_i64(&v, mv[m]);
        }
        rb_str(&v, rest, rest_n);
        rb_reader vr;
        rb_reader_init(&vr, v.p, v.len);
        char name[64];
        bool named, failed, excluded;
        double got[STORE_MAX_METRICS];
        assert_true(ch_layout_decode_values(KIND_PAGE, &vr, name, sizeof name, &named, &failed, &excluded, got));
        assert_true(named);
        assert_string_equal(name, "HomeWindow");
        assert_true(failed);
        assert_false(excluded);
        for (size_t m = 0; m < kd->n_metrics; m++) {
            const store_value *want = &full.row.cols[kd->metric_cols[m]];
            if (want->type == SV_NULL)
                assert_true(isnan(got[m]));
            else
                assert_memory_equal(&got[m], &want->d, sizeof got[m]);
        }
        ch_layout_row_clear(&full);
        rb_free(&v);
        rb_free(&b);
    }
}

/* A span id that is its trace id's low half (pacer's SDK) is stored as
 * 8 zero bytes; any other (another SDK's random one) as itself XOR that
 * half. Both read back exactly. */
static void test_span_ids(void **state)
{
    (void)state;
    const ch_table *t = ch_layout_table(TABLE_PAGE_LOADS);
    const store_table_desc *d = store_layout_table(TABLE_PAGE_LOADS);
    int c_span = col_of(d, SRC_SPAN_ID, NULL);
    uint8_t tid[16];
    for (int i = 0; i < 16; i++)
        tid[i] = (uint8_t)(0x31 * i + 7);
    uint8_t sdk[8], foreign[8] = {0x9a, 0x01, 0xff, 0x00, 0x42, 0x17, 0xc3, 0x5e}, zero[8] = {0};
    memcpy(sdk, tid + 8, 8);
    const uint8_t *ids[] = {sdk, foreign, zero};
    store_origin res = {"{}", 1}, scope = {"{}", 2};
    double m[4] = {1, 2, 3, 6};
    for (size_t c = 0; c < 3; c++) {
        store_record rec;
        uint8_t sid[8];
        memcpy(sid, ids[c], 8);
        page_record(&rec, m, "page HomeWindow", &res, &scope, tid, sid, 6000000);
        rb_buf b;
        rb_init(&b);
        ch_layout_encode_row(t, &rec, 0, 19700, &b);
        assert_false(b.failed);
        /* the column as stored */
        rb_reader r;
        rb_reader_init(&r, b.p, b.len);
        const uint8_t *stored = NULL;
        for (size_t i = 0; i < t->n_cols && !stored; i++) {
            if (t->cols[i].enc == CE_SPAN)
                stored = rb_get_fixed(&r, 8);
            else
                skip_col(&r, &t->cols[i]);
        }
        assert_non_null(stored);
        for (int i = 0; i < 8; i++)
            assert_int_equal(stored[i], (uint8_t)(ids[c][i] ^ tid[8 + i]));
        if (c == 0)
            assert_memory_equal(stored, zero, 8);
        /* read back */
        rb_reader_init(&r, b.p, b.len);
        ch_row row;
        assert_true(ch_layout_decode_row(t, &r, &row));
        assert_int_equal(row.row.cols[c_span].type, SV_BLOB);
        assert_int_equal(row.row.cols[c_span].n, 8);
        assert_memory_equal(row.row.cols[c_span].p, ids[c], 8);
        ch_row copy = row; /* rows are moved by value: the id moves with them */
        memset(&row, 0, sizeof row);
        assert_memory_equal(copy.row.cols[c_span].p, ids[c], 8);
        ch_layout_row_clear(&copy);
        rb_free(&b);
    }
}

/* ts is kept as its whole seconds, rounded down, and the nanoseconds past
 * them; every Int64 comes back, the extremes and times before 1970 too. */
static void test_ts_split(void **state)
{
    (void)state;
    const ch_table *t = ch_layout_table(TABLE_PAGE_LOADS);
    const store_table_desc *d = store_layout_table(TABLE_PAGE_LOADS);
    int c_ts = col_of(d, SRC_COMMON, "ts");
    static const int64_t tss[] = {1700000000123456789LL, 1700000000000000000LL, 0, -1, -1000000000LL,
                                  -1000000001LL, INT64_MAX, INT64_MIN, INT64_MIN + 1};
    uint8_t tid[16] = {1}, sid[8] = {2};
    store_origin res = {"{}", 1}, scope = {"{}", 2};
    double m[4] = {1, 2, 3, 6};
    for (size_t c = 0; c < sizeof tss / sizeof tss[0]; c++) {
        store_record rec;
        page_record(&rec, m, "page HomeWindow", &res, &scope, tid, sid, 6000000);
        rec.cols[c_ts].i = tss[c];
        rec.cols[col_of(d, SRC_END_TS, NULL)].i = tss[c];
        rb_buf b;
        rb_init(&b);
        ch_layout_encode_row(t, &rec, 0, 19700, &b);
        rb_reader r;
        rb_reader_init(&r, b.p, b.len);
        int64_t sec = 0;
        uint32_t ns = UINT32_MAX;
        for (size_t i = 0; i < t->n_cols; i++) {
            if (t->cols[i].enc == CE_TS_S)
                sec = rb_get_i64(&r);
            else if (t->cols[i].enc == CE_TS_NS)
                ns = rb_get_u32(&r);
            else
                skip_col(&r, &t->cols[i]);
        }
        assert_false(r.bad);
        assert_true(ns < 1000000000u);
        assert_true((int64_t)((uint64_t)sec * 1000000000u + ns) == tss[c]);
        if (tss[c] > INT64_MIN + 1000000000LL && tss[c] < INT64_MAX - 1000000000LL)
            assert_true(sec == (int64_t)floor((long double)tss[c] / 1e9L));
        rb_reader_init(&r, b.p, b.len);
        ch_row row;
        assert_true(ch_layout_decode_row(t, &r, &row));
        assert_int_equal(row.row.cols[c_ts].type, SV_INT);
        assert_true(row.row.cols[c_ts].i == tss[c]);
        ch_layout_row_clear(&row);
        rb_free(&b);
    }
}

static void test_points_keep_nan_and_infinities(void **state)
{
    (void)state;
    const ch_table *t = ch_layout_table(TABLE_METRIC_POINTS);
    const store_table_desc *d = store_layout_table(TABLE_METRIC_POINTS);
    store_record rec = {.table = TABLE_METRIC_POINTS, .kind = KIND_NONE};
    for (size_t i = 0; i < d->n_cols; i++)
        rec.cols[i] = (store_value){.type = SV_NULL};
    rec.cols[col_of(d, SRC_COMMON, "ts")] = (store_value){.type = SV_INT, .i = 5};
    rec.cols[col_of(d, SRC_COMMON, "app")] = (store_value){.type = SV_TEXT, .p = "shop"};
    rec.cols[col_of(d, SRC_METRIC_NAME, NULL)] = (store_value){.type = SV_TEXT, .p = "m"};
    rec.cols[col_of(d, SRC_VALUE, NULL)] = (store_value){.type = SV_TEXT, .p = "NaN"};
    rec.cols[col_of(d, SRC_SUM, NULL)] = (store_value){.type = SV_TEXT, .p = "-Infinity"};
    rec.cols[col_of(d, SRC_MAX, NULL)] = (store_value){.type = SV_REAL, .d = 2.5};
    rb_buf b;
    rb_init(&b);
    ch_layout_encode_row(t, &rec, 7, 1, &b);
    rb_reader r;
    rb_reader_init(&r, b.p, b.len);
    ch_row row;
    assert_true(ch_layout_decode_row(t, &r, &row));
    for (size_t i = 0; i < d->n_cols; i++)
        if (d->cols[i].source != SRC_RESOURCE_ID && d->cols[i].source != SRC_SCOPE_ID)
            assert_true(same_value(&rec.cols[i], &row.row.cols[i]));
    assert_int_equal(row.rid, 7);
    ch_layout_row_clear(&row);
    rb_free(&b);
}

/* Where the row's rest is: *at its length prefix, *len the whole String. */
static void find_rest(const ch_table *t, const rb_buf *b, size_t *at, size_t *len)
{
    rb_reader er;
    rb_reader_init(&er, b->p, b->len);
    size_t n;
    for (size_t i = 0; i < t->n_cols; i++) {
        const ch_col *col = &t->cols[i];
        if (col->enc == CE_REST) {
            *at = er.pos;
            (void)rb_get_str(&er, &n);
            *len = er.pos - *at;
            return;
        }
        skip_col(&er, col);
    }
    fail_msg("no rest");
}

/* The row of b with rest replaced. */
static void with_rest(const ch_table *t, const rb_buf *b, const rb_buf *rest, rb_buf *out)
{
    size_t at, len;
    find_rest(t, b, &at, &len);
    rb_init(out);
    rb_fixed(out, b->p, at);
    rb_str(out, rest->p, rest->len);
    rb_fixed(out, (const uint8_t *)b->p + at + len, b->len - at - len);
}

static int tag_col(const ch_table *t, const uint8_t *p)
{
    unsigned key = (unsigned)(p[0] | p[1] << 8) >> 3;
    for (size_t k = 0; k < t->n_keyed; k++)
        if (t->key[t->keyed[k]] == key)
            return t->keyed[k];
    return -1;
}

/* A row written by a layout with other packed columns reads as SQLite
 * reads a table with columns added or dropped: what this layout has, and
 * NULL for the rest; rest that is not one is refused. */
static void test_rest_outlives_its_layout(void **state)
{
    (void)state;
    const ch_table *t = ch_layout_table(TABLE_PAGE_LOADS);
    const store_table_desc *d = store_layout_table(TABLE_PAGE_LOADS);
    /* every key is its own */
    for (size_t a = 0; a < t->n_keyed; a++)
        for (size_t b = a + 1; b < t->n_keyed; b++)
            assert_int_not_equal(t->key[t->keyed[a]], t->key[t->keyed[b]]);
    uint8_t tid[16] = {1}, sid[8] = {2};
    store_origin res = {"{}", 0x55};
    static const double m[4] = {1.5, 1.000000001, 2, 3};
    store_record rec;
    page_record(&rec, m, "my span", &res, NULL, tid, sid, 1000);
    rb_buf b;
    rb_init(&b);
    ch_layout_encode_row(t, &rec, 0, 1, &b);
    size_t at, len;
    find_rest(t, &b, &at, &len);
    rb_reader rr;
    rb_reader_init(&rr, (const uint8_t *)b.p + at, len);
    size_t rn;
    const uint8_t *rest = (const uint8_t *)rb_get_str(&rr, &rn);
    assert_true(rn > 2);
    /* a column this layout lacks, in each wire type, before and after */
    unsigned unknown = 0;
    while (unknown < 8192) {
        bool used = false;
        for (size_t k = 0; k < t->n_keyed; k++)
            used |= t->key[t->keyed[k]] == unknown;
        if (!used)
            break;
        unknown++;
    }
    rb_buf r2, row2;
    rb_init(&r2);
    rb_u16(&r2, (uint16_t)(unknown << 3 | 2));
    rb_str(&r2, "new", 3);
    rb_fixed(&r2, rest, rn);
    rb_u16(&r2, (uint16_t)(unknown << 3 | 0));
    rb_varint(&r2, 123456);
    rb_u16(&r2, (uint16_t)(unknown << 3 | 1));
    rb_u64(&r2, 9);
    rb_u16(&r2, (uint16_t)(unknown << 3 | 3));
    with_rest(t, &b, &r2, &row2);
    ch_row got;
    rb_reader_init(&rr, row2.p, row2.len);
    assert_true(ch_layout_decode_row(t, &rr, &got));
    for (size_t i = 0; i < d->n_cols; i++)
        if (d->cols[i].source != SRC_RESOURCE_ID && d->cols[i].source != SRC_SCOPE_ID)
            assert_true(same_value(&rec.cols[i], &got.row.cols[i]));
    assert_int_equal(got.origin[0], 0x55);
    ch_layout_row_clear(&got);
    rb_free(&row2);
    rb_free(&r2);
    /* the first packed value dropped (a column the writer's layout did not have): NULL, the others kept */
    int first = tag_col(t, rest);
    assert_true(first >= 0);
    rb_reader_init(&rr, rest, rn);
    (void)rb_get_u16(&rr);
    int wt = rest[0] & 7;
    size_t vn;
    if (wt == 0)
        (void)rb_get_varint(&rr);
    else if (wt == 1)
        (void)rb_get_u64(&rr);
    else if (wt == 2)
        (void)rb_get_str(&rr, &vn);
    rb_buf r3;
    rb_init(&r3);
    rb_fixed(&r3, rest + rr.pos, rn - rr.pos);
    with_rest(t, &b, &r3, &row2);
    rb_reader_init(&rr, row2.p, row2.len);
    assert_true(ch_layout_decode_row(t, &rr, &got));
    for (size_t i = 0; i < d->n_cols; i++) {
        if (d->cols[i].source == SRC_RESOURCE_ID || d->cols[i].source == SRC_SCOPE_ID)
            continue;
        if ((int)i == first && d->cols[i].source != SRC_SPAN_NAME && d->cols[i].source != SRC_END_TS)
            assert_int_equal(got.row.cols[i].type, SV_NULL);
        else if ((int)i != first)
            assert_true(same_value(&rec.cols[i], &got.row.cols[i]));
    }
    ch_layout_row_clear(&got);
    rb_free(&row2);
    /* a value twice, a wire type unknown, a value cut: not a rest */
    rb_free(&r3);
    rb_init(&r3);
    rb_fixed(&r3, rest, rn);
    rb_fixed(&r3, rest, rn);
    with_rest(t, &b, &r3, &row2);
    rb_reader_init(&rr, row2.p, row2.len);
    assert_false(ch_layout_decode_row(t, &rr, &got));
    ch_layout_row_clear(&got);
    rb_free(&row2);
    rb_free(&r3);
    rb_init(&r3);
    rb_u16(&r3, (uint16_t)(unknown << 3 | 5));
    with_rest(t, &b, &r3, &row2);
    rb_reader_init(&rr, row2.p, row2.len);
    assert_false(ch_layout_decode_row(t, &rr, &got));
    ch_layout_row_clear(&got);
    rb_free(&row2);
    rb_free(&r3);
    for (size_t cut = 1; cut < rn; cut++) {
        rb_init(&r3);
        rb_fixed(&r3, rest, cut);
        with_rest(t, &b, &r3, &row2);
        rb_reader_init(&rr, row2.p, row2.len);
        if (ch_layout_decode_row(t, &rr, &got)) /* a cut between two values reads: fewer columns */
            assert_true(cut >= 2);
        ch_layout_row_clear(&got);
        rb_free(&row2);
        rb_free(&r3);
    }
    rb_free(&b);
}

static void test_rollup_rows(void **state)
{
    (void)state;
    ch_srow row = {.kind = KIND_PAGE, .app = "shop", .version = "", .name = "HomeWindow", .grain = 1, .t = 19700,
                   .cnt = 10, .failed = 2};
    for (size_t i = 0; i < STORE_MAX_METRICS; i++)
        sketch_init(&row.m[i]);
    for (int v = 0; v < 10; v++) {
        sketch_add(&row.m[0], v * 12.5);
        if (v % 2)
            sketch_add(&row.m[3], 1000.0 / (v + 1));
    }
    rb_buf b;
    rb_init(&b);
    ch_layout_write_srow(&b, &row);
    rb_reader r;
    rb_reader_init(&r, b.p, b.len);
    ch_srow got;
    assert_true(ch_layout_read_srow(&r, &got));
    assert_int_equal(got.kind, KIND_PAGE);
    assert_string_equal(got.app, "shop");
    assert_string_equal(got.version, "");
    assert_string_equal(got.name, "HomeWindow");
    assert_int_equal(got.grain, 1);
    assert_int_equal(got.t, 19700);
    assert_int_equal(got.cnt, 10);
    assert_int_equal(got.failed, 2);
    for (size_t i = 0; i < STORE_MAX_METRICS; i++) {
        assert_int_equal(got.m[i].count, row.m[i].count);
        assert_true(got.m[i].sum_ns == row.m[i].sum_ns);
        for (double q = 0; q <= 1; q += 0.1)
            assert_true(sketch_quantile(&got.m[i], q) == sketch_quantile(&row.m[i], q));
    }
    ch_layout_srow_reset(&got);
    /* every truncation is refused, never read past */
    for (size_t cut = 0; cut < b.len; cut++) {
        rb_reader_init(&r, b.p, cut);
        ch_srow part;
        assert_false(ch_layout_read_srow(&r, &part));
        ch_layout_srow_reset(&part);
    }
    ch_layout_srow_reset(&row);
    rb_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_urls),
        cmocka_unit_test(test_quote),
        cmocka_unit_test(test_rowbinary),
        cmocka_unit_test(test_rows_round_trip),
        cmocka_unit_test(test_span_ids),
        cmocka_unit_test(test_ts_split),
        cmocka_unit_test(test_points_keep_nan_and_infinities),
        cmocka_unit_test(test_rest_outlives_its_layout),
        cmocka_unit_test(test_rollup_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
