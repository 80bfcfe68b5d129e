/* What the ClickHouse store's files share: ch_store.c (open, the schema,
 * health, configs), ch_writer.c (the writer threads: inserts in attempts),
 * ch_keeper.c (consolidation, partitions, the winners of retried
 * batches), ch_read.c (the read APIs' queries, the rollups), ch_newest.c
 * (the dashboard's newest rows), ch_marks.c (the rows after a mark, for
 * the analysis), ch_layout.c (the tables' columns and rows in RowBinary),
 * ch_client.c (the HTTP client) and rb.c (RowBinary). */
#ifndef PACER_SERVER_STORE_CH_H
#define PACER_SERVER_STORE_CH_H

#include "ch_client.h"
#include "store/store.h"
#include "store/store_backend.h"
#include "store/store_dash.h"
#include "ch_store.h"
#include "store/health.h"

#include <pthread.h>

/* ---- physical columns (ch_layout.c) ----
 *
 * A table of pacer's records or of plain spans keeps as columns of their
 * own what queries filter, sort or aggregate on — ts, app, version,
 * session, the group name's fields, the metrics, failed, the ids; a plain
 * span's name, end and attributes — and every other column of the layout
 * (store.h, "the rows") packed into one String, `rest` (each value tagged
 * by its column, ch_layout.c): ClickHouse writes two files per
 * column for every insert, and a pacer span's thirty columns made each
 * insert of a thousand rows five times dearer than one of ten. Logs and metric points keep a column
 * each. What differs from SQLite is only how a value is held, never what
 * comes back (bit for bit):
 *   an MS field   Nullable(Int64): twice its microseconds when that is
 *                 exact (even), twice its nanoseconds plus one when that
 *                 is (odd), NULL when absent, CH_MS_IN_REST when neither
 *                 (the double then goes into rest): integers compress
 *                 far better;
 *   end_ts        its difference from ts and, in a record table, from the
 *                 span-end metric (0 for spans of pacer's SDK);
 *   span_name     of a page or start-up record: nothing when it is the
 *                 name the SDK gives it ("page NAME");
 *   ts            two columns, `ts_s` Int64, its whole seconds (rounded
 *                 down), and `ts_ns` UInt32, the nanoseconds past them:
 *                 sorted seconds compress to about a byte, where an Int64
 *                 of nanoseconds took 6.8; `ts` is an ALIAS of their sum,
 *                 and every filter on it names ts_s too (CH_TS_S), which
 *                 the primary key and the parts' min and max can use;
 *   trace_id      FixedString(16);
 *   span_id       `span_xor` FixedString(8), the span id XOR the trace
 *                 id's last 8 bytes: zeros for spans of pacer's SDK, whose
 *                 span id is that half (CH_SPAN_ID_SQL makes it again);
 *   resource_id, scope_id  the hash of the resource or scope (0: none),
 *                 whose JSON the table `origins` keeps;
 * plus `rday`, the UTC day the row was received (the partition), and, in
 * logs and metric_points, `rid`, the row's identity (spans have theirs:
 * trace and span id). */

enum ch_enc {
    CE_TS_S,   /* Int64 ts_s: the common ts's whole seconds (rounded down) */
    CE_TS_NS,  /* UInt32 ts_ns: its nanoseconds past them, 0 to 999 999 999 */
    CE_STR,    /* String (NOT NULL) */
    CE_NSTR,   /* Nullable(String) */
    CE_INT,    /* Int64 (NOT NULL) */
    CE_NINT,   /* Nullable(Int64) */
    CE_REAL,   /* Nullable(Float64): NaN and infinities too */
    CE_MS,     /* Nullable(Int64): an MS field, 2 us or 2 ns + 1 */
    CE_ID,     /* FixedString(n) */
    CE_NID,    /* Nullable(FixedString(n)) */
    CE_SPAN,   /* FixedString(8): a span's span id XOR its trace id's last 8 bytes */
    CE_END,    /* Int64 or Nullable(Int64): end_ts - ts - the span-end metric's ns */
    CE_ORIGIN, /* UInt64: resource or scope hash, 0 = none */
    CE_REST,   /* String: the packed columns */
    CE_RID,    /* UInt64 identity of a log or a point */
    CE_RDAY,   /* UInt32 */
};

typedef struct ch_col {
    char name[48];
    const char *type;
    enum ch_enc enc;
    int logical;   /* the layout's column, or -1 */
    size_t id_len; /* CE_ID, CE_NID, CE_SPAN */
} ch_col;

