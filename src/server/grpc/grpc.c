/* The OTLP/gRPC front's server (grpc.h): one I/O thread runs every
 * connection's HTTP/2 session (libnghttp2, fed from memory: what it
 * reads is handed to nghttp2_session_mem_recv, what it has to send is
 * taken from nghttp2_session_mem_send and written as the socket takes
 * it), TLS through GnuTLS on the same non-blocking sockets; workers run
 * the application's handler on a call's message and hand the answer back
 * through an eventfd. A call (a stream) belongs to the I/O thread except
 * while a worker has it; a stream whose connection goes meanwhile is left
 * to the worker and freed when its answer comes back.
 */
#include "grpc.h"
#include "grpc_frame.h"
#include "ingest/gunzip.h"

#include <pacer/base/clock.h>

#include <nghttp2/nghttp2.h>
#include <gnutls/gnutls.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_PATH 256
#define ADDR_BUCKETS 1024
#define READ_CHUNK 65536

const char *const grpc_reject_names[GRPC_REJ_COUNT] = {
    "connections", "per_address", "timeout", "protocol", "flood", "headers", "too_large", "overload", "draining",
};

typedef struct conn conn;

enum phase {
    S_HEADERS, /* its headers are being read */
    S_BODY,    /* taken: its message is being read */
    S_REFUSED, /* answered before its end: what more it sends is dropped */
    S_WORKER,  /* queued for or run by a worker */
    S_ANSWER,  /* the answer is going out */
};

typedef struct stream {
    struct stream *prev, *next; /* the connection's streams */
    struct stream *qnext;       /* the workers' queue, the answers' list */
    conn *c;                    /* NULL: the connection went while a worker had it */
    int32_t id;
    enum phase phase;
    int64_t deadline_ns;
    size_t header_bytes;
    size_t kept; /* the stream and its kept header values, counted in bytes_in_flight */
    char *method, *path, *content_type, *encoding, *timeout, *auth, *batch_id;
    bool preflighted, counted; /* counted: among the admitted calls */
    grpc_call call;
    uint8_t *buf; /* the request's DATA */
    size_t len, cap, held;
    grpc_reply reply;
    uint8_t *out; /* the response message with its prefix */
    size_t out_len, out_off;
} stream;

struct conn {
    struct conn *prev, *next;
    int fd;
    unsigned char key[16];
    nghttp2_session *h2;
    gnutls_session_t tls;
    bool handshaken, closing, want_out;
    bool lingering; /* the session is over and its last bytes sent: reading what comes until EOF or the deadline */
    stream *streams;
    unsigned n_streams;
    int64_t deadline_ns;  /* the connection's own: handshake and preface, or idle */
    int64_t blocked_ns;   /* since when the client takes no bytes (0: it does) */
    const uint8_t *pend;  /* bytes nghttp2 gave that the socket has not taken */
    size_t pend_len;
    int64_t ctl_second;   /* counting control frames in this mono second */
    unsigned ctl_count;
};

typedef struct addr_slot {
    struct addr_slot *next;
    unsigned char key[16];
    unsigned n;
} addr_slot;

struct grpc_server {
    grpc_options o;
    grpc_app app;
    int listen_fd, epfd, evfd;
    uint16_t port;
    gnutls_certificate_credentials_t cred;
    gnutls_priority_t prio;
    nghttp2_session_callbacks *cbs;
    nghttp2_option *h2opt;
    pthread_t io;
    bool io_started;
    conn *conns;
    addr_slot *addrs[ADDR_BUCKETS];
    /* the workers' queue and the answers coming back: under lock */
    pthread_mutex_t lock;
    pthread_cond_t work, idle;
    stream *q_head, *q_tail, *done_head;
    size_t queued;
    size_t admitted; /* calls queued, run or answered, not yet sent */
    pthread_t *workers;
    unsigned n_workers;
    bool stopping, draining, drain_started; /* drain_started: GOAWAY sent, the calls not admitted answered */
    grpc_options next; /* under lock: limits grpc_set_limits gave, for the I/O thread to take */
    bool next_set;
    /* figures: atomics */
    grpc_stats st;
};

static void count(grpc_server *s, enum grpc_reject why)
{
    __atomic_fetch_add(&s->st.rejects[why], 1, __ATOMIC_RELAXED);
}

void grpc_reply_set(grpc_reply *r, enum grpc_code code, const char *fmt, ...)
{
    r->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
}

/* ---- addresses ---- */

