/* pacer report: summarise a records file.
 *
 * The file is read one line at a time (getline) and every line is parsed and
 * checked against the record schema (pacer_record_parse), then folded into
 * the summary of its record type before the next one is read; neither the
 * text nor the record is kept (see report.h for the section model).
 *
 * A line that cannot be used is reported as `pacer report: FILE:LINE: reason`
 * and skipped; everything else is still summarised and the exit status is 1.
 * After MAX_SHOWN such messages the rest are only counted, so a file of
 * garbage cannot flood the terminal.
 */
#include "commands.h"
#include "report.h"
#include "report_index.h"

#include <pacer/base/json.h>
#include <pacer/record.h>

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

/* Record type -> summariser. A type missing here is counted under "other". */
static const report_section *const sections[] = {
    &report_page_section,
    &report_startup_section,
    &report_net_section,
    &report_jank_section,
    &report_frames_section,
    &report_leaks_section,
};
#define N_SECTIONS (sizeof(sections) / sizeof(sections[0]))

#define MAX_SHOWN 50

typedef enum { FORMAT_TEXT, FORMAT_JSON } report_format;

typedef struct other_type {
    char *name; /* the record type; first member, see report_index.h */
    size_t count;
} other_type;

typedef struct report_run {
    report_options opt;
    const char *label; /* FILE as messages name it */
    void *state[N_SECTIONS];
    report_index other;
    size_t records; /* well-formed records that passed --app */
    size_t skipped; /* lines reported and skipped */
} report_run;

static void bad_line(report_run *run, size_t lineno, const char *reason)
{
    if (run->skipped++ < MAX_SHOWN)
        fprintf(stderr, "pacer report: %s:%zu: %s\n", run->label, lineno, reason);
}

/* The index of the section for rec's type, or N_SECTIONS when it has none
 * (a type without a summary, or one the schema does not know). */
static size_t section_of(const pacer_record *rec)
{
    const pacer_record_type *type = pacer_record_type_of(rec);
    for (size_t i = 0; type && i < N_SECTIONS; i++)
        if (sections[i]->type == (pacer_record_id)type->id)
            return i;
    return N_SECTIONS;
}

/* Adds one record, which follows the schema, to its section.
 * Returns 0 (added, or filtered out), -EINVAL with `reason` filled when the
 * section cannot use the record, or -ENOMEM. */
static int take_record(report_run *run, const pacer_record *rec, char *reason)
{
    int r;
    size_t i = section_of(rec);
    /* Checked before the filters, so --app and --page never hide bad input. */
    if (i < N_SECTIONS && sections[i]->check && (r = sections[i]->check(rec, reason)) < 0)
        return r;

    if (run->opt.app) {
        const char *app = pacer_record_common(rec, PACER_COMMON_APP);
        if (!app || strcmp(app, run->opt.app) != 0)
            return 0;
    }
    run->records++;
    if (i < N_SECTIONS)
        return sections[i]->add(run->state[i], rec, &run->opt);

    other_type *o = report_index_get(&run->other, pacer_record_type_name(rec), sizeof(*o));
    if (!o)
        return -ENOMEM;
    o->count++;
    return 0;
}

static int is_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!strchr(" \t\r\n", s[i]) || s[i] == '\0')
            return 0;
    return 1;
}

/* Reads every line of `in`. Returns 0, or -errno on a read error or when out
 * of memory (already reported). Bad lines are reported and counted. */