#define CH_MAX_COLS (STORE_MAX_COLS + 4)

typedef struct ch_table {
    const char *name;
    size_t n_cols;
    ch_col cols[CH_MAX_COLS];
    bool packed[STORE_MAX_COLS]; /* the layout's columns that go into rest */
    uint16_t key[STORE_MAX_COLS];  /* rest's key of a packed or MS column (ch_layout.c) */
    size_t n_keyed;
    int keyed[STORE_MAX_COLS]; /* the layout columns with a key */
    bool sdk_names;              /* span_name: nothing when the SDK's */
    const char *order_by, *shard_key;
    const char *aliases; /* ", ts Int64 ALIAS …": the table's DDL adds them */
    const char *columns; /* "ts, app, …" for INSERT and SELECT */
    int end_metric[STORE_MAX_METRICS + 1]; /* record tables: the layout columns of the span-end metrics, -1 ended */
    int ts_col, trace_col, span_col, attrs_col; /* layout columns, or -1 */
} ch_table;

const ch_table *ch_layout_table(enum store_table t);

/* Appends the physical columns of one record (RowBinary) to out; rid is
 * the identity of a log or a point, rday the receive day. */
void ch_layout_encode_row(const ch_table *t, const store_record *rec, uint64_t rid, uint32_t rday, rb_buf *out);

/* Reads one row of `SELECT <t->columns>` into ret (strings NUL-terminated,
 * in ret->owned; ids borrowed from the reader's buffer). false on a bad
 * answer. */
typedef struct ch_row {
    store_row row;
    uint64_t origin[2];
    uint64_t rid; /* logs, points */
    char *owned;  /* the strings, one block (freed by ch_layout_row_clear) */
} ch_row;
bool ch_layout_decode_row(const ch_table *t, rb_reader *r, ch_row *ret);
void ch_layout_row_clear(ch_row *r);

/* A span row's span id in SQL: its 8 bytes as a big-endian UInt64 (the
 * order of the bytes), from span_xor and trace_id. */
#define CH_SPAN_ID_SQL                                                                                               \
    "bitXor(reinterpretAsUInt64(reverse(span_xor)), reinterpretAsUInt64(reverse(substring(trace_id, 9, 8))))"

/* ts_s of a ts: its whole seconds, rounded down (ts_ns = ts - ts_s * 10^9,
 * in 64-bit arithmetic that wraps, is then 0 to 999 999 999). */
static inline int64_t ch_ts_s(int64_t ts)
{
    return ts / 1000000000 - (ts % 1000000000 < 0);
}

/* An MS column's value when no integer holds it exactly: the double is in rest. */
#define CH_MS_IN_REST INT64_MIN

/* What a percentile query needs of a rollup kind's raw rows (the cut
 * parts of hours): the SELECT list, and one row of it read — the group
 * name (false in *ret_named when a part of it is NULL), failed, excluded
 * and the kind's metrics (NAN: absent). */
const char *ch_layout_values_columns(enum store_kind k);
bool ch_layout_decode_values(enum store_kind k, rb_reader *r, char *name, size_t cap, bool *ret_named, bool *ret_failed,
                      bool *ret_excluded, double *metrics);

/* The record's span-end prediction (ns) for CE_END: the first span-end
 * metric the row has, as nanoseconds. */
int64_t ch_layout_end_pred(const ch_table *t, const store_value *cols);

/* ---- the store ---- */

/* A rollup row: per (kind, app, version, name, hour or day) of data, the
 * records, the failed ones, and a DDSketch per metric of the kind, kept as
 * one String (`sk`: per metric that has values, its index, the length and
 * sketch_encode()'s bytes) — ClickHouse never reads inside it, pacerd
 * merges the sketches. kind -1: a manifest row of pending (a batch). */
/* Rollup grains: t counts 10-minute slots, days or hours since the epoch.
 * pending and level 1 hold slots; level 2 all three (a range's whole days
 * by day, the hours it cuts by hour, the slots of hours it cuts by slot:
 * the raw rows read are those of at most two slots). */
#define CH_SLOT_NS (INT64_C(600) * 1000000000)
enum { CH_GRAIN_SLOT = 0, CH_GRAIN_DAY = 1, CH_GRAIN_HOUR = 2 };
#define CH_SLOTS_PER_HOUR 6
#define CH_SLOTS_PER_DAY 144

