/* pacer bench: a baseline from pacerd, `--baseline server:VERSION`.
 *
 * GET {server}/api/v1/samples?app=APP&version=VERSION with the admin token
 * (docs/server.md): the stored page and start-up records of that version,
 * each session one run (bench_set_parse_server).
 */
#ifndef PACER_CLI_BENCH_SERVER_H
#define PACER_CLI_BENCH_SERVER_H

#include "bench_samples.h"

#include <stddef.h>

/* 0 and the set in *ret, or -1 with the reason in err (the URL, the HTTP
 * status and pacerd's error, or what was wrong with the answer). */
int bench_server_fetch(const char *server, const char *token, const char *app, const char *version, bench_set **ret,
                       char *err, size_t err_len);

#endif
