/* pacer replay: feeds an events file (docs/events.md) through the real model
 * and prints the resulting records as JSON Lines. */
#include "commands.h"

#include <pacer/pacer.h>

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: pacer replay [OPTIONS] EVENTS.jsonl\n"
    "\n"
    "Feed recorded events (one JSON object per line, docs/events.md) through the\n"
    "page and start-up model and print the records it produces (docs/records.md)\n"
    "as JSON Lines. EVENTS.jsonl may be '-' for standard input.\n"
    "\n"
    "At the end of the input, a page not yet reported is reported with status\n"
    "\"deadline_exceeded\" if its deadline passed by the last event's time,\n"
    "otherwise \"incomplete\".\n"
    "\n"
    "Options:\n"
    "  -c, --config FILE      page config (XML, see `pacer config check`)\n"
    "  -o, --out FILE         append records to FILE instead of standard output\n"
    "      --app NAME         app name written in records (default \"replay\")\n"
    "      --app-version V    version written in records (default \"unknown\")\n"
    "      --session ID       session id written in records (default: random)\n"
    "      --server URL       also upload the records to a pacer server (OTLP,\n"
    "                         docs/otlp-mapping.md), e.g. http://127.0.0.1:4318; over\n"
    "                         gRPC the endpoint without a path, http://HOST:4317\n"
    "      --key-file FILE    the app's ingest key for --server, on the file's first\n"
    "                         line (default: $PACER_KEY); never on the command line\n"
    "      --ca FILE          CA certificates (PEM) to verify an https:// server with\n"
    "                         (a self-signed one); default: the system's\n"
    "      --spool FILE       the upload spool (default ~/.local/state/pacer/spool.db)\n"
    "      --otlp-protocol P  protobuf (OTLP/HTTP, the default, or $PACER_OTLP_PROTOCOL),\n"
    "                         json (OTLP/HTTP JSON) or grpc (OTLP/gRPC)\n"
    "      --otlp-compression C  gzip (default, or $PACER_OTLP_COMPRESSION) or none\n"
    "      --config-server URL  where the page config is polled (GET /v1/config/APP;\n"
    "                         default $PACER_CONFIG_SERVER_URL, else --server over\n"
    "                         OTLP/HTTP, none over gRPC)\n"
    "  -h, --help             show this help\n"
    "\n"
    "Lines that cannot be read are reported on standard error as FILE:LINE:\n"
    "reason and skipped; the rest is still replayed.\n"
    "Exit status: 0 all lines replayed, 1 some lines skipped, 2 usage, config or\n"
    "file error.\n";

