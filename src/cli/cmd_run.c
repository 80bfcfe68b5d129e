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
 *   PACER_APP, PACER_APP_VERSION   "app" / "version" of every record (PACER_APP
 *                      only with --app: the agent names the app otherwise)
 *   PACER_RUN_PID, PACER_RUN_OUT_SIZE  this process's pid (the program's, after
 *                      exec) and the records file's size before the run (-1:
 *                      none), for the agent's one-line summary at exit
 *   PACER_SERVER_URL   --server
 *   PACER_SERVER_CA    --ca, the CA certificates for an https:// server
 *   PACER_SERVER_KEY_FD  the descriptor of the key (below)
 *   PACER_LEAKS        the leak modes (only with --leaks); with native also
 *                      G_SLICE=always-malloc, so GLib's slices are blocks of
 *                      their own that the mark can see
 *   LD_PRELOAD         the agent, prepended to any value already set
 * Paths are made absolute, since the program may change directory.
 *
 * The key (--key-file, or $PACER_KEY) is never on a command line nor in
 * the environment: it goes into a sealed memfd named "pacer-key", left
 * open across exec, whose number PACER_SERVER_KEY_FD gives. The measured
 * program's libpacer reads it once, closes it and removes the variable
 * (pacer_options.server_key), so its children inherit neither; PACER_KEY
 * itself is removed from the program's environment. A program that is not
 * measured (a script that starts the app) passes the descriptor on to
 * the app it starts.
 *
 * The agent is found, in order: $PACER_AGENT_LIB; next to this executable
 * in a build tree (../agent/libpacer-agent.so, relative to src/cli/pacer);
 * the install location ($libdir/pacer, compiled in as PACER_AGENT_DIR).
 * With --leaks=native the agent that tracks allocations,
 * libpacer-agent-heap.so, from the same directory, is preloaded instead.
 */
#include "commands.h"

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

static const char usage[] =
    "usage: pacer run [--config FILE] [--out FILE.jsonl] [--app NAME] [--app-version V]\n"
    "                 [--raw-events FILE] [--server URL [--key-file FILE] [--ca FILE]\n"
    "                 [--spool FILE] [--otlp-protocol protobuf|json] [--otlp-compression gzip|none]]\n"
    "                 [--leaks=refs|native|refs,native|off]\n"
    "                 -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM with the pacer agent preloaded. A GTK4 program needs no change:\n"
    "its windows, configured pages, start-up and HTTP requests (libsoup-3.0,\n"
    "libcurl) are measured and written as records. Other programs run unchanged.\n"
    "The exit status is PROGRAM's. At its end one line on stderr says where the\n"
    "records went, or why PROGRAM was not measured.\n"
    "\n"
    "  --config FILE       page config (XML); without it every\n"
    "                      window is still measured\n"
    "  --out FILE          records, JSON Lines, appended (default: pacer.jsonl)\n"
    "  --app NAME          \"app\" field of the records (default: PROGRAM's name;\n"
    "                      for a script run by python3 or gjs, the script's)\n"
    "  --app-version V     \"version\" field of the records\n"
    "  --raw-events FILE   also write the raw event stream, for `pacer replay`\n"
    "  --server URL        also send the records to a pacer server (pacerd, or any\n"
    "                      OTLP/HTTP receiver: an OpenTelemetry Collector), e.g.\n"
    "                      http://127.0.0.1:4318; the page config then comes from pacerd\n"
    "  --key-file FILE     the app's ingest key for --server, on the file's first\n"
    "                      line (default: $PACER_KEY). Never on a command line nor in\n"
    "                      the program's environment: it goes through a descriptor\n"
    "                      the measured app closes once read, so its children lack it\n"
    "  --ca FILE           CA certificates (PEM) to verify an https:// server with\n"
    "                      (a self-signed one); default: the system's\n"
    "  --spool FILE        where records wait until delivered\n"
    "                      (default: ~/.local/state/pacer/spool.db)\n"
    "  --otlp-protocol P   protobuf (default) or json\n"
    "  --otlp-compression C  gzip (default) or none\n"
    "  --leaks=MODES       objects of destroyed windows that stay alive are\n"
    "                      reported without this; MODES (comma-separated) adds:\n"
    "                        refs    the stacks of the references that keep them\n"
    "                        native  malloc'd memory nothing points to at exit\n"
    "                                (sampled allocation stacks, a mark phase)\n"
    "                      off turns leak detection off\n"
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

/* Whether the file at `path` can be appended to, creating it if need be; a
 * file created for the check is removed again. On failure says why (exit 2
 * follows), before the program starts. */
static bool appendable(const char *option, const char *path)
{
    struct stat sb;
    bool existed = stat(path, &sb) == 0;
    if (existed && S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "pacer run: %s '%s' is a directory\n", option, path);
        return false;
    }
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "pacer run: cannot write %s '%s': %s\n", option, path, strerror(errno));
        return false;
    }
    close(fd);
    if (!existed)
        unlink(path);
    return true;
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

/* Says when the agent cannot be loaded into `prog` at all, which the agent
 * itself then cannot say: a statically linked executable (no dynamic
 * loader, so no LD_PRELOAD) or a set-user/group-ID one (the loader ignores
 * LD_PRELOAD). The program still runs. */
