/* zlib, loaded when the uploader first compresses a batch (otlp_gzip) or
 * reads a compressed gRPC answer (grpc.c).
 * Linked, it was a dependency of every program the agent is preloaded into
 * (see expat_dl.h for what that costs), for uploads only. */
#ifndef PACER_CORE_ZLIB_DL_H
#define PACER_CORE_ZLIB_DL_H

#include <zlib.h>

#define ZLIB_FUNCTIONS(X) \
    X(deflateInit2_)      \
    X(deflateBound)       \
    X(deflate)            \
    X(deflateEnd)         \
    X(inflateInit2_)      \
    X(inflate)            \
    X(inflateEnd)

typedef struct zlib_api {
#define ZLIB_SLOT(name) __typeof__(name) *name;
    ZLIB_FUNCTIONS(ZLIB_SLOT)
#undef ZLIB_SLOT
} zlib_api;

/* Loads zlib (once, thread-safe) and returns its functions, or NULL when it
 * cannot be loaded. */
const zlib_api *zlib_api_get(void);

#endif
