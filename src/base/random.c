/* Random bytes and ids (random.h). */
#include <pacer/base/clock.h>
#include <pacer/base/hash.h>
#include <pacer/base/random.h>

#include <errno.h>
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>

void random_fill(void *buf, size_t n)
{
    unsigned char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t k = getrandom(p + got, n - got, GRND_NONBLOCK);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    if (got == n)
        return;
    /* no entropy source: unique, not secret */
    static _Atomic uint64_t counter;
    uint64_t seed = (uint64_t)wall_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)mono_ns() ^ ++counter;
    for (size_t i = got; i < n; i++) {
        seed = hash_u64(seed + 0x9e3779b97f4a7c15ULL);
        p[i] = (unsigned char)seed;
    }
}

void random_hex(char *out, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[64];
    size_t o = 0;
    while (n > 0) {
        size_t k = n < sizeof(b) ? n : sizeof(b);
        random_fill(b, k);
        for (size_t i = 0; i < k; i++) {
            out[o++] = hex[b[i] >> 4];
            out[o++] = hex[b[i] & 15];
        }
        n -= k;
    }
    out[o] = '\0';
}

uint64_t random_u64(void)
{
    uint64_t v;
    random_fill(&v, sizeof(v));
    return v;
}
