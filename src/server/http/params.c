/* Strict request targets (params.h). */
#include "params.h"

#include <pacer/base/utf8.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hex(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes n bytes of src into out (room for n + 1) and NUL-terminates it.
 * Returns NULL, or why the text is not acceptable. */
static const char *decode(const char *src, size_t n, bool plus_is_space, char *out, size_t *ret_len)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        if (c == '%') {
            if (n - i < 3 || hex((unsigned char)src[i + 1]) < 0 || hex((unsigned char)src[i + 2]) < 0)
                return "'%' must be followed by two hex digits";
            c = (unsigned char)(hex((unsigned char)src[i + 1]) << 4 | hex((unsigned char)src[i + 2]));
            i += 2;
        } else if (c == '+' && plus_is_space) {
            c = ' ';
        }
        if (c == 0)
            return "contains a NUL byte";
        if (c < 0x20 || c == 0x7f)
            return "contains a control character";
        out[o++] = (char)c;
    }
    out[o] = 0;
    if (!utf8_valid(out, o))
        return "not valid UTF-8";
    *ret_len = o;
    return NULL;
}

/* A decoded name for a message: at most 100 bytes, cut on a character. */
#define SHOWN_MAX 100
static const char *shown_name(const char *name, char out[SHOWN_MAX + 1])
{
    utf8_copy(out, SHOWN_MAX + 1, name, strlen(name));
    return out;
}

void params_free(params *p)
{
    if (!p)
        return;
    free(p->buf);
    p->buf = NULL;
    p->n = 0;
}

/* A name for messages: the decoded name when it is printable, else its
 * raw text, shortened. */
static void raw_name(char *out, size_t size, const char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
    }
    out[o < size ? o : size - 1] = 0;
}

/* Names a query may repeat: the read APIs' attribute filters
 * (attr=K=V&attr=K2=V2, docs/server.md). Every other name is given once. */
static bool repeatable(const char *name)
{
    return strcmp(name, "attr") == 0;
}

int params_parse(const char *query, size_t len, params *ret, char *err, size_t err_size)
{
    memset(ret, 0, sizeof *ret);
    if (len == 0)
        return 0;
    /* decoded text is never longer than its source; each part gets a NUL */
    ret->buf = malloc(len + 2 * PARAMS_MAX + 2);
    if (!ret->buf) {
        snprintf(err, err_size, "out of memory");
        return -ENOMEM;
    }
    char *out = ret->buf;
    const char *p = query, *end = query + len;
    while (p <= end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *seg_end = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(seg_end - p));
        const char *name_end = eq ? eq : seg_end;
        char shown[64];
        raw_name(shown, sizeof shown, p, (size_t)(name_end - p));
        if (name_end == p) {
            snprintf(err, err_size, "query: a parameter without a name (at byte %zu)", (size_t)(p - query));
            goto fail;
        }
        if (ret->n == PARAMS_MAX) {
            snprintf(err, err_size, "query: more than %d parameters", PARAMS_MAX);
            goto fail;
        }
        size_t nl, vl = 0;
        const char *why = decode(p, (size_t)(name_end - p), true, out, &nl);
        if (why) {
            snprintf(err, err_size, "%s: the parameter's name %s", shown, why);
            goto fail;
        }
        param *prm = &ret->p[ret->n];
        prm->name = out;
        out += nl + 1;
        const char *v = eq ? eq + 1 : seg_end;
        why = decode(v, (size_t)(seg_end - v), true, out, &vl);
        if (why) {
            char nm[SHOWN_MAX + 1];
            snprintf(err, err_size, "%s: %s", shown_name(prm->name, nm), why);
            goto fail;
        }
        prm->value = out;
        prm->value_len = vl;
        out += vl + 1;
        for (size_t i = 0; i < ret->n && !repeatable(prm->name); i++)
            if (strcmp(ret->p[i].name, prm->name) == 0) {
                char nm[SHOWN_MAX + 1];
                snprintf(err, err_size, "%s: given more than once", shown_name(prm->name, nm));
                goto fail;
            }
        ret->n++;
        if (!amp)
            break;
        p = amp + 1;
    }
    return 0;
