/* The raw tables' columns and the rollup kinds (store.h, "the rows").
 *
 * Built once, on first use, from the record schema and the few things that
 * are the server's own, which are the tables below: the names of the
 * rollup kinds (they are stored), the columns of the generic tables and
 * those every record table ends with, the attributes the server also takes
 * a field from, and which field marks an outlier. Everything else — which
 * fields have a column and of what type, the metrics of a kind and its
 * group name — is read from the schema, so that a field added there with a
 * column is stored, ingested and rolled up without a change here.
 *
 * A schema that outgrows the fixed sizes of store.h (STORE_MAX_*) is not
 * an error at run time but a build that needs bigger ones: store_open
 * refuses to start with store_layout_error()'s message.
 */
#include "store.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- what is the server's own ---- */

static const struct {
    const char *name; /* stored in rollup_counts, rollup_sketches, rollup_marks */
    enum store_table table;
    int record;           /* its rows' record type (PACER_RECORD_*), or -1: plain spans */
    long excluded_field;  /* a bool field of the type: true keeps the record out of the percentiles, or -1 */
} kind_defs[KIND_COUNT] = {
    [KIND_PAGE] = {"page", TABLE_PAGE_LOADS, PACER_RECORD_PAGE, -1},
    /* outliers are counted, their times left out, as `pacer report` does */
    [KIND_STARTUP] = {"startup", TABLE_STARTUPS, PACER_RECORD_STARTUP, PACER_STARTUP_OUTLIER},
    [KIND_REQUEST] = {"request", TABLE_REQUESTS, PACER_RECORD_NET, -1},
    [KIND_SPAN] = {"span", TABLE_SPANS, -1, -1},
};

/* The metric of plain spans, which no record type has. */
static const pacer_field span_duration = {.name = "duration_ms", .type = PACER_TYPE_MS, .flags = PACER_FIELD_METRIC,
                                          .unit = "ms", .meaning = "the span's end time minus its start time"};

/* Attributes a field is also read from, after pacer.<name> and the
 * schema's semantic convention. */
static const struct {
    int record;
    long field;
    const char *attr;
} fallbacks[] = {
    {PACER_RECORD_NET, PACER_NET_ERROR, "error.type"}, /* what OpenTelemetry HTTP instrumentations set */
};

typedef struct own_column {
    const char *name, *decl;
    enum store_source source;
} own_column;

/* The last columns of every table of spans: plain spans, and the span
 * that carried a record. */
static const own_column span_tail[] = {
    {"trace_state", "TEXT", SRC_TRACE_STATE},
    {"flags", "INTEGER", SRC_FLAGS},
    {"events", "TEXT", SRC_EVENTS},
    {"links", "TEXT", SRC_LINKS},
    {"dropped", "TEXT", SRC_DROPPED},
    {"resource_id", "INTEGER", SRC_RESOURCE_ID},
    {"scope_id", "INTEGER", SRC_SCOPE_ID},
};

/* After the fields of every record table (and its pattern, if any): the
 * span that carried the record, as it was sent (then span_tail). */
static const own_column record_tail[] = {
    {"failed", "INTEGER", SRC_FAILED},
    {"trace_id", "BLOB", SRC_TRACE_ID},
    {"span_id", "BLOB", SRC_SPAN_ID},
    {"extra", "TEXT", SRC_EXTRA},
    {"parent_span_id", "BLOB", SRC_PARENT_SPAN_ID},
    {"end_ts", "INTEGER", SRC_END_TS},
    {"span_name", "TEXT", SRC_SPAN_NAME},
    {"span_kind", "INTEGER", SRC_SPAN_KIND},
    {"status_code", "INTEGER", SRC_STATUS_CODE},
    {"status_message", "TEXT", SRC_STATUS_MESSAGE},
};

