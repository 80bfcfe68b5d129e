/* ClickHouse storage (store.h, ch_int.h): several pacerd instances, no
 * single writer, each batch counted once.
 *
 * Tables (database from the URL; with ?cluster=NAME each is a *_local
 * table on every node and a Distributed table over them):
 *   page_loads, startups, requests, spans, logs, metric_points
 *                  the raw rows (columns: ch_layout.c), partitioned
 *                  by the day they were received (rday; with ts_s in the
 *                  key as a constant, so that each part keeps its min and
 *                  max ts_s), sorted by (app, hour, session, ts_s, ts_ns,
 *                  identity):
 *                  ReplacingMergeTree
 *   origins        each resource and scope's JSON by its hash, per rday
 *   trace_index    per span row: (first 3 bytes of the trace id, as th,
 *                  its first two, and tl, the third; table, app, hour): a
 *                  trace is found by seeking it
 *   attempts       (app, batch, attempt): begun attempts, one row per batch
 *   pending        what each committed attempt adds to the rollups: per
 *                  (kind, app, version, name, 10 minutes) the records, the failed
 *                  ones and a DDSketch per metric (ch_int.h, ch_srow);
 *                  and per batch of it a manifest row (kind -1) saying
 *                  whether the batch was fresh in the attempt
 *   commits        the manifests, kept for good (copied by consolidation)
 *   rollups        consolidated pending rows: level 1 per commit hour,
 *                  level 2 per commit day (by 10 minutes, hour and day of data)
 *   slots          (level, slot): what consolidation has finished
 *   configs        config versions per app
 *
 * An attempt is one group commit of one pacerd instance: the writer
 * (ch_writer.c) says how a batch is inserted and counted exactly once.
 *
 * Consolidation (the keeper thread of every instance, ch_keeper.c):
 * commit hour u is summed into level-1 rollup rows once settle has passed
 * since it ended (settle > the deadline, so no fresh attempt whose retry
 * committed in u can still commit), winners only; commit day d into level
 * 2 once its hours are. The same slot done twice by two instances writes
 * the same rows twice: readers keep one per slot. A query reads level 2 up
 * to its watermark, level 1 after it, and pending after level 1's
 * (ch_read.c).
 *
 * Retention drops whole rday partitions; nothing is ever rewritten.
 */
#include "ch_int.h"

#include <pacer/base/clock.h>
#include <pacer/base/hash.h>
#include <pacer/base/thread.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define QUERY_TIMEOUT_MS 60000L

const char *ch_store_table_name(const ch_store *st, const char *name, char *buf, size_t size, bool local)
{
    snprintf(buf, size, "%s%s", name, local && st->cluster ? "_local" : "");
    return buf;
}

void ch_store_sql_str(jbuf *b, const char *s)
{
    ch_client_quote(b, s ? s : "", s ? strlen(s) : 0);
}

void ch_store_error_of(const ch_reply *r, store_error *ret)
{
    memset(ret, 0, sizeof *ret);
    /* ClickHouse's codes: 243 NOT_ENOUGH_SPACE, 164 READONLY */
    ret->kind = r->code == 243 ? STORE_ERR_FULL : r->code == 164 ? STORE_ERR_READ_ONLY : STORE_ERR_OTHER;
    snprintf(ret->msg, sizeof ret->msg, "%.*s", (int)sizeof ret->msg - 1, r->error);
}

const char *ch_store_settings(const ch_store *st)
{
    return st->cluster ? "insert_distributed_sync=1" : NULL;
}

int ch_store_write(ch_store *st, const char *sql, const void *data, size_t len, ch_reply *ret)
{
    return ch_client_query(st->ch, sql, data, len, ch_store_settings(st), ret);
}

int ch_store_read_query(ch_store *st, jbuf *q, ch_reply *ret, const char *what)
{
    int r = q->failed ? -ENOMEM : ch_store_read(st, q->data, ret, what);
    jbuf_free(q);
    return r < 0 && r != -ENOMEM ? -EIO : r;
}

int ch_store_read_rows(ch_store *st, jbuf *q, ch_reply *ret, rb_reader *rd, const char *what)
{
    int r = ch_store_read_query(st, q, ret, what);
    if (r == 0)
        rb_reader_init(rd, ret->body, ret->len);
    return r;
}

