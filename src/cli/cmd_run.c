/* pacer run — measure an unmodified program (docs/agent.md).
 *
 * Stamps the launch time, preloads libpacer-agent.so, hands the agent its
 * settings through the environment and execs the program, which replaces
 * this process: the exit status is the program's own. Nothing of pacer
 * stays running beside it.
 *
 * Environment given to the program (the agent's whole interface):
 *   PACER_LAUNCH_NS    CLOCK_MONOTONIC ns taken just before execve (cold start begin)
 *   PACER_OUT          records file (JSON Lines, appended)
 *   PACER_RAW_EVENTS   events file, for `pacer replay` (only with --raw-events)
 *   PACER_CONFIG       page config (only with --config), validated here first
 *   PACER_APP, PACER_APP_VERSION   "app" / "version" of every record
 *   LD_PRELOAD         the agent, prepended to any value already set
 * Paths are made absolute, since the program may change directory.
 *
 * The agent is found, in order: $PACER_AGENT_LIB; next to this executable
 * in a build tree (../agent/libpacer-agent.so, relative to src/cli/pacer);
 * the install location ($libdir/pacer, compiled in as PACER_AGENT_DIR).
 */
#include "commands.h"

#include <pacer/pacer.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef PACER_AGENT_DIR
#define PACER_AGENT_DIR "/usr/local/lib/pacer"
#endif

#define AGENT_NAME "libpacer-agent.so"

static const char usage[] =
    "usage: pacer run [--config FILE] [--out FILE.jsonl] [--app NAME] [--app-version V]\n"
    "                 [--raw-events FILE] [--server URL [--key KEY] [--spool FILE]\n"
    "                 [--otlp-protocol protobuf|json] [--otlp-compression gzip|none]]\n"
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
    "                      OTLP/HTTP receiver: an OpenTelemetry Collector), e.g.\n"
    "                      http://127.0.0.1:4318; the page config then comes from pacerd\n"
    "  --key KEY           the app's ingest key for --server (default: $PACER_KEY)\n"
    "  --spool FILE        where records wait until delivered\n"
    "                      (default: ~/.local/state/pacer/spool.db)\n"
    "  --otlp-protocol P   protobuf (default) or json\n"
    "  --otlp-compression C  gzip (default) or none\n"
    "\n"
    "Environment: PACER_AGENT_LIB overrides where libpacer-agent.so is found.\n";

/* Makes `path` absolute against the current directory. The file need not
 * exist. Returns a malloc'd string or NULL. */
static char *absolute(const char *path)
{
    if (path[0] == '/')
        return strdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof(cwd)))
        return NULL;
    size_t n = strlen(cwd) + 1 + strlen(path) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s/%s", cwd, path);
    return s;
}

static bool readable(const char *path)
{
    return access(path, R_OK) == 0;
}

/* Returns a malloc'd absolute path of the agent, or NULL. */
static char *find_agent(void)
{
    const char *env = getenv("PACER_AGENT_LIB");
    if (env && *env)
        return readable(env) ? absolute(env) : NULL;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            char cand[PATH_MAX + 64];
            snprintf(cand, sizeof(cand), "%s/../agent/" AGENT_NAME, exe);
            if (readable(cand))
                return realpath(cand, NULL);
        }
    }
    const char *installed = PACER_AGENT_DIR "/" AGENT_NAME;
    return readable(installed) ? strdup(installed) : NULL;
}

static int set_path_env(const char *name, const char *path)
{
    char *abs = absolute(path);
    if (!abs || setenv(name, abs, 1) != 0) {
        fprintf(stderr, "pacer run: cannot set %s: %s\n", name, strerror(errno));
        free(abs);
        return -1;
    }
    free(abs);
    return 0;
}

static int run(int argc, char **argv)
{
    const char *config = NULL, *out = "pacer.jsonl", *app = NULL, *version = NULL, *raw = NULL;
    const char *server = NULL, *key = getenv("PACER_KEY"), *spool = NULL, *protocol = NULL, *compression = NULL;
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
        } else if (strcmp(a, "--otlp-protocol") == 0) {
            slot = &protocol;
        } else if (strcmp(a, "--otlp-compression") == 0) {
            slot = &compression;
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

    if (config) {
        char *err = NULL;
        pacer_config *cfg = pacer_config_load(config, &err);
        if (!cfg) {
            fprintf(stderr, "pacer run: %s\n", err ? err : config);
            free(err);
            return 2;
        }
        pacer_config_unref(cfg);
    }
    char *agent = find_agent();
    if (!agent) {
        fprintf(stderr,
                "pacer run: cannot find %s (looked next to this executable and in %s);\n"
                "set PACER_AGENT_LIB to its path\n",
                AGENT_NAME, PACER_AGENT_DIR);
        return 2;
    }

    const char *base = strrchr(prog[0], '/');
    base = base ? base + 1 : prog[0];
    if (set_path_env("PACER_OUT", out) < 0 || (config && set_path_env("PACER_CONFIG", config) < 0) ||
        (raw && set_path_env("PACER_RAW_EVENTS", raw) < 0))
        return 2;
    if (!config)
        unsetenv("PACER_CONFIG");
    if (!raw)
        unsetenv("PACER_RAW_EVENTS");
    if (server && strncmp(server, "http://", 7) != 0 && strncmp(server, "https://", 8) != 0) {
        fprintf(stderr, "pacer run: --server wants an http:// or https:// URL, not '%s'\n", server);
        return 2;
    }
    if (protocol && strcmp(protocol, "protobuf") != 0 && strcmp(protocol, "json") != 0) {
        fprintf(stderr, "pacer run: --otlp-protocol %s: expected protobuf or json\n", protocol);
        return 2;
    }
    if (compression && strcmp(compression, "gzip") != 0 && strcmp(compression, "none") != 0) {
        fprintf(stderr, "pacer run: --otlp-compression %s: expected gzip or none\n", compression);
        return 2;
    }
    if (protocol)
        setenv("PACER_OTLP_PROTOCOL", protocol, 1);
    if (compression)
        setenv("PACER_OTLP_COMPRESSION", compression, 1);
    if (server)
        setenv("PACER_SERVER_URL", server, 1);
    else
        unsetenv("PACER_SERVER_URL");
    if (server && key)
        setenv("PACER_SERVER_KEY", key, 1);
    else
        unsetenv("PACER_SERVER_KEY");
    if (spool && set_path_env("PACER_SPOOL", spool) < 0)
        return 2;
    if (!spool)
        unsetenv("PACER_SPOOL");
    setenv("PACER_APP", app ? app : base, 1);
    if (version)
        setenv("PACER_APP_VERSION", version, 1);
    unsetenv("PACER_AGENT_PID"); /* a fresh run: the program may claim it */

    const char *old = getenv("LD_PRELOAD");
    size_t n = strlen(agent) + (old ? strlen(old) + 1 : 0) + 1;
    char *preload = malloc(n);
    if (!preload)
        return 2;
    snprintf(preload, n, "%s%s%s", agent, old && *old ? " " : "", old && *old ? old : "");
    setenv("LD_PRELOAD", preload, 1);
    free(preload);
    free(agent);

    char launch[32];
    snprintf(launch, sizeof(launch), "%lld", (long long)pacer_now_ns());
    setenv("PACER_LAUNCH_NS", launch, 1);
    execvp(prog[0], prog);
    int e = errno;
    fprintf(stderr, "pacer run: cannot run '%s': %s\n", prog[0], strerror(e));
    return e == ENOENT ? 127 : 126;
}

const cli_command cmd_run = {"run", "Run a program with the pacer agent preloaded", usage, run};
