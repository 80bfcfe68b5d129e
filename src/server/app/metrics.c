/* pacerd's figures and their Prometheus text (metrics.h). */
#include "metrics.h"

#include <pacer/base/clock.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *const route_names[ROUTE_COUNT] = {
    [ROUTE_NONE] = "none",          [ROUTE_HEALTHZ] = "/healthz",      [ROUTE_METRICS] = "/metrics",
    [ROUTE_TRACES] = "/v1/traces",  [ROUTE_LOGS] = "/v1/logs",         [ROUTE_METRICS_INGEST] = "/v1/metrics",
    [ROUTE_CONFIG] = "/v1/config",  [ROUTE_QUERY] = "/api/v1",         [ROUTE_OPTIONS_ANY] = "*",
    [ROUTE_WEB] = "/",              [ROUTE_AUTH] = "/auth",
    [ROUTE_UNKNOWN] = "unknown",
};

/* The statuses counted one by one; the last slot holds the others. */
static const unsigned statuses[METRICS_STATUSES - 1] = {200, 204, 304, 400, 401, 403, 404, 405, 408,
                                                         413, 414, 415, 429, 431, 500, 501, 503};

static const char *const reject_names[MREJ_COUNT] = {
    [MREJ_UNAUTHORIZED] = "unauthorized", [MREJ_FORBIDDEN] = "forbidden",     [MREJ_RATE_LIMIT] = "rate_limit",
    [MREJ_QUOTA] = "quota",               [MREJ_STORE_QUEUE] = "store_queue", [MREJ_STORE_FAILED] = "store_failed",
};

static const char *const fault_names[STORE_FAULT_COUNT] = {
    [STORE_OK] = "ok",       [STORE_DISK_FULL] = "disk_full", [STORE_READ_ONLY] = "read_only",
    [STORE_CORRUPT] = "corrupt", [STORE_IO] = "io",           [STORE_STUCK] = "stuck",
};

void metrics_init(server_metrics *m)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->lock, NULL);
    m->started_ns = mono_ns();
}

void metrics_destroy(server_metrics *m)
{
    pthread_mutex_destroy(&m->lock);
}

void metrics_request(server_metrics *m, enum route r, unsigned status)
{
    size_t s = 0;
    while (s < METRICS_STATUSES - 1 && statuses[s] != status)
        s++;
    pthread_mutex_lock(&m->lock);
    m->requests[r][s]++;
    pthread_mutex_unlock(&m->lock);
}

void metrics_reject(server_metrics *m, enum metrics_reject why)
{
    pthread_mutex_lock(&m->lock);
    m->rejects[why]++;
    pthread_mutex_unlock(&m->lock);
}

static void stored(server_metrics *m, int signal, uint64_t n, bool grpc)
{
    int64_t sec = mono_ns() / 1000000000LL;
    pthread_mutex_lock(&m->lock);
    m->records[signal] += n;
    if (grpc)
        m->grpc_records[signal] += n;
    if (signal == 0) {
        size_t slot = (size_t)(sec % METRICS_WINDOW_S);
        if (m->window_s[slot] != sec) {
            m->window_s[slot] = sec;
            m->window_spans[slot] = 0;
        }
        m->window_spans[slot] += n;
    }
    pthread_mutex_unlock(&m->lock);
}

void metrics_stored(server_metrics *m, enum route r, uint64_t n)
{
    stored(m, r == ROUTE_TRACES ? 0 : r == ROUTE_LOGS ? 1 : 2, n, false);
}

void metrics_grpc_stored(server_metrics *m, int signal, uint64_t n)
{
    stored(m, signal, n, true);
}

void metrics_reload(server_metrics *m, bool ok)
{
    pthread_mutex_lock(&m->lock);
    if (ok)
        m->reloads++;
    else
        m->reload_failures++;
    pthread_mutex_unlock(&m->lock);
}

static void help(jbuf *b, const char *name, const char *type, const char *text)
{
    jbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

static void histogram(jbuf *b, const char *name, const char *text, const latency *l)
{
    help(b, name, "histogram", text);
    uint64_t cum = 0;
    for (size_t i = 0; i < LATENCY_BUCKETS; i++) {
        cum += l->buckets[i];
        if (i < LATENCY_BUCKETS - 1)
            jbuf_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, latency_bound(i), (unsigned long long)cum);
        else
            jbuf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
    }
    jbuf_printf(b, "%s_sum %.9g\n%s_count %llu\n", name, l->sum_s, name, (unsigned long long)l->count);
}

