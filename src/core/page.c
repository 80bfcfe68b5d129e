/* The page model (seed 000 / 003, DESIGN §3.1), formulas kept verbatim.
 *
 * Timeline of one page instance:
 *
 *   create ── view_created ── initial_draw_end ── … ── api_load_end ── final_draw_end
 *                  ╰─ (lazy page waits here) ─ selected / scroll_to
 *                         api_load_start ── (first configured request starts)
 *
 * Invariants:
 *  1. Each configured API moves NONE → LOADING → LOADED once
 *     (page_on_api_start, page_on_api_end). A request matches on its URL's
 *     path alone; a repeated start of a URL already LOADING or LOADED, or an
 *     unconfigured URL, changes nothing. A failed request ends like a
 *     successful one.
 *  2. api_load_start is the start of the first configured request;
 *     api_load_end is the moment the last configured API reached LOADED.
 *  3. page_on_draw: the first draw sets initial_draw_end; if the page has no
 *     APIs or they had all finished, the page is finished (no final draw).
 *     Otherwise the first draw after every API finished sets final_draw_end
 *     and finishes the page. A page is reported once (model.c).
 *  4. Every lifecycle timestamp is set once; the first event wins.
 *
 * Metrics (ns; "absent" is the seed's -1):
 *  initial_draw = initial_draw_end − create
 *                 − (scroll_to − view_created)  if view_created < scroll_to ≤ initial_draw_end
 *  api_load     = api_load_end − api_load_start
 *  final_draw   = final_draw_end − api_load_end
 *                 − (scroll_to − api_load_end)  if api_load_end < scroll_to ≤ final_draw_end
 *  total        = final_draw_end − create
 *                 − (selected − view_created)   if view_created < selected < final_draw_end
 *                 without a final draw: initial_draw
 */
#include "page.h"

#include "url.h"

#include <stdlib.h>
#include <string.h>

static bool set(int64_t v)
{
    return v != PAGE_UNSET;
}

page *page_new(uint64_t id, const char *class_name, pacer_page_kind kind, const pacer_config *cfg,
               long cfg_index, int64_t t)
{
    page *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->id = id;
    p->kind = kind;
    p->class_name = strdup(class_name ? class_name : "");
    p->create = t;
    p->view_created = p->initial_draw_end = p->api_load_start = p->api_load_end = PAGE_UNSET;
    p->final_draw_end = p->selected = p->scroll_to = p->shown = PAGE_UNSET;
    p->deadline_after_ns = (int64_t)pacer_config_page_deadline_ms(cfg) * 1000000;
    p->deadline_ns = t + p->deadline_after_ns;
    p->is_splash = pacer_config_is_splash(cfg, class_name);
    if (!p->class_name)
        goto fail;
    if (cfg_index >= 0) {
        size_t n = pacer_config_page_api_count(cfg, (size_t)cfg_index);
        if (n) {
            p->apis = calloc(n, sizeof(*p->apis));
            if (!p->apis)
                goto fail;
        }
        for (size_t i = 0; i < n; i++) {
            const char *path;
            size_t len = url_path(pacer_config_page_api(cfg, (size_t)cfg_index, i), &path);
            p->apis[i].path = strndup(path, len);
            if (!p->apis[i].path)
                goto fail;
            p->apis[i].path_len = len;
            p->apis[i].start_ns = p->apis[i].end_ns = PAGE_UNSET;
            p->n_apis = i + 1;
        }
    }
    return p;
fail:
    page_free(p);
    return NULL;
}

void page_free(page *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n_apis; i++)
        free(p->apis[i].path);
    free(p->apis);
    free(p->class_name);
    free(p);
}

bool page_has_apis(const page *p)
{
    return p->n_apis > 0;
}

bool page_all_apis_loaded(const page *p)
{
    for (size_t i = 0; i < p->n_apis; i++)
        if (p->apis[i].state != API_LOADED)
            return false;
    return true;
}

void page_on_view_created(page *p, int64_t t)
{
    if (!set(p->view_created))
        p->view_created = t;
}

void page_on_select(page *p, int64_t t)
{
    if (!set(p->selected))
        p->selected = t;
}

