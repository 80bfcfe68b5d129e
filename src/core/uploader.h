/* The uploader: a thread that sends spooled records to the server as
 * OTLP/HTTP (protobuf or JSON) or OTLP/gRPC, gzip-compressed by default,
 * and keeps the page config in step with the server's.
 * See uploader.c. */
#ifndef PACER_CORE_UPLOADER_H
#define PACER_CORE_UPLOADER_H

#include <pacer/config.h>

#include <stdbool.h>
#include <stdint.h>

typedef struct uploader uploader;

/* Receives a config fetched from the server (already validated); called on
 * the uploader thread. The callee takes its own reference if it keeps it. */
typedef void (*uploader_config_fn)(pacer_config *cfg, void *user_data);

typedef struct uploader_options {
    const char *server_url;     /* "http://127.0.0.1:4318" (no trailing path); with grpc,
                                   "http://127.0.0.1:4317" (h2c) or https:// (TLS, ALPN h2) */
    const char *key;            /* the app's ingest key (Bearer); may be NULL */
    const char *ca_file;        /* CA certificates for https (PEM); NULL: the system's */
    const char *app;            /* the app's name, for the config service */
    const char *config_url;     /* config service: GET {config_url}/v1/config/{app}; NULL = none */
    const char *spool_path;     /* the spool file (opened separately by the writer side) */
    const char *config_cache;   /* last good server config, for offline starts; NULL = none */
    uploader_config_fn on_config;
    void *user_data;
    unsigned config_poll_ms;    /* 0 = never poll after the first fetch; a fetched
                                   config's <upload config-poll-ms> replaces it */
    unsigned batch_records;     /* 0 = 500 */
    bool json;                  /* send OTLP/HTTP JSON (else protobuf, the OTLP default) */
    bool no_gzip;               /* send bodies uncompressed (else Content-Encoding: gzip,
                                   or grpc-encoding: gzip) */
    bool grpc;                  /* send unary OTLP/gRPC Export calls over HTTP/2 (grpc.c);
                                   the message is protobuf, json is ignored */
} uploader_options;

int uploader_new(const uploader_options *opts, uploader **ret, char **ret_error);

/* New records are in the spool: send soon (respecting any backoff). */
void uploader_kick(uploader *u);

typedef struct uploader_stats {
    uint64_t requests;        /* HTTP requests (gRPC calls) made */
    uint64_t batches_sent;    /* batches the server accepted */
    uint64_t batches_refused; /* batches the server refused for good (4xx; a gRPC status
                                 that is not retryable) */
    uint64_t retries;         /* failed attempts that will be retried */
    uint64_t configs;         /* configs received and applied */
    int last_error;           /* HTTP status of the last failure or refusal, 0 = transport */
    uint64_t rejected;        /* items rejected inside accepted batches (partialSuccess) */
    char message[160];        /* the last partialSuccess errorMessage */
    int grpc_status;          /* gRPC: the status of the last failure or refusal, 0 = none */
    char error[160];          /* gRPC: its grpc-message, or what failed on the way */
} uploader_stats;

/* Stops the thread. Before stopping it tries, for at most `drain_ms`, to
 * send what is spooled (unless the server is backing it off); what is left
 * stays in the spool for the next run. The final figures go to *ret_final
 * when it is not NULL. Accepts NULL. */
void uploader_free(uploader *u, unsigned drain_ms, uploader_stats *ret_final);

void uploader_get_stats(uploader *u, uploader_stats *ret);

#endif
