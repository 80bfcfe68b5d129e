/* Hashes (hash.h). */
#include <pacer/base/hash.h>

#include <string.h>

uint64_t fnv1a64_str(const char *s, uint64_t seed)
{
    return fnv1a64(FNV1A64_INIT ^ seed, s, strlen(s));
}