static void warn_unloadable(const char *prog)
{
    char *file = resolve_program(prog);
    if (!file)
        return; /* execvp reports it */
    struct stat sb;
    if (stat(file, &sb) == 0 && (sb.st_mode & (S_ISUID | S_ISGID)) &&
        (sb.st_uid != geteuid() || sb.st_gid != getegid())) {
        fprintf(stderr, "pacer run: %s is set-user-ID or set-group-ID: the loader ignores LD_PRELOAD, so it is "
                        "not measured\n", prog);
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
        fprintf(stderr, "pacer run: %s is statically linked: the agent cannot be loaded into it, so it is not "
                        "measured\n", prog);
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

/* The key in a sealed memfd the program inherits; its number in
 * PACER_SERVER_KEY_FD. */
static int hand_over_key(const char *key)
{
    int fd = memfd_create("pacer-key", MFD_ALLOW_SEALING); /* no MFD_CLOEXEC: it crosses exec */
    if (fd < 0) {
        fprintf(stderr, "pacer run: cannot hand the key over (memfd_create): %s\n", strerror(errno));
        return -1;
    }
    size_t n = strlen(key);
    if (write(fd, key, n) != (ssize_t)n ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
        fprintf(stderr, "pacer run: cannot hand the key over: %s\n", strerror(errno));
        close(fd);
        return -1;
    }
    char v[16];
    snprintf(v, sizeof v, "%d", fd);
    setenv("PACER_SERVER_KEY_FD", v, 1);
    return 0;
}

/* Checks --leaks: comma-separated refs, native, off. */
static bool leaks_valid(const char *v, bool *ret_native)
{
    *ret_native = false;
    if (!*v)
        return false;
    for (const char *p = v; *p;) {
        size_t k = strcspn(p, ",");
        if (k == 6 && strncmp(p, "native", 6) == 0)
            *ret_native = true;
        else if (!(k == 4 && strncmp(p, "refs", 4) == 0) && !(k == 3 && strncmp(p, "off", 3) == 0))
            return false;
        p += k;
        if (*p == ',' && !*++p)
            return false;
    }
    return true;
}

/* The agent with allocation tracking, beside `agent`. Malloc'd, or NULL. */
static char *heap_agent(const char *agent)
{
    const char *slash = strrchr(agent, '/');
    size_t dir = slash ? (size_t)(slash - agent + 1) : 0;
    size_t n = dir + sizeof(AGENT_HEAP_NAME);
    char *p = malloc(n);
    if (!p)
        return NULL;
    snprintf(p, n, "%.*s%s", (int)dir, agent, AGENT_HEAP_NAME);
    if (!readable(p)) {
        free(p);
        return NULL;
    }
    return p;
}

static int run(int argc, char **argv)
{
    const char *config = NULL, *out = "pacer.jsonl", *app = NULL, *version = NULL, *raw = NULL;
    const char *server = NULL, *key_file = NULL, *ca = NULL, *spool = NULL, *leaks = NULL;
    const char *protocol = NULL, *compression = NULL;
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
    bool native = false;
    if (leaks && !leaks_valid(leaks, &native)) {
        fprintf(stderr, "pacer run: --leaks wants refs, native, off or a comma-separated list of them, not '%s'\n",
                leaks);
        return 2;
    }

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
    if (native) {
        char *heap = heap_agent(agent);
        if (!heap) {
            fprintf(stderr, "pacer run: --leaks=native needs %s next to %s\n", AGENT_HEAP_NAME, agent);
            free(agent);
            return 2;
        }
        free(agent);
        agent = heap;
        setenv("G_SLICE", "always-malloc", 0);
    }
    if (leaks)
        setenv("PACER_LEAKS", leaks, 1);
    else
        unsetenv("PACER_LEAKS");

    if (!appendable("--out", out) || (raw && !appendable("--raw-events", raw)))
        return 2;
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
    /* the key: never in the program's environment */
    unsetenv("PACER_SERVER_KEY");
    unsetenv("PACER_SERVER_KEY_FD");
    int key_error = 0;
    char *key = server ? cli_server_key("run", key_file, &key_error) : NULL;
    unsetenv("PACER_KEY");
    if (key_error)
        return 2;
    int handed = key ? hand_over_key(key) : 0;
    cli_key_free(key);
    if (handed < 0)
        return 2;
    if (server && ca && access(ca, R_OK) != 0) {
        fprintf(stderr, "pacer run: --ca %s: %s\n", ca, strerror(errno));
        return 2;
    }
    if (server && ca && set_path_env("PACER_SERVER_CA", ca) < 0)
        return 2;
    if (!server || !ca)
        unsetenv("PACER_SERVER_CA");
    if (spool && set_path_env("PACER_SPOOL", spool) < 0)
        return 2;
    if (!spool)
        unsetenv("PACER_SPOOL");
    /* without --app the agent names the app: the program, or the script an
     * interpreter runs (python3 app.py: "app") */
    if (app)
        setenv("PACER_APP", app, 1);
    else
        unsetenv("PACER_APP");
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

    char num[32];
    struct stat sb;
    snprintf(num, sizeof(num), "%lld", stat(out, &sb) == 0 ? (long long)sb.st_size : -1LL);
    setenv("PACER_RUN_OUT_SIZE", num, 1);
    snprintf(num, sizeof(num), "%ld", (long)getpid());
    setenv("PACER_RUN_PID", num, 1);
    warn_unloadable(prog[0]);

    char launch[32];
    snprintf(launch, sizeof(launch), "%lld", (long long)pacer_now_ns());
    setenv("PACER_LAUNCH_NS", launch, 1);
    execvp(prog[0], prog);
    int e = errno;
    fprintf(stderr, "pacer run: cannot run '%s': %s\n", prog[0], strerror(e));
    return e == ENOENT ? 127 : 126;
}

const cli_command cmd_run = {"run", "Run a program with the pacer agent preloaded", usage, run};
