/* URL folding for request statistics (urlfold.h). */
#include "urlfold.h"

#include <stdbool.h>
#include <string.h>

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_uuid(const char *s, size_t n)
{
    static const size_t dash[] = {8, 13, 18, 23};
    if (n != 36)
        return false;
    for (size_t i = 0, d = 0; i < n; i++) {
        if (d < 4 && i == dash[d]) {
            if (s[i] != '-')
                return false;
            d++;
        } else if (!is_hex(s[i])) {
            return false;
        }
    }
    return true;
}

static bool is_id(const char *s, size_t n)
{
    if (n == 0)
        return false;
    size_t digits = 0, hex = 0, alpha = 0, token = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        digits += is_digit(c);
        hex += is_hex(c);
        alpha += is_alpha(c);
        token += is_digit(c) || is_alpha(c) || c == '_' || c == '-';
    }
    if (digits == n)
        return true;
    if (is_uuid(s, n))
        return true;
    if (hex == n && n >= 12 && digits > 0)
        return true;
    return token == n && n >= 20 && digits > 0 && alpha > 0;
}

/* The path of a URL: see urlfold. Stores its start, returns its length. */
static size_t path_of(const char *url, const char **ret)
{
    const char *p = url;
    const char *s = p;
    bool authority = false;
    if (is_alpha(*s)) {
        while (is_alpha(*s) || is_digit(*s) || *s == '+' || *s == '-' || *s == '.')
            s++;
        if (s[0] == ':' && s[1] == '/' && s[2] == '/') {
            p = s + 3;
            authority = true;
        }
    }
    if (!authority && p[0] == '/' && p[1] == '/') {
        p += 2;
        authority = true;
    }
    if (authority)
        p += strcspn(p, "/?#");
    *ret = p;
    return strcspn(p, "?#");
}

size_t urlfold(const char *url, char *buf, size_t size)
{
    const char *path;
    size_t n = path_of(url ? url : "", &path);
    size_t out = 0;
    if (n == 0 || path[0] != '/')
        buf[out++] = '/';
    size_t i = 0;
    while (i < n) {
        size_t seg_end = i;
        while (seg_end < n && path[seg_end] != '/')
            seg_end++;
        const char *seg = path + i;
        size_t seg_len = seg_end - i;
        const char *piece = is_id(seg, seg_len) ? "{id}" : seg;
        size_t piece_len = piece == seg ? seg_len : 4;
        size_t sep = seg_end < n ? 1 : 0; /* the '/' after the segment */
        if (out + piece_len + sep > size - 1)
            break;
        memcpy(buf + out, piece, piece_len);
        out += piece_len;
        if (sep)
            buf[out++] = '/';
        i = seg_end + sep;
    }
    buf[out] = 0;
    return out;
}
