/* Inside the HTTP layer (http.h): the connection table with its deadlines
 * (http_conn.c) and the worker pool with its admission (http_pool.c),
 * used by http.c. */
#ifndef PACER_SERVER_HTTP_INT_H
#define PACER_SERVER_HTTP_INT_H

#include "http.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* Counts a reject (any thread). */
static inline void rejects_add(uint64_t *rejects, enum http_reject why)
{
    __atomic_fetch_add(&rejects[why], 1, __ATOMIC_RELAXED);
}

/* ---- connections (http_conn.c) ----
 *
 * One entry per open connection, from libmicrohttpd's "started" to its
 * "closed" notification (the socket is closed only after the latter, so
 * an entry's fd is the connection's as long as the entry exists). The
 * phase says which deadline runs; a reaper thread shuts down the socket
 * of a connection past its deadline, and libmicrohttpd then closes it. */
enum conn_phase {
    PH_HEADERS, /* waiting for a request's headers: header_timeout */
    PH_BODY,    /* reading the body: body_timeout */
    PH_SERVER,  /* the server's turn: no deadline */
    PH_SENDING, /* the answer is going out: body_timeout */
    PH_IDLE,    /* keep-alive between requests: idle_timeout */
};

typedef struct addr_slot addr_slot;

typedef struct conn {
    struct conn *prev, *next;
    addr_slot *addr;
    int fd;
    enum conn_phase phase;
    int64_t deadline_ns; /* mono; 0: none */
    bool closing;        /* its socket was shut down */
    bool in_request;     /* a request line arrived and its answer is not sent yet */
} conn;

#define ADDR_BUCKETS 1024

typedef struct conn_table {
    pthread_mutex_t lock;
    conn *head;
    unsigned n, max, max_per_address;
    addr_slot *buckets[ADDR_BUCKETS];
    int64_t header_ns, body_ns, idle_ns;
    uint64_t total, idle_closed;
    uint64_t *rejects; /* the server's counters */
    pthread_t reaper;
    pthread_cond_t wake;
    bool stopping, reaping;
} conn_table;

int http_conn_init(conn_table *t, const http_options *o, uint64_t *rejects);
/* Stops the reaper; the entries must be gone (libmicrohttpd stopped). */
void http_conn_destroy(conn_table *t);
/* At accept: whether the address may open another connection. */
bool http_conn_admit(conn_table *t, const struct sockaddr *addr, socklen_t len);
/* Started: a new entry in PH_HEADERS. NULL when out of memory (the
 * connection is then shut down at once). */
conn *http_conn_add(conn_table *t, int fd, const struct sockaddr *addr);
void http_conn_remove(conn_table *t, conn *c);
/* The address key of c's client (IPv4 mapped, or the IPv6 /64); zeros
 * when c is NULL. */
void http_conn_client_key(const conn *c, unsigned char key[16]);
/* Moves c (NULL: nothing) to phase p, with that phase's deadline counted
 * from now. */
void http_conn_phase(conn_table *t, conn *c, enum conn_phase p);
/* A request line arrived on c: it is inside a request; on a keep-alive
 * connection its headers are due header_timeout from now, on a new one the
 * deadline counted from the connection stays. */
void http_conn_request_line(conn_table *t, conn *c);
/* Connections inside a request (request line seen, answer not sent). */
unsigned http_conn_busy(conn_table *t);

/* ---- workers and admission (http_pool.c) ---- */

typedef struct pool_item {
    struct pool_item *next;
    int64_t queued_ns; /* mono */
} pool_item;

/* Runs one request on a worker; shed: it waited too long and must only
 * be answered 429 with retry_after_s. */
typedef void (*pool_run_fn)(pool_item *it, bool shed, unsigned retry_after_s);

typedef struct pool {
    pthread_mutex_t lock;
    pthread_cond_t work, idle;
    pool_item *head, *tail;
    size_t queued, running, admitted, n_workers, started;
    pthread_t *threads;
    bool stopping;
    double service_ns; /* moving average of a handler's time */
    int64_t max_wait_ns;
    size_t body_bytes, max_body_bytes;
    latency wait, handler;
    pool_run_fn run;
} pool;

int http_pool_start(pool *p, size_t workers, unsigned max_wait_ms, size_t max_body_bytes, pool_run_fn run);
/* Finishes the running requests, answers the queued ones shed, joins the
 * workers. */
void http_pool_stop(pool *p);

/* Admission of a request whose body is about to be read: 0 (then
 * http_pool_unadmit when it ends), or -EAGAIN with the seconds to wait. */
int http_pool_admit(pool *p, unsigned *ret_retry_s);
void http_pool_unadmit(pool *p);
/* Body bytes in flight: whether n more bytes fit (a look, no
 * reservation), take, give back. */
bool http_pool_body_fits(pool *p, size_t n);
bool http_pool_body_take(pool *p, size_t n);
void http_pool_body_give(pool *p, size_t n);
/* Queues an admitted request whose body is complete. */
void http_pool_push(pool *p, pool_item *it);
/* Waits until no request is admitted, at most until deadline_ns (mono).
 * Returns how many still are. */
size_t http_pool_wait_idle(pool *p, int64_t deadline_ns);

#endif
