/* An issue's gathered evidence (issue_details.h). */
#include "issue_details.h"

#include <pacer/base/utf8.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const level_names[5] = {"best", "normal", "middle", "high", "frozen"};

void issue_details_free(iss_details *d)
{
    free(d->example);
    memset(d, 0, sizeof *d);
}

void issue_details_count(iss_counter *list, size_t *n_list, const char *name, int64_t n)
{
    if (!name || !*name || n == 0)
        return;
    /* a long name is cut on a character boundary, so it writes and reads back as itself */
    char cut[ISS_MAX_NAME];
    utf8_copy(cut, sizeof cut, name, strlen(name));
    name = cut;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < *n_list; i++)
            if (strcmp(list[i].name, name) == 0) {
                /* a count back at zero is no count: dropped, as one of zero is never added */
                if ((list[i].n += n) == 0)
                    memmove(&list[i], &list[i + 1], (--*n_list - i) * sizeof *list);
                return;
            }
        if (*n_list < ISS_MAX_COUNTERS)
            break;
        name = "(other)"; /* past the limit: one entry for the rest */
    }
    if (*n_list > ISS_MAX_COUNTERS)
        return;
    snprintf(list[*n_list].name, ISS_MAX_NAME, "%s", name);
    list[(*n_list)++].n = n;
}

void issue_details_example(iss_details *d, const char *json, double value)
{
    if (!json || (d->example && !(value > d->example_value)))
        return;
    char *copy = strdup(json);
    if (!copy)
        return;
    free(d->example);
    d->example = copy;
    d->example_value = value;
}

void issue_details_leaf_key(char *buf, size_t size, const char *frame, size_t frame_len, const char *leaf,
                            size_t leaf_len)
{
    char f[ISS_MAX_NAME], l[ISS_MAX_NAME];
    utf8_copy(f, sizeof f, frame, frame_len);
    utf8_copy(l, sizeof l, leaf, leaf_len);
    char joined[2 * ISS_MAX_NAME + 8];
    int n = snprintf(joined, sizeof joined, "%s → %s", f, l);
    utf8_copy(buf, size, joined, n < 0 ? 0 : (size_t)n);
}

void issue_details_profile(iss_details *d, const char *folded, const profile_frames_hint *hints, size_t n_hints)
{
    for (const char *line = folded; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        profile_frames_line pl;
        if (profile_frames_read(line, len, hints, n_hints, &pl)) {
            char name[ISS_MAX_NAME];
            utf8_copy(name, sizeof name, pl.frame, pl.frame_len);
            issue_details_count(d->profile_top, &d->n_profile_top, name, pl.count);
            if (pl.leaf != pl.frame) {
                issue_details_leaf_key(name, sizeof name, pl.frame, pl.frame_len, pl.leaf, pl.leaf_len);
                issue_details_count(d->profile_leaves, &d->n_profile_leaves, name, pl.count);
            }
        }
        line = end ? end + 1 : line + len;
    }
}

void issue_details_merge(iss_details *dst, const iss_details *src)
{
    for (size_t i = 0; i < src->n_pages; i++)
        issue_details_count(dst->pages, &dst->n_pages, src->pages[i].name, src->pages[i].n);
    for (size_t i = 0; i < src->n_statuses; i++)
        issue_details_count(dst->statuses, &dst->n_statuses, src->statuses[i].name, src->statuses[i].n);
    for (int k = 0; k < 5; k++)
        dst->levels[k] += src->levels[k];
    dst->bytes += src->bytes;
    for (size_t i = 0; i < src->n_profile_top; i++)
        issue_details_count(dst->profile_top, &dst->n_profile_top, src->profile_top[i].name, src->profile_top[i].n);
    for (size_t i = 0; i < src->n_profile_leaves; i++)
        issue_details_count(dst->profile_leaves, &dst->n_profile_leaves, src->profile_leaves[i].name,
                            src->profile_leaves[i].n);
    issue_details_example(dst, src->example, src->example_value);
}

static void counters_json(jbuf *b, const char *key, const iss_counter *list, size_t n)
{
    if (!n)
        return;
    jbuf_key(b, key);
    jbuf_open(b, '{');
    for (size_t i = 0; i < n; i++)
        jbuf_kv_i64(b, list[i].name, list[i].n);
    jbuf_close(b, '}');
}

void issue_details_json(const iss_details *d, jbuf *b)
{
    jbuf_open(b, '{');
    issue_details_members(d, b);
    jbuf_close(b, '}');
}

