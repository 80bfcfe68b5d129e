/* libsoup-3.0 requests, whichever way the app sends them (send, send_async,
 * send_and_read, send_and_read_async, splice, websockets): every path
 * queues the message on its session, and every message finishes.
 *
 *   start  emission hook on SoupSession::request-queued (emitted inside the
 *          send call, on the caller's thread — so a request a page starts in
 *          its own init is seen while that init runs);
 *   end    emission hook on SoupMessage::finished (after the body was read,
 *          before the app's callback runs); SoupSession::request-unqueued
 *          ends a request that never finished (should not happen).
 *
 * Emission hooks are per signal, not per object: nothing is connected to
 * the app's sessions or messages. The agent sets SOUP_MESSAGE_COLLECT_METRICS
 * on each queued message so the `net` record has DNS / connect / TLS /
 * first-byte times and byte counts; it changes nothing else on the message.
 * Per-request state rides on the message as qdata.
 *
 * A request that failed (no HTTP status) has its `net` record held back
 * until the app reads the error, so the record carries the GError message
 * the app sees ("Could not connect to 127.0.0.1: Connection refused"), not
 * a guess: soup_session_send[_and_read][_finish], called by the app through
 * its PLT, are interposed and return exactly what the real ones return.
 * The record is written when that call returns the error, or when the
 * message is freed, or a second later (FAIL_WAIT_MS), whichever comes
 * first — without the message text in the last two cases. The page model's
 * api_end is not held back: it is the moment the request finished. Phases
 * a failed request never reached are null, not 0.
 *
 * libsoup-2.4 is soup2.c's. libsoup functions are looked up (agent_real)
 * when libsoup-3.0 is loaded; this file is built with its headers.
 */
#include "gobj.h"

#include <libsoup/soup.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define LIBSOUP "libsoup-3.0.so.0"

#define FAIL_WAIT_MS 1000

/* A failed request's record, waiting for the app to read the error. Owned
 * by two: the request (until its message is freed) and the timer. */
typedef struct pending {
    atomic_int refs;
    atomic_bool written;
    struct pending *next; /* in `waiting`, for the exit flush */
    net_info n;   /* strings below are the pending's own */
    char *method;
    char *url;
} pending;

typedef struct req {
    char *url;
    int64_t t_start;
    bool ended;
    pending *failed; /* set once at finish when the request failed */
} req;

static struct {
    GType (*session_get_type)(void);
    GType (*message_get_type)(void);
    GUri *(*get_uri)(SoupMessage *);
    const char *(*get_method)(SoupMessage *);
    guint (*get_status)(SoupMessage *);
    const char *(*get_reason_phrase)(SoupMessage *);
    void (*add_flags)(SoupMessage *, SoupMessageFlags);
    SoupMessageMetrics *(*get_metrics)(SoupMessage *);
    SoupMessageHeaders *(*get_response_headers)(SoupMessage *);
    const char *(*headers_get_content_type)(SoupMessageHeaders *, GHashTable **);
    guint64 (*m_dns_start)(SoupMessageMetrics *), (*m_dns_end)(SoupMessageMetrics *);
    guint64 (*m_connect_start)(SoupMessageMetrics *), (*m_connect_end)(SoupMessageMetrics *);
    guint64 (*m_tls_start)(SoupMessageMetrics *);
    guint64 (*m_response_start)(SoupMessageMetrics *), (*m_response_end)(SoupMessageMetrics *);
    guint64 (*m_req_header_bytes)(SoupMessageMetrics *), (*m_req_body_bytes)(SoupMessageMetrics *);
    guint64 (*m_resp_header_bytes)(SoupMessageMetrics *), (*m_resp_body_bytes)(SoupMessageMetrics *);
    char *(*uri_to_string_partial)(GUri *, GUriHideFlags); /* GLib's, 2.66 on */
} S;

static GQuark req_quark;
static _Atomic bool ready; /* soup_install found everything */
static pthread_mutex_t waiting_mu = PTHREAD_MUTEX_INITIALIZER;
static pending *waiting; /* every pending still referenced */

static void pending_unref(pending *p)
{
    if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
        return;
    pthread_mutex_lock(&waiting_mu);
    for (pending **it = &waiting; *it; it = &(*it)->next) {
        if (*it == p) {
            *it = p->next;
            break;
        }
    }
    pthread_mutex_unlock(&waiting_mu);
    free(p->method);
    free(p->url);
    free(p);
}

