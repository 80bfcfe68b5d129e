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
 *    live clock through model_tick) passed the page's deadline;
 *  - incomplete: still measuring at model_finish;
 *  - never_shown: destroyed, or still measuring at model_finish, without
 *    ever having been shown (a dialog built from a GtkBuilder file and never
 *    opened). Not a failure: nobody waited for it.
 *
 * Shown and deadlines. A source that reports page_show (the agent: a
 * widget mapped) says when each page could first be seen; once the model
 * has seen one page_show (m->shows), a page's deadline runs from its show
 * (page-deadline-ms after it), a page not yet shown has none, and a page
 * never shown ends as never_shown. A source that never sends page_show
 * (a recording made before it existed, an SDK user who does not call
 * pacer_page_show) keeps the deadline from create and has no never_shown.
 * A draw counts as shown in either case.
 */
#include "model.h"

#include "page.h"
#include "record_int.h"
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
    bool shows;            /* the source reports page_show */
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

/* ---- records ----
 * Each builder collects its setters' failures in `bad`: a record that could
 * not be completed (out of memory) is dropped whole, never half-written. */

_Static_assert((int)PHASE_LAUNCH == PACER_PHASE_LAUNCH && (int)PHASE_AGENT_INIT == PACER_PHASE_AGENT_INIT &&
                   (int)PHASE_MAIN == PACER_PHASE_MAIN && (int)PHASE_APP_CREATED == PACER_PHASE_APP_CREATED &&
                   (int)PHASE_FIRST_FRAME == PACER_PHASE_FIRST_FRAME &&
                   (int)PHASE_MAIN_FRAME == PACER_PHASE_MAIN_FRAME &&
                   (int)PHASE_FULL_DISPLAY == PACER_PHASE_FULL_DISPLAY,
               "startup phases are the schema's phase fields");

static bool stamp(model *m, pacer_record *r, int64_t t_ns)
{
    return record_set_common(r, m->info.app, m->info.version, m->info.session, m->info.pid,
                             t_ns + m->info.wall_offset_ns) == 0;
}

static void deliver(model *m, pacer_record *r, bool bad)
{
    if (bad || !r) {
        pacer_record_free(r);
        return;
    }
    m->records++;
    m->fn(r, m->user_data);
}

/* Sets an MS field when the metric function finds it present. */
static bool set_metric(pacer_record *r, unsigned field, bool (*metric)(const page *, int64_t *), const page *p)
{
    int64_t ns;
    return !metric(p, &ns) || pacer_record_set_ms(r, field, ns) == 0;
}

static void emit_page(model *m, const page *p)
{
    pacer_record *r = pacer_record_new(PACER_RECORD_PAGE);
    bool bad = !r || !stamp(m, r, p->create);
    if (bad) {
        deliver(m, r, true);
        return;
    }
    bad |= pacer_record_set_str(r, PACER_PAGE_CLASS, p->class_name) < 0;
    bad |= pacer_record_set_id(r, PACER_PAGE_INSTANCE, p->id) < 0;
    bad |= pacer_record_set_str(r, PACER_PAGE_KIND, p->kind == PACER_PAGE_WINDOW ? "window" : "page") < 0;
    bad |= pacer_record_set_str(r, PACER_PAGE_STATUS, page_status_name(p->status)) < 0;
    bad |= pacer_record_set_bool(r, PACER_PAGE_MAIN, p->is_main) < 0;
    bad |= !set_metric(r, PACER_PAGE_INITIAL_DRAW_MS, page_initial_draw_ns, p);
    bad |= !set_metric(r, PACER_PAGE_API_LOAD_MS, page_api_load_ns, p);
    bad |= !set_metric(r, PACER_PAGE_FINAL_DRAW_MS, page_final_draw_ns, p);
    /* Without a final draw the seed's total is the initial draw, which only
     * describes a page that finished: an unfinished page has no total. */
    if (p->status == PAGE_COMPLETE || p->final_draw_end != PAGE_UNSET)
        bad |= !set_metric(r, PACER_PAGE_TOTAL_MS, page_total_ns, p);
    for (size_t i = 0; i < p->n_apis && !bad; i++) {
        const page_api *a = &p->apis[i];
        pacer_record *e = pacer_record_add(r, PACER_PAGE_APIS);
        bad |= !e || pacer_record_set_str(e, PACER_PAGE_API_URL, a->path) < 0;
        if (!bad && a->state == API_LOADED) {
            bad |= pacer_record_set_ms(e, PACER_PAGE_API_MS, a->end_ns - a->start_ns) < 0;
            bad |= pacer_record_set_int(e, PACER_PAGE_API_STATUS, a->status) < 0;
        }
    }
    deliver(m, r, bad);
}

