/* The command table: what `pacer` dispatches, what `pacer --help` lists and
 * what the manual pages are made from (man.c). */
#include "commands.h"

const cli_command *const cli_commands[] = {
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

const size_t cli_n_commands = sizeof(cli_commands) / sizeof(cli_commands[0]);

const char cli_summary[] = "Automatic performance monitoring for native Linux applications.";

void cli_main_usage(FILE *out)
{
    fprintf(out,
            "usage: pacer COMMAND [ARGS...]\n"
            "\n"
            "%s\n"
            "\n"
            "Commands:\n",
            cli_summary);
    for (size_t i = 0; i < cli_n_commands; i++)
        fprintf(out, "  %-10s %s\n", cli_commands[i]->name, cli_commands[i]->summary);
    fprintf(out,
            "\n"
            "Run 'pacer COMMAND --help' for a command's options.\n"
            "Records are described in docs/records.md, events in docs/events.md.\n");
}
