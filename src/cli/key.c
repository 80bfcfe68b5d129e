/* What the commands that talk to pacerd share (commands.h): the ingest key
 * for --server, from a file or $PACER_KEY, never from the command line,
 * which every user can read in /proc; the admin token's file; answers read
 * into memory. */
#include "commands.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

char *cli_server_key(const char *cmd, const char *key_file, int *ret_error)
{
    *ret_error = 0;
    if (!key_file) {
        const char *env = getenv("PACER_KEY");
        return env && *env ? strdup(env) : NULL;
    }
    FILE *f = fopen(key_file, "re");
    if (!f) {
        fprintf(stderr, "pacer %s: --key-file %s: %s\n", cmd, key_file, strerror(errno));
        *ret_error = 1;
        return NULL;
    }
    char line[1024];
    char *k = fgets(line, sizeof line, f);
    fclose(f);
    size_t n = k ? strlen(k) : 0;
    while (n && (k[n - 1] == '\n' || k[n - 1] == '\r' || k[n - 1] == ' ' || k[n - 1] == '\t'))
        k[--n] = 0;
    while (k && (*k == ' ' || *k == '\t'))
        k++, n--;
    char *key = n && !strpbrk(k, " \t") ? strdup(k) : NULL;
    memset(line, 0, sizeof line);
    if (!key) {
        fprintf(stderr, "pacer %s: --key-file %s: expected the key on the first line (no spaces)\n", cmd, key_file);
        *ret_error = 1;
    }
    return key;
}

void cli_key_free(char *key)
{
    if (key) {
        memset(key, 0, strlen(key));
        free(key);
    }
}

char *cli_token_file(const char *cmd, const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        fprintf(stderr, "pacer %s: --token-file %s: %s\n", cmd, path, strerror(errno));
        return NULL;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    fclose(f);
    if (n > 0)
        line[strcspn(line, "\r\n")] = 0;
    if (n <= 0 || !line[0]) {
        fprintf(stderr, "pacer %s: --token-file %s: the first line is empty\n", cmd, path);
        free(line);
        return NULL;
    }
    return line;
}

size_t cli_answer_write(char *p, size_t size, size_t n, void *ctx)
{
    cli_answer *a = ctx;
    size_t add = size * n;
    if (a->len + add > a->max) {
        a->too_big = true;
        return 0;
    }
    if (a->len + add + 1 > a->cap) {
        size_t cap = a->cap ? a->cap : 65536;
        while (cap < a->len + add + 1)
            cap *= 2;
        char *d = realloc(a->data, cap);
        if (!d)
            return 0;
        a->data = d;
        a->cap = cap;
    }
    memcpy(a->data + a->len, p, add);
    a->len += add;
    a->data[a->len] = 0;
    return add;
}
