/* gzip request bodies (Content-Encoding: gzip), inflated with zlib. */
#ifndef PACER_SERVER_GUNZIP_H
#define PACER_SERVER_GUNZIP_H

#include <stddef.h>

/* Inflates the gzip data in[0..in_len) — one member or several in a row,
 * as RFC 1952 allows — into a malloc'd buffer (*ret, NUL-terminated, the
 * NUL not counted in *ret_len). The output never grows past max bytes:
 * the buffer starts small and doubles, so a body that inflates beyond the
 * limit (a gzip bomb) costs at most max + 1 bytes and gives -EFBIG.
 * Returns 0, -EFBIG, -EBADMSG with the reason in err (not gzip, corrupt,
 * truncated, bytes after the last member), or -ENOMEM. */
int gunzip(const void *in, size_t in_len, size_t max, char **ret, size_t *ret_len, char *err, size_t err_size);

#endif
