/* pacer config check FILE: parses a page config (DESIGN §4) and prints what
 * it understood, so a config can be verified before it is deployed. */
#include "commands.h"

#include <pacer/config.h>

#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: pacer config check FILE\n"
    "\n"
    "Check a page config file and print what pacer understood from it: the\n"
    "pages to measure with their initial APIs, the main page (tag=\"1\"), the\n"
    "splash windows and the thresholds (defaults where the file sets none).\n"
    "\n"
    "Both the bare list of <page> elements and a file with a <pacer> root\n"
    "are accepted.\n"
    "\n"
    "Exit status: 0 when the file is valid; 2 when it is not (the error names\n"
    "FILE:LINE:COLUMN and the problem) or on a usage error.\n";

/* Prints s, with control characters shown as \xNN so an odd id cannot
 * garble the terminal. */
static void print_escaped(const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
}

static void print_config(const char *path, const pacer_config *cfg)
{
    size_t n_pages = pacer_config_page_count(cfg), n_apis = 0;
    for (size_t i = 0; i < n_pages; i++)
        n_apis += pacer_config_page_api_count(cfg, i);
    printf("%s: OK, %zu page%s, %zu API%s\n", path, n_pages, n_pages == 1 ? "" : "s", n_apis, n_apis == 1 ? "" : "s");

    for (size_t i = 0; i < n_pages; i++) {
        fputs("page ", stdout);
        print_escaped(pacer_config_page_id(cfg, i));
        puts(pacer_config_page_is_main(cfg, i) ? " (main)" : "");
        for (size_t j = 0; j < pacer_config_page_api_count(cfg, i); j++) {
            fputs("  api ", stdout);
            print_escaped(pacer_config_page_api(cfg, i, j));
            putchar('\n');
        }
    }
    for (size_t i = 0; i < pacer_config_splash_count(cfg); i++) {
        fputs("splash ", stdout);
        print_escaped(pacer_config_splash(cfg, i));
        putchar('\n');
    }
    for (size_t i = 0; i < pacer_config_in_app_count(cfg); i++) {
        fputs("in-app ", stdout);
        print_escaped(pacer_config_in_app(cfg, i));
        putchar('\n');
    }
    printf("thresholds jank-ms=%u hang-ms=%u page-deadline-ms=%u\n", (unsigned)pacer_config_jank_ms(cfg),
           (unsigned)pacer_config_hang_ms(cfg), (unsigned)pacer_config_page_deadline_ms(cfg));
    printf("leaks leak-grace-ms=%u\n", (unsigned)pacer_config_leak_grace_ms(cfg));
    for (size_t i = 0; i < pacer_config_known_leak_count(cfg); i++) {
        const char *type = pacer_config_known_leak_type(cfg, i);
        const char *page = pacer_config_known_leak_page(cfg, i);
        fputs("known-leak ", stdout);
        print_escaped(pacer_config_known_leak_id(cfg, i));
        fputs(type ? " type " : " function ", stdout);
        print_escaped(type ? type : pacer_config_known_leak_function(cfg, i));
        if (page) {
            fputs(" page ", stdout);
            print_escaped(page);
        }
        putchar('\n');
    }
    printf("upload config-poll-ms=%u spool-max-kb=%u\n", (unsigned)pacer_config_config_poll_ms(cfg),
           (unsigned)pacer_config_spool_max_kb(cfg));
}

/* Prints "pacer config: PROBLEM 'ARG'" (when there is a problem) and the
 * usage to stderr; returns the usage-error exit code. */
static int usage_error(const char *problem, const char *arg)
{
    if (problem)
        fprintf(stderr, arg ? "pacer config: %s '%s'\n\n" : "pacer config: %s\n\n", problem, arg);
    fputs(usage_text, stderr);
    return 2;
}

static int check(int argc, char **argv)
{
    /* argv[0] is "check". A "--" lets FILE start with a dash. */
    int i = 1;
    if (i < argc && strcmp(argv[i], "--") == 0)
        i++;
    else if (i < argc && argv[i][0] == '-' && argv[i][1] != '\0')
        return usage_error("unknown option", argv[i]);
    if (i >= argc)
        return usage_error("check needs a FILE", NULL);
    if (i + 1 < argc)
        return usage_error("unexpected argument", argv[i + 1]);

    const char *path = argv[i];
    char *error = NULL;
    pacer_config *cfg = pacer_config_load(path, &error);
    if (!cfg) {
        fprintf(stderr, "pacer config check: %s\n", error ? error : "out of memory");
        free(error);
        return 2;
    }
    print_config(path, cfg);
    pacer_config_unref(cfg);
    if (fflush(stdout) != 0) {
        perror("pacer config check: writing output");
        return 2;
    }
    return 0;
}

static int run(int argc, char **argv)
{
    if (argc < 2)
        return usage_error(NULL, NULL);
    if (strcmp(argv[1], "check") == 0)
        return check(argc - 1, argv + 1);
    return usage_error("unknown subcommand", argv[1]);
}

const cli_command cmd_config = {
    .name = "config",
    .summary = "Check a page config file",
    .usage = usage_text,
    .run = run,
};
