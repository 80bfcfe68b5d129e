/* C++ function names as a reader knows them: `_ZN16QtShopHomeWindow22computeRecommendationsEi`
 * → `QtShopHomeWindow::computeRecommendations(int)`, for the stacks of
 * `jank` records.
 *
 * libstdc++'s __cxa_demangle does it; the agent does not link libstdc++,
 * so it is looked up in the process (every C++ program has it loaded).
 * Without it names stay as the symbol table has them.
 */
#include "agent.h"

#include <stdlib.h>
#include <string.h>

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

char *agent_demangle(const char *name)
{
    if (!name || strncmp(name, "_Z", 2) != 0)
        return NULL;
    static demangle_fn fn;
    AGENT_REAL(fn, "libstdc++.so.6", "__cxa_demangle");
    if (!fn)
        return NULL;
    /* a symbol version (@@Qt_6) is not part of the mangled name */
    char plain[1024];
    size_t len = strcspn(name, "@");
    if (len >= sizeof(plain))
        return NULL;
    memcpy(plain, name, len);
    plain[len] = '\0';
    int status = -1;
    char *out = fn(plain, NULL, NULL, &status);
    if (status != 0) {
        free(out);
        return NULL;
    }
    return out;
}
