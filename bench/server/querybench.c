/* pacerd query latency: sends the same GET over one keep-alive loopback
 * connection N times and prints the p50 / p90 / p99 of the round trips
 * (request written → whole answer read).
 *
 *   querybench --port P --token ADMIN_TOKEN --path '/api/v1/pages?app=bench' [--n 50]
 *
 * Prints: "p50_ms=… p90_ms=… p99_ms=… n=… bytes=…". Exit 1 on a non-200.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Reads one response into buf (grown); returns the status, 0 on error. */
static int get_response(int fd, char **buf, size_t *cap, size_t *body_len)
{
    size_t n = 0;
    char *end = NULL;
    size_t want = 0;
    for (;;) {
        if (n + 65536 > *cap) {
            *cap = (*cap + 65536) * 2;
            *buf = realloc(*buf, *cap);
        }
        ssize_t r = read(fd, *buf + n, *cap - n - 1);
        if (r <= 0)
            return 0;
        n += (size_t)r;
        (*buf)[n] = 0;
        if (!end && (end = strstr(*buf, "\r\n\r\n"))) {
            char *cl = strcasestr(*buf, "Content-Length:");
            if (!cl || cl > end)
                return 0;
            want = (size_t)(end + 4 - *buf) + strtoul(cl + 15, NULL, 10);
            *body_len = want - (size_t)(end + 4 - *buf);
        }
        if (end && n >= want)
            return atoi(*buf + 9);
    }
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {{"port", required_argument, NULL, 'p'},
                                             {"token", required_argument, NULL, 't'},
                                             {"path", required_argument, NULL, 'q'},
                                             {"n", required_argument, NULL, 'n'},
                                             {0}};
    int port = 0, n = 50, c;
    const char *token = NULL, *path = NULL;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'p': port = atoi(optarg); break;
        case 't': token = optarg; break;
        case 'q': path = optarg; break;
        case 'n': n = atoi(optarg); break;
        default: return 2;
        }
    }
    if (!port || !token || !path || n < 1 || n > 100000) {
        fprintf(stderr, "usage: querybench --port P --token T --path PATH [--n N]\n");
        return 2;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        perror("querybench: connect");
        return 1;
    }
    char req[2048];
    int rn = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n", path,
                      token);
    double *t = malloc((size_t)n * sizeof *t);
    char *buf = NULL;
    size_t cap = 0, body = 0;
    for (int i = 0; i < n; i++) {
        double t0 = now_ms();
        if (write(fd, req, (size_t)rn) != rn) {
            perror("querybench: write");
            return 1;
        }
        int st = get_response(fd, &buf, &cap, &body);
        t[i] = now_ms() - t0;
        if (st != 200) {
            fprintf(stderr, "querybench: HTTP %d: %.300s\n", st, buf ? buf : "");
            return 1;
        }
    }
    qsort(t, (size_t)n, sizeof *t, cmp);
    printf("p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f n=%d bytes=%zu\n", t[(n - 1) / 2], t[(int)(0.9 * (n - 1))],
           t[(int)(0.99 * (n - 1))], n, body);
    free(t);
    free(buf);
    close(fd);
    return 0;
}