/* Writes the record once; `error` is the app's GError message, or NULL. */
static void pending_write(pending *p, const char *error)
{
    if (!p || atomic_exchange(&p->written, true))
        return;
    p->n.error = error && *error ? error : "transport failure";
    net_emit(&p->n);
}

/* At exit (the adapter's flush): what still waits is written. */
void soup3_flush(void)
{
    pthread_mutex_lock(&waiting_mu);
    for (pending *p = waiting; p; p = p->next)
        pending_write(p, NULL);
    pthread_mutex_unlock(&waiting_mu);
}

static gboolean pending_timeout(gpointer data)
{
    pending_write(data, NULL);
    return G_SOURCE_REMOVE;
}

static void pending_timer_done(gpointer data)
{
    pending_unref(data);
}

static void req_free(gpointer data)
{
    req *r = data;
    if (r->failed) {
        pending_write(r->failed, NULL);
        pending_unref(r->failed);
    }
    free(r->url);
    free(r);
}

/* A phase's duration; one that did not happen is 0 for a request that
 * succeeded (a reused connection, plain HTTP) and unknown (-1, null) for one
 * that failed (it may have failed in that phase or before it). */
static int64_t us_span_ns(guint64 from_us, guint64 to_us, bool failed)
{
    if (!from_us || !to_us || to_us < from_us)
        return failed ? -1 : 0;
    return (int64_t)(to_us - from_us) * 1000;
}

static void request_done(SoupMessage *msg, req *r, const char *error)
{
    r->ended = true;
    int64_t t_end = pacer_now_ns();
    int status = (int)S.get_status(msg);
    net_request_end(r->url, msg, status, t_end);

    bool failed = status <= 0;
    net_info n = {
        .lib = "soup",
        .method = S.get_method(msg),
        .url = r->url,
        .status = status,
        .end_ns = t_end,
        .bytes_sent = -1,
        .bytes_received = -1,
        .body_received = -1,
        .dns_ns = -1,
        .connect_ns = -1,
        .tls_ns = -1,
        .first_byte_ns = -1,
        .total_ns = t_end - r->t_start,
        .error = error,
    };
    SoupMessageHeaders *h = S.get_response_headers(msg);
    if (h && status > 0)
        n.content_type = S.headers_get_content_type(h, NULL);
    SoupMessageMetrics *m = S.get_metrics(msg);
    if (m) {
        guint64 tls = S.m_tls_start(m);
        guint64 connect_end = S.m_connect_end(m);
        n.dns_ns = us_span_ns(S.m_dns_start(m), S.m_dns_end(m), failed);
        n.connect_ns = us_span_ns(S.m_connect_start(m), tls ? tls : connect_end, failed);
        n.tls_ns = us_span_ns(tls, connect_end, failed);
        guint64 start_us = (guint64)(r->t_start / 1000);
        if (S.m_response_start(m))
            n.first_byte_ns = us_span_ns(start_us, S.m_response_start(m), failed);
        if (S.m_response_end(m))
            n.total_ns = us_span_ns(start_us, S.m_response_end(m), failed);
        n.bytes_sent = (int64_t)(S.m_req_header_bytes(m) + S.m_req_body_bytes(m));
        n.body_received = (int64_t)S.m_resp_body_bytes(m);
        n.bytes_received = (int64_t)S.m_resp_header_bytes(m) + n.body_received;
    }
    if (!failed || n.error) {
        net_emit(&n);
        return;
    }
    /* failed: wait for the app to read the GError (see the top) */
    pending *p = calloc(1, sizeof(*p));
    if (p) {
        p->n = n;
        p->method = n.method ? strdup(n.method) : NULL;
        p->url = strdup(r->url);
        p->n.method = p->method;
        p->n.url = p->url;
        p->n.content_type = NULL;
        atomic_init(&p->refs, 2);
    }
    if (!p || !p->url) {
        if (p)
            pending_unref(p), pending_unref(p);
        const char *reason = S.get_reason_phrase(msg);
        n.error = reason && *reason ? reason : "transport failure";
        net_emit(&n);
        return;
    }
    pthread_mutex_lock(&waiting_mu);
    p->next = waiting;
    waiting = p;
    pthread_mutex_unlock(&waiting_mu);
    r->failed = p;
    g_timeout_add_full(G_PRIORITY_DEFAULT, FAIL_WAIT_MS, pending_timeout, p, pending_timer_done);
}

