/* otlp_probe: the uploader's encoders on a records file, for
 * test_otlp_proto.py. Encodes the records of SIGNAL (traces, logs or
 * metrics) in RECORDS.jsonl as one request with batch id BATCH, the way the
 * uploader does, and writes its OTLP/HTTP JSON to OUT.json, its protobuf to
 * OUT.pb and the protobuf gzip-compressed to OUT.pb.gz.
 * Usage: otlp_probe SIGNAL RECORDS.jsonl BATCH OUT */
#include "otlp.h"

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
    char **lines = NULL;
    size_t n = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, in)) > 0) {
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = 0;
        if (!len)
            continue;
        /* the record's signal: that of its type */
        char type[64] = "";
        const char *t = strstr(line, "\"type\":\"");
        if (t)
            sscanf(t + 8, "%63[^\"]", type);
        const pacer_record_type *rt = pacer_record_type_find(type, strlen(type));
        pacer_signal s = rt ? rt->signal : PACER_SIGNAL_TRACES;
        if (s != sig)
            continue;
        lines = realloc(lines, (n + 1) * sizeof *lines);
        lines[n++] = strdup(line);
    }
    fclose(in);
    size_t jlen, skipped, plen, zlen;
    char *json = otlp_encode(sig, lines, n, argv[3], 0, &jlen, &skipped);
    uint8_t *pb = json ? otlp_json_to_proto(sig, json, jlen, &plen) : NULL;
    uint8_t *gz = pb ? otlp_gzip(pb, plen, &zlen) : NULL;
    if (!gz) {
        fprintf(stderr, "otlp_probe: encoding failed\n");
        return 1;
    }
    int r = write_file(argv[4], ".json", json, jlen) | write_file(argv[4], ".pb", pb, plen) |
            write_file(argv[4], ".pb.gz", gz, zlen);
    printf("%zu records\n", n);
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
    free(line);
    free(json);
    free(pb);
    free(gz);
    return r ? 1 : 0;
}
