/* Text as roff, for the manual pages the build writes (base component:
 * libc only). */
#ifndef PACER_BASE_ROFF_H
#define PACER_BASE_ROFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Writes n bytes of text as roff: a backslash, a minus (an option's dash
 * must stay one), quotes (so that none starts a request) and characters
 * beyond ASCII (\[uXXXX]) as escapes; a '.' that starts an output line
 * (line_start for the first byte, then after each newline) cannot start a
 * request. A byte that is not well-formed UTF-8 is written as '?'. */
void roff_text(FILE *out, const char *s, size_t n, bool line_start);

#endif
