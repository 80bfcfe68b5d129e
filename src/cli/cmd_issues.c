/* pacer issues: the issues pacerd found (docs/server.md, "Issues API"), as
 * a table a person reads, or one issue in full, or a status set by hand.
 * The admin token comes from --token-file or $PACER_ADMIN_TOKEN, never from
 * the command line (which every user of the machine can read). */
#include "commands.h"

#include <pacer/base/json.h>

#include <pacer/base/curl_dl.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ANSWER (64u << 20)

static const char usage[] =
    "usage: pacer issues --server URL --app APP [OPTIONS]        the app's issues, as a table\n"
    "       pacer issues --server URL [OPTIONS] ID               one issue in full\n"
    "       pacer issues --server URL --resolve ID | --reopen ID  set its status by hand\n"
    "\n"
    "The issues pacerd found in what an app's runs uploaded (docs/server.md,\n"
    "\"Issues\"): jank and hangs by stack, failing, slow and large requests by\n"
    "URL pattern, slow pages and start-ups, frozen frames, N+1 and serial\n"
    "requests inside a page load, leaks, and regressions between versions;\n"
    "each graded critical, major or minor, most recently seen first.\n"
    "\n"
    "Options:\n"
    "  --server URL        pacerd, e.g. http://127.0.0.1:4318\n"
    "  --app APP           the app whose issues to list\n"
    "  --token-file FILE   pacerd's admin token, on the file's first line\n"
    "                      (default: $PACER_ADMIN_TOKEN)\n"
    "  --status LIST       new, ongoing, resolved, regressed (comma-separated; default: all)\n"
    "  --kind LIST         jank, hang, leak, net_error, large_image, large_payload,\n"
    "                      slow_request, slow_page, slow_startup, frozen_frames,\n"
    "                      n_plus_one, serial_requests, page_regression, startup_regression\n"
    "  --severity LIST     critical, major, minor\n"
    "  --version V         only issues seen in version V\n"
    "  --limit N           at most N issues (1-100, default 50)\n"
    "  --resolve ID        mark issue ID resolved; it regresses when seen in a later version\n"
    "  --reopen ID         mark issue ID ongoing again\n"
    "  --format text|json  text (default), or the API's JSON as it came\n"
    "  --ca FILE           CA certificates (PEM) for an https:// server\n"
    "  -h, --help          this text\n"
    "\n"
    "Exit status: 0 done, 1 the server refused (the reason is printed), 2 usage,\n"
    "token or connection error.\n";


/* libcurl, loaded by run() before any request. */
static const curl_api *cu;

/* One request; the HTTP status, or 0 (message printed). */
static long request(const char *method, const char *url, const char *token, const char *body, const char *ca,
                    cli_answer *a)
{
    CURL *h = cu->easy_init();
    if (!h) {
        fprintf(stderr, "pacer issues: cannot start libcurl\n");
        return 0;
    }
    char *auth = NULL;
    if (asprintf(&auth, "Authorization: Bearer %s", token) < 0) {
        cu->easy_cleanup(h);
        return 0;
    }
    struct curl_slist *headers = cu->slist_append(NULL, auth);
    if (body)
        headers = cu->slist_append(headers, "Content-Type: application/json");
    memset(auth, 0, strlen(auth));
    free(auth);
    cu->easy_setopt(h, CURLOPT_URL, url);
    cu->easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    cu->easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        cu->easy_setopt(h, CURLOPT_POSTFIELDS, body);
    cu->easy_setopt(h, CURLOPT_WRITEFUNCTION, cli_answer_write);
    cu->easy_setopt(h, CURLOPT_WRITEDATA, a);
    cu->easy_setopt(h, CURLOPT_TIMEOUT, 60L);
    cu->easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
    cu->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    cu->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    cu->easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    if (ca)
        cu->easy_setopt(h, CURLOPT_CAINFO, ca);
    CURLcode cr = cu->easy_perform(h);
    long status = 0;
    if (cr == CURLE_OK)
        cu->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    else
        fprintf(stderr, "pacer issues: %s: %s\n", url,
                a->too_big ? "the answer is larger than 64 MiB" : cu->easy_strerror(cr));
    cu->slist_free_all(headers);
    cu->easy_cleanup(h);
    return status;
}

/* ---- reading the answer ---- */

/* A JSON value's text, for the few fields shown. */
typedef struct field {
    const char *name;
    char text[512];
    bool set;
} field;

/* Reads the members of the object at r into the fields named (strings and
 * numbers as text); nested values are skipped, or given to nested(). */