static void addr_key(const struct sockaddr_storage *sa, unsigned char key[16])
{
    memset(key, 0, 16);
    if (sa->ss_family == AF_INET) {
        key[10] = key[11] = 0xff;
        memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->ss_family == AF_INET6) {
        memcpy(key, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        if (!(memcmp(key, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0))
            memset(key + 8, 0, 8); /* a /64 is one address */
    }
}

static addr_slot **addr_find(grpc_server *s, const unsigned char key[16])
{
    unsigned h = 2166136261u;
    for (int i = 0; i < 16; i++)
        h = (h ^ key[i]) * 16777619u;
    addr_slot **p = &s->addrs[h % ADDR_BUCKETS];
    while (*p && memcmp((*p)->key, key, 16) != 0)
        p = &(*p)->next;
    return p;
}

static void addr_drop(grpc_server *s, const unsigned char key[16])
{
    addr_slot **p = addr_find(s, key);
    if (*p && --(*p)->n == 0) {
        addr_slot *a = *p;
        *p = a->next;
        free(a);
    }
}

/* ---- streams ---- */

/* Counts n more bytes in flight; false, and nothing counted, when that
 * would pass --max-inflight-bytes. */
static bool hold(grpc_server *s, size_t n)
{
    size_t now = __atomic_add_fetch(&s->st.bytes_in_flight, n, __ATOMIC_RELAXED);
    if (now <= s->o.max_bytes_in_flight)
        return true;
    __atomic_fetch_sub(&s->st.bytes_in_flight, n, __ATOMIC_RELAXED);
    return false;
}

static void stream_free(grpc_server *s, stream *st)
{
    if (st->preflighted && s->app.release)
        s->app.release(s->app.ctx, &st->call);
    __atomic_fetch_sub(&s->st.bytes_in_flight, st->held + st->kept, __ATOMIC_RELAXED);
    free(st->method);
    free(st->path);
    free(st->content_type);
    free(st->encoding);
    free(st->timeout);
    free(st->auth);
    free(st->batch_id);
    free(st->buf);
    free(st->reply.body);
    free(st->out);
    free(st);
}

static void unlink_stream(stream *st)
{
    conn *c = st->c;
    if (st->prev)
        st->prev->next = st->next;
    else
        c->streams = st->next;
    if (st->next)
        st->next->prev = st->prev;
    c->n_streams--;
    if (!c->n_streams)
        c->deadline_ns = 0; /* set again by the loop: idle */
    st->c = NULL;
}

/* The call is answered and sent (or gone): no longer admitted. */
static void unadmit(grpc_server *s, stream *st)
{
    if (!st->counted)
        return;
    st->counted = false;
    pthread_mutex_lock(&s->lock);
    s->admitted--;
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->lock);
}

/* ---- answers ---- */

static ssize_t read_out(nghttp2_session *h2, int32_t id, uint8_t *buf, size_t length, uint32_t *flags,
                        nghttp2_data_source *src, void *user)
{
    (void)user;
    stream *st = src->ptr;
    size_t n = st->out_len - st->out_off;
    if (n > length)
        n = length;
    memcpy(buf, st->out + st->out_off, n);
    st->out_off += n;
    if (st->out_off == st->out_len) {
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        char code[12], msg[sizeof st->reply.message * 3];
        snprintf(code, sizeof code, "%d", st->reply.code);
        grpc_frame_percent(st->reply.message, msg, sizeof msg);
        nghttp2_nv tr[] = {
            {(uint8_t *)"grpc-status", (uint8_t *)code, 11, strlen(code), NGHTTP2_NV_FLAG_NONE},
            {(uint8_t *)"grpc-message", (uint8_t *)msg, 12, strlen(msg), NGHTTP2_NV_FLAG_NONE},
        };
        if (nghttp2_submit_trailer(h2, id, tr, msg[0] ? 2 : 1) != 0)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return (ssize_t)n;
}

#define NV(n, v) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE}

/* Answers st with its reply: OK with a message, else Trailers-Only. */
static void answer(grpc_server *s, stream *st)
{
    conn *c = st->c;
    grpc_reply *r = &st->reply;
    __atomic_fetch_add(&s->st.calls[r->code < GRPC_CODE_COUNT ? r->code : GRPC_UNKNOWN], 1, __ATOMIC_RELAXED);
    if (s->app.done)
        s->app.done(s->app.ctx, &st->call, r);
    st->phase = S_ANSWER;
    st->deadline_ns = mono_ns() + (int64_t)s->o.body_timeout_s * 1000000000LL;
    if (r->code == GRPC_OK) {
        st->out_len = 5 + r->len;
        st->out = malloc(st->out_len);
        if (st->out) {
            grpc_frame_prefix(st->out, r->len);
            if (r->len)
                memcpy(st->out + 5, r->body, r->len);
            nghttp2_nv h[] = {NV(":status", "200"), NV("content-type", "application/grpc")};
            nghttp2_data_provider prd = {.source.ptr = st, .read_callback = read_out};
            if (nghttp2_submit_response(c->h2, st->id, h, 2, &prd) == 0)
                return;
        }
        grpc_reply_set(r, GRPC_UNAVAILABLE, "out of memory");
        r->retry_after = 1;
    }
    char code[12], msg[sizeof r->message * 3];
    snprintf(code, sizeof code, "%d", r->code);
    grpc_frame_percent(r->message, msg, sizeof msg);
    char *details = r->retry_after ? grpc_frame_status_details(r->code, r->message, r->retry_after) : NULL;
    nghttp2_nv h[5] = {NV(":status", "200"), NV("content-type", "application/grpc"), NV("grpc-status", code)};
    size_t n = 3;
    if (msg[0])
        h[n++] = (nghttp2_nv)NV("grpc-message", msg);
    if (details)
        h[n++] = (nghttp2_nv)NV("grpc-status-details-bin", details);
    if (nghttp2_submit_response(c->h2, st->id, h, n, NULL) != 0)
        nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
    free(details);
}

/* Refuses st before its end (Trailers-Only); what it still sends is
 * dropped. */
static void refuse(grpc_server *s, stream *st, enum grpc_code code, unsigned retry, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void refuse(grpc_server *s, stream *st, enum grpc_code code, unsigned retry, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    st->reply.code = code;
    vsnprintf(st->reply.message, sizeof st->reply.message, fmt, ap);
    va_end(ap);
    st->reply.retry_after = retry;
    free(st->buf);
    st->buf = NULL;
    __atomic_fetch_sub(&s->st.bytes_in_flight, st->held, __ATOMIC_RELAXED);
    st->held = st->len = st->cap = 0;
    answer(s, st);
    if (st->phase == S_ANSWER)
        st->phase = S_REFUSED;
}

/* An HTTP answer without gRPC (not a gRPC request at all). */
static void http_refuse(stream *st, const char *status)
{
    nghttp2_nv h[] = {NV(":status", status)};
    nghttp2_submit_response(st->c->h2, st->id, h, 1, NULL);
    st->phase = S_REFUSED;
}

/* ---- the workers ---- */

static void run(grpc_server *s, stream *st)
{
    grpc_reply *r = &st->reply;
    bool compressed = false;
    const uint8_t *msg;
    size_t len;
    char err[256];
    int e = grpc_frame_message(st->buf, st->len, s->o.max_message, &compressed, &msg, &len, err, sizeof err);
    if (e == -EFBIG) {
        count(s, GRPC_REJ_TOO_LARGE);
        grpc_reply_set(r, GRPC_RESOURCE_EXHAUSTED, "%s", err);
        return;
    }
    if (e < 0) {
        grpc_reply_set(r, GRPC_INTERNAL, "%s", err);
        return;
    }
    bool gzip = st->encoding && strcmp(st->encoding, "gzip") == 0;
    if (compressed && !gzip) {
        grpc_reply_set(r, GRPC_INTERNAL, "the message is flagged compressed but grpc-encoding is %s",
                       st->encoding ? st->encoding : "not sent");
        return;
    }
    char *inflated = NULL;
    if (compressed) {
        e = gunzip(msg, len, s->o.max_message, &inflated, &len, err, sizeof err);
        if (e == -EFBIG) {
            count(s, GRPC_REJ_TOO_LARGE);
            grpc_reply_set(r, GRPC_RESOURCE_EXHAUSTED, "the message inflates past the limit of %zu bytes",
                           s->o.max_message);
            return;
        }
        if (e == -ENOMEM) {
            grpc_reply_set(r, GRPC_UNAVAILABLE, "out of memory");
            r->retry_after = 1;
            return;
        }
        if (e < 0) {
            grpc_reply_set(r, GRPC_INTERNAL, "grpc-encoding gzip: %s", err);
            return;
        }
        msg = (const uint8_t *)inflated;
    }
    s->app.handle(s->app.ctx, &st->call, msg, len, r);
    free(inflated);
}

static void *worker(void *arg)
{
    grpc_server *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->q_head && !s->stopping)
            pthread_cond_wait(&s->work, &s->lock);
        if (!s->q_head)
            break;
        stream *st = s->q_head;
        s->q_head = st->qnext;
        if (!s->q_head)
            s->q_tail = NULL;
        s->queued--;
        __atomic_store_n(&s->st.queued, s->queued, __ATOMIC_RELAXED);
        bool gone = st->c == NULL, stopping = s->stopping;
        pthread_mutex_unlock(&s->lock);
        if (stopping && !gone) {
            grpc_reply_set(&st->reply, GRPC_UNAVAILABLE, "pacerd is shutting down: retry");
            st->reply.retry_after = 1;
        } else if (!gone) {
            run(s, st);
        }
        pthread_mutex_lock(&s->lock);
        st->qnext = s->done_head;
        s->done_head = st;
        uint64_t one = 1;
        if (write(s->evfd, &one, sizeof one) < 0) {
            /* the counter is non-zero already: the I/O thread will look */
        }
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* The message is complete: to a worker, or refused when the queue is full. */
static void dispatch(grpc_server *s, stream *st)
{
    pthread_mutex_lock(&s->lock);
    if (s->queued >= s->o.max_queue) {
        pthread_mutex_unlock(&s->lock);
        count(s, GRPC_REJ_OVERLOAD);
        refuse(s, st, GRPC_RESOURCE_EXHAUSTED, 1, "pacerd is busy: retry after 1 s");
        return;
    }
    st->phase = S_WORKER;
    st->counted = true;
    s->admitted++;
    st->qnext = NULL;
    if (s->q_tail)
        s->q_tail->qnext = st;
    else
        s->q_head = st;
    s->q_tail = st;
    s->queued++;
    __atomic_store_n(&s->st.queued, s->queued, __ATOMIC_RELAXED);
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->lock);
}

/* The answers the workers made. */
static void take_answers(grpc_server *s)
{
    uint64_t v;
    if (read(s->evfd, &v, sizeof v) < 0) {
        /* nothing: EAGAIN */
    }
    pthread_mutex_lock(&s->lock);
    stream *list = s->done_head;
    s->done_head = NULL;
    pthread_mutex_unlock(&s->lock);
    while (list) {
        stream *st = list;
        list = st->qnext;
        free(st->buf); /* the message is used */
        st->buf = NULL;
        __atomic_fetch_sub(&s->st.bytes_in_flight, st->held, __ATOMIC_RELAXED);
        st->held = st->len = st->cap = 0;
        if (!st->c) {
            /* its connection went: counted as cancelled, done with */
            grpc_reply_set(&st->reply, GRPC_CANCELLED, "the connection closed");
            if (s->app.done)
                s->app.done(s->app.ctx, &st->call, &st->reply);
            unadmit(s, st);
            stream_free(s, st);
            continue;
        }
        answer(s, st); /* admitted until the stream closes: its answer is sent */
    }
}

/* ---- HTTP/2 callbacks ---- */

/* set by the I/O thread before a session runs: the server of the callbacks */
static __thread grpc_server *current;

static char *copy(const uint8_t *v, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, v, n);
        p[n] = 0;
    }
    return p;
}

