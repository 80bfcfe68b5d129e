/* libFuzzer target for the event reader and writer (src/core/event.c).
 *
 * Property: a line that parses formats to a canonical line that parses back
 * to the same event (the reader only hands out valid UTF-8 without NULs, so
 * nothing is lost on the way; a record event's object comes back as the
 * same compact text). A line that does not parse gets a non-empty
 * one-line message. The input is copied into a heap block of exactly its
 * size, so any read past `len` is caught by AddressSanitizer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pacer/event.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_str(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static int same_event(const pacer_event *a, const pacer_event *b)
{
    return a->type == b->type && a->t_ns == b->t_ns && a->page == b->page &&
           same_str(a->class_name, b->class_name) && a->kind == b->kind &&
           same_str(a->url, b->url) && a->req == b->req && a->status == b->status &&
           a->record_len == b->record_len && (!a->record_len || memcmp(a->record, b->record, a->record_len) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    pacer_event ev, back;
    char *line = malloc(size ? size : 1);
    char *scratch = malloc(size + 1);
    char *out = NULL, *scratch2 = NULL;
    int n;

    if (!line || !scratch)
        abort();
    memcpy(line, data, size);

    if (pacer_event_parse(line, size, scratch, &ev, err, sizeof(err)) < 0) {
        if (err[0] == '\0' || strchr(err, '\n'))
            abort();
        goto done;
    }

    n = pacer_event_format(&ev, NULL, 0);
    if (n <= 0)
        abort(); /* a parsed event is always valid */
    out = malloc((size_t)n + 1);
    if (!out)
        abort();
    if (pacer_event_format(&ev, out, (size_t)n + 1) != n || strlen(out) != (size_t)n ||
        out[n - 1] != '\n')
        abort();

    scratch2 = malloc((size_t)n + 1);
    if (!scratch2)
        abort();
    if (pacer_event_parse(out, (size_t)n, scratch2, &back, err, sizeof(err)) < 0) {
        fprintf(stderr, "formatted line does not parse: %s\n%s", err, out);
        abort();
    }
    if (!same_event(&ev, &back)) {
        fprintf(stderr, "round trip changed the event:\n%s", out);
        abort();
    }

done:
    free(scratch2);
    free(out);
    free(scratch);
    free(line);
    return 0;
}
