/* The OTLP/gRPC front's credentials and limits (pacerd.h): the callbacks
 * of the gRPC server (grpc/grpc.h). The same promises as the OTLP/HTTP
 * routes (router.c), decided on the call's headers before any of its
 * message is kept: an app key from the "authorization: Bearer KEY"
 * metadata (UNAUTHENTICATED without one, PERMISSION_DENIED for the admin
 * token), the key's rate and daily quota (RESOURCE_EXHAUSTED with a
 * RetryInfo); then the one ingest path (grpc/grpc_otlp.h), and what was
 * stored is charged to the key and counted.
 */
#include "pacerd.h"
#include "grpc/grpc_otlp.h"

#include <stdlib.h>
#include <string.h>

typedef struct grpc_route {
    enum ingest_signal what;
    auth_id id;
    bool coming; /* admitted on its headers, not yet submitted (store_coming) */
} grpc_route;

int grpc_router_preflight(void *ctx, grpc_call *call, grpc_reply *r)
{
    pacerd *d = ctx;
    int what = grpc_otlp_service(call->path);
    if (what < 0) {
        grpc_reply_set(r, GRPC_UNIMPLEMENTED, "%.200s: pacerd serves the OTLP Export methods of traces, logs and metrics",
                       call->path);
        return -1;
    }
    const char *token = auth_bearer(call->authorization);
    auth_id id;
    auth_identify(d->auth, token, &id);
    if (id.who != AUTH_KEY) {
        bool admin = id.who == AUTH_ADMIN;
        metrics_reject(&d->metrics, admin ? MREJ_FORBIDDEN : MREJ_UNAUTHORIZED);
        grpc_reply_set(r, admin ? GRPC_PERMISSION_DENIED : GRPC_UNAUTHENTICATED, "%s",
                       admin   ? "ingest takes an app key, not the admin token"
                       : token ? "unknown key"
                               : "send the app's key: authorization: Bearer KEY");
        return -1;
    }
    unsigned retry;
    char why[256];
    if (auth_limit(d->auth, id.key_id, &retry, why, sizeof why) < 0) {
        metrics_reject(&d->metrics, strstr(why, "daily") ? MREJ_QUOTA : MREJ_RATE_LIMIT);
        grpc_reply_set(r, GRPC_RESOURCE_EXHAUSTED, "%s: retry after %u s", why, retry);
        r->retry_after = retry ? retry : 1;
        return -1;
    }
    grpc_route *st = malloc(sizeof *st);
    if (!st) {
        grpc_reply_set(r, GRPC_UNAVAILABLE, "out of memory");
        r->retry_after = 1;
        return -1;
    }
    st->what = (enum ingest_signal)what;
    st->id = id;
    st->coming = true;
    store_coming(d->store, 1);
    call->state = st;
    return 0;
}

void grpc_router_handle(void *ctx, const grpc_call *call, const uint8_t *msg, size_t len, grpc_reply *r)
{
    pacerd *d = ctx;
    grpc_route *st = call->state;
    grpc_otlp_export(&d->ingest, st->id.app, st->what, call, msg, len, &st->coming, r);
    if (r->code == GRPC_RESOURCE_EXHAUSTED)
        metrics_reject(&d->metrics, MREJ_STORE_QUEUE);
    else if (r->code == GRPC_UNAVAILABLE)
        metrics_reject(&d->metrics, MREJ_STORE_FAILED);
}

void grpc_router_done(void *ctx, const grpc_call *call, const grpc_reply *r)
{
    pacerd *d = ctx;
    const grpc_route *st = call->state;
    if (st && r->code == GRPC_OK && r->items) {
        auth_charge(d->auth, st->id.key_id, r->items);
        metrics_grpc_stored(&d->metrics, (int)st->what, r->items);
    }
}

void grpc_router_release(void *ctx, grpc_call *call)
{
    pacerd *d = ctx;
    grpc_route *st = call->state;
    if (st && st->coming)
        store_coming(d->store, -1);
    free(st);
    call->state = NULL;
}