static int on_begin_headers(nghttp2_session *h2, const nghttp2_frame *f, void *user)
{
    conn *c = user;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    /* A stream and the header values it keeps count among the bytes in
     * flight like messages do, so that streams opened by every connection
     * allowed are bounded in all, not only per connection. */
    if (!hold(current, sizeof(stream))) {
        count(current, GRPC_REJ_OVERLOAD);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* the stream is reset */
    }
    stream *st = calloc(1, sizeof *st);
    if (!st) {
        __atomic_fetch_sub(&current->st.bytes_in_flight, sizeof(stream), __ATOMIC_RELAXED);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    st->kept = sizeof(stream);
    st->c = c;
    st->id = f->hd.stream_id;
    /* its header block (CONTINUATION frames included) within header_timeout */
    st->deadline_ns = mono_ns() + (int64_t)current->o.header_timeout_s * 1000000000LL;
    st->next = c->streams;
    if (c->streams)
        c->streams->prev = st;
    c->streams = st;
    c->n_streams++;
    c->deadline_ns = 0;
    nghttp2_session_set_stream_user_data(h2, st->id, st);
    return 0;
}

static int on_header(nghttp2_session *h2, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user)
{
    (void)flags;
    (void)user;
    grpc_server *s = current;
    stream *st = nghttp2_session_get_stream_user_data(h2, f->hd.stream_id);
    if (!st || st->phase != S_HEADERS)
        return 0; /* trailers of a call: ignored */
    st->header_bytes += namelen + valuelen + 32; /* as SETTINGS_MAX_HEADER_LIST_SIZE counts */
    if (st->header_bytes > s->o.max_header_bytes) {
        count(s, GRPC_REJ_HEADERS);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* the stream is reset */
    }
    static const struct {
        const char *name;
        size_t off;
    } kept[] = {
        {":method", offsetof(stream, method)},         {":path", offsetof(stream, path)},
        {"content-type", offsetof(stream, content_type)}, {"grpc-encoding", offsetof(stream, encoding)},
        {"grpc-timeout", offsetof(stream, timeout)},     {"authorization", offsetof(stream, auth)},
        {"x-pacer-batch-id", offsetof(stream, batch_id)},
    };
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        if (strlen(kept[i].name) == namelen && memcmp(kept[i].name, name, namelen) == 0) {
            char **at = (char **)((char *)st + kept[i].off);
            if (*at)
                return 0; /* the first counts */
            if (!hold(s, valuelen + 1)) {
                count(s, GRPC_REJ_OVERLOAD);
                return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
            }
            st->kept += valuelen + 1;
            if (!(*at = copy(value, valuelen)))
                return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
            return 0;
        }
    }
    return 0;
}

