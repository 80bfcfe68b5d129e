/* pacer run — measure an unmodified program (docs/agent.md).
 *
 * Stamps the launch time, preloads libpacer-agent.so, hands the agent its
 * settings through the environment and execs the program, which replaces
 * this process: the exit status is the program's own. Nothing of pacer
 * stays running beside it. How the agent is found and what the environment
 * holds: launch.h, which `pacer bench` shares.
 */
#include "commands.h"
#include "launch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: pacer run [--config FILE] [--out FILE.jsonl] [--app NAME] [--app-version V]\n"
    "                 [--raw-events FILE] [--server URL [--key KEY] [--spool FILE]]\n"
    "                 -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM with the pacer agent preloaded. A GTK4 program needs no change:\n"
    "its windows, configured pages, start-up and HTTP requests (libsoup-3.0,\n"
    "libcurl) are measured and written as records. Other programs run unchanged.\n"
    "The exit status is PROGRAM's.\n"
    "\n"
    "  --config FILE       page config (XML); without it every\n"
    "                      window is still measured\n"
    "  --out FILE          records, JSON Lines, appended (default: pacer.jsonl)\n"
    "  --app NAME          \"app\" field of the records (default: PROGRAM's name)\n"
    "  --app-version V     \"version\" field of the records\n"
    "  --raw-events FILE   also write the raw event stream, for `pacer replay`\n"
    "  --server URL        also send the records to a pacer server (pacerd, or any\n"
    "                      OTLP/HTTP JSON receiver), e.g. http://127.0.0.1:4318; the\n"
    "                      page config then comes from the server too\n"
    "  --key KEY           the app's ingest key for --server (default: $PACER_KEY)\n"
    "  --spool FILE        where records wait until delivered\n"
    "                      (default: ~/.local/state/pacer/spool.db)\n"
    "\n"
    "Environment: PACER_AGENT_LIB overrides where libpacer-agent.so is found.\n";

static int run(int argc, char **argv)
{
    const char *config = NULL, *out = "pacer.jsonl", *app = NULL, *version = NULL, *raw = NULL;
    const char *server = NULL, *key = getenv("PACER_KEY"), *spool = NULL;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (strcmp(a, "--config") == 0) {
            slot = &config;
        } else if (strcmp(a, "--out") == 0) {
            slot = &out;
        } else if (strcmp(a, "--app") == 0) {
            slot = &app;
        } else if (strcmp(a, "--app-version") == 0) {
            slot = &version;
        } else if (strcmp(a, "--raw-events") == 0) {
            slot = &raw;
        } else if (strcmp(a, "--server") == 0) {
            slot = &server;
        } else if (strcmp(a, "--key") == 0) {
            slot = &key;
        } else if (strcmp(a, "--spool") == 0) {
            slot = &spool;
        } else if (a[0] != '-') {
            break; /* PROGRAM without "--" */
        } else {
            fprintf(stderr, "pacer run: unknown option '%s'\n\n%s", a, usage);
            return 2;
        }
        if (i + 1 >= argc || !argv[i + 1][0]) {
            fprintf(stderr, "pacer run: %s needs a value\n", a);
            return 2;
        }
        *slot = argv[++i];
    }
    if (i >= argc) {
        fprintf(stderr, "pacer run: no program given\n\n%s", usage);
        return 2;
    }
    char **prog = argv + i;

    launch_options lo = {.config = config, .out = out, .raw = raw, .app = app, .version = version,
                         .server = server, .key = key, .spool = spool};
    char *agent = NULL;
    if (launch_check("pacer run", &lo, &agent) < 0)
        return 2;
    int r = launch_set_env("pacer run", &lo, agent, prog[0]);
    free(agent);
    if (r < 0)
        return 2;
    return launch_exec("pacer run", prog);
}

const cli_command cmd_run = {"run", "Run a program with the pacer agent preloaded", usage, run};
