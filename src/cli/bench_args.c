/* pacer bench: the option values that need parsing (bench_args.h). */
#include "bench_args.h"

#include <pacer/schema.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS 4096

void bench_argv_free(char **argv)
{
    if (!argv)
        return;
    for (char **a = argv; *a; a++)
        free(*a);
    free(argv);
}

static bool blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n';
}

int bench_split_command(const char *s, char ***ret_argv, char *err, size_t err_len)
{
    size_t len = strlen(s);
    char **argv = calloc(MAX_WORDS + 1, sizeof(*argv));
    char *word = malloc(len + 1); /* a word is never longer than the text */
    size_t n = 0;
    int rc = 0;
    if (!argv || !word) {
        rc = -ENOMEM;
        goto out;
    }
    const char *p = s;
    while (rc == 0) {
        while (blank(*p))
            p++;
        if (!*p)
            break;
        size_t w = 0;
        while (*p && !blank(*p)) {
            if (*p == '\'') {
                const char *close = strchr(p + 1, '\'');
                if (!close) {
                    snprintf(err, err_len, "unclosed ' at character %zu", (size_t)(p - s) + 1);
                    rc = -EINVAL;
                    break;
                }
                memcpy(word + w, p + 1, (size_t)(close - p - 1));
                w += (size_t)(close - p - 1);
                p = close + 1;
            } else if (*p == '"') {
                const char *open = p++;
                while (*p && *p != '"') {
                    if (*p == '\\' && p[1] && strchr("\"\\$`", p[1]))
                        p++;
                    word[w++] = *p++;
                }
                if (*p != '"') {
                    snprintf(err, err_len, "unclosed \" at character %zu", (size_t)(open - s) + 1);
                    rc = -EINVAL;
                    break;
                }
                p++;
            } else if (*p == '\\') {
                if (p[1])
                    p++;
                word[w++] = *p++;
            } else {
                word[w++] = *p++;
            }
        }
        if (rc < 0)
            break;
        if (n >= MAX_WORDS) {
            snprintf(err, err_len, "more than %d words", MAX_WORDS);
            rc = -EINVAL;
            break;
        }
        if (!(argv[n] = malloc(w + 1))) {
            rc = -ENOMEM;
            break;
        }
        memcpy(argv[n], word, w);
        argv[n][w] = 0;
        n++;
    }
    if (rc == 0 && n == 0) {
        snprintf(err, err_len, "no program in it");
        rc = -EINVAL;
    }
out:
    free(word);
    if (rc < 0) {
        bench_argv_free(argv);
        if (rc == -ENOMEM)
            snprintf(err, err_len, "out of memory");
        return rc;
    }
    *ret_argv = argv;
    return (int)n;
}

static bool page_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 256)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f || s[i] == '.' || s[i] == ':')
            return false;
    return true;
}

static long metric_field(pacer_record_id type, const char *name, size_t n)
{
    const pacer_shape *shape = pacer_record_type_get(type)->shape;
    long f = pacer_shape_find(shape, name, n);
    return f >= 0 && (shape->fields[f].flags & PACER_FIELD_METRIC) ? f : -1;
}

int bench_parse_until(const char *s, bench_until *ret, char *err, size_t err_len)
{
    *ret = (bench_until){.kind = BENCH_UNTIL_MAIN};
    if (strcmp(s, "main") == 0)
        return 0;
    if (strcmp(s, "exit") == 0) {
        ret->kind = BENCH_UNTIL_EXIT;
        return 0;
    }
    long f = metric_field(PACER_RECORD_STARTUP, s, strlen(s));
    if (f >= 0) {
        ret->kind = BENCH_UNTIL_METRIC;
        ret->startup = true;
        ret->field = (unsigned)f;
        return 0;
    }
    const char *dot = strchr(s, '.'), *colon = strchr(s, ':');
    size_t plen = dot ? (size_t)(dot - s) : colon ? (size_t)(colon - s) : strlen(s);
    if (!page_name_ok(s, plen)) {
        snprintf(err, err_len,
                 "expected main, exit, a start-up metric (cold_ms, full_display_ms, …), PAGE, PAGE:N or PAGE.FIELD "
                 "(PAGE: a page class name)");
        return -EINVAL;
    }
    if (dot) {
        f = metric_field(PACER_RECORD_PAGE, dot + 1, strlen(dot + 1));
        if (f < 0) {
            snprintf(err, err_len, "after PAGE. a page metric: initial_draw_ms, api_load_ms, final_draw_ms or "
                     "total_ms");
            return -EINVAL;
        }
        ret->kind = BENCH_UNTIL_METRIC;
        ret->field = (unsigned)f;
    } else {
        ret->kind = BENCH_UNTIL_PAGE;
        ret->count = 1;
        if (colon) {
            char *end;
            unsigned long c = strtoul(colon + 1, &end, 10);
            if (colon[1] < '0' || colon[1] > '9' || *end || c < 1 || c > 100000) {
                snprintf(err, err_len, "after PAGE: a count of records from 1 to 100000");
                return -EINVAL;
            }
            ret->count = (unsigned)c;
        }
    }
    if (!(ret->page = strndup(s, plen))) {
        snprintf(err, err_len, "out of memory");
        return -ENOMEM;
    }
    return 0;
}
