/* Internal clock helpers (the public ones are in pacer.h; plain clocks in
 * pacer/base/clock.h). */
#ifndef PACER_CORE_CLOCK_H
#define PACER_CORE_CLOCK_H

#include <stdint.h>

/* Marks the calling thread as one of pacer's own (pacer_thread_is_internal). */
void clock_mark_internal_thread(void);

/* Strict decimal parse of a whole string. Returns 0 or -EINVAL. */
int parse_i64(const char *s, int64_t *ret);

#endif