static int read_records(report_run *run, FILE *in)
{
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t len;
    int r = 0;

    /* errno is cleared before each read so that, on a read error, it holds
     * getline's error rather than something left over from parsing. */
    while ((errno = 0, len = getline(&line, &cap, in)) >= 0) {
        lineno++;
        if (is_blank(line, (size_t)len))
            continue;

        char reason[REPORT_REASON_MAX];
        pacer_record *rec;
        r = pacer_record_parse(line, (size_t)len, &rec, reason, sizeof(reason));
        if (r == 0) {
            r = take_record(run, rec, reason);
            pacer_record_free(rec);
        }
        if (r == -ENOMEM) {
            fprintf(stderr, "pacer report: out of memory at %s:%zu\n", run->label, lineno);
            goto out;
        }
        if (r < 0)
            bad_line(run, lineno, reason);
        r = 0;
    }
    if (ferror(in)) {
        r = errno ? -errno : -EIO;
        fprintf(stderr, "pacer report: cannot read %s: %s\n", run->label, strerror(-r));
    }
out:
    free(line);
    if (run->skipped > MAX_SHOWN)
        fprintf(stderr, "pacer report: %s: %zu more bad lines not shown\n", run->label, run->skipped - MAX_SHOWN);
    if (run->skipped > 0)
        fprintf(stderr, "pacer report: %s: skipped %zu bad line%s\n", run->label, run->skipped,
                run->skipped == 1 ? "" : "s");
    return r;
}

static void print_text(report_run *run, FILE *out)
{
    fprintf(out, "%s: %zu record%s", run->label, run->records, run->records == 1 ? "" : "s");
    if (run->opt.app)
        fprintf(out, " of app %s", run->opt.app);
    if (run->skipped)
        fprintf(out, ", %zu bad line%s skipped", run->skipped, run->skipped == 1 ? "" : "s");
    fprintf(out, "\n");

    for (size_t i = 0; i < N_SECTIONS; i++) {
        fprintf(out, "\n");
        sections[i]->print_text(run->state[i], out, &run->opt);
    }

    fprintf(out, "\nOther records:");
    other_type **other = (other_type **)report_index_sorted(&run->other);
    for (size_t i = 0; i < run->other.n; i++)
        fprintf(out, "%s %s %zu", i ? "," : "", other[i]->name, other[i]->count);
    fprintf(out, "%s\n", run->other.n ? "" : " none");
}

/* Returns 0, -ENOMEM, or -EIO when the document could not be written. */
static int print_json(report_run *run, FILE *out)
{
    jbuf b;
    jbuf_init(&b);
    jbuf_open(&b, '{');
    for (size_t i = 0; i < N_SECTIONS; i++) {
        jbuf_key(&b, sections[i]->json_key);
        sections[i]->to_json(run->state[i], &b, &run->opt);
    }
    jbuf_key(&b, "other");
    jbuf_open(&b, '{');
    other_type **types = (other_type **)report_index_sorted(&run->other);
    for (size_t i = 0; i < run->other.n; i++)
        jbuf_kv_u64(&b, types[i]->name, types[i]->count);
    jbuf_close(&b, '}');
    jbuf_kv_u64(&b, "records", run->records);
    jbuf_kv_u64(&b, "skipped", run->skipped);
    jbuf_close(&b, '}');

    int r = 0;
    if (b.failed)
        r = -ENOMEM;
    else if (fwrite(b.data, 1, b.len, out) != b.len || fputc('\n', out) == EOF)
        r = -EIO;
    jbuf_free(&b);
    return r;
}

