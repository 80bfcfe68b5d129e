/* libFuzzer target for the record reader and writer (src/core/record.c)
 * and the uploader's encoder of records (src/core/otlp.c), against the
 * path it replaced (tests/unit/otlp_ref.c).
 *
 * Properties: a line that parses formats to a line that parses again and
 * formats to the very same bytes (the record's JSON is canonical after one
 * round); a line that does not parse gets a non-empty one-line reason. As
 * an earlier version's spooled line, under every signal, the input encodes
 * to the protobuf the reference gives (when the reference can encode it at
 * all), and to JSON the base reader accepts and that converts back to that
 * protobuf. As a record event's object (lenient: required fields may be
 * missing), the typed record is spooled by the writer's path exactly when
 * the reader takes its line back, and then encodes to the reference's
 * bytes. The input is copied into a heap block of exactly its size, so a
 * read past `len` is caught by AddressSanitizer. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pacer/base/json.h>
#include <pacer/record.h>

#include "otlp.h"
#include "otlp_ref.h"
#include "record_int.h"

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

/* The reference's protobuf of one line, or NULL (it could not encode it);
 * *ret_skipped: the line did not read as a record. */
static uint8_t *reference(pacer_signal sig, char *line, size_t *ret_len, size_t *ret_skipped)
{
    size_t jl;
    char *json = ref_otlp_encode(sig, &line, 1, "fuzz", 3, &jl, ret_skipped);
    if (!json)
        abort();
    uint8_t *pb = otlp_json_to_proto(sig, json, jl, ret_len);
    free(json);
    return pb;
}

/* otlp_request of a one-record batch, protobuf and JSON, checked against
 * each other and against `want` (the reference's bytes) when given. */
static void request(pacer_signal sig, spool_form form, char *body, size_t len, const uint8_t *want,
                    size_t want_len, size_t want_skipped)
{
    spool_batch b = {.signal = sig, .form = form, .id = "fuzz", .n = 1, .records = &body, .lens = &len};
    size_t pl, jl, skipped, skipped_j;
    uint8_t *pb = otlp_request(&b, 3, false, &pl, &skipped);
    char *json = (char *)otlp_request(&b, 3, true, &jl, &skipped_j);
    if (!pb || !json || skipped != skipped_j)
        abort();
    check_json(json, jl);
    size_t bl;
    uint8_t *back = otlp_json_to_proto(sig, json, jl, &bl);
    if (!back || bl != pl || memcmp(back, pb, pl) != 0) {
        fprintf(stderr, "the JSON request is not the protobuf one:\n%.*s\n", (int)jl, json);
        abort();
    }
    if (want && (skipped != want_skipped || pl != want_len || memcmp(pb, want, pl) != 0)) {
        fprintf(stderr, "differs from the reference (signal %d, form %d): %.*s\n", (int)sig, (int)form,
                (int)(form == SPOOL_JSON ? len : 0), body);
        abort();
    }
    free(back);
    free(pb);
    free(json);
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

    /* an earlier version's spooled line, NUL-terminated, under every signal */
    char *spooled = malloc(size + 1);
    memcpy(spooled, data, size);
    spooled[size] = '\0';
    for (int sig = 0; sig < PACER_N_SIGNALS; sig++) {
        size_t rl, skipped;
        uint8_t *want = reference((pacer_signal)sig, spooled, &rl, &skipped);
        request((pacer_signal)sig, SPOOL_JSON, spooled, strlen(spooled), want, rl, skipped);
        free(want);
    }

    /* the writer's path, from the record a record event would carry */
    pacer_record *ev = NULL;
    if (record_from_object(line, size, &ev) == 0) {
        size_t n;
        char *text = pacer_record_format(ev, &n);
        if (!text)
            abort();
        pacer_signal sig = otlp_signal_of(ev);
        size_t rl, skipped;
        uint8_t *want = reference(sig, text, &rl, &skipped);
        pbuf body = {0};
        int sr = otlp_spool_body(ev, text, n, &body);
        if (sr == 0) {
            /* sent: the reader takes its line, and the reference sends it
             * too unless it could not encode it (a span ending past 2262) */
            if (skipped)
                abort();
            request(sig, SPOOL_OTLP, (char *)body.p, body.len, want, rl, 0);
        } else if (sr != -EINVAL || (!skipped && want)) {
            /* not sent: the reader refuses its line, or (dated before
             * 1970) the reference could not encode it */
            fprintf(stderr, "not spooled (%d) but the reference sends it: %s\n", sr, text);
            abort();
        }
        free(want);
        free(text);
        pb_free(&body);
        pacer_record_free(ev);
    }
    free(spooled);
    pacer_record_free(r);
    pacer_record_free(back);
    pacer_record_free(again);
    free(line);
    return 0;
}