static gboolean on_request_queued(GSignalInvocationHint *hint, guint n, const GValue *params, gpointer data)
{
    if (!agent_active() || agent_in_hook || n < 2)
        return TRUE;
    SoupMessage *msg = g_value_get_object(&params[1]);
    if (!msg)
        return TRUE;
    agent_in_hook++;
    req *r = g_object_get_qdata((GObject *)msg, req_quark);
    if (!r || r->ended) {
        /* A new request, or the app sending the same message again. */
        r = calloc(1, sizeof(*r));
        char *url = r ? S.uri_to_string_partial(S.get_uri(msg), G_URI_HIDE_PASSWORD | G_URI_HIDE_AUTH_PARAMS) : NULL;
        if (r && url) {
            r->url = strdup(url);
            r->t_start = pacer_now_ns();
            g_object_set_qdata_full((GObject *)msg, req_quark, r, req_free);
            S.add_flags(msg, SOUP_MESSAGE_COLLECT_METRICS);
            net_request_start(r->url, msg, r->t_start);
        } else {
            free(r);
        }
        g_free(url);
    }
    agent_in_hook--;
    return TRUE;
}

static gboolean on_finished(GSignalInvocationHint *hint, guint n, const GValue *params, gpointer data)
{
    if (!agent_active() || agent_in_hook || n < 1)
        return TRUE;
    SoupMessage *msg = g_value_get_object(&params[0]);
    req *r = msg ? g_object_get_qdata((GObject *)msg, req_quark) : NULL;
    if (r && !r->ended && r->url) {
        agent_in_hook++;
        request_done(msg, r, NULL);
        agent_in_hook--;
    }
    return TRUE;
}

static gboolean on_request_unqueued(GSignalInvocationHint *hint, guint n, const GValue *params, gpointer data)
{
    if (!agent_active() || agent_in_hook || n < 2)
        return TRUE;
    SoupMessage *msg = g_value_get_object(&params[1]);
    req *r = msg ? g_object_get_qdata((GObject *)msg, req_quark) : NULL;
    if (r && !r->ended && r->url) {
        agent_in_hook++;
        request_done(msg, r, "unqueued before it finished");
        agent_in_hook--;
    }
    return TRUE;
}

#define RESOLVE(field, name)                              \
    do {                                                  \
        *(void **)&S.field = agent_real(LIBSOUP, name);   \
        if (!S.field)                                     \
            missing = name;                               \
    } while (0)

void soup3_install(void)
{
    if (!agent_lib_loaded(LIBSOUP))
        return; /* libsoup-2.4 is soup2.c's */
    const char *missing = NULL;
    RESOLVE(session_get_type, "soup_session_get_type");
    RESOLVE(message_get_type, "soup_message_get_type");
    RESOLVE(get_uri, "soup_message_get_uri");
    RESOLVE(get_method, "soup_message_get_method");
    RESOLVE(get_status, "soup_message_get_status");
    RESOLVE(get_reason_phrase, "soup_message_get_reason_phrase");
    RESOLVE(add_flags, "soup_message_add_flags");
    RESOLVE(get_metrics, "soup_message_get_metrics");
    RESOLVE(get_response_headers, "soup_message_get_response_headers");
    RESOLVE(headers_get_content_type, "soup_message_headers_get_content_type");
    RESOLVE(m_dns_start, "soup_message_metrics_get_dns_start");
    RESOLVE(m_dns_end, "soup_message_metrics_get_dns_end");
    RESOLVE(m_connect_start, "soup_message_metrics_get_connect_start");
    RESOLVE(m_connect_end, "soup_message_metrics_get_connect_end");
    RESOLVE(m_tls_start, "soup_message_metrics_get_tls_start");
    RESOLVE(m_response_start, "soup_message_metrics_get_response_start");
    RESOLVE(m_response_end, "soup_message_metrics_get_response_end");
    RESOLVE(m_req_header_bytes, "soup_message_metrics_get_request_header_bytes_sent");
    RESOLVE(m_req_body_bytes, "soup_message_metrics_get_request_body_bytes_sent");
    RESOLVE(m_resp_header_bytes, "soup_message_metrics_get_response_header_bytes_received");
    RESOLVE(m_resp_body_bytes, "soup_message_metrics_get_response_body_bytes_received");
    *(void **)&S.uri_to_string_partial = agent_real(AGENT_LIBGLIB, "g_uri_to_string_partial");
    if (!S.uri_to_string_partial)
        missing = "g_uri_to_string_partial";
    if (missing) {
        agent_note_once("soup", "libsoup-3.0 lacks %s; requests are not measured", missing);
        return;
    }
    req_quark = g_quark_from_static_string("pacer-agent-request");
    GType session = S.session_get_type(), message = S.message_get_type();
    g_type_class_ref(session); /* signals exist once the classes do */
    g_type_class_ref(message);
    guint queued = g_signal_lookup("request-queued", session);
    guint unqueued = g_signal_lookup("request-unqueued", session);
    guint finished = g_signal_lookup("finished", message);
    if (!queued || !finished) {
        agent_note_once("soup", "libsoup-3.0 has no request-queued/finished signal; requests are not measured");
        return;
    }
    g_signal_add_emission_hook(queued, 0, on_request_queued, NULL, NULL);
    g_signal_add_emission_hook(finished, 0, on_finished, NULL, NULL);
    atomic_store(&ready, true);
    if (unqueued)
        g_signal_add_emission_hook(unqueued, 0, on_request_unqueued, NULL, NULL);
}

