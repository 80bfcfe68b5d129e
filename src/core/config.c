/* The page config (DESIGN §4, include/pacer/config.h): an expat-driven
 * parser that turns the XML into an immutable, reference-counted snapshot.
 *
 * 1. The root element is optional. The seed's config is a bare list of
 *    <page> elements, which is not an XML document, so the input is always
 *    parsed inside a wrapper element of our own:
 *
 *        [BOM] [<?xml ...?>]  <_>  rest of the user's file  </_>
 *        \---- prologue ---/ wrapper                        suffix
 *
 *    The wrapper goes after the prologue because expat only accepts a BOM
 *    and an XML declaration at the very start of the stream. A <pacer> root
 *    then simply becomes the wrapper's only child.
 *
 * 2. Positions are the user's. The wrapper adds no newline, so expat's line
 *    numbers are already right; columns on the line where the wrapper was
 *    inserted are shifted back by its length (map_position()). expat counts
 *    a BOM as a column; editors do not, so that is taken off line 1 too.
 *    Errors located inside the suffix mean the file ended too early.
 *
 * 3. Parsing stops at the first error: every handler first checks
 *    st->error, because expat may deliver a few more callbacks after
 *    XML_StopParser(). Because of that, the element stack never grows past
 *    <pacer><page><api> and is a small fixed array.
 *
 * 4. Memory is bounded by the input, which is limited to CONFIG_MAX_BYTES.
 *    Duplicate checks use hash sets so a hostile 1 MiB file of tiny
 *    elements stays linear.
 *
 * 5. After pacer_config_parse() returns, a config is never written again;
 *    only its reference count changes (atomically), so any thread may read
 *    it without locks.
 */
#include <pacer/config.h>
#include <pacer/export.h>

#include <errno.h>
#include "expat_dl.h"
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONFIG_MAX_BYTES (1024 * 1024)
#define THRESHOLD_MAX_MS 3600000u

/* Longest user text quoted in an error message, in bytes. */
#define QUOTE_MAX 60

static const char WRAP_OPEN[] = "<_>";
static const char WRAP_CLOSE[] = "</_>";
#define WRAP_OPEN_LEN (sizeof(WRAP_OPEN) - 1)
#define WRAP_CLOSE_LEN (sizeof(WRAP_CLOSE) - 1)

/* <known-leak>: a leak of GTK's or another library's own (docs/agent.md). */
typedef struct config_known_leak {
    char *id;
    char *type;     /* object leaks: a retained object's GType name, or NULL */
    char *function; /* native leaks: a function of the allocation stack, or NULL */
    char *page;     /* only after this page class, or NULL: any */
} config_known_leak;

typedef struct config_page {
    char *id;
    const char *simple; /* points into id: the part after the last '.' */
    bool is_main;
    size_t n_apis;
    char **apis;
} config_page;

struct pacer_config {
    atomic_ulong refs;
    size_t n_pages;
    config_page *pages;
    size_t n_splash;
    char **splash;
    size_t n_in_app;
    char **in_app; /* module basename prefixes, or path prefixes ('/') */
    uint32_t jank_ms;
    uint32_t hang_ms;
    uint32_t page_deadline_ms;
    uint32_t slow_request_ms;
    uint32_t large_image_bytes;
    uint32_t frames_interval_ms;
    uint32_t leak_grace_ms;
    size_t n_known_leaks;
    config_known_leak *known_leaks;
    uint32_t config_poll_ms;
    uint32_t spool_max_kb;
};

/* ---- small helpers ------------------------------------------------------ */

static const char *last_component(const char *s)
{
    const char *dot = strrchr(s, '.');
    return dot ? dot + 1 : s;
}

/* Grows *array (of elem_size elements, capacity *cap) so that one more
 * element fits. Returns 0 or -ENOMEM. */
