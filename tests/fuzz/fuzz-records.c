/* libFuzzer target for the record reader and writer (src/core/record.c)
 * and the OTLP encoder that reads spooled records back (src/core/otlp.c).
 *
 * Properties: a line that parses formats to a line that parses again and
 * formats to the very same bytes (the record's JSON is canonical after one
 * round); a line that does not parse gets a non-empty one-line reason; the
 * encoder takes any line without crashing and gives JSON the base reader
 * accepts. The input is copied into a heap block of exactly its size, so a
 * read past `len` is caught by AddressSanitizer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pacer/base/json.h>
#include <pacer/record.h>

#include "otlp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_json(const char *text, size_t len)
{
    char *buf = malloc(len + 1);
    memcpy(buf, text, len);
    jread r;
    jvalue v;
    jread_init(&r, buf, len, NULL, JREAD_NO_NUL);
    if (!jread_value(&r, &v) || !jread_end(&r, "value")) {
        fprintf(stderr, "not JSON (%zu: %s):\n%.*s\n", r.error_at, r.message, (int)len, text);
        abort();
    }
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    char *line = malloc(size ? size : 1);
    if (!line)
        abort();
    memcpy(line, data, size);

    pacer_record *r = NULL, *back = NULL, *again = NULL;
    if (pacer_record_parse(line, size, &r, err, sizeof(err)) < 0) {
        if (err[0] == '\0' || strchr(err, '\n'))
            abort();
    } else {
        size_t n1, n2, n3;
        char *one = pacer_record_format(r, &n1);
        if (!one || pacer_record_parse(one, n1, &back, err, sizeof(err)) < 0) {
            fprintf(stderr, "formatted record does not parse: %s\n%s\n", err, one ? one : "(null)");
            abort();
        }
        char *two = pacer_record_format(back, &n2);
        if (!two || pacer_record_parse(two, n2, &again, err, sizeof(err)) < 0)
            abort();
        char *three = pacer_record_format(again, &n3);
        if (!three || n2 != n3 || memcmp(two, three, n2) != 0) {
            fprintf(stderr, "not canonical after one round:\n%s\n%s\n", two, three ? three : "(null)");
            abort();
        }
        check_json(one, n1);
        free(one);
        free(two);
        free(three);
    }

    /* the uploader's path: a NUL-terminated spooled line */
    char *spooled = malloc(size + 1);
    memcpy(spooled, data, size);
    spooled[size] = '\0';
    char *records[1] = {spooled};
    for (int sig = 0; sig < PACER_N_SIGNALS; sig++) {
        size_t len, skipped;
        char *body = otlp_encode((pacer_signal)sig, records, 1, "fuzz", 0, &len, &skipped);
        if (!body)
            abort();
        check_json(body, len);
        free(body);
    }
    free(spooled);
    pacer_record_free(r);
    pacer_record_free(back);
    pacer_record_free(again);
    free(line);
    return 0;
}
