/* pacer config — to be written. */
#include "commands.h"

static int run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return 2;
}

const cli_command cmd_config = {"config", "(not yet available)", "usage: pacer config\n", run};
