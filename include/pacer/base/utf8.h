/* UTF-8 validation and encoding (base component: libc only). */
#ifndef PACER_BASE_UTF8_H
#define PACER_BASE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length of the well-formed UTF-8 sequence at s, with n > 0 bytes
 * available, or 0 when there is none (overlong forms, surrogates, code
 * points past U+10FFFF, a truncated sequence, a stray byte). */
size_t utf8_seq_len(const unsigned char *s, size_t n);

/* Whether all n bytes at s are well-formed UTF-8. */
int utf8_valid(const char *s, size_t n);

/* Writes code point cp (at most U+10FFFF, not a surrogate) at out (room
 * for 4 bytes); returns the number of bytes written. */
size_t utf8_encode(uint32_t cp, char *out);

/* The longest prefix of s (n bytes of valid UTF-8) that is at most max
 * bytes and ends on a character boundary. */
size_t utf8_cut(const char *s, size_t n, size_t max);

/* Copies into out (size > 0 bytes) the longest prefix of s (n bytes of
 * valid UTF-8) that fits with its NUL, cut on a character boundary (see
 * utf8_cut); returns its length. */
size_t utf8_copy(char *out, size_t size, const char *s, size_t n);

#endif
