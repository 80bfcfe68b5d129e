/* Event lines: a strict reader and the canonical writer (include/pacer/event.h).
 *
 * The reader copies the line into the caller's scratch buffer and reads it
 * there with the base JSON reader (pacer/base/json.h), which decodes
 * strings in place: nothing is allocated, and the strings handed back point
 * into scratch. It keeps, for each member whose name belongs to the event
 * vocabulary, its value (a decoded string, or the text of a number);
 * everything else is validated and dropped. Only once the whole line is
 * known to be well-formed JSON does it look at "ev" and convert the members
 * that event requires.
 *
 * Rules:
 *  1. No byte at or beyond `len` of the line is read; the line need not be
 *     NUL-terminated. scratch holds len + 1 bytes.
 *  2. Nesting (the event object is level 1) is limited to JREAD_MAX_DEPTH.
 *  3. A vocabulary member that appears twice is an error whatever the event;
 *     a vocabulary member the event does not use is ignored like any unknown
 *     member (its value is still checked to be valid JSON).
 *  4. Strings handed to the caller are valid UTF-8 without NUL bytes (a
 *     \u0000 in a kept field is refused: it could not survive as a C string),
 *     so pacer_event_format() writes them back byte for byte.
 *  5. A record event's object is handed back as its JSON text with the
 *     whitespace outside strings removed, written over its own place in
 *     scratch (the compact text is never longer, and no other string handed
 *     back lies inside it); the writer copies it as it is. Whether it is a
 *     valid record is the model's to say (pacer_submit).
 *
 * Errors are one line in the caller's err buffer: syntax errors start with
 * "invalid JSON at column N: " (N is the 1-based byte offset); field errors
 * name the field. Both return -EINVAL.
 */
#include <pacer/event.h>

#include <pacer/base/json.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const char *const event_names[PACER_EV_LAST + 1] = {
    [PACER_EV_LAUNCH] = "launch",
    [PACER_EV_AGENT_INIT] = "agent_init",
    [PACER_EV_MAIN] = "main",
    [PACER_EV_APP_CREATED] = "app_created",
    [PACER_EV_PAGE_CREATE] = "page_create",
    [PACER_EV_PAGE_VIEW_CREATED] = "page_view_created",
    [PACER_EV_PAGE_DRAW] = "page_draw",
    [PACER_EV_PAGE_SELECT] = "page_select",
    [PACER_EV_PAGE_SCROLL] = "page_scroll",
    [PACER_EV_PAGE_DESTROY] = "page_destroy",
    [PACER_EV_API_START] = "api_start",
    [PACER_EV_API_END] = "api_end",
    [PACER_EV_PAGE_SHOW] = "page_show",
    [PACER_EV_HANDOFF] = "handoff",
    [PACER_EV_RECORD] = "record",
    [PACER_EV_TOOLKIT] = "toolkit",
    [PACER_EV_FIRST_FRAME] = "first_frame",
};

/* Vocabulary members, in the order the writer emits them. */
enum field { F_T, F_EV, F_PAGE, F_CLASS, F_KIND, F_URL, F_REQ, F_STATUS, F_RECORD, F_SOURCE, F_COUNT };

static const char *const field_names[F_COUNT] = {
    [F_T] = "t",         [F_EV] = "ev",   [F_PAGE] = "page", [F_CLASS] = "class",
    [F_KIND] = "kind",   [F_URL] = "url", [F_REQ] = "req",   [F_STATUS] = "status",
    [F_RECORD] = "record", [F_SOURCE] = "source",
};

#define FB(f) (1u << (f))
/* Members each event requires besides "t" and "ev". */
static const unsigned event_fields[PACER_EV_LAST + 1] = {
    [PACER_EV_PAGE_CREATE] = FB(F_PAGE) | FB(F_CLASS) | FB(F_KIND),
    [PACER_EV_PAGE_VIEW_CREATED] = FB(F_PAGE),
    [PACER_EV_PAGE_DRAW] = FB(F_PAGE),
    [PACER_EV_PAGE_SELECT] = FB(F_PAGE),
    [PACER_EV_PAGE_SCROLL] = FB(F_PAGE),
    [PACER_EV_PAGE_DESTROY] = FB(F_PAGE),
    [PACER_EV_API_START] = FB(F_URL) | FB(F_REQ),
    [PACER_EV_API_END] = FB(F_URL) | FB(F_REQ) | FB(F_STATUS),
    [PACER_EV_PAGE_SHOW] = FB(F_PAGE),
    [PACER_EV_RECORD] = FB(F_RECORD),
    [PACER_EV_TOOLKIT] = FB(F_CLASS),
    [PACER_EV_FIRST_FRAME] = FB(F_SOURCE),
};

