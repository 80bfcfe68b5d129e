/* pacer trace report DIR: top functions by total and self time, call
 * counts, per thread (src/tracefile/report.c does the work). */
#include "trace_cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: pacer trace report DIR [--filter PATTERN] [--max-depth N] [--min-ns N] [--top N]\n";

int trace_report_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"filter", required_argument, NULL, TRACE_OPT_FILTER},
        {"max-depth", required_argument, NULL, TRACE_OPT_MAX_DEPTH},
        {"min-ns", required_argument, NULL, TRACE_OPT_MIN_NS},
        {"top", required_argument, NULL, TRACE_OPT_TOP},
        {NULL, 0, NULL, 0},
    };
    pt_output_options o = {0};
    pt_tree_options given = {0};
    bool set[4] = {false};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == '?' || trace_parse_filter_option(c, optarg, &given) < 0) {
            fputs(usage_text, stderr);
            return 2;
        }
        if (c == TRACE_OPT_TOP)
            o.top = (unsigned)strtoul(optarg, NULL, 10);
        else
            set[c - TRACE_OPT_FILTER] = true;
    }
    if (optind + 1 != argc) {
        fputs(usage_text, stderr);
        return 2;
    }
    const char *dir = argv[optind];
    trace_effective_options(dir, &given, set, &o.tree);
    char err[512] = "";
    int rc = pt_report(dir, &o, stdout, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "pacer trace report: %s\n", err);
        return 2;
    }
    return 0;
}