/* The headers are in: checked, then the application's preflight. */
static void headers_done(grpc_server *s, stream *st)
{
    st->call.path = st->path ? st->path : "";
    st->call.authorization = st->auth;
    st->call.batch_id = st->batch_id;
    memcpy(st->call.client, st->c->key, 16);
    if (!st->method || strcmp(st->method, "POST") != 0) {
        http_refuse(st, "405");
        return;
    }
    if (!st->content_type || strncmp(st->content_type, "application/grpc", 16) != 0 ||
        (st->content_type[16] && st->content_type[16] != '+' && st->content_type[16] != ';')) {
        http_refuse(st, "415");
        return;
    }
    st->phase = S_BODY;
    st->deadline_ns = mono_ns() + (int64_t)s->o.body_timeout_s * 1000000000LL;
    if (__atomic_load_n(&s->draining, __ATOMIC_ACQUIRE)) {
        count(s, GRPC_REJ_DRAINING);
        refuse(s, st, GRPC_UNAVAILABLE, 1, "pacerd is shutting down: retry");
        return;
    }
    if (st->encoding && strcmp(st->encoding, "gzip") != 0 && strcmp(st->encoding, "identity") != 0) {
        refuse(s, st, GRPC_UNIMPLEMENTED, 0, "grpc-encoding %.40s is not supported: send gzip or identity",
               st->encoding);
        return;
    }
    if (st->timeout) {
        int64_t ns;
        if (grpc_frame_timeout(st->timeout, &ns) < 0) {
            refuse(s, st, GRPC_INTERNAL, 0, "grpc-timeout %.40s: expected 1-8 digits and one of H M S m u n",
                   st->timeout);
            return;
        }
        int64_t now = mono_ns();
        if (ns < st->deadline_ns - now)
            st->deadline_ns = now + ns;
    }
    if (s->app.preflight(s->app.ctx, &st->call, &st->reply) < 0) {
        grpc_reply r = st->reply;
        refuse(s, st, r.code, r.retry_after, "%s", r.message);
        return;
    }
    st->preflighted = true;
}

static void message_done(grpc_server *s, stream *st)
{
    if (st->phase == S_HEADERS) /* headers and END_STREAM in one frame */
        return;
    if (st->phase != S_BODY)
        return;
    dispatch(s, st);
}

static int on_data_chunk(nghttp2_session *h2, uint8_t flags, int32_t id, const uint8_t *data, size_t len, void *user)
{
    (void)flags;
    (void)user;
    grpc_server *s = current;
    stream *st = nghttp2_session_get_stream_user_data(h2, id);
    if (!st || st->phase != S_BODY)
        return 0; /* refused: dropped */
    /* the announced length bounds what is kept, checked as soon as the
     * prefix is in; nothing is allocated from it */
    size_t want = st->len + len;
    size_t limit = s->o.max_message + 5;
    if (st->len >= 5 || want >= 5) {
        uint8_t prefix[5];
        for (int i = 0; i < 5; i++)
            prefix[i] = (size_t)i < st->len ? st->buf[i] : data[i - st->len];
        if (grpc_frame_length(prefix) > s->o.max_message) {
            count(s, GRPC_REJ_TOO_LARGE);
            refuse(s, st, GRPC_RESOURCE_EXHAUSTED, 0, "the message's %u bytes are over the limit of %zu",
                   grpc_frame_length(prefix), s->o.max_message);
            return 0;
        }
        limit = 5 + (size_t)grpc_frame_length(prefix) + 5; /* room to see a second message start */
    }
    if (want > limit) {
        refuse(s, st, GRPC_INTERNAL, 0, "bytes after the message: a unary call carries one");
        return 0;
    }
    if (want > st->cap) {
        size_t cap = st->cap ? st->cap : 4096;
        while (cap < want)
            cap *= 2;
        if (cap > limit)
            cap = limit;
        size_t more = cap - st->cap;
        if (!hold(s, more)) {
            count(s, GRPC_REJ_OVERLOAD);
            refuse(s, st, GRPC_RESOURCE_EXHAUSTED, 1, "pacerd holds too many messages: retry after 1 s");
            return 0;
        }
        uint8_t *p = realloc(st->buf, cap);
        if (!p) {
            __atomic_fetch_sub(&s->st.bytes_in_flight, more, __ATOMIC_RELAXED);
            refuse(s, st, GRPC_UNAVAILABLE, 1, "out of memory");
            return 0;
        }
        st->buf = p;
        st->cap = cap;
        st->held = cap;
    }
    memcpy(st->buf + st->len, data, len);
    st->len += len;
    return 0;
}

