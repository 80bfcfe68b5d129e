/* libsoup-2.4 requests (what GTK 3 apps mostly use), whichever way the app
 * sends them (soup_session_queue_message, soup_session_send_message,
 * soup_session_send[_async]): every path queues the message on its
 * session, and every message finishes. The same events and `net` records
 * as libsoup-3.0's (soup3.c), from 2.4's API:
 *
 *   start   emission hook on SoupSession::request-queued (inside the send
 *           call, on the caller's thread: a request a page starts in its
 *           own init is seen while that init runs);
 *   phases  emission hooks on SoupMessage::network-event (resolving,
 *           resolved, connecting, connected, TLS handshaking, handshaked:
 *           DNS, connect and TLS times; none on a reused connection) and
 *           SoupMessage::got-headers (the first byte);
 *   end     emission hook on SoupMessage::finished (the body read, before
 *           the app's callback runs); SoupSession::request-unqueued ends a
 *           request that never finished.
 *
 * Emission hooks are per signal, not per object: nothing is connected to
 * the app's sessions or messages. Per-request state rides on the message
 * as qdata. Bytes: libsoup-2.4 does not count them; the record's are the
 * request and status lines, the headers and the body as they were sent and
 * received (the response body's length, or its Content-Length when the app
 * streamed it), not counting what TLS and chunked framing add.
 *
 * A failed request (libsoup-2.4's transport statuses, 1 to 99) has status
 * 0 in the record and libsoup's own text for it ("Cannot resolve hostname",
 * "Cannot connect to destination") as its error; phases it never reached
 * are null.
 *
 * libsoup functions are looked up (agent_real) when libsoup-2.4 is loaded;
 * this file is built with libsoup-2.4's headers.
 */
#include "gobj.h"

#include <libsoup/soup.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIBSOUP2 "libsoup-2.4.so.1"

typedef struct req2 {
    char *url;
    int64_t t_start;
    int64_t dns_start, dns_end, connect_start, connect_end, tls_start, tls_end, first_byte;
    bool ended;
} req2;

static struct {
    GType (*session_get_type)(void);
    GType (*message_get_type)(void);
    SoupURI *(*get_uri)(SoupMessage *);
    char *(*uri_to_string)(SoupURI *, gboolean);
    const char *(*content_type)(SoupMessageHeaders *, GHashTable **);
    goffset (*content_length)(SoupMessageHeaders *);
    void (*headers_foreach)(SoupMessageHeaders *, SoupMessageHeadersForeachFunc, gpointer);
    const char *(*status_phrase)(guint);
} S;

static GQuark req_quark;

static void req_free(gpointer data)
{
    req2 *r = data;
    free(r->url);
    free(r);
}

static void add_header_bytes(const char *name, const char *value, gpointer data)
{
    *(int64_t *)data += (int64_t)(strlen(name) + strlen(value) + 4); /* "Name: value\r\n" */
}

static int64_t header_bytes(SoupMessageHeaders *h)
{
    int64_t n = 2; /* the empty line */
    if (h)
        S.headers_foreach(h, add_header_bytes, &n);
    return n;
}

static int64_t span(int64_t from, int64_t to, bool failed)
{
    if (!from || !to || to < from)
        return failed ? -1 : 0;
    return to - from;
}

static void request_done(SoupMessage *msg, req2 *r, const char *unqueued)
{
    r->ended = true;
    int64_t t_end = pacer_now_ns();
    guint code = msg->status_code;
    bool failed = unqueued || code < 100; /* 0: cancelled; 1..99: transport */
    int status = failed ? 0 : (int)code;
    net_request_end(r->url, msg, status, t_end);

    int64_t body = -1;
    if (!failed && msg->response_body && msg->response_body->length > 0)
        body = (int64_t)msg->response_body->length;
    else if (!failed && msg->response_headers && S.content_length(msg->response_headers) >= 0)
        body = (int64_t)S.content_length(msg->response_headers);
    char line[64];
    int64_t sent = -1, received = -1;
    if (!failed) {
        size_t path = strlen(r->url); /* the request line names at most the URL */
        sent = (int64_t)(strlen(msg->method ? msg->method : "GET") + path + 12) + header_bytes(msg->request_headers) +
               (msg->request_body ? (int64_t)msg->request_body->length : 0);
        int n = snprintf(line, sizeof(line), "HTTP/1.1 %u %s\r\n", code, msg->reason_phrase ? msg->reason_phrase : "");
        received = (int64_t)(n > 0 ? n : 0) + header_bytes(msg->response_headers) + (body > 0 ? body : 0);
    }
    const char *error = NULL;
    if (unqueued)
        error = unqueued;
    else if (failed)
        error = msg->reason_phrase && *msg->reason_phrase ? msg->reason_phrase
                                                          : (S.status_phrase ? S.status_phrase(code) : NULL);
    net_info n = {
        .lib = "soup",
        .method = msg->method,
        .url = r->url,
        .status = status,
        .end_ns = t_end,
        .bytes_sent = sent,
        .bytes_received = received,
        .body_received = body,
        .content_type = !failed && msg->response_headers ? S.content_type(msg->response_headers, NULL) : NULL,
        .dns_ns = span(r->dns_start, r->dns_end, failed),
        .connect_ns = span(r->connect_start, r->connect_end, failed),
        .tls_ns = span(r->tls_start, r->tls_end, failed),
        .first_byte_ns = r->first_byte ? r->first_byte - r->t_start : -1,
        .total_ns = t_end - r->t_start,
        .error = failed ? (error && *error ? error : "transport failure") : NULL,
    };
    if (failed && !r->connect_end)
        n.first_byte_ns = -1;
    net_emit(&n);
}

