/* Ingest: OTLP export requests into the store, whichever front received
 * them. One path for all (ingest.c): decode (OTLP protobuf or JSON) → map
 * each item to a row of the store's layout → clean (clean.h) → keep out
 * copies of stored records (dedupe.h) → store_submit. The OTLP/HTTP front
 * (ingest_http.c) checks, inflates and answers around it; the OTLP/gRPC
 * front (grpc/grpc_otlp.c) calls ingest_batch with the message it received.
 */
#ifndef PACER_SERVER_INGEST_H
#define PACER_SERVER_INGEST_H

#include "clean.h"
#include "dedupe.h"
#include "http/http.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>

/* What ingest works with; read-only while serving. */
typedef struct ingest_ctx {
    store *store;
    dedupe *dedupe;          /* or NULL: copies are not looked for (ClickHouse: no instance sees every record) */
    clean_limits clean;
    size_t max_body;         /* a gzip body's limit once inflated (--max-body; read atomically: a reload sets it) */
    unsigned retention_days; /* what the store would drop at once is refused (--retention-days) */
} ingest_ctx;

enum ingest_signal { INGEST_TRACES, INGEST_LOGS, INGEST_METRICS };

/* What a batch came to. */
typedef struct ingest_outcome {
    size_t items;      /* records charged to the key's quota: those mapped, less those cleaning kept out */
    size_t rejected;   /* items refused: by the decoder, the mapping or cleaning */
    char message[768]; /* why the first was refused, and what was ignored; "" when nothing */
    bool duplicate;    /* the batch id was stored before: nothing is stored again (items, rejected 0) */
} ingest_outcome;

/* A batch id (X-Pacer-Batch-Id, the x-pacer-batch-id metadata): 1 to
 * INGEST_MAX_BATCH_ID of A-Z a-z 0-9 - _ . : */
#define INGEST_MAX_BATCH_ID 128
bool ingest_batch_id_ok(const char *id);

/* Decodes an export request body of signal what (protobuf when proto,
 * else JSON; inflated already), maps, cleans and stores it under app,
 * with batch_id (NULL: none) and the route it came by (endpoint). *coming
 * (may be NULL): true while the request counts as on its way to the store
 * (store_coming); cleared as it submits. 0 with *ret filled; -EINVAL, a
 * body that does not decode (err says where and why); -ENOMEM; -EAGAIN,
 * the store's queue is full (answer 429); -EIO, the store could not
 * commit. Any thread. */
int ingest_batch(const ingest_ctx *ig, const char *app, enum ingest_signal what, bool proto, const char *body,
                 size_t body_len, const char *batch_id, const char *endpoint, bool *coming, ingest_outcome *ret,
                 char *err, size_t err_size);

/* POST /v1/traces, /v1/logs, /v1/metrics (ingest_http.c). app is the app
 * whose key authenticated the request; sets rs->items to the records
 * stored. */
void ingest_http_handle(const ingest_ctx *ig, const char *app, const http_request *rq, http_response *rs, bool *coming);

/* An error answer (4xx, 5xx) to an ingest request, whoever made it,
 * becomes what OTLP/HTTP asks for: a google.rpc.Status in the request's
 * encoding and with its Content-Type (JSON when the request is in neither),
 * with a google.rpc.BadRequest for a 400, and Retry-After on 429 and 503
 * (1 s when none was set). Success answers are left as ingest_http_handle made
 * them. */
void ingest_http_encode(const http_request *rq, http_response *rs);

/* malloc's thresholds for ingest: once, before any thread starts. */
void ingest_malloc_setup(void);

#endif