/* A control frame from the client: over max_control_frames in a second,
 * the connection ends. */
static bool flood(grpc_server *s, conn *c)
{
    int64_t sec = mono_ns() / 1000000000LL;
    if (sec != c->ctl_second) {
        c->ctl_second = sec;
        c->ctl_count = 0;
    }
    return ++c->ctl_count > s->o.max_control_frames;
}

static int on_frame_recv(nghttp2_session *h2, const nghttp2_frame *f, void *user)
{
    conn *c = user;
    grpc_server *s = current;
    switch (f->hd.type) {
    case NGHTTP2_SETTINGS:
    case NGHTTP2_PING:
    case NGHTTP2_RST_STREAM:
    case NGHTTP2_PRIORITY:
    case NGHTTP2_WINDOW_UPDATE:
        if (flood(s, c)) {
            count(s, GRPC_REJ_FLOOD);
            nghttp2_session_terminate_session(h2, NGHTTP2_ENHANCE_YOUR_CALM);
            c->closing = true;
        }
        return 0;
    case NGHTTP2_HEADERS: {
        stream *st = nghttp2_session_get_stream_user_data(h2, f->hd.stream_id);
        if (!st)
            return 0;
        if (st->phase == S_HEADERS)
            headers_done(s, st);
        if (f->hd.flags & NGHTTP2_FLAG_END_STREAM) {
            if (st->phase == S_BODY)
                message_done(s, st);
        }
        return 0;
    }
    case NGHTTP2_DATA: {
        stream *st = nghttp2_session_get_stream_user_data(h2, f->hd.stream_id);
        if (st && (f->hd.flags & NGHTTP2_FLAG_END_STREAM))
            message_done(s, st);
        else if (f->hd.length == 0 && flood(s, c)) { /* empty DATA frames: a flood too */
            count(s, GRPC_REJ_FLOOD);
            nghttp2_session_terminate_session(h2, NGHTTP2_ENHANCE_YOUR_CALM);
        }
        return 0;
    }
    default: return 0;
    }
}

static int on_stream_close(nghttp2_session *h2, int32_t id, uint32_t error_code, void *user)
{
    (void)error_code;
    (void)user;
    grpc_server *s = current;
    stream *st = nghttp2_session_get_stream_user_data(h2, id);
    if (!st)
        return 0;
    nghttp2_session_set_stream_user_data(h2, id, NULL);
    pthread_mutex_lock(&s->lock);
    unlink_stream(st); /* st->c = NULL: a worker's stream is freed when its answer comes */
    bool worker = st->phase == S_WORKER;
    pthread_mutex_unlock(&s->lock);
    if (!worker) {
        unadmit(s, st);
        stream_free(s, st);
    }
    return 0;
}

/* ---- connections ---- */

static void conn_free(grpc_server *s, conn *c)
{
    pthread_mutex_lock(&s->lock);
    while (c->streams) {
        stream *st = c->streams;
        bool worker = st->phase == S_WORKER;
        unlink_stream(st);
        if (!worker) {
            pthread_mutex_unlock(&s->lock);
            unadmit(s, st);
            stream_free(s, st);
            pthread_mutex_lock(&s->lock);
        }
    }
    pthread_mutex_unlock(&s->lock);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    addr_drop(s, c->key);
    nghttp2_session_del(c->h2);
    if (c->tls)
        gnutls_deinit(c->tls);
    close(c->fd);
    free(c);
    __atomic_fetch_sub(&s->st.connections_open, 1, __ATOMIC_RELAXED);
}

static void conn_accept(grpc_server *s)
{
    for (;;) {
        struct sockaddr_storage sa;
        socklen_t sl = sizeof sa;
        int fd = accept4(s->listen_fd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        unsigned char key[16];
        addr_key(&sa, key);
        addr_slot **slot = addr_find(s, key);
        if (__atomic_load_n(&s->st.connections_open, __ATOMIC_RELAXED) >= s->o.max_connections) {
            count(s, GRPC_REJ_CONNECTIONS);
            close(fd);
            continue;
        }
        if (*slot && (*slot)->n >= s->o.max_per_address) {
            count(s, GRPC_REJ_PER_ADDRESS);
            close(fd);
            continue;
        }
        conn *c = calloc(1, sizeof *c);
        if (!c || (!*slot && !(*slot = calloc(1, sizeof **slot)))) {
            free(c);
            close(fd);
            continue;
        }
        memcpy((*slot)->key, key, 16);
        (*slot)->n++;
        memcpy(c->key, key, 16);
        c->fd = fd;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        c->deadline_ns = mono_ns() + (int64_t)s->o.header_timeout_s * 1000000000LL;
        bool ok = nghttp2_session_server_new2(&c->h2, s->cbs, c, s->h2opt) == 0;
        if (ok) {
            nghttp2_settings_entry set[] = {
                {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, s->o.max_streams},
                {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20},
                {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, (uint32_t)s->o.max_header_bytes},
            };
            ok = nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, set, 3) == 0 &&
                 nghttp2_session_set_local_window_size(c->h2, NGHTTP2_FLAG_NONE, 0, 16 << 20) == 0;
        }
        if (ok && s->cred) {
            static const gnutls_datum_t h2 = {(unsigned char *)"h2", 2};
            ok = gnutls_init(&c->tls, GNUTLS_SERVER | GNUTLS_NONBLOCK) == 0 &&
                 gnutls_priority_set(c->tls, s->prio) == 0 &&
                 gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, s->cred) == 0 &&
                 gnutls_alpn_set_protocols(c->tls, &h2, 1, GNUTLS_ALPN_MANDATORY) == 0;
            if (ok)
                gnutls_transport_set_int(c->tls, fd);
        } else {
            c->handshaken = true;
        }
        c->next = s->conns;
        if (s->conns)
            s->conns->prev = c;
        s->conns = c;
        __atomic_fetch_add(&s->st.connections_open, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&s->st.connections_total, 1, __ATOMIC_RELAXED);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
        if (!ok || epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
            conn_free(s, c);
    }
}

