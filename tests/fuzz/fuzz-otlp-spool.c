/* libFuzzer target for the uploader's readers of what it spooled
 * (src/core/otlp.c: a SpooledRecord body; src/core/otlp_proto.c: the
 * protobuf → JSON walk that checks items and writes the JSON protocol).
 *
 * Properties, for every signal: the input as a request either is refused
 * or writes JSON the base reader accepts, which converts to protobuf that
 * walks back to the same JSON (the table is one in both directions); the
 * input cut into one to four spooled bodies always makes a request (bodies
 * that are not pacer's are left out and counted), whose JSON is valid and
 * says what its protobuf says. ASan and UBSan catch the rest.
 *
 * Seeds (corpus/otlp-spool): each record type's spooled body
 * (otlp_spool_body of tests/unit/schema_records.c's record, after a 0 byte:
 * one body) and each signal's request of them (otlp_request). */
#include "otlp.h"

#include <pacer/base/json.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    /* exactly its size on the heap: a read past the end is caught */
    uint8_t *in = malloc(size ? size : 1);
    memcpy(in, data, size);
    for (int s = 0; s < PACER_N_SIGNALS; s++) {
        pacer_signal sig = (pacer_signal)s;
        otlp_proto_check(sig, in, size);
        size_t jl;
        char *json = otlp_proto_to_json(sig, in, size, &jl);
        if (json) {
            check_json(json, jl);
            size_t pl, jl2;
            uint8_t *pb = otlp_json_to_proto(sig, json, jl, &pl);
            char *again = pb ? otlp_proto_to_json(sig, pb, pl, &jl2) : NULL;
            if (!again || jl2 != jl || memcmp(again, json, jl) != 0) {
                fprintf(stderr, "the walk and the table disagree:\n%.*s\n", (int)jl, json);
                abort();
            }
            free(pb);
            free(again);
            free(json);
        }

        /* bodies: the first byte says how many (1-4), the rest is cut evenly */
        size_t n = size ? (size_t)(in[0] % 4) + 1 : 1, rest = size ? size - 1 : 0;
        char *bodies[4];
        size_t lens[4];
        for (size_t i = 0; i < n; i++) {
            size_t from = rest * i / n, to = rest * (i + 1) / n;
            lens[i] = to - from;
            bodies[i] = malloc(lens[i] + 1);
            memcpy(bodies[i], in + 1 + from, lens[i]);
            bodies[i][lens[i]] = '\0';
        }
        spool_batch b = {.signal = sig, .form = SPOOL_OTLP, .id = "fuzz", .n = n, .records = bodies, .lens = lens};
        size_t pl, skipped, skipped_j;
        uint8_t *pb = otlp_request(&b, 1, false, &pl, &skipped);
        char *text = (char *)otlp_request(&b, 1, true, &jl, &skipped_j);
        if (!pb || !text || skipped > n || skipped != skipped_j)
            abort();
        check_json(text, jl);
        /* the same message again: a spooled item is copied as it is, so a
         * valid but longer varint in it stays, where JSON → protobuf writes
         * the shortest; compared as JSON */
        size_t bl, jl2;
        uint8_t *back = otlp_json_to_proto(sig, text, jl, &bl);
        char *again = back ? otlp_proto_to_json(sig, back, bl, &jl2) : NULL;
        if (!again || jl2 != jl || memcmp(again, text, jl) != 0)
            abort();
        free(again);
        free(back);
        free(pb);
        free(text);
        for (size_t i = 0; i < n; i++)
            free(bodies[i]);
    }
    free(in);
    return 0;
}
