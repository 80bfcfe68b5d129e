/* Connections: limits per address and in all, deadlines (http_int.h).
 *
 * An address is its IPv4 address, or the /64 prefix of an IPv6 one (one
 * client's network); an IPv4-mapped IPv6 address counts as the IPv4 one.
 * The counts are checked at accept and changed at "started" / "closed":
 * libmicrohttpd's threads accept in parallel, so a limit can be passed by
 * at most one connection per thread.
 *
 * The reaper wakes every REAP_MS and shuts down (shutdown(2), both ways)
 * the socket of every connection past its deadline. libmicrohttpd sees
 * the end of the stream on its next read and closes the connection; its
 * "closed" notification removes the entry under the table's lock, which
 * the reaper holds while it shuts a socket down, so the fd it shuts down
 * is never one reused by another connection.
 */
#include "http_int.h"

#include <pacer/base/clock.h>
#include <pacer/base/hash.h>
#include <pacer/base/thread.h>

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define REAP_MS 200

struct addr_slot {
    struct addr_slot *next;
    unsigned char key[16];
    unsigned count;
};

static void addr_key(const struct sockaddr *sa, unsigned char key[16])
{
    memset(key, 0, 16);
    if (!sa)
        return;
    if (sa->sa_family == AF_INET) {
        memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        key[10] = key[11] = 0xff;
    } else if (sa->sa_family == AF_INET6) {
        const unsigned char *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(a, mapped, 12) == 0)
            memcpy(key, a, 16);
        else
            memcpy(key, a, 8); /* the /64 */
    }
}

void http_conn_client_key(const conn *c, unsigned char key[16])
{
    if (c && c->addr)
        memcpy(key, c->addr->key, 16);
    else
        memset(key, 0, 16);
}

static addr_slot **addr_find(conn_table *t, const unsigned char key[16])
{
    addr_slot **s = &t->buckets[fnv1a64(FNV1A64_INIT, key, 16) % ADDR_BUCKETS];
    while (*s && memcmp((*s)->key, key, 16) != 0)
        s = &(*s)->next;
    return s;
}

static int64_t phase_timeout(const conn_table *t, enum conn_phase p)
{
    switch (p) {
    case PH_HEADERS: return t->header_ns;
    case PH_BODY:
    case PH_SENDING: return t->body_ns;
    case PH_IDLE: return t->idle_ns;
    case PH_SERVER: return 0;
    }
    return 0;
}

static void *reaper_main(void *arg)
{
    conn_table *t = arg;
    pthread_mutex_lock(&t->lock);
    while (!t->stopping) {
        int64_t now = mono_ns();
        for (conn *c = t->head; c; c = c->next) {
            if (c->closing || !c->deadline_ns || now < c->deadline_ns)
                continue;
            c->closing = true;
            shutdown(c->fd, SHUT_RDWR);
            switch (c->phase) {
            case PH_HEADERS: rejects_add(t->rejects, HTTP_REJ_HEADER_TIMEOUT); break;
            case PH_BODY: rejects_add(t->rejects, HTTP_REJ_BODY_TIMEOUT); break;
            case PH_SENDING: rejects_add(t->rejects, HTTP_REJ_SEND_TIMEOUT); break;
            case PH_IDLE: t->idle_closed++; break;
            case PH_SERVER: break;
            }
        }
        cond_wait_until(&t->wake, &t->lock, now + REAP_MS * 1000000LL);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

int http_conn_init(conn_table *t, const http_options *o, uint64_t *rejects)
{
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->lock, NULL);
    cond_init_monotonic(&t->wake);
    t->max = o->max_connections;
    t->max_per_address = o->max_per_address;
    t->header_ns = (int64_t)o->header_timeout_s * 1000000000LL;
    t->body_ns = (int64_t)o->body_timeout_s * 1000000000LL;
    t->idle_ns = (int64_t)o->idle_timeout_s * 1000000000LL;
    t->rejects = rejects;
    int r = thread_start(&t->reaper, "pacerd-reaper", reaper_main, t);
    if (r < 0) {
        pthread_cond_destroy(&t->wake);
        pthread_mutex_destroy(&t->lock);
        return r;
    }
    t->reaping = true;
    return 0;
}

void http_conn_destroy(conn_table *t)
{
    if (t->reaping) {
        pthread_mutex_lock(&t->lock);
        t->stopping = true;
        pthread_cond_signal(&t->wake);
        pthread_mutex_unlock(&t->lock);
        pthread_join(t->reaper, NULL);
    }
    for (size_t b = 0; b < ADDR_BUCKETS; b++)
        while (t->buckets[b]) {
            addr_slot *s = t->buckets[b];
            t->buckets[b] = s->next;
            free(s);
        }
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->lock);
}

