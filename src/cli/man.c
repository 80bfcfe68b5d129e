/* pacer-man: writes pacer's manual pages from the command table (table.c),
 * out of the text `pacer --help` and `pacer CMD --help` print, so that the
 * pages say what the help says. Run by the build (src/cli/meson.build):
 *
 *   pacer-man VERSION DOCDIR PAGE...
 *
 * Each PAGE is a path ending in pacer.1 or pacer-CMD.1. The pages named
 * must be the table's, no more and no fewer: a command added to the table
 * without its page in the build (or the reverse) fails the build.
 *
 * The words are the help's own (tests/cli/test_man.py renders the pages and
 * compares them with the help): the "usage:" lines become the SYNOPSIS, the
 * rest the DESCRIPTION, where lines at the left margin are running text, a
 * line alone ending in ':' is a subsection, and an indented "TERM  text"
 * line is a tagged paragraph (an option, a subcommand) whose text goes on
 * in the lines indented as far as it (a term of up to 16 columns keeps its
 * column; a longer one is above its text); lines indented further under a
 * tag are a list of their own. Any other indented line is shown as it is. */
#include "commands.h"

#include <pacer/base/roff.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct line {
    const char *s; /* past the indentation */
    size_t len;    /* 0: a blank line */
    size_t indent;
} line;

/* Splits text into lines; *ret_n gets their count. Never NULL. */
static line *split_lines(const char *text, size_t *ret_n)
{
    size_t cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == '\n';
    line *lines = calloc(cap, sizeof(*lines));
    if (!lines) {
        perror("pacer-man");
        exit(1);
    }
    size_t n = 0;
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, '\n');
        if (!end)
            end = p + strlen(p);
        const char *s = p;
        while (s < end && *s == ' ')
            s++;
        const char *e = end;
        while (e > s && e[-1] == ' ')
            e--;
        lines[n++] = (line){.s = s, .len = (size_t)(e - s), .indent = (size_t)(s - p)};
        p = *end ? end + 1 : end;
    }
    *ret_n = n;
    return lines;
}

static void put_line(FILE *out, const char *s, size_t n)
{
    roff_text(out, s, n, true);
    fputc('\n', out);
}

/* A metavariable: FILE, URL, ADDR:PORT, [ARGS...], text|json in capitals. */
static bool is_metavar(const char *s, size_t n)
{
    bool upper = false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] >= 'a' && s[i] <= 'z')
            return false;
        upper |= s[i] >= 'A' && s[i] <= 'Z';
    }
    return upper;
}

/* A tag: options and literal words bold, metavariables italic
 * (--leaks=MODES: "--leaks=" bold, "MODES" italic). */
static void put_term(FILE *out, const char *s, size_t n)
{
    size_t i = 0;
    bool first = true;
    while (i < n) {
        size_t j = i;
        while (j < n && s[j] != ' ')
            j++;
        if (!first)
            fputc(' ', out);
        const char *eq = s[i] == '-' ? memchr(s + i, '=', j - i) : NULL;
        if (eq) {
            size_t k = (size_t)(eq - s) + 1;
            fputs("\\fB", out);
            roff_text(out, s + i, k - i, first);
            fputs("\\fI", out);
            roff_text(out, s + k, j - k, false);
        } else {
            fputs(is_metavar(s + i, j - i) ? "\\fI" : "\\fB", out);
            roff_text(out, s + i, j - i, first);
        }
        fputs("\\fR", out);
        first = false;
        i = j;
        while (i < n && s[i] == ' ')
            i++;
    }
    fputc('\n', out);
}

/* Where a "TERM  text" line's text starts (two spaces or more after the
 * term), as an offset into l->s; 0 when the line has no such gap. */
static size_t text_offset(const line *l)
{
    for (size_t i = 1; i + 1 < l->len; i++) {
        if (l->s[i] == ' ' && l->s[i + 1] == ' ') {
            size_t j = i;
            while (j < l->len && l->s[j] == ' ')
                j++;
            return j;
        }
    }
    return 0;
}