fail:
    params_free(ret);
    return -EINVAL;
}

int params_path(const char *raw, size_t len, char **ret_path, char *err, size_t err_size)
{
    if (len == 0 || raw[0] != '/') {
        snprintf(err, err_size, "path: expected a path starting with '/'");
        return -EINVAL;
    }
    char *out = malloc(len + 1);
    if (!out) {
        snprintf(err, err_size, "out of memory");
        return -ENOMEM;
    }
    size_t n;
    const char *why = decode(raw, len, false, out, &n);
    if (why) {
        snprintf(err, err_size, "path: %s", why);
        free(out);
        return -EINVAL;
    }
    *ret_path = out;
    return 0;
}

const param *params_find(const params *p, const char *name)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->p[i].name, name) == 0)
            return &p->p[i];
    return NULL;
}

int params_only(const params *p, const char *const *names, char *err, size_t err_size)
{
    for (size_t i = 0; i < p->n; i++) {
        size_t k = 0;
        while (names[k] && strcmp(names[k], p->p[i].name) != 0)
            k++;
        if (names[k])
            continue;
        char list[256];
        size_t o = 0;
        list[0] = 0;
        for (k = 0; names[k] && o < sizeof list; k++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", k ? ", " : "", names[k]);
        char nm[SHOWN_MAX + 1];
        snprintf(err, err_size, "%s: unknown parameter (expected %s)", shown_name(p->p[i].name, nm),
                 k ? list : "none");
        return -EINVAL;
    }
    return 0;
}

int params_int(const params *p, const char *name, int64_t min, int64_t max, int64_t *ret, char *err,
               size_t err_size)
{
    const param *prm = params_find(p, name);
    if (!prm)
        return 0;
    const char *s = prm->value;
    bool neg = *s == '-';
    if (neg)
        s++;
    /* the magnitude of INT64_MIN is INT64_MAX + 1 */
    uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    bool ok = *s != 0;
    for (; *s && ok; s++) {
        if (*s < '0' || *s > '9') {
            ok = false;
            break;
        }
        unsigned d = (unsigned)(*s - '0');
        if (v > (limit - d) / 10) {
            ok = false;
            break;
        }
        v = v * 10 + d;
    }
    int64_t x = 0;
    if (ok)
        x = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    if (!ok || x < min || x > max) {
        snprintf(err, err_size, "%s: expected an integer from %lld to %lld", name, (long long)min, (long long)max);
        return -EINVAL;
    }
    *ret = x;
    return 1;
}

int params_str(const params *p, const char *name, size_t max_len, const char **ret, char *err, size_t err_size)
{
    const param *prm = params_find(p, name);
    if (!prm)
        return 0;
    if (prm->value_len == 0 || prm->value_len > max_len) {
        snprintf(err, err_size, "%s: expected 1 to %zu bytes", name, max_len);
        return -EINVAL;
    }
    *ret = prm->value;
    return 1;
}

bool params_cookie(const char *header, const char *name, char *out, size_t out_size)
{
    size_t nl = strlen(name);
    for (const char *p = header; p && *p;) {
        while (*p == ' ' || *p == ';')
            p++;
        const char *end = p + strcspn(p, ";");
        if ((size_t)(end - p) > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
            size_t n = (size_t)(end - p) - nl - 1;
            while (n && p[nl + 1 + n - 1] == ' ')
                n--;
            if (n >= out_size)
                return false;
            memcpy(out, p + nl + 1, n);
            out[n] = 0;
            return true;
        }
        p = end;
    }
    return false;
}

bool params_etag_listed(const char *list, const char *etag)
{
    size_t n = strlen(etag);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == '*')
            return true;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        if (strncmp(p, etag, n) == 0 && (p[n] == 0 || p[n] == ',' || p[n] == ' '))
            return true;
        p += strcspn(p, ",");
    }
    return false;
}
