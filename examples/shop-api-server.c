/* shop-api-server: the demo shop's HTTP API, with a delay per path set on
 * the command line, so that every api_load_ms the demo reports can be
 * checked against a known ground truth.
 *
 *   shop-api-server [--port N] [--bind ADDR] [--delay PATH=MS]... [--quiet]
 *
 * Paths: /api/config, /api/list, /api/test1 answer JSON; /img/banner.png
 * answers 150 KiB of image/png (a "large image" for the network monitor);
 * anything else is a 404. A delay is slept before the response is queued,
 * on the connection's own thread (MHD_USE_THREAD_PER_CONNECTION), so delays
 * of concurrent requests do not add up.
 *
 * Once listening it prints one line to stdout and flushes it:
 *   shop-api-server: listening on http://127.0.0.1:PORT
 * (with --port 0 the kernel picks PORT; scripts read it from that line).
 * It runs until SIGINT or SIGTERM. */
#include <microhttpd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_DELAYS 32
#define BANNER_BYTES (150 * 1024)

static struct {
    char *path;
    unsigned ms;
} delays[MAX_DELAYS];
static size_t n_delays;
static int quiet;
static volatile sig_atomic_t stop;

static const char config_json[] = "{\"title\":\"pacer shop\",\"currency\":\"EUR\",\"featured\":3}";
static const char test1_json[] =
    "{\"merchant\":\"Corner Bakery\",\"rating\":4.6,\"open\":true,\"offers\":[\"bread\",\"cake\"]}";
static char list_json[4096];
static char *banner;

static unsigned delay_for(const char *path)
{
    for (size_t i = 0; i < n_delays; i++)
        if (strcmp(delays[i].path, path) == 0)
            return delays[i].ms;
    return 0;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size,
                              void **req_cls)
{
    (void)cls;
    (void)version;
    (void)upload_data;
    /* The first call only announces the request; answer on the second, so a
     * request body (none is expected) has been read. */
    if (*req_cls == NULL) {
        static int marker;
        *req_cls = &marker;
        return MHD_YES;
    }
    *upload_data_size = 0;

    const char *body = NULL;
    size_t len = 0;
    const char *type = "application/json";
    unsigned status = MHD_HTTP_OK;
    if (strcmp(url, "/api/config") == 0)
        body = config_json, len = strlen(config_json);
    else if (strcmp(url, "/api/list") == 0)
        body = list_json, len = strlen(list_json);
    else if (strcmp(url, "/api/test1") == 0)
        body = test1_json, len = strlen(test1_json);
    else if (strcmp(url, "/img/banner.png") == 0)
        body = banner, len = BANNER_BYTES, type = "image/png";
    else
        body = "{\"error\":\"not found\"}", len = strlen(body), status = MHD_HTTP_NOT_FOUND;

    unsigned ms = delay_for(url);
    if (ms)
        sleep_ms(ms);
    if (!quiet)
        fprintf(stderr, "shop-api-server: %s %s -> %u (delay %u ms)\n", method, url, status, ms);

    struct MHD_Response *resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", type);
    enum MHD_Result ret = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void usage(FILE *out)
{
    fputs("usage: shop-api-server [--port N] [--bind ADDR] [--delay PATH=MS]... [--quiet]\n"
          "  --port N          TCP port (default 8080; 0 = any free port)\n"
          "  --bind ADDR       IPv4 address to listen on (default 127.0.0.1)\n"
          "  --delay PATH=MS   sleep MS milliseconds before answering PATH (repeatable)\n"
          "  --quiet           do not log requests to stderr\n",
          out);
}

int main(int argc, char **argv)
{
    long port = 8080;
    const char *bind_addr = "127.0.0.1";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--port") == 0 && i + 1 < argc) {
            char *end;
            port = strtol(argv[++i], &end, 10);
            if (*end || port < 0 || port > 65535) {
                fprintf(stderr, "shop-api-server: bad --port '%s'\n", argv[i]);
                return 2;
            }
        } else if (strcmp(a, "--bind") == 0 && i + 1 < argc) {
            bind_addr = argv[++i];
        } else if (strcmp(a, "--delay") == 0 && i + 1 < argc) {
            const char *spec = argv[++i];
            const char *eq = strrchr(spec, '=');
            char *end;
            long ms = eq ? strtol(eq + 1, &end, 10) : -1;
            if (!eq || eq == spec || spec[0] != '/' || *end || ms < 0 || ms > 600000 || n_delays == MAX_DELAYS) {
                fprintf(stderr, "shop-api-server: bad --delay '%s' (want /path=MS, e.g. /api/list=300)\n", spec);
                return 2;
            }
            delays[n_delays].path = strndup(spec, (size_t)(eq - spec));
            delays[n_delays].ms = (unsigned)ms;
            n_delays++;
        } else if (strcmp(a, "--quiet") == 0) {
            quiet = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "shop-api-server: unknown argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }

    size_t off = (size_t)snprintf(list_json, sizeof(list_json), "{\"items\":[");
    for (int i = 0; i < 20; i++)
        off += (size_t)snprintf(list_json + off, sizeof(list_json) - off,
                                "%s{\"id\":%d,\"name\":\"Item %d\",\"price\":%d.%02d}", i ? "," : "", i + 1,
                                i + 1, 3 + i * 2, (i * 37) % 100);
    snprintf(list_json + off, sizeof(list_json) - off, "]}");
    banner = malloc(BANNER_BYTES);
    if (!banner)
        return 1;
    for (size_t i = 0; i < BANNER_BYTES; i++)
        banner[i] = (char)(i * 131u);
    memcpy(banner, "\x89PNG\r\n\x1a\n", 8);

    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, bind_addr, &sin.sin_addr) != 1) {
        fprintf(stderr, "shop-api-server: bad --bind address '%s'\n", bind_addr);
        return 2;
    }
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port,
        NULL, NULL, answer, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sin,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "shop-api-server: cannot listen on %s:%ld: %s\n", bind_addr, port, strerror(errno));
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("shop-api-server: listening on http://%s:%u\n", bind_addr, info ? info->port : (unsigned)port);
    fflush(stdout);

    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    while (!stop)
        pause();
    MHD_stop_daemon(d);
    return 0;
}
