/* The measurement model: events in, records out.
 *
 * It keeps every page instance it tracks in a hash table keyed by the page
 * id (the seed keys by hashCode(): several instances of one class are
 * measured separately) and in a creation-ordered list, which request events
 * walk: like the seed's onApiLoadStart/End, a request is offered to every
 * page still measuring and each decides whether it is one of its initial
 * APIs.
 *
 * Which pages are tracked:
 *  - every toplevel window (kind "window"): zero config still measures its
 *    initial draw, and start-up needs to count windows;
 *  - a page of kind "page" only when its class is configured.
 * A page_create for an id already tracked is ignored (seed: the existing
 * PageObject stays); the id is forgotten at page_destroy.
 *
 * A page is reported exactly once (page->status leaves PAGE_MEASURING):
 *  - complete: page_on_draw says so (final draw, or initial draw with no
 *    APIs left to wait for);
 *  - abandoned: destroyed first;
 *  - deadline_exceeded: the model's clock (the latest event time, or the
 *    live clock through model_tick) passed create + page-deadline-ms;
 *  - incomplete: still measuring at model_finish.
 */
#include "model.h"

#include "json_out.h"
#include "page.h"
#include "startup.h"
#include "url.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct model {
    model_info info;
    pacer_config *cfg;
    bool cfg_has_main;
    model_record_fn fn;
    void *user_data;

    page **buckets;
    size_t n_buckets;
    size_t n_pages;
    page *head, *tail;

    startup st;
    int64_t clock;         /* latest time seen */
    int64_t next_deadline; /* earliest deadline of a measuring page */
    uint64_t records;
};

static size_t hash_id(uint64_t id, size_t n)
{
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdULL;
    id ^= id >> 33;
    return (size_t)(id & (n - 1));
}

static page *find_page(model *m, uint64_t id)
{
    for (page *p = m->buckets[hash_id(id, m->n_buckets)]; p; p = p->hash_next)
        if (p->id == id)
            return p;
    return NULL;
}

static void grow(model *m)
{
    size_t n = m->n_buckets * 2;
    page **b = calloc(n, sizeof(*b));
    if (!b)
        return; /* keep the old table: longer chains, still correct */
    for (page *p = m->head; p; p = p->next) {
        size_t h = hash_id(p->id, n);
        p->hash_next = b[h];
        b[h] = p;
    }
    free(m->buckets);
    m->buckets = b;
    m->n_buckets = n;
}

static void insert_page(model *m, page *p)
{
    size_t h = hash_id(p->id, m->n_buckets);
    p->hash_next = m->buckets[h];
    m->buckets[h] = p;
    p->prev = m->tail;
    p->next = NULL;
    if (m->tail)
        m->tail->next = p;
    else
        m->head = p;
    m->tail = p;
    if (++m->n_pages > m->n_buckets)
        grow(m);
}

static void remove_page(model *m, page *p)
{
    page **pp = &m->buckets[hash_id(p->id, m->n_buckets)];
    while (*pp != p)
        pp = &(*pp)->hash_next;
    *pp = p->hash_next;
    if (p->prev)
        p->prev->next = p->next;
    else
        m->head = p->next;
    if (p->next)
        p->next->prev = p->prev;
    else
        m->tail = p->prev;
    m->n_pages--;
}

/* ---- records ---- */

static void open_record(model *m, jbuf *b, const char *type, int64_t t_ns)
{
    jbuf_init(b);
    jbuf_open(b, '{');
    jbuf_kv_str(b, "type", type);
    jbuf_kv_i64(b, "ts", t_ns + m->info.wall_offset_ns);
    jbuf_kv_str(b, "app", m->info.app);
    jbuf_kv_str(b, "version", m->info.version);
    jbuf_kv_str(b, "session", m->info.session);
    jbuf_kv_i64(b, "pid", m->info.pid);
}

static void close_record(model *m, jbuf *b)
{
    jbuf_close(b, '}');
    size_t len;
    char *line = jbuf_steal(b, &len);
    if (!line)
        return;
    m->records++;
    m->fn(line, len, m->user_data);
}

