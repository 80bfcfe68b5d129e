/* Strict request targets: the path and the query string exactly as the
 * client sent them, decoded and checked before any handler sees them.
 *
 * Percent-escapes must be two hex digits; in the query '+' is a space.
 * After decoding, every name and value is valid UTF-8 with no control
 * character (NUL included): "shop%00x" is an error, not "shop". A query
 * holds at most PARAMS_MAX parameters, each named once (but "attr", the
 * read APIs' repeatable attribute filter), none with an empty name. Numbers are plain decimal integers checked against a range
 * before they are used. Every error message starts with what it is about
 * ("from: ...", "path: ..."), so a 400 names the parameter.
 */
#ifndef PACER_SERVER_PARAMS_H
#define PACER_SERVER_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PARAMS_MAX 32

typedef struct param {
    const char *name, *value; /* decoded, NUL-terminated */
    size_t value_len;
} param;

typedef struct params {
    size_t n;
    param p[PARAMS_MAX];
    char *buf; /* holds the decoded names and values */
} params;

/* Decodes the query string (the text after '?', len bytes, without the
 * '?'). Returns 0, or -EINVAL with the reason in err; *ret is then empty
 * (params_free is still allowed). -ENOMEM when out of memory. */
int params_parse(const char *query, size_t len, params *ret, char *err, size_t err_size);
void params_free(params *p);

/* Decodes a path (an origin-form target's part before '?', starting with
 * '/'). Returns 0 with a malloc'd path in *ret_path, -EINVAL with the
 * reason in err, or -ENOMEM. */
int params_path(const char *raw, size_t len, char **ret_path, char *err, size_t err_size);

/* The parameter named name, or NULL. */
const param *params_find(const params *p, const char *name);

/* 0 when every parameter is one of the NULL-terminated names; else
 * -EINVAL and "NAME: unknown parameter (expected ...)" in err. */
int params_only(const params *p, const char *const *names, char *err, size_t err_size);

/* An integer parameter in [min, max]: 1 with *ret set, 0 when absent,
 * -EINVAL with "NAME: ..." in err when it is not a decimal integer in the
 * range (or is empty). */
int params_int(const params *p, const char *name, int64_t min, int64_t max, int64_t *ret, char *err,
               size_t err_size);

/* A text parameter of 1 to max_len bytes: 1 with *ret set, 0 when absent,
 * -EINVAL when empty or longer. */
int params_str(const params *p, const char *name, size_t max_len, const char **ret, char *err, size_t err_size);

/* ---- headers with parameters of their own ---- */

/* The value of cookie `name` in a Cookie header, copied into out (room
 * for out_size bytes with the NUL; a longer value is not found). */
bool params_cookie(const char *header, const char *name, char *out, size_t out_size);

/* Whether an If-None-Match list ("a", W/"b", *) names etag (quoted). */
bool params_etag_listed(const char *list, const char *etag);

#endif
