/* pacer schema: prints the record schema (include/pacer/schema.h).
 *
 * The schema is the one table of record types and fields that the writer,
 * the reader, the OTLP encoder, pacerd and `pacer report` all follow; this
 * command shows it as it is compiled into libpacer, so what a tool consumes
 * can be checked against the library at hand rather than against the docs.
 * Everything printed comes from the table: nothing here names a type or a
 * field.
 */
#include "commands.h"

#include <pacer/base/json.h>
#include <pacer/schema.h>

#include <errno.h>
#include <getopt.h>
#include <string.h>

static const char usage[] =
    "usage: pacer schema [--format text|json]\n"
    "\n"
    "Print the record schema: every record type pacer writes, with how it\n"
    "travels as OTLP (traces, logs or metrics) and the pacerd table that\n"
    "stores it, and every field of each, after the common fields that all\n"
    "records have. For a field: its name, its type (in docs/records.md's\n"
    "words), its unit, its flags, the values it allows, the OpenTelemetry\n"
    "semantic-convention attribute that carries it too, the store column that\n"
    "holds it, and what it means. Objects and arrays of objects list their\n"
    "own fields, indented.\n"
    "\n"
    "Flags:\n"
    "  required       always present\n"
    "  nullable       may be null: not measured (as opposed to absent)\n"
    "  metric         its distribution is summarised ('pacer report', pacerd)\n"
    "  span_name      part of the span name, in field order\n"
    "  url            a URL: its path names the span, its host is server.address\n"
    "  span_end       the span lasts this long (the first one present)\n"
    "  span_fallback  without a span_end field: the longest of these\n"
    "  dimension      metrics records: an attribute of every point, not a point\n"
    "\n"
    "Options:\n"
    "  --format text|json  a listing (default), or one JSON document:\n"
    "                      {\"common\":[FIELD...], \"types\":[{\"name\", \"signal\",\n"
    "                      \"table\", \"meaning\", \"fields\":[FIELD...]}...]}, where\n"
    "                      a FIELD is {\"name\", \"type\", \"unit\", \"flags\":[...],\n"
    "                      \"values\":[...], \"semconv\", \"column\", \"meaning\",\n"
    "                      \"fields\":[FIELD...]}; null where the schema gives no\n"
    "                      value, [] where it gives no list (values: any)\n"
    "  -h, --help          show this help\n"
    "\n"
    "Exit status: 0 success, 2 usage error or the output could not be written.\n";

/* The spelling of each PACER_FIELD_* flag, in bit order (usage explains
 * them). PACER_FIELD_NAME is "span_name": "name" alone would read as the
 * field's name. */
static const struct {
    unsigned flag;
    const char *name;
} flag_names[] = {
    {PACER_FIELD_REQUIRED, "required"},
    {PACER_FIELD_NULLABLE, "nullable"},
    {PACER_FIELD_METRIC, "metric"},
    {PACER_FIELD_NAME, "span_name"},
    {PACER_FIELD_URL, "url"},
    {PACER_FIELD_SPAN_END, "span_end"},
    {PACER_FIELD_SPAN_FALLBACK, "span_fallback"},
    {PACER_FIELD_DIMENSION, "dimension"},
};
#define N_FLAGS (sizeof(flag_names) / sizeof(flag_names[0]))

static const char *const signal_names[] = {"traces", "logs", "metrics"};
_Static_assert(sizeof(signal_names) / sizeof(signal_names[0]) == PACER_N_SIGNALS, "a name for every signal");

static const char *signal_name(pacer_signal s)
{
    return (unsigned)s < PACER_N_SIGNALS ? signal_names[s] : "?";
}

/* Calls each(name, arg) for every flag set in `flags`; a bit without a name
 * (a flag newer than this table) is passed as "flag_0xN". */
static void each_flag(unsigned flags, void (*each)(const char *name, void *arg), void *arg)
{
    for (size_t i = 0; i < N_FLAGS; i++)
        if (flags & flag_names[i].flag) {
            each(flag_names[i].name, arg);
            flags &= ~flag_names[i].flag;
        }
    for (unsigned bit = 1; flags; bit <<= 1)
        if (flags & bit) {
            char name[32];
            snprintf(name, sizeof(name), "flag_0x%x", bit);
            each(name, arg);
            flags &= ~bit;
        }
}

/* ---- text ---- */

#define NAME_WIDTH 20

/* Flags of one field's line: "; a, b, c". */
typedef struct text_flags {
    FILE *out;
    const char *sep; /* before the next flag */
} text_flags;

static void text_flag(const char *name, void *arg)
{
    text_flags *t = arg;
    fprintf(t->out, "%s%s", t->sep, name);
    t->sep = ", ";
}

static void print_shape_text(FILE *out, const pacer_shape *shape, int indent);

/* One field: "NAME  TYPE (UNIT); flags; one of ...; semconv ...; column ..."
 * then its meaning on a line of its own, then its members, indented. */
static void print_field_text(FILE *out, const pacer_field *f, int indent)
{
    int width = NAME_WIDTH - indent > 0 ? NAME_WIDTH - indent : 0;
    fprintf(out, "%*s%-*s %s", indent, "", width, f->name, pacer_type_name(f->type));
    if (f->unit)
        fprintf(out, " (%s)", f->unit);
    text_flags t = {out, "; "};
    each_flag(f->flags, text_flag, &t);
    if (f->values) {
        fputs("; one of ", out);
        for (const char *v = f->values; *v;) {
            size_t k = strcspn(v, "|");
            fprintf(out, "%s%.*s", v == f->values ? "" : ", ", (int)k, v);
            v += k + (v[k] == '|');
        }
    }
    if (f->semconv)
        fprintf(out, "; semconv %s", f->semconv);
    if (f->column)
        fprintf(out, "; column %s", f->column);
    fputc('\n', out);
    if (f->meaning)
        fprintf(out, "%*s%s\n", indent + 4, "", f->meaning);
    if (f->shape)
        print_shape_text(out, f->shape, indent + 2);
}

