/* pacerd-man: writes pacerd's manual pages and its default config file
 * from the options table (options.c), so that they say what
 * `pacerd --help` says. Run by the build (src/server/meson.build):
 *
 *   pacerd-man VERSION SYSCONFDIR pacerd.8 pacerd.conf.5 pacerd.conf
 *
 * pacerd(8): the usage lines are the SYNOPSIS, each option of the table
 * with its help text (its default included, as in --help) is a tagged
 * paragraph of OPTIONS, under its group's heading; then what a reload
 * applies, the signals, the files. pacerd.conf(5): the file's format, each
 * option the file takes as "NAME = ARG" with the same text, what a reload
 * applies. pacerd.conf: the file the service starts with (SYSCONFDIR/pacer):
 * each option with its help as a comment, those the service sets as
 * settings, the others commented out with their default.
 * tests/server/test_pacerd_man.py renders the pages and compares them
 * with the help. */
#include "options.h"

#include <pacer/base/roff.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Text as roff, starting a line (roff_text). */
static void put(FILE *out, const char *s)
{
    roff_text(out, s, strlen(s), true);
}

static FILE *open_out(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    return f;
}

static void close_out(FILE *f, const char *path)
{
    if (ferror(f) || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static bool in_file(const option_def *d)
{
    return d->type != OPT_HELP && d->type != OPT_CONFIG;
}

static void header(FILE *f, const char *title, int section, const char *version, const char *name,
                   const char *summary)
{
    fprintf(f, ".TH %s %d \"\" \"pacer %s\" \"%s\"\n.nh\n.ad l\n.SH NAME\n", title, section, version,
            section == 8 ? "System Administration" : "File Formats");
    put(f, name);
    fputs(" \\- ", f);
    put(f, summary);
    fputs("\n", f);
}

/* The options a reload applies, as a sentence's list: "--a, --b and --c". */
static void reloaded(FILE *f, bool dashes)
{
    size_t n = 0, i = 0;
    for (const option_def *d = options_table; d->name; d++)
        n += d->reload;
    for (const option_def *d = options_table; d->name; d++) {
        if (!d->reload)
            continue;
        i++;
        fprintf(f, "%s\\fB%s", i == 1 ? "" : i == n ? " and " : ", ", dashes ? "\\-\\-" : "");
        put(f, d->name);
        fputs("\\fR", f);
    }
}

static void pacerd_8(const char *path, const char *version, const char *conf)
{
    FILE *f = open_out(path);
    header(f, "PACERD", 8, version, "pacerd", "pacer's server: OTLP ingest, storage, issues and web dashboard");
    fputs(".SH SYNOPSIS\n.nf\n", f);
    put(f, options_synopsis);
    fputs(".fi\n.SH DESCRIPTION\n", f);
    put(f, "pacerd receives what pacer(1) and any OpenTelemetry SDK or Collector upload over OTLP/HTTP, keeps it "
           "in SQLite or ClickHouse, answers percentiles per page, start-up and request, turns what it stored into "
           "issues followed across versions, and serves a web dashboard. It prints \"pacerd: listening on URL\" on "
           "stdout once it listens, and tells a service manager so (READY=1 on $NOTIFY_SOCKET, systemd's "
           "Type=notify).\n");
    fputs(".PP\nThe options may come from a config file, ", f);
    put(f, conf);
    fputs(" for the service (\\fB\\-\\-config\\fR, \\fBpacerd.conf\\fR(5)); an option also given on the command "
          "line takes the command line's value.\n",
          f);
    fputs(".SH OPTIONS\n", f);
    for (const option_def *d = options_table; d->name; d++) {
        if (d->group && *d->group) {
            fputs(".SS ", f);
            put(f, d->group);
            fputs("\n", f);
        }
        fputs(".TP\n.B \\-\\-", f);
        put(f, d->name);
        if (d->arg) {
            fputs(" \\fI", f);
            put(f, d->arg);
            fputs("\\fR", f);
        }
        fputs("\n", f);
        char text[1024];
        options_help(d, text, sizeof text);
        put(f, text);
        fputs("\n", f);
    }
    fputs(".SH RELOAD\nSIGHUP (\\fBsystemctl reload pacerd\\fR) reads the config file again and applies ", f);
    reloaded(f, true);
    fputs(", then reads the admin token and keys files again. A change to any other option is logged as waiting "
          "for a restart, and its running value stays. A file with an error is logged (\\fIFILE\\fR:\\fILINE\\fR: "
          "why) and every setting in use stays.\n",
          f);
    fputs(".SH SIGNALS\n.TP\n.B SIGHUP\nreload (above).\n.TP\n.B SIGTERM\\fR, \\fBSIGINT\n"
          "drain: stop accepting, answer new requests on open connections 503, wait for the requests in flight "
          "(at most \\fB\\-\\-drain\\-timeout\\fR), then stop.\n",
          f);
    fputs(".SH EXIT STATUS\n0 after SIGTERM or SIGINT, or \\fB\\-\\-help\\fR; 1 when it cannot start (a file, the "
          "store, the address); 2 for a bad option or config file line.\n",
          f);
    fputs(".SH FILES\n.TP\n.I ", f);
    put(f, conf);
    fputs("\nthe service's options (\\fBpacerd.conf\\fR(5)); beside it \\fIadmin\\-token\\fR and \\fIkeys\\fR, "
          "the credentials it names.\n.TP\n.I /var/lib/pacerd/pacer.db\nthe service's database.\n",
          f);
    fputs(".SH SEE ALSO\n.BR pacerd.conf (5),\n.BR pacer (1),\n.BR systemctl (1),\n.BR journalctl (1);\n"
          "/usr/share/doc/pacerd/server.md\n",
          f);
    close_out(f, path);
}

static void pacerd_conf_5(const char *path, const char *version, const char *conf)
{
    FILE *f = open_out(path);
    header(f, "PACERD.CONF", 5, version, "pacerd.conf", "pacerd's config file");
    fputs(".SH SYNOPSIS\n", f);
    put(f, conf);
    fputs("\n.PP\n\\fBpacerd \\-\\-config\\fR \\fIFILE\\fR [\\fIoptions\\fR]\n", f);
    fputs(".SH DESCRIPTION\n", f);
    put(f, "pacerd reads its options from the file --config names: the service, pacerd.service, names ");
    put(f, conf);
    put(f, ". The file holds any option of pacerd's command line but --config and --help, one per line:\n");
    fputs(".PP\n.RS\n\\fINAME\\fR = \\fIVALUE\\fR\n.RE\n.PP\n", f);
    put(f, "NAME is the option's long name without its dashes; spaces and tabs around NAME and VALUE do not "
           "count, and VALUE runs to the end of the line (no quotes, no comment after it). Blank lines and lines "
           "whose first other character is # are skipped. Each option at most once, but webhook, which may be "
           "given up to 15 times. A relative FILE or DIR is relative to the file's folder: the admin token and "
           "keys files may lie beside it. An option given on the command line takes the command line's value "
           "(webhooks given there replace the file's).\n");
    fputs(".PP\n", f);
    put(f, "A line pacerd cannot read stops it at start, with the reason on stderr as FILE:LINE: why (exit "
           "status 2); on a reload the same message is logged, and every setting in use stays.\n");
    fputs(".SH OPTIONS\n", f);
    for (const option_def *d = options_table; d->name; d++) {
        if (!in_file(d))
            continue;
        if (d->group && *d->group) {
            fputs(".SS ", f);
            put(f, d->group);
            fputs("\n", f);
        }
        fputs(".TP\n.B ", f);
        put(f, d->name);
        fputs(" = \\fI", f);
        put(f, d->arg);
        fputs("\\fR\n", f);
        char text[1024];
        options_help(d, text, sizeof text);
        put(f, text);
        fputs(d->reload ? " [reload]\n" : "\n", f);
    }
    fputs(".SH RELOAD\n\\fBsystemctl reload pacerd\\fR (SIGHUP) reads the file again. It applies the options "
          "marked [reload] above, ",
          f);
    reloaded(f, false);
    fputs(", and reads the admin token and keys files again (new keys, limits and quotas apply to the next "
          "request). Any other option changed is logged as needing a restart (\\fBsystemctl restart pacerd\\fR) "
          "and keeps its running value until then.\n",
          f);
    fputs(".SH EXAMPLE\n.nf\n", f);
    put(f, "# a SQLite database, TLS, 90 days of records\n"
           "listen = 0.0.0.0:4318\n"
           "db = /var/lib/pacerd/pacer.db\n"
           "admin-token-file = admin-token\n"
           "keys-file = keys\n"
           "tls-cert = cert.pem\n"
           "tls-key = key.pem\n"
           "retention-days = 90\n");
    fputs(".fi\n.SH SEE ALSO\n.BR pacerd (8),\n.BR pacer (1);\n/usr/share/doc/pacerd/server.md\n", f);
    close_out(f, path);
}

/* text as comment lines of at most 78 columns */
static void comment(FILE *f, const char *text)
{
    size_t col = 0;
    for (const char *p = text; *p;) {
        size_t word = strcspn(p, " ");
        if (col && col + 1 + word > 78) {
            fputs("\n", f);
            col = 0;
        }
        if (!col) {
            fputs("#", f);
            col = 1;
        }
        fprintf(f, " %.*s", (int)word, p);
        col += 1 + word;
        p += word;
        while (*p == ' ')
            p++;
    }
    fputs("\n", f);
}

static void pacerd_conf(const char *path, const char *sysconfdir)
{
    char admin[1024], keys[1024];
    snprintf(admin, sizeof admin, "%s/pacer/admin-token", sysconfdir);
    snprintf(keys, sizeof keys, "%s/pacer/keys", sysconfdir);
    /* what the service sets */
    const struct {
        const char *name, *value;
    } set[] = {
        {"listen", "127.0.0.1:4318"},
        {"db", "/var/lib/pacerd/pacer.db"},
        {"admin-token-file", admin},
        {"keys-file", keys},
    };
    FILE *f = open_out(path);
    fputs("# pacerd's settings (man 5 pacerd.conf): one \"NAME = VALUE\" per line, NAME\n"
          "# an option of pacerd(8) without its dashes. A line starting with # is a\n"
          "# comment: the commented settings below show their defaults. A relative path\n"
          "# is relative to this file's folder; the command line overrides this file.\n"
          "#\n"
          "# After a change: systemctl reload pacerd. It applies the settings marked\n"
          "# [reload] and reads the admin token and keys files again; the others wait\n"
          "# for systemctl restart pacerd (the journal says which: journalctl -u pacerd).\n"
          "# A file pacerd reads must be readable by the group pacerd.\n",
          f);
    for (const option_def *d = options_table; d->name; d++) {
        if (!in_file(d))
            continue;
        if (d->group && *d->group) {
            fputs("\n#\n", f);
            comment(f, d->group);
            fputs("#\n", f);
        }
        char text[1200];
        options_help(d, text, sizeof text);
        if (d->reload)
            strncat(text, " [reload]", sizeof text - strlen(text) - 1);
        fputs("\n", f);
        comment(f, text);
        const char *value = NULL;
        for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
            if (strcmp(set[i].name, d->name) == 0)
                value = set[i].value;
        if (value)
            fprintf(f, "%s = %s\n", d->name, value);
        else
            fprintf(f, "#%s = %s\n", d->name, d->def && !d->computed ? d->def : d->arg);
    }
    close_out(f, path);
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: pacerd-man VERSION SYSCONFDIR pacerd.8 pacerd.conf.5 pacerd.conf\n");
        return 2;
    }
    char conf[1024];
    snprintf(conf, sizeof conf, "%s/pacer/pacerd.conf", argv[2]);
    pacerd_8(argv[3], argv[1], conf);
    pacerd_conf_5(argv[4], argv[1], conf);
    pacerd_conf(argv[5], argv[2]);
    return 0;
}
