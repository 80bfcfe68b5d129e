/* pacer export: a run's records as a timeline that ui.perfetto.dev and
 * chrome://tracing open (timeline.h says where each record goes).
 *
 * The file is read one line at a time and every line is parsed against the
 * record schema; a line that cannot be read is reported as
 * `pacer export: FILE:LINE: reason` and skipped (exit status 1), the rest
 * is still exported. */
#include "commands.h"
#include "timeline.h"

#include <pacer/record.h>

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SHOWN 50

static const char usage[] =
    "usage: pacer export --format perfetto|chrome [-o FILE] RECORDS.jsonl\n"
    "\n"
    "Turns the records of a run (pacer run --out) into a trace: the start-up\n"
    "phases as a waterfall, each page load (creation, initial draw, API load,\n"
    "final draw), every request and every jank, one process per app run.\n"
    "\n"
    "  --format perfetto   Perfetto protobuf trace (open it in ui.perfetto.dev)\n"
    "  --format chrome     Chrome trace event JSON (chrome://tracing, Perfetto)\n"
    "  -o, --output FILE   write there (default: standard output)\n"
    "  -h, --help          this text\n"
    "\n"
    "Exit status: 0 exported, 1 exported but some lines were skipped, 2 usage\n"
    "or file error.\n";

static int run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    const char *format = NULL, *output = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+f:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': format = optarg; break;
        case 'o': output = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (!format || (strcmp(format, "perfetto") != 0 && strcmp(format, "chrome") != 0)) {
        fprintf(stderr, "pacer export: --format %s: expected perfetto or chrome\n\n%s", format ? format : "(missing)",
                usage);
        return 2;
    }
    if (argc - optind != 1) {
        fprintf(stderr, "pacer export: expected one RECORDS file\n\n%s", usage);
        return 2;
    }
    const char *path = argv[optind];
    FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "re");
    if (!in) {
        fprintf(stderr, "pacer export: %s: %s\n", path, strerror(errno));
        return 2;
    }
    timeline tl = {0};
    char *line = NULL;
    size_t cap = 0, lineno = 0, skipped = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, in)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0)
            continue;
        pacer_record *r = NULL;
        char err[256];
        if (pacer_record_parse(line, (size_t)len, &r, err, sizeof err) < 0) {
            if (skipped++ < MAX_SHOWN)
                fprintf(stderr, "pacer export: %s:%zu: %s\n", path, lineno, err);
            continue;
        }
        timeline_add(&tl, r);
        pacer_record_free(r);
    }
    free(line);
    if (in != stdin)
        fclose(in);
    if (tl.oom) {
        fprintf(stderr, "pacer export: out of memory\n");
        timeline_free(&tl);
        return 2;
    }
    timeline_finish(&tl);
    FILE *out = output ? fopen(output, "we") : stdout;
    if (!out) {
        fprintf(stderr, "pacer export: %s: %s\n", output, strerror(errno));
        timeline_free(&tl);
        return 2;
    }
    size_t tl_skipped = tl.skipped;
    int r = strcmp(format, "perfetto") == 0 ? timeline_write_perfetto(&tl, out) : timeline_write_chrome(&tl, out);
    if (fflush(out) != 0)
        r = -EIO;
    if (output && fclose(out) != 0)
        r = -EIO;
    timeline_free(&tl);
    if (r < 0) {
        fprintf(stderr, "pacer export: %s: %s\n", output ? output : "standard output", strerror(-r));
        return 2;
    }
    if (skipped > MAX_SHOWN)
        fprintf(stderr, "pacer export: %s: %zu lines skipped in all\n", path, skipped);
    if (tl_skipped)
        fprintf(stderr, "pacer export: %s: %zu record(s) of types with no place on the timeline (frames, leak, …) "
                        "left out\n", path, tl_skipped);
    return skipped ? 1 : 0;
}

const cli_command cmd_export = {
    .name = "export",
    .summary = "Export a run's records as a Perfetto or Chrome trace (start-up, pages, requests, janks)",
    .usage = usage,
    .run = run,
};