/* Plain spans' own columns (then span_tail). */
static const own_column span_columns[] = {
    {"end_ts", "INTEGER NOT NULL", SRC_END_TS},
    {"name", "TEXT NOT NULL", SRC_SPAN_NAME},
    {"kind", "INTEGER", SRC_SPAN_KIND},
    {"status_code", "INTEGER", SRC_STATUS_CODE},
    {"status_message", "TEXT", SRC_STATUS_MESSAGE},
    {"failed", "INTEGER", SRC_FAILED},
    {"trace_id", "BLOB", SRC_TRACE_ID},
    {"span_id", "BLOB", SRC_SPAN_ID},
    {"parent_span_id", "BLOB", SRC_PARENT_SPAN_ID},
    {"scope", "TEXT", SRC_SCOPE},
    {"attributes", "TEXT", SRC_ATTRIBUTES},
};

static const own_column log_columns[] = {
    {"type", "TEXT", SRC_LOG_TYPE},
    {"severity_number", "INTEGER", SRC_SEVERITY_NUMBER},
    {"severity_text", "TEXT", SRC_SEVERITY_TEXT},
    {"body", "TEXT", SRC_BODY},
    {"attributes", "TEXT", SRC_ATTRIBUTES},
    {"observed_ts", "INTEGER", SRC_OBSERVED_TS},
    {"event_name", "TEXT", SRC_EVENT_NAME},
    {"body_any", "TEXT", SRC_BODY_ANY},
    {"trace_id", "BLOB", SRC_TRACE_ID},
    {"span_id", "BLOB", SRC_SPAN_ID},
    {"flags", "INTEGER", SRC_FLAGS},
    {"dropped", "TEXT", SRC_DROPPED},
    {"resource_id", "INTEGER", SRC_RESOURCE_ID},
    {"scope_id", "INTEGER", SRC_SCOPE_ID},
};

/* value: the number (NaN and infinities as the text "NaN", "Infinity",
 * "-Infinity"); int_value: an asInt point's exact value. */
static const own_column point_columns[] = {
    {"name", "TEXT NOT NULL", SRC_METRIC_NAME},
    {"type", "TEXT", SRC_METRIC_TYPE},
    {"unit", "TEXT", SRC_UNIT},
    {"value", "REAL", SRC_VALUE},
    {"count", "INTEGER", SRC_COUNT},
    {"attributes", "TEXT", SRC_ATTRIBUTES},
    {"description", "TEXT", SRC_DESCRIPTION},
    {"start_ts", "INTEGER", SRC_START_TS},
    {"temporality", "INTEGER", SRC_TEMPORALITY},
    {"monotonic", "INTEGER", SRC_MONOTONIC},
    {"int_value", "INTEGER", SRC_INT_VALUE},
    {"sum", "REAL", SRC_SUM},
    {"min", "REAL", SRC_MIN},
    {"max", "REAL", SRC_MAX},
    {"data", "TEXT", SRC_DATA},
    {"exemplars", "TEXT", SRC_EXEMPLARS},
    {"flags", "INTEGER", SRC_FLAGS},
    {"resource_id", "INTEGER", SRC_RESOURCE_ID},
    {"scope_id", "INTEGER", SRC_SCOPE_ID},
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
    const char *name;
    const own_column *cols;
    size_t n;
} generic_tables[TABLE_COUNT] = {
    [TABLE_SPANS] = {"spans", span_columns, N_OF(span_columns)},
    [TABLE_LOGS] = {"logs", log_columns, N_OF(log_columns)},
    [TABLE_METRIC_POINTS] = {"metric_points", point_columns, N_OF(point_columns)},
};

/* ---- building ---- */

