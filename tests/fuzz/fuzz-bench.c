/* libFuzzer target for pacer bench's readers (src/cli/bench_samples.c,
 * src/cli/bench_args.c): the samples file of --save / --baseline, pacerd's
 * answer to /api/v1/samples, the --vs command line and --until.
 *
 * The first byte picks the reader, the rest is its input. Properties: a
 * samples file that reads formats to a file that reads again and formats
 * to the very same bytes; pacerd's samples read into a set that formats
 * to a file that reads; every failure gives a one-line reason; a split
 * command holds at least one word and every word is at most as long as
 * the input. The input is copied into a heap block of exactly its size
 * (and the one spare byte the JSON reader needs), so a read past it is
 * caught by AddressSanitizer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"
#include "bench_samples.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one_line(const char *err)
{
    if (err[0] == '\0' || strchr(err, '\n')) {
        fprintf(stderr, "bad reason: '%s'\n", err);
        abort();
    }
}

static char *copy(const char *s, size_t n)
{
    char *c = malloc(n + 1);
    if (!c)
        abort();
    memcpy(c, s, n);
    c[n] = 0;
    return c;
}

/* text (n bytes) must read as a samples file; returns its set. */
static bench_set *must_read(const char *text, size_t n)
{
    char err[512];
    char *buf = copy(text, n);
    bench_set *set = NULL;
    if (bench_set_parse(buf, n, &set, err, sizeof(err)) < 0) {
        fprintf(stderr, "a formatted set does not read: %s\n%.*s\n", err, (int)n, text);
        abort();
    }
    free(buf);
    return set;
}

static void round_trip(const bench_set *set)
{
    size_t n1, n2, n3;
    char *one = bench_set_format(set, &n1);
    if (!one)
        abort();
    bench_set *back = must_read(one, n1);
    char *two = bench_set_format(back, &n2);
    bench_set *again = must_read(two, n2);
    char *three = bench_set_format(again, &n3);
    if (!two || !three || n2 != n3 || memcmp(two, three, n2) != 0) {
        fprintf(stderr, "not canonical after one round:\n%s\n%s\n", two, three ? three : "(null)");
        abort();
    }
    free(one);
    free(two);
    free(three);
    bench_set_free(back);
    bench_set_free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *in = (const char *)data + 1;
    size_t n = size - 1;
    char err[512];
    char *buf = malloc(n + 1);
    if (!buf)
        abort();
    memcpy(buf, in, n);
    bench_set *set = NULL;
    switch (data[0] % 4) {
    case 0:
        if (bench_set_parse(buf, n, &set, err, sizeof(err)) < 0)
            one_line(err);
        else
            round_trip(set);
        break;
    case 1:
        if (bench_set_parse_server(buf, n, &set, err, sizeof(err)) < 0)
            one_line(err);
        else
            round_trip(set);
        break;
    case 2: {
        char *s = copy(in, n);
        char **argv = NULL;
        int words = strlen(s) == n ? bench_split_command(s, &argv, err, sizeof(err)) : 0;
        if (words < 0) {
            one_line(err);
        } else if (argv) {
            if (words < 1 || argv[words])
                abort();
            for (int i = 0; i < words; i++)
                if (strlen(argv[i]) > n)
                    abort();
            bench_argv_free(argv);
        }
        free(s);
        break;
    }
    default: {
        char *s = copy(in, n);
        bench_until u;
        if (strlen(s) == n) {
            if (bench_parse_until(s, &u, err, sizeof(err)) < 0)
                one_line(err);
            else
                free(u.page);
        }
        free(s);
        break;
    }
    }
    bench_set_free(set);
    free(buf);
    return 0;
}