/* Writes key: ms when the metric function finds it present. */
static void kv_page_ms(jbuf *b, const char *key, bool (*metric)(const page *, int64_t *),
                       const page *p)
{
    int64_t ns;
    if (metric(p, &ns))
        jbuf_kv_ms(b, key, ns);
}

static void kv_cold_ms(jbuf *b, const char *key, const startup *s, startup_phase phase)
{
    int64_t ns;
    if (startup_cold_ns(s, phase, &ns))
        jbuf_kv_ms(b, key, ns);
}

static void emit_page(model *m, const page *p)
{
    jbuf b;
    open_record(m, &b, "page", p->create);
    jbuf_kv_str(&b, "page", p->class_name);
    jbuf_kv_u64(&b, "instance", p->id);
    jbuf_kv_str(&b, "kind", p->kind == PACER_PAGE_WINDOW ? "window" : "page");
    jbuf_kv_str(&b, "status", page_status_name(p->status));
    jbuf_kv_bool(&b, "main", p->is_main);
    kv_page_ms(&b, "initial_draw_ms", page_initial_draw_ns, p);
    kv_page_ms(&b, "api_load_ms", page_api_load_ns, p);
    kv_page_ms(&b, "final_draw_ms", page_final_draw_ns, p);
    /* Without a final draw the seed's total is the initial draw, which only
     * describes a page that finished: an unfinished page has no total. */
    if (p->status == PAGE_COMPLETE || p->final_draw_end != PAGE_UNSET)
        kv_page_ms(&b, "total_ms", page_total_ns, p);
    if (p->n_apis) {
        jbuf_key(&b, "apis");
        jbuf_open(&b, '[');
        for (size_t i = 0; i < p->n_apis; i++) {
            const page_api *a = &p->apis[i];
            jbuf_elem(&b);
            jbuf_open(&b, '{');
            jbuf_kv_str(&b, "url", a->path);
            if (a->state == API_LOADED) {
                jbuf_kv_ms(&b, "ms", a->end_ns - a->start_ns);
                jbuf_kv_i64(&b, "status", a->status);
            }
            jbuf_close(&b, '}');
        }
        jbuf_close(&b, ']');
    }
    close_record(m, &b);
}

static void emit_phases(jbuf *b, const startup *s)
{
    jbuf_key(b, "phases");
    jbuf_open(b, '{');
    for (int i = 0; i < N_PHASES; i++)
        if (s->phase[i] != PAGE_UNSET)
            jbuf_kv_i64(b, startup_phase_name((startup_phase)i), s->phase[i]);
    jbuf_close(b, '}');
}

static void emit_cold(model *m)
{
    const startup *s = &m->st;
    int64_t start = s->phase[PHASE_LAUNCH];
    for (int i = 0; start == PAGE_UNSET && i < N_PHASES; i++)
        start = s->phase[i];
    jbuf b;
    open_record(m, &b, "startup", start);
    jbuf_kv_str(&b, "kind", "cold");
    kv_cold_ms(&b, "cold_ms", s, PHASE_MAIN_FRAME);
    kv_cold_ms(&b, "first_screen_ms", s, PHASE_FIRST_FRAME);
    kv_cold_ms(&b, "app_cost_ms", s, PHASE_APP_CREATED);
    kv_cold_ms(&b, "full_display_ms", s, PHASE_FULL_DISPLAY);
    jbuf_kv_bool(&b, "outlier", startup_is_outlier(s));
    if (s->main_class)
        jbuf_kv_str(&b, "main_page", s->main_class);
    emit_phases(&b, s);
    close_record(m, &b);
}

static void emit_warm(model *m, const startup_report *r)
{
    jbuf b;
    open_record(m, &b, "startup", r->warm_create);
    jbuf_kv_str(&b, "kind", "warm");
    jbuf_kv_ms(&b, "warm_ms", r->warm_ns);
    jbuf_kv_bool(&b, "outlier", r->warm_ns > STARTUP_OUTLIER_NS);
    jbuf_kv_str(&b, "page", r->warm_class);
    jbuf_key(&b, "phases");
    jbuf_open(&b, '{');
    jbuf_kv_i64(&b, "create", r->warm_create);
    jbuf_kv_i64(&b, "first_frame", r->warm_first_frame);
    jbuf_close(&b, '}');
    close_record(m, &b);
}

