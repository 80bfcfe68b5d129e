/* pacerd's options: one table (options.c), each entry an option's long
 * name, its argument's name, its help text, its default and whether a
 * reload applies it, from which `pacerd --help` is written
 * (options_usage), the command line and the config file are read
 * (options_parse, options_reload) and the manual pages pacerd(8) and
 * pacerd.conf(5) and the default pacerd.conf are made (pacerd-man).
 *
 * The config file (--config FILE, pacerd.conf(5)): one "NAME = VALUE" per
 * line, NAME an option's long name without "--"; blank lines and lines
 * whose first non-blank character is '#' are skipped; spaces around NAME
 * and VALUE do not count; a relative FILE or DIR is relative to the
 * file's folder. Each option at most once (webhook may repeat). The
 * command line overrides the file: an option given there replaces the
 * file's value (webhooks given there replace the file's list). */
#ifndef PACER_SERVER_OPTIONS_H
#define PACER_SERVER_OPTIONS_H

#include "http/http.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define OPTIONS_MAX_WEBHOOKS 15

/* An address to serve on: --listen's, --grpc-listen's. */
typedef struct listen_at {
    const char *text; /* as given; NULL when not given */
    char addr[64];
    uint16_t port;
} listen_at;

/* What the options say, once read and checked. */
typedef struct options {
    listen_at listen, grpc_listen;
    const char *db, *state, *admin_file, *keys_file, *tls_cert, *tls_key, *web_root, *clickhouse,
        *clickhouse_file;
    const char *analysis_config, *github_url, *github_token_file;
    const char *config; /* --config FILE, or NULL */
    int log_level;      /* enum logger_level */
    const char *webhooks[OPTIONS_MAX_WEBHOOKS];
    size_t n_webhooks;
    size_t max_body;
    size_t grpc_max_message;
    unsigned grpc_max_streams;
    unsigned drain_timeout_s;
    bool threads_given;
    http_options http;
    store_options store;
    /* what the values above may point into besides argv: the config
     * file's text and paths made absolute (options_free frees them) */
    char **owned;
    size_t n_owned;
} options;

/* How an option's value is read into its place in `options`. */
enum option_type {
    OPT_TEXT,   /* const char *, as given */
    OPT_LISTEN, /* ADDR:PORT into a listen_at */
    OPT_URL,    /* const char *: http:// or https://, a host */
    OPT_URLS,   /* a list (webhooks, n_webhooks): the option may be given again */
    OPT_SIZE,   /* size_t in [min, max] */
    OPT_UINT,   /* unsigned in [min, max] */
    OPT_SYNC,   /* normal|full into store.sync_full */
    OPT_LEVEL,  /* error|warning|info|debug into log_level */
    OPT_CONFIG, /* const char *: the config file (command line only) */
    OPT_HELP,   /* no value: prints the help, exits 0 (command line only) */
};

typedef struct option_def {
    const char *name;  /* the long name, without "--" */
    const char *arg;   /* the value's name in the help (FILE, N, …); NULL: takes none */
    const char *help;  /* what it does (one paragraph; the help wraps it) */
    const char *def;   /* the default: the value taken when the option is not given (NULL: none), */
    bool computed;     /*   or, when computed, what it is (options_parse computes it) */
    const char *group; /* the heading of a group that starts here ("": a blank line), or NULL */
    enum option_type type;
    size_t offset;     /* where in struct options */
    size_t min, max;   /* OPT_SIZE, OPT_UINT */
    const char *unit;  /* their unit in errors: " bytes", " s", … */
    bool reload;       /* SIGHUP applies a new value from the config file (else: at the next start) */
} option_def;

/* The table, ended by an entry without a name. */
extern const option_def options_table[];

/* The usage lines, one per line, without "usage: ". */
extern const char options_synopsis[];

/* d's help text as --help gives it: with its default. */
void options_help(const option_def *d, char *out, size_t size);

/* `pacerd --help`: the usage lines, then each option with its help and
 * default, grouped. */
void options_usage(FILE *f);

/* Reads value (NULL for an option that takes none) as option d says into
 * o: 0, or -EINVAL with "--NAME VALUE: why" in err. */
int options_set(options *o, const option_def *d, const char *value, char *err, size_t err_size);

/* The command line into o: the defaults, the config file when --config
 * is given, each option of the command line, then the checks across
 * options. 0; 1 when --help was given (the help printed); -EINVAL with
 * the reason ("FILE:LINE: why" for the file's lines) on stderr. o holds
 * what options_free frees, whatever the outcome. */
int options_parse(int argc, char **argv, options *o);

/* The same, again (SIGHUP): the file as it is now, then the same command
 * line; nothing printed. 0, or -EINVAL with the reason in err. */
int options_reload(int argc, char **argv, options *o, char *err, size_t err_size);

/* Reads the config file path into o, over what o holds (options_reload's
 * and options_parse's step): 0, or -EINVAL with "FILE:LINE: why" (or
 * "FILE: why") in err. */
int options_read_file(options *o, const char *path, char *err, size_t err_size);

/* The same from the text of such a file (len bytes; path names it in
 * messages and gives the folder of relative paths). For the fuzzer too. */
int options_read_text(options *o, const char *path, const char *text, size_t len, char *err, size_t err_size);

/* Whether option d has the same value in a and b. */
bool options_same(const options *a, const options *b, const option_def *d);

/* Frees what o owns (not o). */
void options_free(options *o);

#endif