bool http_conn_admit(conn_table *t, const struct sockaddr *addr, socklen_t len)
{
    unsigned char key[16];
    addr_key(len ? addr : NULL, key);
    pthread_mutex_lock(&t->lock);
    enum http_reject why = HTTP_REJ_COUNT;
    if (t->n >= t->max) {
        why = HTTP_REJ_CONNECTIONS;
    } else {
        addr_slot *s = *addr_find(t, key);
        if (s && s->count >= t->max_per_address)
            why = HTTP_REJ_PER_ADDRESS;
    }
    pthread_mutex_unlock(&t->lock);
    if (why == HTTP_REJ_COUNT)
        return true;
    rejects_add(t->rejects, why);
    return false;
}

conn *http_conn_add(conn_table *t, int fd, const struct sockaddr *addr)
{
    conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    unsigned char key[16];
    addr_key(addr, key);
    c->fd = fd;
    pthread_mutex_lock(&t->lock);
    addr_slot **s = addr_find(t, key);
    if (!*s && (*s = calloc(1, sizeof **s)))
        memcpy((*s)->key, key, 16);
    if (!*s) {
        pthread_mutex_unlock(&t->lock);
        free(c);
        return NULL;
    }
    c->addr = *s;
    c->addr->count++;
    c->phase = PH_HEADERS;
    c->deadline_ns = mono_ns() + t->header_ns;
    c->next = t->head;
    if (t->head)
        t->head->prev = c;
    t->head = c;
    t->n++;
    t->total++;
    pthread_mutex_unlock(&t->lock);
    return c;
}

void http_conn_remove(conn_table *t, conn *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&t->lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        t->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    t->n--;
    if (--c->addr->count == 0) {
        addr_slot **s = addr_find(t, c->addr->key);
        *s = c->addr->next;
        free(c->addr);
    }
    pthread_mutex_unlock(&t->lock);
    free(c);
}

void http_conn_phase(conn_table *t, conn *c, enum conn_phase p)
{
    if (!c)
        return;
    int64_t timeout = phase_timeout(t, p);
    int64_t deadline = timeout ? mono_ns() + timeout : 0;
    pthread_mutex_lock(&t->lock);
    c->phase = p;
    c->deadline_ns = deadline;
    c->in_request = p != PH_IDLE;
    pthread_mutex_unlock(&t->lock);
}

void http_conn_request_line(conn_table *t, conn *c)
{
    if (!c)
        return;
    int64_t deadline = mono_ns() + t->header_ns;
    pthread_mutex_lock(&t->lock);
    if (c->phase == PH_IDLE) {
        c->phase = PH_HEADERS;
        c->deadline_ns = deadline;
    }
    c->in_request = true;
    pthread_mutex_unlock(&t->lock);
}

unsigned http_conn_busy(conn_table *t)
{
    unsigned n = 0;
    pthread_mutex_lock(&t->lock);
    for (conn *c = t->head; c; c = c->next)
        n += c->in_request && !c->closing;
    pthread_mutex_unlock(&t->lock);
    return n;
}