static bool read_fields(jread *r, field *f, size_t n, void (*nested)(void *ctx, jread *r, const char *key, size_t kl),
                        void *ctx)
{
    if (!jread_enter_object(r))
        return false;
    const char *k;
    size_t kl;
    int m;
    while ((m = jread_member(r, &k, &kl)) > 0) {
        jtype t = jread_peek(r);
        if ((t == JT_OBJECT || t == JT_ARRAY) && nested) {
            nested(ctx, r, k, kl);
            continue;
        }
        jvalue v;
        if (!jread_value(r, &v))
            return false;
        for (size_t i = 0; i < n; i++)
            if (strlen(f[i].name) == kl && memcmp(f[i].name, k, kl) == 0 && (v.type == JT_STRING || v.type == JT_NUMBER)) {
                snprintf(f[i].text, sizeof f[i].text, "%.*s", (int)v.len, v.s);
                f[i].set = true;
            }
    }
    return m == 0;
}

#define F(name) {name, "", false}

static void skip(jread *r)
{
    jvalue v;
    jread_value(r, &v);
}

static const char *get(const field *f, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(f[i].name, name) == 0)
            return f[i].set ? f[i].text : "";
    return "";
}

static void skip_nested(void *ctx, jread *r, const char *key, size_t kl)
{
    skip(r);
}

/* The table of a list. */
static int print_list(char *json, size_t len)
{
    jread r;
    jread_init(&r, json, len, NULL, 0);
    if (!jread_enter_object(&r))
        return -EINVAL;
    const char *k;
    size_t kl;
    size_t shown = 0;
    char next[128] = "";
    bool header = false;
    while (jread_member(&r, &k, &kl) > 0) {
        if (kl == 4 && memcmp(k, "next", 4) == 0) {
            jvalue v;
            if (jread_value(&r, &v) && v.type == JT_STRING)
                snprintf(next, sizeof next, "%.*s", (int)v.len, v.s);
            continue;
        }
        if (!(kl == 6 && memcmp(k, "issues", 6) == 0) || !jread_enter_array(&r)) {
            skip(&r);
            continue;
        }
        while (jread_element(&r) > 0) {
            field f[] = {F("id"), F("kind"), F("title"), F("severity"), F("status"), F("count"), F("sessions"),
                         F("first_version"), F("last_version")};
            size_t nf = sizeof f / sizeof f[0];
            if (!read_fields(&r, f, nf, skip_nested, NULL))
                return -EINVAL;
            if (!header) {
                printf("%-16s  %-8s  %-9s  %-18s  %6s  %5s  %-15s  %s\n", "ID", "SEVERITY", "STATUS", "KIND", "COUNT",
                       "SESS", "VERSIONS", "TITLE");
                header = true;
            }
            char versions[64];
            const char *a = get(f, nf, "first_version"), *b = get(f, nf, "last_version");
            if (strcmp(a, b) == 0)
                snprintf(versions, sizeof versions, "%.15s", a);
            else
                snprintf(versions, sizeof versions, "%.6s..%.6s", a, b);
            printf("%-16s  %-8s  %-9s  %-18s  %6s  %5s  %-15s  %s\n", get(f, nf, "id"), get(f, nf, "severity"),
                   get(f, nf, "status"), get(f, nf, "kind"), get(f, nf, "count"), get(f, nf, "sessions"), versions,
                   get(f, nf, "title"));
            shown++;
        }
    }
    if (!shown)
        printf("no issues\n");
    if (next[0])
        printf("(more: pacer issues --server … --app … with --limit, or GET /api/v1/issues?…&cursor=%s)\n", next);
    return 0;
}

/* ---- one issue ---- */

typedef struct detail {
    field grade[3];    /* version, rule, lost_ms_per_session */
    field dist[5];     /* unit, p50, p90, max, count */
    char pages[1024];
    char statuses[1024];
    char stack[8192];
    char versions[4096];
    char tracker[512];
} detail;

static void kv_list(jread *r, char *out, size_t size)
{
    size_t o = 0;
    out[0] = 0;
    if (!jread_enter_object(r))
        return;
    const char *k;
    size_t kl;
    while (jread_member(r, &k, &kl) > 0) {
        jvalue v;
        if (!jread_value(r, &v))
            return;
        if (o < size)
            o += (size_t)snprintf(out + o, size - o, "%s%.*s %.*s", o ? ", " : "", (int)kl, k, (int)v.len, v.s);
    }
}