static void gauge(jbuf *b, const char *name, const char *text, double v)
{
    help(b, name, "gauge", text);
    jbuf_printf(b, "%s %.17g\n", name, v);
}

static void counter(jbuf *b, const char *name, const char *text, uint64_t v)
{
    help(b, name, "counter", text);
    jbuf_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

static double resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "re");
    long pages = 0, rss = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return (double)rss * (double)sysconf(_SC_PAGESIZE);
}

/* The application layer's series. */
static void render_analysis(jbuf *b, const metrics_sources *src)
{
    if (src->cleaned) {
        jbuf_puts(b, "# HELP pacerd_clean_records_total Pacer records kept out of the statistics (or counted), by "
                     "reason (docs/server.md, Cleaning).\n# TYPE pacerd_clean_records_total counter\n");
        for (int k = 1; k < CLEAN_COUNT; k++)
            jbuf_printf(b, "pacerd_clean_records_total{reason=\"%s\"} %llu\n", clean_reason_name((enum clean_reason)k),
                        (unsigned long long)src->cleaned[k]);
    }
    const analysis_stats *as = src->analysis;
    if (as) {
        jbuf_printf(b,
                    "# HELP pacerd_analysis_cycles_total Analysis cycles run, and those that failed.\n"
                    "# TYPE pacerd_analysis_cycles_total counter\n"
                    "pacerd_analysis_cycles_total %llu\npacerd_analysis_failures_total %llu\n"
                    "# HELP pacerd_analysis_rows_total Stored rows the analysis read.\n"
                    "# TYPE pacerd_analysis_rows_total counter\npacerd_analysis_rows_total %llu\n"
                    "# HELP pacerd_analysis_behind_rows Rows stored and not yet read by the analysis, after its last cycle.\n"
                    "# TYPE pacerd_analysis_behind_rows gauge\npacerd_analysis_behind_rows %lld\n"
                    "# HELP pacerd_analysis_cycle_seconds The last cycle's time.\n"
                    "# TYPE pacerd_analysis_cycle_seconds gauge\npacerd_analysis_cycle_seconds %.6f\n"
                    "# HELP pacerd_issue_transitions_total Deliveries queued for transitions of issues.\n"
                    "# TYPE pacerd_issue_transitions_total counter\npacerd_issue_transitions_total %llu\n",
                    (unsigned long long)as->cycles, (unsigned long long)as->failures, (unsigned long long)as->rows,
                    (long long)as->behind, as->last_cycle_s, (unsigned long long)as->transitions);
        static const char *const st[4] = {"new", "ongoing", "resolved", "regressed"};
        jbuf_puts(b, "# HELP pacerd_issues Issues by status, all apps, after the last cycle.\n# TYPE pacerd_issues gauge\n");
        for (int k = 0; k < 4; k++)
            jbuf_printf(b, "pacerd_issues{status=\"%s\"} %lld\n", st[k], (long long)as->issues[k]);
    }
    const deliver_stats *ds = src->deliveries;
    if (ds)
        jbuf_printf(b,
                    "# HELP pacerd_deliveries_total Deliveries to webhooks and the issue tracker: delivered, "
                    "attempts that failed (tried again), given up.\n# TYPE pacerd_deliveries_total counter\n"
                    "pacerd_deliveries_total{result=\"delivered\"} %llu\n"
                    "pacerd_deliveries_total{result=\"retried\"} %llu\n"
                    "pacerd_deliveries_total{result=\"given_up\"} %llu\n",
                    (unsigned long long)ds->delivered, (unsigned long long)ds->attempts_failed,
                    (unsigned long long)ds->given_up);
}

