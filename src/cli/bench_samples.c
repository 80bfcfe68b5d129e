/* pacer bench: samples and their file format (bench_samples.h).
 *
 * The metrics of a set are one sorted array, found by binary
 * search (bench_metric_cmp); each holds cap_runs values so that adding a run costs one
 * realloc per metric only when the capacity doubles.
 *
 * The readers check everything they take: the format's version, the type
 * of every known member, each metric's length against the runs, finite
 * non-negative values, names, the limits; the first problem stops the read
 * with its place named. Nothing read is trusted to be sorted or unique.
 */
#include "bench_samples.h"

#include <pacer/base/json.h>
#include <pacer/schema.h>

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FORMAT_VERSION 1

/* ---- metric names and their order ---- */

typedef struct metric_key {
    int group;          /* 0 start-up, 1 page */
    const char *cls;    /* page class (not terminated) */
    size_t cls_len;
    unsigned long ord;  /* instance, 1-based */
    long field;         /* index in the type's shape, or a large number */
    const char *fname;  /* the field's name (not terminated) */
    size_t fname_len;
} metric_key;

/* "X[K]" → X's length and K; 1 and the whole length without a suffix. */
static size_t split_ordinal(const char *s, size_t n, unsigned long *ret_ord)
{
    *ret_ord = 1;
    if (n < 4 || s[n - 1] != ']')
        return n;
    size_t open = n - 1;
    while (open > 0 && s[open - 1] != '[')
        open--;
    if (open == 0 || open == n - 1)
        return n;
    unsigned long k = 0;
    for (size_t i = open; i < n - 1; i++) {
        if (s[i] < '0' || s[i] > '9' || k > 100000000UL)
            return n;
        k = k * 10 + (unsigned long)(s[i] - '0');
    }
    if (k < 2)
        return n;
    *ret_ord = k;
    return open - 1;
}

static metric_key metric_key_of(const char *name)
{
    metric_key k = {0};
    const char *dot = strrchr(name, '.');
    const pacer_shape *shape;
    if (dot) {
        k.group = 1;
        k.cls = name;
        k.cls_len = split_ordinal(name, (size_t)(dot - name), &k.ord);
        k.fname = dot + 1;
        k.fname_len = strlen(dot + 1);
        shape = pacer_record_type_get(PACER_RECORD_PAGE)->shape;
    } else {
        k.cls = "";
        k.fname = name;
        k.fname_len = split_ordinal(name, strlen(name), &k.ord);
        shape = pacer_record_type_get(PACER_RECORD_STARTUP)->shape;
    }
    k.field = pacer_shape_find(shape, k.fname, k.fname_len);
    if (k.field < 0)
        k.field = 1000;
    return k;
}

static int bytes_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

/* Start-up before pages; pages by class, instance, field; the schema's
 * field order; last the whole name, so the order is total. */
int bench_metric_cmp(const char *a, const char *b)
{
    metric_key x = metric_key_of(a), y = metric_key_of(b);
    int c;
    if (x.group != y.group)
        return x.group - y.group;
    if ((c = bytes_cmp(x.cls, x.cls_len, y.cls, y.cls_len)))
        return c;
    if (x.ord != y.ord)
        return x.ord < y.ord ? -1 : 1;
    if (x.field != y.field)
        return x.field < y.field ? -1 : 1;
    return strcmp(a, b);
}

static bool name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > BENCH_MAX_NAME)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return false;
    return true;
}

/* ---- the set ---- */

bench_set *bench_set_new(void)
{
    return calloc(1, sizeof(bench_set));
}

static void env_release(bench_env *e)
{
    free(e->program);
    free(e->cpu_model);
    free(e->kernel);
    free(e->gtk);
    free(e->pacer);
    free(e->source);
    *e = (bench_env){0};
}

void bench_set_free(bench_set *set)
{
    if (!set)
        return;
    env_release(&set->env);
    for (size_t i = 0; i < set->n_runs; i++)
        free(set->runs[i].session);
    free(set->runs);
    for (size_t i = 0; i < set->n_metrics; i++) {
        free(set->metrics[i].name);
        free(set->metrics[i].v);
    }
    free(set->metrics);
    free(set);
}

int bench_env_set(char **slot, const char *value)
{
    char *c = value ? strdup(value) : NULL;
    if (value && !c)
        return -ENOMEM;
    free(*slot);
    *slot = c;
    return 0;
}