/* Writes what nghttp2 has to send as far as the socket takes it. -1: the
 * connection is to close. */
static int conn_flush(grpc_server *s, conn *c)
{
    if (!c->handshaken || c->lingering)
        return 0;
    for (;;) {
        if (!c->pend_len) {
            ssize_t n = nghttp2_session_mem_send(c->h2, &c->pend);
            if (n < 0)
                return -1;
            if (n == 0)
                break;
            c->pend_len = (size_t)n;
        }
        ssize_t w;
        if (c->tls) {
            w = gnutls_record_send(c->tls, c->pend, c->pend_len);
            if (w == GNUTLS_E_AGAIN || w == GNUTLS_E_INTERRUPTED)
                w = -2;
            else if (w < 0)
                return -1;
        } else {
            w = send(c->fd, c->pend, c->pend_len, MSG_NOSIGNAL);
            if (w < 0 && (errno == EAGAIN || errno == EINTR))
                w = -2;
            else if (w < 0)
                return -1;
        }
        if (w == -2) {
            if (!c->blocked_ns)
                c->blocked_ns = mono_ns();
            break;
        }
        c->blocked_ns = 0;
        c->pend += w;
        c->pend_len -= (size_t)w;
    }
    bool want_out = c->pend_len > 0;
    if (want_out != c->want_out) {
        c->want_out = want_out;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | (want_out ? EPOLLOUT : 0), .data.ptr = c};
        epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev);
    }
    if (!c->pend_len && (c->closing || (!nghttp2_session_want_read(c->h2) && !nghttp2_session_want_write(c->h2)))) {
        /* A close with the client's bytes unread would be a TCP reset,
         * which may overtake the GOAWAY just sent: send FIN instead, and
         * drop what the client still sends, for a second at most. */
        if (shutdown(c->fd, SHUT_WR) < 0)
            return -1;
        c->lingering = true;
        c->deadline_ns = mono_ns() + 1000000000LL;
    }
    return 0;
}

/* Reads what the socket has and feeds nghttp2. -1: the connection is to close. */
static int conn_read(grpc_server *s, conn *c)
{
    if (c->lingering) {
        char sink[READ_CHUNK];
        for (int rounds = 0; rounds < 16; rounds++) {
            ssize_t n = recv(c->fd, sink, sizeof sink, 0);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                return -1;
            if (n < 0)
                return 0;
        }
        return 0;
    }
    if (c->tls && !c->handshaken) {
        int r = gnutls_handshake(c->tls);
        if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
            return 0;
        gnutls_datum_t alpn;
        if (r < 0 || gnutls_alpn_get_selected_protocol(c->tls, &alpn) < 0 || alpn.size != 2 ||
            memcmp(alpn.data, "h2", 2) != 0) {
            count(s, GRPC_REJ_PROTOCOL);
            return -1;
        }
        c->handshaken = true;
    }
    uint8_t buf[READ_CHUNK];
    for (int rounds = 0; rounds < 16; rounds++) {
        ssize_t n;
        if (c->tls) {
            n = gnutls_record_recv(c->tls, buf, sizeof buf);
            if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
                return 0;
            if (n == GNUTLS_E_PREMATURE_TERMINATION)
                return -1; /* closed without close_notify: as most clients do */
            if (n < 0) {
                count(s, GRPC_REJ_PROTOCOL);
                return -1;
            }
        } else {
            n = recv(c->fd, buf, sizeof buf, 0);
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
            if (n < 0)
                return -1;
        }
        if (n == 0)
            return -1;
        ssize_t r = nghttp2_session_mem_recv(c->h2, buf, (size_t)n);
        if (r < 0) {
            count(s, GRPC_REJ_PROTOCOL);
            return -1;
        }
        if (c->closing || ((size_t)n < sizeof buf && !(c->tls && gnutls_record_check_pending(c->tls))))
            return 0;
    }
    return 0;
}

/* Deadlines: a stream past its own is answered DEADLINE_EXCEEDED (or
 * reset when its answer is not taken); a connection past its own, or whose
 * client takes no bytes for body_timeout, closes. */
static void reap(grpc_server *s, int64_t now)
{
    for (conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (c->lingering) {
            if (now > c->deadline_ns)
                conn_free(s, c);
            continue;
        }
        bool late = (c->deadline_ns && now > c->deadline_ns) ||
                    (c->blocked_ns && now - c->blocked_ns > (int64_t)s->o.body_timeout_s * 1000000000LL);
        if (!c->n_streams && !c->deadline_ns)
            c->deadline_ns = now + (int64_t)s->o.idle_timeout_s * 1000000000LL;
        for (stream *st = c->streams; st && !late; st = st->next) {
            if (!st->deadline_ns || now <= st->deadline_ns || st->phase == S_WORKER)
                continue;
            if (st->phase == S_HEADERS) {
                late = true; /* a header block left open: the connection can do nothing else */
                break;
            }
            count(s, GRPC_REJ_TIMEOUT);
            if (st->phase == S_BODY) {
                refuse(s, st, GRPC_DEADLINE_EXCEEDED, 0, "the message did not arrive in time");
                st->deadline_ns = now + (int64_t)s->o.body_timeout_s * 1000000000LL;
            } else {
                nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
                st->deadline_ns = 0;
            }
        }
        if (late) {
            count(s, GRPC_REJ_TIMEOUT);
            conn_free(s, c);
        } else if (conn_flush(s, c) < 0) {
            conn_free(s, c);
        }
    }
}

/* The limits grpc_set_limits left, taken on the I/O thread, the only one
 * that reads them: a stream or connection started from now on gets them. */