static struct {
    store_table_desc tables[TABLE_COUNT];
    store_kind_desc kinds[KIND_COUNT];
    char text[16384]; /* the names and SQL texts built */
    size_t used;
    char error[160];
} L;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    if (L.error[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(L.error, sizeof L.error, fmt, ap);
    va_end(ap);
}

/* Text kept in L.text; "" once it is full (and an error). */
static const char *text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *text(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = sizeof L.text - L.used;
    int n = vsnprintf(L.text + L.used, room, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= room) {
        fail("the names of the store's tables need more than %zu bytes", sizeof L.text);
        return "";
    }
    const char *s = L.text + L.used;
    L.used += (size_t)n + 1;
    return s;
}

/* The names of columns cols[0..n) of t (all when cols is NULL), joined by
 * sep, kept in L.text. */
static const char *join(const store_table_desc *t, const int *cols, size_t n, const char *sep)
{
    char buf[1024];
    size_t o = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && o < sizeof buf; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? sep : "", t->cols[cols ? cols[i] : (int)i].name);
    if (o >= sizeof buf) {
        fail("table %s: the column names need more than %zu bytes", t->name, sizeof buf);
        return "";
    }
    return text("%s", buf);
}

static const char *sql_type(pacer_type t)
{
    switch (t) {
    case PACER_TYPE_STRING: return "TEXT";
    case PACER_TYPE_INT:
    case PACER_TYPE_ID:
    case PACER_TYPE_BOOL: return "INTEGER";
    case PACER_TYPE_MS: return "REAL";
    default: return NULL; /* objects and lists have no column */
    }
}

static store_column *add_column(store_table_desc *t, const char *name, const char *decl, enum store_source source)
{
    if (t->n_cols == STORE_MAX_COLS) {
        fail("table %s: more than STORE_MAX_COLS (%d) columns", t->name, STORE_MAX_COLS);
        return NULL;
    }
    store_column *c = &t->cols[t->n_cols++];
    *c = (store_column){.name = name, .decl = decl, .source = source, .index = -1};
    return c;
}

static void add_own(store_table_desc *t, const own_column *cols, size_t n)
{
    for (size_t i = 0; i < n; i++)
        add_column(t, cols[i].name, cols[i].decl, cols[i].source);
}

/* The common fields that have a column. The server always fills app (the
 * key's) and ts (the item's time). */
static void add_common(store_table_desc *t)
{
    const pacer_shape *sh = pacer_common_shape();
    for (size_t i = 0; i < sh->n_fields; i++) {
        const pacer_field *f = &sh->fields[i];
        if (!f->column)
            continue;
        const char *type = sql_type(f->type);
        if (!type) {
            fail("common field %s: a column needs a scalar type", f->name);
            continue;
        }
        bool not_null = i == PACER_COMMON_APP || i == PACER_COMMON_TS;
        store_column *c = add_column(t, f->column, not_null ? text("%s NOT NULL", type) : type, SRC_COMMON);
        if (c) {
            c->index = (long)i;
            c->field = f;
        }
    }
}

static void add_attr(store_column *c, const char *attr)
{
    if (c->n_attrs < STORE_MAX_ATTRS) {
        c->attrs[c->n_attrs] = attr;
        c->attr_lens[c->n_attrs++] = strlen(attr);
    }
}

/* The fields of the record type that have a column; NAME fields are NOT
 * NULL (ingest rejects a record without them). */
static void add_fields(store_table_desc *t, int record)
{
    const pacer_shape *sh = t->type->shape;
    if (sh->n_fields > STORE_MAX_FIELDS) {
        fail("record type %s: more than STORE_MAX_FIELDS (%d) fields", t->type->name, STORE_MAX_FIELDS);
        return;
    }
    for (size_t i = 0; i < sh->n_fields; i++) {
        const pacer_field *f = &sh->fields[i];
        if (!f->column)
            continue;
        const char *type = sql_type(f->type);
        if (!type) {
            fail("%s.%s: a column needs a scalar type", t->type->name, f->name);
            continue;
        }
        store_column *c =
            add_column(t, f->column, (f->flags & PACER_FIELD_NAME) ? text("%s NOT NULL", type) : type, SRC_FIELD);
        if (!c)
            return;
        c->index = (long)i;
        c->field = f;
        add_attr(c, text("pacer.%s", f->name));
        if (f->semconv)
            add_attr(c, f->semconv);
        for (size_t k = 0; k < N_OF(fallbacks); k++)
            if (fallbacks[k].record == record && fallbacks[k].field == (long)i)
                add_attr(c, fallbacks[k].attr);
        t->field_cols[i] = (int)(c - t->cols);
    }
}