static void report_page(model *m, page *p, page_status status)
{
    p->status = status;
    emit_page(m, p);
    if (p->is_main && startup_on_main_reported(&m->st, p))
        emit_cold(m);
}

/* ---- clock and deadlines ---- */

static void check_deadlines(model *m)
{
    if (m->clock < m->next_deadline)
        return;
    int64_t next = INT64_MAX;
    for (page *p = m->head; p; p = p->next) {
        if (p->status != PAGE_MEASURING)
            continue;
        if (p->deadline_ns <= m->clock)
            report_page(m, p, PAGE_DEADLINE_EXCEEDED);
        else if (p->deadline_ns < next)
            next = p->deadline_ns;
    }
    m->next_deadline = next;
}

static void advance(model *m, int64_t t)
{
    if (t > m->clock)
        m->clock = t;
    check_deadlines(m);
}

/* ---- events ---- */

static void on_page_create(model *m, const pacer_event *ev)
{
    if (find_page(m, ev->page))
        return; /* repeated create: the instance already measuring stays */
    long idx = pacer_config_find_page(m->cfg, ev->class_name);
    if (ev->kind != PACER_PAGE_WINDOW && idx < 0)
        return; /* pages inside stacks are measured only when configured */
    page *p = page_new(ev->page, ev->class_name, ev->kind, m->cfg, idx, ev->t_ns);
    if (!p)
        return;
    p->is_main = idx >= 0 && pacer_config_page_is_main(m->cfg, (size_t)idx);
    startup_on_page_create(&m->st, p, m->cfg_has_main, ev->t_ns);
    insert_page(m, p);
    if (p->deadline_ns < m->next_deadline)
        m->next_deadline = p->deadline_ns;
}

static void on_page_draw(model *m, page *p, int64_t t)
{
    if (!p->drawn) {
        startup_report r;
        p->drawn = true;
        if (startup_on_first_draw(&m->st, p, t, &r))
            emit_warm(m, &r);
    }
    if (p->status == PAGE_MEASURING && (page_on_draw(p, t) & PAGE_DRAW_REPORT))
        report_page(m, p, PAGE_COMPLETE);
}

static void on_page_destroy(model *m, page *p)
{
    if (p->status == PAGE_MEASURING)
        report_page(m, p, PAGE_ABANDONED);
    startup_on_page_destroy(&m->st, p);
    remove_page(m, p);
    page_free(p);
}

int model_submit(model *m, const pacer_event *ev)
{
    switch (ev->type) {
    case PACER_EV_PAGE_CREATE:
        if (!ev->class_name || !*ev->class_name)
            return -EINVAL;
        break;
    case PACER_EV_API_START:
    case PACER_EV_API_END:
        if (!ev->url || !*ev->url)
            return -EINVAL;
        break;
    default:
        if (ev->type < PACER_EV_FIRST || ev->type > PACER_EV_LAST)
            return -EINVAL;
    }

    /* Deadlines that passed before this event are reported first. */
    advance(m, ev->t_ns);

    page *p = NULL;
    if (ev->type >= PACER_EV_PAGE_VIEW_CREATED && ev->type <= PACER_EV_PAGE_DESTROY) {
        p = find_page(m, ev->page);
        if (!p)
            return 0; /* an untracked page */
    }
    bool measuring = p && p->status == PAGE_MEASURING;

    switch (ev->type) {
    case PACER_EV_LAUNCH:
        startup_on_mark(&m->st, PHASE_LAUNCH, ev->t_ns);
        break;
    case PACER_EV_AGENT_INIT:
        startup_on_mark(&m->st, PHASE_AGENT_INIT, ev->t_ns);
        break;
    case PACER_EV_MAIN:
        startup_on_mark(&m->st, PHASE_MAIN, ev->t_ns);
        break;
    case PACER_EV_APP_CREATED:
        startup_on_mark(&m->st, PHASE_APP_CREATED, ev->t_ns);
        break;
    case PACER_EV_PAGE_CREATE:
        on_page_create(m, ev);
        break;
    case PACER_EV_PAGE_VIEW_CREATED:
        if (measuring)
            page_on_view_created(p, ev->t_ns);
        break;
    case PACER_EV_PAGE_DRAW:
        on_page_draw(m, p, ev->t_ns);
        break;
    case PACER_EV_PAGE_SELECT:
        if (measuring)
            page_on_select(p, ev->t_ns);
        break;
    case PACER_EV_PAGE_SCROLL:
        if (measuring)
            page_on_scroll(p, ev->t_ns);
        break;
    case PACER_EV_PAGE_DESTROY:
        on_page_destroy(m, p);
        break;
    case PACER_EV_API_START:
    case PACER_EV_API_END: {
        const char *path;
        size_t len = url_path(ev->url, &path);
        for (page *q = m->head; q; q = q->next) {
            if (q->status != PAGE_MEASURING)
                continue;
            if (ev->type == PACER_EV_API_START)
                page_on_api_start(q, path, len, ev->req, ev->t_ns);
            else
                page_on_api_end(q, path, len, ev->req, ev->status, ev->t_ns);
        }
        break;
    }
    }
    return 0;
}

