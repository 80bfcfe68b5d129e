/* Starting a program under the agent: what `pacer run` and `pacer bench`
 * share (docs/agent.md).
 *
 * The agent's whole interface is the environment of the process it is
 * preloaded into:
 *   PACER_LAUNCH_NS    CLOCK_MONOTONIC ns taken just before execve (cold start begin)
 *   PACER_OUT          records file (JSON Lines, appended)
 *   PACER_RAW_EVENTS   events file, for `pacer replay` (only with raw)
 *   PACER_CONFIG       page config (only with config), validated by launch_check
 *   PACER_APP, PACER_APP_VERSION   "app" / "version" of every record (PACER_APP
 *                      only with app: the agent names the app otherwise)
 *   PACER_RUN_PID, PACER_RUN_OUT_SIZE  (only with summary) this process's pid
 *                      (the program's, after exec) and the records file's size
 *                      before the run (-1: none), for the agent's one-line
 *                      summary at exit
 *   PACER_SERVER_URL   server
 *   PACER_SERVER_CA    ca, the CA certificates for an https:// server
 *   PACER_SERVER_KEY_FD  the descriptor of the key (below)
 *   PACER_OTLP_PROTOCOL, PACER_OTLP_COMPRESSION  the upload's protocol and encoding
 *   PACER_CONFIG_SERVER_URL  config_server: where the page config is polled
 *   PACER_LEAKS        the leak modes (only with leaks); with native also
 *                      G_SLICE=always-malloc, so GLib's slices are blocks of
 *                      their own that the mark can see
 *   PACER_FRAMES       the frames mode (only with frames): detail names
 *                      the widget types of slow frames
 *   LD_PRELOAD         the agent, prepended to any value already set
 * Paths are made absolute, since the program may change directory.
 *
 * The key is never on a command line nor in the environment: it goes into
 * a sealed memfd named "pacer-key", left open across exec, whose number
 * PACER_SERVER_KEY_FD gives. The measured program's libpacer reads it
 * once, closes it and removes the variable (pacer_options.server_key), so
 * its children inherit neither; PACER_KEY itself is removed from the
 * program's environment. A program that is not measured (a script that
 * starts the app) passes the descriptor on to the app it starts.
 *
 * The agent is found, in order: $PACER_AGENT_LIB; next to this executable
 * in a build tree (../agent/libpacer-agent.so, relative to src/cli/pacer);
 * the install location ($libdir/pacer, compiled in as PACER_AGENT_DIR).
 * With the native leak mode the agent that tracks allocations,
 * libpacer-agent-heap.so, from the same directory, is preloaded instead.
 *
 * Every function prints its own message ("CMD: what went wrong") on stderr;
 * cmd is the command's name for it, e.g. "pacer run".
 */
#ifndef PACER_CLI_LAUNCH_H
#define PACER_CLI_LAUNCH_H

#include <stdbool.h>

typedef struct launch_options {
    const char *config;      /* page config, or NULL */
    const char *out;         /* records file */
    const char *raw;         /* raw events file, or NULL */
    const char *app;         /* "app" of the records, or NULL: the agent names it */
    const char *version;     /* "version", or NULL */
    const char *server;      /* upload URL, or NULL */
    const char *key;         /* its ingest key (the text), or NULL */
    const char *ca;          /* CA certificates for an https:// server, or NULL */
    const char *spool;       /* spool file, or NULL (the core's default) */
    const char *protocol;    /* "protobuf", "json" or "grpc", or NULL (the core's default) */
    const char *compression; /* "gzip" or "none", or NULL */
    const char *config_server; /* the config service's URL, or NULL (the core's default) */
    const char *leaks;       /* leak modes (refs,native,off), or NULL */
    const char *frames;      /* frames mode (phases, detail), or NULL */
    bool summary;            /* the agent prints its one-line summary at exit */
} launch_options;

/* Checks what can be checked before anything runs: the config parses, the
 * server URL is http(s) (over gRPC without a path), the config server's
 * too, the protocols, encodings and leak modes are known, the
 * records files can be appended to, the CA file is readable. Returns the
 * agent's absolute path (malloc'd) in *ret_agent. 0, or -1 (printed). */
int launch_check(const char *cmd, const launch_options *o, char **ret_agent);

/* Sets the agent's environment in this process. 0, or -1 (printed). */
int launch_set_env(const char *cmd, const launch_options *o, const char *agent);

/* Says when the agent cannot be loaded into `prog` at all, which the agent
 * itself then cannot say: a statically linked executable (no dynamic
 * loader, so no LD_PRELOAD) or a set-user/group-ID one (the loader ignores
 * LD_PRELOAD). The program still runs. */
void launch_warn_unloadable(const char *cmd, const char *prog);

/* Stamps PACER_LAUNCH_NS and execs prog (NULL-terminated). Returns only
 * when the program cannot be started: the exit status to give (127 not
 * found, 126 otherwise), after printing why. */
int launch_exec(const char *cmd, char **prog);

#endif