int ch_store_read_rowsf(ch_store *st, ch_reply *ret, rb_reader *rd, const char *what, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *sql;
    int n = vasprintf(&sql, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -ENOMEM;
    int r = ch_store_read(st, sql, ret, what);
    free(sql);
    if (r < 0)
        return r == -ENOMEM ? r : -EIO;
    rb_reader_init(rd, ret->body, ret->len);
    return 0;
}

int ch_store_read(ch_store *st, const char *sql, ch_reply *ret, const char *what)
{
    int r = ch_client_query(st->ch, sql, NULL, 0, NULL, ret);
    store_error err;
    if (r < 0)
        ch_store_error_of(ret, &err);
    health_read(&st->health, r < 0 ? &err : NULL, what);
    return r;
}

void ch_store_say(ch_store *st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    health_vlog(st->log, st->log_ctx, fmt, ap);
    va_end(ap);
}

/* ---- schema ---- */

typedef struct ddl {
    const char *name;
    const char *columns;
    const char *engine; /* "MergeTree PARTITION BY … ORDER BY …" */
    const char *shard_key;
} ddl;

#define SKETCH_DDL                                                                                              \
    "kind Int8, app String, version String, name String, grain UInt8, t Int32, cnt UInt64, failed UInt64, sk String"

static const ddl fixed_tables[] = {
    {"origins", "which UInt8, id UInt64, json String, rday UInt32",
     "ReplacingMergeTree PARTITION BY rday ORDER BY (which, id)", "id"},
    /* th and tl, not one UInt32: sorted, th changes slowly and compresses
     * to a third of a byte, tl is a byte; together they took 3 */
    {"trace_index", "th UInt16, tl UInt8, tbl UInt8, app String, hour Int32, rday UInt32",
     "ReplacingMergeTree PARTITION BY rday ORDER BY (th, tl, tbl, app, hour)", "th"},
    {"attempts", "app String, batch String, att UInt64, rday UInt32, at DateTime DEFAULT now()",
     "MergeTree PARTITION BY rday ORDER BY (app, batch)", "cityHash64(app, batch)"},
    {"pending", "att UInt64, at DateTime DEFAULT now(), rday UInt32, batch String, fresh UInt8, " SKETCH_DDL,
     "MergeTree PARTITION BY rday ORDER BY (app, kind, t, att)", "att"},
    {"commits", "app String, batch String, att UInt64, fresh UInt8, at UInt32, rday UInt32",
     "MergeTree PARTITION BY rday ORDER BY (app, batch)", "cityHash64(app, batch)"},
    {"rollups", "lvl UInt8, slot UInt32, rday UInt32, " SKETCH_DDL,
     /* small granules: a query reads a few hundred rows of a tier and
      * grain (a month of days) among a day's thousands of ten minutes */
     "ReplacingMergeTree PARTITION BY rday ORDER BY (app, kind, lvl, grain, t, name, version, slot)"
     " SETTINGS index_granularity = 256",
     "cityHash64(app, name)"},
    {"slots", "lvl UInt8, slot UInt32, at DateTime DEFAULT now()", "MergeTree ORDER BY (lvl, slot)", "slot"},
    {"configs", "app String, version Int64, etag String, xml String, created Int64",
     "MergeTree ORDER BY (app, version)", "cityHash64(app)"},
    /* the health's probe: one row per instance once merged (an insert proves that a batch could commit) */
    {"probes", "who String, at DateTime DEFAULT now()", "ReplacingMergeTree ORDER BY who", "cityHash64(who)"},
    /* the records cleaning kept out (or counted: outliers), for the cleaning counts; one per identity */
    {"cleaned", "app String, reason String, rid UInt64, ts Int64, rday UInt32",
     "ReplacingMergeTree PARTITION BY rday ORDER BY (app, reason, rid)", "cityHash64(app)"},
};

static int exec_on(ch_client *c, const char *sql, char *err, size_t err_size)
{
    ch_reply r;
    int rc = ch_client_query(c, sql, NULL, 0, NULL, &r);
    if (rc < 0)
        snprintf(err, err_size, "%s", r.error);
    ch_client_reply_free(&r);
    return rc;
}

/* The length of cols' first definition: up to its first comma outside
 * parentheses (an ALIAS's expression has some inside). */
static size_t def_len(const char *cols)
{
    int depth = 0;
    size_t n = 0;
    for (; cols[n] && (cols[n] != ',' || depth > 0); n++)
        depth += cols[n] == '(' ? 1 : cols[n] == ')' ? -1 : 0;
    return n;
}

/* The names of table `local`'s columns (TabSeparated, one a line) that
 * match `where` (SQL, may be ""), in *ret (ch_client_reply_free it); 0 or
 * negative errno with the reason in err. */
static int columns_of(ch_client *c, const char *local, const char *where, ch_reply *ret, char *err, size_t err_size)
{
    jbuf q;
    jbuf_init(&q);
    jbuf_puts(&q, "SELECT name FROM system.columns WHERE database = ");
    ch_store_sql_str(&q, ch_client_url(c)->database);
    jbuf_puts(&q, " AND table = ");
    ch_store_sql_str(&q, local);
    jbuf_puts(&q, where);
    jbuf_puts(&q, " FORMAT TabSeparated");
    int rc = q.failed ? -ENOMEM : ch_client_query(c, q.data, NULL, 0, NULL, ret);
    jbuf_free(&q);
    if (rc < 0)
        snprintf(err, err_size, "%s", q.failed ? "out of memory" : ret->error);
    return rc;
}

/* Adds to table `name` the columns of cols ("a T, b U, …") it lacks: a
 * field added to the schema since the table was made. */
static int add_missing(ch_client *c, const char *name, const char *cols, char *err, size_t err_size)
{
    ch_reply r;
    int rc = columns_of(c, name, "", &r, err, err_size);
    if (rc < 0)
        return rc;
    const char *p = cols;
    while (*p && rc == 0) {
        size_t n = def_len(p);
        char def[512];
        snprintf(def, sizeof def, "%.*s", (int)n, p);
        char *d = def;
        while (*d == ' ')
            d++;
        size_t nl = strcspn(d, " ");
        bool have = false;
        for (const char *line = r.body; line && *line;) {
            size_t ll = strcspn(line, "\n");
            if (ll == nl && strncmp(line, d, nl) == 0)
                have = true;
            line += ll + (line[ll] == '\n');
        }
        if (!have) {
            char sql[1024];
            snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN %s", name, d);
            rc = exec_on(c, sql, err, err_size);
        }
        p += n + (p[n] == ',');
    }
    ch_client_reply_free(&r);
    return rc;
}

static int create_table(ch_store *st, ch_client *c, const char *name, const char *cols, const char *engine,
                        const char *shard_key, char *err, size_t err_size)
{
    char local[96], sql[8192];
    ch_store_table_name(st, name, local, sizeof local, true);
    snprintf(sql, sizeof sql, "CREATE TABLE IF NOT EXISTS %s (%s) ENGINE = %s", local, cols, engine);
    int r = exec_on(c, sql, err, err_size);
    if (r == 0)
        r = add_missing(c, local, cols, err, err_size);
    if (r == 0 && st->cluster) {
        snprintf(sql, sizeof sql, "CREATE TABLE IF NOT EXISTS %s AS %s ENGINE = Distributed(%s, %s, %s, %s)", name,
                 local, ch_client_url(c)->cluster, ch_client_url(c)->database, local, shard_key);
        r = exec_on(c, sql, err, err_size);
        if (r == 0)
            r = add_missing(c, name, cols, err, err_size);
    }
    return r;
}

/* Whether table `local` was made before ts was kept as ts_s and ts_ns (a
 * span's id as span_xor, the trace index's 24 bits as th and tl): it has
 * the column `old` of its own. Such a table cannot be altered into the new
 * one (its sort key names that column): -EEXIST, said in err. */
static int refuse_old_layout(ch_client *c, const char *local, const char *old, char *err, size_t err_size)
{
    char where[128];
    snprintf(where, sizeof where, " AND name = '%s' AND default_kind = ''", old);
    ch_reply r;
    int rc = columns_of(c, local, where, &r, err, err_size);
    if (rc < 0)
        return rc;
    if (r.body && *r.body) {
        snprintf(err, err_size,
                 "table %s was made by an older pacerd (its %s kept whole): give this one another database", local,
                 old);
        rc = -EEXIST;
    }
    ch_client_reply_free(&r);
    return rc;
}

static int create_schema(ch_store *st, ch_client *c, char *err, size_t err_size)
{
    char sql[256];
    ch_reply r;
    snprintf(sql, sizeof sql, "CREATE DATABASE IF NOT EXISTS %s", ch_client_url(c)->database);
    if (ch_client_query_nodb(c, sql, &r) < 0) {
        snprintf(err, err_size, "%s", r.error);
        return -EIO;
    }
    ch_client_reply_free(&r);
    char local[96];
    ch_store_table_name(st, "trace_index", local, sizeof local, true);
    if (refuse_old_layout(c, local, "t", err, err_size) < 0)
        return -EIO;
    for (enum store_table tb = 0; tb < TABLE_COUNT; tb++) {
        ch_store_table_name(st, ch_layout_table(tb)->name, local, sizeof local, true);
        if (refuse_old_layout(c, local, "ts", err, err_size) < 0)
            return -EIO;
    }
    for (size_t i = 0; i < sizeof fixed_tables / sizeof fixed_tables[0]; i++) {
        const ddl *d = &fixed_tables[i];
        if (create_table(st, c, d->name, d->columns, d->engine, d->shard_key, err, err_size) < 0)
            return -EIO;
    }
    for (enum store_table tb = 0; tb < TABLE_COUNT; tb++) {
        const ch_table *t = ch_layout_table(tb);
        char cols[8192], engine[512];
        size_t o = 0;
        for (size_t i = 0; i < t->n_cols && o < sizeof cols; i++)
            o += (size_t)snprintf(cols + o, sizeof cols - o, "%s%s %s", i ? ", " : "", t->cols[i].name,
                                  t->cols[i].type);
        /* the row's write mark (ch_marks.c); 0 in rows older than it */
        if (o < sizeof cols)
            o += (size_t)snprintf(cols + o, sizeof cols - o, ", ins Int64 DEFAULT 0%s", t->aliases);
        /* one partition per receive day; ts_s in the key too, though a
         * constant of it, so that each part keeps its rows' min and max
         * ts_s (ClickHouse keeps them for the partition key's columns): a
         * query of a time range skips the parts outside it */
        snprintf(engine, sizeof engine,
                 "ReplacingMergeTree PARTITION BY (rday, intDiv(ts_s, 4611686018427387904)) ORDER BY (%s)",
                 t->order_by);
        if (o >= sizeof cols || create_table(st, c, t->name, cols, engine, t->shard_key, err, err_size) < 0)
            return -EIO;
    }
    return 0;
}

/* ---- health, figures ---- */

static void ch_health_get(store *s, unsigned wait_ms, store_health *ret)
{
    ch_store *st = (ch_store *)s;
    int64_t last_ok;
    health_snapshot(&st->health, ret, &last_ok);
    if (!wait_ms || (ret->fault == STORE_OK && mono_ns() - last_ok < 1000000000LL))
        return;
    /* nothing written for a second, or failing: does an insert commit? (A
     * read would not do: a ClickHouse short of room, or whose user became
     * read-only, still answers one.) */
    ch_client *probe = ch_client_new(ch_client_url(st->ch), wait_ms < 200 ? 200 : (long)wait_ms);
    jbuf q;
    jbuf_init(&q);
    jbuf_puts(&q, "INSERT INTO probes (who) VALUES (");
    ch_store_sql_str(&q, st->who);
    jbuf_puts(&q, ")");
    ch_reply rep = {.error = "out of memory"};
    int64_t t0 = mono_ns();
    int r = probe && !q.failed ? ch_client_query(probe, q.data, NULL, 0, ch_store_settings(st), &rep) : -ENOMEM;
    jbuf_free(&q);
    if (r == 0)
        ch_client_reply_free(&rep);
    ch_client_free(probe);
    store_error err;
    if (r < 0)
        ch_store_error_of(&rep, &err);
    health_write(&st->health, r < 0 ? &err : NULL, HEALTH_PROBE, mono_ns() - t0, NULL, 0, 0);
    health_snapshot(&st->health, ret, &last_ok);
}

static void ch_get_stats(store *s, store_stats *ret)
{
    ch_store *st = (ch_store *)s;
    health_stats(&st->health, ret);
    pthread_mutex_lock(&st->lock);
    ret->queued_items = st->queued_items;
    pthread_mutex_unlock(&st->lock);
    ret->db_bytes = __atomic_load_n(&st->db_bytes, __ATOMIC_RELAXED);
    ret->wal_bytes = ret->disk_free_bytes = -1;
}

/* ---- configs ---- */

static int ch_config_put(store *s, const char *app, const char *xml, size_t len, int64_t *ret_version)
{
    ch_store *st = (ch_store *)s;
    jbuf q;
    jbuf_init(&q);
    jbuf_puts(&q, "SELECT max(version) FROM configs WHERE app = ");
    ch_store_sql_str(&q, app);
    jbuf_puts(&q, " FORMAT TabSeparated");
    ch_reply rep;
    int r = q.failed ? -ENOMEM : ch_client_query(st->ch, q.data, NULL, 0, NULL, &rep);
    jbuf_free(&q);
    int64_t v = 1;
    if (r == 0) {
        v = strtoll(rep.body, NULL, 10) + 1;
        ch_client_reply_free(&rep);
        uint64_t h = fnv1a64(FNV1A64_INIT, xml, len);
        char etag[64];
        snprintf(etag, sizeof etag, "\"%" PRId64 "-%016" PRIx64 "\"", v, h);
        rb_buf b;
        rb_init(&b);
        rb_str(&b, app, strlen(app));
        rb_i64(&b, v);
        rb_str(&b, etag, strlen(etag));
        rb_str(&b, xml, len);
        rb_i64(&b, wall_ns());
        r = b.failed ? -ENOMEM
                     : ch_store_write(st, "INSERT INTO configs (app, version, etag, xml, created) FORMAT RowBinary", b.p,
                                b.len, &rep);
        rb_free(&b);
        if (r == 0)
            ch_client_reply_free(&rep);
    }
    store_error err;
    if (r < 0)
        ch_store_error_of(&rep, &err);
    health_write(&st->health, r < 0 ? &err : NULL, HEALTH_OTHER, 0, NULL, 0, 0);
    if (r < 0)
        return -EIO;
    *ret_version = v;
    return 0;
}

static int ch_config_get(store *s, const char *app, char **ret_xml, size_t *ret_len, char **ret_etag,
                         int64_t *ret_version)
{
    ch_store *st = (ch_store *)s;
    jbuf q;
    jbuf_init(&q);
    jbuf_puts(&q, "SELECT version, etag, xml FROM configs WHERE app = ");
    ch_store_sql_str(&q, app);
    jbuf_puts(&q, " ORDER BY version DESC, created DESC LIMIT 1 FORMAT RowBinary");
    ch_reply rep;
    rb_reader rd;
    int r = ch_store_read_rows(st, &q, &rep, &rd, "a config read");
    if (r < 0)
        return r;
    if (!rb_more(&rd)) {
        ch_client_reply_free(&rep);
        return -ENOENT;
    }
    int64_t v = rb_get_i64(&rd);
    size_t el, xl;
    const char *etag = rb_get_str(&rd, &el), *xml = rb_get_str(&rd, &xl);
    if (rd.bad) {
        ch_client_reply_free(&rep);
        return -EIO;
    }
    *ret_xml = strndup(xml, xl);
    *ret_etag = strndup(etag, el);
    ch_client_reply_free(&rep);
    if (!*ret_xml || !*ret_etag) {
        free(*ret_xml);
        free(*ret_etag);
        return -ENOMEM;
    }
    *ret_len = xl;
    *ret_version = v;
    return 0;
}

/* ---- open / close ---- */

static void ch_close(store *s)
{
    ch_store *st = (ch_store *)s;
    pthread_mutex_lock(&st->lock);
    st->stopping = true;
    pthread_cond_broadcast(&st->wake);
    pthread_cond_broadcast(&st->keeper_wake);
    pthread_mutex_unlock(&st->lock);
    for (size_t i = 0; i < st->n_writers; i++)
        pthread_join(st->writers[i], NULL);
    if (st->keeper_started)
        pthread_join(st->keeper, NULL);
    ch_client_free(st->ch);
    for (size_t i = 0; i < st->n_nodes; i++)
        ch_client_free(st->nodes[i]);
    free(st->nodes);
    free(st->seen);
    health_destroy(&st->health);
    free(st);
}

static int ch_explain(store *s, void (*cb)(void *ctx, const char *name, const char *sql, const char *plan), void *ctx)
{
    return -ENOTSUP; /* ClickHouse 18.16 has no EXPLAIN */
}

/* The tallies (`cleaned`): reason, records, last ts per reason of app
 * (NULL: all apps). */
static int tallies_query(ch_store *st, const char *app, ch_reply *rep)
{
    jbuf q;
    jbuf_init(&q);
    jbuf_puts(&q, "SELECT reason, uniqExact(rid), max(ts) FROM cleaned");
    if (app) {
        jbuf_puts(&q, " WHERE app = ");
        ch_store_sql_str(&q, app);
    }
    jbuf_puts(&q, " GROUP BY reason ORDER BY reason FORMAT RowBinary");
    return ch_store_read_query(st, &q, rep, "the cleaning counts");
}

static int ch_tallies(store *s, const char *app,
                     void (*cb)(void *ctx, const char *reason, uint64_t count, int64_t last_ns), void *ctx)
{
    ch_store *st = (ch_store *)s;
    ch_reply rep;
    int r = tallies_query(st, app, &rep);
    if (r < 0)
        return r;
    rb_reader rd;
    rb_reader_init(&rd, rep.body, rep.len);
    while (rb_more(&rd)) {
        size_t n;
        const char *reason = rb_get_str(&rd, &n);
        uint64_t count = rb_get_u64(&rd);
        int64_t last = rb_get_i64(&rd);
        char name[64];
        if (rd.bad || n >= sizeof name)
            break;
        memcpy(name, reason, n);
        name[n] = 0;
        cb(ctx, name, count, last);
    }
    ch_client_reply_free(&rep);
    return rd.bad ? -EIO : 0;
}

static const store_backend store_backend_clickhouse = {
    .name = "clickhouse",
    .close = ch_close,
    .submit = ch_writer_submit,
    .tallies = ch_tallies,
    .coming = ch_writer_coming,
    .health_get = ch_health_get,
    .get_stats = ch_get_stats,
    .config_api_put = ch_config_put,
    .config_api_get = ch_config_get,
    .scan = ch_read_scan,
    .apps = ch_read_apps,
    .trace = ch_read_trace,
    .search_spans = ch_read_search_spans,
    .search_logs = ch_read_search_logs,
    .search_points = ch_read_search_points,
    .explain = ch_explain,
    .version_rows = ch_read_version_rows,
    .newest = ch_newest,
    .dash_explain = ch_newest_explain,
    .marks_last = ch_marks_last,
    .marks_step = ch_marks_step,
    .marks_behind = ch_marks_behind,
    .rows_after = ch_marks_rows,
    .marks_forget = ch_marks_forget,
};

/* The nodes of a cluster URL "…//h1:p1,h2:p2/…": one URL each. */
static int split_nodes(const char *url, char ***ret, size_t *ret_n)
{
    const char *s = strstr(url, "://");
    const char *host = s + 3;
    const char *at = NULL;
    const char *end = host + strcspn(host, "/?");
    for (const char *p = host; p < end; p++)
        if (*p == '@')
            at = p;
    const char *h = at ? at + 1 : host;
    size_t n = 1;
    for (const char *p = h; p < end; p++)
        n += *p == ',';
    char **out = calloc(n, sizeof *out);
    if (!out)
        return -ENOMEM;
    const char *p = h;
    for (size_t i = 0; i < n; i++) {
        size_t len = strcspn(p, ",/?");
        if (p + len > end)
            len = (size_t)(end - p);
        if (asprintf(&out[i], "%.*s%.*s%s", (int)(h - url), url, (int)len, p, end) < 0)
            out[i] = NULL;
        p += len + 1;
    }
    *ret = out;
    *ret_n = n;
    return 0;
}

store *ch_store_open(const char *url, const store_options *opt, char *err, size_t err_size)
{
    const char *layout = store_layout_error();
    if (layout) {
        snprintf(err, err_size, "the record schema does not fit the store: %s", layout);
        return NULL;
    }
    char **nodes = NULL;
    size_t n_nodes = 0;
    if (strncmp(url, "http", 4) != 0 || !strstr(url, "://") || split_nodes(url, &nodes, &n_nodes) < 0) {
        snprintf(err, err_size, "--clickhouse: expected http://[USER[:PASSWORD]@]HOST[:PORT]/[DATABASE][?cluster=NAME]");
        return NULL;
    }
    ch_store *st = calloc(1, sizeof *st);
    ch_url u = {0};
    char why[512];
    int r = st ? 0 : -ENOMEM;
    if (r == 0 && ch_client_url_parse(nodes[0], &u, why, sizeof why) < 0) {
        snprintf(err, err_size, "--clickhouse: %s", why);
        r = -EINVAL;
    }
    if (r == 0 && n_nodes > 1 && !u.cluster) {
        snprintf(err, err_size, "--clickhouse: several hosts need ?cluster=NAME (the cluster of the Distributed tables)");
        r = -EINVAL;
    }
    if (r == 0) {
        st->backend = &store_backend_clickhouse;
        st->cluster = u.cluster != NULL;
        st->log = opt->log;
        st->log_ctx = opt->log_ctx;
        st->max_queued = opt->max_queued_items ? opt->max_queued_items : 200000;
        st->gather_ns = (int64_t)opt->clickhouse_gather_ms * 1000000;
        st->gather_items = st->max_queued / 4;
        st->submitters = opt->submitters;
        st->unit_s = opt->clickhouse_unit_s ? (int64_t)opt->clickhouse_unit_s : 3600;
        st->day_s = opt->clickhouse_day_s ? (int64_t)opt->clickhouse_day_s : 86400;
        st->settle_s = opt->clickhouse_settle_s ? (int64_t)opt->clickhouse_settle_s : 360;
        if (86400 % st->unit_s || st->day_s % st->unit_s || 86400 % st->day_s) {
            snprintf(err, err_size, "the consolidation unit must divide its day, and the day 86400 s");
            r = -EINVAL;
        }
    }
    if (r == 0 && !(st->ch = ch_client_new(&u, QUERY_TIMEOUT_MS))) {
        snprintf(err, err_size, "out of memory");
        r = -ENOMEM;
    }
    /* the schema on every node named */
    if (r == 0 && !(st->nodes = calloc(n_nodes, sizeof *st->nodes))) {
        snprintf(err, err_size, "out of memory");
        r = -ENOMEM;
    }
    for (size_t i = 0; r == 0 && i < n_nodes; i++) {
        ch_url nu;
        ch_client *c = NULL;
        if (ch_client_url_parse(nodes[i], &nu, why, sizeof why) < 0) {
            snprintf(err, err_size, "--clickhouse: %s", why);
            r = -EINVAL;
            break;
        }
        c = ch_client_new(&nu, QUERY_TIMEOUT_MS);
        if (c)
            st->nodes[st->n_nodes++] = c;
        if (!c || create_schema(st, c, why, sizeof why) < 0) {
            snprintf(err, err_size, "%s: cannot create the schema: %s", nu.shown, c ? why : "out of memory");
            r = -EIO;
        }
        ch_client_url_clear(&nu);
    }
    ch_client_url_clear(&u);
    for (size_t i = 0; i < n_nodes; i++)
        free(nodes[i]);
    free(nodes);
    if (r < 0) {
        if (st) {
            ch_client_free(st->ch);
            for (size_t i = 0; i < st->n_nodes; i++)
                ch_client_free(st->nodes[i]);
            free(st->nodes);
        }
        free(st);
        return NULL;
    }
    st->db_bytes = -1;
    st->retention_days = opt->clickhouse_retention_days;
    health_init(&st->health, NULL, opt->log, opt->log_ctx);
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    snprintf(st->who, sizeof st->who, "%s:%ld", host, (long)getpid());
    pthread_mutex_init(&st->lock, NULL);
    pthread_mutex_init(&st->olock, NULL);
    cond_init_monotonic(&st->wake);
    pthread_cond_init(&st->done, NULL);
    cond_init_monotonic(&st->keeper_wake);
    size_t nw = opt->clickhouse_writers ? opt->clickhouse_writers : 2;
    if (nw > sizeof st->writers / sizeof st->writers[0])
        nw = sizeof st->writers / sizeof st->writers[0];
    for (size_t i = 0; i < nw; i++) {
        if (thread_start(&st->writers[i], "pacerd-chwrite", ch_writer_main, st) < 0)
            break;
        st->n_writers++;
    }
    if (st->n_writers && thread_start(&st->keeper, "pacerd-keeper", ch_keeper_main, st) == 0)
        st->keeper_started = true;
    if (!st->n_writers || !st->keeper_started) {
        snprintf(err, err_size, "cannot start the store's threads");
        ch_close((store *)st);
        return NULL;
    }
    return (store *)st;
}