typedef struct ch_srow {
    int8_t kind;
    const char *app, *version, *name;
    uint8_t grain; /* CH_GRAIN_* */
    int32_t t;
    uint64_t cnt, failed;
    sketch m[STORE_MAX_METRICS]; /* count 0: no values */
    char *owned; /* the strings of a row read (ch_layout_srow_reset frees them), or NULL */
} ch_srow;

void ch_layout_srow_reset(ch_srow *row);

typedef struct ch_store ch_store;

struct ch_store {
    const store_backend *backend; /* first (store_backend.h) */
    ch_client *ch;
    ch_client **nodes; /* every node named (one, or the shards of a cluster): schema, partitions */
    size_t n_nodes;
    unsigned retention_days; /* 0: keep everything */
    int64_t db_bytes;        /* the database on the first node, as the keeper last saw it; -1: unknown */
    bool cluster;
    health_state health;
    char who[96]; /* this instance in the health's probes: host:pid */
    void (*log)(void *ctx, const char *msg);
    void *log_ctx;
    /* writers: group commit */
    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    struct ch_job *head, *tail;
    size_t queued_items, max_queued;
    size_t waiting_items;  /* of queued_items, those no writer took yet */
    uint64_t arrived;      /* jobs queued so far, and uploads no longer coming (they submit next) */
    int coming;            /* requests on their way to ch_submit (store_coming) */
    size_t jobs_in;        /* jobs submitted and not done (queued or committing) */
    size_t submitters;     /* store_options.submitters */
    int64_t gather_ns;     /* gather(): the longest wait */
    size_t gather_items;   /* gather(): enough records to go */
    bool stopping;
    pthread_t writers[4];
    size_t n_writers;
    /* consolidation, retention */
    pthread_t keeper;
    pthread_cond_t keeper_wake;
    bool keeper_started;
    int64_t settle_s; /* a commit hour is consolidated this long after it ended */
    int64_t unit_s;   /* its length (3600) */
    int64_t day_s;    /* level 2's slot (86400) */
    /* origins already written today (hash → 1), per receive day */
    pthread_mutex_t olock;
    uint64_t origin_seen[4096];
    uint32_t origin_day;
    int64_t last_ok_ns;
    int64_t ins_next; /* the next raw row's write mark (ch_marks.c) */
    int64_t marks_last; /* the newest mark ch_marks_last gave */
    struct ch_seen *seen; /* the identities the analysis read lately (ch_marks.c), or NULL */
};

/* A string value as an SQL literal. */
void ch_store_sql_str(jbuf *b, const char *s);
/* The name of a table as made on each host ("pending", or "pending_local"
 * under a cluster's Distributed "pending" when local), into buf. */