static void stack_lines(jread *r, char *out, size_t size)
{
    size_t o = strlen(out);
    if (!jread_enter_array(r))
        return;
    while (jread_element(r) > 0) {
        field f[] = {F("function"), F("module"), F("file"), F("line"), F("in_app")};
        if (!jread_enter_object(r))
            return;
        const char *k;
        size_t kl;
        bool in_app = false;
        while (jread_member(r, &k, &kl) > 0) {
            jvalue v;
            if (!jread_value(r, &v))
                return;
            if (kl == 6 && memcmp(k, "in_app", 6) == 0)
                in_app = v.type == JT_TRUE;
            for (size_t i = 0; i < 4; i++)
                if (strlen(f[i].name) == kl && memcmp(f[i].name, k, kl) == 0) {
                    snprintf(f[i].text, sizeof f[i].text, "%.*s", (int)v.len, v.s);
                    f[i].set = true;
                }
        }
        if (o < size)
            o += (size_t)snprintf(out + o, size - o, "    %s %s%s%s%s%s%s%s%s\n", in_app ? "*" : " ",
                                  f[0].set ? f[0].text : "?", f[1].set ? " (" : "", f[1].text, f[1].set ? ")" : "",
                                  f[2].set ? "  " : "", f[2].text, f[3].set ? ":" : "", f[3].text);
    }
}

static void example_nested(void *ctx, jread *r, const char *key, size_t kl)
{
    detail *d = ctx;
    if (kl == 5 && memcmp(key, "stack", 5) == 0)
        stack_lines(r, d->stack, sizeof d->stack);
    else
        skip(r);
}

static void evidence_nested(void *ctx, jread *r, const char *key, size_t kl)
{
    detail *d = ctx;
    if (kl == 5 && memcmp(key, "pages", 5) == 0) {
        kv_list(r, d->pages, sizeof d->pages);
    } else if (kl == 8 && memcmp(key, "statuses", 8) == 0) {
        kv_list(r, d->statuses, sizeof d->statuses);
    } else if (kl == 12 && memcmp(key, "distribution", 12) == 0) {
        read_fields(r, d->dist, 5, skip_nested, NULL);
    } else if (kl == 7 && memcmp(key, "example", 7) == 0) {
        read_fields(r, NULL, 0, example_nested, d);
    } else {
        skip(r);
    }
}

static void issue_nested(void *ctx, jread *r, const char *key, size_t kl)
{
    detail *d = ctx;
    if (kl == 8 && memcmp(key, "evidence", 8) == 0) {
        read_fields(r, NULL, 0, evidence_nested, d);
    } else if (kl == 5 && memcmp(key, "grade", 5) == 0) {
        read_fields(r, d->grade, 3, skip_nested, NULL);
    } else if (kl == 7 && memcmp(key, "tracker", 7) == 0) {
        field f[] = {F("url"), F("number")};
        read_fields(r, f, 2, skip_nested, NULL);
        snprintf(d->tracker, sizeof d->tracker, "#%.32s %.400s", f[1].text, f[0].text);
    } else if (kl == 8 && memcmp(key, "versions", 8) == 0 && jread_enter_array(r)) {
        size_t o = (size_t)snprintf(d->versions, sizeof d->versions, "    %-16s %-5s %7s %7s %8s %10s %10s\n",
                                    "VERSION", "ISSUE", "COUNT", "OF", "SESSIONS", "P50", "P90");
        while (jread_element(r) > 0) {
            field f[] = {F("version"), F("count"), F("of"), F("sessions"), F("p50"), F("p90")};
            bool issue = false;
            if (!jread_enter_object(r))
                break;
            const char *k;
            size_t kkl;
            while (jread_member(r, &k, &kkl) > 0) {
                jvalue v;
                if (!jread_value(r, &v))
                    break;
                if (kkl == 5 && memcmp(k, "issue", 5) == 0)
                    issue = v.type == JT_TRUE;
                for (size_t i = 0; i < 6; i++)
                    if (strlen(f[i].name) == kkl && memcmp(f[i].name, k, kkl) == 0) {
                        snprintf(f[i].text, sizeof f[i].text, "%.*s", (int)v.len, v.s);
                        f[i].set = true;
                    }
            }
            if (o < sizeof d->versions)
                o += (size_t)snprintf(d->versions + o, sizeof d->versions - o,
                                      "    %-16s %-5s %7s %7s %8s %10.10s %10.10s\n", f[0].text, issue ? "yes" : "no",
                                      f[1].text, f[2].text, f[3].text, f[4].set ? f[4].text : "-",
                                      f[5].set ? f[5].text : "-");
        }
    } else {
        skip(r);
    }
}

