/* Admin token, ingest keys and their limits (auth.h). */
#include "auth.h"

#include <pacer/base/array.h>
#include <pacer/base/clock.h>
#include <pacer/base/hash.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define MAX_TOKEN 512
#define MAX_APP 256
#define MAX_LINE 4096
#define MAX_FILE (16 << 20)
#define DAY_S 86400

typedef struct key {
    char *app, *token;
    uint64_t id;
    double rate;  /* records per second; 0: no rate limit */
    double burst; /* the bucket's size */
    uint64_t daily; /* 0: no quota */
    /* state */
    double tokens;
    int64_t refilled_ns; /* mono */
    int64_t day;         /* UTC day of used */
    uint64_t used;
} key;

typedef struct creds {
    char *admin;
    key *keys;
    size_t n_keys;
} creds;

struct auth {
    pthread_mutex_t lock;
    char *admin_file, *keys_file;
    creds c;
    uint64_t admin_epoch; /* +1 at each reload that changed the admin token */
};

/* Constant time in the length of the longer argument. */
static bool token_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t n = la > lb ? la : lb;
    unsigned char diff = la != lb;
    for (size_t i = 0; i < n; i++) {
        unsigned char ca = i < la ? (unsigned char)a[i] : 0;
        unsigned char cb = i < lb ? (unsigned char)b[i] : 0;
        diff |= ca ^ cb;
    }
    return diff == 0;
}

static bool token_chars_ok(const char *t)
{
    for (; *t; t++)
        if ((unsigned char)*t <= ' ' || (unsigned char)*t >= 0x7f)
            return false;
    return true;
}

static void wipe_free(char *s)
{
    if (s) {
        memset(s, 0, strlen(s));
        free(s);
    }
}

static void creds_clear(creds *c)
{
    wipe_free(c->admin);
    for (size_t i = 0; i < c->n_keys; i++) {
        free(c->keys[i].app);
        wipe_free(c->keys[i].token);
    }
    free(c->keys);
    memset(c, 0, sizeof *c);
}

/* Reads a whole file (at most MAX_FILE) as a NUL-terminated string. */
static char *read_file(const char *path, size_t *ret_len, char *err, size_t err_size)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (!ARRAY_GROW(buf, cap, len + 4096 + 1, 8192)) {
            snprintf(err, err_size, "%s: out of memory", path);
            goto fail;
        }
        size_t n = fread(buf + len, 1, 4096, f);
        len += n;
        if (len > MAX_FILE) {
            snprintf(err, err_size, "%s: larger than %d bytes", path, MAX_FILE);
            goto fail;
        }
        if (n < 4096) {
            if (ferror(f)) {
                snprintf(err, err_size, "%s: %s", path, strerror(errno));
                goto fail;
            }
            break;
        }
    }
    fclose(f);
    buf[len] = 0;
    *ret_len = len;
    return buf;
fail:
    fclose(f);
    if (buf) {
        memset(buf, 0, len);
        free(buf);
    }
    return NULL;
}

/* A positive integer of at most 1e12; false otherwise. */
static bool parse_count(const char *s, size_t n, uint64_t *ret)
{
    if (n == 0 || n > 13)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v == 0 || v > 1000000000000ULL)
        return false;
    *ret = v;
    return true;
}

/* One option after the key; false when it is not one. */
static bool parse_option(key *k, const char *s, bool *has_burst)
{
    uint64_t v;
    if (strncmp(s, "rate=", 5) == 0) {
        const char *slash = strchr(s + 5, '/');
        if (!slash || !parse_count(s + 5, (size_t)(slash - s - 5), &v))
            return false;
        double per = strcmp(slash, "/s") == 0 ? 1 : strcmp(slash, "/min") == 0 ? 60 : strcmp(slash, "/h") == 0 ? 3600 : 0;
        if (per == 0)
            return false;
        k->rate = (double)v / per;
        return true;
    }
    if (strncmp(s, "burst=", 6) == 0 && parse_count(s + 6, strlen(s + 6), &v)) {
        k->burst = (double)v;
        *has_burst = true;
        return true;
    }
    if (strncmp(s, "daily=", 6) == 0 && parse_count(s + 6, strlen(s + 6), &v)) {
        k->daily = v;
        return true;
    }
    return false;
}