/* Lines [a, b), all indented and none blank: tagged paragraphs, and as
 * they are the lines that are not. */
static void put_region(FILE *out, const line *lines, size_t a, size_t b)
{
    size_t i = a;
    while (i < b) {
        const line *l = &lines[i];
        size_t off = text_offset(l);
        size_t col;
        if (off)
            col = l->indent + off;
        else if (i + 1 < b && lines[i + 1].indent > l->indent)
            col = lines[i + 1].indent;
        else {
            fputs(".RS\n.nf\n", out);
            put_line(out, l->s, l->len);
            fputs(".fi\n.RE\n", out);
            i++;
            continue;
        }
        /* A short term keeps the help's column (subcommands, flags); a
         * longer one goes on a line of its own above its text. */
        if (col - l->indent <= 16)
            fprintf(out, ".TP %zun\n", col - l->indent);
        else
            fputs(".TP\n", out);
        if (off) {
            size_t term = off;
            while (term > 0 && l->s[term - 1] == ' ')
                term--;
            put_term(out, l->s, term);
            put_line(out, l->s + off, l->len - off);
        } else {
            put_term(out, l->s, l->len);
        }
        i++;
        bool after_list = false;
        while (i < b && lines[i].indent >= col) {
            if (lines[i].indent == col) {
                if (after_list)
                    fputs(".IP\n", out);
                after_list = false;
                put_line(out, lines[i].s, lines[i].len);
                i++;
                continue;
            }
            size_t j = i;
            while (j < b && lines[j].indent > col)
                j++;
            fputs(".RS\n", out);
            put_region(out, lines, i, j);
            fputs(".RE\n", out);
            after_list = true;
            i = j;
        }
    }
}

/* The page of `name` from its help text. */
static void put_page(FILE *out, const char *name, const char *summary, const char *help, const char *version,
                     const char *docdir)
{
    char title[64];
    size_t k = 0;
    for (; name[k] && k < sizeof(title) - 1; k++)
        title[k] = name[k] >= 'a' && name[k] <= 'z' ? (char)(name[k] - 'a' + 'A') : name[k];
    title[k] = '\0';
    fputs(".TH ", out);
    roff_text(out, title, strlen(title), false);
    fprintf(out, " 1 \"\" \"pacer %s\" \"pacer manual\"\n", version);
    fputs(".nh\n.ad l\n.SH NAME\n", out);
    roff_text(out, name, strlen(name), true);
    fputs(" \\- ", out);
    size_t slen = strlen(summary);
    if (slen && summary[slen - 1] == '.')
        slen--;
    put_line(out, summary, slen);

    size_t n;
    line *lines = split_lines(help, &n);
    size_t i = 0;
    while (i < n && lines[i].len == 0)
        i++;
    static const char usage[] = "usage: ";
    if (i < n && lines[i].indent == 0 && strncmp(lines[i].s, usage, strlen(usage)) == 0) {
        fputs(".SH SYNOPSIS\n.nf\n", out);
        for (; i < n && lines[i].len; i++) {
            const line *l = &lines[i];
            if (l->indent == 0 && strncmp(l->s, usage, strlen(usage)) == 0)
                put_line(out, l->s + strlen(usage), l->len - strlen(usage));
            else {
                size_t keep = l->indent > strlen(usage) ? l->indent - strlen(usage) : 0;
                for (size_t s = 0; s < keep; s++)
                    fputc(' ', out);
                put_line(out, l->s, l->len);
            }
        }
        fputs(".fi\n", out);
    }
    fputs(".SH DESCRIPTION\n", out);
    while (i < n) {
        if (lines[i].len == 0) {
            i++;
            continue;
        }
        size_t j = i;
        if (lines[i].indent == 0) {
            while (j < n && lines[j].len && lines[j].indent == 0)
                j++;
            const line *l = &lines[i];
            if (j == i + 1 && l->len <= 40 && l->s[l->len - 1] == ':' && j < n && lines[j].len &&
                lines[j].indent > 0) {
                fputs(".SS \"", out);
                roff_text(out, l->s, l->len, false);
                fputs("\"\n", out);
            } else {
                fputs(".PP\n", out);
                for (size_t k2 = i; k2 < j; k2++)
                    put_line(out, lines[k2].s, lines[k2].len);
            }
        } else {
            while (j < n && lines[j].len && lines[j].indent > 0)
                j++;
            put_region(out, lines, i, j);
        }
        i = j;
    }
    free(lines);

    fputs(".SH SEE ALSO\n", out);
    if (strcmp(name, "pacer") == 0) {
        for (size_t c = 0; c < cli_n_commands; c++) {
            fputs(".BR pacer\\-", out);
            roff_text(out, cli_commands[c]->name, strlen(cli_commands[c]->name), false);
            fputs(c + 1 < cli_n_commands ? " (1),\n" : " (1)\n", out);
        }
    } else {
        fputs(".BR pacer (1)\n", out);
    }
    fputs(".PP\nrecords.md (the records), events.md (the events), agent.md (what pacer run measures) and "
          "trace.md (pacer trace), in ", out);
    roff_text(out, docdir, strlen(docdir), false);
    fputs(".\n", out);
}

