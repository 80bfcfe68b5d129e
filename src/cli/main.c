/* pacer: the command-line entry point and command table. */
#include "commands.h"

#include <pacer/pacer.h>

#include <stdio.h>
#include <string.h>

static const cli_command *const commands[] = {
    &cmd_replay,
    &cmd_report,
    &cmd_config,
    &cmd_export,
    &cmd_run,
    &cmd_bench,
    &cmd_issues,
    &cmd_schema,
    &cmd_trace,
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

void cli_usage(const cli_command *cmd, FILE *out)
{
    fputs(cmd->usage, out);
}

int cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return 0;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
    }
    return 0;
}

int cli_format(const char *arg)
{
    return strcmp(arg, "text") == 0 ? 0 : strcmp(arg, "json") == 0 ? 1 : -1;
}

static void main_usage(FILE *out)
{
    fprintf(out,
            "usage: pacer COMMAND [ARGS...]\n"
            "\n"
            "Automatic performance monitoring for native Linux applications.\n"
            "\n"
            "Commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(out,
            "\n"
            "Run 'pacer COMMAND --help' for a command's options.\n"
            "Records are described in docs/records.md, events in docs/events.md.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        main_usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        main_usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("pacer %s\n", PACER_VERSION);
        return 0;
    }
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (strcmp(argv[1], commands[i]->name) == 0) {
            if (cli_wants_help(argc - 1, argv + 1)) {
                cli_usage(commands[i], stdout);
                return 0;
            }
            return commands[i]->run(argc - 1, argv + 1);
        }
    }
    fprintf(stderr, "pacer: unknown command '%s'\n\n", argv[1]);
    main_usage(stderr);
    return 2;
}