long bench_set_add_run(bench_set *set, const bench_run *notes)
{
    if (set->n_runs >= BENCH_MAX_RUNS)
        return -E2BIG;
    if (set->n_runs == set->cap_runs) {
        size_t cap = set->cap_runs ? set->cap_runs * 2 : 16;
        bench_run *runs = realloc(set->runs, cap * sizeof(*runs));
        if (!runs)
            return -ENOMEM;
        set->runs = runs;
        for (size_t i = 0; i < set->n_metrics; i++) {
            double *v = realloc(set->metrics[i].v, cap * sizeof(double));
            if (!v)
                return -ENOMEM; /* the metrics grown so far keep their larger buffers */
            set->metrics[i].v = v;
        }
        set->cap_runs = cap;
    }
    bench_run r = *notes;
    r.session = NULL;
    if (notes->session && !(r.session = strdup(notes->session)))
        return -ENOMEM;
    size_t k = set->n_runs++;
    set->runs[k] = r;
    for (size_t i = 0; i < set->n_metrics; i++)
        set->metrics[i].v[k] = NAN;
    return (long)k;
}

/* The index where name is, or where it would go; *found tells which. */
static size_t metric_slot(const bench_set *set, const char *name, bool *found)
{
    size_t lo = 0, hi = set->n_metrics;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = bench_metric_cmp(set->metrics[mid].name, name);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

const bench_metric *bench_set_find(const bench_set *set, const char *name)
{
    bool found;
    size_t i = metric_slot(set, name, &found);
    return found ? &set->metrics[i] : NULL;
}

int bench_set_put(bench_set *set, size_t run, const char *name, double v)
{
    if (!name_ok(name))
        return -EINVAL;
    bool found;
    size_t i = metric_slot(set, name, &found);
    if (!found) {
        if (set->n_metrics >= BENCH_MAX_METRICS)
            return -E2BIG;
        if (set->n_metrics == set->cap_metrics) {
            size_t cap = set->cap_metrics ? set->cap_metrics * 2 : 16;
            bench_metric *m = realloc(set->metrics, cap * sizeof(*m));
            if (!m)
                return -ENOMEM;
            set->metrics = m;
            set->cap_metrics = cap;
        }
        bench_metric m = {strdup(name), malloc((set->cap_runs ? set->cap_runs : 1) * sizeof(double))};
        if (!m.name || !m.v) {
            free(m.name);
            free(m.v);
            return -ENOMEM;
        }
        for (size_t k = 0; k < set->n_runs; k++)
            m.v[k] = NAN;
        memmove(set->metrics + i + 1, set->metrics + i, (set->n_metrics - i) * sizeof(*set->metrics));
        set->metrics[i] = m;
        set->n_metrics++;
    }
    if (run < set->n_runs)
        set->metrics[i].v[run] = v;
    return 0;
}

size_t bench_metric_values(const bench_set *set, const bench_metric *m, double *out)
{
    size_t n = 0;
    for (size_t k = 0; k < set->n_runs; k++)
        if (!isnan(m->v[k]))
            out[n++] = m->v[k];
    return n;
}

void bench_set_filter(bench_set *set, const char *const *patterns, size_t n)
{
    if (n == 0)
        return;
    size_t kept = 0;
    for (size_t i = 0; i < set->n_metrics; i++) {
        bool keep = false;
        for (size_t p = 0; p < n && !keep; p++)
            keep = fnmatch(patterns[p], set->metrics[i].name, 0) == 0;
        if (keep) {
            set->metrics[kept++] = set->metrics[i];
        } else {
            free(set->metrics[i].name);
            free(set->metrics[i].v);
        }
    }
    set->n_metrics = kept;
}

static int env_copy(bench_env *to, const bench_env *from)
{
    to->cpus = from->cpus;
    to->nice = from->nice;
    return bench_env_set(&to->program, from->program) | bench_env_set(&to->cpu_model, from->cpu_model) |
           bench_env_set(&to->kernel, from->kernel) | bench_env_set(&to->gtk, from->gtk) |
           bench_env_set(&to->pacer, from->pacer) | bench_env_set(&to->source, from->source);
}

bench_set *bench_set_pick(const bench_set *set, const size_t *pick, size_t n)
{
    bench_set *out = bench_set_new();
    if (!out || env_copy(&out->env, &set->env) < 0)
        goto fail;
    for (size_t k = 0; k < n; k++) {
        long r = bench_set_add_run(out, &set->runs[pick[k]]);
        if (r < 0)
            goto fail;
        for (size_t i = 0; i < set->n_metrics; i++)
            if (bench_set_put(out, (size_t)r, set->metrics[i].name, set->metrics[i].v[pick[k]]) < 0)
                goto fail;
    }
    return out;
fail:
    bench_set_free(out);
    return NULL;
}

/* ---- one run's records → metrics ---- */

typedef struct page_seen {
    const char *cls; /* into names */
    int64_t ts;
    uint64_t instance;
    double v[PACER_PAGE_N_FIELDS]; /* NAN: absent */
} page_seen;

struct bench_collect {
    bool cold_seen;
    double cold[PACER_STARTUP_N_FIELDS];
    size_t n_warm, cap_warm;
    double *warm;
    size_t n_pages, cap_pages;
    page_seen *pages;
    char **names; /* the page classes' copies, one per page */
};

bench_collect *bench_collect_new(void)
{
    return calloc(1, sizeof(bench_collect));
}

static void collect_reset(bench_collect *c)
{
    for (size_t i = 0; i < c->n_pages; i++)
        free(c->names[i]);
    c->n_pages = 0;
    c->n_warm = 0;
    c->cold_seen = false;
}

void bench_collect_free(bench_collect *c)
{
    if (!c)
        return;
    collect_reset(c);
    free(c->warm);
    free(c->pages);
    free(c->names);
    free(c);
}

static double field_ms(const pacer_record *rec, const pacer_shape *shape, unsigned f)
{
    if (!(shape->fields[f].flags & PACER_FIELD_METRIC) || shape->fields[f].type != PACER_TYPE_MS ||
        !pacer_record_has(rec, f))
        return NAN;
    return pacer_record_ms(rec, f);
}

int bench_collect_record(bench_collect *c, const pacer_record *rec)
{
    const pacer_record_type *type = pacer_record_type_of(rec);
    if (!type)
        return 0;
    const pacer_shape *shape = type->shape;
    if (type->id == PACER_RECORD_STARTUP) {
        if (pacer_record_int(rec, PACER_STARTUP_OUTLIER))
            return 0; /* Matrix leaves such starts out, and so does pacer report */
        const char *kind = pacer_record_str(rec, PACER_STARTUP_KIND);
        if (kind && strcmp(kind, "cold") == 0) {
            if (c->cold_seen)
                return 0;
            c->cold_seen = true;
            for (unsigned f = 0; f < PACER_STARTUP_N_FIELDS; f++)
                c->cold[f] = f == PACER_STARTUP_WARM_MS ? NAN : field_ms(rec, shape, f);
        } else if (kind && strcmp(kind, "warm") == 0 && pacer_record_has(rec, PACER_STARTUP_WARM_MS)) {
            if (c->n_warm == c->cap_warm) {
                size_t cap = c->cap_warm ? c->cap_warm * 2 : 4;
                double *w = realloc(c->warm, cap * sizeof(*w));
                if (!w)
                    return -ENOMEM;
                c->warm = w;
                c->cap_warm = cap;
            }
            c->warm[c->n_warm++] = pacer_record_ms(rec, PACER_STARTUP_WARM_MS);
        }
        return 0;
    }
    if (type->id != PACER_RECORD_PAGE)
        return 0;
    if (c->n_pages == c->cap_pages) {
        size_t cap = c->cap_pages ? c->cap_pages * 2 : 16;
        page_seen *p = realloc(c->pages, cap * sizeof(*p));
        if (!p)
            return -ENOMEM;
        c->pages = p;
        char **names = realloc(c->names, cap * sizeof(*names));
        if (!names)
            return -ENOMEM;
        c->names = names;
        c->cap_pages = cap;
    }
    char *cls = strdup(pacer_record_str(rec, PACER_PAGE_CLASS));
    if (!cls)
        return -ENOMEM;
    page_seen *p = &c->pages[c->n_pages];
    c->names[c->n_pages++] = cls;
    p->cls = cls;
    p->ts = pacer_record_ts(rec);
    p->instance = pacer_record_u64(rec, PACER_PAGE_INSTANCE);
    for (unsigned f = 0; f < PACER_PAGE_N_FIELDS; f++)
        p->v[f] = field_ms(rec, shape, f);
    return 0;
}

static int page_seen_cmp(const void *a, const void *b)
{
    const page_seen *x = a, *y = b;
    int c = strcmp(x->cls, y->cls);
    if (c)
        return c;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return (x->instance > y->instance) - (x->instance < y->instance);
}

/* "NAME" or "NAME[K]" into buf. */
static void ordinal_name(char *buf, size_t size, const char *name, size_t k)
{
    if (k == 1)
        snprintf(buf, size, "%s", name);
    else
        snprintf(buf, size, "%s[%zu]", name, k);
}

long bench_collect_finish(bench_collect *c, bench_set *set, size_t run)
{
    long put = 0;
    int r = 0;
    char name[BENCH_MAX_NAME + 64], prefix[BENCH_MAX_NAME + 32];
    const pacer_shape *startup = pacer_record_type_get(PACER_RECORD_STARTUP)->shape;
    const pacer_shape *page = pacer_record_type_get(PACER_RECORD_PAGE)->shape;
    for (unsigned f = 0; c->cold_seen && f < PACER_STARTUP_N_FIELDS && r == 0; f++)
        if (!isnan(c->cold[f]) && (r = bench_set_put(set, run, startup->fields[f].name, c->cold[f])) == 0)
            put++;
    for (size_t k = 0; k < c->n_warm && r == 0; k++) {
        ordinal_name(name, sizeof(name), startup->fields[PACER_STARTUP_WARM_MS].name, k + 1);
        if ((r = bench_set_put(set, run, name, c->warm[k])) == 0)
            put++;
    }
    if (c->n_pages)
        qsort(c->pages, c->n_pages, sizeof(*c->pages), page_seen_cmp);
    size_t ord = 0;
    for (size_t i = 0; i < c->n_pages && r == 0; i++) {
        ord = i > 0 && strcmp(c->pages[i - 1].cls, c->pages[i].cls) == 0 ? ord + 1 : 1;
        if (strlen(c->pages[i].cls) > BENCH_MAX_NAME - 32)
            continue; /* no GType name is that long; such a name cannot be a metric */
        ordinal_name(prefix, sizeof(prefix), c->pages[i].cls, ord);
        for (unsigned f = 0; f < PACER_PAGE_N_FIELDS && r == 0; f++) {
            if (isnan(c->pages[i].v[f]))
                continue;
            snprintf(name, sizeof(name), "%s.%s", prefix, page->fields[f].name);
            r = bench_set_put(set, run, name, c->pages[i].v[f]);
            if (r == -EINVAL) /* a class name with a control character: not a metric */
                r = 0;
            else if (r == 0)
                put++;
        }
    }
    collect_reset(c);
    return r < 0 ? r : put;
}

/* ---- writing ---- */

static void kv_opt_str(jbuf *b, const char *key, const char *v)
{
    if (v)
        jbuf_kv_str(b, key, v);
}

static void kv_opt_num(jbuf *b, const char *key, double v)
{
    if (!isnan(v))
        jbuf_kv_double(b, key, v);
}

char *bench_set_format(const bench_set *set, size_t *ret_len)
{
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    jbuf_kv_i64(&b, "pacer_bench", FORMAT_VERSION);
    jbuf_key(&b, "env");
    jbuf_open(&b, '{');
    kv_opt_str(&b, "program", set->env.program);
    kv_opt_str(&b, "cpu_model", set->env.cpu_model);
    if (set->env.cpus > 0)
        jbuf_kv_i64(&b, "cpus", set->env.cpus);
    kv_opt_str(&b, "kernel", set->env.kernel);
    kv_opt_str(&b, "gtk", set->env.gtk);
    kv_opt_str(&b, "pacer", set->env.pacer);
    if (set->env.nice)
        jbuf_kv_i64(&b, "nice", set->env.nice);
    kv_opt_str(&b, "source", set->env.source);
    jbuf_close(&b, '}');
    jbuf_puts(&b, "\n");
    jbuf_key(&b, "runs");
    jbuf_open(&b, '[');
    for (size_t k = 0; k < set->n_runs; k++) {
        const bench_run *r = &set->runs[k];
        jbuf_puts(&b, "\n");
        jbuf_open(&b, '{');
        if (r->start_ns)
            jbuf_kv_i64(&b, "start", r->start_ns);
        kv_opt_num(&b, "wall_ms", r->wall_ms);
        kv_opt_num(&b, "cpu_ms", r->cpu_ms);
        kv_opt_num(&b, "background", r->background);
        kv_opt_num(&b, "load1", r->load1);
        kv_opt_num(&b, "cpu_mhz", r->cpu_mhz);
        kv_opt_str(&b, "session", r->session);
        jbuf_close(&b, '}');
    }
    jbuf_close(&b, ']');
    jbuf_puts(&b, "\n");
    jbuf_key(&b, "metrics");
    jbuf_open(&b, '{');
    for (size_t i = 0; i < set->n_metrics; i++) {
        jbuf_puts(&b, "\n");
        jbuf_key(&b, set->metrics[i].name);
        jbuf_open(&b, '[');
        for (size_t k = 0; k < set->n_runs; k++) {
            double v = set->metrics[i].v[k];
            if (isnan(v))
                jbuf_null(&b);
            else
                jbuf_double(&b, v);
        }
        jbuf_close(&b, ']');
    }
    jbuf_close(&b, '}');
    jbuf_close(&b, '}');
    jbuf_puts(&b, "\n");
    return jbuf_steal(&b, ret_len);
}

/* ---- reading ---- */

static int failf(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int failf(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

static int syntax(jread *r, char *err, size_t n)
{
    return failf(err, n, "byte %zu: %s", r->error_at, r->message);
}

/* A member that must be a string: copied into *slot. */
static int read_str(jread *r, const char *where, char **slot, char *err, size_t n)
{
    jvalue v;
    if (!jread_value(r, &v))
        return syntax(r, err, n);
    if (v.type == JT_NULL)
        return 0;
    if (v.type != JT_STRING)
        return failf(err, n, "%s: expected a string", where);
    if (v.len > 4096)
        return failf(err, n, "%s: longer than 4096 bytes", where);
    return bench_env_set(slot, v.s) < 0 ? -ENOMEM : 0;
}

/* A member that must be a finite number ≥ 0 (or null: NAN). */
static int read_num(jread *r, const char *where, double *ret, char *err, size_t n)
{
    jvalue v;
    if (!jread_value(r, &v))
        return syntax(r, err, n);
    if (v.type == JT_NULL) {
        *ret = NAN;
        return 0;
    }
    if (v.type != JT_NUMBER || !jvalue_double(&v, ret))
        return failf(err, n, "%s: expected a finite number", where);
    if (*ret < 0)
        return failf(err, n, "%s: negative (%g)", where, *ret);
    return 0;
}

static int read_env(jread *r, bench_env *env, char *err, size_t n)
{
    if (jread_peek(r) != JT_OBJECT)
        return r->failed ? syntax(r, err, n) : failf(err, n, "env: expected an object");
    if (!jread_enter_object(r))
        return syntax(r, err, n);
    const char *key;
    size_t klen;
    int m, rc = 0;
    while (rc == 0 && (m = jread_member(r, &key, &klen)) == 1) {
        char **slot = strcmp(key, "program") == 0     ? &env->program
                      : strcmp(key, "cpu_model") == 0 ? &env->cpu_model
                      : strcmp(key, "kernel") == 0    ? &env->kernel
                      : strcmp(key, "gtk") == 0       ? &env->gtk
                      : strcmp(key, "pacer") == 0     ? &env->pacer
                      : strcmp(key, "source") == 0    ? &env->source
                                                      : NULL;
        if (slot) {
            char where[64];
            snprintf(where, sizeof(where), "env.%.40s", key);
            rc = read_str(r, where, slot, err, n);
        } else if (strcmp(key, "cpus") == 0) {
            jvalue v;
            int64_t cpus;
            if (!jread_value(r, &v))
                return syntax(r, err, n);
            if (v.type != JT_NULL && (!jvalue_int64(&v, &cpus) || cpus < 0 || cpus > 1000000))
                return failf(err, n, "env.cpus: expected a count of CPUs");
            env->cpus = v.type == JT_NULL ? 0 : (long)cpus;
        } else if (strcmp(key, "nice") == 0) {
            jvalue v;
            int64_t nice;
            if (!jread_value(r, &v))
                return syntax(r, err, n);
            if (v.type != JT_NULL && (!jvalue_int64(&v, &nice) || nice < -20 || nice > 19))
                return failf(err, n, "env.nice: expected a niceness from -20 to 19");
            env->nice = v.type == JT_NULL ? 0 : (long)nice;
        } else {
            jvalue v;
            if (!jread_value(r, &v))
                return syntax(r, err, n);
        }
    }
    if (rc == 0 && m < 0)
        return syntax(r, err, n);
    return rc;
}

static int read_run(jread *r, size_t k, bench_run *run, char *err, size_t n)
{
    *run = (bench_run){0, NAN, NAN, NAN, NAN, NAN, NULL};
    if (jread_peek(r) != JT_OBJECT)
        return r->failed ? syntax(r, err, n) : failf(err, n, "runs[%zu]: expected an object", k);
    if (!jread_enter_object(r))
        return syntax(r, err, n);
    const char *key;
    size_t klen;
    int m, rc = 0;
    char where[96];
    while (rc == 0 && (m = jread_member(r, &key, &klen)) == 1) {
        snprintf(where, sizeof(where), "runs[%zu].%.40s", k, key);
        double *num = strcmp(key, "wall_ms") == 0      ? &run->wall_ms
                      : strcmp(key, "cpu_ms") == 0     ? &run->cpu_ms
                      : strcmp(key, "background") == 0 ? &run->background
                      : strcmp(key, "load1") == 0      ? &run->load1
                      : strcmp(key, "cpu_mhz") == 0    ? &run->cpu_mhz
                                                       : NULL;
        if (num) {
            rc = read_num(r, where, num, err, n);
        } else if (strcmp(key, "start") == 0) {
            jvalue v;
            if (!jread_value(r, &v))
                return syntax(r, err, n);
            if (v.type != JT_NULL && (!jvalue_int64(&v, &run->start_ns) || run->start_ns < 0))
                rc = failf(err, n, "%s: expected unix nanoseconds", where);
        } else if (strcmp(key, "session") == 0) {
            rc = read_str(r, where, &run->session, err, n);
        } else {
            jvalue v;
            if (!jread_value(r, &v))
                rc = syntax(r, err, n);
        }
    }
    if (rc == 0 && m < 0)
        rc = syntax(r, err, n);
    return rc;
}

/* metrics: NAME → an array with one value per run. The arrays are read
 * into the set as they come; a run count not yet known (metrics before
 * runs) is checked at the end. */
typedef struct pending_metric {
    char *name;
    double *v;
    size_t n;
} pending_metric;

typedef struct pending {
    pending_metric *m;
    size_t n, cap;
} pending;

static void pending_free(pending *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->m[i].name);
        free(p->m[i].v);
    }
    free(p->m);
}

static int read_metric_values(jread *r, const char *name, pending_metric *pm, char *err, size_t n)
{
    if (jread_peek(r) != JT_ARRAY)
        return r->failed ? syntax(r, err, n) : failf(err, n, "metrics.%.200s: expected an array", name);
    if (!jread_enter_array(r))
        return syntax(r, err, n);
    size_t cap = 0;
    int e;
    while ((e = jread_element(r)) == 1) {
        if (pm->n >= BENCH_MAX_RUNS)
            return failf(err, n, "metrics.%.200s: more than %d values", name, BENCH_MAX_RUNS);
        if (pm->n == cap) {
            cap = cap ? cap * 2 : 16;
            double *v = realloc(pm->v, cap * sizeof(*v));
            if (!v)
                return -ENOMEM;
            pm->v = v;
        }
        char where[BENCH_MAX_NAME + 64];
        snprintf(where, sizeof(where), "metrics.%.200s[%zu]", name, pm->n);
        int rc = read_num(r, where, &pm->v[pm->n], err, n);
        if (rc < 0)
            return rc;
        pm->n++;
    }
    return e < 0 ? syntax(r, err, n) : 0;
}

static int read_metrics(jread *r, pending *p, char *err, size_t n)
{
    if (jread_peek(r) != JT_OBJECT)
        return r->failed ? syntax(r, err, n) : failf(err, n, "metrics: expected an object");
    if (!jread_enter_object(r))
        return syntax(r, err, n);
    const char *key;
    size_t klen;
    int m;
    while ((m = jread_member(r, &key, &klen)) == 1) {
        if (strlen(key) != klen || !name_ok(key))
            return failf(err, n, "metrics: a name must be 1 to %d bytes without control characters",
                         BENCH_MAX_NAME);
        for (size_t i = 0; i < p->n; i++)
            if (strcmp(p->m[i].name, key) == 0)
                return failf(err, n, "metrics.%.200s: given twice", key);
        if (p->n >= BENCH_MAX_METRICS)
            return failf(err, n, "metrics: more than %d", BENCH_MAX_METRICS);
        if (p->n == p->cap) {
            size_t cap = p->cap ? p->cap * 2 : 16;
            pending_metric *pm = realloc(p->m, cap * sizeof(*pm));
            if (!pm)
                return -ENOMEM;
            p->m = pm;
            p->cap = cap;
        }
        pending_metric *pm = &p->m[p->n];
        *pm = (pending_metric){strdup(key), NULL, 0};
        if (!pm->name)
            return -ENOMEM;
        p->n++;
        int rc = read_metric_values(r, pm->name, pm, err, n);
        if (rc < 0)
            return rc;
    }
    return m < 0 ? syntax(r, err, n) : 0;
}

int bench_set_parse(char *buf, size_t len, bench_set **ret, char *err, size_t err_len)
{
    jread r;
    jread_init(&r, buf, len, NULL, JREAD_NO_NUL | JREAD_NUMBERS_IN_RANGE);
    bench_set *set = bench_set_new();
    pending metrics = {0};
    bool version = false, runs = false, have_metrics = false;
    int rc = 0;
    err[0] = 0;
    if (!set)
        return -ENOMEM;
    if (jread_peek(&r) != JT_OBJECT) {
        rc = r.failed ? syntax(&r, err, err_len) : failf(err, err_len, "expected a JSON object");
        goto out;
    }
    jread_enter_object(&r);
    const char *key;
    size_t klen;
    int m;
    while (rc == 0 && (m = jread_member(&r, &key, &klen)) == 1) {
        if (strcmp(key, "pacer_bench") == 0) {
            jvalue v;
            int64_t ver;
            if (!jread_value(&r, &v)) {
                rc = syntax(&r, err, err_len);
            } else if (!jvalue_int64(&v, &ver) || ver != FORMAT_VERSION) {
                rc = failf(err, err_len, "pacer_bench: format version %d expected (a file of another pacer?)",
                           FORMAT_VERSION);
            }
            version = true;
        } else if (strcmp(key, "env") == 0) {
            rc = read_env(&r, &set->env, err, err_len);
        } else if (strcmp(key, "runs") == 0) {
            if (runs) {
                rc = failf(err, err_len, "runs: given twice");
                break;
            }
            runs = true;
            if (jread_peek(&r) != JT_ARRAY) {
                rc = r.failed ? syntax(&r, err, err_len) : failf(err, err_len, "runs: expected an array");
                break;
            }
            if (!jread_enter_array(&r)) {
                rc = syntax(&r, err, err_len);
                break;
            }
            int e;
            while (rc == 0 && (e = jread_element(&r)) == 1) {
                bench_run run;
                rc = read_run(&r, set->n_runs, &run, err, err_len);
                if (rc == 0) {
                    long k = bench_set_add_run(set, &run);
                    if (k == -E2BIG)
                        rc = failf(err, err_len, "runs: more than %d", BENCH_MAX_RUNS);
                    else if (k < 0)
                        rc = (int)k;
                }
                free(run.session);
            }
            if (rc == 0 && e < 0)
                rc = syntax(&r, err, err_len);
        } else if (strcmp(key, "metrics") == 0) {
            if (have_metrics) {
                rc = failf(err, err_len, "metrics: given twice");
                break;
            }
            have_metrics = true;
            rc = read_metrics(&r, &metrics, err, err_len);
        } else {
            jvalue v;
            if (!jread_value(&r, &v))
                rc = syntax(&r, err, err_len);
        }
    }
    if (rc == 0 && m < 0)
        rc = syntax(&r, err, err_len);
    if (rc == 0 && !jread_end(&r, "object"))
        rc = syntax(&r, err, err_len);
    if (rc == 0 && !version)
        rc = failf(err, err_len, "not a pacer bench file: no \"pacer_bench\" member");
    if (rc == 0 && !runs)
        rc = failf(err, err_len, "runs: missing");
    if (rc == 0 && !have_metrics)
        rc = failf(err, err_len, "metrics: missing");
    for (size_t i = 0; rc == 0 && i < metrics.n; i++) {
        pending_metric *pm = &metrics.m[i];
        if (pm->n != set->n_runs) {
            rc = failf(err, err_len, "metrics.%.200s: %zu values for %zu runs", pm->name, pm->n, set->n_runs);
            break;
        }
        /* name_ok was checked: only ENOMEM or E2BIG can fail it */
        if ((rc = bench_set_put(set, 0, pm->name, pm->n ? pm->v[0] : NAN)) < 0)
            break;
        bench_metric *bm = (bench_metric *)bench_set_find(set, pm->name);
        for (size_t k = 0; k < pm->n; k++)
            bm->v[k] = pm->v[k];
    }
out:
    pending_free(&metrics);
    if (rc < 0) {
        bench_set_free(set);
        if (rc == -ENOMEM)
            snprintf(err, err_len, "out of memory");
        return rc;
    }
    *ret = set;
    return 0;
}

/* ---- pacerd's samples ---- */

typedef struct server_rec {
    pacer_record *rec;
    const char *session; /* into rec */
    int64_t ts;
} server_rec;

static int server_rec_cmp(const void *a, const void *b)
{
    const server_rec *x = a, *y = b;
    int c = strcmp(x->session, y->session);
    if (c)
        return c;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

#define SERVER_MAX_RECORDS 1000000

int bench_set_parse_server(char *buf, size_t len, bench_set **ret, char *err, size_t err_len)
{
    /* container texts come from src: the records are parsed as the lines
     * of a records file, so keep the text untouched */
    char *src = malloc(len + 1);
    if (!src)
        return -ENOMEM;
    memcpy(src, buf, len);
    src[len] = 0;
    jread r;
    jread_init(&r, buf, len, src, JREAD_NO_NUL | JREAD_NUMBERS_IN_RANGE);
    server_rec *recs = NULL;
    size_t n = 0, cap = 0;
    bench_set *set = NULL;
    bench_collect *c = NULL;
    char *app = NULL, *version = NULL;
    bool have_records = false;
    int rc = 0;
    err[0] = 0;
    if (jread_peek(&r) != JT_OBJECT) {
        rc = r.failed ? syntax(&r, err, err_len) : failf(err, err_len, "expected a JSON object");
        goto out;
    }
    jread_enter_object(&r);
    const char *key;
    size_t klen;
    int m;
    while (rc == 0 && (m = jread_member(&r, &key, &klen)) == 1) {
        if (strcmp(key, "app") == 0 || strcmp(key, "version") == 0) {
            rc = read_str(&r, key, key[0] == 'a' ? &app : &version, err, err_len);
            continue;
        }
        if (strcmp(key, "records") != 0 || have_records) {
            jvalue v;
            if (strcmp(key, "records") == 0) {
                rc = failf(err, err_len, "records: given twice");
            } else if (!jread_value(&r, &v)) {
                rc = syntax(&r, err, err_len);
            }
            continue;
        }
        have_records = true;
        if (jread_peek(&r) != JT_ARRAY) {
            rc = r.failed ? syntax(&r, err, err_len) : failf(err, err_len, "records: expected an array");
            break;
        }
        jread_enter_array(&r);
        int e;
        while (rc == 0 && (e = jread_element(&r)) == 1) {
            jvalue v;
            if (!jread_value(&r, &v)) {
                rc = syntax(&r, err, err_len);
                break;
            }
            if (v.type != JT_OBJECT) {
                rc = failf(err, err_len, "records[%zu]: expected an object", n);
                break;
            }
            if (n >= SERVER_MAX_RECORDS) {
                rc = failf(err, err_len, "records: more than %d", SERVER_MAX_RECORDS);
                break;
            }
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                server_rec *g = realloc(recs, cap * sizeof(*g));
                if (!g) {
                    rc = -ENOMEM;
                    break;
                }
                recs = g;
            }
            char reason[256];
            pacer_record *rec;
            int pr = pacer_record_parse(v.s, v.len, &rec, reason, sizeof(reason));
            if (pr == -ENOMEM) {
                rc = -ENOMEM;
                break;
            }
            if (pr < 0) {
                rc = failf(err, err_len, "records[%zu]: %s", n, reason);
                break;
            }
            const char *session = pacer_record_common(rec, PACER_COMMON_SESSION);
            const pacer_record_type *t = pacer_record_type_of(rec);
            if (!t || (t->id != PACER_RECORD_PAGE && t->id != PACER_RECORD_STARTUP) || !session) {
                pacer_record_free(rec);
                rc = failf(err, err_len, "records[%zu]: expected a page or startup record with a session", n);
                break;
            }
            if (pacer_record_ts(rec) < 0) {
                pacer_record_free(rec);
                rc = failf(err, err_len, "records[%zu]: ts: expected unix nanoseconds, not a negative time", n);
                break;
            }
            recs[n++] = (server_rec){rec, session, pacer_record_ts(rec)};
        }
        if (rc == 0 && e < 0)
            rc = syntax(&r, err, err_len);
    }
    if (rc == 0 && m < 0)
        rc = syntax(&r, err, err_len);
    if (rc == 0 && !jread_end(&r, "object"))
        rc = syntax(&r, err, err_len);
    if (rc == 0 && !have_records)
        rc = failf(err, err_len, "records: missing (is this pacerd's /api/v1/samples?)");
    if (rc < 0)
        goto out;

    if (n)
        qsort(recs, n, sizeof(*recs), server_rec_cmp);
    if (!(set = bench_set_new()) || !(c = bench_collect_new())) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n && rc == 0;) {
        size_t j = i;
        while (j < n && strcmp(recs[j].session, recs[i].session) == 0)
            j++;
        bench_run notes = {recs[i].ts, NAN, NAN, NAN, NAN, NAN, (char *)recs[i].session};
        long k = bench_set_add_run(set, &notes);
        if (k < 0) {
            rc = (int)k;
            break;
        }
        for (size_t q = i; q < j && rc == 0; q++)
            rc = bench_collect_record(c, recs[q].rec);
        long put = rc == 0 ? bench_collect_finish(c, set, (size_t)k) : 0;
        if (put < 0)
            rc = (int)put;
        i = j;
    }
    if (rc == -E2BIG)
        rc = failf(err, err_len, "more than %d sessions or %d metrics", BENCH_MAX_RUNS, BENCH_MAX_METRICS);
    if (rc == 0) {
        char source[600];
        snprintf(source, sizeof(source), "pacerd: app %.256s, version %.256s", app ? app : "?",
                 version ? version : "?");
        if (bench_env_set(&set->env.source, source) < 0)
            rc = -ENOMEM;
    }
out:
    for (size_t i = 0; i < n; i++)
        pacer_record_free(recs[i].rec);
    free(recs);
    free(src);
    free(app);
    free(version);
    bench_collect_free(c);
    if (rc < 0) {
        bench_set_free(set);
        if (rc == -ENOMEM)
            snprintf(err, err_len, "out of memory");
        return rc;
    }
    *ret = set;
    return 0;
}

int bench_read_file(const char *path, size_t max, char **ret_buf, size_t *ret_len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -errno;
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        return -EISDIR;
    }
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap + 1);
    int rc = 0;
    while (buf) {
        if (n == cap) {
            if (cap >= max) {
                rc = -EFBIG;
                break;
            }
            cap = cap * 2 > max ? max : cap * 2;
            char *b = realloc(buf, cap + 1);
            if (!b) {
                rc = -ENOMEM;
                break;
            }
            buf = b;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f))
                rc = -EIO;
            break;
        }
    }
    if (!buf)
        rc = -ENOMEM;
    fclose(f);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    buf[n] = 0;
    *ret_buf = buf;
    *ret_len = n;
    return 0;
}