void page_on_scroll(page *p, int64_t t)
{
    if (!set(p->scroll_to))
        p->scroll_to = t;
}

bool page_on_show(page *p, int64_t t)
{
    if (set(p->shown))
        return false;
    p->shown = t;
    p->deadline_ns = t + p->deadline_after_ns;
    return true;
}

static page_api *find_api(page *p, const char *path, size_t len)
{
    for (size_t i = 0; i < p->n_apis; i++)
        if (p->apis[i].path_len == len && memcmp(p->apis[i].path, path, len) == 0)
            return &p->apis[i];
    return NULL;
}

bool page_on_api_start(page *p, const char *path, size_t len, uint64_t req, int64_t t)
{
    page_api *a = find_api(p, path, len);
    if (!a || a->state != API_NONE)
        return false;
    a->state = API_LOADING;
    a->req = req;
    a->start_ns = t;
    if (!set(p->api_load_start))
        p->api_load_start = t;
    return true;
}

bool page_on_api_end(page *p, const char *path, size_t len, uint64_t req, int status, int64_t t)
{
    page_api *a = find_api(p, path, len);
    if (!a || a->state != API_LOADING)
        return false;
    /* With request ids on both sides, only the request that started this
     * API ends it (another page's request for the same URL does not). */
    if (a->req && req && a->req != req)
        return false;
    a->state = API_LOADED;
    a->end_ns = t;
    a->status = status;
    if (!set(p->api_load_end) && page_all_apis_loaded(p))
        p->api_load_end = t;
    return true;
}

unsigned page_on_draw(page *p, int64_t t)
{
    if (!set(p->shown))
        p->shown = t; /* drawn, so seen; the deadline stays where it was */
    if (!set(p->initial_draw_end)) {
        p->initial_draw_end = t;
        if (!page_has_apis(p) || page_all_apis_loaded(p))
            return PAGE_DRAW_FIRST | PAGE_DRAW_REPORT;
        return PAGE_DRAW_FIRST;
    }
    if (!set(p->final_draw_end) && (!page_has_apis(p) || page_all_apis_loaded(p))) {
        p->final_draw_end = t;
        return PAGE_DRAW_REPORT;
    }
    return 0;
}

bool page_initial_draw_ns(const page *p, int64_t *ret)
{
    if (!set(p->initial_draw_end))
        return false;
    int64_t v = p->initial_draw_end - p->create;
    if (set(p->scroll_to) && set(p->view_created) && p->scroll_to > p->view_created &&
        p->scroll_to <= p->initial_draw_end)
        v -= p->scroll_to - p->view_created;
    *ret = v;
    return true;
}

bool page_api_load_ns(const page *p, int64_t *ret)
{
    if (!page_has_apis(p) || !set(p->api_load_end) || !set(p->api_load_start))
        return false;
    *ret = p->api_load_end - p->api_load_start;
    return true;
}

bool page_final_draw_ns(const page *p, int64_t *ret)
{
    if (!set(p->final_draw_end) || !set(p->api_load_end))
        return false;
    int64_t v = p->final_draw_end - p->api_load_end;
    if (set(p->scroll_to) && p->scroll_to > p->api_load_end && p->scroll_to <= p->final_draw_end)
        v -= p->scroll_to - p->api_load_end;
    *ret = v;
    return true;
}

bool page_total_ns(const page *p, int64_t *ret)
{
    if (set(p->final_draw_end)) {
        int64_t v = p->final_draw_end - p->create;
        if (set(p->selected) && set(p->view_created) && p->selected > p->view_created &&
            p->selected < p->final_draw_end)
            v -= p->selected - p->view_created;
        *ret = v;
        return true;
    }
    return page_initial_draw_ns(p, ret);
}

const char *page_status_name(page_status s)
{
    switch (s) {
    case PAGE_MEASURING: return "measuring";
    case PAGE_COMPLETE: return "complete";
    case PAGE_DEADLINE_EXCEEDED: return "deadline_exceeded";
    case PAGE_ABANDONED: return "abandoned";
    case PAGE_INCOMPLETE: return "incomplete";
    case PAGE_NEVER_SHOWN: return "never_shown";
    }
    return "unknown";
}
