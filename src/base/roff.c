#include <pacer/base/roff.h>
#include <pacer/base/utf8.h>

void roff_text(FILE *out, const char *s, size_t n, bool line_start)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '.' && line_start)
            fputs("\\&", out);
        line_start = c == '\n';
        if (c == '\\')
            fputs("\\e", out);
        else if (c == '-')
            fputs("\\-", out);
        else if (c == '\'')
            fputs("\\(aq", out);
        else if (c == '`')
            fputs("\\(ga", out);
        else if (c == '"')
            fputs("\\(dq", out);
        else if (c < 0x80)
            fputc(c, out);
        else {
            size_t len = utf8_seq_len((const unsigned char *)s + i, n - i);
            if (!len) {
                fputc('?', out);
                continue;
            }
            unsigned long cp = c & (len == 4 ? 0x07u : len == 3 ? 0x0fu : 0x1fu);
            for (size_t k = 1; k < len; k++)
                cp = cp << 6 | ((unsigned char)s[i + k] & 0x3fu);
            fprintf(out, "\\[u%04lX]", cp);
            i += len - 1;
        }
    }
}
