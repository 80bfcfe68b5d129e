/* The pacer command line: one file per subcommand, dispatched from the table
 * in table.c, which also produces `pacer --help` and the manual pages
 * (man.c).
 *
 * Each command receives argv with argv[0] = the command name. Exit codes:
 * 0 success, 1 the work ran but found problems (e.g. skipped input lines),
 * 2 usage or input errors (bad config, unreadable file). */
#ifndef PACER_CLI_COMMANDS_H
#define PACER_CLI_COMMANDS_H

#include <stdbool.h>
#include <stdio.h>

typedef struct cli_command {
    const char *name;
    const char *summary; /* one line for `pacer --help` */
    const char *usage;   /* full help text for `pacer CMD --help` */
    int (*run)(int argc, char **argv);
} cli_command;

extern const cli_command cmd_bench;
extern const cli_command cmd_config;
extern const cli_command cmd_export;
extern const cli_command cmd_issues;
extern const cli_command cmd_replay;
extern const cli_command cmd_report;
extern const cli_command cmd_trace;
extern const cli_command cmd_run;
extern const cli_command cmd_schema;

/* The command table (table.c), in the order `pacer --help` lists it. */
extern const cli_command *const cli_commands[];
extern const size_t cli_n_commands;

/* One line saying what pacer is: `pacer --help` and the manual's NAME. */
extern const char cli_summary[];

/* Prints `pacer --help`: the commands of the table, one line each. */
void cli_main_usage(FILE *out);

/* Prints cmd->usage to `out`. */
void cli_usage(const cli_command *cmd, FILE *out);

/* True when argv holds -h or --help before any "--". */
int cli_wants_help(int argc, char **argv);

/* The ingest key for --server: the first line of key_file, else
 * $PACER_KEY, else NULL. On a file that cannot be read, prints why
 * ("pacer CMD: --key-file ...") and sets *ret_error. Free with
 * cli_key_free, which wipes it. */
char *cli_server_key(const char *cmd, const char *key_file, int *ret_error);
void cli_key_free(char *key);

/* pacerd's admin token: the first line of path, malloc'd, without its
 * newline; NULL when the file cannot be read or its first line is empty
 * (printed: "pacer CMD: --token-file PATH: ..."). */
char *cli_token_file(const char *cmd, const char *path);

/* An answer from pacerd read by libcurl into memory: pass cli_answer_write
 * as CURLOPT_WRITEFUNCTION and the answer as CURLOPT_WRITEDATA. The data is
 * NUL-terminated; past max bytes the transfer stops with too_big set. */
typedef struct cli_answer {
    char *data;
    size_t len, cap, max;
    bool too_big;
} cli_answer;

size_t cli_answer_write(char *p, size_t size, size_t n, void *ctx);

/* What --key KEY now says: keys do not go on the command line. */
#define CLI_NO_KEY_IN_ARGV                                                                                           \
    "--key would show the key to every user of this machine (ps, /proc); "                                          \
    "put it in a file (--key-file FILE) or in $PACER_KEY"

/* The value of --format: "text" (0) or "json" (1); -1 for anything else
 * (the caller says so). */
int cli_format(const char *arg);

#endif