/* Parses a keys file's text (modified in place) into c->keys. */
static int parse_keys(creds *c, char *text, size_t len, const char *file, char *err, size_t err_size)
{
    char *p = text, *end = text + len;
    for (unsigned lineno = 1; p < end; lineno++) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *line_end = nl ? nl : end;
        if ((size_t)(line_end - p) > MAX_LINE) {
            snprintf(err, err_size, "%s:%u: line longer than %d bytes", file, lineno, MAX_LINE);
            return -EINVAL;
        }
        if (memchr(p, 0, (size_t)(line_end - p))) {
            snprintf(err, err_size, "%s:%u: contains a NUL byte", file, lineno);
            return -EINVAL;
        }
        *line_end = 0;
        char *next = nl ? nl + 1 : end;
        /* a comment is skipped whole, before its words could count as fields */
        char *first = p + strspn(p, " \t\r");
        if (!*first || *first == '#') {
            p = next;
            continue;
        }
        /* fields separated by spaces and tabs; a trailing \r is a space */
        char *fields[8];
        size_t n = 0;
        for (char *s = p; *s;) {
            while (*s == ' ' || *s == '\t' || *s == '\r')
                s++;
            if (!*s)
                break;
            if (n == sizeof fields / sizeof fields[0]) {
                snprintf(err, err_size, "%s:%u: too many fields (expected APP KEY [rate=N/s] [burst=N] [daily=N])",
                         file, lineno);
                return -EINVAL;
            }
            fields[n++] = s;
            while (*s && *s != ' ' && *s != '\t' && *s != '\r')
                s++;
            if (*s)
                *s++ = 0;
        }
        p = next;
        if (n < 2 || strlen(fields[0]) > MAX_APP || !token_chars_ok(fields[0]) || strlen(fields[1]) > MAX_TOKEN ||
            !token_chars_ok(fields[1])) {
            snprintf(err, err_size, "%s:%u: expected \"APP KEY\" (the key: 1-%d printable characters, no spaces)",
                     file, lineno, MAX_TOKEN);
            return -EINVAL;
        }
        key k = {.burst = 0};
        bool has_burst = false;
        for (size_t i = 2; i < n; i++)
            if (!parse_option(&k, fields[i], &has_burst)) {
                /* the field is not echoed: a misplaced key must not reach a log */
                snprintf(err, err_size,
                         "%s:%u: field %zu: expected rate=N/s, rate=N/min, rate=N/h, burst=N or daily=N "
                         "(N a positive integer)",
                         file, lineno, i + 1);
                return -EINVAL;
            }
        if (has_burst && k.rate == 0) {
            snprintf(err, err_size, "%s:%u: burst= needs a rate=", file, lineno);
            return -EINVAL;
        }
        if (!has_burst)
            k.burst = k.rate < 1 ? 1 : ceil(k.rate);
        if (c->admin && token_equal(fields[1], c->admin)) {
            snprintf(err, err_size, "%s:%u: an app key must differ from the admin token", file, lineno);
            return -EINVAL;
        }
        for (size_t i = 0; i < c->n_keys; i++)
            if (token_equal(c->keys[i].token, fields[1])) {
                snprintf(err, err_size, "%s:%u: this key is already given to app %s", file, lineno, c->keys[i].app);
                return -EINVAL;
            }
        key *nk = realloc(c->keys, (c->n_keys + 1) * sizeof *nk);
        if (!nk)
            goto oom;
        c->keys = nk;
        k.app = strdup(fields[0]);
        k.token = strdup(fields[1]);
        if (!k.app || !k.token) {
            free(k.app);
            wipe_free(k.token);
            goto oom;
        }
        k.id = fnv1a64(FNV1A64_INIT, k.token, strlen(k.token));
        k.tokens = k.burst;
        k.refilled_ns = mono_ns();
        c->keys[c->n_keys++] = k;
    }
    return 0;
