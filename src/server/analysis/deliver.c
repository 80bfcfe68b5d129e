/* Deliveries to webhooks and an issue tracker (deliver.h). */
#include "deliver.h"
#include "issue_json.h"
#include "issues_db.h"

#include <pacer/base/clock.h>
#include <pacer/base/json.h>
#include <pacer/base/random.h>
#include <pacer/base/thread.h>

#include <curl/curl.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define BATCH 16
#define MAX_ANSWER (64u << 10)
#define FIRST_DELAY_NS 1000000000LL
#define MAX_DELAY_NS (600LL * 1000000000LL)
#define MAX_RETRY_AFTER_S 3600
#define IDLE_NS (60LL * 1000000000LL) /* looks for due deliveries at least this often */
#define USER_AGENT "pacerd/" PACER_SERVER_VERSION

#ifndef PACER_SERVER_VERSION
#define PACER_SERVER_VERSION "0.1.0"
#endif

struct deliver {
    issues_db *db;
    const deliver_target *targets;
    size_t n_targets;
    const ana_config *cfg;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping, kicked;
    deliver_stats stats;
};

typedef struct answer {
    char data[MAX_ANSWER + 1];
    size_t len;
    long retry_after;
} answer;

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
    answer *a = ctx;
    size_t add = size * n, room = MAX_ANSWER - a->len;
    memcpy(a->data + a->len, p, add < room ? add : room);
    a->len += add < room ? add : room;
    a->data[a->len] = 0;
    return add; /* the rest of a long answer is not needed */
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
    answer *a = ctx;
    size_t len = size * n;
    if (len > 12 && strncasecmp(p, "Retry-After:", 12) == 0) {
        long s = strtol(p + 12, NULL, 10);
        if (s > 0)
            a->retry_after = s > MAX_RETRY_AFTER_S ? MAX_RETRY_AFTER_S : s;
    }
    return len;
}

/* One POST. Returns the HTTP status, or 0 with the reason in err when no
 * answer came. */
static long post(const char *url, struct curl_slist *headers, const char *body, answer *a, char *err, size_t n)
{
    CURL *h = curl_easy_init();
    if (!h) {
        snprintf(err, n, "cannot start libcurl");
        return 0;
    }
    char ebuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L); /* also how long a stop may wait for it */
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_USERAGENT, USER_AGENT);
    CURLcode cr = curl_easy_perform(h);
    long status = 0;
    if (cr == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    else
        snprintf(err, n, "%s", ebuf[0] ? ebuf : curl_easy_strerror(cr));
    curl_easy_cleanup(h);
    return status;
}

/* What a sending came to. */
typedef struct outcome {
    enum { OUT_DONE, OUT_RETRY, OUT_GIVE_UP } what;
    long retry_after;
    char error[300];
    char *tracker; /* github: {"number":…,"url":…} of a new issue */
} outcome;

static void judge_status(long status, const answer *a, const char *err, outcome *o)
{
    if (status >= 200 && status < 300) {
        o->what = OUT_DONE;
        return;
    }
    o->retry_after = a->retry_after;
    if (!status)
        snprintf(o->error, sizeof o->error, "%s", err);
    else
        snprintf(o->error, sizeof o->error, "HTTP %ld: %.200s", status, a->data);
    o->error[strcspn(o->error, "\r\n")] = 0;
    o->what = !status || status == 408 || status == 425 || status == 429 || status >= 500 ? OUT_RETRY : OUT_GIVE_UP;
}

static void send_webhook(const deliver_target *t, const iss_delivery *dv, outcome *o)
{
    char key[96], event[64];
    snprintf(key, sizeof key, "Idempotency-Key: %s", dv->key);
    snprintf(event, sizeof event, "X-Pacer-Event: %s", dv->event);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, key);
    h = curl_slist_append(h, event);
    answer *a = calloc(1, sizeof *a);
    char err[CURL_ERROR_SIZE + 64] = "";
    long status = a && h ? post(t->url, h, dv->payload, a, err, sizeof err) : 0;
    if (!a || !h)
        snprintf(err, sizeof err, "out of memory");
    judge_status(status, a ? a : &(answer){0}, err, o);
    curl_slist_free_all(h);
    free(a);
}

typedef struct tracker_read {
    const char *id;
    char *json;
} tracker_read;