static const char usage[] =
    "usage: pacer report [--format text|json] [--page CLASS] [--app NAME] FILE\n"
    "\n"
    "Summarise a records file (JSON Lines, as written by 'pacer run --out FILE').\n"
    "FILE '-' reads standard input.\n"
    "\n"
    "Pages, by class: record count, count by status, and n, p50, p90, p99, max of\n"
    "each page metric; per API URL the calls, n, p50, p90 of ms and failures\n"
    "(status >= 400, <= 0 or absent).\n"
    "Start-up, per kind of start (cold, warm): the count and the percentiles of\n"
    "its metrics. Starts flagged \"outlier\" are counted but left out of every\n"
    "percentile.\n"
    "Requests, by URL path: count, p50 and p90 of the request time, failures\n"
    "(status >= 400 or <= 0), bytes sent and received.\n"
    "Main-loop jank, by fingerprint (most frequent first): count, hangs, p50\n"
    "and max of the busy time, the page and top in-app frames of the longest.\n"
    "Frames, by window: frames, slow, frozen (and their share), dropped\n"
    "frames, total delay, longest frame, refresh interval, Matrix levels.\n"
    "Records of other types are counted per type. The metrics are the fields\n"
    "the record schema flags \"metric\" ('pacer schema' lists them).\n"
    "\n"
    "Percentiles are nearest-rank: the p-th percentile of n values sorted\n"
    "ascending is the value at 1-based rank ceil(p/100 * n), always a measured\n"
    "value (for 1..100: p50 = 50, p90 = 90, p99 = 99). A metric a record lacks\n"
    "is not counted; each metric has its own n. Times are in milliseconds.\n"
    "\n"
    "Options:\n"
    "  --format text|json  an aligned table (default), or one JSON document\n"
    "  --page CLASS        only pages of class CLASS (start-up is still shown)\n"
    "  --app NAME          only records whose \"app\" is NAME\n"
    "  -h, --help          show this help\n"
    "\n"
    "A line that is not a JSON object, or a record that does not follow the\n"
    "schema (a field of the wrong type, a required field missing, a value not\n"
    "in a field's list, a negative duration), is reported on stderr as\n"
    "'pacer report: FILE:LINE: reason' and skipped; the rest is still\n"
    "summarised. Empty lines are ignored.\n"
    "\n"
    "Exit status: 0 success, 1 some lines were skipped, 2 usage error or\n"
    "unreadable file.\n";

enum { OPT_FORMAT = 256, OPT_PAGE, OPT_APP };

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "pacer report: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nRun 'pacer report --help' for usage.\n");
    return 2;
}

static int run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, OPT_FORMAT},
        {"page", required_argument, NULL, OPT_PAGE},
        {"app", required_argument, NULL, OPT_APP},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    report_run rr = {0};
    report_format format = FORMAT_TEXT;
    int c;

    opterr = 0;
    optind = 0; /* full re-initialisation (glibc), whatever ran before */
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_FORMAT:
            if (cli_format(optarg) < 0)
                return usage_error("unknown --format '%s' (expected text or json)", optarg);
            format = cli_format(optarg) == 1 ? FORMAT_JSON : FORMAT_TEXT;
            break;
        case OPT_PAGE:
            rr.opt.page = optarg;
            break;
        case OPT_APP:
            rr.opt.app = optarg;
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
    if (optind != argc - 1)
        return usage_error("%s", optind == argc ? "expected one records FILE ('-' for stdin)"
                                                : "expected exactly one records FILE");

    const char *path = argv[optind];
    FILE *in = stdin;
    rr.label = "<stdin>";
    if (strcmp(path, "-") != 0) {
        rr.label = path;
        in = fopen(path, "r");
        if (!in) {
            fprintf(stderr, "pacer report: cannot open %s: %s\n", path, strerror(errno));
            return 2;
        }
    }

    int ret = 2, r;
    for (size_t i = 0; i < N_SECTIONS; i++) {
        rr.state[i] = sections[i]->state_new();
        if (!rr.state[i]) {
            fprintf(stderr, "pacer report: out of memory\n");
            goto out;
        }
    }
    if (read_records(&rr, in) < 0)
        goto out;

    if (format == FORMAT_JSON) {
        r = print_json(&rr, stdout);
        if (r == -ENOMEM) {
            fprintf(stderr, "pacer report: out of memory\n");
            goto out;
        }
        /* -EIO: ferror(stdout) below says why */
    } else {
        print_text(&rr, stdout);
    }
    if (fflush(stdout) == EOF || ferror(stdout)) {
        fprintf(stderr, "pacer report: cannot write the report: %s\n", strerror(errno));
        goto out;
    }
    ret = rr.skipped ? 1 : 0;
out:
    if (in != stdin)
        fclose(in);
    for (size_t i = 0; i < N_SECTIONS; i++)
        sections[i]->state_free(rr.state[i]);
    report_index_release(&rr.other, NULL);
    return ret;
}

const cli_command cmd_report = {
    "report",
    "Summarise a records file: pages, start-up, requests, jank, frames",
    usage,
    run,
};