oom:
    snprintf(err, err_size, "%s: out of memory", file);
    return -ENOMEM;
}

static int load(creds *c, const char *admin_file, const char *keys_file, char *err, size_t err_size)
{
    memset(c, 0, sizeof *c);
    size_t len;
    char *text = read_file(admin_file, &len, err, err_size);
    if (!text)
        return -EINVAL;
    char *t = text;
    t[strcspn(t, "\n")] = 0;
    size_t n = strlen(t);
    while (n && (t[n - 1] == '\r' || t[n - 1] == ' ' || t[n - 1] == '\t'))
        t[--n] = 0;
    while (*t == ' ' || *t == '\t')
        t++;
    int r = 0;
    if (!*t || strlen(t) > MAX_TOKEN || !token_chars_ok(t)) {
        snprintf(err, err_size, "%s:1: expected the admin token (1-%d printable characters, no spaces)", admin_file,
                 MAX_TOKEN);
        r = -EINVAL;
    } else if (!(c->admin = strdup(t))) {
        snprintf(err, err_size, "out of memory");
        r = -ENOMEM;
    }
    memset(text, 0, len);
    free(text);
    if (r < 0)
        return r;
    text = read_file(keys_file, &len, err, err_size);
    if (!text) {
        creds_clear(c);
        return -EINVAL;
    }
    r = parse_keys(c, text, len, keys_file, err, err_size);
    memset(text, 0, len);
    free(text);
    if (r < 0)
        creds_clear(c);
    return r;
}

auth *auth_load(const char *admin_file, const char *keys_file, char *err, size_t err_size)
{
    auth *a = calloc(1, sizeof *a);
    if (!a) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&a->lock, NULL);
    if (!(a->admin_file = strdup(admin_file)) || !(a->keys_file = strdup(keys_file))) {
        snprintf(err, err_size, "out of memory");
        auth_free(a);
        return NULL;
    }
    if (load(&a->c, admin_file, keys_file, err, err_size) < 0) {
        auth_free(a);
        return NULL;
    }
    return a;
}

int auth_reload(auth *a, char *err, size_t err_size)
{
    return auth_reload_files(a, a->admin_file, a->keys_file, err, err_size);
}

int auth_reload_files(auth *a, const char *admin_file, const char *keys_file, char *err, size_t err_size)
{
    creds c;
    int r = load(&c, admin_file, keys_file, err, err_size);
    if (r < 0)
        return r;
    char *new_admin_file = strdup(admin_file), *new_keys_file = strdup(keys_file);
    if (!new_admin_file || !new_keys_file) {
        free(new_admin_file);
        free(new_keys_file);
        creds_clear(&c);
        snprintf(err, err_size, "out of memory");
        return -ENOMEM;
    }
    free(a->admin_file); /* only the main thread reads and reloads them */
    free(a->keys_file);
    a->admin_file = new_admin_file;
    a->keys_file = new_keys_file;
    pthread_mutex_lock(&a->lock);
    /* the counts of the keys that stay go on */
    for (size_t i = 0; i < c.n_keys; i++)
        for (size_t j = 0; j < a->c.n_keys; j++)
            if (c.keys[i].id == a->c.keys[j].id && token_equal(c.keys[i].token, a->c.keys[j].token)) {
                c.keys[i].tokens = a->c.keys[j].tokens < c.keys[i].burst ? a->c.keys[j].tokens : c.keys[i].burst;
                c.keys[i].refilled_ns = a->c.keys[j].refilled_ns;
                c.keys[i].day = a->c.keys[j].day;
                c.keys[i].used = a->c.keys[j].used;
            }
    if (!token_equal(c.admin, a->c.admin))
        a->admin_epoch++;
    creds old = a->c;
    a->c = c;
    pthread_mutex_unlock(&a->lock);
    creds_clear(&old);
    return 0;
}

void auth_free(auth *a)
{
    if (!a)
        return;
    creds_clear(&a->c);
    pthread_mutex_destroy(&a->lock);
    free(a->admin_file);
    free(a->keys_file);
    free(a);
}