static void take_limits(grpc_server *s)
{
    pthread_mutex_lock(&s->lock);
    if (s->next_set) {
        s->o.max_per_address = s->next.max_per_address;
        s->o.header_timeout_s = s->next.header_timeout_s;
        s->o.body_timeout_s = s->next.body_timeout_s;
        s->o.max_bytes_in_flight = s->next.max_bytes_in_flight;
        s->next_set = false;
    }
    pthread_mutex_unlock(&s->lock);
}

static void *io_loop(void *arg)
{
    grpc_server *s = arg;
    current = s;
    struct epoll_event evs[64];
    int64_t last_reap = 0;
    for (;;) {
        int n = epoll_wait(s->epfd, evs, 64, 250);
        if (__atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE))
            break;
        take_limits(s);
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &s->listen_fd) {
                conn_accept(s);
                continue;
            }
            if (p == &s->evfd) {
                take_answers(s);
                continue;
            }
        }
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == &s->listen_fd || p == &s->evfd)
                continue;
            conn *c = p;
            /* a connection freed earlier in this round is not in the list */
            bool alive = false;
            for (conn *k = s->conns; k && !alive; k = k->next)
                alive = k == c;
            if (!alive)
                continue;
            int r = 0;
            if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
                r = conn_read(s, c);
            if (r == 0)
                r = conn_flush(s, c);
            if (r < 0)
                conn_free(s, c);
        }
        /* answers submitted by take_answers go out */
        for (conn *c = s->conns, *next; c; c = next) {
            next = c->next;
            if (nghttp2_session_want_write(c->h2) && !c->pend_len && c->handshaken && conn_flush(s, c) < 0)
                conn_free(s, c);
        }
        int64_t now = mono_ns();
        if (now - last_reap > 250000000LL) {
            last_reap = now;
            reap(s, now);
        }
        if (__atomic_load_n(&s->draining, __ATOMIC_ACQUIRE) && s->listen_fd >= 0) {
            epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->listen_fd, NULL);
            close(s->listen_fd);
            s->listen_fd = -1;
            for (conn *c = s->conns; c; c = c->next) {
                /* the answers first, then GOAWAY: a client may stop reading at GOAWAY */
                for (stream *st = c->streams; st; st = st->next)
                    if (st->phase == S_BODY || st->phase == S_HEADERS) {
                        count(s, GRPC_REJ_DRAINING);
                        if (st->phase == S_HEADERS)
                            nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_REFUSED_STREAM);
                        else
                            refuse(s, st, GRPC_UNAVAILABLE, 1, "pacerd is shutting down: retry");
                    }
                nghttp2_submit_goaway(c->h2, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(c->h2),
                                      NGHTTP2_NO_ERROR, NULL, 0);
            }
            for (conn *c = s->conns, *next; c; c = next) {
                next = c->next;
                if (conn_flush(s, c) < 0)
                    conn_free(s, c);
            }
            __atomic_store_n(&s->drain_started, true, __ATOMIC_RELEASE);
        }
    }
    return NULL;
}

/* ---- start, drain, stop ---- */

static int bind_listen(grpc_server *s, const char *addr, uint16_t port, char *err, size_t err_size)
{
    struct sockaddr_storage sa = {0};
    socklen_t sl;
    struct sockaddr_in *v4 = (struct sockaddr_in *)&sa;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&sa;
    if (inet_pton(AF_INET, addr, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        sl = sizeof *v4;
    } else if (inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        sl = sizeof *v6;
    } else {
        snprintf(err, err_size, "%s:%u: not an IPv4 or IPv6 address", addr, port);
        return -EINVAL;
    }
    int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sl) < 0 || listen(fd, 1024) < 0) {
        snprintf(err, err_size, "%s:%u: %s", addr, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -errno;
    }
    struct sockaddr_storage got;
    socklen_t gl = sizeof got;
    getsockname(fd, (struct sockaddr *)&got, &gl);
    s->port = ntohs(got.ss_family == AF_INET ? ((struct sockaddr_in *)&got)->sin_port
                                              : ((struct sockaddr_in6 *)&got)->sin6_port);
    s->listen_fd = fd;
    return 0;
}

static int setup_tls(grpc_server *s, char *err, size_t err_size)
{
    gnutls_datum_t cert = {(unsigned char *)s->o.tls_cert_pem, (unsigned)strlen(s->o.tls_cert_pem)};
    gnutls_datum_t key = {(unsigned char *)s->o.tls_key_pem, (unsigned)strlen(s->o.tls_key_pem)};
    int r = gnutls_certificate_allocate_credentials(&s->cred);
    if (r == 0)
        r = gnutls_certificate_set_x509_key_mem(s->cred, &cert, &key, GNUTLS_X509_FMT_PEM);
    if (r == 0)
        r = gnutls_priority_init(&s->prio, NULL, NULL);
    if (r < 0) {
        snprintf(err, err_size, "TLS: %s", gnutls_strerror(r));
        return -EINVAL;
    }
    return 0;
}