static int column_of(const store_table_desc *t, enum store_source source)
{
    for (size_t i = 0; i < t->n_cols; i++)
        if (t->cols[i].source == source)
            return (int)i;
    return -1;
}

static void build_record_table(enum store_kind k)
{
    store_table_desc *t = &L.tables[kind_defs[k].table];
    store_kind_desc *kd = &L.kinds[k];
    t->type = pacer_record_type_get((pacer_record_id)kind_defs[k].record);
    if (!t->type || !t->type->table) {
        fail("rollup kind %s: its record type has no table", kind_defs[k].name);
        return;
    }
    t->name = t->type->table;
    add_common(t);
    add_fields(t, kind_defs[k].record);
    /* the group name: the NAME fields, a URL by its folded pattern */
    const pacer_shape *sh = t->type->shape;
    for (size_t i = 0; i < sh->n_fields; i++) {
        const pacer_field *f = &sh->fields[i];
        if (!(f->flags & PACER_FIELD_NAME))
            continue;
        int col = t->field_cols[i];
        if (col < 0 || f->type != PACER_TYPE_STRING) {
            fail("%s.%s names the rollup group: it needs a column and the type STRING", t->type->name, f->name);
            continue;
        }
        if (f->flags & PACER_FIELD_URL) {
            if (column_of(t, SRC_PATTERN) >= 0) {
                fail("%s: more than one URL field names the rollup group", t->type->name);
                continue;
            }
            store_column *p = add_column(t, "pattern", "TEXT", SRC_PATTERN);
            if (!p)
                return;
            p->index = col;
            col = (int)(p - t->cols);
        }
        if (kd->n_name_cols == N_OF(kd->name_cols)) {
            fail("%s: too many fields name the rollup group", t->type->name);
            continue;
        }
        kd->name_cols[kd->n_name_cols++] = col;
    }
    if (!kd->n_name_cols)
        fail("%s: no field names the rollup group", t->type->name);
    add_own(t, record_tail, N_OF(record_tail));
    add_own(t, span_tail, N_OF(span_tail));
    /* metrics: the METRIC fields, in schema order */
    for (size_t i = 0; i < sh->n_fields; i++) {
        const pacer_field *f = &sh->fields[i];
        if (!(f->flags & PACER_FIELD_METRIC))
            continue;
        if (t->field_cols[i] < 0 || f->type != PACER_TYPE_MS) {
            fail("%s.%s: a metric needs a column and the type MS", t->type->name, f->name);
            continue;
        }
        if (kd->n_metrics == STORE_MAX_METRICS) {
            fail("%s: more than STORE_MAX_METRICS (%d) metrics", t->type->name, STORE_MAX_METRICS);
            break;
        }
        kd->metrics[kd->n_metrics] = f->name;
        kd->metric_fields[kd->n_metrics] = f;
        kd->metric_cols[kd->n_metrics++] = t->field_cols[i];
    }
    long ex = kind_defs[k].excluded_field;
    kd->excluded_col = -1;
    if (ex >= 0) {
        if ((size_t)ex >= sh->n_fields || sh->fields[ex].type != PACER_TYPE_BOOL || t->field_cols[ex] < 0)
            fail("%s: the outlier field needs a bool column", t->type->name);
        else
            kd->excluded_col = t->field_cols[ex];
    }
}

static void build_generic_table(enum store_table tb)
{
    store_table_desc *t = &L.tables[tb];
    t->name = generic_tables[tb].name;
    add_common(t);
    add_own(t, generic_tables[tb].cols, generic_tables[tb].n);
    if (tb == TABLE_SPANS)
        add_own(t, span_tail, N_OF(span_tail));
}

