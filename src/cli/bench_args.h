/* pacer bench: the option values that need parsing.
 *
 *   --vs 'OTHER PROGRAM ARGS'   a command line, split as a POSIX shell
 *                               splits words: blanks separate them; '…'
 *                               keeps everything literally; "…" keeps all
 *                               but \" \\ \$ \` (backslash-escaped); a
 *                               backslash outside quotes escapes the next
 *                               character. No expansion of any kind ($, *,
 *                               ~): what is written is what runs.
 *   --until COND                when a run has given what it is run for:
 *                               main | exit | PAGE | PAGE:N | METRIC
 *                               (METRIC: a start-up metric such as
 *                               full_display_ms, or PAGE.FIELD)
 */
#ifndef PACER_CLI_BENCH_ARGS_H
#define PACER_CLI_BENCH_ARGS_H

#include <stdbool.h>
#include <stddef.h>

/* Splits s into a NULL-terminated argv (each word and the array malloc'd;
 * free with bench_argv_free). Returns the word count, or -EINVAL with a
 * reason in err (an unclosed quote, nothing to run, over 4096 words), or
 * -ENOMEM. */
int bench_split_command(const char *s, char ***ret_argv, char *err, size_t err_len);
void bench_argv_free(char **argv);

typedef enum bench_until_kind {
    BENCH_UNTIL_MAIN,   /* the main page's record (written at its final draw) */
    BENCH_UNTIL_EXIT,   /* the program exits by itself */
    BENCH_UNTIL_PAGE,   /* `count` records of page class `page` */
    BENCH_UNTIL_METRIC, /* a record carrying `field` (of page class `page`, or a start-up field) */
} bench_until_kind;

typedef struct bench_until {
    bench_until_kind kind;
    char *page;     /* PAGE, METRIC of a page: malloc'd; else NULL */
    unsigned count; /* PAGE: records needed (≥ 1) */
    bool startup;   /* METRIC: a start-up field (else a page field) */
    unsigned field; /* METRIC: the field's index in its record type */
} bench_until;

/* Parses one condition into *ret (ret->page to free). 0, or -EINVAL with a
 * reason in err, or -ENOMEM. */
int bench_parse_until(const char *s, bench_until *ret, char *err, size_t err_len);

#endif
