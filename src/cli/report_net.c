/* pacer report: the network section (records of type "net", DESIGN §3.4).
 *
 * Per URL path (scheme, host, query and fragment stripped, as the page
 * model matches APIs): requests, p50 and p90 of the request time, failures
 * (status >= 400 or <= 0: no response), and bytes sent and received (the
 * known values; null counts as 0).
 */
#include "report.h"
#include "report_fields.h"
#include "report_index.h"
#include "report_stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct net_path {
    char *name; /* the URL path; first member, see report_index.h */
    size_t count, failures;
    double sent, received; /* bytes */
    report_samples total;
} net_path;

typedef struct net_summary {
    report_index paths;
} net_summary;

static void *net_new(void)
{
    return calloc(1, sizeof(net_summary));
}

static void path_release(void *item)
{
    report_samples_release(&((net_path *)item)->total);
}

static void net_free(void *state)
{
    net_summary *s = state;
    if (!s)
        return;
    report_index_release(&s->paths, path_release);
    free(s);
}

/* "http://h:1/a/b?x#y" -> "/a/b" into buf. */
static const char *url_path(const char *url, char *buf, size_t cap)
{
    const char *p = strstr(url, "://");
    p = p ? strchr(p + 3, '/') : url;
    if (!p)
        p = "/";
    size_t n = strcspn(p, "?#");
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return n ? buf : "/";
}

static int net_add(void *state, const pacer_record *rec, const report_options *opt)
{
    net_summary *s = state;
    char buf[2048];
    net_path *p = report_index_get(&s->paths, url_path(pacer_record_str(rec, PACER_NET_URL), buf, sizeof(buf)),
                                   sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->count++;
    int64_t status = pacer_record_int(rec, PACER_NET_STATUS);
    if (status <= 0 || status >= 400)
        p->failures++;
    /* 0 when absent or null */
    p->sent += (double)pacer_record_int(rec, PACER_NET_BYTES_SENT);
    p->received += (double)pacer_record_int(rec, PACER_NET_BYTES_RECEIVED);
    if (pacer_record_has(rec, PACER_NET_TOTAL_MS))
        return report_samples_add(&p->total, pacer_record_ms(rec, PACER_NET_TOTAL_MS));
    return 0;
}

static void net_print_text(void *state, FILE *out, const report_options *opt)
{
    net_summary *s = state;
    fprintf(out, "Requests\n");
    if (s->paths.n == 0) {
        fprintf(out, "  no net records\n");
        return;
    }
    net_path **paths = (net_path **)report_index_sorted(&s->paths);
    fprintf(out, "  %-32s %7s %9s %9s %8s %12s %12s\n", "path", "count", "p50 ms", "p90 ms", "failures",
            "bytes sent", "bytes recv");
    for (size_t i = 0; i < s->paths.n; i++) {
        net_path *p = paths[i];
        report_samples_sort(&p->total);
        fprintf(out, "  %-32s %7zu", p->name, p->count);
        if (p->total.n)
            fprintf(out, " %9.1f %9.1f", report_samples_pct(&p->total, 50), report_samples_pct(&p->total, 90));
        else
            fprintf(out, " %9s %9s", "-", "-");
        fprintf(out, " %8zu %12.0f %12.0f\n", p->failures, p->sent, p->received);
    }
}

static void net_to_json(void *state, jbuf *out, const report_options *opt)
{
    net_summary *s = state;
    jbuf_open(out, '[');
    net_path **paths = (net_path **)report_index_sorted(&s->paths);
    for (size_t i = 0; i < s->paths.n; i++) {
        net_path *p = paths[i];
        report_samples_sort(&p->total);
        jbuf_open(out, '{');
        jbuf_kv_str(out, "path", p->name);
        jbuf_kv_u64(out, "count", p->count);
        report_json_pct(out, "p50_ms", &p->total, 50);
        report_json_pct(out, "p90_ms", &p->total, 90);
        jbuf_kv_u64(out, "failures", p->failures);
        report_json_number(out, report_field_name(PACER_RECORD_NET, PACER_NET_BYTES_SENT), p->sent);
        report_json_number(out, report_field_name(PACER_RECORD_NET, PACER_NET_BYTES_RECEIVED), p->received);
        jbuf_close(out, '}');
    }
    jbuf_close(out, ']');
}

const report_section report_net_section = {
    .type = PACER_RECORD_NET,
    .json_key = "requests",
    .state_new = net_new,
    .state_free = net_free,
    .add = net_add,
    .print_text = net_print_text,
    .to_json = net_to_json,
};