static int read_tracker(void *ctx, sqlite3 *db)
{
    tracker_read *t = ctx;
    return issues_db_tracker_get(db, t->id, &t->json);
}

static void send_github(deliver *d, const deliver_target *t, const iss_delivery *dv, outcome *o)
{
    char url[2048];
    size_t ul = strlen(t->url);
    while (ul && t->url[ul - 1] == '/')
        ul--;
    bool create = strcmp(dv->event, "issue.new") == 0;
    if (create) {
        snprintf(url, sizeof url, "%.*s/issues", (int)ul, t->url);
    } else {
        tracker_read tr = {dv->issue, NULL};
        double number = 0;
        if (issues_db_read(d->db, read_tracker, &tr) < 0) {
            o->what = OUT_RETRY;
            snprintf(o->error, sizeof o->error, "the store could not be read");
            return;
        }
        bool known = tr.json && issue_json_num(tr.json, "number", &number) && number > 0;
        free(tr.json);
        if (!known) {
            o->what = OUT_GIVE_UP;
            snprintf(o->error, sizeof o->error, "the issue was never filed in the tracker: no issue to comment on");
            return;
        }
        snprintf(url, sizeof url, "%.*s/issues/%.0f/comments", (int)ul, t->url, number);
    }
    char auth[4096];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", t->token ? t->token : "");
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/vnd.github+json");
    h = curl_slist_append(h, "X-GitHub-Api-Version: 2022-11-28");
    h = curl_slist_append(h, auth);
    memset(auth, 0, sizeof auth);
    answer *a = calloc(1, sizeof *a);
    char err[CURL_ERROR_SIZE + 64] = "";
    long status = a && h ? post(url, h, dv->payload, a, err, sizeof err) : 0;
    if (!a || !h)
        snprintf(err, sizeof err, "out of memory");
    judge_status(status, a ? a : &(answer){0}, err, o);
    if (o->what == OUT_DONE && create) {
        double number = 0;
        char html[1024] = "";
        if (!issue_json_num(a->data, "number", &number) || number <= 0) {
            o->what = OUT_GIVE_UP;
            snprintf(o->error, sizeof o->error, "HTTP %ld without the new issue's number", status);
        } else {
            issue_json_str(a->data, "html_url", html, sizeof html);
            jbuf b;
            jbuf_init(&b);
            jbuf_open(&b, '{');
            jbuf_kv_str(&b, "kind", "github");
            jbuf_kv_i64(&b, "number", (int64_t)number);
            if (html[0])
                jbuf_kv_str(&b, "url", html);
            jbuf_close(&b, '}');
            o->tracker = jbuf_steal(&b, NULL);
            jbuf_free(&b);
        }
    }
    curl_slist_free_all(h);
    free(a);
}

typedef struct update {
    const iss_delivery *dv;
    const outcome *o;
    int64_t attempts, next_ns;
    const char *state;
} update;

static int write_update(void *ctx, sqlite3 *db)
{
    update *u = ctx;
    int r = issues_db_delivery_update(db, u->dv->seq, u->state, u->attempts, u->next_ns,
                                u->o->error[0] ? u->o->error : NULL);
    if (r == 0 && u->o->tracker)
        r = issues_db_tracker_set(db, u->dv->issue, u->o->tracker);
    return r;
}

static int64_t backoff_ns(int64_t attempts, long retry_after)
{
    int64_t d = FIRST_DELAY_NS;
    for (int64_t k = 1; k < attempts && d < MAX_DELAY_NS; k++)
        d *= 2;
    if (d > MAX_DELAY_NS)
        d = MAX_DELAY_NS;
    /* a random half to whole of it: senders that failed together come back apart */
    d = d / 2 + (int64_t)(random_u64() % (uint64_t)(d / 2 + 1));
    if (retry_after * 1000000000LL > d)
        d = retry_after * 1000000000LL;
    return d;
}

