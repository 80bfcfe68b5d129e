/* The `pacer trace` subcommands (cmd_trace.c dispatches; one file each). */
#ifndef PACER_CLI_TRACE_H
#define PACER_CLI_TRACE_H

#include <pacer/trace.h>

int trace_record_main(int argc, char **argv);
int trace_report_main(int argc, char **argv);
int trace_export_main(int argc, char **argv);

/* Filter options shared by record, report and export. */
enum { TRACE_OPT_FILTER = 1000, TRACE_OPT_MAX_DEPTH, TRACE_OPT_MIN_NS, TRACE_OPT_TOP };

/* Parses the value of one filter option into *opt. 0, or -EINVAL after
 * printing what is wrong. */
int trace_parse_filter_option(int which, const char *value, pt_tree_options *opt);

/* Loads the filters `pacer trace record` stored in DIR/options as defaults. */
void trace_load_recorded_options(const char *dir, pt_tree_options *opt);

/* The filters in effect for reading DIR: those `record` stored, each
 * replaced by the one given on this command line when set[i] (filter,
 * max-depth, min-ns) is true. */
void trace_effective_options(const char *dir, const pt_tree_options *given, const bool set[3],
                             pt_tree_options *ret);

/* Writes DIR/options. 0 or -errno. */
int trace_save_recorded_options(const char *dir, const pt_tree_options *opt);

#endif
