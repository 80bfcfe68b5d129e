/* pacer trace: exact function tracing for programs built with
 * -finstrument-functions. Dispatches to record / report / export and holds
 * the filter options they share (docs/trace.md). */
#include "commands.h"
#include "trace_cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: pacer trace record [-o DIR] [--filter PATTERN] [--max-depth N] [--min-ns N] -- PROGRAM [ARGS...]\n"
    "       pacer trace report DIR [--filter PATTERN] [--max-depth N] [--min-ns N] [--top N]\n"
    "       pacer trace export DIR --format chrome|perfetto|folded -o FILE [filters]\n"
    "\n"
    "Exact function tracing at a few nanoseconds per call. Build the program with\n"
    "  -finstrument-functions -finstrument-functions-exclude-file-list=/usr/include\n"
    "and, optionally, link it with `pkg-config --libs pacer-trace`; otherwise\n"
    "`record` preloads the runtime (found next to pacer, or PACER_TRACE_LIB).\n"
    "\n"
    "  record   run PROGRAM and write its function trace to DIR (default pacer.trace)\n"
    "  report   top functions by total and self time, call counts, per thread\n"
    "  export   Chrome trace JSON, Perfetto protobuf (ui.perfetto.dev), or folded\n"
    "           stacks (flamegraph.pl, speedscope)\n"
    "\n"
    "Filters (given to record, they are stored with the trace and applied when it\n"
    "is read; report/export accept them too and override the stored ones):\n"
    "  --filter PATTERN  only calls of functions matching the glob, and their callees\n"
    "  --max-depth N     only N levels of calls\n"
    "  --min-ns N        hide calls shorter than N ns (their time stays in the caller)\n"
    "\n"
    "Exit status: 0 on success (record: the program's own status), 2 on usage or\n"
    "input errors.\n";

int trace_parse_filter_option(int which, const char *value, pt_tree_options *opt)
{
    char *end;
    unsigned long long v;
    switch (which) {
    case TRACE_OPT_FILTER:
        opt->filter = value;
        return 0;
    case TRACE_OPT_MAX_DEPTH:
    case TRACE_OPT_MIN_NS:
    case TRACE_OPT_TOP:
        errno = 0;
        v = strtoull(value, &end, 10);
        if (errno || end == value || *end || value[0] == '-' ||
            (which != TRACE_OPT_MIN_NS && v > 1000000)) {
            fprintf(stderr, "pacer trace: '%s' is not a valid count for %s\n", value,
                    which == TRACE_OPT_MAX_DEPTH ? "--max-depth" : which == TRACE_OPT_MIN_NS ? "--min-ns" : "--top");
            return -EINVAL;
        }
        if (which == TRACE_OPT_MAX_DEPTH)
            opt->max_depth = (uint32_t)v;
        else if (which == TRACE_OPT_MIN_NS)
            opt->min_ns = v;
        return 0;
    default:
        return -EINVAL;
    }
}

void trace_effective_options(const char *dir, const pt_tree_options *given, const bool set[3],
                             pt_tree_options *ret)
{
    trace_load_recorded_options(dir, ret);
    if (set[0])
        ret->filter = given->filter;
    if (set[1])
        ret->max_depth = given->max_depth;
    if (set[2])
        ret->min_ns = given->min_ns;
}

void trace_load_recorded_options(const char *dir, pt_tree_options *opt)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/options", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = '\0';
        const char *v = eq + 1;
        if (strcmp(line, "filter") == 0 && *v) {
            static char filter[1024];
            snprintf(filter, sizeof filter, "%s", v);
            opt->filter = filter;
        } else if (strcmp(line, "max_depth") == 0) {
            opt->max_depth = (uint32_t)strtoul(v, NULL, 10);
        } else if (strcmp(line, "min_ns") == 0) {
            opt->min_ns = strtoull(v, NULL, 10);
        }
    }
    fclose(f);
}

int trace_save_recorded_options(const char *dir, const pt_tree_options *opt)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/options", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -errno;
    fprintf(f, "filter=%s\nmax_depth=%u\nmin_ns=%llu\n", opt->filter ? opt->filter : "", opt->max_depth,
            (unsigned long long)opt->min_ns);
    return fclose(f) == 0 ? 0 : -EIO;
}

static int run(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        return 2;
    }
    if (strcmp(argv[1], "record") == 0)
        return trace_record_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "report") == 0)
        return trace_report_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "export") == 0)
        return trace_export_main(argc - 1, argv + 1);
    fprintf(stderr, "pacer trace: unknown subcommand '%s' (record, report or export)\n\n", argv[1]);
    fputs(usage_text, stderr);
    return 2;
}

const cli_command cmd_trace = {"trace", "Record and read exact function traces (-finstrument-functions)", usage_text,
                               run};