static const char *const kind_names[] = {
    [PACER_PAGE_WINDOW] = "window",
    [PACER_PAGE_PAGE] = "page",
};

PACER_API const char *pacer_event_name(pacer_event_type type)
{
    if ((int)type < PACER_EV_FIRST || (int)type > PACER_EV_LAST)
        return NULL;
    return event_names[type];
}

static void set_error(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_error(char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;
    if (!err || err_len == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

/* Copies untrusted bytes into a message, keeping it one printable line:
 * '"' and '\' are escaped, other bytes outside ASCII 0x20-0x7e become \xNN,
 * and long input is cut with "...". */
static void quote_for_message(char *out, size_t out_len, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0, limit = n > 48 ? 48 : n;
    for (size_t i = 0; i < limit && o + 5 < out_len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c >= 0x20 && c < 0x7f) {
            out[o++] = (char)c;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    if (limit < n && o + 4 < out_len) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

typedef struct reader {
    jread j;
    char *err;
    size_t err_len;
} reader;

static int lookup_field(const char *name, size_t len)
{
    for (int f = 0; f < F_COUNT; f++)
        if (strlen(field_names[f]) == len && memcmp(field_names[f], name, len) == 0)
            return f;
    return -1;
}

static int syntax_error(reader *r)
{
    set_error(r->err, r->err_len, "invalid JSON at column %zu: %s", r->j.error_at + 1, r->j.message);
    return -EINVAL;
}

/* Reads the event object, filling fields[] with the vocabulary members. */
static int read_object(reader *r, jvalue fields[F_COUNT])
{
    const char *key;
    size_t key_len;
    jvalue tmp;
    int n;

    jtype t = jread_peek(&r->j);
    if (t == JT_NONE) {
        jread_fail(&r->j, r->j.pos, "expected '{', got an empty line");
        return syntax_error(r);
    }
    if (t != JT_OBJECT) {
        jread_fail(&r->j, r->j.pos, "expected '{' at start of event");
        return syntax_error(r);
    }
    jread_enter_object(&r->j);
    while ((n = jread_member(&r->j, &key, &key_len)) > 0) {
        int f = lookup_field(key, key_len);
        if (f >= 0 && fields[f].type != JT_NONE) {
            /* the key was decoded in place just after its opening quote */
            set_error(r->err, r->err_len, "duplicate field \"%s\" at column %zu", field_names[f],
                      (size_t)(key - r->j.buf));
            return -EINVAL;
        }
        if (!jread_value(&r->j, f >= 0 ? &fields[f] : &tmp))
            return syntax_error(r);
    }
    if (n < 0 || !jread_end(&r->j, "object"))
        return syntax_error(r);
    return 0;
}

/* The magnitude and sign of an integer number. Returns -EDOM for a value
 * that is not a JSON integer, -ERANGE beyond UINT64_MAX. */
static int integer_value(const jvalue *v, bool *ret_neg, uint64_t *ret_mag)
{
    size_t i = 0;
    uint64_t mag = 0;
    bool neg = false;

    if (v->type != JT_NUMBER || !v->integer)
        return -EDOM;
    if (v->s[0] == '-') {
        neg = true;
        i++;
    }
    for (; i < v->len; i++) {
        unsigned d = (unsigned)(v->s[i] - '0');
        if (mag > (UINT64_MAX - d) / 10)
            return neg ? -EDOM : -ERANGE;
        mag = mag * 10 + d;
    }
    *ret_neg = neg && mag != 0; /* -0 is 0 */
    *ret_mag = mag;
    return 0;
}

static int field_u64(const reader *r, enum field f, const jvalue *v, uint64_t *ret)
{
    bool neg;
    uint64_t mag;
    int rc = integer_value(v, &neg, &mag);
    if (rc == -ERANGE) {
        set_error(r->err, r->err_len, "field \"%s\" is out of range (maximum %" PRIu64 ")",
                  field_names[f], UINT64_MAX);
        return -EINVAL;
    }
    if (rc < 0 || neg) {
        set_error(r->err, r->err_len, "field \"%s\" must be an unsigned integer",
                  field_names[f]);
        return -EINVAL;
    }
    *ret = mag;
    return 0;
}

static int field_t(const reader *r, const jvalue *v, int64_t *ret)
{
    bool neg;
    uint64_t mag;
    int rc = integer_value(v, &neg, &mag);
    if (rc == 0 && !neg && mag > (uint64_t)INT64_MAX)
        rc = -ERANGE;
    if (rc == -ERANGE) {
        set_error(r->err, r->err_len, "field \"t\" is out of range (maximum %" PRId64 ")",
                  INT64_MAX);
        return -EINVAL;
    }
    if (rc < 0 || neg) {
        set_error(r->err, r->err_len, "field \"t\" must be a non-negative integer");
        return -EINVAL;
    }
    *ret = (int64_t)mag;
    return 0;
}

static int field_int(const reader *r, enum field f, const jvalue *v, int *ret)
{
    bool neg;
    uint64_t mag;
    int rc = integer_value(v, &neg, &mag);
    if (rc == -EDOM && v->type == JT_NUMBER && v->integer)
        rc = -ERANGE; /* a negative integer too long for 64 bits */
    if (rc == 0 && mag > (neg ? (uint64_t)INT_MAX + 1 : (uint64_t)INT_MAX))
        rc = -ERANGE;
    if (rc == -ERANGE) {
        set_error(r->err, r->err_len, "field \"%s\" is out of range (%d to %d)",
                  field_names[f], INT_MIN, INT_MAX);
        return -EINVAL;
    }
    if (rc < 0) {
        set_error(r->err, r->err_len, "field \"%s\" must be an integer", field_names[f]);
        return -EINVAL;
    }
    *ret = neg ? (int)(-(int64_t)mag) : (int)mag;
    return 0;
}

static int field_string(const reader *r, enum field f, const jvalue *v, const char **ret)
{
    if (v->type != JT_STRING || v->len == 0) {
        set_error(r->err, r->err_len, "field \"%s\" must be a non-empty string",
                  field_names[f]);
        return -EINVAL;
    }
    if (memchr(v->s, '\0', v->len)) {
        set_error(r->err, r->err_len, "field \"%s\" must not contain \\u0000", field_names[f]);
        return -EINVAL;
    }
    *ret = v->s;
    return 0;
}

/* Turns the vocabulary members into an event of the type "ev" names. */
static int build_event(const reader *r, const jvalue fields[F_COUNT], pacer_event *ev)
{
    const jvalue *name = &fields[F_EV];
    char quoted[256];
    int type = 0;
    int rc;

    if (name->type == JT_NONE) {
        set_error(r->err, r->err_len, "field \"ev\" is missing");
        return -EINVAL;
    }
    if (name->type != JT_STRING) {
        set_error(r->err, r->err_len, "field \"ev\" must be a string");
        return -EINVAL;
    }
    for (int i = PACER_EV_FIRST; i <= PACER_EV_LAST; i++)
        if (strlen(event_names[i]) == name->len && memcmp(event_names[i], name->s, name->len) == 0)
            type = i;
    if (!type) {
        quote_for_message(quoted, sizeof(quoted), name->s, name->len);
        set_error(r->err, r->err_len, "unknown event \"%s\"", quoted);
        return -EINVAL;
    }

    memset(ev, 0, sizeof(*ev));
    ev->type = (pacer_event_type)type;
    unsigned need = FB(F_T) | event_fields[type];
    for (int f = 0; f < F_COUNT; f++) {
        if (!(need & FB(f)))
            continue;
        if (fields[f].type == JT_NONE) {
            set_error(r->err, r->err_len, "missing field \"%s\" for event \"%s\"",
                      field_names[f], event_names[type]);
            return -EINVAL;
        }
        switch ((enum field)f) {
        case F_T:
            rc = field_t(r, &fields[f], &ev->t_ns);
            break;
        case F_PAGE:
            rc = field_u64(r, F_PAGE, &fields[f], &ev->page);
            break;
        case F_REQ:
            rc = field_u64(r, F_REQ, &fields[f], &ev->req);
            break;
        case F_STATUS:
            rc = field_int(r, F_STATUS, &fields[f], &ev->status);
            break;
        case F_CLASS:
            rc = field_string(r, F_CLASS, &fields[f], &ev->class_name);
            break;
        case F_URL:
            rc = field_string(r, F_URL, &fields[f], &ev->url);
            break;
        case F_SOURCE:
            rc = field_string(r, F_SOURCE, &fields[f], &ev->source);
            break;
        case F_RECORD:
            rc = 0;
            if (fields[f].type != JT_OBJECT || !fields[f].s) {
                set_error(r->err, r->err_len, "field \"record\" must be an object (a record of docs/records.md)");
                rc = -EINVAL;
            }
            break;
        case F_KIND: {
            const jvalue *v = &fields[f];
            rc = -EINVAL;
            for (size_t k = 0; k < sizeof(kind_names) / sizeof(kind_names[0]); k++)
                if (v->type == JT_STRING && strlen(kind_names[k]) == v->len &&
                    memcmp(kind_names[k], v->s, v->len) == 0) {
                    ev->kind = (pacer_page_kind)k;
                    rc = 0;
                }
            if (rc < 0)
                set_error(r->err, r->err_len, "field \"kind\" must be \"window\" or \"page\"");
            break;
        }
        default:
            rc = 0;
            break;
        }
        if (rc < 0)
            return rc;
    }
    return 0;
}

PACER_API int pacer_event_parse(const char *line, size_t len, char *scratch, pacer_event *ret,
                                char *err, size_t err_len)
{
    jvalue fields[F_COUNT];
    pacer_event ev;
    reader r = {.err = err, .err_len = err_len};
    int rc;

    if (err && err_len)
        err[0] = '\0';
    if ((!line && len) || !scratch || !ret) {
        set_error(err, err_len, "invalid arguments to pacer_event_parse");
        return -EINVAL;
    }
    if (len)
        memcpy(scratch, line, len);
    /* line is the unmodified source: a container's value (a record) points into it */
    jread_init(&r.j, scratch, len, line, JREAD_LINE);
    memset(fields, 0, sizeof(fields));
    rc = read_object(&r, fields);
    if (rc < 0)
        return rc;
    rc = build_event(&r, fields, &ev);
    if (rc < 0)
        return rc;
    if (ev.type == PACER_EV_RECORD) { /* rule 5 */
        const jvalue *v = &fields[F_RECORD];
        char *at = scratch + (v->s - line);
        ev.record_len = json_compact(v->s, v->len, at);
        ev.record = at;
    }
    *ret = ev;
    return 0;
}

/* ---- writer ---------------------------------------------------------- */

PACER_API int pacer_event_format(const pacer_event *ev, char *buf, size_t buf_len)
{
    char none[1];
    jbuf s;
    jbuf_init_fixed(&s, buf && buf_len ? buf : none, buf && buf_len ? buf_len : sizeof(none));

    if (!ev || !pacer_event_name(ev->type) || ev->t_ns < 0)
        return -EINVAL;
    unsigned need = event_fields[ev->type];
    if ((need & FB(F_CLASS)) && (!ev->class_name || !ev->class_name[0]))
        return -EINVAL;
    if ((need & FB(F_KIND)) && ev->kind != PACER_PAGE_WINDOW && ev->kind != PACER_PAGE_PAGE)
        return -EINVAL;
    if ((need & FB(F_URL)) && (!ev->url || !ev->url[0]))
        return -EINVAL;
    if ((need & FB(F_SOURCE)) && (!ev->source || !ev->source[0]))
        return -EINVAL;
    if ((need & FB(F_RECORD)) && (!ev->record || !ev->record_len || ev->record[0] != '{' ||
                                  memchr(ev->record, '\n', ev->record_len)))
        return -EINVAL;

    jbuf_open(&s, '{');
    jbuf_kv_i64(&s, "t", ev->t_ns);
    jbuf_kv_str(&s, "ev", event_names[ev->type]);
    if (need & FB(F_PAGE))
        jbuf_kv_u64(&s, "page", ev->page);
    if (need & FB(F_CLASS))
        jbuf_kv_str(&s, "class", ev->class_name);
    if (need & FB(F_KIND))
        jbuf_kv_str(&s, "kind", kind_names[ev->kind]);
    if (need & FB(F_URL))
        jbuf_kv_str(&s, "url", ev->url);
    if (need & FB(F_REQ))
        jbuf_kv_u64(&s, "req", ev->req);
    if (need & FB(F_STATUS))
        jbuf_kv_i64(&s, "status", ev->status);
    if (need & FB(F_SOURCE))
        jbuf_kv_str(&s, "source", ev->source);
    if (need & FB(F_RECORD)) {
        jbuf_key(&s, "record");
        jbuf_raw(&s, ev->record, ev->record_len);
    }
    jbuf_close(&s, '}');
    jbuf_raw(&s, "\n", 1);
    if (s.len > INT_MAX)
        return -EOVERFLOW;
    return (int)s.len;
}
