/* upload_probe: a long-running "app" for the upload tests. It runs a pacer
 * instance that uploads to a server and
 *   pages N MS      produces N window page records, one every MS ms, then exits;
 *   await CLASS S   creates and draws a page of kind "page" and class CLASS
 *                   every 50 ms until a page record for CLASS appears (the
 *                   server's config made CLASS a page) — exit 0 — or S
 *                   seconds pass — exit 1.
 * Usage: upload_probe SERVER SPOOL APP (pages N MS | await CLASS S)
 */
#include <pacer/pacer.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *want_class;
static atomic_int seen;

static void on_record(const char *line, size_t len, void *ud)
{
    (void)len;
    (void)ud;
    char needle[256];
    if (!want_class)
        return;
    snprintf(needle, sizeof(needle), "\"page\":\"%s\"", want_class);
    if (strstr(line, "\"type\":\"page\"") && strstr(line, needle))
        atomic_store(&seen, 1);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: upload_probe SERVER SPOOL APP (pages N MS | await CLASS S)\n");
        return 2;
    }
    pacer_options o = {.app_name = argv[3], .app_version = "1.0", .server_url = argv[1],
                       .server_key = getenv("PACER_KEY"), .spool_path = argv[2],
                       .on_record = on_record};
    if (strcmp(argv[4], "await") == 0)
        want_class = argv[5];
    pacer_t *p;
    char *err = NULL;
    if (pacer_new(&o, &p, &err) < 0) {
        fprintf(stderr, "upload_probe: %s\n", err ? err : "pacer_new failed");
        return 2;
    }
    int rc = 0;
    if (strcmp(argv[4], "pages") == 0) {
        long n = atol(argv[5]), ms = atol(argv[6]);
        for (long i = 1; i <= n; i++) {
            pacer_page_create(p, (uint64_t)i, "ProbeWindow", PACER_PAGE_WINDOW);
            pacer_page_draw(p, (uint64_t)i);
            pacer_page_destroy(p, (uint64_t)i);
            sleep_ms(ms);
        }
    } else {
        long deadline = atol(argv[6]) * 20;
        rc = 1;
        for (long i = 1; i <= deadline; i++) {
            pacer_page_create(p, (uint64_t)i, want_class, PACER_PAGE_PAGE);
            pacer_page_draw(p, (uint64_t)i);
            pacer_page_destroy(p, (uint64_t)i);
            pacer_flush(p);
            if (atomic_load(&seen)) {
                rc = 0;
                break;
            }
            sleep_ms(50);
        }
    }
    pacer_stats st;
    pacer_finish(p); /* the final upload figures */
    pacer_get_stats(p, &st);
    pacer_free(p);
    printf("batches_sent=%llu batches_refused=%llu retries=%llu configs=%llu rejected=%llu\n",
           (unsigned long long)st.batches_sent, (unsigned long long)st.batches_refused,
           (unsigned long long)st.upload_retries, (unsigned long long)st.configs_applied,
           (unsigned long long)st.records_rejected);
    return rc;
}
