/* pacer report: the network section (records of type "net", DESIGN §3.4).
 *
 * Per URL path (scheme, host, query and fragment stripped, as the page
 * model matches APIs): requests, p50 and p90 of total_ms, failures (status
 * >= 400 or <= 0: no response), and bytes sent and received (the known
 * values; null counts as 0).
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
    double bytes_sent, bytes_received;
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

static int net_check(json_t *rec, char *reason)
{
    int r;
    if ((r = report_check_string(rec, "url", 1, reason)) < 0 ||
        (r = report_check_integer(rec, "status", 1, reason)) < 0 ||
        (r = report_check_integer(rec, "bytes_sent", 0, reason)) < 0 ||
        (r = report_check_integer(rec, "bytes_received", 0, reason)) < 0)
        return r;
    return report_check_ms(rec, "total_ms", reason);
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

static int net_add(void *state, json_t *rec, const report_options *opt)
{
    net_summary *s = state;
    char buf[2048];
    net_path *p = report_index_get(&s->paths, url_path(json_string_value(report_field(rec, "url")), buf, sizeof(buf)),
                                   sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->count++;
    json_int_t status = json_integer_value(report_field(rec, "status"));
    if (status <= 0 || status >= 400)
        p->failures++;
    json_t *v;
    if ((v = report_field(rec, "bytes_sent")))
        p->bytes_sent += (double)json_integer_value(v);
    if ((v = report_field(rec, "bytes_received")))
        p->bytes_received += (double)json_integer_value(v);
    if ((v = report_field(rec, "total_ms")))
        return report_samples_add(&p->total, json_number_value(v));
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
        fprintf(out, " %8zu %12.0f %12.0f\n", p->failures, p->bytes_sent, p->bytes_received);
    }
}

static json_t *net_to_json(void *state, const report_options *opt)
{
    net_summary *s = state;
    json_t *arr = json_array();
    if (!arr)
        return NULL;
    net_path **paths = (net_path **)report_index_sorted(&s->paths);
    for (size_t i = 0; i < s->paths.n; i++) {
        net_path *p = paths[i];
        report_samples_sort(&p->total);
        json_t *o = json_pack("{s:s,s:I,s:o,s:o,s:I,s:f,s:f}", "path", p->name, "count", (json_int_t)p->count,
                              "p50_ms", p->total.n ? json_real(report_samples_pct(&p->total, 50)) : json_null(),
                              "p90_ms", p->total.n ? json_real(report_samples_pct(&p->total, 90)) : json_null(),
                              "failures", (json_int_t)p->failures, "bytes_sent", p->bytes_sent, "bytes_received",
                              p->bytes_received);
        if (!o || json_array_append_new(arr, o) < 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

const report_section report_net_section = {
    .type = "net",
    .json_key = "requests",
    .state_new = net_new,
    .state_free = net_free,
    .check = net_check,
    .add = net_add,
    .print_text = net_print_text,
    .to_json = net_to_json,
};
