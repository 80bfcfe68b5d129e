/* pacer trace export DIR --format chrome|perfetto|folded -o FILE. The
 * exporters stream, so FILE grows while memory stays flat. */
#include "trace_cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage_text[] =
    "usage: pacer trace export DIR --format chrome|perfetto|folded -o FILE\n"
    "                          [--filter PATTERN] [--max-depth N] [--min-ns N]\n";

int trace_export_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"filter", required_argument, NULL, TRACE_OPT_FILTER},
        {"max-depth", required_argument, NULL, TRACE_OPT_MAX_DEPTH},
        {"min-ns", required_argument, NULL, TRACE_OPT_MIN_NS},
        {NULL, 0, NULL, 0},
    };
    const char *format = NULL, *outpath = NULL;
    pt_tree_options given = {0};
    bool set[3] = {false};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:o:", opts, NULL)) != -1) {
        if (c == 'f') {
            format = optarg;
        } else if (c == 'o') {
            outpath = optarg;
        } else if (c == '?' || trace_parse_filter_option(c, optarg, &given) < 0) {
            fputs(usage_text, stderr);
            return 2;
        } else {
            set[c - TRACE_OPT_FILTER] = true;
        }
    }
    if (optind + 1 != argc || !format || !outpath) {
        fputs(usage_text, stderr);
        return 2;
    }
    int (*fn)(const char *, const pt_output_options *, FILE *, char *, size_t);
    if (strcmp(format, "chrome") == 0 || strcmp(format, "json") == 0)
        fn = pt_export_chrome;
    else if (strcmp(format, "perfetto") == 0)
        fn = pt_export_perfetto;
    else if (strcmp(format, "folded") == 0)
        fn = pt_export_folded;
    else {
        fprintf(stderr, "pacer trace export: unknown format '%s' (chrome, perfetto or folded)\n", format);
        return 2;
    }
    const char *dir = argv[optind];
    pt_output_options o = {0};
    trace_effective_options(dir, &given, set, &o.tree);

    bool to_stdout = strcmp(outpath, "-") == 0;
    FILE *out = to_stdout ? stdout : fopen(outpath, "wb");
    if (!out) {
        perror(outpath);
        return 2;
    }
    char err[512] = "";
    int rc = fn(dir, &o, out, err, sizeof err);
    if (!to_stdout && fclose(out) != 0 && rc == 0) {
        snprintf(err, sizeof err, "%s: write failed", outpath);
        rc = -5;
    }
    if (rc < 0) {
        fprintf(stderr, "pacer trace export: %s\n", err);
        return 2;
    }
    return 0;
}
