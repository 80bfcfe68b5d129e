/* libFuzzer target for pacerd's strict request targets (src/server/params.c).
 * Every input is parsed as a query string and as a path. Either it is
 * refused with a message that names what it is about, or every name and
 * value is valid UTF-8 without control characters, names are unique (but
 * for attr, which a query may repeat) and not empty, and the numbers read back are within the range asked. */
#include "http/params.h"

#include <pacer/base/utf8.h>

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void clean(const char *s, size_t n)
{
    if (strlen(s) != n || !utf8_valid(s, n))
        abort();
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    char err[256];
    params p;
    int r = params_parse(text, size, &p, err, sizeof err);
    if (r == 0) {
        if (p.n > PARAMS_MAX)
            abort();
        for (size_t i = 0; i < p.n; i++) {
            if (!p.p[i].name[0])
                abort();
            clean(p.p[i].name, strlen(p.p[i].name));
            clean(p.p[i].value, p.p[i].value_len);
            for (size_t j = 0; j < i; j++)
                if (strcmp(p.p[i].name, p.p[j].name) == 0 && strcmp(p.p[i].name, "attr") != 0)
                    abort();
            int64_t v;
            int k = params_int(&p, p.p[i].name, -1000, 9223372036, &v, err, sizeof err);
            if (k == 1 && (v < -1000 || v > 9223372036))
                abort();
            if (k < 0 && strncmp(err, p.p[i].name, strlen(p.p[i].name) < 64 ? strlen(p.p[i].name) : 64) != 0)
                abort();
        }
    } else if (r != -EINVAL || !err[0] || p.n || !utf8_valid(err, strlen(err))) {
        abort();
    }
    params_free(&p);
    char *path = NULL;
    r = params_path(text, size, &path, err, sizeof err);
    if (r == 0) {
        if (path[0] != '/')
            abort();
        clean(path, strlen(path));
        free(path);
    } else if (r != -EINVAL || strncmp(err, "path: ", 6) != 0) {
        abort();
    }
    return 0;
}