grpc_server *grpc_start(const char *addr, uint16_t port, const grpc_options *opt, const grpc_app *app, char *err,
                        size_t err_size)
{
    grpc_server *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    s->o = *opt;
#define DEF(f, v) if (!s->o.f) s->o.f = (v)
    DEF(workers, 4);
    DEF(max_connections, 4096);
    DEF(max_per_address, 64);
    DEF(max_streams, 100);
    DEF(header_timeout_s, 10);
    DEF(body_timeout_s, 60);
    DEF(idle_timeout_s, 30);
    DEF(max_message, 4 << 20);
    DEF(max_bytes_in_flight, (size_t)256 << 20);
    DEF(max_header_bytes, 16384);
    DEF(max_control_frames, 1000);
    DEF(max_queue, 1024);
#undef DEF
    s->app = *app;
    s->listen_fd = s->epfd = s->evfd = -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->idle, NULL);
    if (bind_listen(s, addr, port, err, err_size) < 0 ||
        (s->o.tls_cert_pem && s->o.tls_key_pem && setup_tls(s, err, err_size) < 0)) {
        grpc_stop(s);
        return NULL;
    }
    s->epfd = epoll_create1(EPOLL_CLOEXEC);
    s->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event le = {.events = EPOLLIN, .data.ptr = &s->listen_fd};
    struct epoll_event ee = {.events = EPOLLIN, .data.ptr = &s->evfd};
    bool ok = s->epfd >= 0 && s->evfd >= 0 && epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->listen_fd, &le) == 0 &&
              epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->evfd, &ee) == 0;
    ok = ok && nghttp2_session_callbacks_new(&s->cbs) == 0 && nghttp2_option_new(&s->h2opt) == 0;
    if (ok) {
        nghttp2_session_callbacks_set_on_begin_headers_callback(s->cbs, on_begin_headers);
        nghttp2_session_callbacks_set_on_header_callback(s->cbs, on_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(s->cbs, on_data_chunk);
        nghttp2_session_callbacks_set_on_frame_recv_callback(s->cbs, on_frame_recv);
        nghttp2_session_callbacks_set_on_stream_close_callback(s->cbs, on_stream_close);
        nghttp2_option_set_max_outbound_ack(s->h2opt, 1000);
        nghttp2_option_set_max_settings(s->h2opt, 32);
        nghttp2_option_set_max_deflate_dynamic_table_size(s->h2opt, 4096);
        nghttp2_option_set_stream_reset_rate_limit(s->h2opt, s->o.max_control_frames, s->o.max_control_frames);
    }
    s->workers = ok ? calloc(s->o.workers, sizeof *s->workers) : NULL;
    for (unsigned i = 0; s->workers && i < s->o.workers; i++)
        if (pthread_create(&s->workers[i], NULL, worker, s) == 0)
            s->n_workers++;
    ok = ok && s->n_workers == s->o.workers && pthread_create(&s->io, NULL, io_loop, s) == 0;
    if (!ok) {
        snprintf(err, err_size, "%s:%u: cannot start (out of memory or threads)", addr, port);
        grpc_stop(s);
        return NULL;
    }
    s->io_started = true;
    return s;
}

void grpc_set_limits(grpc_server *s, const grpc_options *o)
{
    pthread_mutex_lock(&s->lock);
    s->next = s->o;
    if (o->max_per_address)
        s->next.max_per_address = o->max_per_address;
    if (o->header_timeout_s)
        s->next.header_timeout_s = o->header_timeout_s;
    if (o->body_timeout_s)
        s->next.body_timeout_s = o->body_timeout_s;
    if (o->max_bytes_in_flight)
        s->next.max_bytes_in_flight = o->max_bytes_in_flight;
    s->next_set = true;
    pthread_mutex_unlock(&s->lock);
}

uint16_t grpc_port(const grpc_server *s)
{
    return s->port;
}

bool grpc_tls(const grpc_server *s)
{
    return s->cred != NULL;
}

void grpc_get_stats(grpc_server *s, grpc_stats *ret)
{
    for (int i = 0; i < GRPC_REJ_COUNT; i++)
        ret->rejects[i] = __atomic_load_n(&s->st.rejects[i], __ATOMIC_RELAXED);
    for (int i = 0; i < GRPC_CODE_COUNT; i++)
        ret->calls[i] = __atomic_load_n(&s->st.calls[i], __ATOMIC_RELAXED);
    ret->connections_total = __atomic_load_n(&s->st.connections_total, __ATOMIC_RELAXED);
    ret->connections_open = __atomic_load_n(&s->st.connections_open, __ATOMIC_RELAXED);
    ret->bytes_in_flight = __atomic_load_n(&s->st.bytes_in_flight, __ATOMIC_RELAXED);
    ret->queued = __atomic_load_n(&s->st.queued, __ATOMIC_RELAXED);
}

size_t grpc_drain(grpc_server *s, unsigned timeout_ms)
{
    __atomic_store_n(&s->draining, true, __ATOMIC_RELEASE);
    uint64_t one = 1;
    if (write(s->evfd, &one, sizeof one) < 0) {
        /* the loop looks within 250 ms anyway */
    }
    int64_t end = mono_ns() + (int64_t)timeout_ms * 1000000LL;
    while (!__atomic_load_n(&s->drain_started, __ATOMIC_ACQUIRE) && mono_ns() < end)
        usleep(5000);
    pthread_mutex_lock(&s->lock);
    while (s->admitted && mono_ns() < end) {
        pthread_mutex_unlock(&s->lock);
        usleep(10000);
        pthread_mutex_lock(&s->lock);
    }
    size_t left = s->admitted;
    pthread_mutex_unlock(&s->lock);
    return left;
}

void grpc_stop(grpc_server *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->lock);
    for (unsigned i = 0; i < s->n_workers; i++)
        pthread_join(s->workers[i], NULL);
    free(s->workers);
    if (s->io_started)
        pthread_join(s->io, NULL);
    current = s;
    while (s->conns)
        conn_free(s, s->conns);
    while (s->done_head) {
        stream *st = s->done_head;
        s->done_head = st->qnext;
        stream_free(s, st);
    }
    if (s->cbs)
        nghttp2_session_callbacks_del(s->cbs);
    if (s->h2opt)
        nghttp2_option_del(s->h2opt);
    if (s->cred)
        gnutls_certificate_free_credentials(s->cred);
    if (s->prio)
        gnutls_priority_deinit(s->prio);
    for (int i = 0; i < ADDR_BUCKETS; i++)
        while (s->addrs[i]) {
            addr_slot *a = s->addrs[i];
            s->addrs[i] = a->next;
            free(a);
        }
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    if (s->epfd >= 0)
        close(s->epfd);
    if (s->evfd >= 0)
        close(s->evfd);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->idle);
    free(s);
}