static int print_one(char *json, size_t len)
{
    jread r;
    jread_init(&r, json, len, NULL, 0);
    field f[] = {F("id"), F("kind"), F("title"), F("severity"), F("status"), F("count"), F("sessions"),
                 F("first_version"), F("last_version"), F("fingerprint"), F("first_seen"), F("last_seen"), F("app")};
    size_t nf = sizeof f / sizeof f[0];
    detail d = {.grade = {F("version"), F("rule"), F("lost_ms_per_session")},
                .dist = {F("unit"), F("p50"), F("p90"), F("max"), F("count")}};
    if (!read_fields(&r, f, nf, issue_nested, &d))
        return -EINVAL;
    printf("%s\n\n", get(f, nf, "title"));
    printf("  id           %s\n  app          %s\n  kind         %s\n  severity     %s\n  status       %s\n",
           get(f, nf, "id"), get(f, nf, "app"), get(f, nf, "kind"), get(f, nf, "severity"), get(f, nf, "status"));
    if (f[9].set)
        printf("  fingerprint  %s\n", f[9].text);
    printf("  seen         %s sessions, %s times, versions %s to %s\n", get(f, nf, "sessions"), get(f, nf, "count"),
           get(f, nf, "first_version"), get(f, nf, "last_version"));
    for (int k = 10; k < 12; k++)
        if (f[k].set) {
            time_t t = (time_t)strtoll(f[k].text, NULL, 10);
            char when[64];
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime(&t));
            printf("  %-12s %s\n", k == 10 ? "first seen" : "last seen", when);
        }
    if (d.grade[1].set)
        printf("  grade        %s (version %s)\n", d.grade[1].text, d.grade[0].text);
    if (d.tracker[0])
        printf("  filed        %s\n", d.tracker);
    if (d.dist[1].set)
        printf("  values       n %s, p50 %s, p90 %s, max %s (%s)\n", d.dist[4].text, d.dist[1].text, d.dist[2].text,
               d.dist[3].text, d.dist[0].text);
    if (d.pages[0])
        printf("  pages        %s\n", d.pages);
    if (d.statuses[0])
        printf("  outcomes     %s\n", d.statuses);
    if (d.stack[0])
        printf("  stack (* the app's own code):\n%s", d.stack);
    if (d.versions[0])
        printf("  versions:\n%s", d.versions);
    return 0;
}

/* ---- the command ---- */

/* Appends &name=value (escaped) to the query. */
static bool add_param(CURL *h, char *q, size_t size, const char *name, const char *value)
{
    if (!value)
        return true;
    char *e = cu->easy_escape(h, value, 0);
    if (!e)
        return false;
    size_t o = strlen(q);
    int n = snprintf(q + o, size - o, "%s%s=%s", o ? "&" : "", name, e);
    cu->free(e);
    return n > 0 && (size_t)n < size - o;
}

static bool id_ok(const char *s)
{
    if (strlen(s) != 16)
        return false;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return false;
    return true;
}