/* The command of page path ".../pacer-CMD.1", NULL for pacer.1; exits on a
 * name that is neither. */
static const cli_command *page_command(const char *path, bool *ret_main)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    *ret_main = strcmp(base, "pacer.1") == 0;
    if (*ret_main)
        return NULL;
    size_t len = strlen(base);
    if (strncmp(base, "pacer-", 6) == 0 && len > 8 && strcmp(base + len - 2, ".1") == 0) {
        for (size_t c = 0; c < cli_n_commands; c++) {
            const char *name = cli_commands[c]->name;
            if (strlen(name) == len - 8 && strncmp(base + 6, name, len - 8) == 0)
                return cli_commands[c];
        }
    }
    fprintf(stderr, "pacer-man: %s: not a page of the command table (pacer.1 or pacer-CMD.1 of: ", path);
    for (size_t c = 0; c < cli_n_commands; c++)
        fprintf(stderr, "%s%s", c ? ", " : "", cli_commands[c]->name);
    fputs(")\n", stderr);
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fputs("usage: pacer-man VERSION DOCDIR PAGE...\n", stderr);
        return 2;
    }
    const char *version = argv[1], *docdir = argv[2];
    bool seen_main = false;
    bool *seen = calloc(cli_n_commands, sizeof(*seen));
    if (!seen) {
        perror("pacer-man");
        return 1;
    }
    for (int a = 3; a < argc; a++) {
        bool is_main;
        const cli_command *cmd = page_command(argv[a], &is_main);
        FILE *out = fopen(argv[a], "w");
        if (!out) {
            perror(argv[a]);
            return 1;
        }
        if (is_main) {
            char *help = NULL;
            size_t help_len = 0;
            FILE *mem = open_memstream(&help, &help_len);
            if (!mem) {
                perror("pacer-man");
                return 1;
            }
            cli_main_usage(mem);
            fclose(mem);
            put_page(out, "pacer", cli_summary, help, version, docdir);
            free(help);
            seen_main = true;
        } else {
            char name[64];
            snprintf(name, sizeof(name), "pacer-%s", cmd->name);
            put_page(out, name, cmd->summary, cmd->usage, version, docdir);
            for (size_t c = 0; c < cli_n_commands; c++)
                if (cli_commands[c] == cmd)
                    seen[c] = true;
        }
        if (fclose(out) != 0) {
            perror(argv[a]);
            return 1;
        }
    }
    int missing = 0;
    if (!seen_main) {
        fputs("pacer-man: pacer.1 is not among the pages to write\n", stderr);
        missing++;
    }
    for (size_t c = 0; c < cli_n_commands; c++) {
        if (!seen[c]) {
            fprintf(stderr, "pacer-man: the command table has '%s' but pacer-%s.1 is not among the pages to write "
                            "(src/cli/meson.build)\n", cli_commands[c]->name, cli_commands[c]->name);
            missing++;
        }
    }
    free(seen);
    return missing ? 1 : 0;
}