void issue_details_members(const iss_details *d, jbuf *b)
{
    counters_json(b, "pages", d->pages, d->n_pages);
    counters_json(b, "statuses", d->statuses, d->n_statuses);
    bool levels = false;
    for (int k = 0; k < 5; k++)
        levels |= d->levels[k] != 0;
    if (levels) {
        jbuf_key(b, "levels");
        jbuf_open(b, '{');
        for (int k = 0; k < 5; k++)
            jbuf_kv_i64(b, level_names[k], d->levels[k]);
        jbuf_close(b, '}');
    }
    if (d->bytes > 0)
        jbuf_kv_double(b, "bytes", d->bytes);
    counters_json(b, "profile_top", d->profile_top, d->n_profile_top);
    counters_json(b, "profile_leaves", d->profile_leaves, d->n_profile_leaves);
    if (d->example) {
        jbuf_key(b, "example");
        jbuf_raw(b, d->example, strlen(d->example));
        b->need_comma = true; /* a value was written */
        jbuf_kv_double(b, "example_value", d->example_value);
    }
}

static bool read_counters(jread *r, iss_counter *list, size_t *n)
{
    if (!jread_enter_object(r))
        return false;
    const char *k;
    size_t kl;
    int m;
    while ((m = jread_member(r, &k, &kl)) > 0) {
        char name[ISS_MAX_NAME];
        utf8_copy(name, sizeof name, k, kl);
        jvalue v;
        int64_t x;
        if (!jread_value(r, &v) || !jvalue_int64(&v, &x))
            return false;
        issue_details_count(list, n, name, x);
    }
    return m == 0;
}

int issue_details_parse(const char *text, iss_details *d)
{
    issue_details_free(d);
    if (!text || !*text)
        return 0;
    size_t len = strlen(text);
    char *buf = malloc(len + 1);
    if (!buf)
        return -ENOMEM;
    memcpy(buf, text, len + 1);
    jread r;
    jread_init(&r, buf, len, text, 0);
    bool ok = jread_enter_object(&r);
    const char *k;
    size_t kl;
    int m = -1;
    while (ok && (m = jread_member(&r, &k, &kl)) > 0) {
        jvalue v;
        if (kl == 5 && memcmp(k, "pages", 5) == 0) {
            ok = read_counters(&r, d->pages, &d->n_pages);
        } else if (kl == 8 && memcmp(k, "statuses", 8) == 0) {
            ok = read_counters(&r, d->statuses, &d->n_statuses);
        } else if (kl == 11 && memcmp(k, "profile_top", 11) == 0) {
            ok = read_counters(&r, d->profile_top, &d->n_profile_top);
        } else if (kl == 14 && memcmp(k, "profile_leaves", 14) == 0) {
            ok = read_counters(&r, d->profile_leaves, &d->n_profile_leaves);
        } else if (kl == 6 && memcmp(k, "levels", 6) == 0) {
            ok = jread_enter_object(&r);
            int lm;
            const char *lk;
            size_t lkl;
            while (ok && (lm = jread_member(&r, &lk, &lkl)) > 0) {
                int64_t x = 0;
                ok = jread_value(&r, &v) && jvalue_int64(&v, &x);
                for (int i = 0; ok && i < 5; i++)
                    if (strlen(level_names[i]) == lkl && memcmp(level_names[i], lk, lkl) == 0)
                        d->levels[i] = x;
            }
            ok = ok && lm == 0;
        } else if (kl == 5 && memcmp(k, "bytes", 5) == 0) {
            ok = jread_value(&r, &v) && jvalue_double(&v, &d->bytes);
        } else if (kl == 7 && memcmp(k, "example", 7) == 0) {
            ok = jread_value(&r, &v) && v.type == JT_OBJECT && v.s;
            free(d->example); /* a member given twice: the last one */
            d->example = NULL;
            if (ok && !(d->example = strndup(v.s, v.len))) {
                free(buf);
                issue_details_free(d);
                return -ENOMEM;
            }
        } else if (kl == 13 && memcmp(k, "example_value", 13) == 0) {
            ok = jread_value(&r, &v) && jvalue_double(&v, &d->example_value);
        } else {
            ok = jread_value(&r, &v);
        }
    }
    ok = ok && m == 0 && jread_end(&r, "object");
    free(buf);
    if (!ok) {
        issue_details_free(d);
        return -EINVAL;
    }
    return 0;
}
