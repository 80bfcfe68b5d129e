/* The page model: one measured page instance (seed 000's PageObject).
 *
 * A page collects the timestamps of its lifecycle and of its configured
 * initial requests, and computes the seed's metrics from them. It knows
 * nothing about threads, other pages or records: model.c drives it and turns
 * a finished page into a record. See page.c for the state machine.
 */
#ifndef PACER_CORE_PAGE_H
#define PACER_CORE_PAGE_H

#include <pacer/config.h>
#include <pacer/event.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PAGE_UNSET INT64_MIN

typedef enum api_state { API_NONE = 0, API_LOADING, API_LOADED } api_state;

typedef struct page_api {
    char *path;        /* the configured API, reduced to its path */
    size_t path_len;
    api_state state;
    uint64_t req;      /* request id that moved it to LOADING (0 = unknown) */
    int64_t start_ns;
    int64_t end_ns;
    int status;        /* HTTP status at end; <= 0 transport failure */
} page_api;

typedef enum page_status {
    PAGE_MEASURING = 0,
    PAGE_COMPLETE,
    PAGE_DEADLINE_EXCEEDED,
    PAGE_ABANDONED,
    PAGE_INCOMPLETE,
    PAGE_NEVER_SHOWN,
} page_status;

typedef struct page {
    uint64_t id;
    char *class_name;
    pacer_page_kind kind;
    bool is_main;          /* the main page of the cold start (startup.c decides) */
    bool is_splash;
    int64_t deadline_ns;   /* report as deadline_exceeded when reached */
    int64_t deadline_after_ns; /* the config's page deadline */

    int64_t create;
    int64_t shown;         /* first page_show, or first draw */
    int64_t view_created;
    int64_t initial_draw_end;
    int64_t api_load_start;
    int64_t api_load_end;
    int64_t final_draw_end;
    int64_t selected;
    int64_t scroll_to;

    size_t n_apis;
    page_api *apis;
    page_status status;    /* PAGE_MEASURING until reported */
    bool drawn;            /* drawn at least once (start-up's first frame) */

    /* model.c's bookkeeping */
    struct page *hash_next;
    struct page *prev, *next;
} page;

/* Creates a page from its config snapshot: `cfg_index` is the page's index in
 * `cfg` (-1 for an unconfigured window, which gets no APIs). The page copies
 * what it needs from the config, so later config swaps do not affect it.
 * Returns NULL on allocation failure. */
page *page_new(uint64_t id, const char *class_name, pacer_page_kind kind, const pacer_config *cfg,
               long cfg_index, int64_t t);
void page_free(page *p);

bool page_has_apis(const page *p);
bool page_all_apis_loaded(const page *p);

/* Lifecycle. Each records its time once (the first call wins). */
void page_on_view_created(page *p, int64_t t);
void page_on_select(page *p, int64_t t);
void page_on_scroll(page *p, int64_t t);

/* The page could be seen for the first time: its deadline runs from now.
 * True when this call was the first. */
bool page_on_show(page *p, int64_t t);

/* Request start/end, the seed's onApiLoadStart/End: `path` (not
 * NUL-terminated) is the request URL reduced by url_path(). True when it is
 * a configured API of this page in the right state and the call moved it. */
bool page_on_api_start(page *p, const char *path, size_t len, uint64_t req, int64_t t);
bool page_on_api_end(page *p, const char *path, size_t len, uint64_t req, int status, int64_t t);

/* A draw of the page (the seed's onPageDrawEnd). Returns a mask of
 * PAGE_DRAW_FIRST (this was the initial draw) and PAGE_DRAW_REPORT (the page
 * is now finished and must be reported as complete). */
#define PAGE_DRAW_FIRST 1u
#define PAGE_DRAW_REPORT 2u
unsigned page_on_draw(page *p, int64_t t);

/* Metrics in ns; false when absent (the seed's -1). */
bool page_initial_draw_ns(const page *p, int64_t *ret);
bool page_api_load_ns(const page *p, int64_t *ret);
bool page_final_draw_ns(const page *p, int64_t *ret);
bool page_total_ns(const page *p, int64_t *ret);

const char *page_status_name(page_status s);

#endif