/* ---- the app reads a request's error: the held-back record gets it ---- */

static void error_seen(SoupMessage *msg, GError **error)
{
    if (!msg || !error || !*error || !atomic_load(&ready) || agent_in_hook)
        return;
    req *r = g_object_get_qdata((GObject *)msg, req_quark);
    if (r && r->failed) {
        agent_in_hook++;
        pending_write(r->failed, (*error)->message);
        agent_in_hook--;
    }
}

typedef SoupMessage *(*result_message_fn)(SoupSession *, GAsyncResult *);
static result_message_fn result_message;

static SoupMessage *message_of(SoupSession *session, GAsyncResult *result)
{
    if (!result_message)
        *(void **)&result_message = agent_real(LIBSOUP, "soup_session_get_async_result_message");
    return result_message && session && result ? result_message(session, result) : NULL;
}

typedef GInputStream *(*send_fn)(SoupSession *, SoupMessage *, GCancellable *, GError **);
typedef GInputStream *(*send_finish_fn)(SoupSession *, GAsyncResult *, GError **);
typedef GBytes *(*send_and_read_fn)(SoupSession *, SoupMessage *, GCancellable *, GError **);
typedef GBytes *(*send_and_read_finish_fn)(SoupSession *, GAsyncResult *, GError **);
static send_fn real_send;
static send_finish_fn real_send_finish;
static send_and_read_fn real_send_and_read;
static send_and_read_finish_fn real_send_and_read_finish;

AGENT_EXPORT GInputStream *soup_session_send(SoupSession *session, SoupMessage *msg, GCancellable *cancellable,
                                             GError **error)
{
    AGENT_REAL(real_send, LIBSOUP, "soup_session_send");
    GError *own = NULL, **e = error ? error : &own;
    GInputStream *s = real_send(session, msg, cancellable, e);
    error_seen(msg, e);
    if (own)
        g_error_free(own);
    return s;
}

AGENT_EXPORT GInputStream *soup_session_send_finish(SoupSession *session, GAsyncResult *result, GError **error)
{
    AGENT_REAL(real_send_finish, LIBSOUP, "soup_session_send_finish");
    SoupMessage *msg = atomic_load(&ready) ? message_of(session, result) : NULL;
    if (msg)
        g_object_ref(msg); /* the call may drop the last other reference */
    GError *own = NULL, **e = error ? error : &own;
    GInputStream *s = real_send_finish(session, result, e);
    error_seen(msg, e);
    if (msg)
        g_object_unref(msg);
    if (own)
        g_error_free(own);
    return s;
}

AGENT_EXPORT GBytes *soup_session_send_and_read(SoupSession *session, SoupMessage *msg, GCancellable *cancellable,
                                                GError **error)
{
    AGENT_REAL(real_send_and_read, LIBSOUP, "soup_session_send_and_read");
    GError *own = NULL, **e = error ? error : &own;
    GBytes *b = real_send_and_read(session, msg, cancellable, e);
    error_seen(msg, e);
    if (own)
        g_error_free(own);
    return b;
}

AGENT_EXPORT GBytes *soup_session_send_and_read_finish(SoupSession *session, GAsyncResult *result, GError **error)
{
    AGENT_REAL(real_send_and_read_finish, LIBSOUP, "soup_session_send_and_read_finish");
    SoupMessage *msg = atomic_load(&ready) ? message_of(session, result) : NULL;
    if (msg)
        g_object_ref(msg); /* the call may drop the last other reference */
    GError *own = NULL, **e = error ? error : &own;
    GBytes *b = real_send_and_read_finish(session, result, e);
    error_seen(msg, e);
    if (msg)
        g_object_unref(msg);
    if (own)
        g_error_free(own);
    return b;
}
