/* The dashboard's files (web/, built by esbuild): read once at start from
 * one directory and served from memory by GET / and GET /assets/NAME.
 *
 * Only what was loaded exists: a path is looked up in the table by exact
 * name, so no request reaches the file system (nothing like "..", a
 * symlink made later or a file grown since can be served). The directory
 * holds index.html, served as "/", and the files it loads, served as
 * "/assets/NAME" (app.js, app.css, …); at most WEB_MAX_FILES files of
 * WEB_MAX_BYTES in all, each a regular file of a known type.
 *
 * Every answer of the dashboard (and of its session endpoints, session.c)
 * carries the same security headers (web_security_headers): a
 * Content-Security-Policy that allows scripts, styles, images and
 * connections from the server itself only — no inline script or style,
 * no eval, no frames around it —, nosniff, no referrer. Files carry an
 * ETag (FNV-1a of their content) and are revalidated on each load, so a
 * new pacerd's files replace the old at once.
 */
#ifndef PACER_SERVER_WEB_H
#define PACER_SERVER_WEB_H

#include "http/http.h"

#include <stdbool.h>
#include <stddef.h>

#define WEB_MAX_FILES 256
#define WEB_MAX_BYTES (32u << 20)

typedef struct web_assets web_assets;

/* Loads the files of dir. Returns NULL with "DIR: reason" in err (no
 * index.html, too many files or bytes, unreadable). */
web_assets *web_load(const char *dir, char *err, size_t err_size);
/* Loads the files of the first of the n dirs that holds the dashboard
 * (that one in *ret_dir). Returns NULL when none does, with each one's
 * reason in err ("DIR: reason; DIR: reason") and the dirs tried in looked
 * ("DIR, DIR"). */
web_assets *web_load_first(const char *const *dirs, size_t n, const char **ret_dir, char *looked, size_t looked_size,
                           char *err, size_t err_size);
void web_free(web_assets *w); /* accepts NULL */

/* Whether path is the dashboard's: "/" or "/assets/...". */
bool web_path(const char *path);

/* Answers GET or HEAD of path: the file with its type and ETag, 304 for a
 * matching If-None-Match, 404 for a name that is not loaded. w NULL: 404
 * saying that the dashboard is not installed, and where it was looked
 * for (looked: "DIR, DIR"). Any thread. */
void web_serve(const web_assets *w, const char *looked, const http_request *rq, http_response *rs);

/* Adds the headers every dashboard answer carries (see above). */
void web_security_headers(http_response *rs);

#endif
