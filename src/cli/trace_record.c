/* pacer trace record: runs a program with the trace runtime switched on.
 *
 * The runtime is told where to write through PACER_TRACE_DIR (an absolute
 * path: the program may chdir). A program linked with -lpacer-trace has it
 * already; for one that was only compiled with -finstrument-functions we add
 * the runtime to LD_PRELOAD: PACER_TRACE_LIB, else the library next to this
 * executable (build tree: ../trace/, installed: ../lib[/MULTIARCH]/). */
#include "trace_cli.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Finds the preloadable runtime; NULL when there is none. The result may
 * live in a static buffer. */
static const char *find_runtime(void)
{
    static char found[PATH_MAX];
    const char *env = getenv("PACER_TRACE_LIB");
    if (env && *env)
        return env;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    static const char *const rel[] = {
        "../trace/libpacer-trace.so",
        "../lib/libpacer-trace.so.0",
#ifdef __x86_64__
        "../lib/x86_64-linux-gnu/libpacer-trace.so.0",
#endif
#ifdef __aarch64__
        "../lib/aarch64-linux-gnu/libpacer-trace.so.0",
#endif
        "../lib64/libpacer-trace.so.0",
    };
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char cand[PATH_MAX + 64];
        snprintf(cand, sizeof cand, "%s/%s", exe, rel[i]);
        if (is_file(cand) && realpath(cand, found))
            return found;
    }
    return NULL;
}

/* Creates DIR, or empties the trace files of an earlier recording in it. */
static int prepare_dir(const char *dir)
{
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return -errno;
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if ((l > 7 && strcmp(de->d_name + l - 7, ".ptrace") == 0) || (l > 5 && strcmp(de->d_name + l - 5, ".maps") == 0) ||
            strcmp(de->d_name, "options") == 0) {
            char p[PATH_MAX];
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            unlink(p);
        }
    }
    closedir(d);
    return 0;
}

static const char usage_text[] =
    "usage: pacer trace record [-o DIR] [--filter PATTERN] [--max-depth N] [--min-ns N] -- PROGRAM [ARGS...]\n";

int trace_record_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"filter", required_argument, NULL, TRACE_OPT_FILTER},
        {"max-depth", required_argument, NULL, TRACE_OPT_MAX_DEPTH},
        {"min-ns", required_argument, NULL, TRACE_OPT_MIN_NS},
        {NULL, 0, NULL, 0},
    };
    const char *dir = "pacer.trace";
    pt_tree_options topt = {0};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+o:", opts, NULL)) != -1) {
        if (c == 'o')
            dir = optarg;
        else if (c == '?' || trace_parse_filter_option(c, optarg, &topt) < 0) {
            fputs(usage_text, stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "pacer trace record: no program given\n%s", usage_text);
        return 2;
    }
    int rc = prepare_dir(dir);
    char absdir[PATH_MAX];
    if (rc < 0 || !realpath(dir, absdir)) {
        fprintf(stderr, "pacer trace record: cannot use %s as the trace directory: %s\n", dir,
                strerror(rc < 0 ? -rc : errno));
        return 2;
    }
    if ((rc = trace_save_recorded_options(absdir, &topt)) < 0) {
        fprintf(stderr, "pacer trace record: cannot write %s/options: %s\n", absdir, strerror(-rc));
        return 2;
    }

    const char *lib = find_runtime();
    if (!lib)
        fprintf(stderr, "pacer trace record: libpacer-trace.so not found next to pacer (set PACER_TRACE_LIB);\n"
                        "  only a program linked with -lpacer-trace will be traced\n");

    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "pacer trace record: fork: %s\n", strerror(errno));
        return 2;
    }
    if (pid == 0) {
        setenv("PACER_TRACE_DIR", absdir, 1);
        if (lib) {
            const char *old = getenv("LD_PRELOAD");
            char *pre;
            if (old && *old && asprintf(&pre, "%s:%s", lib, old) > 0)
                setenv("LD_PRELOAD", pre, 1);
            else
                setenv("LD_PRELOAD", lib, 1);
        }
        execvp(argv[optind], argv + optind);
        fprintf(stderr, "pacer trace record: cannot run %s: %s\n", argv[optind], strerror(errno));
        _exit(127);
    }
    /* The terminal's ^C reaches the program too; we wait for it to finish
     * writing rather than die first. */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "pacer trace record: waitpid: %s\n", strerror(errno));
            return 2;
        }
    }
    char **list;
    char err[512];
    int n = pt_recording_list(absdir, &list, err, sizeof err);
    if (n > 0) {
        fprintf(stderr, "pacer: trace of %d process%s written to %s; read it with 'pacer trace report %s'\n", n,
                n == 1 ? "" : "es", dir, dir);
        pt_recording_list_free(list);
    } else {
        fprintf(stderr, "pacer: no trace was written: was %s built with -finstrument-functions and "
                        "able to load libpacer-trace?\n", argv[optind]);
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "pacer: %s was killed by signal %d (%s)\n", argv[optind], WTERMSIG(status),
                strsignal(WTERMSIG(status)));
        return 128 + WTERMSIG(status);
    }
    return 2;
}
