/* URL handling for the page model: a request matches a configured API on its
 * path alone (DESIGN §3.1). */
#ifndef PACER_CORE_URL_H
#define PACER_CORE_URL_H

#include <stddef.h>

/* Finds the path of `url`: scheme and authority ("https://host:port") are
 * skipped, and the path ends at '?' or '#'. A URL without a path gives "/".
 * Sets *ret_path to the start (inside url, or a static "/") and returns its
 * length. Never fails. */
size_t url_path(const char *url, const char **ret_path);

/* Whether two URLs have the same path. */
int url_path_equal(const char *a, const char *b);

#endif
