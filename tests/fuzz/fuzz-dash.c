/* libFuzzer target for the parsers of stored client text and of the
 * Cookie header (src/server/api/dash_parse.c, the one reader of stored
 * attributes src/server/store/store_attrs.c, src/server/http/params.c).
 * The first byte picks one, the rest is its input: 0 a page's stored API
 * list, 1 a record's other attributes, 2 a jank record, 3 a Cookie
 * header, 4 an attribute list walked for the string values of a key (the
 * dashboard's reads: pacer.classes, and a metric's group attribute), each
 * string within the input's length, and no more of them for the first
 * attribute than for all, and matched against filters. Whatever the input, what they write must be valid JSON (read
 * back by base's reader), a jank record read must hold a duration ≥ 0 and
 * at most DASH_MAX_FRAMES frames, and a cookie value must fit and hold no
 * separator. */
#include "api/dash_parse.h"
#include "http/params.h"
#include "store/store_attrs.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void valid_json(jbuf *b)
{
    if (b->failed)
        return; /* out of memory: nothing to check */
    size_t n;
    char *text = jbuf_steal(b, &n);
    if (!text)
        return;
    char *copy = malloc(n + 1);
    if (!copy)
        abort();
    memcpy(copy, text, n);
    jread r;
    jread_init(&r, copy, n, NULL, 0);
    jvalue v;
    if (!jread_value(&r, &v) || !jread_end(&r, "value"))
        abort();
    free(copy);
    free(text);
}

typedef struct strings {
    size_t max, calls;
} strings;

static void on_string(void *ctx, const char *s, size_t n)
{
    strings *st = ctx;
    if (!s || n > st->max || s[n] != 0) /* unescaped: never longer than the text; NUL-terminated (\u0000 may be within) */
        abort();
    st->calls++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t mode = data[0] % 5;
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    jbuf b;
    jbuf_init(&b);
    switch (mode) {
    case 0:
    case 1:
        jbuf_open(&b, '{');
        if (mode == 0)
            dash_parse_apis(&b, text, n);
        else
            dash_parse_extra(&b, text, n);
        jbuf_close(&b, '}');
        valid_json(&b);
        break;
    case 2: {
        char *buf = malloc(n + 1);
        dash_jank *j = malloc(sizeof *j);
        if (!buf || !j)
            abort();
        memcpy(buf, text, n);
        if (dash_parse_jank(buf, n, j) == 0) {
            if (!(j->duration_ms >= 0) || j->n_frames > DASH_MAX_FRAMES)
                abort();
            dash_parse_stack(&b, j->frames, j->n_frames);
            valid_json(&b);
        }
        free(j);
        free(buf);
        break;
    }
    case 3: {
        char *header = malloc(n + 1);
        if (!header)
            abort();
        memcpy(header, text, n);
        header[n] = 0;
        char out[65];
        if (params_cookie(header, "pacer_session", out, sizeof out) && (strlen(out) >= sizeof out || strchr(out, ';')))
            abort();
        free(header);
        break;
    }
    case 4: {
        static const char *const keys[] = {"pacer.classes", "route", ""};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            strings all = {n, 0}, one = {n, 0};
            store_attrs_strings(text, n, keys[k], false, on_string, &all);
            store_attrs_strings(text, n, keys[k], true, on_string, &one);
            if (one.calls > all.calls)
                abort();
        }
        static const store_attr_filter filters[] = {{"route", "/x"}, {"n", "3"}, {"b", "true"}};
        store_attrs_match(text, n, filters, 3);
        break;
    }
    }
    jbuf_free(&b);
    return 0;
}
