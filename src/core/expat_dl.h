/* expat, loaded when the first config is parsed (config.c). Linked, it was
 * a dependency of every program the agent is preloaded into: GTK programs
 * map expat anyway (fontconfig), but an object the agent names moves up
 * the global symbol scope, where every symbol look-up of the program's
 * start-up passes it; other programs (a shell script under `pacer run`)
 * mapped it for nothing. Each function pacer calls has a slot of its own
 * type: a call reads `x->XML_Parse(...)`. */
#ifndef PACER_CORE_EXPAT_DL_H
#define PACER_CORE_EXPAT_DL_H

#include <expat.h>

#define EXPAT_FUNCTIONS(X)          \
    X(XML_ParserCreate)             \
    X(XML_ParserFree)               \
    X(XML_SetUserData)              \
    X(XML_SetElementHandler)        \
    X(XML_SetCharacterDataHandler)  \
    X(XML_Parse)                    \
    X(XML_StopParser)               \
    X(XML_GetErrorCode)             \
    X(XML_ErrorString)              \
    X(XML_GetCurrentLineNumber)     \
    X(XML_GetCurrentColumnNumber)   \
    X(XML_GetCurrentByteIndex)

typedef struct expat_api {
#define EXPAT_SLOT(name) __typeof__(name) *name;
    EXPAT_FUNCTIONS(EXPAT_SLOT)
#undef EXPAT_SLOT
} expat_api;

/* Loads expat (once, thread-safe) and returns its functions, or NULL when
 * it cannot be loaded (*ret_why, when given, then says why; static). */
const expat_api *expat_api_get(const char **ret_why);

#endif
