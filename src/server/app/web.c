/* The dashboard's files, served from memory (web.h). */
#include "web.h"
#include "http/params.h"

#include <pacer/base/hash.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct web_file {
    char *path; /* "/index.html", "/assets/app.js" */
    char *data;
    size_t len;
    const char *type;
    char etag[24];
} web_file;

struct web_assets {
    web_file files[WEB_MAX_FILES];
    size_t n, bytes;
};

/* The Content-Type of a name, by its extension; NULL for one the
 * dashboard does not use (such files are not loaded). */
static const char *type_of(const char *name)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},  {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},    {".svg", "image/svg+xml"},
        {".png", "image/png"},                  {".ico", "image/x-icon"},
        {".json", "application/json"},          {".map", "application/json"},
        {".txt", "text/plain; charset=utf-8"},  {".woff2", "font/woff2"},
    };
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (strcasecmp(dot, types[i].ext) == 0)
            return types[i].type;
    return NULL;
}

/* Reads one regular file of at most `room` bytes. */
static int read_whole(const char *file, size_t room, char **ret, size_t *ret_len)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    struct stat sb;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    if ((uint64_t)sb.st_size > room) {
        close(fd);
        return -EFBIG;
    }
    size_t n = (size_t)sb.st_size;
    char *buf = malloc(n ? n : 1);
    size_t got = 0;
    while (buf && got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!buf)
        return -ENOMEM;
    if (got != n) {
        free(buf);
        return -EIO;
    }
    *ret = buf;
    *ret_len = n;
    return 0;
}

static int add_file(web_assets *w, const char *dir, const char *rel, char *err, size_t err_size)
{
    if (w->n == WEB_MAX_FILES) {
        snprintf(err, err_size, "%s: more than %d files", dir, WEB_MAX_FILES);
        return -EFBIG;
    }
    char file[4096];
    if ((size_t)snprintf(file, sizeof file, "%s/%s", dir, rel) >= sizeof file) {
        snprintf(err, err_size, "%s: path too long", dir);
        return -ENAMETOOLONG;
    }
    web_file *f = &w->files[w->n];
    int r = read_whole(file, WEB_MAX_BYTES - w->bytes, &f->data, &f->len);
    if (r < 0) {
        snprintf(err, err_size, "%s: %s", file,
                 r == -EFBIG    ? "the dashboard's files are larger than 32 MiB in all"
                 : r == -EINVAL ? "not a regular file"
                                : strerror(-r));
        return r;
    }
    size_t n = strlen(rel) + 2;
    if (!(f->path = malloc(n))) {
        free(f->data);
        snprintf(err, err_size, "out of memory");
        return -ENOMEM;
    }
    snprintf(f->path, n, "/%s", rel);
    f->type = type_of(rel);
    snprintf(f->etag, sizeof f->etag, "\"%016" PRIx64 "\"", fnv1a64(FNV1A64_INIT, f->data, f->len));
    w->bytes += f->len;
    w->n++;
    return 0;
}

web_assets *web_load(const char *dir, char *err, size_t err_size)
{
    web_assets *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, err_size, "%s: %s", dir, strerror(errno));
        goto fail;
    }
    struct dirent *e;
    int r = 0;
    while (r == 0 && (e = readdir(d))) {
        if (e->d_name[0] == '.' || !type_of(e->d_name))
            continue; /* hidden files, and kinds the dashboard has none of */
        r = add_file(w, dir, e->d_name, err, err_size);
    }
    closedir(d);
    if (r < 0)
        goto fail;
    bool index = false;
    for (size_t i = 0; i < w->n; i++)
        index |= strcmp(w->files[i].path, "/index.html") == 0;
    if (!index) {
        snprintf(err, err_size, "%s: no index.html (the dashboard is built into BUILD/web; installed into "
                 "SHARE/pacer/web)", dir);
        goto fail;
    }
    return w;
fail:
    web_free(w);
    return NULL;
}

web_assets *web_load_first(const char *const *dirs, size_t n, const char **ret_dir, char *looked, size_t looked_size,
                           char *err, size_t err_size)
{
    size_t lo = 0, eo = 0;
    *looked = *err = 0;
    for (size_t i = 0; i < n; i++) {
        if (lo < looked_size)
            lo += (size_t)snprintf(looked + lo, looked_size - lo, "%s%s", i ? ", " : "", dirs[i]);
        char why[1024];
        web_assets *w = web_load(dirs[i], why, sizeof why);
        if (w) {
            *ret_dir = dirs[i];
            return w;
        }
        if (eo < err_size)
            eo += (size_t)snprintf(err + eo, err_size - eo, "%s%s", i ? "; " : "", why);
    }
    return NULL;
}

void web_free(web_assets *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++) {
        free(w->files[i].path);
        free(w->files[i].data);
    }
    free(w);
}

bool web_path(const char *path)
{
    return strcmp(path, "/") == 0 || strncmp(path, "/assets/", 8) == 0;
}

void web_security_headers(http_response *rs)
{
    http_add_header(rs, "Content-Security-Policy",
                    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                    "font-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; "
                    "frame-ancestors 'none'");
    http_add_header(rs, "X-Content-Type-Options", "nosniff");
    http_add_header(rs, "X-Frame-Options", "DENY");
    http_add_header(rs, "Referrer-Policy", "no-referrer");
    http_add_header(rs, "Cross-Origin-Resource-Policy", "same-origin");
}

void web_serve(const web_assets *w, const char *looked, const http_request *rq, http_response *rs)
{
    if (!w) {
        http_error(rs, 404, "the dashboard is not installed here (pacerd --web-root DIR; looked in %.900s)",
                   looked && *looked ? looked : "no directory");
        web_security_headers(rs);
        return;
    }
    /* "/" is index.html, "/assets/NAME" the file NAME beside it */
    const char *path = strcmp(rq->path, "/") == 0 ? "/index.html" : rq->path + 7;
    const web_file *f = NULL;
    for (size_t i = 0; i < w->n && !f; i++)
        if (strcmp(w->files[i].path, path) == 0)
            f = &w->files[i];
    if (!f || !f->type) {
        http_error(rs, 404, "no such file of the dashboard: %.200s", rq->path);
        web_security_headers(rs);
        return;
    }
    snprintf(rs->etag, sizeof rs->etag, "%s", f->etag);
    http_add_header(rs, "Cache-Control", "no-cache");
    web_security_headers(rs);
    const char *inm = http_header(rq, "If-None-Match");
    if (inm && params_etag_listed(inm, f->etag)) {
        rs->status = 304;
        return;
    }
    char *copy = malloc(f->len ? f->len : 1);
    if (!copy) {
        http_error(rs, 503, "out of memory");
        return;
    }
    memcpy(copy, f->data, f->len);
    rs->status = 200;
    rs->body = copy;
    rs->len = f->len;
    rs->content_type = f->type;
}
