/* Credentials: the admin token and the per-app ingest keys.
 *
 * The admin token file holds the token on its first line; the keys file
 * holds "APP KEY" per line ('#' starts a comment line, blank lines are
 * skipped). Tokens are compared in constant time and never printed: error
 * messages name the file and line, not the content.
 */
#ifndef PACER_SERVER_AUTH_H
#define PACER_SERVER_AUTH_H

#include <stdbool.h>
#include <stddef.h>

typedef struct auth auth;

/* Loads both files. Returns NULL with "FILE:LINE: reason" in err. */
auth *auth_load(const char *admin_token_file, const char *keys_file, char *err, size_t err_size);
void auth_free(auth *a); /* accepts NULL */

/* The token of an "Authorization: Bearer TOKEN" header value, or NULL when
 * the header is absent or not a Bearer header. Points into the header. */
const char *auth_bearer(const char *authorization);

bool auth_is_admin(const auth *a, const char *token);
/* The app whose key is token, or NULL. */
const char *auth_app_of(const auth *a, const char *token);

#endif