static int run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"out", required_argument, NULL, 'o'},
        {"app", required_argument, NULL, 'a'},
        {"app-version", required_argument, NULL, 'V'},
        {"session", required_argument, NULL, 's'},
        {"server", required_argument, NULL, 'S'},
        {"key", required_argument, NULL, 'k'},
        {"key-file", required_argument, NULL, 'K'},
        {"ca", required_argument, NULL, 'A'},
        {"spool", required_argument, NULL, 'p'},
        {"otlp-protocol", required_argument, NULL, 'P'},
        {"otlp-compression", required_argument, NULL, 'Z'},
        {"config-server", required_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    pacer_options opts = {.app_name = "replay", .out_path = "-", .explicit_times = true};
    const char *key_file = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+c:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': opts.config_path = optarg; break;
        case 'o': opts.out_path = optarg; break;
        case 'a': opts.app_name = optarg; break;
        case 'V': opts.app_version = optarg; break;
        case 's': opts.session = optarg; break;
        case 'S': opts.server_url = optarg; break;
        case 'k': fprintf(stderr, "pacer replay: %s\n", CLI_NO_KEY_IN_ARGV); return 2;
        case 'K': key_file = optarg; break;
        case 'A': opts.server_ca_file = optarg; break;
        case 'p': opts.spool_path = optarg; break;
        case 'P': opts.otlp_protocol = optarg; break;
        case 'Z': opts.otlp_compression = optarg; break;
        case 'C': opts.config_server_url = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "pacer replay: expected one EVENTS file\n\n%s", usage);
        return 2;
    }
    const char *path = argv[optind];
    FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "re");
    if (!in) {
        fprintf(stderr, "pacer replay: %s: %s\n", path, strerror(errno));
        return 2;
    }

    if (opts.server_ca_file && access(opts.server_ca_file, R_OK) != 0) {
        fprintf(stderr, "pacer replay: --ca %s: %s\n", opts.server_ca_file, strerror(errno));
        if (in != stdin)
            fclose(in);
        return 2;
    }
    int key_error = 0;
    char *key = opts.server_url ? cli_server_key("replay", key_file, &key_error) : NULL;
    if (key_error) {
        if (in != stdin)
            fclose(in);
        return 2;
    }
    opts.server_key = key;
    pacer_t *p;
    char *err = NULL;
    int r = pacer_new(&opts, &p, &err);
    cli_key_free(key); /* the uploader has its own copy */
    opts.server_key = NULL;
    if (r < 0) {
        fprintf(stderr, "pacer replay: %s\n", err ? err : strerror(-r));
        free(err);
        if (in != stdin)
            fclose(in);
        return 2;
    }

    char *line = NULL, *scratch = NULL;
    size_t cap = 0, scratch_cap = 0;
    ssize_t len;
    unsigned long lineno = 0, bad = 0;
    while ((len = getline(&line, &cap, in)) != -1) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        if (strspn(line, " \t") >= (size_t)len)
            continue; /* blank line */
        if ((size_t)len + 1 > scratch_cap) {
            free(scratch);
            scratch_cap = (size_t)len + 1;
            scratch = malloc(scratch_cap);
            if (!scratch) {
                fprintf(stderr, "pacer replay: out of memory\n");
                bad++;
                scratch_cap = 0;
                break;
            }
        }
        pacer_event ev;
        char why[256];
        if (pacer_event_parse(line, (size_t)len, scratch, &ev, why, sizeof(why)) < 0) {
            fprintf(stderr, "pacer replay: %s:%lu: %s\n", path, lineno, why);
            bad++;
            continue;
        }
        r = pacer_submit(p, &ev);
        if (r == -EINVAL && ev.type == PACER_EV_RECORD) {
            fprintf(stderr, "pacer replay: %s:%lu: record rejected: not a net, jank, frames or leak record "
                            "of docs/records.md with a \"type\" and valid fields\n", path, lineno);
            bad++;
        } else if (r < 0) {
            fprintf(stderr, "pacer replay: %s:%lu: event rejected: %s\n", path, lineno, strerror(-r));
            bad++;
        }
    }
    if (ferror(in)) {
        fprintf(stderr, "pacer replay: %s: read error: %s\n", path, strerror(errno));
        bad++;
    }
    free(line);
    free(scratch);
    if (in != stdin)
        fclose(in);

    pacer_stats st;
    pacer_finish(p); /* reports pending pages, writes everything, tries to upload */
    pacer_get_stats(p, &st);
    pacer_free(p);
    if (opts.server_url) {
        fprintf(stderr, "pacer replay: uploaded %llu batch(es) to %s", (unsigned long long)st.batches_sent,
                opts.server_url);
        if (st.records_rejected)
            fprintf(stderr, "; the server rejected %llu record(s): %s", (unsigned long long)st.records_rejected,
                    st.upload_message[0] ? st.upload_message : "no reason given");
        char why[256];
        pacer_upload_failure(&st, why, sizeof(why));
        if (st.batches_refused)
            fprintf(stderr, "; %llu batch(es) refused (%s) and dropped", (unsigned long long)st.batches_refused, why);
        if (st.upload_retries && !st.batches_sent)
            fprintf(stderr, "; the rest waits in the spool for the next run (%s)", why);
        fputc('\n', stderr);
    }
    if (st.write_errors) {
        fprintf(stderr, "pacer replay: %llu records could not be written\n",
                (unsigned long long)st.write_errors);
        return 2;
    }
    if (bad) {
        fprintf(stderr, "pacer replay: %lu of %lu lines skipped\n", bad, lineno);
        return 1;
    }
    return 0;
}

const cli_command cmd_replay = {
    "replay",
    "Replay recorded events through the model and print records",
    usage,
    run,
};