static void emit_cold(model *m)
{
    static const struct {
        unsigned field;
        startup_phase phase;
    } cold[] = {
        {PACER_STARTUP_COLD_MS, PHASE_MAIN_FRAME},
        {PACER_STARTUP_FIRST_SCREEN_MS, PHASE_FIRST_FRAME},
        {PACER_STARTUP_APP_COST_MS, PHASE_APP_CREATED},
        {PACER_STARTUP_FULL_DISPLAY_MS, PHASE_FULL_DISPLAY},
    };
    const startup *s = &m->st;
    int64_t start = s->phase[PHASE_LAUNCH];
    for (int i = 0; start == PAGE_UNSET && i < N_PHASES; i++)
        start = s->phase[i];
    pacer_record *r = pacer_record_new(PACER_RECORD_STARTUP);
    bool bad = !r || !stamp(m, r, start);
    if (bad) {
        deliver(m, r, true);
        return;
    }
    bad |= pacer_record_set_str(r, PACER_STARTUP_KIND, "cold") < 0;
    for (size_t i = 0; i < sizeof(cold) / sizeof(cold[0]); i++) {
        int64_t ns;
        if (startup_cold_ns(s, cold[i].phase, &ns))
            bad |= pacer_record_set_ms(r, cold[i].field, ns) < 0;
    }
    bad |= pacer_record_set_bool(r, PACER_STARTUP_OUTLIER, startup_is_outlier(s)) < 0;
    if (s->main_class)
        bad |= pacer_record_set_str(r, PACER_STARTUP_MAIN_PAGE, s->main_class) < 0;
    if (s->toolkit)
        bad |= pacer_record_set_str(r, PACER_STARTUP_TOOLKIT, s->toolkit) < 0;
    if (s->frame_source && s->phase[PHASE_FIRST_FRAME] != PAGE_UNSET)
        bad |= pacer_record_set_str(r, PACER_STARTUP_FRAME_SOURCE, s->frame_source) < 0;
    pacer_record *ph = pacer_record_add(r, PACER_STARTUP_PHASES);
    bad |= !ph;
    for (int i = 0; i < N_PHASES && ph; i++)
        if (s->phase[i] != PAGE_UNSET)
            bad |= pacer_record_set_int(ph, (unsigned)i, s->phase[i]) < 0;
    deliver(m, r, bad);
}

static void emit_handoff(model *m)
{
    const startup *s = &m->st;
    int64_t start = s->phase[PHASE_LAUNCH] != PAGE_UNSET ? s->phase[PHASE_LAUNCH] : s->handoff;
    pacer_record *r = pacer_record_new(PACER_RECORD_STARTUP);
    bool bad = !r || !stamp(m, r, start);
    if (bad) {
        deliver(m, r, true);
        return;
    }
    bad |= pacer_record_set_str(r, PACER_STARTUP_KIND, "handoff") < 0;
    if (s->phase[PHASE_LAUNCH] != PAGE_UNSET)
        bad |= pacer_record_set_ms(r, PACER_STARTUP_HANDOFF_MS, s->handoff - s->phase[PHASE_LAUNCH]) < 0;
    pacer_record *ph = pacer_record_add(r, PACER_STARTUP_PHASES);
    bad |= !ph;
    for (int i = 0; i < N_PHASES && ph; i++)
        if (s->phase[i] != PAGE_UNSET)
            bad |= pacer_record_set_int(ph, (unsigned)i, s->phase[i]) < 0;
    if (ph)
        bad |= pacer_record_set_int(ph, PACER_PHASE_HANDOFF, s->handoff) < 0;
    deliver(m, r, bad);
}

