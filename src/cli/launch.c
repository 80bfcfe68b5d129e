/* Starting a program under the agent (launch.h). */
#include "launch.h"

#include <pacer/pacer.h>

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef PACER_AGENT_DIR
#define PACER_AGENT_DIR "/usr/local/lib/pacer"
#endif

#define AGENT_NAME "libpacer-agent.so"

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

static int set_path_env(const char *cmd, const char *name, const char *path)
{
    char *abs = absolute(path);
    if (!abs || setenv(name, abs, 1) != 0) {
        fprintf(stderr, "%s: cannot set %s: %s\n", cmd, name, strerror(errno));
        free(abs);
        return -1;
    }
    free(abs);
    return 0;
}

int launch_check(const char *cmd, const launch_options *o, char **ret_agent)
{
    if (o->config) {
        char *err = NULL;
        pacer_config *cfg = pacer_config_load(o->config, &err);
        if (!cfg) {
            fprintf(stderr, "%s: %s\n", cmd, err ? err : o->config);
            free(err);
            return -1;
        }
        pacer_config_unref(cfg);
    }
    if (o->server && strncmp(o->server, "http://", 7) != 0 && strncmp(o->server, "https://", 8) != 0) {
        fprintf(stderr, "%s: --server wants an http:// or https:// URL, not '%s'\n", cmd, o->server);
        return -1;
    }
    char *agent = find_agent();
    if (!agent) {
        fprintf(stderr,
                "%s: cannot find %s (looked next to this executable and in %s);\n"
                "set PACER_AGENT_LIB to its path\n",
                cmd, AGENT_NAME, PACER_AGENT_DIR);
        return -1;
    }
    *ret_agent = agent;
    return 0;
}

int launch_set_env(const char *cmd, const launch_options *o, const char *agent, const char *prog0)
{
    const char *base = strrchr(prog0, '/');
    base = base ? base + 1 : prog0;
    if (set_path_env(cmd, "PACER_OUT", o->out) < 0 || (o->config && set_path_env(cmd, "PACER_CONFIG", o->config) < 0) ||
        (o->raw && set_path_env(cmd, "PACER_RAW_EVENTS", o->raw) < 0))
        return -1;
    if (!o->config)
        unsetenv("PACER_CONFIG");
    if (!o->raw)
        unsetenv("PACER_RAW_EVENTS");
    if (o->server)
        setenv("PACER_SERVER_URL", o->server, 1);
    else
        unsetenv("PACER_SERVER_URL");
    if (o->server && o->key)
        setenv("PACER_SERVER_KEY", o->key, 1);
    else
        unsetenv("PACER_SERVER_KEY");
    if (o->spool && set_path_env(cmd, "PACER_SPOOL", o->spool) < 0)
        return -1;
    if (!o->spool)
        unsetenv("PACER_SPOOL");
    setenv("PACER_APP", o->app ? o->app : base, 1);
    if (o->version)
        setenv("PACER_APP_VERSION", o->version, 1);
    unsetenv("PACER_AGENT_PID"); /* a fresh run: the program may claim it */

    const char *old = getenv("LD_PRELOAD");
    size_t n = strlen(agent) + (old ? strlen(old) + 1 : 0) + 1;
    char *preload = malloc(n);
    if (!preload) {
        fprintf(stderr, "%s: out of memory\n", cmd);
        return -1;
    }
    snprintf(preload, n, "%s%s%s", agent, old && *old ? " " : "", old && *old ? old : "");
    setenv("LD_PRELOAD", preload, 1);
    free(preload);
    return 0;
}

int launch_exec(const char *cmd, char **prog)
{
    char launch[32];
    snprintf(launch, sizeof(launch), "%lld", (long long)pacer_now_ns());
    setenv("PACER_LAUNCH_NS", launch, 1);
    execvp(prog[0], prog);
    int e = errno;
    fprintf(stderr, "%s: cannot run '%s': %s\n", cmd, prog[0], strerror(e));
    return e == ENOENT ? 127 : 126;
}