/* The SQL of a kind: name, excluded, metrics over a row of its table. */
static void build_kind_sql(enum store_kind k)
{
    store_kind_desc *kd = &L.kinds[k];
    const store_table_desc *t = &L.tables[kd->table];
    kd->name_sql = join(t, kd->name_cols, kd->n_name_cols, " || ' ' || ");
    kd->excluded_sql = kd->excluded_col >= 0 ? t->cols[kd->excluded_col].name : "0";
    kd->metrics_sql = k == KIND_SPAN ? "(end_ts - ts) / 1e6" : join(t, kd->metric_cols, kd->n_metrics, ", ");
}

static void build(void)
{
    for (size_t t = 0; t < TABLE_COUNT; t++) {
        L.tables[t].kind = KIND_NONE;
        for (size_t i = 0; i < STORE_MAX_FIELDS; i++)
            L.tables[t].field_cols[i] = -1;
    }
    for (enum store_kind k = 0; k < KIND_COUNT; k++) {
        store_kind_desc *kd = &L.kinds[k];
        kd->name = kind_defs[k].name;
        kd->table = kind_defs[k].table;
        L.tables[kd->table].kind = k;
        if (kind_defs[k].record >= 0)
            build_record_table(k);
    }
    for (enum store_table t = 0; t < TABLE_COUNT; t++)
        if (generic_tables[t].name)
            build_generic_table(t);
    /* plain spans: named by their name, measured by their duration */
    store_kind_desc *sk = &L.kinds[KIND_SPAN];
    sk->n_name_cols = 1;
    sk->name_cols[0] = column_of(&L.tables[TABLE_SPANS], SRC_SPAN_NAME);
    sk->n_metrics = 1;
    sk->metrics[0] = span_duration.name;
    sk->metric_fields[0] = &span_duration;
    sk->metric_cols[0] = -1;
    sk->excluded_col = -1;
    for (enum store_kind k = 0; k < KIND_COUNT; k++)
        build_kind_sql(k);
    for (size_t t = 0; t < TABLE_COUNT; t++) {
        store_table_desc *td = &L.tables[t];
        if (!td->name) {
            fail("table %zu has no description", t);
            continue;
        }
        td->columns = join(td, NULL, td->n_cols, ", ");
        for (size_t c = 0; c < td->n_cols; c++)
            if (td->cols[c].n_attrs)
                td->attr_cols[td->n_attr_cols++] = (int)c;
    }
}

static void init(void)
{
    pthread_once(&once, build);
}

const store_table_desc *store_layout_table(enum store_table t)
{
    init();
    return &L.tables[t];
}

const store_kind_desc *store_layout_kind(enum store_kind k)
{
    init();
    return &L.kinds[k];
}

const char *store_layout_columns(enum store_table t, size_t *ret_n)
{
    init();
    *ret_n = L.tables[t].n_cols;
    return L.tables[t].columns;
}

const char *store_layout_error(void)
{
    init();
    return L.error[0] ? L.error : NULL;
}

int store_layout_col(enum store_table t, enum store_source src, long index)
{
    const store_table_desc *d = store_layout_table(t);
    for (size_t c = 0; c < d->n_cols; c++)
        if (d->cols[c].source == src &&
            ((src != SRC_COMMON && src != SRC_FIELD) || d->cols[c].index == index))
            return (int)c;
    return -1;
}

const char *store_layout_filter_sql(enum store_filter f)
{
    switch (f) {
    case STORE_ROWS_PACER_LOGS: return " AND type IN ('jank', 'leak')";
    case STORE_ROWS_FRAMES: return " AND name >= 'pacer.frames.' AND name < 'pacer.frames/'";
    case STORE_ROWS_PACER_POINTS: return " AND name >= 'pacer.' AND name < 'pacer/'";
    default: return "";
    }
}
