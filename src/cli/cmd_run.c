/* pacer run — measure an unmodified program (docs/agent.md).
 *
 * Stamps the launch time, preloads libpacer-agent.so, hands the agent its
 * settings through the environment and execs the program, which replaces
 * this process: the exit status is the program's own. Nothing of pacer
 * stays running beside it.
 *
 * How the agent is found and what the environment holds: launch.h, which
 * `pacer bench` shares.
 */
#include "commands.h"
#include "launch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: pacer run [--config FILE] [--out FILE.jsonl] [--app NAME] [--app-version V]\n"
    "                 [--raw-events FILE] [--server URL [--key-file FILE] [--ca FILE]\n"
    "                 [--spool FILE] [--otlp-protocol protobuf|json|grpc]\n"
    "                 [--otlp-compression gzip|none] [--config-server URL]]\n"
    "                 [--leaks=refs|native|refs,native|off] [--frames=phases|detail]\n"
    "                 -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM with the pacer agent preloaded; it needs no change. Any\n"
    "dynamically linked program that shows windows (Wayland, X11, GL, Vulkan:\n"
    "GTK, Qt, SDL...) gets its start-up to the first frame presented, frames per\n"
    "window, main-loop stalls and libcurl requests; a GTK 4 or GTK 3 program\n"
    "also its pages (windows, configured pages) and libsoup requests. Others\n"
    "run unchanged. The exit status is PROGRAM's. At its end one line on\n"
    "stderr says what was measured and where the records went, or why PROGRAM\n"
    "was not measured.\n"
    "\n"
    "  --config FILE       page config (XML); without it every\n"
    "                      window is still measured\n"
    "  --out FILE          records, JSON Lines, appended (default: pacer.jsonl)\n"
    "  --app NAME          \"app\" field of the records (default: PROGRAM's name;\n"
    "                      for a script run by python3 or gjs, the script's)\n"
    "  --app-version V     \"version\" field of the records\n"
    "  --raw-events FILE   also write the raw event stream, for `pacer replay`\n"
    "  --server URL        also send the records to a pacer server (pacerd, or any\n"
    "                      OTLP receiver: an OpenTelemetry Collector), e.g.\n"
    "                      http://127.0.0.1:4318; the page config then comes from pacerd.\n"
    "                      With --otlp-protocol grpc, the gRPC endpoint, without a\n"
    "                      path: http://HOST:4317 (HTTP/2 without TLS) or https://\n"
    "  --key-file FILE     the app's ingest key for --server, on the file's first\n"
    "                      line (default: $PACER_KEY). Never on a command line nor in\n"
    "                      the program's environment: it goes through a descriptor\n"
    "                      the measured app closes once read, so its children lack it\n"
    "  --ca FILE           CA certificates (PEM) to verify an https:// server with\n"
    "                      (a self-signed one); default: the system's\n"
    "  --spool FILE        where records wait until delivered\n"
    "                      (default: ~/.local/state/pacer/spool.db)\n"
    "  --otlp-protocol P   protobuf (OTLP/HTTP, the default), json (OTLP/HTTP JSON)\n"
    "                      or grpc (OTLP/gRPC: what a Collector's default otlp\n"
    "                      receiver takes on port 4317)\n"
    "  --otlp-compression C  gzip (default) or none\n"
    "  --config-server URL where the page config is polled (GET /v1/config/APP):\n"
    "                      a pacerd's http(s):// URL. Default: --server over\n"
    "                      OTLP/HTTP; over gRPC none, and the --config file rules\n"
    "  --leaks=MODES       objects of destroyed windows that stay alive are\n"
    "                      reported without this; MODES (comma-separated) adds:\n"
    "                        refs    the stacks of the references that keep them\n"
    "                        native  malloc'd memory nothing points to at exit\n"
    "                                (sampled allocation stacks, a mark phase)\n"
    "                      off turns leak detection off\n"
    "  --frames=MODE       frames records carry each window's time per frame phase\n"
    "                      (events, update, layout, paint, present) without this\n"
    "                      (phases); detail also names the widget types whose\n"
    "                      layout or paint took longest in slow frames (GTK 4)\n"
    "\n"
    "Environment: PACER_AGENT_LIB overrides where libpacer-agent.so is found.\n";

static int run(int argc, char **argv)
{
    const char *config = NULL, *out = "pacer.jsonl", *app = NULL, *version = NULL, *raw = NULL;
    const char *server = NULL, *key_file = NULL, *ca = NULL, *spool = NULL, *leaks = NULL;
    const char *frames = NULL;
    const char *protocol = NULL, *compression = NULL, *config_server = NULL;
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
            fprintf(stderr, "pacer run: %s\n", CLI_NO_KEY_IN_ARGV);
            return 2;
        } else if (strcmp(a, "--key-file") == 0) {
            slot = &key_file;
        } else if (strcmp(a, "--ca") == 0) {
            slot = &ca;
        } else if (strcmp(a, "--spool") == 0) {
            slot = &spool;
        } else if (strcmp(a, "--leaks") == 0) {
            slot = &leaks;
        } else if (strncmp(a, "--leaks=", 8) == 0) {
            leaks = a + 8;
            continue;
        } else if (strcmp(a, "--frames") == 0) {
            slot = &frames;
        } else if (strncmp(a, "--frames=", 9) == 0) {
            frames = a + 9;
            continue;
        } else if (strcmp(a, "--otlp-protocol") == 0) {
            slot = &protocol;
        } else if (strcmp(a, "--otlp-compression") == 0) {
            slot = &compression;
        } else if (strcmp(a, "--config-server") == 0) {
            slot = &config_server;
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

    int key_error = 0;
    char *key = server ? cli_server_key("run", key_file, &key_error) : NULL;
    if (key_error)
        return 2;
    launch_options lo = {.config = config, .out = out, .raw = raw, .app = app, .version = version,
                         .server = server, .key = key, .ca = ca, .spool = spool, .protocol = protocol,
                         .compression = compression, .config_server = config_server, .leaks = leaks,
                         .frames = frames, .summary = true};
    char *agent = NULL;
    int r = launch_check("pacer run", &lo, &agent) < 0 || launch_set_env("pacer run", &lo, agent) < 0 ? -1 : 0;
    cli_key_free(key);
    free(agent);
    if (r < 0)
        return 2;
    launch_warn_unloadable("pacer run", prog[0]);
    return launch_exec("pacer run", prog);
}

const cli_command cmd_run = {"run", "Run a program with the pacer agent preloaded", usage, run};