const char *ch_store_table_name(const ch_store *st, const char *name, char *buf, size_t size, bool local);
/* One line to the store's log (store_options.log). */
void ch_store_say(ch_store *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The writer threads and what they take (ch_writer.c). */
void *ch_writer_main(void *arg);
store_submit_fn ch_writer_submit;
store_coming_fn ch_writer_coming;

/* The keeper thread (ch_keeper.c). */
void *ch_keeper_main(void *arg);

/* A query whose failure is told to the health (reads). 0 or -EIO. */
int ch_store_read(ch_store *st, const char *sql, ch_reply *ret, const char *what);
/* The same of the text in q, which is freed; -ENOMEM when q could not be
 * written. */
int ch_store_read_query(ch_store *st, jbuf *q, ch_reply *ret, const char *what);
/* The same, with rd over the answer's RowBinary rows. */
int ch_store_read_rows(ch_store *st, jbuf *q, ch_reply *ret, rb_reader *rd, const char *what);
/* The same of a query text made as printf does. */
int ch_store_read_rowsf(ch_store *st, ch_reply *ret, rb_reader *rd, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The settings of an insert (on a cluster: each insert waits for its shards). */
const char *ch_store_settings(const ch_store *st);
/* A write statement; the failure is told to the health by the caller. */
int ch_store_write(ch_store *st, const char *sql, const void *data, size_t len, ch_reply *ret);
/* The health's view of a failed request. */
void ch_store_error_of(const ch_reply *r, store_error *ret);

/* The tiers (ch_read.c): the last commit hour consolidated into
 * level 1 and the last commit day into level 2; -1 when none. */
int ch_read_watermarks(ch_store *st, int64_t *ret_hour, int64_t *ret_day);

/* Reads rollup rows of kind, app and version (NULL: all): those of the
 * consolidated tiers (once per slot) and of the committed attempts after
 * them (winners only); cb gets each row. */
typedef struct ch_rollup_query {
    int8_t kind;
    const char *app, *version;
    int64_t a_lo, a_hi;               /* level 1 and pending: these slots */
    int64_t d_lo, d_hi;               /* level 2: these days by day, … */
    int64_t h_lo, h_hi, h2_lo, h2_hi; /* … these hours by hour (the cut days' ends), … */
    int64_t s_lo, s_hi, s2_lo, s2_hi; /* … these slots by slot (the cut hours' ends) */
} ch_rollup_query;
int ch_read_rollups(ch_store *st, const ch_rollup_query *q, void (*cb)(void *ctx, const ch_srow *row), void *ctx);

/* The committed rows of pending that match `where` and count (fresh rows;
 * a retry's when its attempt wins), each to cb; manifests (kind -1) too. */
int ch_keeper_pending_rows(ch_store *st, const char *where,
                    void (*cb)(void *ctx, const ch_srow *row, uint64_t att, const char *batch, bool fresh,
                               uint32_t at),
                    void *ctx);

/* The read operations (ch_read.c). */
store_scan_fn ch_read_scan;
store_apps_fn ch_read_apps;
store_trace_fn ch_read_trace;
store_search_spans_fn ch_read_search_spans;
store_search_logs_fn ch_read_search_logs;
store_search_points_fn ch_read_search_points;
store_version_rows_fn ch_read_version_rows;

/* Rows of table tb matching `where`, sorted by `order` (or NULL), one per
 * identity (trace and span id; rid), at most limit (0: all), each to cb
 * until it returns false; the rows borrow from *keep (the caller frees
 * it, also after a failure). 0 or -EIO. */
int ch_read_select_rows(ch_store *st, enum store_table tb, const char *where, const char *order, size_t limit,
                   bool (*cb)(void *ctx, ch_row *row), void *ctx, const char *what, ch_reply *keep);
/* "app = … AND ts >= from AND ts < to" and the hours, which the primary
 * key can use. */
void ch_read_time_where(jbuf *q, const char *app, int64_t from, int64_t to);
/* In SQL, of a row of table tb: its row key's order (the span id's, or
 * rid's, top 63 bits), and what makes it the same record (trace_id,
 * span_xor; or rid) for LIMIT 1 BY (ch_read.c). */
const char *ch_read_rk_sql(enum store_table tb);
const char *ch_read_identity_sql(enum store_table tb);
/* " AND ts >= from AND ts < to", and the same bounds on ts_s and its hour,
 * which the primary key and the parts' min and max can use (18.16 sees
 * through neither the ALIAS ts nor intDiv(ts_s, …) to ts_s). */
void ch_read_ts_where(jbuf *q, int64_t from, int64_t to);

/* The rows after a mark (ch_marks.c; store.h). */
store_marks_last_fn ch_marks_last;
store_marks_step_fn ch_marks_step;
store_marks_behind_fn ch_marks_behind;
store_rows_after_fn ch_marks_rows;
store_marks_forget_fn ch_marks_forget;


/* The newest rows of a range (ch_newest.c; store_dash.h). */
store_newest_fn ch_newest;
store_explain_fn ch_newest_explain;

/* A rollup row in RowBinary (the columns CH_SKETCH_COLUMNS), both ways;
 * a row read holds sketches and strings of its own (ch_layout_srow_reset frees
 * them, also after a failed read). */
#define CH_SKETCH_COLUMNS "kind, app, version, name, grain, t, cnt, failed, sk"
bool ch_layout_read_srow(rb_reader *r, ch_srow *ret);
void ch_layout_write_srow(rb_buf *b, const ch_srow *row);

/* Rollup rows read with their slot first (SELECT slot, CH_SKETCH_COLUMNS
 * … ORDER BY kind, app, version, name, grain, t, slot), one copy of each:
 * a slot consolidated twice has its rows twice, and sorted the copies are
 * neighbours. Not to be moved once begun (prev points into it). */
typedef struct ch_srows {
    rb_reader rd;
    ch_srow row; /* the row ch_layout_srows_next found */
    uint32_t slot;
    bool held; /* row holds a row read */
    /* the previous row's key (its strings copied: each row read frees its own) */
    char app[1100], version[1100], name[1100];
    ch_srow prev;
    uint32_t prev_slot;
    bool have;
} ch_srows;
void ch_layout_srows_begin(ch_srows *s, const void *body, size_t len);
/* 1: s->row is the next row that is no copy (valid until the next call);
 * 0: no more; -EIO: a row did not read. */
int ch_layout_srows_next(ch_srows *s);
void ch_layout_srows_end(ch_srows *s);

#endif