static void print_shape_text(FILE *out, const pacer_shape *shape, int indent)
{
    for (size_t i = 0; i < shape->n_fields; i++)
        print_field_text(out, &shape->fields[i], indent);
}

static void print_text(FILE *out)
{
    fprintf(out, "common fields (every record has them)\n");
    print_shape_text(out, pacer_common_shape(), 2);
    for (int id = 0; id < PACER_N_RECORD_TYPES; id++) {
        const pacer_record_type *t = pacer_record_type_get((pacer_record_id)id);
        fprintf(out, "\n%s: %s\n", t->name, t->meaning);
        fprintf(out, "  signal %s, ", signal_name(t->signal));
        if (t->table)
            fprintf(out, "table %s\n", t->table);
        else
            fprintf(out, "no table of its own (the signal's)\n");
        if (t->shape->n_fields == 0)
            fprintf(out, "  no fields but the common ones\n");
        print_shape_text(out, t->shape, 2);
    }
}

/* ---- JSON ---- */

static void json_flag(const char *name, void *arg)
{
    jbuf_str(arg, name);
}

static void kv_str_or_null(jbuf *b, const char *key, const char *val)
{
    if (val)
        jbuf_kv_str(b, key, val);
    else
        jbuf_kv_null(b, key);
}

static void shape_json(jbuf *b, const pacer_shape *shape);

static void field_json(jbuf *b, const pacer_field *f)
{
    jbuf_open(b, '{');
    jbuf_kv_str(b, "name", f->name);
    jbuf_kv_str(b, "type", pacer_type_name(f->type));
    kv_str_or_null(b, "unit", f->unit);
    jbuf_key(b, "flags");
    jbuf_open(b, '[');
    each_flag(f->flags, json_flag, b);
    jbuf_close(b, ']');
    jbuf_key(b, "values");
    jbuf_open(b, '[');
    for (const char *v = f->values; v && *v;) {
        size_t k = strcspn(v, "|");
        jbuf_strn(b, v, k);
        v += k + (v[k] == '|');
    }
    jbuf_close(b, ']');
    kv_str_or_null(b, "semconv", f->semconv);
    kv_str_or_null(b, "column", f->column);
    kv_str_or_null(b, "meaning", f->meaning);
    jbuf_key(b, "fields");
    shape_json(b, f->shape);
    jbuf_close(b, '}');
}

/* The fields of shape as an array; [] for NULL (a field without members). */
static void shape_json(jbuf *b, const pacer_shape *shape)
{
    jbuf_open(b, '[');
    for (size_t i = 0; shape && i < shape->n_fields; i++)
        field_json(b, &shape->fields[i]);
    jbuf_close(b, ']');
}

/* Returns 0, -ENOMEM, or -EIO. */
static int print_json(FILE *out)
{
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    jbuf_key(&b, "common");
    shape_json(&b, pacer_common_shape());
    jbuf_key(&b, "types");
    jbuf_open(&b, '[');
    for (int id = 0; id < PACER_N_RECORD_TYPES; id++) {
        const pacer_record_type *t = pacer_record_type_get((pacer_record_id)id);
        jbuf_open(&b, '{');
        jbuf_kv_str(&b, "name", t->name);
        jbuf_kv_str(&b, "signal", signal_name(t->signal));
        kv_str_or_null(&b, "table", t->table);
        kv_str_or_null(&b, "meaning", t->meaning);
        jbuf_key(&b, "fields");
        shape_json(&b, t->shape);
        jbuf_close(&b, '}');
    }
    jbuf_close(&b, ']');
    jbuf_close(&b, '}');

    int r = 0;
    if (b.failed)
        r = -ENOMEM;
    else if (fwrite(b.data, 1, b.len, out) != b.len || fputc('\n', out) == EOF)
        r = -EIO;
    jbuf_free(&b);
    return r;
}

/* ---- command ---- */

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "pacer schema: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nRun 'pacer schema --help' for usage.\n");
    return 2;
}

enum { OPT_FORMAT = 256 };

static int run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, OPT_FORMAT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false;
    int c;

    opterr = 0;
    optind = 0; /* full re-initialisation (glibc), whatever ran before */
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_FORMAT:
            if (cli_format(optarg) < 0)
                return usage_error("unknown --format '%s' (expected text or json)", optarg);
            json = cli_format(optarg) == 1;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        case ':':
            return usage_error("option '%s' needs a value", argv[optind - 1]);
        default:
            return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);

    if (json) {
        if (print_json(stdout) == -ENOMEM) {
            fprintf(stderr, "pacer schema: out of memory\n");
            return 2;
        }
    } else {
        print_text(stdout);
    }
    if (fflush(stdout) == EOF || ferror(stdout)) {
        fprintf(stderr, "pacer schema: cannot write the schema: %s\n", strerror(errno));
        return 2;
    }
    return 0;
}

const cli_command cmd_schema = {
    "schema",
    "Print the record schema: every record type and its fields",
    usage,
    run,
};