uint64_t auth_admin_epoch(auth *a)
{
    pthread_mutex_lock(&a->lock);
    uint64_t e = a->admin_epoch;
    pthread_mutex_unlock(&a->lock);
    return e;
}

size_t auth_n_keys(auth *a)
{
    pthread_mutex_lock(&a->lock);
    size_t n = a->c.n_keys;
    pthread_mutex_unlock(&a->lock);
    return n;
}

int auth_check_keys(const char *text, size_t len, const char *file, const char *admin, char *err, size_t err_size)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, text, len);
    copy[len] = 0;
    creds c = {0};
    c.admin = admin ? strdup(admin) : NULL;
    int r = parse_keys(&c, copy, len, file, err, err_size);
    creds_clear(&c);
    free(copy);
    return r;
}

const char *auth_bearer(const char *h)
{
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return NULL;
    h += 7;
    while (*h == ' ')
        h++;
    return *h ? h : NULL;
}

void auth_identify(auth *a, const char *token, auth_id *ret)
{
    memset(ret, 0, sizeof *ret);
    if (!token)
        return;
    pthread_mutex_lock(&a->lock);
    if (token_equal(token, a->c.admin))
        ret->who = AUTH_ADMIN;
    const key *found = NULL;
    for (size_t i = 0; i < a->c.n_keys; i++) /* no early exit: time does not tell which key matched */
        if (token_equal(token, a->c.keys[i].token))
            found = &a->c.keys[i];
    if (found) {
        ret->who = AUTH_KEY;
        snprintf(ret->app, sizeof ret->app, "%s", found->app);
        ret->key_id = found->id;
    }
    pthread_mutex_unlock(&a->lock);
}

static key *key_of(auth *a, uint64_t id)
{
    for (size_t i = 0; i < a->c.n_keys; i++)
        if (a->c.keys[i].id == id)
            return &a->c.keys[i];
    return NULL;
}

/* Brings k's bucket and day up to now. */
static void refresh(key *k, int64_t now_mono, int64_t day)
{
    if (k->rate > 0) {
        k->tokens += (double)(now_mono - k->refilled_ns) / 1e9 * k->rate;
        if (k->tokens > k->burst)
            k->tokens = k->burst;
    }
    k->refilled_ns = now_mono;
    if (k->day != day) {
        k->day = day;
        k->used = 0;
    }
}

int auth_limit(auth *a, uint64_t key_id, unsigned *ret_retry_s, char *why, size_t why_size)
{
    int64_t wall_s = wall_ns() / 1000000000LL;
    pthread_mutex_lock(&a->lock);
    key *k = key_of(a, key_id);
    int r = 0;
    if (k) {
        refresh(k, mono_ns(), wall_s / DAY_S);
        if (k->daily && k->used >= k->daily) {
            *ret_retry_s = (unsigned)(DAY_S - wall_s % DAY_S);
            snprintf(why, why_size, "this key's daily quota of %llu records is used up (%llu stored today); it "
                     "renews at 00:00 UTC", (unsigned long long)k->daily, (unsigned long long)k->used);
            r = -EAGAIN;
        } else if (k->rate > 0 && k->tokens <= 0) {
            double s = ceil((1 - k->tokens) / k->rate);
            *ret_retry_s = s < 1 ? 1 : s > DAY_S ? DAY_S : (unsigned)s;
            snprintf(why, why_size, "this key's rate limit of %.6g records/s (burst %.0f) is used up", k->rate, k->burst);
            r = -EAGAIN;
        }
    }
    pthread_mutex_unlock(&a->lock);
    return r;
}

void auth_charge(auth *a, uint64_t key_id, uint64_t records)
{
    if (!records)
        return;
    int64_t day = wall_ns() / 1000000000LL / DAY_S;
    pthread_mutex_lock(&a->lock);
    key *k = key_of(a, key_id);
    if (k) {
        refresh(k, mono_ns(), day);
        if (k->rate > 0)
            k->tokens -= (double)records;
        k->used += records;
    }
    pthread_mutex_unlock(&a->lock);
}
