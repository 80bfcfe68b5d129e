/* Credentials: the admin token and the per-app ingest keys, with each
 * key's limits.
 *
 * The admin token file holds the token on its first line. The keys file
 * holds one key per line ('#' starts a comment line, blank lines are
 * skipped):
 *
 *   APP KEY [rate=N/s|N/min|N/h] [burst=N] [daily=N]
 *
 * rate: records (spans, log records, data points) per second, minute or
 * hour, as a token bucket holding up to burst records (default: one
 * second's worth, at least 1); daily: records per UTC day. A request is
 * refused (429) while the bucket is empty or the day's quota is used; the
 * request that empties them is stored whole, and what it stored is
 * charged after. The counts live in memory: they survive a reload for the
 * keys that stay, not a restart.
 *
 * Tokens are compared in constant time and never printed: error messages
 * name the file and line, not the content. Every function is
 * thread-safe; auth_reload swaps the credentials while requests use them.
 */
#ifndef PACER_SERVER_AUTH_H
#define PACER_SERVER_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct auth auth;

/* Loads both files. Returns NULL with "FILE:LINE: reason" in err. */
auth *auth_load(const char *admin_token_file, const char *keys_file, char *err, size_t err_size);
/* Reads both files again. On an error (returned as -EINVAL or -ENOMEM,
 * "FILE:LINE: reason" in err) the credentials in use stay. */
int auth_reload(auth *a, char *err, size_t err_size);
/* The same from other files (a reloaded config file named them): on
 * success they are the files a later auth_reload reads. */
int auth_reload_files(auth *a, const char *admin_token_file, const char *keys_file, char *err, size_t err_size);
void auth_free(auth *a); /* accepts NULL */
/* How many keys are loaded. */
size_t auth_n_keys(auth *a);
/* Changes (grows) whenever a reload changed the admin token: what was
 * granted with the old one (a dashboard session) ends with it. */
uint64_t auth_admin_epoch(auth *a);

/* Parses the text of a keys file (len bytes; file names it in messages)
 * and frees the result at once: 0, or -EINVAL with "FILE:LINE: reason".
 * For tests and the fuzzer. */
int auth_check_keys(const char *text, size_t len, const char *file, const char *admin, char *err, size_t err_size);

/* The token of an "Authorization: Bearer TOKEN" header value, or NULL when
 * the header is absent or not a Bearer header. Points into the header. */
const char *auth_bearer(const char *authorization);

enum auth_who { AUTH_NONE, AUTH_ADMIN, AUTH_KEY };

typedef struct auth_id {
    enum auth_who who;
    char app[257];   /* AUTH_KEY: the key's app */
    uint64_t key_id; /* AUTH_KEY: for auth_limit and auth_charge */
} auth_id;

/* Who token (NULL: none) is. */
void auth_identify(auth *a, const char *token, auth_id *ret);

/* 0 when the key may send now; -EAGAIN when its rate or daily quota is
 * used up, with the seconds until it may send again and the reason. A key
 * no longer loaded has no limits. */
int auth_limit(auth *a, uint64_t key_id, unsigned *ret_retry_s, char *why, size_t why_size);
/* Counts records stored with the key against its limits. */
void auth_charge(auth *a, uint64_t key_id, uint64_t records);

#endif
