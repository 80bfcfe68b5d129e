/* What the demo shop apps (shop-app.c on GTK 4 and libsoup-3.0,
 * shop-app-gtk3.c on GTK 3 and libsoup-2.4) share apart from their toolkit
 * and their libsoup: the options they have in common, the API server's
 * URLs and answers, the merchant's libcurl transfer, reading a streamed
 * answer, the request log (--log-requests). GLib, GIO and libcurl only.
 * Like the apps, no pacer code. */
#ifndef SHOP_COMMON_H
#define SHOP_COMMON_H

#include <gio/gio.h>

/* The options both apps take, and the app's name for its messages. */
typedef struct shop_options {
    const char *prog; /* "shop-app", "shop-app-gtk3" */
    const char *api;
    guint splash_ms, lazy_ms, linger_ms, jank_ms;
    gboolean auto_exit, log_requests;
} shop_options;

extern shop_options shop;

/* Reads the option at argv[*i] when it is one of shop_options' (--api URL,
 * --splash-ms N, --lazy-ms N, --linger-ms N, --jank-ms N, --auto-exit,
 * --log-requests), its value too (*i moves past it): TRUE. FALSE for any
 * other, or one missing its value. Exits with status 2 on a bad number. */
gboolean shop_option(int argc, char **argv, int *i);
/* A number of milliseconds (0 to 600000) for option or variable `name`;
 * exits with status 2 when `s` is not one. */
guint shop_parse_ms(const char *s, const char *name);

/* The API server's URL of `path` (g_free it). */
char *shop_api_url(const char *path);
/* --log-requests: one line per request on stderr ("PROG: request PATH
 * START END"), START and END CLOCK_MONOTONIC µs on the app's own clock. */
void shop_log_request(const char *path, gint64 start_us, gint64 end_us);
/* --log-requests: `msg`, a SoupMessage of either libsoup about to be sent,
 * starts now and ends when it emits "finished"; path_of names its path. */
void shop_log_message(GObject *msg, const char *(*path_of)(GObject *msg));

/* A string member of the API's JSON answer (`len` bytes, or -1: up to its
 * NUL): its text, g_strdup'ed, or NULL when absent. */
char *shop_answer_field(const char *json, gssize len, const char *field);
/* A merchant page's label from /api/test1's answer (NULL: failed with
 * `error`, said on stderr). g_free it. */
char *shop_merchant_text(const char *body, const GError *error);
/* Each "name" of /api/list's answer, through add(list, name); "no items"
 * when there is none. */
void shop_list_fill(const char *json, void (*add)(gpointer list, const char *name), gpointer list);

/* A GTask thread function: GET /api/test1 with libcurl, the whole transfer
 * on the worker thread — with curl_easy_perform, or the multi interface
 * when the task data is TRUE (GINT_TO_POINTER); returns the body (a string
 * to g_free) or an error. */
void shop_merchant_fetch(GTask *task, gpointer source, gpointer data, GCancellable *cancel);

/* Reads `stream` (taken) to its end in chunks, on the main loop, then calls
 * done(owner, body, error): the body NUL-terminated, or NULL and the error
 * (cancelled too); then closes the stream and drops `owner` (a reference
 * the caller gave). Each read takes the cancellable in `*cancel`, where
 * the owner keeps it (NULL once the owner is disposed). */
void shop_read_all(GInputStream *stream, GCancellable *const *cancel, GObject *owner,
                   void (*done)(GObject *owner, const char *body, GError *error));

#endif
