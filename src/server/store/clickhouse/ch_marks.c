/* The rows that came after a mark, on ClickHouse (store.h, "the rows
 * that came after a mark"): the application layer's reads of the record
 * tables.
 *
 * ClickHouse has no rowid. Each raw row carries `ins`, the wall-clock
 * nanoseconds at which its instance wrote it, made unique and increasing
 * per instance (a group's rows take consecutive values); a mark is an ins.
 * Rows are read only once older than the read lag (half of
 * --clickhouse-settle: an attempt that is not answered by then is not
 * committed, and its batches come again with a later ins), so that a row
 * written late by another instance, or by a slow insert, is not passed by
 * the mark. A row written twice (a retried batch) is read twice: the
 * reads keep out the identities they handed on in the last cycles.
 *
 * A range of ins of one raw table, the rows decoded as the read APIs
 * decode them (ch_layout.c) and handed on with the columns asked
 * for. The partitions outside the range's receive days are skipped (rday
 * is the day of the group's first ins).
 */
#include "ch_int.h"

#include <pacer/base/clock.h>
#include <pacer/base/hash.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define HOUR_NS (INT64_C(3600) * 1000000000)

/* "ins > a AND ins <= b" and the receive days that can hold them */
static void range_where(jbuf *q, int64_t after, int64_t upto, enum store_filter f)
{
    int64_t lo = (int64_t)(after / STORE_DAY_NS) - 1;
    jbuf_printf(q, "ins > %" PRId64 " AND ins <= %" PRId64 " AND rday >= %" PRId64 " AND rday <= %" PRId64 "%s",
                after, upto, lo < 0 ? 0 : lo, (int64_t)(upto / STORE_DAY_NS), store_layout_filter_sql(f));
}

/* The identities read lately, with the mark each was read at: a row of an
 * identity read before at another mark is a copy (a retried batch's rows
 * written again, with a later mark) and is not handed on; the same row
 * read again (a cycle whose write failed) is. Two generations of an
 * open-addressing table, the older dropped when the newer is half full:
 * the last SEEN_SLOTS / 2 to SEEN_SLOTS identities, in bounded memory. */
#define SEEN_SLOTS (1u << 18)

typedef struct seen_gen {
    uint64_t key[SEEN_SLOTS]; /* 0: empty */
    int64_t ins[SEEN_SLOTS];
    size_t n;
} seen_gen;

struct ch_seen {
    seen_gen g[2];
    int cur;
};

static int64_t *seen_find(seen_gen *g, uint64_t key)
{
    for (size_t i = hash_u64(key) & (SEEN_SLOTS - 1);; i = (i + 1) & (SEEN_SLOTS - 1)) {
        if (g->key[i] == key)
            return &g->ins[i];
        if (!g->key[i])
            return NULL;
    }
}

/* false: key was read at another mark (a copy) */
static bool seen_fresh(struct ch_seen *s, uint64_t key, int64_t ins)
{
    for (int k = 0; k < 2; k++) {
        int64_t *at = seen_find(&s->g[k], key);
        if (at)
            return *at == ins;
    }
    seen_gen *g = &s->g[s->cur];
    if (g->n >= SEEN_SLOTS / 2) {
        s->cur ^= 1;
        g = &s->g[s->cur];
        memset(g, 0, sizeof *g);
    }
    size_t i = hash_u64(key) & (SEEN_SLOTS - 1);
    while (g->key[i])
        i = (i + 1) & (SEEN_SLOTS - 1);
    g->key[i] = key;
    g->ins[i] = ins;
    g->n++;
    return true;
}

/* A row's identity (trace and span id; rid) as a nonzero hash. */
static uint64_t identity_key(const ch_table *ct, enum store_table t, const ch_row *row)
{
    uint8_t tb = (uint8_t)t;
    uint64_t h = fnv1a64(FNV1A64_INIT, &tb, 1);
    if (store_layout_table(t)->kind == KIND_NONE) {
        h = fnv1a64(h, &row->rid, sizeof row->rid);
    } else {
        int cols[2] = {ct->trace_col, ct->span_col};
        for (int k = 0; k < 2; k++) {
            const store_value *v = cols[k] >= 0 ? &row->row.cols[cols[k]] : NULL;
            if (v && v->type == SV_BLOB)
                h = fnv1a64(h, v->p, v->n);
        }
    }
    return h | 1;
}

