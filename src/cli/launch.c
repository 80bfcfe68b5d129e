/* Starting a program under the agent (launch.h). */
#include "launch.h"

#include <pacer/pacer.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef PACER_AGENT_DIR
#define PACER_AGENT_DIR "/usr/local/lib/pacer"
#endif

#define AGENT_NAME "libpacer-agent.so"
#define AGENT_HEAP_NAME "libpacer-agent-heap.so"
#define AGENT_REFS_NAME "libpacer-agent-refs.so"

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

/* The agent variant `name` (allocation tracking, reference hooks), beside
 * `agent`. Malloc'd, or NULL. */
static char *sibling_agent(const char *agent, const char *name)
{
    const char *slash = strrchr(agent, '/');
    size_t dir = slash ? (size_t)(slash - agent + 1) : 0;
    size_t n = dir + strlen(name) + 1;
    char *p = malloc(n);
    if (!p)
        return NULL;
    snprintf(p, n, "%.*s%s", (int)dir, agent, name);
    if (!readable(p)) {
        free(p);
        return NULL;
    }
    return p;
}

/* Checks the leak modes: comma-separated refs, native, off. */
static bool leaks_valid(const char *v, bool *ret_native, bool *ret_refs)
{
    *ret_native = false;
    *ret_refs = false;
    if (!*v)
        return false;
    for (const char *p = v; *p;) {
        size_t k = strcspn(p, ",");
        if (k == 6 && strncmp(p, "native", 6) == 0)
            *ret_native = true;
        else if (k == 4 && strncmp(p, "refs", 4) == 0)
            *ret_refs = true;
        else if (!(k == 3 && strncmp(p, "off", 3) == 0))
            return false;
        p += k;
        if (*p == ',' && !*++p)
            return false;
    }
    return true;
}

/* Whether `url` is http(s)://authority without a path (a "/" aside). */
static bool url_without_path(const char *url)
{
    const char *a = strncmp(url, "http://", 7) == 0 ? url + 7 : strncmp(url, "https://", 8) == 0 ? url + 8 : NULL;
    if (!a || !*a)
        return false;
    const char *rest = a + strcspn(a, "/?#");
    return rest > a && (!*rest || strcmp(rest, "/") == 0);
}

/* Whether the file at `path` can be appended to, creating it if need be; a
 * file created for the check is removed again. On failure says why. */
static bool appendable(const char *cmd, const char *option, const char *path)
{
    struct stat sb;
    bool existed = stat(path, &sb) == 0;
    if (existed && S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "%s: %s '%s' is a directory\n", cmd, option, path);
        return false;
    }
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "%s: cannot write %s '%s': %s\n", cmd, option, path, strerror(errno));
        return false;
    }
    close(fd);
    if (!existed)
        unlink(path);
    return true;
}