static req2 *req_of(SoupMessage *msg)
{
    return msg && req_quark ? g_object_get_qdata((GObject *)msg, req_quark) : NULL;
}

static gboolean on_request_queued(GSignalInvocationHint *hint, guint n, const GValue *params, gpointer data)
{
    if (!agent_active() || agent_in_hook || n < 2)
        return TRUE;
    SoupMessage *msg = g_value_get_object(&params[1]);
    if (!msg)
        return TRUE;
    agent_in_hook++;
    req2 *r = req_of(msg);
    if (!r || r->ended) {
        /* a new request, or the app sending the same message again */
        SoupURI *uri = S.get_uri(msg);
        char *url = uri ? S.uri_to_string(uri, FALSE) : NULL;
        r = url ? calloc(1, sizeof(*r)) : NULL;
        if (r && (r->url = strdup(url))) {
            r->t_start = pacer_now_ns();
            g_object_set_qdata_full((GObject *)msg, req_quark, r, req_free);
            net_request_start(r->url, msg, r->t_start);
        } else {
            free(r);
        }
        g_free(url);
    }
    agent_in_hook--;
    return TRUE;
}

static gboolean on_network_event(GSignalInvocationHint *hint, guint n, const GValue *params, gpointer data)
{
    if (!agent_active() || n < 2)
        return TRUE;
    req2 *r = req_of(g_value_get_object(&params[0]));
    if (!r || r->ended)
        return TRUE;
    int64_t t = pacer_now_ns();
    switch ((GSocketClientEvent)g_value_get_enum(&params[1])) {
    case G_SOCKET_CLIENT_RESOLVING:
        r->dns_start = t;
        break;
    case G_SOCKET_CLIENT_RESOLVED:
        r->dns_end = t;
        break;
    case G_SOCKET_CLIENT_CONNECTING:
        if (!r->connect_start)
            r->connect_start = t;
        break;
    case G_SOCKET_CLIENT_CONNECTED:
        r->connect_end = t;
        break;
    case G_SOCKET_CLIENT_TLS_HANDSHAKING:
        r->tls_start = t;
        break;
    case G_SOCKET_CLIENT_TLS_HANDSHAKED:
        r->tls_end = t;
        break;
    default:
        break;
    }
    return TRUE;
}

static gboolean on_got_headers(GSignalInvocationHint *hint, guint n, const GValue *params, gpointer data)
{
    req2 *r = agent_active() && n >= 1 ? req_of(g_value_get_object(&params[0])) : NULL;
    if (r && !r->ended && !r->first_byte)
        r->first_byte = pacer_now_ns();
    return TRUE;
}

static gboolean on_finished(GSignalInvocationHint *hint, guint n, const GValue *params, gpointer data)
{
    if (!agent_active() || agent_in_hook || n < 1)
        return TRUE;
    SoupMessage *msg = g_value_get_object(&params[0]);
    req2 *r = req_of(msg);
    if (r && !r->ended) {
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
    req2 *r = req_of(msg);
    if (r && !r->ended) {
        agent_in_hook++;
        request_done(msg, r, "unqueued before it finished");
        agent_in_hook--;
    }
    return TRUE;
}

#define RESOLVE(field, name)                              \
    do {                                                  \
        *(void **)&S.field = agent_real(LIBSOUP2, name);  \
        if (!S.field && !missing)                         \
            missing = name;                               \
    } while (0)

void soup2_install(void)
{
    if (!agent_lib_loaded(LIBSOUP2))
        return;
    const char *missing = NULL;
    RESOLVE(session_get_type, "soup_session_get_type");
    RESOLVE(message_get_type, "soup_message_get_type");
    RESOLVE(get_uri, "soup_message_get_uri");
    RESOLVE(uri_to_string, "soup_uri_to_string");
    RESOLVE(content_type, "soup_message_headers_get_content_type");
    RESOLVE(content_length, "soup_message_headers_get_content_length");
    RESOLVE(headers_foreach, "soup_message_headers_foreach");
    RESOLVE(status_phrase, "soup_status_get_phrase");
    if (missing) {
        agent_note_once("soup2", "libsoup-2.4 lacks %s; its requests are not measured", missing);
        return;
    }
    req_quark = g_quark_from_static_string("pacer-agent-request2");
    GType session = S.session_get_type(), message = S.message_get_type();
    g_type_class_ref(session); /* signals exist once the classes do */
    g_type_class_ref(message);
    guint queued = g_signal_lookup("request-queued", session);
    guint unqueued = g_signal_lookup("request-unqueued", session);
    guint finished = g_signal_lookup("finished", message);
    guint network = g_signal_lookup("network-event", message);
    guint headers = g_signal_lookup("got-headers", message);
    if (!queued || !finished) {
        agent_note_once("soup2", "libsoup-2.4 has no request-queued/finished signal; its requests are not measured");
        return;
    }
    g_signal_add_emission_hook(queued, 0, on_request_queued, NULL, NULL);
    g_signal_add_emission_hook(finished, 0, on_finished, NULL, NULL);
    if (unqueued)
        g_signal_add_emission_hook(unqueued, 0, on_request_unqueued, NULL, NULL);
    if (network)
        g_signal_add_emission_hook(network, 0, on_network_event, NULL, NULL);
    if (headers)
        g_signal_add_emission_hook(headers, 0, on_got_headers, NULL, NULL);
}

/* Nothing waits at exit: a failed request's record is written when it
 * ends, with libsoup-2.4's text. */
void soup2_flush(void)
{
}