void model_tick(model *m, int64_t now_ns)
{
    advance(m, now_ns);
}

void model_finish(model *m)
{
    check_deadlines(m);
    for (page *p = m->head; p; p = p->next)
        if (p->status == PAGE_MEASURING)
            report_page(m, p, PAGE_INCOMPLETE);
    if (startup_on_finish(&m->st))
        emit_cold(m);
}

int model_emit(model *m, const char *type, const char *fields_json, int64_t t_ns)
{
    if (!type || !*type)
        return -EINVAL;
    if (fields_json) {
        const char *f = fields_json + strspn(fields_json, " \t");
        if (*f && (*f != '"' || strpbrk(f, "\n\r")))
            return -EINVAL;
        fields_json = *f ? f : NULL;
    }
    jbuf b;
    open_record(m, &b, type, t_ns);
    if (fields_json) {
        jbuf_raw(&b, ",", 1);
        jbuf_puts(&b, fields_json);
    }
    if (b.failed) {
        jbuf_free(&b);
        return -ENOMEM;
    }
    close_record(m, &b);
    return 0;
}

uint64_t model_record_count(const model *m)
{
    return m->records;
}

/* ---- lifetime ---- */

static bool config_has_main(const pacer_config *cfg)
{
    for (size_t i = 0; i < pacer_config_page_count(cfg); i++)
        if (pacer_config_page_is_main(cfg, i))
            return true;
    return false;
}

void model_set_config(model *m, pacer_config *cfg)
{
    pacer_config *old = m->cfg;
    m->cfg = cfg ? pacer_config_ref(cfg) : pacer_config_new_empty();
    m->cfg_has_main = config_has_main(m->cfg);
    pacer_config_unref(old);
}

pacer_config *model_get_config(model *m)
{
    return m->cfg;
}

model *model_new(const model_info *info, pacer_config *cfg, model_record_fn fn, void *user_data)
{
    model *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->info.app = strdup(info->app ? info->app : "unknown");
    m->info.version = strdup(info->version ? info->version : "unknown");
    m->info.session = strdup(info->session ? info->session : "");
    m->info.pid = info->pid;
    m->info.wall_offset_ns = info->wall_offset_ns;
    m->fn = fn;
    m->user_data = user_data;
    m->n_buckets = 64;
    m->buckets = calloc(m->n_buckets, sizeof(*m->buckets));
    m->clock = INT64_MIN;
    m->next_deadline = INT64_MAX;
    startup_init(&m->st);
    model_set_config(m, cfg);
    if (!m->info.app || !m->info.version || !m->info.session || !m->buckets || !m->cfg) {
        model_free(m);
        return NULL;
    }
    return m;
}

void model_free(model *m)
{
    if (!m)
        return;
    page *p = m->head;
    while (p) {
        page *next = p->next;
        page_free(p);
        p = next;
    }
    free(m->buckets);
    startup_clear(&m->st);
    pacer_config_unref(m->cfg);
    free((char *)m->info.app);
    free((char *)m->info.version);
    free((char *)m->info.session);
    free(m);
}
