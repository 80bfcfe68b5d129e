/* Starting a program under the agent: what `pacer run` and `pacer bench`
 * share (docs/agent.md).
 *
 * The agent's whole interface is the environment of the process it is
 * preloaded into:
 *   PACER_LAUNCH_NS    CLOCK_MONOTONIC ns taken just before execve (cold start begin)
 *   PACER_OUT          records file (JSON Lines, appended)
 *   PACER_RAW_EVENTS   events file, for `pacer replay` (only with raw)
 *   PACER_CONFIG       page config (only with config), validated by launch_check
 *   PACER_APP, PACER_APP_VERSION   "app" / "version" of every record
 *   PACER_SERVER_URL, PACER_SERVER_KEY, PACER_SPOOL   upload (only with server)
 *   LD_PRELOAD         the agent, prepended to any value already set
 * Paths are made absolute, since the program may change directory.
 *
 * The agent is found, in order: $PACER_AGENT_LIB; next to this executable
 * in a build tree (../agent/libpacer-agent.so, relative to src/cli/pacer);
 * the install location ($libdir/pacer, compiled in as PACER_AGENT_DIR).
 *
 * Every function prints its own message ("CMD: what went wrong") on stderr;
 * cmd is the command's name for it, e.g. "pacer run".
 */
#ifndef PACER_CLI_LAUNCH_H
#define PACER_CLI_LAUNCH_H

typedef struct launch_options {
    const char *config;  /* page config, or NULL */
    const char *out;     /* records file */
    const char *raw;     /* raw events file, or NULL */
    const char *app;     /* "app" of the records, or NULL: the program's name */
    const char *version; /* "version", or NULL */
    const char *server;  /* upload URL, or NULL */
    const char *key;     /* its ingest key, or NULL */
    const char *spool;   /* spool file, or NULL (the core's default) */
} launch_options;

/* Checks what can be checked before anything runs: the config parses, the
 * server URL is http(s). Returns the agent's absolute path (malloc'd) in
 * *ret_agent. 0, or -1 (printed). */
int launch_check(const char *cmd, const launch_options *o, char **ret_agent);

/* Sets the agent's environment in this process, for a program called
 * prog0 (its name is the default app). 0, or -1 (printed). */
int launch_set_env(const char *cmd, const launch_options *o, const char *agent, const char *prog0);

/* Stamps PACER_LAUNCH_NS and execs prog (NULL-terminated). Returns only
 * when the program cannot be started: the exit status to give (127 not
 * found, 126 otherwise), after printing why. */
int launch_exec(const char *cmd, char **prog);

#endif
