/* What every command's argument parsing shares: --help and --format. */
#include "commands.h"

#include <string.h>

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
