/* Path extraction for API matching (url.h). */
#include "url.h"

#include <string.h>

size_t url_path(const char *url, const char **ret_path)
{
    const char *p = url ? url : "";
    /* "scheme://": the scheme is a letter, then letters, digits, + - . */
    const char *s = p;
    const char *scheme_end = NULL;
    if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')) {
        while ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
               *s == '+' || *s == '-' || *s == '.')
            s++;
        if (s[0] == ':' && s[1] == '/' && s[2] == '/') {
            scheme_end = s;
            p = s + 3;
        }
    }
    if (scheme_end || (p[0] == '/' && p[1] == '/')) {
        if (!scheme_end)
            p += 2;
        p += strcspn(p, "/?#"); /* authority */
    }
    size_t n = strcspn(p, "?#");
    if (n == 0) {
        *ret_path = "/";
        return 1;
    }
    *ret_path = p;
    return n;
}

int url_path_equal(const char *a, const char *b)
{
    const char *pa, *pb;
    size_t na = url_path(a, &pa);
    size_t nb = url_path(b, &pb);
    return na == nb && memcmp(pa, pb, na) == 0;
}
