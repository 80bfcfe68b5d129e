/* otlp_probe: the uploader's encoders on a records file, for
 * test_otlp_proto.py. Spools the records of SIGNAL (traces, logs or
 * metrics) in RECORDS.jsonl as the writer thread does (otlp_spool_body),
 * encodes them as one request with batch id BATCH, the way the uploader
 * does, and writes its OTLP/HTTP JSON to OUT.json, its protobuf to OUT.pb
 * and the protobuf gzip-compressed to OUT.pb.gz.
 * Usage: otlp_probe SIGNAL RECORDS.jsonl BATCH OUT */
#include "otlp.h"

#include <pacer/record.h>

#include <pacer/schema.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int write_file(const char *base, const char *ext, const void *p, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s", base, ext);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: otlp_probe traces|logs|metrics RECORDS.jsonl BATCH OUT\n");
        return 2;
    }
    pacer_signal sig = strcmp(argv[1], "logs") == 0 ? PACER_SIGNAL_LOGS
                       : strcmp(argv[1], "metrics") == 0 ? PACER_SIGNAL_METRICS
                                                         : PACER_SIGNAL_TRACES;
    FILE *in = fopen(argv[2], "r");
    if (!in) {
        perror(argv[2]);
        return 2;
    }
    spool_batch b = {.signal = sig, .form = SPOOL_OTLP};
    snprintf(b.id, sizeof b.id, "%s", argv[3]);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    pbuf body = {0};
    while ((len = getline(&line, &cap, in)) > 0) {
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = 0;
        pacer_record *rec;
        char err[256];
        if (!len)
            continue;
        if (pacer_record_parse(line, (size_t)len, &rec, err, sizeof err) < 0) {
            fprintf(stderr, "otlp_probe: %s\n", err);
            return 1;
        }
        /* the record's signal: that of its type */
        int r = otlp_signal_of(rec) == sig ? otlp_spool_body(rec, line, (size_t)len, &body) : 1;
        pacer_record_free(rec);
        if (r > 0)
            continue;
        if (r < 0) {
            fprintf(stderr, "otlp_probe: a record that is not sent: %s\n", line);
            return 1;
        }
        b.records = realloc(b.records, (b.n + 1) * sizeof *b.records);
        b.lens = realloc(b.lens, (b.n + 1) * sizeof *b.lens);
        b.lens[b.n] = body.len;
        b.records[b.n++] = (char *)pb_steal(&body, NULL);
    }
    fclose(in);
    size_t jlen, skipped, plen, zlen;
    char *json = (char *)otlp_request(&b, 0, true, &jlen, &skipped);
    uint8_t *pb = otlp_request(&b, 0, false, &plen, &skipped);
    uint8_t *gz = pb ? otlp_gzip(pb, plen, &zlen) : NULL;
    if (!json || !gz || skipped) {
        fprintf(stderr, "otlp_probe: encoding failed\n");
        return 1;
    }
    int r = write_file(argv[4], ".json", json, jlen) | write_file(argv[4], ".pb", pb, plen) |
            write_file(argv[4], ".pb.gz", gz, zlen);
    printf("%zu records\n", b.n);
    spool_batch_clear(&b);
    free(line);
    free(json);
    free(pb);
    free(gz);
    return r ? 1 : 0;
}
