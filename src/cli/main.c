/* pacer: the command-line entry point: runs the command of the table
 * (table.c) that argv[1] names. */
#include "commands.h"

#include <pacer/pacer.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        cli_main_usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        cli_main_usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("pacer %s\n", PACER_VERSION);
        return 0;
    }
    for (size_t i = 0; i < cli_n_commands; i++) {
        if (strcmp(argv[1], cli_commands[i]->name) == 0) {
            if (cli_wants_help(argc - 1, argv + 1)) {
                cli_usage(cli_commands[i], stdout);
                return 0;
            }
            return cli_commands[i]->run(argc - 1, argv + 1);
        }
    }
    fprintf(stderr, "pacer: unknown command '%s'\n\n", argv[1]);
    cli_main_usage(stderr);
    return 2;
}
