/* The ingest key for --server (commands.h): from a file or $PACER_KEY,
 * never from the command line, which every user can read in /proc. */
#include "commands.h"

#include <errno.h>
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
