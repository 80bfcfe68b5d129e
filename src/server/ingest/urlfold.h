/* URL → pattern for request statistics: the path of a URL with the parts
 * that identify one object folded into "{id}", so that /api/items/123 and
 * /api/items/456 are counted together as /api/items/{id}.
 *
 * Steps: drop "scheme://authority", the query and the fragment (an empty
 * path becomes "/"); then replace every path segment that is
 *   - all decimal digits                       (/items/123)
 *   - a UUID, 8-4-4-4-12 hex digits            (/u/0b3c…-…)
 *   - hex digits only, at least 12 long and holding a digit (/obj/5f2a9c0e11aa)
 *   - at least 20 characters of [A-Za-z0-9_-] holding a digit and a letter
 *     (opaque tokens: /s/AbC3dE…)
 * with "{id}". Other segments (words, versions like "v2") are kept.
 */
#ifndef PACER_SERVER_URLFOLD_H
#define PACER_SERVER_URLFOLD_H

#include <stddef.h>

/* Writes the pattern of url into buf (NUL-terminated, truncated to size - 1
 * bytes on a segment boundary when too long). Returns the length written.
 * size must be at least 2. */
size_t urlfold(const char *url, char *buf, size_t size);

#endif