int ch_marks_rows(store *s, enum store_table t, enum store_filter filter, int64_t after, int64_t upto,
                  const bool want[STORE_MAX_COLS], bool (*cb)(void *ctx, const store_mark_row *row), void *ctx)
{
    ch_store *st = (ch_store *)s;
    if (upto <= after)
        return 0;
    const ch_table *ct = ch_layout_table(t);
    const char *ident = ch_read_identity_sql(t);
    jbuf q;
    jbuf_init(&q);
    jbuf_printf(&q, "SELECT ins, %s FROM %s WHERE ", ct->columns, ct->name);
    range_where(&q, after, upto, filter);
    jbuf_printf(&q, " ORDER BY ins, %s LIMIT 1 BY %s FORMAT RowBinary", ident, ident);
    ch_reply rep;
    int r = ch_store_read_query(st, &q, &rep, "the analysis's rows");
    if (r < 0)
        return r;
    if (!st->seen && !(st->seen = calloc(1, sizeof *st->seen))) {
        ch_client_reply_free(&rep);
        return -ENOMEM;
    }
    rb_reader rd;
    rb_reader_init(&rd, rep.body, rep.len);
    const store_table_desc *d = store_layout_table(t);
    store_mark_row out = {.table = t};
    while (r == 0 && rb_more(&rd)) {
        int64_t ins = rb_get_i64(&rd);
        ch_row row;
        if (rd.bad || !ch_layout_decode_row(ct, &rd, &row)) {
            r = -EIO;
            break;
        }
        if (!seen_fresh(st->seen, identity_key(ct, t, &row), ins)) {
            ch_layout_row_clear(&row);
            continue;
        }
        for (size_t c = 0; c < d->n_cols; c++)
            out.cols[c] = want[c] ? row.row.cols[c] : (store_value){.type = SV_NULL};
        out.mark = ins;
        bool more = cb(ctx, &out);
        ch_layout_row_clear(&row);
        if (!more)
            break;
    }
    ch_client_reply_free(&rep);
    return r;
}

/* One last mark for every table: a page load's requests (written with
 * it) are read before it or in the same cycle. It never goes back, should
 * the clock: a reader's mark is never beyond it. */
int ch_marks_last(store *s, int64_t ret[TABLE_COUNT])
{
    ch_store *st = (ch_store *)s;
    int64_t now = wall_ns() - st->settle_s * INT64_C(1000000000) / 2;
    int64_t last = __atomic_load_n(&st->marks_last, __ATOMIC_RELAXED);
    while (now > last && !__atomic_compare_exchange_n(&st->marks_last, &last, now, false, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED))
        ;
    if (now > last)
        last = now;
    for (enum store_table t = 0; t < TABLE_COUNT; t++)
        ret[t] = last;
    return 0;
}

int ch_marks_step(store *s, enum store_table t, enum store_filter filter, int64_t from, int64_t to, long n,
                  int64_t *ret)
{
    ch_store *st = (ch_store *)s;
    int64_t a = n > 0 ? from : from - HOUR_NS, b = n > 0 ? to : from;
    *ret = n > 0 ? to : a;
    if (!n || b <= a)
        return 0;
    jbuf q;
    jbuf_init(&q);
    jbuf_printf(&q, "SELECT ins FROM %s WHERE ", ch_layout_table(t)->name);
    range_where(&q, a, b, filter);
    jbuf_printf(&q, " ORDER BY ins %s LIMIT 1 OFFSET %ld FORMAT RowBinary", n > 0 ? "" : "DESC",
                (n > 0 ? n : -n) - 1);
    ch_reply rep;
    int r = ch_store_read_query(st, &q, &rep, "the analysis's marks");
    if (r < 0)
        return r;
    if (rep.len >= 8) {
        rb_reader rd;
        rb_reader_init(&rd, rep.body, rep.len);
        *ret = rb_get_i64(&rd);
        if (n < 0)
            (*ret)--; /* the rows after it: that one too */
    }
    ch_client_reply_free(&rep);
    return 0;
}

/* Every row after `after`, those of the read lag too (last does not
 * bound them). */
int ch_marks_behind(store *s, enum store_table t, enum store_filter filter, int64_t after, int64_t last,
                    int64_t *ret)
{
    ch_store *st = (ch_store *)s;
    (void)last;
    jbuf q;
    jbuf_init(&q);
    jbuf_printf(&q, "SELECT count() FROM %s WHERE ", ch_layout_table(t)->name);
    range_where(&q, after, INT64_MAX, filter);
    jbuf_puts(&q, " FORMAT RowBinary");
    ch_reply rep;
    rb_reader rd;
    int r = ch_store_read_rows(st, &q, &rep, &rd, "the analysis's marks");
    if (r < 0)
        return r;
    *ret = (int64_t)rb_get_u64(&rd);
    ch_client_reply_free(&rep);
    return 0;
}

/* ClickHouse keeps nothing for the readers alone. */
int ch_marks_forget(store *s, enum store_table t, int64_t upto)
{
    (void)s, (void)t, (void)upto;
    return 0;
}