int launch_check(const char *cmd, const launch_options *o, char **ret_agent)
{
    bool native = false, refs = false;
    if (o->leaks && !leaks_valid(o->leaks, &native, &refs)) {
        fprintf(stderr, "%s: --leaks wants refs, native, off or a comma-separated list of them, not '%s'\n", cmd,
                o->leaks);
        return -1;
    }
    if (o->frames && strcmp(o->frames, "phases") != 0 && strcmp(o->frames, "detail") != 0) {
        fprintf(stderr, "%s: --frames wants phases or detail, not '%s'\n", cmd, o->frames);
        return -1;
    }
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
    if (o->protocol && strcmp(o->protocol, "protobuf") != 0 && strcmp(o->protocol, "json") != 0 &&
        strcmp(o->protocol, "grpc") != 0) {
        fprintf(stderr, "%s: --otlp-protocol %s: expected protobuf, json or grpc\n", cmd, o->protocol);
        return -1;
    }
    if (o->server && o->protocol && strcmp(o->protocol, "grpc") == 0 && !url_without_path(o->server)) {
        fprintf(stderr,
                "%s: --server %s: over gRPC the server is the endpoint, http://HOST:PORT or https://HOST:PORT,\n"
                "without a path (OTLP/gRPC's port is 4317)\n",
                cmd, o->server);
        return -1;
    }
    if (o->config_server && strncmp(o->config_server, "http://", 7) != 0 &&
        strncmp(o->config_server, "https://", 8) != 0) {
        fprintf(stderr, "%s: --config-server wants an http:// or https:// URL, not '%s'\n", cmd, o->config_server);
        return -1;
    }
    if (o->compression && strcmp(o->compression, "gzip") != 0 && strcmp(o->compression, "none") != 0) {
        fprintf(stderr, "%s: --otlp-compression %s: expected gzip or none\n", cmd, o->compression);
        return -1;
    }
    if (o->server && o->ca && access(o->ca, R_OK) != 0) {
        fprintf(stderr, "%s: --ca %s: %s\n", cmd, o->ca, strerror(errno));
        return -1;
    }
    if ((o->out && !appendable(cmd, "--out", o->out)) || (o->raw && !appendable(cmd, "--raw-events", o->raw)))
        return -1;
    char *agent = find_agent();
    if (!agent) {
        fprintf(stderr,
                "%s: cannot find %s (looked next to this executable and in %s);\n"
                "set PACER_AGENT_LIB to its path\n",
                cmd, AGENT_NAME, PACER_AGENT_DIR);
        return -1;
    }
    /* the malloc family and the reference hooks are exported only by the
     * variants that need them: no allocation or reference passes through
     * pacer unless asked (the heap agent has the reference hooks too) */
    if (native || refs) {
        const char *name = native ? AGENT_HEAP_NAME : AGENT_REFS_NAME;
        char *variant = sibling_agent(agent, name);
        if (!variant) {
            fprintf(stderr, "%s: --leaks=%s needs %s next to %s\n", cmd, native ? "native" : "refs", name, agent);
            free(agent);
            return -1;
        }
        free(agent);
        agent = variant;
    }
    *ret_agent = agent;
    return 0;
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

/* Sets name to value, or removes it when value is NULL. */
static void set_or_unset(const char *name, const char *value)
{
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

/* The key in a sealed memfd the program inherits; its number in
 * PACER_SERVER_KEY_FD. */
static int hand_over_key(const char *cmd, const char *key)
{
    int fd = memfd_create("pacer-key", MFD_ALLOW_SEALING); /* no MFD_CLOEXEC: it crosses exec */
    if (fd < 0) {
        fprintf(stderr, "%s: cannot hand the key over (memfd_create): %s\n", cmd, strerror(errno));
        return -1;
    }
    size_t n = strlen(key);
    if (write(fd, key, n) != (ssize_t)n ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
        fprintf(stderr, "%s: cannot hand the key over: %s\n", cmd, strerror(errno));
        close(fd);
        return -1;
    }
    char v[16];
    snprintf(v, sizeof v, "%d", fd);
    setenv("PACER_SERVER_KEY_FD", v, 1);
    return 0;
}

int launch_set_env(const char *cmd, const launch_options *o, const char *agent)
{
    if (set_path_env(cmd, "PACER_OUT", o->out) < 0 || (o->config && set_path_env(cmd, "PACER_CONFIG", o->config) < 0) ||
        (o->raw && set_path_env(cmd, "PACER_RAW_EVENTS", o->raw) < 0) ||
        (o->server && o->ca && set_path_env(cmd, "PACER_SERVER_CA", o->ca) < 0) ||
        (o->spool && set_path_env(cmd, "PACER_SPOOL", o->spool) < 0))
        return -1;
    if (!o->config)
        unsetenv("PACER_CONFIG");
    if (!o->raw)
        unsetenv("PACER_RAW_EVENTS");
    if (!o->server || !o->ca)
        unsetenv("PACER_SERVER_CA");
    if (!o->spool)
        unsetenv("PACER_SPOOL");
    set_or_unset("PACER_SERVER_URL", o->server);
    set_or_unset("PACER_OTLP_PROTOCOL", o->protocol);
    set_or_unset("PACER_OTLP_COMPRESSION", o->compression);
    set_or_unset("PACER_CONFIG_SERVER_URL", o->server ? o->config_server : NULL);
    /* the key: never in the program's environment */
    unsetenv("PACER_SERVER_KEY");
    unsetenv("PACER_SERVER_KEY_FD");
    unsetenv("PACER_KEY");
    if (o->server && o->key && hand_over_key(cmd, o->key) < 0)
        return -1;
    bool native = false, refs = false;
    if (o->leaks && leaks_valid(o->leaks, &native, &refs) && native)
        setenv("G_SLICE", "always-malloc", 0);
    set_or_unset("PACER_LEAKS", o->leaks);
    set_or_unset("PACER_FRAMES", o->frames);
    /* without an app the agent names the app: the program, or the script
     * an interpreter runs (python3 app.py: "app") */
    set_or_unset("PACER_APP", o->app);
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

    if (o->summary) {
        char num[32];
        struct stat sb;
        snprintf(num, sizeof(num), "%lld", stat(o->out, &sb) == 0 ? (long long)sb.st_size : -1LL);
        setenv("PACER_RUN_OUT_SIZE", num, 1);
        snprintf(num, sizeof(num), "%ld", (long)getpid());
        setenv("PACER_RUN_PID", num, 1);
    } else {
        unsetenv("PACER_RUN_OUT_SIZE");
        unsetenv("PACER_RUN_PID");
    }
    return 0;
}

/* The file execvp would run for `prog`, or NULL. */
static char *resolve_program(const char *prog)
{
    if (strchr(prog, '/'))
        return access(prog, X_OK) == 0 ? strdup(prog) : NULL;
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        size_t len = strcspn(p, ":");
        char cand[PATH_MAX];
        if (len > 0 && (size_t)snprintf(cand, sizeof(cand), "%.*s/%s", (int)len, p, prog) < sizeof(cand) &&
            access(cand, X_OK) == 0)
            return strdup(cand);
        p += len + (p[len] == ':');
    }
    return NULL;
}

void launch_warn_unloadable(const char *cmd, const char *prog)
{
    char *file = resolve_program(prog);
    if (!file)
        return; /* execvp reports it */
    struct stat sb;
    if (stat(file, &sb) == 0 && (sb.st_mode & (S_ISUID | S_ISGID)) &&
        (sb.st_uid != geteuid() || sb.st_gid != getegid())) {
        fprintf(stderr, "%s: %s is set-user-ID or set-group-ID: the loader ignores LD_PRELOAD, so it is "
                        "not measured\n", cmd, prog);
        free(file);
        return;
    }
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    free(file);
    if (fd < 0)
        return;
    Elf64_Ehdr eh;
    bool is_static = false;
    if (read(fd, &eh, sizeof(eh)) == (ssize_t)sizeof(eh) && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
        eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum < 512) {
        is_static = true;
        for (unsigned i = 0; i < eh.e_phnum && is_static; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != (ssize_t)sizeof(ph))
                is_static = false; /* unreadable: say nothing */
            else if (ph.p_type == PT_INTERP)
                is_static = false;
        }
    }
    close(fd);
    if (is_static)
        fprintf(stderr, "%s: %s is statically linked: the agent cannot be loaded into it, so it is not "
                        "measured\n", cmd, prog);
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
