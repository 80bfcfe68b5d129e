/* The application layer's settings (analysis_config.h).
 *
 * One table names every setting: its name in the file, where it lives
 * (the server's part of ana_config, or ana_thresholds of the apps), its
 * default and its range. The parser, the defaults and docs/server.md
 * ("Settings") follow the table.
 */
#include "analysis_config.h"

#include <pacer/base/utf8.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE (1u << 20)
#define MAX_NAME 256

typedef struct setting {
    const char *name;
    bool server;   /* in ana_config (given before any [app] section); else ana_thresholds */
    size_t offset; /* of the double */
    double def, min, max;
    bool integer;
} setting;

#define S(name, field, def, min, max, integer) {name, true, offsetof(ana_config, field), def, min, max, integer}
#define T(name, field, def, min, max, integer) {name, false, offsetof(ana_thresholds, field), def, min, max, integer}

static const setting settings[] = {
    S("interval-ms", interval_ms, 2000, 10, 3600000, true),
    S("max-duration-ms", max_duration_ms, 86400000, 1, 1e12, false),
    S("max-clock-skew-s", max_clock_skew_s, 3600, 0, 1e9, true),
    S("dedupe-records", dedupe_records, 1000000, 0, 100000000, true),
    S("webhook-attempts", webhook_attempts, 15, 1, 1000, true),
    S("cycle-records", cycle_records, 20000, 100, 1000000, true),
    T("slow-page-total-ms", slow_page_total_ms, 2500, 1, 86400000, false),
    T("slow-page-initial-draw-ms", slow_page_initial_ms, 1000, 1, 86400000, false),
    T("slow-cold-ms", slow_cold_ms, 5000, 1, 86400000, false),
    T("slow-warm-ms", slow_warm_ms, 2000, 1, 86400000, false),
    T("slow-request-ms", slow_request_ms, 1000, 1, 86400000, false),
    T("large-image-bytes", large_image_bytes, 102400, 1, 1e15, true),
    T("large-payload-bytes", large_payload_bytes, 307200, 1, 1e15, true),
    T("net-error-rate", net_error_rate, 0.05, 0, 1, false),
    T("net-error-min", net_error_min, 5, 1, 1e9, true),
    T("n-plus-one-count", n_plus_one_count, 5, 2, 1e6, true),
    T("serial-count", serial_count, 3, 2, 1000, true),
    T("serial-min-ms", serial_min_ms, 100, 0, 86400000, false),
    T("frozen-frames-min", frozen_frames_min, 1, 1, 1e9, true),
    T("percentile-min-samples", percentile_min_samples, 10, 1, 1e6, true),
    T("critical-ms-per-session", critical_ms, 500, 0, 1e12, false),
    T("major-ms-per-session", major_ms, 50, 0, 1e12, false),
    T("major-share", major_share, 0.25, 0, 1, false),
    T("regression-min-samples", regression_min_samples, 30, 2, 100000, true),
    T("regression-min-percent", regression_min_percent, 10, 0, 10000, false),
    T("regression-min-ms", regression_min_ms, 16, 0, 86400000, false),
    T("regression-alpha", regression_alpha, 0.01, 1e-9, 0.5, false),
    T("resolve-versions", resolve_versions, 2, 1, 1000, true),
    T("resolve-sessions", resolve_sessions, 10, 0, 1e9, true),
    T("resolve-days", resolve_days, 14, 0.001, 3650, false),
};

#define N_SETTINGS (sizeof settings / sizeof settings[0])

static double *slot(void *base, const setting *s)
{
    return (double *)((char *)base + s->offset);
}

static void thresholds_defaults(ana_thresholds *t)
{
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < N_SETTINGS; i++)
        if (!settings[i].server)
            *slot(t, &settings[i]) = settings[i].def;
}

void analysis_config_defaults(ana_config *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < N_SETTINGS; i++)
        if (settings[i].server)
            *slot(c, &settings[i]) = settings[i].def;
    thresholds_defaults(&c->all);
}

static void thresholds_free(ana_thresholds *t)
{
    for (size_t i = 0; i < t->n_versions; i++)
        free(t->versions[i]);
    free(t->versions);
    t->versions = NULL;
    t->n_versions = 0;
}

