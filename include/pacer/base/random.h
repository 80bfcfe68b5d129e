/* Random bytes and ids (base component: libc only). */
#ifndef PACER_BASE_RANDOM_H
#define PACER_BASE_RANDOM_H

#include <stddef.h>
#include <stdint.h>

/* Fills buf with n bytes from the kernel's random source; when none can be
 * read (a sandbox without /dev/urandom), with a mix of the clocks and the
 * pid, which is unique enough for ids but not secret. */
void random_fill(void *buf, size_t n);

/* n random bytes as 2n lowercase hex digits and a NUL at out. */
void random_hex(char *out, size_t n);

/* A random 64-bit value. */
uint64_t random_u64(void);

#endif
