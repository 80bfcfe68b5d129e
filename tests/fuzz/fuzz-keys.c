/* libFuzzer target for pacerd's keys file parser (src/server/auth.c): any
 * text is accepted or refused with "FILE:LINE: reason", and a refusal never
 * repeats the line's key (a key must not reach a log). */
#include "app/auth.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The second field (the key) of line `lineno` of text, into out. */
static void key_of_line(const char *text, size_t size, unsigned long lineno, char *out, size_t out_size)
{
    out[0] = 0;
    const char *p = text, *end = text + size;
    for (unsigned long l = 1; l < lineno && p < end; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol)
        eol = end;
    int field = 0;
    while (p < eol) {
        while (p < eol && (*p == ' ' || *p == '\t' || *p == '\r'))
            p++;
        const char *f = p;
        while (p < eol && *p != ' ' && *p != '\t' && *p != '\r')
            p++;
        if (p > f && ++field == 2) {
            size_t n = (size_t)(p - f) < out_size - 1 ? (size_t)(p - f) : out_size - 1;
            memcpy(out, f, n);
            out[n] = 0;
            return;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512] = "";
    const char *text = (const char *)data;
    int r = auth_check_keys(text, size, "keys", "admin-token", err, sizeof err);
    if (r == 0)
        return 0;
    if (r != -EINVAL || strncmp(err, "keys:", 5) != 0)
        abort();
    /* the line's key is never repeated in the message (it must not reach a
     * log); short ones may match by chance, and "already given to app X"
     * names another line's app, which may be any text */
    char key[600];
    key_of_line(text, size, strtoul(err + 5, NULL, 10), key, sizeof key);
    if (strlen(key) >= 12 && !strstr(err, "already given to app") && strstr(err + 5, key))
        abort();
    return 0;
}
