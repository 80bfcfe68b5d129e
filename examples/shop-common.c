/* What the demo shop apps share apart from their toolkit (shop-common.h). */
#include "shop-common.h"

#include <curl/curl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

shop_options shop = {.api = "http://127.0.0.1:8080", .splash_ms = 400, .lazy_ms = 1500, .linger_ms = 800};

/* ---- options ---- */

guint shop_parse_ms(const char *s, const char *name)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*end || v > 600000) {
        fprintf(stderr, "%s: bad %s '%s'\n", shop.prog, name, s);
        exit(2);
    }
    return (guint)v;
}

gboolean shop_option(int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    static const struct {
        const char *name;
        guint *ms;
    } numbers[] = {{"--splash-ms", &shop.splash_ms},
                   {"--lazy-ms", &shop.lazy_ms},
                   {"--linger-ms", &shop.linger_ms},
                   {"--jank-ms", &shop.jank_ms}};
    if (strcmp(a, "--api") == 0 && v) {
        shop.api = argv[++*i];
        return TRUE;
    }
    for (size_t k = 0; k < G_N_ELEMENTS(numbers); k++)
        if (strcmp(a, numbers[k].name) == 0 && v) {
            *numbers[k].ms = shop_parse_ms(argv[++*i], a);
            return TRUE;
        }
    if (strcmp(a, "--auto-exit") == 0)
        shop.auto_exit = TRUE;
    else if (strcmp(a, "--log-requests") == 0)
        shop.log_requests = TRUE;
    else
        return FALSE;
    return TRUE;
}

/* ---- the API server ---- */

char *shop_api_url(const char *path)
{
    return g_strconcat(shop.api, path, NULL);
}

void shop_log_request(const char *path, gint64 start_us, gint64 end_us)
{
    if (shop.log_requests)
        fprintf(stderr, "%s: request %s %" G_GINT64_FORMAT " %" G_GINT64_FORMAT "\n", shop.prog, path, start_us,
                end_us);
}

typedef struct logged {
    gint64 start_us;
    const char *(*path_of)(GObject *msg);
} logged;

static void on_message_finished(GObject *msg, gpointer data)
{
    logged *l = data;
    shop_log_request(l->path_of(msg), l->start_us, g_get_monotonic_time());
}

static void free_logged(gpointer data, GClosure *closure)
{
    (void)closure;
    g_free(data);
}

void shop_log_message(GObject *msg, const char *(*path_of)(GObject *msg))
{
    if (!shop.log_requests)
        return;
    logged *l = g_new(logged, 1);
    l->start_us = g_get_monotonic_time();
    l->path_of = path_of;
    g_signal_connect_data(msg, "finished", G_CALLBACK(on_message_finished), l, free_logged, 0);
}

char *shop_answer_field(const char *json, gssize len, const char *field)
{
    char *key = g_strdup_printf("\"%s\":\"", field);
    const char *t = json ? g_strstr_len(json, len, key) : NULL;
    char *value = NULL;
    if (t) {
        t += strlen(key);
        value = g_strndup(t, strcspn(t, "\""));
    }
    g_free(key);
    return value;
}

char *shop_merchant_text(const char *body, const GError *error)
{
    char *name = shop_answer_field(body, -1, "merchant");
    char *text;
    if (name) {
        text = g_strdup_printf("%s — open now", name);
    } else {
        text = g_strdup_printf("failed: %s", error ? error->message : "bad answer");
        if (error)
            g_printerr("%s: request failed: %s\n", shop.prog, error->message);
    }
    g_free(name);
    return text;
}

void shop_list_fill(const char *json, void (*add)(gpointer list, const char *name), gpointer list)
{
    int n = 0;
    for (const char *p = json; (p = strstr(p, "\"name\":\"")); n++) {
        p += strlen("\"name\":\"");
        char *name = g_strndup(p, strcspn(p, "\""));
        add(list, name);
        g_free(name);
    }
    if (n == 0)
        add(list, "no items");
}

/* ---- the merchant's transfer (libcurl, on a worker thread) ---- */

static size_t curl_sink(char *data, size_t size, size_t n, void *user)
{
    g_string_append_len(user, data, (gssize)(size * n));
    return size * n;
}

void shop_merchant_fetch(GTask *task, gpointer source, gpointer data, GCancellable *cancel)
{
    gboolean use_multi = GPOINTER_TO_INT(data);
    GString *body = g_string_new(NULL);
    char *url = shop_api_url("/api/test1");
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, curl_sink);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = CURLE_OK;
    gint64 start_us = g_get_monotonic_time();
    if (!use_multi) {
        rc = curl_easy_perform(h);
    } else {
        CURLM *m = curl_multi_init();
        curl_multi_add_handle(m, h);
        int running = 1;
        while (running) {
            curl_multi_perform(m, &running);
            if (running)
                curl_multi_poll(m, NULL, 0, 1000, NULL);
        }
        int left;
        CURLMsg *msg;
        while ((msg = curl_multi_info_read(m, &left)))
            if (msg->msg == CURLMSG_DONE)
                rc = msg->data.result;
        curl_multi_remove_handle(m, h);
        curl_multi_cleanup(m);
    }
    shop_log_request("/api/test1", start_us, g_get_monotonic_time());
    curl_easy_cleanup(h);
    g_free(url);
    if (rc != CURLE_OK) {
        g_string_free(body, TRUE);
        g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", curl_easy_strerror(rc));
        return;
    }
    g_task_return_pointer(task, g_string_free(body, FALSE), g_free);
}

/* ---- a streamed answer ---- */

typedef struct reading {
    GInputStream *stream;
    GCancellable *const *cancel;
    GObject *owner;
    void (*done)(GObject *owner, const char *body, GError *error);
    GByteArray *buf;
    guint8 chunk[4096];
} reading;

static void read_more(reading *r);

static void on_chunk(GObject *src, GAsyncResult *res, gpointer user)
{
    reading *r = user;
    GError *error = NULL;
    gssize n = g_input_stream_read_finish(G_INPUT_STREAM(src), res, &error);
    if (n > 0) {
        g_byte_array_append(r->buf, r->chunk, (guint)n);
        read_more(r);
        return;
    }
    if (n == 0)
        g_byte_array_append(r->buf, (const guint8 *)"", 1);
    r->done(r->owner, n == 0 ? (const char *)r->buf->data : NULL, error);
    g_clear_error(&error);
    g_input_stream_close(r->stream, NULL, NULL);
    g_object_unref(r->stream);
    g_byte_array_unref(r->buf);
    g_object_unref(r->owner);
    g_free(r);
}

static void read_more(reading *r)
{
    g_input_stream_read_async(r->stream, r->chunk, sizeof(r->chunk), G_PRIORITY_DEFAULT, *r->cancel, on_chunk, r);
}

void shop_read_all(GInputStream *stream, GCancellable *const *cancel, GObject *owner,
                   void (*done)(GObject *owner, const char *body, GError *error))
{
    reading *r = g_new0(reading, 1);
    r->stream = stream;
    r->cancel = cancel;
    r->owner = owner;
    r->done = done;
    r->buf = g_byte_array_new();
    read_more(r);
}