static void deliver_one(deliver *d, const iss_delivery *dv)
{
    outcome o = {0};
    if (dv->target < 0 || (size_t)dv->target >= d->n_targets) {
        o.what = OUT_GIVE_UP; /* a target of an earlier configuration */
        snprintf(o.error, sizeof o.error, "no target %d is configured", dv->target);
    } else if (d->targets[dv->target].kind == TARGET_KIND_GITHUB) {
        send_github(d, &d->targets[dv->target], dv, &o);
    } else {
        send_webhook(&d->targets[dv->target], dv, &o);
    }
    update u = {dv, &o, dv->attempts + 1, 0, "delivered"};
    if (o.what == OUT_RETRY && (double)u.attempts >= d->cfg->webhook_attempts)
        o.what = OUT_GIVE_UP;
    if (o.what == OUT_RETRY) {
        u.state = "pending";
        u.next_ns = wall_ns() + backoff_ns(u.attempts, o.retry_after);
    } else if (o.what == OUT_GIVE_UP) {
        u.state = "failed";
    }
    int r = issues_db_write(d->db, write_update, &u);
    pthread_mutex_lock(&d->lock);
    if (r == 0 && o.what == OUT_DONE)
        d->stats.delivered++;
    else if (o.what == OUT_RETRY)
        d->stats.attempts_failed++;
    else if (o.what == OUT_GIVE_UP)
        d->stats.given_up++;
    pthread_mutex_unlock(&d->lock);
    if (o.what == OUT_GIVE_UP)
        fprintf(stderr, "pacerd: delivery of %s (%s) to target %d given up after %lld attempt(s): %s\n", dv->issue,
                dv->event, dv->target, (long long)u.attempts, o.error);
    free(o.tracker);
}

typedef struct due {
    int64_t now;
    iss_delivery *list;
    size_t n;
    int64_t next;
} due;

static int read_due(void *ctx, sqlite3 *db)
{
    due *x = ctx;
    int r = issues_db_deliveries_due(db, x->now, BATCH, &x->list, &x->n);
    if (r == 0)
        r = issues_db_deliveries_next(db, &x->next);
    return r;
}

static void *deliver_main(void *arg)
{
    deliver *d = arg;
    pthread_mutex_lock(&d->lock);
    while (!d->stopping) {
        d->kicked = false;
        pthread_mutex_unlock(&d->lock);
        due x = {.now = wall_ns()};
        int r = issues_db_read(d->db, read_due, &x);
        for (size_t i = 0; r == 0 && i < x.n; i++) {
            pthread_mutex_lock(&d->lock);
            bool stop = d->stopping;
            pthread_mutex_unlock(&d->lock);
            if (stop)
                break;
            deliver_one(d, &x.list[i]);
        }
        for (size_t i = 0; i < x.n; i++)
            free(x.list[i].payload);
        free(x.list);
        pthread_mutex_lock(&d->lock);
        if (d->stopping)
            break;
        if (r == 0 && x.n == BATCH)
            continue; /* more may be due */
        if (d->kicked)
            continue;
        /* next_ns is wall time; the wait is on the monotonic clock */
        int64_t wait = IDLE_NS;
        if (r == 0 && x.next != INT64_MAX) {
            int64_t in = x.next - wall_ns();
            if (in < wait)
                wait = in > 0 ? in : 0;
        }
        if (x.n && wait == 0)
            continue;
        int64_t until = mono_ns() + (wait > 0 ? wait : 1000000LL);
        while (!d->stopping && !d->kicked && cond_wait_until(&d->wake, &d->lock, until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

deliver *deliver_start(issues_db *db, const deliver_target *targets, size_t n, const ana_config *cfg)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return NULL;
    deliver *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    *d = (deliver){.db = db, .targets = targets, .n_targets = n, .cfg = cfg};
    pthread_mutex_init(&d->lock, NULL);
    cond_init_monotonic(&d->wake);
    if (thread_start(&d->thread, "pacerd-deliver", deliver_main, d) < 0) {
        free(d);
        return NULL;
    }
    return d;
}

void deliver_kick(void *ctx)
{
    deliver *d = ctx;
    if (!d)
        return;
    pthread_mutex_lock(&d->lock);
    d->kicked = true;
    pthread_cond_signal(&d->wake);
    pthread_mutex_unlock(&d->lock);
}

void deliver_stop(deliver *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->lock);
    d->stopping = true;
    pthread_cond_signal(&d->wake);
    pthread_mutex_unlock(&d->lock);
    pthread_join(d->thread, NULL);
    pthread_mutex_destroy(&d->lock);
    pthread_cond_destroy(&d->wake);
    free(d);
}

void deliver_get_stats(deliver *d, deliver_stats *ret)
{
    if (!d) {
        memset(ret, 0, sizeof *ret);
        return;
    }
    pthread_mutex_lock(&d->lock);
    *ret = d->stats;
    pthread_mutex_unlock(&d->lock);
}