static int grow(void **array, size_t *cap, size_t count, size_t elem_size)
{
    if (count < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 4;
    void *n = realloc(*array, ncap * elem_size);
    if (!n)
        return -ENOMEM;
    *array = n;
    *cap = ncap;
    return 0;
}

/* Writes `s` into buf for an error message: control characters become '?',
 * and text longer than QUOTE_MAX bytes (or than buf) is cut at a UTF-8
 * character boundary and ends in "...". */
static void quote(char *buf, size_t size, const char *s)
{
    size_t limit = size - 4 < QUOTE_MAX ? size - 4 : QUOTE_MAX;
    size_t n = 0;
    for (; s[n] && n < limit; n++)
        buf[n] = ((unsigned char)s[n] < 0x20 || s[n] == 0x7f) ? '?' : s[n];
    if (s[n]) {
        /* s[n] is the first byte left out: do not cut a character in two. */
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
            n--;
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
}

/* vasprintf that returns NULL on failure. */
static char *format_v(const char *fmt, va_list ap)
{
    char *s;
    if (vasprintf(&s, fmt, ap) < 0)
        return NULL;
    return s;
}

static char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *format(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = format_v(fmt, ap);
    va_end(ap);
    return s;
}

/* ---- string set for duplicate checks ------------------------------------ */

/* Open-addressing set of borrowed strings, each remembering the line it was
 * first seen on. */
typedef struct strset_entry {
    const char *key;
    unsigned long line;
} strset_entry;

typedef struct strset {
    strset_entry *slots;
    size_t cap; /* power of two, or 0 */
    size_t count;
} strset;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void strset_clear(strset *set)
{
    free(set->slots);
    *set = (strset){0};
}

static strset_entry *strset_slot(strset_entry *slots, size_t cap, const char *key)
{
    size_t i = hash_str(key) & (cap - 1);
    while (slots[i].key && strcmp(slots[i].key, key) != 0)
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

/* Adds key (borrowed: it must outlive the set) first seen on `line`. Returns
 * 0 when added, the line of the earlier entry when key was already there,
 * or -ENOMEM. Lines are 1-based, so an earlier entry is never 0. */
static long strset_add(strset *set, const char *key, unsigned long line)
{
    if (2 * (set->count + 1) > set->cap) {
        size_t ncap = set->cap ? set->cap * 2 : 16;
        strset_entry *n = calloc(ncap, sizeof(*n));
        if (!n)
            return -ENOMEM;
        for (size_t i = 0; i < set->cap; i++)
            if (set->slots[i].key)
                *strset_slot(n, ncap, set->slots[i].key) = set->slots[i];
        free(set->slots);
        set->slots = n;
        set->cap = ncap;
    }
    strset_entry *e = strset_slot(set->slots, set->cap, key);
    if (e->key)
        return (long)e->line;
    e->key = key;
    e->line = line;
    set->count++;
    return 0;
}

/* ---- parser state ------------------------------------------------------- */

typedef enum elem_kind {
    ELEM_UNKNOWN,
    ELEM_TOP, /* outside any element of the user's */
    ELEM_PACER,
    ELEM_PAGE,
    ELEM_API,
    ELEM_SPLASH,
    ELEM_THRESHOLDS,
    ELEM_UPLOAD,
    ELEM_IN_APP,
    ELEM_KNOWN_LEAK,
} elem_kind;

static const char *const elem_names[] = {
    [ELEM_UNKNOWN] = "",
    [ELEM_TOP] = "",
    [ELEM_PACER] = "pacer",
    [ELEM_PAGE] = "page",
    [ELEM_API] = "api",
    [ELEM_SPLASH] = "splash",
    [ELEM_THRESHOLDS] = "thresholds",
    [ELEM_UPLOAD] = "upload",
    [ELEM_IN_APP] = "in-app",
    [ELEM_KNOWN_LEAK] = "known-leak",
};

#define STACK_MAX 8

typedef struct position {
    unsigned long line; /* 1-based */
    unsigned long col;  /* 1-based */
} position;

typedef struct parse_state {
    const expat_api *x; /* expat, loaded at the first parse */
    XML_Parser xp;
    const char *xml; /* the user's text */
    size_t len;
    pacer_config *cfg;
    char *error; /* "LINE:COL: reason" once something failed */

    /* Layout of the stream fed to expat (note 1), in stream bytes. */
    bool wrapped;
    bool has_bom;
    size_t prologue_len;    /* BOM and XML declaration */
    size_t suffix_start;    /* where WRAP_CLOSE begins */
    unsigned long ins_line; /* expat position of WRAP_OPEN */
    unsigned long ins_col;  /* 0-based, as expat counts */
    bool wrapper_seen;

    elem_kind stack[STACK_MAX];
    unsigned long stack_line[STACK_MAX];
    size_t depth; /* stack[0] is ELEM_TOP */

    bool saw_pacer;
    unsigned long first_top_line; /* first top-level element other than <pacer> */
    const char *first_top_name;
    size_t main_page; /* index + 1 of the tag="1" page, 0 if none yet */
    unsigned long main_line;
    unsigned long thresholds_line;
    unsigned long upload_line;

    size_t cap_pages, cap_apis, cap_splash, cap_in_app, cap_known_leaks;
    strset page_ids, api_ids, splash_ids, in_app_ids;
} parse_state;

/* Translates an expat position (line, 0-based column, stream byte index)
 * into the user's file (note 2). */
static position map_position(const parse_state *st, unsigned long line, unsigned long col, XML_Index byte)
{
    size_t b = byte < 0 ? 0 : (size_t)byte;
    if (st->wrapped && b > st->suffix_start) {
        /* The suffix is ASCII without newlines: step back to its start. */
        size_t back = b - st->suffix_start;
        col = col > back ? col - back : 0;
        b = st->suffix_start;
    }
    if (st->wrapped && line == st->ins_line && b >= st->prologue_len) {
        if (b >= st->prologue_len + WRAP_OPEN_LEN)
            col = col > WRAP_OPEN_LEN ? col - WRAP_OPEN_LEN : 0;
        else
            col = st->ins_col;
    }
    if (st->has_bom && line == 1 && col > 0)
        col--;
    return (position){line ? line : 1, col + 1};
}

static position current_position(const parse_state *st)
{
    return map_position(st, st->x->XML_GetCurrentLineNumber(st->xp), st->x->XML_GetCurrentColumnNumber(st->xp),
                        st->x->XML_GetCurrentByteIndex(st->xp));
}

/* Records the first error at `pos` and stops expat. */
static void fail_at(parse_state *st, position pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail_at(parse_state *st, position pos, const char *fmt, ...)
{
    if (st->error)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *reason = format_v(fmt, ap);
    va_end(ap);
    st->error = format("%lu:%lu: %s", pos.line, pos.col, reason ? reason : "out of memory");
    free(reason);
    if (!st->error)
        st->error = strdup("1:1: out of memory");
    st->x->XML_StopParser(st->xp, XML_FALSE);
}

#define fail(st, ...) fail_at((st), current_position(st), __VA_ARGS__)

static void fail_oom(parse_state *st)
{
    fail(st, "out of memory");
}

/* ---- element handlers --------------------------------------------------- */

static elem_kind kind_of(const char *name)
{
    for (size_t k = ELEM_PACER; k < sizeof(elem_names) / sizeof(elem_names[0]); k++)
        if (strcmp(name, elem_names[k]) == 0)
            return (elem_kind)k;
    return ELEM_UNKNOWN;
}

/* Checks the attributes of <name> against the NULL-terminated `allowed`
 * list; on an unknown one, fails with the list of the accepted ones. */
static bool check_attributes(parse_state *st, const char *name, const char **atts, const char *const *allowed,
                             const char *allowed_text)
{
    for (size_t i = 0; atts[i]; i += 2) {
        bool ok = false;
        for (size_t j = 0; allowed[j] && !ok; j++)
            ok = strcmp(atts[i], allowed[j]) == 0;
        if (!ok) {
            char q[QUOTE_MAX + 8];
            quote(q, sizeof(q), atts[i]);
            if (allowed_text)
                fail(st, "unknown attribute \"%s\" on <%s> (it accepts %s)", q, name, allowed_text);
            else
                fail(st, "unknown attribute \"%s\" on <%s> (it takes no attributes)", q, name);
            return false;
        }
    }
    return true;
}

static const char *attribute(const char **atts, const char *name)
{
    for (size_t i = 0; atts[i]; i += 2)
        if (strcmp(atts[i], name) == 0)
            return atts[i + 1];
    return NULL;
}

static bool is_xml_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Returns a copy of the id attribute of <name>, or NULL after failing. */
static char *required_id(parse_state *st, const char *name, const char **atts)
{
    const char *id = attribute(atts, "id");
    if (!id) {
        fail(st, "<%s> has no id attribute", name);
        return NULL;
    }
    const char *p = id;
    while (is_xml_space(*p))
        p++;
    if (!*p) {
        fail(st, "<%s> has an empty id", name);
        return NULL;
    }
    char *copy = strdup(id);
    if (!copy)
        fail_oom(st);
    return copy;
}

static void start_page(parse_state *st, const char **atts, unsigned long line)
{
    static const char *const allowed[] = {"id", "tag", NULL};
    if (!check_attributes(st, "page", atts, allowed, "id and tag"))
        return;
    const char *tag = attribute(atts, "tag");
    bool is_main = false;
    if (tag) {
        if (strcmp(tag, "1") == 0) {
            is_main = true;
        } else if (strcmp(tag, "0") != 0) {
            char q[QUOTE_MAX + 8];
            quote(q, sizeof(q), tag);
            fail(st, "tag=\"%s\" on <page>: use tag=\"1\" for the main page, tag=\"0\" (the default) otherwise", q);
            return;
        }
    }
    char *id = required_id(st, "page", atts);
    if (!id)
        return;

    pacer_config *cfg = st->cfg;
    if (grow((void **)&cfg->pages, &st->cap_pages, cfg->n_pages, sizeof(*cfg->pages)) < 0) {
        free(id);
        fail_oom(st);
        return;
    }
    /* From here on the page belongs to cfg, so it is freed with it. */
    config_page *page = &cfg->pages[cfg->n_pages++];
    *page = (config_page){.id = id, .simple = last_component(id), .is_main = is_main};

    char q[QUOTE_MAX + 8];
    quote(q, sizeof(q), id);
    long first = strset_add(&st->page_ids, id, line);
    if (first < 0) {
        fail_oom(st);
        return;
    }
    if (first > 0) {
        fail(st, "duplicate page id \"%s\" (first defined on line %ld)", q, first);
        return;
    }
    if (is_main) {
        if (st->main_page) {
            char q2[QUOTE_MAX + 8];
            quote(q2, sizeof(q2), cfg->pages[st->main_page - 1].id);
            fail(st, "page \"%s\" has tag=\"1\", but \"%s\" on line %lu is already the main page; only one page may have tag=\"1\"",
                 q, q2, st->main_line);
            return;
        }
        st->main_page = cfg->n_pages;
        st->main_line = line;
    }
    /* API ids are unique per page: start a fresh set. */
    strset_clear(&st->api_ids);
    st->cap_apis = 0;
}

static void start_api(parse_state *st, const char **atts, unsigned long line)
{
    static const char *const allowed[] = {"id", NULL};
    if (!check_attributes(st, "api", atts, allowed, "only id"))
        return;
    char *id = required_id(st, "api", atts);
    if (!id)
        return;
    config_page *page = &st->cfg->pages[st->cfg->n_pages - 1];
    if (grow((void **)&page->apis, &st->cap_apis, page->n_apis, sizeof(*page->apis)) < 0) {
        free(id);
        fail_oom(st);
        return;
    }
    page->apis[page->n_apis++] = id;
    long first = strset_add(&st->api_ids, id, line);
    if (first < 0) {
        fail_oom(st);
    } else if (first > 0) {
        char q[QUOTE_MAX + 8], q2[QUOTE_MAX + 8];
        quote(q, sizeof(q), id);
        quote(q2, sizeof(q2), page->id);
        fail(st, "duplicate api \"%s\" in page \"%s\" (first listed on line %ld)", q, q2, first);
    }
}

static void start_splash(parse_state *st, const char **atts, unsigned long line)
{
    static const char *const allowed[] = {"id", NULL};
    if (!check_attributes(st, "splash", atts, allowed, "only id"))
        return;
    char *id = required_id(st, "splash", atts);
    if (!id)
        return;
    pacer_config *cfg = st->cfg;
    if (grow((void **)&cfg->splash, &st->cap_splash, cfg->n_splash, sizeof(*cfg->splash)) < 0) {
        free(id);
        fail_oom(st);
        return;
    }
    cfg->splash[cfg->n_splash++] = id;
    long first = strset_add(&st->splash_ids, id, line);
    if (first < 0) {
        fail_oom(st);
    } else if (first > 0) {
        char q[QUOTE_MAX + 8];
        quote(q, sizeof(q), id);
        fail(st, "duplicate splash id \"%s\" (first defined on line %ld)", q, first);
    }
}

/* <in-app module="libfoo"/>: frames of that module count as the app's own
 * in jank stacks (docs/agent.md). The value is a module basename prefix
 * ("libfoo" matches libfoo.so.1), or a path prefix when it starts with '/'. */
static void start_in_app(parse_state *st, const char **atts, unsigned long line)
{
    static const char *const allowed[] = {"module", NULL};
    if (!check_attributes(st, "in-app", atts, allowed, "only module"))
        return;
    const char *module = NULL;
    for (size_t i = 0; atts[i]; i += 2)
        if (strcmp(atts[i], "module") == 0)
            module = atts[i + 1];
    if (!module || !*module) {
        fail(st, module ? "<in-app> module is empty" : "<in-app> is missing its module attribute");
        return;
    }
    char *copy = strdup(module);
    pacer_config *cfg = st->cfg;
    if (!copy || grow((void **)&cfg->in_app, &st->cap_in_app, cfg->n_in_app, sizeof(*cfg->in_app)) < 0) {
        free(copy);
        fail_oom(st);
        return;
    }
    cfg->in_app[cfg->n_in_app++] = copy;
    long first = strset_add(&st->in_app_ids, copy, line);
    if (first < 0) {
        fail_oom(st);
    } else if (first > 0) {
        char q[QUOTE_MAX + 8];
        quote(q, sizeof(q), copy);
        fail(st, "duplicate in-app module \"%s\" (first listed on line %ld)", q, first);
    }
}

/* Parses decimal digits only, within min..max. Returns 0 or -EINVAL. */
static int parse_range(const char *s, uint32_t min, uint32_t max, uint32_t *ret)
{
    uint64_t v = 0;
    if (!*s)
        return -EINVAL;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -EINVAL;
        v = v * 10 + (uint64_t)(*s - '0');
        if (v > max)
            return -EINVAL;
    }
    if (v < min)
        return -EINVAL;
    *ret = (uint32_t)v;
    return 0;
}

/* A threshold: 1..THRESHOLD_MAX_MS. */
static int parse_ms(const char *s, uint32_t *ret)
{
    return parse_range(s, 1, THRESHOLD_MAX_MS, ret);
}

/* <thresholds>: milliseconds, 1..THRESHOLD_MAX_MS, except large-image-bytes
 * (a size, 1..2^31). */
static void start_thresholds(parse_state *st, const char **atts, unsigned long line)
{
    static const char *const allowed[] = {"jank-ms",           "hang-ms",           "page-deadline-ms",
                                          "slow-request-ms",   "large-image-bytes", "frames-interval-ms",
                                          "leak-grace-ms",     NULL};
    if (!check_attributes(st, "thresholds", atts, allowed,
                          "jank-ms, hang-ms, page-deadline-ms, slow-request-ms, large-image-bytes, "
                          "frames-interval-ms and leak-grace-ms"))
        return;
    if (st->thresholds_line) {
        fail(st, "more than one <thresholds> (the first is on line %lu)", st->thresholds_line);
        return;
    }
    st->thresholds_line = line;
    uint32_t *fields[] = {&st->cfg->jank_ms,           &st->cfg->hang_ms,
                          &st->cfg->page_deadline_ms,  &st->cfg->slow_request_ms,
                          &st->cfg->large_image_bytes, &st->cfg->frames_interval_ms,
                          &st->cfg->leak_grace_ms};
    for (size_t i = 0; allowed[i]; i++) {
        const char *v = attribute(atts, allowed[i]);
        bool bytes = fields[i] == &st->cfg->large_image_bytes;
        if (v && (bytes ? parse_range(v, 1, 2147483648u, fields[i]) : parse_ms(v, fields[i])) < 0) {
            char q[QUOTE_MAX + 8];
            quote(q, sizeof(q), v);
            if (bytes)
                fail(st, "%s=\"%s\" on <thresholds>: use a whole number of bytes from 1 to 2147483648", allowed[i],
                     q);
            else
                fail(st, "%s=\"%s\" on <thresholds>: use a whole number of milliseconds from 1 to %u", allowed[i],
                     q, THRESHOLD_MAX_MS);
            return;
        }
    }
}

/* A copy of attribute `name` when present and not blank; *ret stays NULL
 * when absent. Returns false after failing (blank, or out of memory). */
static bool optional_text(parse_state *st, const char **atts, const char *elem, const char *name, char **ret)
{
    const char *v = attribute(atts, name);
    *ret = NULL;
    if (!v)
        return true;
    const char *p = v;
    while (is_xml_space(*p))
        p++;
    if (!*p) {
        fail(st, "<%s> has an empty %s", elem, name);
        return false;
    }
    if (!(*ret = strdup(v))) {
        fail_oom(st);
        return false;
    }
    return true;
}

/* <known-leak id type|function [page]>: a leak that is not the app's. */
static void start_known_leak(parse_state *st, const char **atts)
{
    static const char *const allowed[] = {"id", "type", "function", "page", NULL};
    if (!check_attributes(st, "known-leak", atts, allowed, "id, type, function and page"))
        return;
    pacer_config *cfg = st->cfg;
    if (grow((void **)&cfg->known_leaks, &st->cap_known_leaks, cfg->n_known_leaks, sizeof(*cfg->known_leaks)) < 0) {
        fail_oom(st);
        return;
    }
    /* From here on the entry belongs to cfg, so it is freed with it. */
    config_known_leak *k = &cfg->known_leaks[cfg->n_known_leaks++];
    *k = (config_known_leak){0};
    if (!optional_text(st, atts, "known-leak", "type", &k->type) ||
        !optional_text(st, atts, "known-leak", "function", &k->function) ||
        !optional_text(st, atts, "known-leak", "page", &k->page))
        return;
    if (!k->type == !k->function) {
        fail(st, "<known-leak> needs exactly one of type (a GType name, for object leaks) and function (a "
                 "function of the allocation stack, for native leaks)");
        return;
    }
    if (attribute(atts, "id")) {
        k->id = required_id(st, "known-leak", atts);
    } else if (!(k->id = strdup(k->type ? k->type : k->function))) {
        fail_oom(st);
    }
}

/* <upload config-poll-ms spool-max-kb>: how often a running app asks the
 * server for a new config, and the size cap of the on-disk spool. */
static void start_upload(parse_state *st, const char **atts, unsigned long line)
{
    static const char *const allowed[] = {"config-poll-ms", "spool-max-kb", NULL};
    static const uint32_t min[] = {100, 64}, max[] = {86400000, 16777216};
    if (!check_attributes(st, "upload", atts, allowed, "config-poll-ms and spool-max-kb"))
        return;
    if (st->upload_line) {
        fail(st, "more than one <upload> (the first is on line %lu)", st->upload_line);
        return;
    }
    st->upload_line = line;
    uint32_t *fields[] = {&st->cfg->config_poll_ms, &st->cfg->spool_max_kb};
    for (size_t i = 0; i < 2; i++) {
        const char *v = attribute(atts, allowed[i]);
        if (v && parse_range(v, min[i], max[i], fields[i]) < 0) {
            char q[QUOTE_MAX + 8];
            quote(q, sizeof(q), v);
            fail(st, "%s=\"%s\" on <upload>: use a whole number from %u to %u", allowed[i], q, min[i], max[i]);
            return;
        }
    }
}

static void XMLCALL on_start(void *user, const XML_Char *name, const XML_Char **atts)
{
    parse_state *st = user;
    if (st->error)
        return;
    if (st->wrapped && !st->wrapper_seen) {
        st->wrapper_seen = true;
        return;
    }
    elem_kind kind = kind_of(name);
    if (kind == ELEM_UNKNOWN) {
        char q[QUOTE_MAX + 8];
        quote(q, sizeof(q), name);
        fail(st, "unknown element <%s> (expected <page>, <api>, <splash>, <thresholds>, <upload>, <in-app>, "
                 "<known-leak> or a <pacer> root)",
             q);
        return;
    }
    elem_kind parent = st->stack[st->depth - 1];
    unsigned long parent_line = st->stack_line[st->depth - 1];
    unsigned long line = current_position(st).line;

    switch (parent) {
    case ELEM_UNKNOWN:
    case ELEM_API:
    case ELEM_SPLASH:
    case ELEM_THRESHOLDS:
    case ELEM_UPLOAD:
    case ELEM_IN_APP:
    case ELEM_KNOWN_LEAK:
        fail(st, "<%s> inside <%s> (line %lu); <%s> takes no child elements", name, elem_names[parent], parent_line,
             elem_names[parent]);
        return;
    case ELEM_PAGE:
        if (kind == ELEM_API)
            break;
        if (kind == ELEM_PAGE)
            fail(st, "nested <page>: the <page> on line %lu is not closed yet", parent_line);
        else
            fail(st, "<%s> inside a <page> (line %lu); only <api> belongs there", name, parent_line);
        return;
    case ELEM_PACER:
        if (kind == ELEM_PACER) {
            fail(st, "nested <pacer> (the root is on line %lu)", parent_line);
            return;
        }
        break;
    case ELEM_TOP:
        if (kind == ELEM_PACER && st->saw_pacer) {
            fail(st, "a second <pacer> element; there can only be one root");
            return;
        }
        if (kind == ELEM_PACER && st->first_top_line) {
            fail(st, "<pacer> must enclose the whole config, but <%s> on line %lu comes before it", st->first_top_name,
                 st->first_top_line);
            return;
        }
        if (kind != ELEM_PACER && st->saw_pacer) {
            fail(st, "<%s> after </pacer>; put it inside the <pacer> element", name);
            return;
        }
        if (kind != ELEM_PACER && !st->first_top_line) {
            st->first_top_line = line;
            st->first_top_name = elem_names[kind];
        }
        break;
    }
    if (kind == ELEM_API && parent != ELEM_PAGE) {
        fail(st, "<api> outside of a <page>");
        return;
    }

    switch (kind) {
    case ELEM_PACER:
        st->saw_pacer = true;
        check_attributes(st, "pacer", atts, (const char *const[]){NULL}, NULL);
        break;
    case ELEM_PAGE:
        start_page(st, atts, line);
        break;
    case ELEM_API:
        start_api(st, atts, line);
        break;
    case ELEM_SPLASH:
        start_splash(st, atts, line);
        break;
    case ELEM_THRESHOLDS:
        start_thresholds(st, atts, line);
        break;
    case ELEM_UPLOAD:
        start_upload(st, atts, line);
        break;
    case ELEM_IN_APP:
        start_in_app(st, atts, line);
        break;
    case ELEM_KNOWN_LEAK:
        start_known_leak(st, atts);
        break;
    case ELEM_UNKNOWN:
    case ELEM_TOP:
        break;
    }
    if (st->error)
        return;
    /* Only leaf elements could go deeper, and they fail above. */
    if (st->depth >= STACK_MAX) {
        fail(st, "elements nested too deeply");
        return;
    }
    st->stack[st->depth] = kind;
    st->stack_line[st->depth] = line;
    st->depth++;
}

static void XMLCALL on_end(void *user, const XML_Char *name)
{
    parse_state *st = user;
    if (st->error)
        return;
    if (st->depth > 1) {
        st->depth--;
        return;
    }
    /* The wrapper closed. Unless that is our own suffix, the user closed
     * an element they never opened. */
    XML_Index byte = st->x->XML_GetCurrentByteIndex(st->xp);
    if (byte < 0 || (size_t)byte < st->suffix_start) {
        char q[QUOTE_MAX + 8];
        quote(q, sizeof(q), name);
        fail(st, "</%s> without a matching <%s>", q, q);
    }
}

static void XMLCALL on_text(void *user, const XML_Char *s, int len)
{
    parse_state *st = user;
    if (st->error)
        return;
    int i = 0;
    while (i < len && is_xml_space(s[i]))
        i++;
    if (i == len)
        return;
    /* Point at the first non-space character, not at the start of the run. */
    position pos = current_position(st);
    for (int j = 0; j < i; j++) {
        if (s[j] == '\n') {
            pos.line++;
            pos.col = 1;
        } else if (((unsigned char)s[j] & 0xc0) != 0x80) {
            pos.col++;
        }
    }
    char text[QUOTE_MAX + 8], q[QUOTE_MAX + 8];
    /* One byte more than quote() keeps, so it can tell the text was cut. */
    int n = len - i < QUOTE_MAX + 1 ? len - i : QUOTE_MAX + 1;
    memcpy(text, s + i, (size_t)n);
    text[n] = '\0';
    char *nl = strpbrk(text, "\r\n");
    if (nl)
        *nl = '\0';
    quote(q, sizeof(q), text);
    if (st->depth > 1)
        fail_at(st, pos, "unexpected text \"%s\" inside <%s>; a config holds only elements and attributes", q,
                elem_names[st->stack[st->depth - 1]]);
    else
        fail_at(st, pos, "unexpected text \"%s\"; a config holds only elements and attributes", q);
}

/* ---- entry points ------------------------------------------------------- */

/* Finds the end of the prologue (note 1): an optional UTF-8 BOM and an
 * optional XML declaration. Sets *wrapped to false when the declaration is
 * not terminated, in which case no wrapper is added and expat reports it. */
static void scan_prologue(parse_state *st, const char *xml, size_t len)
{
    size_t p = 0;
    st->wrapped = true;
    if (len >= 3 && memcmp(xml, "\xEF\xBB\xBF", 3) == 0) {
        st->has_bom = true;
        p = 3;
    }
    if (len - p >= 6 && memcmp(xml + p, "<?xml", 5) == 0 && is_xml_space(xml[p + 5])) {
        const char *end = NULL;
        for (size_t i = p + 5; i + 1 < len; i++) {
            if (xml[i] == '?' && xml[i + 1] == '>') {
                end = xml + i + 2;
                break;
            }
        }
        if (!end) {
            st->wrapped = false;
            p = len;
        } else {
            p = (size_t)(end - xml);
        }
    }
    st->prologue_len = p;

    /* Where expat will be when it reaches the wrapper. It counts \r\n and
     * \r as one newline, and columns in characters. */
    unsigned long line = 1, col = 0;
    for (size_t i = 0; i < p; i++) {
        unsigned char c = (unsigned char)xml[i];
        if (c == '\r' || c == '\n') {
            if (c == '\r' && i + 1 < p && xml[i + 1] == '\n')
                i++;
            line++;
            col = 0;
        } else if ((c & 0xc0) != 0x80) {
            col++;
        }
    }
    st->ins_line = line;
    st->ins_col = col;
}

/* Whether the user's text at stream byte `byte`, or up to two bytes before
 * it (expat points into a "<!" construct), starts with `word`. Returns how
 * far before `byte` it starts, plus one; 0 when it does not. */
static size_t user_text_at(const parse_state *st, XML_Index byte, const char *word)
{
    if (byte < 0)
        return 0;
    size_t b = (size_t)byte, n = strlen(word);
    if (st->wrapped && b >= st->prologue_len + WRAP_OPEN_LEN)
        b -= WRAP_OPEN_LEN;
    for (size_t back = 0; back <= 2 && back <= b; back++)
        if (b - back + n <= st->len && memcmp(st->xml + b - back, word, n) == 0)
            return back + 1;
    return 0;
}

/* Builds the error for an expat failure that our handlers did not cause. */
static void expat_error(parse_state *st)
{
    enum XML_Error code = st->x->XML_GetErrorCode(st->xp);
    XML_Index byte = st->x->XML_GetCurrentByteIndex(st->xp);
    position pos = current_position(st);
    const char *open = st->depth > 1 ? elem_names[st->stack[st->depth - 1]] : NULL;
    unsigned long open_line = st->stack_line[st->depth - 1];

    if (st->wrapped && byte >= 0 && (size_t)byte >= st->suffix_start) {
        if (code == XML_ERROR_TAG_MISMATCH && open)
            fail_at(st, pos, "end of file inside <%s> (opened on line %lu)", open, open_line);
        else
            fail_at(st, pos, "the file ends in the middle of a tag or other markup (%s)",
                    st->x->XML_ErrorString(code));
        return;
    }
    if (code == XML_ERROR_TAG_MISMATCH) {
        /* expat points at the name; the user wrote "</" just before it. */
        if (pos.col > 2)
            pos.col -= 2;
        if (open)
            fail_at(st, pos, "mismatched closing tag: expected </%s> (opened on line %lu)", open, open_line);
        else
            fail_at(st, pos, "closing tag without a matching opening tag");
        return;
    }
    size_t back = user_text_at(st, byte, "<!DOCTYPE");
    if (back) {
        if (pos.col >= back)
            pos.col -= back - 1;
        fail_at(st, pos, "DOCTYPE declarations are not supported in a pacer config");
        return;
    }
    const char *msg = st->x->XML_ErrorString(code);
    fail_at(st, pos, "%s", msg ? msg : "XML error");
}

static pacer_config *config_alloc(void)
{
    pacer_config *cfg = calloc(1, sizeof(*cfg));
    if (!cfg)
        return NULL;
    atomic_init(&cfg->refs, 1);
    cfg->jank_ms = PACER_DEFAULT_JANK_MS;
    cfg->hang_ms = PACER_DEFAULT_HANG_MS;
    cfg->page_deadline_ms = PACER_DEFAULT_PAGE_DEADLINE_MS;
    cfg->slow_request_ms = PACER_DEFAULT_SLOW_REQUEST_MS;
    cfg->large_image_bytes = PACER_DEFAULT_LARGE_IMAGE_BYTES;
    cfg->frames_interval_ms = PACER_DEFAULT_FRAMES_INTERVAL_MS;
    cfg->leak_grace_ms = PACER_DEFAULT_LEAK_GRACE_MS;
    cfg->config_poll_ms = PACER_DEFAULT_CONFIG_POLL_MS;
    cfg->spool_max_kb = PACER_DEFAULT_SPOOL_MAX_KB;
    return cfg;
}

static void config_free(pacer_config *cfg)
{
    for (size_t i = 0; i < cfg->n_pages; i++) {
        for (size_t j = 0; j < cfg->pages[i].n_apis; j++)
            free(cfg->pages[i].apis[j]);
        free(cfg->pages[i].apis);
        free(cfg->pages[i].id);
    }
    free(cfg->pages);
    for (size_t i = 0; i < cfg->n_splash; i++)
        free(cfg->splash[i]);
    free(cfg->splash);
    for (size_t i = 0; i < cfg->n_in_app; i++)
        free(cfg->in_app[i]);
    free(cfg->in_app);
    for (size_t i = 0; i < cfg->n_known_leaks; i++) {
        free(cfg->known_leaks[i].id);
        free(cfg->known_leaks[i].type);
        free(cfg->known_leaks[i].function);
        free(cfg->known_leaks[i].page);
    }
    free(cfg->known_leaks);
    free(cfg);
}

static void set_error(char **ret_error, char *msg)
{
    if (ret_error)
        *ret_error = msg;
    else
        free(msg);
}

PACER_API pacer_config *pacer_config_parse(const char *xml, size_t len, char **ret_error)
{
    if (ret_error)
        *ret_error = NULL;
    if (!xml && len > 0) {
        set_error(ret_error, strdup("1:1: no config text"));
        return NULL;
    }
    if (len > CONFIG_MAX_BYTES) {
        set_error(ret_error, format("1:1: config is larger than 1 MiB (%zu bytes)", len));
        return NULL;
    }

    parse_state st = {0};
    const char *why = NULL;
    st.x = expat_api_get(&why);
    if (!st.x) {
        set_error(ret_error, format("1:1: the config cannot be read without expat: %s", why));
        return NULL;
    }
    st.cfg = config_alloc();
    st.xp = st.x->XML_ParserCreate(NULL);
    if (!st.cfg || !st.xp) {
        if (st.cfg)
            config_free(st.cfg);
        if (st.xp)
            st.x->XML_ParserFree(st.xp);
        set_error(ret_error, strdup("1:1: out of memory"));
        return NULL;
    }
    st.stack[0] = ELEM_TOP;
    st.stack_line[0] = 0;
    st.depth = 1;
    st.x->XML_SetUserData(st.xp, &st);
    st.x->XML_SetElementHandler(st.xp, on_start, on_end);
    st.x->XML_SetCharacterDataHandler(st.xp, on_text);

    st.xml = xml ? xml : "";
    st.len = len;
    scan_prologue(&st, st.xml, len);
    st.suffix_start = len + (st.wrapped ? WRAP_OPEN_LEN : 0);

    /* Feed the stream in pieces (note 1); stop at the first failure. */
    struct {
        const char *p;
        size_t n;
    } parts[4] = {
        {xml, st.prologue_len},
        {WRAP_OPEN, st.wrapped ? WRAP_OPEN_LEN : 0},
        {xml ? xml + st.prologue_len : NULL, len - st.prologue_len},
        {WRAP_CLOSE, st.wrapped ? WRAP_CLOSE_LEN : 0},
    };
    for (size_t i = 0; i < 4 && !st.error; i++) {
        bool last = i == 3;
        if (parts[i].n == 0 && !last)
            continue;
        if (st.x->XML_Parse(st.xp, parts[i].p ? parts[i].p : "", (int)parts[i].n, last) != XML_STATUS_OK) {
            if (!st.error)
                expat_error(&st);
        }
    }

    st.x->XML_ParserFree(st.xp);
    strset_clear(&st.page_ids);
    strset_clear(&st.api_ids);
    strset_clear(&st.splash_ids);
    strset_clear(&st.in_app_ids);
    if (st.error) {
        config_free(st.cfg);
        set_error(ret_error, st.error);
        return NULL;
    }
    return st.cfg;
}

/* Reads all of fd into a malloc'd buffer. Returns 0, -EFBIG when there is
 * more than CONFIG_MAX_BYTES, or another negative errno. */
static int read_all(int fd, char **ret_buf, size_t *ret_len)
{
    struct stat sb;
    size_t cap = 4096;
    if (fstat(fd, &sb) < 0)
        return -errno;
    if (S_ISREG(sb.st_mode) && sb.st_size > CONFIG_MAX_BYTES)
        return -EFBIG;
    if (S_ISREG(sb.st_mode) && sb.st_size > 0)
        cap = (size_t)sb.st_size < CONFIG_MAX_BYTES ? (size_t)sb.st_size + 1 : CONFIG_MAX_BYTES + 1;
    char *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    size_t len = 0;
    for (;;) {
        if (len == cap) {
            if (cap > CONFIG_MAX_BYTES) {
                free(buf);
                return -EFBIG;
            }
            size_t ncap = cap * 2 > CONFIG_MAX_BYTES + 1 ? CONFIG_MAX_BYTES + 1 : cap * 2;
            char *n = realloc(buf, ncap);
            if (!n) {
                free(buf);
                return -ENOMEM;
            }
            buf = n;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            return -e;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    *ret_buf = buf;
    *ret_len = len;
    return 0;
}

PACER_API pacer_config *pacer_config_load(const char *path, char **ret_error)
{
    if (ret_error)
        *ret_error = NULL;
    if (!path) {
        set_error(ret_error, strdup("(null): no config path"));
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        set_error(ret_error, format("%s: %s", path, strerror(errno)));
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0;
    int r = read_all(fd, &buf, &len);
    close(fd);
    if (r == -EFBIG) {
        set_error(ret_error, format("%s: file is larger than 1 MiB; a page config should be a few KiB", path));
        return NULL;
    }
    if (r < 0) {
        set_error(ret_error, format("%s: %s", path, strerror(-r)));
        return NULL;
    }
    char *error = NULL;
    pacer_config *cfg = pacer_config_parse(buf, len, ret_error ? &error : NULL);
    free(buf);
    if (!cfg && ret_error) {
        *ret_error = format("%s:%s", path, error ? error : " out of memory");
        free(error);
    }
    return cfg;
}

PACER_API pacer_config *pacer_config_new_empty(void)
{
    return config_alloc();
}

PACER_API pacer_config *pacer_config_ref(pacer_config *cfg)
{
    if (cfg)
        atomic_fetch_add_explicit(&cfg->refs, 1, memory_order_relaxed);
    return cfg;
}

PACER_API void pacer_config_unref(pacer_config *cfg)
{
    if (!cfg)
        return;
    /* acq_rel: the last owner must see every other owner's reads finish
     * before it frees. */
    if (atomic_fetch_sub_explicit(&cfg->refs, 1, memory_order_acq_rel) == 1)
        config_free(cfg);
}

/* ---- accessors ---------------------------------------------------------- */

PACER_API size_t pacer_config_page_count(const pacer_config *cfg)
{
    return cfg ? cfg->n_pages : 0;
}

static const config_page *page_at(const pacer_config *cfg, size_t page)
{
    return cfg && page < cfg->n_pages ? &cfg->pages[page] : NULL;
}

PACER_API const char *pacer_config_page_id(const pacer_config *cfg, size_t page)
{
    const config_page *p = page_at(cfg, page);
    return p ? p->id : NULL;
}

PACER_API bool pacer_config_page_is_main(const pacer_config *cfg, size_t page)
{
    const config_page *p = page_at(cfg, page);
    return p && p->is_main;
}

PACER_API size_t pacer_config_page_api_count(const pacer_config *cfg, size_t page)
{
    const config_page *p = page_at(cfg, page);
    return p ? p->n_apis : 0;
}

PACER_API const char *pacer_config_page_api(const pacer_config *cfg, size_t page, size_t api)
{
    const config_page *p = page_at(cfg, page);
    return p && api < p->n_apis ? p->apis[api] : NULL;
}

/* Whether configured id `id` (with last component `id_simple`) names class
 * `name` (with last component `name_simple`) by the simple-name rule: one
 * side is a bare class name equal to the other's last component. Two
 * different full paths (com.a.X, com.b.X) are different classes. */
static bool simple_name_match(const char *id, const char *id_simple, const char *name, const char *name_simple)
{
    if (id_simple == id)
        return strcmp(id, name_simple) == 0;
    if (name_simple == name)
        return strcmp(id_simple, name) == 0;
    return false;
}

PACER_API long pacer_config_find_page(const pacer_config *cfg, const char *class_name)
{
    if (!cfg || !class_name || !*class_name)
        return -1;
    for (size_t i = 0; i < cfg->n_pages; i++)
        if (strcmp(cfg->pages[i].id, class_name) == 0)
            return (long)i;
    const char *simple = last_component(class_name);
    for (size_t i = 0; i < cfg->n_pages; i++)
        if (simple_name_match(cfg->pages[i].id, cfg->pages[i].simple, class_name, simple))
            return (long)i;
    return -1;
}

PACER_API size_t pacer_config_splash_count(const pacer_config *cfg)
{
    return cfg ? cfg->n_splash : 0;
}

PACER_API const char *pacer_config_splash(const pacer_config *cfg, size_t i)
{
    return cfg && i < cfg->n_splash ? cfg->splash[i] : NULL;
}

PACER_API bool pacer_config_is_splash(const pacer_config *cfg, const char *class_name)
{
    if (!cfg || !class_name || !*class_name)
        return false;
    const char *simple = last_component(class_name);
    for (size_t i = 0; i < cfg->n_splash; i++) {
        const char *id = cfg->splash[i];
        if (strcmp(id, class_name) == 0 || simple_name_match(id, last_component(id), class_name, simple))
            return true;
    }
    return false;
}

PACER_API size_t pacer_config_in_app_count(const pacer_config *cfg)
{
    return cfg ? cfg->n_in_app : 0;
}

PACER_API const char *pacer_config_in_app(const pacer_config *cfg, size_t i)
{
    return cfg && i < cfg->n_in_app ? cfg->in_app[i] : NULL;
}

PACER_API uint32_t pacer_config_jank_ms(const pacer_config *cfg)
{
    return cfg ? cfg->jank_ms : PACER_DEFAULT_JANK_MS;
}

PACER_API uint32_t pacer_config_hang_ms(const pacer_config *cfg)
{
    return cfg ? cfg->hang_ms : PACER_DEFAULT_HANG_MS;
}

PACER_API uint32_t pacer_config_page_deadline_ms(const pacer_config *cfg)
{
    return cfg ? cfg->page_deadline_ms : PACER_DEFAULT_PAGE_DEADLINE_MS;
}

PACER_API uint32_t pacer_config_slow_request_ms(const pacer_config *cfg)
{
    return cfg ? cfg->slow_request_ms : PACER_DEFAULT_SLOW_REQUEST_MS;
}

PACER_API uint32_t pacer_config_large_image_bytes(const pacer_config *cfg)
{
    return cfg ? cfg->large_image_bytes : PACER_DEFAULT_LARGE_IMAGE_BYTES;
}

PACER_API uint32_t pacer_config_frames_interval_ms(const pacer_config *cfg)
{
    return cfg ? cfg->frames_interval_ms : PACER_DEFAULT_FRAMES_INTERVAL_MS;
}

PACER_API uint32_t pacer_config_leak_grace_ms(const pacer_config *cfg)
{
    return cfg ? cfg->leak_grace_ms : PACER_DEFAULT_LEAK_GRACE_MS;
}

PACER_API size_t pacer_config_known_leak_count(const pacer_config *cfg)
{
    return cfg ? cfg->n_known_leaks : 0;
}

static const config_known_leak *known_leak(const pacer_config *cfg, size_t i)
{
    return cfg && i < cfg->n_known_leaks ? &cfg->known_leaks[i] : NULL;
}

PACER_API const char *pacer_config_known_leak_id(const pacer_config *cfg, size_t i)
{
    const config_known_leak *k = known_leak(cfg, i);
    return k ? k->id : NULL;
}

PACER_API const char *pacer_config_known_leak_type(const pacer_config *cfg, size_t i)
{
    const config_known_leak *k = known_leak(cfg, i);
    return k ? k->type : NULL;
}

PACER_API const char *pacer_config_known_leak_function(const pacer_config *cfg, size_t i)
{
    const config_known_leak *k = known_leak(cfg, i);
    return k ? k->function : NULL;
}

PACER_API const char *pacer_config_known_leak_page(const pacer_config *cfg, size_t i)
{
    const config_known_leak *k = known_leak(cfg, i);
    return k ? k->page : NULL;
}

PACER_API uint32_t pacer_config_config_poll_ms(const pacer_config *cfg)
{
    return cfg ? cfg->config_poll_ms : PACER_DEFAULT_CONFIG_POLL_MS;
}

PACER_API uint32_t pacer_config_spool_max_kb(const pacer_config *cfg)
{
    return cfg ? cfg->spool_max_kb : PACER_DEFAULT_SPOOL_MAX_KB;
}