void analysis_config_free(ana_config *c)
{
    thresholds_free(&c->all);
    for (size_t i = 0; i < c->n_apps; i++) {
        free(c->apps[i].app);
        thresholds_free(&c->apps[i].t);
    }
    free(c->apps);
    analysis_config_defaults(c);
}

const ana_thresholds *analysis_config_app(const ana_config *c, const char *app)
{
    for (size_t i = 0; app && i < c->n_apps; i++)
        if (strcmp(c->apps[i].app, app) == 0)
            return &c->apps[i].t;
    return &c->all;
}

int64_t analysis_config_version_rank(const ana_thresholds *t, const char *version, int64_t seq)
{
    for (size_t i = 0; i < t->n_versions; i++)
        if (strcmp(t->versions[i], version) == 0)
            return (int64_t)i;
    return (int64_t)t->n_versions + seq;
}

typedef struct parser {
    const char *name;
    size_t line;
    char *err;
    size_t err_size;
} parser;

static int fail(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(parser *p, const char *fmt, ...)
{
    int n = snprintf(p->err, p->err_size, "%s:%zu: ", p->name, p->line);
    if (n >= 0 && (size_t)n < p->err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err + n, p->err_size - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* s[0..n) without the spaces around it. */
static void trim(const char **s, size_t *n)
{
    while (*n && is_space(**s))
        (*s)++, (*n)--;
    while (*n && is_space((*s)[*n - 1]))
        (*n)--;
}

/* A decimal number, all of the text: digits, an optional '.' and fraction;
 * no sign, exponent or other text. */
static bool number(const char *s, size_t n, double *ret)
{
    char buf[64];
    size_t dots = 0, digits = 0;
    if (!n || n >= sizeof buf)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '.')
            dots++;
        else if (s[i] >= '0' && s[i] <= '9')
            digits++;
        else
            return false;
    }
    if (dots > 1 || !digits || s[0] == '.' || s[n - 1] == '.')
        return false;
    memcpy(buf, s, n);
    buf[n] = 0;
    *ret = strtod(buf, NULL);
    return isfinite(*ret);
}

/* A name (an app, a version): 1 to MAX_NAME bytes of UTF-8 without spaces
 * or control characters. */
static bool name_ok(const char *s, size_t n)
{
    if (!n || n > MAX_NAME || !utf8_valid(s, n))
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
            return false;
    return true;
}

static int versions(parser *p, ana_thresholds *t, const char *v, size_t n)
{
    thresholds_free(t);
    size_t i = 0;
    while (i < n) {
        while (i < n && is_space(v[i]))
            i++;
        size_t start = i;
        while (i < n && !is_space(v[i]))
            i++;
        if (i == start)
            break;
        if (!name_ok(v + start, i - start))
            return fail(p, "version-order: a version is 1 to %d bytes of UTF-8 without control characters", MAX_NAME);
        for (size_t k = 0; k < t->n_versions; k++)
            if (strlen(t->versions[k]) == i - start && memcmp(t->versions[k], v + start, i - start) == 0)
                return fail(p, "version-order: %.*s is given twice", (int)(i - start), v + start);
        if (t->n_versions == ANA_MAX_VERSIONS)
            return fail(p, "version-order: at most %d versions", ANA_MAX_VERSIONS);
        char **grown = realloc(t->versions, (t->n_versions + 1) * sizeof *grown);
        if (!grown)
            return -ENOMEM;
        t->versions = grown;
        if (!(t->versions[t->n_versions] = strndup(v + start, i - start)))
            return -ENOMEM;
        t->n_versions++;
    }
    if (!t->n_versions)
        return fail(p, "version-order: expected the versions, oldest first, separated by spaces");
    return 0;
}

static int copy_thresholds(ana_thresholds *dst, const ana_thresholds *src)
{
    *dst = *src;
    dst->versions = NULL;
    dst->n_versions = 0;
    if (!src->n_versions)
        return 0;
    if (!(dst->versions = calloc(src->n_versions, sizeof *dst->versions)))
        return -ENOMEM;
    for (size_t i = 0; i < src->n_versions; i++) {
        if (!(dst->versions[i] = strdup(src->versions[i])))
            return -ENOMEM;
        dst->n_versions++;
    }
    return 0;
}

static int line_of(parser *p, ana_config *c, ana_thresholds **cur, const char *s, size_t n)
{
    trim(&s, &n);
    if (!n || s[0] == '#')
        return 0;
    if (s[0] == '[') {
        if (s[n - 1] != ']' || n < 6 || memcmp(s, "[app", 4) != 0 || !is_space(s[4]))
            return fail(p, "expected a section [app NAME]");
        const char *app = s + 5;
        size_t an = n - 6;
        trim(&app, &an);
        if (!name_ok(app, an))
            return fail(p, "[app NAME]: NAME is 1 to %d bytes of UTF-8 without spaces or control characters",
                        MAX_NAME);
        for (size_t i = 0; i < c->n_apps; i++)
            if (strlen(c->apps[i].app) == an && memcmp(c->apps[i].app, app, an) == 0)
                return fail(p, "[app %.*s] is given twice", (int)an, app);
        if (c->n_apps == ANA_MAX_APPS)
            return fail(p, "at most %d [app] sections", ANA_MAX_APPS);
        ana_app *grown = realloc(c->apps, (c->n_apps + 1) * sizeof *grown);
        if (!grown)
            return -ENOMEM;
        c->apps = grown;
        ana_app *a = &c->apps[c->n_apps];
        memset(a, 0, sizeof *a);
        /* an app's section starts from the server-wide settings given so far */
        if (!(a->app = strndup(app, an)) || copy_thresholds(&a->t, &c->all) < 0) {
            free(a->app);
            thresholds_free(&a->t);
            return -ENOMEM;
        }
        c->n_apps++;
        *cur = &a->t;
        return 0;
    }
    const char *eq = memchr(s, '=', n);
    if (!eq)
        return fail(p, "expected NAME = VALUE, a [app NAME] section or a # comment");
    const char *key = s, *val = eq + 1;
    size_t kn = (size_t)(eq - s), vn = n - kn - 1;
    trim(&key, &kn);
    trim(&val, &vn);
    if (kn == 13 && memcmp(key, "version-order", 13) == 0) {
        if (*cur == &c->all)
            return fail(p, "version-order belongs in an [app NAME] section");
        return versions(p, *cur, val, vn);
    }
    const setting *st = NULL;
    for (size_t i = 0; i < N_SETTINGS; i++)
        if (strlen(settings[i].name) == kn && memcmp(settings[i].name, key, kn) == 0)
            st = &settings[i];
    if (!st)
        return fail(p, "unknown setting \"%.*s\" (docs/server.md lists them)", (int)(kn > 64 ? 64 : kn), key);
    if (st->server && *cur != &c->all)
        return fail(p, "%s is the server's: set it before any [app] section", st->name);
    double v;
    if (!number(val, vn, &v) || v < st->min || v > st->max || (st->integer && v != floor(v)))
        return fail(p, "%s: expected %s from %.15g to %.15g", st->name, st->integer ? "an integer" : "a number", st->min,
                    st->max);
    *slot(st->server ? (void *)c : (void *)*cur, st) = v;
    return 0;
}

int analysis_config_parse(const char *text, size_t len, const char *name, ana_config *c, char *err, size_t err_size)
{
    analysis_config_defaults(c);
    parser p = {name, 0, err, err_size};
    ana_thresholds *cur = &c->all;
    size_t i = 0;
    int r = 0;
    if (!utf8_valid(text, len) || memchr(text, 0, len)) {
        p.line = 1;
        r = fail(&p, "not UTF-8 text");
    }
    while (r == 0 && i < len) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
        p.line++;
        size_t k = n;
        if (k && text[i + k - 1] == '\r')
            k--;
        r = line_of(&p, c, &cur, text + i, k);
        i += n + 1;
    }
    if (r < 0) {
        if (r == -ENOMEM)
            snprintf(err, err_size, "%s: out of memory", name);
        analysis_config_free(c);
    }
    return r;
}

int analysis_config_load(const char *path, ana_config *c, char *err, size_t err_size)
{
    analysis_config_defaults(c);
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -errno;
    }
    char *buf = malloc(MAX_FILE + 1);
    size_t n = buf ? fread(buf, 1, MAX_FILE + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad || n > MAX_FILE) {
        snprintf(err, err_size, "%s: %s", path, !buf ? "out of memory" : bad ? "read error" : "larger than 1 MiB");
        free(buf);
        return !buf ? -ENOMEM : -EINVAL;
    }
    int r = analysis_config_parse(buf, n, path, c, err, err_size);
    free(buf);
    return r;
}