static int run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"server", required_argument, NULL, 'S'},     {"app", required_argument, NULL, 'a'},
        {"token-file", required_argument, NULL, 't'}, {"status", required_argument, NULL, 's'},
        {"kind", required_argument, NULL, 'k'},       {"severity", required_argument, NULL, 'v'},
        {"version", required_argument, NULL, 'V'},    {"limit", required_argument, NULL, 'l'},
        {"resolve", required_argument, NULL, 'R'},    {"reopen", required_argument, NULL, 'O'},
        {"format", required_argument, NULL, 'f'},     {"ca", required_argument, NULL, 'c'},
        {"token", required_argument, NULL, 'T'},      {"help", no_argument, NULL, 'h'},
        {0},
    };
    const char *server = NULL, *app = NULL, *token_file = NULL, *status = NULL, *kind = NULL, *severity = NULL;
    const char *version = NULL, *limit = NULL, *set_id = NULL, *set_status = NULL, *ca = NULL;
    int format = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        switch (c) {
        case 'S': server = optarg; break;
        case 'a': app = optarg; break;
        case 't': token_file = optarg; break;
        case 's': status = optarg; break;
        case 'k': kind = optarg; break;
        case 'v': severity = optarg; break;
        case 'V': version = optarg; break;
        case 'l': limit = optarg; break;
        case 'R':
        case 'O':
            if (set_id) {
                fprintf(stderr, "pacer issues: --resolve and --reopen take one issue at a time\n");
                return 2;
            }
            set_id = optarg;
            set_status = c == 'R' ? "resolved" : "ongoing";
            break;
        case 'f':
            if ((format = cli_format(optarg)) < 0) {
                fprintf(stderr, "pacer issues: --format %s: expected text or json\n", optarg);
                return 2;
            }
            break;
        case 'c': ca = optarg; break;
        case 'T':
            fprintf(stderr, "pacer issues: --token would show pacerd's admin token to every user of this machine "
                            "(ps, /proc); put it in a file (--token-file FILE) or in $PACER_ADMIN_TOKEN\n");
            return 2;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    const char *id = optind < argc ? argv[optind++] : NULL;
    if (optind < argc || !server || (!id && !set_id && !app)) {
        fprintf(stderr, "pacer issues: %s\n\n%s",
                optind < argc ? "expected at most one issue id"
                : !server     ? "--server URL is required"
                              : "--app APP is required to list issues (or give an issue id)",
                usage);
        return 2;
    }
    if ((id && !id_ok(id)) || (set_id && !id_ok(set_id))) {
        fprintf(stderr, "pacer issues: %s: expected an issue id, 16 hex digits as the list shows them\n",
                id && !id_ok(id) ? id : set_id);
        return 2;
    }
    if (limit) {
        char *end;
        long n = strtol(limit, &end, 10);
        if (*end || n < 1 || n > 100) {
            fprintf(stderr, "pacer issues: --limit %s: expected 1 to 100\n", limit);
            return 2;
        }
    }
    char *token = NULL;
    if (token_file)
        token = cli_token_file("issues", token_file);
    else if (getenv("PACER_ADMIN_TOKEN") && *getenv("PACER_ADMIN_TOKEN"))
        token = strdup(getenv("PACER_ADMIN_TOKEN"));
    else
        fprintf(stderr, "pacer issues: pacerd's admin token is needed: --token-file FILE or $PACER_ADMIN_TOKEN\n");
    if (!token)
        return 2;

    cu = curl_api_get();
    if (!cu) {
        fprintf(stderr, "pacer issues: libcurl (libcurl.so.4) cannot be loaded: install it to talk to pacerd\n");
        free(token);
        return 2;
    }
    size_t sl = strlen(server);
    while (sl && server[sl - 1] == '/')
        sl--;
    CURL *esc = cu->easy_init();
    char query[4096] = "", url[8192];
    bool ok = esc != NULL;
    if (!id && !set_id)
        ok = ok && add_param(esc, query, sizeof query, "app", app) && add_param(esc, query, sizeof query, "status", status) &&
             add_param(esc, query, sizeof query, "kind", kind) && add_param(esc, query, sizeof query, "severity", severity) &&
             add_param(esc, query, sizeof query, "version", version) && add_param(esc, query, sizeof query, "limit", limit);
    cu->easy_cleanup(esc);
    if (!ok) {
        fprintf(stderr, "pacer issues: the query is too long\n");
        free(token);
        return 2;
    }
    const char *target = set_id ? set_id : id;
    if (target)
        snprintf(url, sizeof url, "%.*s/api/v1/issues/%s", (int)sl, server, target);
    else
        snprintf(url, sizeof url, "%.*s/api/v1/issues?%s", (int)sl, server, query);
    char body[64];
    if (set_id)
        snprintf(body, sizeof body, "{\"status\":\"%s\"}", set_status);
    cli_answer a = {.max = MAX_ANSWER};
    long st = request(set_id ? "PATCH" : "GET", url, token, set_id ? body : NULL, ca, &a);
    memset(token, 0, strlen(token));
    free(token);
    int rc = 0;
    if (!st) {
        rc = 2;
    } else if (st != 200) {
        fprintf(stderr, "pacer issues: %.*s: HTTP %ld%s%.400s\n", (int)sl, server, st, a.data ? ": " : "",
                a.data ? a.data : "");
        rc = 1;
    } else if (format == 1) {
        fwrite(a.data, 1, a.len, stdout);
        fputc('\n', stdout);
    } else {
        if (set_id)
            printf("issue %s is %s now\n\n", set_id, set_status);
        if ((target ? print_one(a.data, a.len) : print_list(a.data, a.len)) < 0) {
            fprintf(stderr, "pacer issues: %.*s: the answer is not the issues API's JSON\n", (int)sl, server);
            rc = 2;
        }
    }
    free(a.data);
    return rc;
}

const cli_command cmd_issues = {
    "issues",
    "List the issues pacerd found for an app, or show one",
    usage,
    run,
};