static void emit_warm(model *m, const startup_report *w)
{
    pacer_record *r = pacer_record_new(PACER_RECORD_STARTUP);
    bool bad = !r || !stamp(m, r, w->warm_create);
    if (bad) {
        deliver(m, r, true);
        return;
    }
    bad |= pacer_record_set_str(r, PACER_STARTUP_KIND, "warm") < 0;
    bad |= pacer_record_set_ms(r, PACER_STARTUP_WARM_MS, w->warm_ns) < 0;
    bad |= pacer_record_set_bool(r, PACER_STARTUP_OUTLIER, w->warm_ns > STARTUP_OUTLIER_NS) < 0;
    bad |= pacer_record_set_str(r, PACER_STARTUP_PAGE, w->warm_class) < 0;
    pacer_record *ph = pacer_record_add(r, PACER_STARTUP_PHASES);
    bad |= !ph || pacer_record_set_int(ph, PACER_PHASE_CREATE, w->warm_create) < 0 ||
           pacer_record_set_int(ph, PACER_PHASE_FIRST_FRAME, w->warm_first_frame) < 0;
    deliver(m, r, bad);
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
        if (p->status != PAGE_MEASURING || (m->shows && p->shown == PAGE_UNSET))
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

/* How a page still measuring ends when it is destroyed or the data ends. */
static page_status unfinished(const model *m, const page *p, page_status otherwise)
{
    return m->shows && p->shown == PAGE_UNSET ? PAGE_NEVER_SHOWN : otherwise;
}

static void on_page_show(model *m, page *p, int64_t t)
{
    m->shows = true;
    if (p->status == PAGE_MEASURING && page_on_show(p, t) && p->deadline_ns < m->next_deadline)
        m->next_deadline = p->deadline_ns;
}

static void on_page_destroy(model *m, page *p)
{
    if (p->status == PAGE_MEASURING)
        report_page(m, p, unfinished(m, p, PAGE_ABANDONED));
    startup_on_page_destroy(&m->st, p);
    remove_page(m, p);
    page_free(p);
}

/* A record event: a net, jank, frames or leak record (or one of a type the
 * schema does not know) as instrumentation would have submitted it at the
 * event's time; page and start-up records are the model's own. */
static int submit_record_event(model *m, const pacer_event *ev)
{
    if (!ev->record || !ev->record_len)
        return -EINVAL;
    pacer_record *r;
    int rc = record_from_object(ev->record, ev->record_len, &r);
    if (rc < 0)
        return rc;
    const pacer_record_type *t = pacer_record_type_of(r);
    if (t && (t->id == PACER_RECORD_PAGE || t->id == PACER_RECORD_STARTUP)) {
        pacer_record_free(r);
        return -EINVAL;
    }
    advance(m, ev->t_ns);
    if (!stamp(m, r, ev->t_ns)) {
        pacer_record_free(r);
        return -ENOMEM;
    }
    deliver(m, r, false);
    return 0;
}

int model_submit(model *m, const pacer_event *in)
{
    /* Events reach the model in the order their submitters took the
     * instance lock. An event stamped before it took the lock (a request's
     * start, read before its call) can arrive after a later one from
     * another thread; for the model it happened when it arrived, at the
     * latest time seen, so the clock never runs backwards and no duration
     * comes out negative. */
    pacer_event clamped;
    const pacer_event *ev = in;
    if (in->t_ns < m->clock) {
        clamped = *in;
        clamped.t_ns = m->clock;
        ev = &clamped;
    }
    switch (ev->type) {
    case PACER_EV_PAGE_CREATE:
    case PACER_EV_TOOLKIT:
        if (!ev->class_name || !*ev->class_name)
            return -EINVAL;
        break;
    case PACER_EV_FIRST_FRAME:
        if (!ev->source || !*ev->source)
            return -EINVAL;
        break;
    case PACER_EV_API_START:
    case PACER_EV_API_END:
        if (!ev->url || !*ev->url)
            return -EINVAL;
        break;
    case PACER_EV_RECORD:
        return submit_record_event(m, ev);
    default:
        if (ev->type < PACER_EV_FIRST || ev->type > PACER_EV_LAST)
            return -EINVAL;
    }

    /* Deadlines that passed before this event are reported first. */
    advance(m, ev->t_ns);

    page *p = NULL;
    if ((ev->type >= PACER_EV_PAGE_VIEW_CREATED && ev->type <= PACER_EV_PAGE_DESTROY) ||
        ev->type == PACER_EV_PAGE_SHOW) {
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
    case PACER_EV_HANDOFF:
        startup_on_handoff(&m->st, ev->t_ns);
        break;
    case PACER_EV_TOOLKIT:
        startup_on_toolkit(&m->st, ev->class_name);
        break;
    case PACER_EV_FIRST_FRAME:
        if (startup_on_display_frame(&m->st, ev->source, ev->t_ns))
            emit_cold(m);
        break;
    case PACER_EV_RECORD: /* submit_record_event */
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
    case PACER_EV_PAGE_SHOW:
        on_page_show(m, p, ev->t_ns);
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

int64_t model_next_deadline(const model *m)
{
    return m->next_deadline;
}

void model_finish(model *m)
{
    check_deadlines(m);
    for (page *p = m->head; p; p = p->next)
        if (p->status == PAGE_MEASURING)
            report_page(m, p, unfinished(m, p, PAGE_INCOMPLETE));
    bool handoff;
    if (startup_on_finish(&m->st, &handoff))
        handoff ? emit_handoff(m) : emit_cold(m);
}

int model_emit(model *m, const char *type, const char *fields_json, int64_t t_ns)
{
    if (!type || !*type || (fields_json && strpbrk(fields_json, "\n\r")))
        return -EINVAL;
    pacer_record *r;
    int rc = record_from_members(type, fields_json, &r);
    if (rc < 0)
        return rc;
    if (!stamp(m, r, t_ns)) {
        pacer_record_free(r);
        return -ENOMEM;
    }
    deliver(m, r, false);
    return 0;
}

int model_submit_record(model *m, pacer_record *r, int64_t t_ns)
{
    if (!stamp(m, r, t_ns)) {
        pacer_record_free(r);
        return -ENOMEM;
    }
    deliver(m, r, false);
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
