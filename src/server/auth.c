/* Admin token and ingest keys (auth.h). */
#include "auth.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_TOKEN 512

typedef struct key {
    char *app, *token;
} key;

struct auth {
    char *admin;
    key *keys;
    size_t n_keys;
};

/* Constant time in the length of the longer argument. */
static bool token_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t n = la > lb ? la : lb;
    unsigned char diff = la != lb;
    for (size_t i = 0; i < n; i++) {
        unsigned char ca = i < la ? (unsigned char)a[i] : 0;
        unsigned char cb = i < lb ? (unsigned char)b[i] : 0;
        diff |= ca ^ cb;
    }
    return diff == 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = 0;
    return s;
}

static bool token_chars_ok(const char *t)
{
    for (; *t; t++)
        if ((unsigned char)*t <= ' ' || (unsigned char)*t >= 0x7f)
            return false;
    return true;
}

void auth_free(auth *a)
{
    if (!a)
        return;
    if (a->admin) {
        memset(a->admin, 0, strlen(a->admin));
        free(a->admin);
    }
    for (size_t i = 0; i < a->n_keys; i++) {
        free(a->keys[i].app);
        if (a->keys[i].token)
            memset(a->keys[i].token, 0, strlen(a->keys[i].token));
        free(a->keys[i].token);
    }
    free(a->keys);
    free(a);
}

auth *auth_load(const char *admin_file, const char *keys_file, char *err, size_t err_size)
{
    auth *a = calloc(1, sizeof *a);
    char line[1024];
    FILE *f = NULL;
    if (!a) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    f = fopen(admin_file, "re");
    if (!f) {
        snprintf(err, err_size, "%s: %s", admin_file, strerror(errno));
        goto fail;
    }
    char *t = fgets(line, sizeof line, f) ? trim(line) : NULL;
    fclose(f);
    f = NULL;
    if (!t || !*t || strlen(t) > MAX_TOKEN || !token_chars_ok(t)) {
        snprintf(err, err_size, "%s:1: expected the admin token (1-%d printable characters, no spaces)", admin_file,
                 MAX_TOKEN);
        goto fail;
    }
    if (!(a->admin = strdup(t)))
        goto oom;

    f = fopen(keys_file, "re");
    if (!f) {
        snprintf(err, err_size, "%s: %s", keys_file, strerror(errno));
        goto fail;
    }
    for (unsigned lineno = 1; fgets(line, sizeof line, f); lineno++) {
        char *s = trim(line);
        if (!*s || *s == '#')
            continue;
        size_t app_len = strcspn(s, " \t");
        char *k = s + app_len;
        if (*k)
            *k++ = 0;
        k = trim(k);
        if (!*k || strlen(k) > MAX_TOKEN || !token_chars_ok(k) || app_len > 256) {
            snprintf(err, err_size, "%s:%u: expected \"APP KEY\" (the key: 1-%d printable characters, no spaces)",
                     keys_file, lineno, MAX_TOKEN);
            goto fail;
        }
        if (token_equal(k, a->admin)) {
            snprintf(err, err_size, "%s:%u: an app key must differ from the admin token", keys_file, lineno);
            goto fail;
        }
        for (size_t i = 0; i < a->n_keys; i++)
            if (token_equal(a->keys[i].token, k)) {
                snprintf(err, err_size, "%s:%u: this key is already given to app %s", keys_file, lineno,
                         a->keys[i].app);
                goto fail;
            }
        key *nk = realloc(a->keys, (a->n_keys + 1) * sizeof *nk);
        if (!nk)
            goto oom;
        a->keys = nk;
        nk[a->n_keys].app = strdup(s);
        nk[a->n_keys].token = strdup(k);
        a->n_keys++;
        if (!nk[a->n_keys - 1].app || !nk[a->n_keys - 1].token)
            goto oom;
    }
    fclose(f);
    memset(line, 0, sizeof line);
    return a;
oom:
    snprintf(err, err_size, "out of memory");
fail:
    if (f)
        fclose(f);
    memset(line, 0, sizeof line);
    auth_free(a);
    return NULL;
}

const char *auth_bearer(const char *h)
{
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return NULL;
    h += 7;
    while (*h == ' ')
        h++;
    return *h ? h : NULL;
}

bool auth_is_admin(const auth *a, const char *token)
{
    return token && token_equal(token, a->admin);
}

const char *auth_app_of(const auth *a, const char *token)
{
    const char *app = NULL;
    if (!token)
        return NULL;
    for (size_t i = 0; i < a->n_keys; i++) /* no early exit: time does not tell which key matched */
        if (token_equal(token, a->keys[i].token))
            app = a->keys[i].app;
    return app;
}
