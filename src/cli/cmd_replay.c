/* pacer replay — to be written. */
#include "commands.h"

static int run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return 2;
}

const cli_command cmd_replay = {"replay", "(not yet available)", "usage: pacer replay\n", run};