void metrics_render(server_metrics *m, jbuf *b, const metrics_sources *src)
{
    const http_stats *hs = src->http;
    const store_stats *ss = src->store;
    const store_health *h = src->health;
    server_metrics c;
    pthread_mutex_lock(&m->lock);
    c = *m;
    pthread_mutex_unlock(&m->lock);

    help(b, "pacerd_http_requests_total", "counter", "Requests answered, by route and status code.");
    for (size_t r = 0; r < ROUTE_COUNT; r++)
        for (size_t s = 0; s < METRICS_STATUSES; s++) {
            if (!c.requests[r][s])
                continue;
            char code[8] = "other";
            if (s < METRICS_STATUSES - 1)
                snprintf(code, sizeof code, "%u", statuses[s]);
            jbuf_printf(b, "pacerd_http_requests_total{route=\"%s\",code=\"%s\"} %llu\n", route_names[r], code,
                        (unsigned long long)c.requests[r][s]);
        }
    help(b, "pacerd_rejects_total", "counter", "Clients turned away, by reason.");
    for (size_t i = 0; i < HTTP_REJ_COUNT; i++)
        jbuf_printf(b, "pacerd_rejects_total{reason=\"%s\"} %llu\n", http_reject_names[i],
                    (unsigned long long)hs->rejects[i]);
    for (size_t i = 0; i < MREJ_COUNT; i++)
        jbuf_printf(b, "pacerd_rejects_total{reason=\"%s\"} %llu\n", reject_names[i],
                    (unsigned long long)c.rejects[i]);

    static const char *const signals[3] = {"traces", "logs", "metrics"};
    help(b, "pacerd_ingest_records_total", "counter", "Records stored by ingest: spans, log records, data points.");
    for (size_t i = 0; i < 3; i++)
        jbuf_printf(b, "pacerd_ingest_records_total{signal=\"%s\"} %llu\n", signals[i],
                    (unsigned long long)c.records[i]);
    int64_t now_s = mono_ns() / 1000000000LL;
    uint64_t spans = 0;
    for (size_t i = 0; i < METRICS_WINDOW_S; i++)
        if (c.window_s[i] < now_s && c.window_s[i] >= now_s - METRICS_WINDOW_S)
            spans += c.window_spans[i];
    gauge(b, "pacerd_ingest_spans_per_second", "Spans stored per second over the last 10 whole seconds.",
          (double)spans / METRICS_WINDOW_S);

    const grpc_stats *gs = src->grpc;
    if (gs) {
        static const char *const codes[GRPC_CODE_COUNT] = {
            "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
            "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
            "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
        help(b, "pacerd_grpc_calls_total", "counter", "OTLP/gRPC calls answered, by grpc-status.");
        for (size_t i = 0; i < GRPC_CODE_COUNT; i++)
            if (gs->calls[i])
                jbuf_printf(b, "pacerd_grpc_calls_total{code=\"%s\"} %llu\n", codes[i],
                            (unsigned long long)gs->calls[i]);
        help(b, "pacerd_grpc_rejects_total", "counter", "OTLP/gRPC clients and calls turned away by the gRPC layer, by reason.");
        for (size_t i = 0; i < GRPC_REJ_COUNT; i++)
            jbuf_printf(b, "pacerd_grpc_rejects_total{reason=\"%s\"} %llu\n", grpc_reject_names[i],
                        (unsigned long long)gs->rejects[i]);
        help(b, "pacerd_grpc_records_total", "counter", "Records the OTLP/gRPC front stored (of pacerd_ingest_records_total).");
        for (size_t i = 0; i < 3; i++)
            jbuf_printf(b, "pacerd_grpc_records_total{signal=\"%s\"} %llu\n", signals[i],
                        (unsigned long long)c.grpc_records[i]);
        gauge(b, "pacerd_grpc_connections", "Open OTLP/gRPC connections.", gs->connections_open);
        counter(b, "pacerd_grpc_connections_total", "OTLP/gRPC connections accepted.", gs->connections_total);
        gauge(b, "pacerd_grpc_message_bytes_in_flight", "Bytes of OTLP/gRPC calls held in memory: their messages, streams and kept headers.",
              (double)gs->bytes_in_flight);
        gauge(b, "pacerd_grpc_calls_queued", "OTLP/gRPC calls waiting for a worker.", (double)gs->queued);
    }

    gauge(b, "pacerd_http_connections", "Open connections.", hs->connections_open);
    counter(b, "pacerd_http_connections_total", "Connections accepted.", hs->connections_total);
    counter(b, "pacerd_http_idle_closed_total", "Keep-alive connections closed for being idle.", hs->idle_closed);
    gauge(b, "pacerd_http_requests_admitted", "Requests past admission and not yet answered.", (double)hs->admitted);
    gauge(b, "pacerd_http_requests_queued", "Requests waiting for a worker.", (double)hs->queued);
    gauge(b, "pacerd_http_requests_running", "Requests a worker is handling.", (double)hs->running);
    gauge(b, "pacerd_http_workers", "Worker threads.", (double)hs->workers);
    gauge(b, "pacerd_http_body_bytes_in_flight", "Bytes of request bodies held in memory.",
          (double)hs->body_bytes_in_flight);
    gauge(b, "pacerd_http_handler_average_seconds", "A worker's time per request (moving average).",
          hs->service_s);
    histogram(b, "pacerd_http_queue_wait_seconds", "Time an admitted request waited for a worker.",
              &hs->queue_wait);
    histogram(b, "pacerd_http_handler_seconds", "Time a worker spent on a request.", &hs->handler_time);

    gauge(b, "pacerd_store_up", "1 when an ingest batch can commit (what /healthz says), else 0.",
          h->fault == STORE_OK);
    help(b, "pacerd_store_state", "gauge", "1 for the store's present state.");
    for (size_t i = 0; i < STORE_FAULT_COUNT; i++)
        jbuf_printf(b, "pacerd_store_state{state=\"%s\"} %d\n", fault_names[i], h->fault == (enum store_fault)i);
    counter(b, "pacerd_store_transactions_total", "Write transactions (committed or failed).", ss->transactions);
    counter(b, "pacerd_store_transaction_failures_total", "Write transactions that failed.",
            ss->transaction_failures);
    counter(b, "pacerd_store_read_failures_total", "Reads that failed.", ss->read_failures);
    help(b, "pacerd_store_failures_total", "counter", "Failed transactions and reads, by cause.");
    for (size_t i = 1; i < STORE_FAULT_COUNT; i++)
        jbuf_printf(b, "pacerd_store_failures_total{cause=\"%s\"} %llu\n", fault_names[i],
                    (unsigned long long)ss->failures[i]);
    help(b, "pacerd_store_rows_total", "counter", "Rows committed, by table.");
    for (size_t t = 0; t < TABLE_COUNT; t++)
        jbuf_printf(b, "pacerd_store_rows_total{table=\"%s\"} %llu\n", store_layout_table((enum store_table)t)->name,
                    (unsigned long long)ss->rows[t]);
    counter(b, "pacerd_store_duplicate_batches_total", "Batches received again and not stored twice.",
            ss->duplicates);
    histogram(b, "pacerd_store_transaction_seconds", "A write transaction, BEGIN to COMMIT.", &ss->transaction);
    histogram(b, "pacerd_store_submit_seconds", "An ingest request's wait for its commit (queue and transaction).",
              &ss->submit);
    gauge(b, "pacerd_store_queued_records", "Records waiting for the writer.", (double)ss->queued_items);
    help(b, "pacerd_store_file_bytes", "gauge", "Size of the database and of its write-ahead log.");
    jbuf_printf(b, "pacerd_store_file_bytes{file=\"db\"} %lld\n", (long long)ss->db_bytes);
    jbuf_printf(b, "pacerd_store_file_bytes{file=\"wal\"} %lld\n", (long long)ss->wal_bytes);
    gauge(b, "pacerd_store_disk_free_bytes", "Free space on the database's file system (for unprivileged users).",
          (double)ss->disk_free_bytes);

    gauge(b, "pacerd_auth_keys", "Ingest keys loaded.", (double)src->n_keys);
    help(b, "pacerd_auth_reloads_total", "counter", "Reloads of the admin token and keys files (SIGHUP).");
    jbuf_printf(b, "pacerd_auth_reloads_total{result=\"ok\"} %llu\n", (unsigned long long)c.reloads);
    jbuf_printf(b, "pacerd_auth_reloads_total{result=\"failed\"} %llu\n", (unsigned long long)c.reload_failures);
    gauge(b, "pacerd_process_resident_bytes", "Resident memory of pacerd.", resident_bytes());
    gauge(b, "pacerd_process_uptime_seconds", "Seconds since pacerd started.",
          (double)(mono_ns() - c.started_ns) / 1e9);
    render_analysis(b, src);
}
