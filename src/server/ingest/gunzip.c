/* gzip request bodies (gunzip.h). */
#include "gunzip.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

int gunzip(const void *in, size_t in_len, size_t max, char **ret, size_t *ret_len, char *err, size_t err_size)
{
    *ret = NULL;
    *ret_len = 0;
    if (in_len < 2 || ((const unsigned char *)in)[0] != 0x1f || ((const unsigned char *)in)[1] != 0x8b) {
        snprintf(err, err_size, "Content-Encoding: gzip, but the body is not gzip data");
        return -EBADMSG;
    }
    /* a first guess: the size the last member's trailer gives (ISIZE, the
     * inflated size mod 2^32; only a hint, never trusted), else typical
     * ratios; doubled as needed, never past max */
    const unsigned char *tail = (const unsigned char *)in + in_len - 4;
    size_t isize = in_len >= 18 ? (size_t)tail[0] | (size_t)tail[1] << 8 | (size_t)tail[2] << 16 | (size_t)tail[3] << 24
                                : 0;
    size_t cap = isize >= in_len && isize <= max ? isize : in_len < max / 4 ? in_len * 4 : max;
    if (cap < 4096)
        cap = max < 4096 ? max : 4096;
    char *out = malloc(cap + 1);
    if (!out)
        return -ENOMEM;
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) { /* 16: gzip wrapper only */
        free(out);
        return -ENOMEM;
    }
    const unsigned char *p = in;
    size_t done_in = 0, len = 0;
    int r = Z_OK;
    bool too_big = false, truncated = false;
    for (;;) {
        size_t in_chunk = in_len - done_in > UINT32_MAX ? UINT32_MAX : in_len - done_in;
        z.next_in = (unsigned char *)p + done_in;
        z.avail_in = (uInt)in_chunk;
        if (len == cap && cap == max) {
            /* full: only the end of the stream may follow, no more bytes */
            unsigned char one;
            z.next_out = &one;
            z.avail_out = 1;
            r = inflate(&z, Z_NO_FLUSH);
            done_in += in_chunk - z.avail_in;
            if (z.avail_out == 0) {
                too_big = true;
                break;
            }
            if (r == Z_STREAM_END && done_in < in_len && inflateReset(&z) == Z_OK)
                continue;
            truncated = r == Z_OK && done_in == in_len;
            if (r != Z_OK || truncated)
                break;
            continue;
        }
        if (len == cap) {
            size_t ncap = cap > max / 2 ? max : cap * 2;
            char *n = realloc(out, ncap + 1);
            if (!n) {
                inflateEnd(&z);
                free(out);
                return -ENOMEM;
            }
            out = n;
            cap = ncap;
        }
        size_t room = cap - len > UINT32_MAX ? UINT32_MAX : cap - len;
        z.next_out = (unsigned char *)out + len;
        z.avail_out = (uInt)room;
        r = inflate(&z, Z_NO_FLUSH);
        done_in += in_chunk - z.avail_in;
        len += room - z.avail_out;
        if (r == Z_STREAM_END) {
            if (done_in == in_len)
                break;
            /* another member follows */
            if (inflateReset(&z) != Z_OK) {
                r = Z_DATA_ERROR;
                break;
            }
            continue;
        }
        if (r == Z_BUF_ERROR && z.avail_out == 0)
            continue; /* the output is full: grow it */
        if (r != Z_OK)
            break;
        if (done_in == in_len && z.avail_out) {
            truncated = true; /* all input taken, no end of stream */
            break;
        }
    }
    inflateEnd(&z);
    if (r == Z_STREAM_END && !too_big) {
        out[len] = 0;
        *ret = out;
        *ret_len = len;
        return 0;
    }
    free(out);
    if (too_big) {
        snprintf(err, err_size, "the body inflates to more than the limit of %zu bytes", max);
        return -EFBIG;
    }
    if (r == Z_MEM_ERROR)
        return -ENOMEM;
    snprintf(err, err_size, "the gzip body is %s", truncated || r == Z_BUF_ERROR ? "truncated" : "corrupt");
    return -EBADMSG;
}
