/* pacer report — to be written. */
#include "commands.h"

static int run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return 2;
}

const cli_command cmd_report = {"report", "(not yet available)", "usage: pacer report\n", run};
