/* libFuzzer target for pacerd's application-layer settings parser
 * (src/server/analysis_config.c) and the evidence reader of an issue
 * (src/server/issue_details.c).
 *
 * Properties: any text is accepted, or refused with one line "FILE:LINE:
 * reason" and the settings back at their defaults; every accepted setting
 * is within its documented range; version lists hold no empty name and no
 * repeat. The same bytes read as an issue's details either fail cleanly or
 * write JSON that reads back to the same details. Read as a jank's profile
 * (src/server/profile_frames.c), each line that reads charges a count of
 * 1 to 10^9 to a frame of its own, the leaf its last; the details count
 * no more names than they hold. */
#include "analysis/analysis_config.h"
#include "analysis/issue_details.h"
#include "analysis/profile_frames.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_thresholds(const ana_thresholds *t)
{
    if (!(t->net_error_rate >= 0 && t->net_error_rate <= 1) || !(t->major_share >= 0 && t->major_share <= 1) ||
        !(t->slow_page_total_ms >= 1) || !(t->regression_alpha > 0 && t->regression_alpha <= 0.5) ||
        !(t->regression_min_samples >= 2) || t->regression_min_samples != floor(t->regression_min_samples))
        abort();
    for (size_t i = 0; i < t->n_versions; i++) {
        if (!t->versions[i][0] || strpbrk(t->versions[i], " \t\r\n"))
            abort();
        for (size_t k = 0; k < i; k++)
            if (strcmp(t->versions[i], t->versions[k]) == 0)
                abort();
    }
}

static void details_round_trip(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return;
    memcpy(text, data, size);
    text[size] = 0;
    iss_details d = {0}, back = {0};
    if (issue_details_parse(text, &d) == 0) {
        jbuf b;
        jbuf_init(&b);
        issue_details_json(&d, &b);
        if (b.failed || issue_details_parse(b.data, &back) != 0 || back.n_pages != d.n_pages ||
            back.n_statuses != d.n_statuses || back.n_profile_top != d.n_profile_top ||
            back.n_profile_leaves != d.n_profile_leaves || !back.example != !d.example ||
            (d.example && strcmp(back.example, d.example) != 0))
            abort();
        jbuf_free(&b);
    }
    issue_details_free(&d);
    issue_details_free(&back);
    free(text);
}

static void profile_lines(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return;
    memcpy(text, data, size);
    text[size] = 0;
    static const profile_frames_hint hints[] = {{"app", 3, "/usr/bin/app", true}, {"poll", 4, "libc.so.6", false}};
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        profile_frames_line pl;
        if (profile_frames_read(line, len, hints, 2, &pl)) {
            if (pl.count < 1 || pl.count > 1000000000 || !pl.frame_len || !pl.leaf_len || pl.frame < line ||
                pl.frame + pl.frame_len > pl.leaf + pl.leaf_len || pl.leaf + pl.leaf_len > line + len ||
                memchr(pl.frame, ';', pl.frame_len) || memchr(pl.leaf, ';', pl.leaf_len))
                abort();
        }
        line = end ? end + 1 : line + len;
    }
    iss_details d = {0};
    issue_details_profile(&d, text, hints, 2);
    issue_details_profile(&d, text, NULL, 0);
    if (d.n_profile_top > ISS_MAX_COUNTERS + 1 || d.n_profile_leaves > ISS_MAX_COUNTERS + 1)
        abort();
    for (size_t i = 0; i < d.n_profile_top; i++)
        if (d.profile_top[i].n <= 0)
            abort();
    issue_details_free(&d);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512] = "";
    ana_config c;
    int r = analysis_config_parse((const char *)data, size, "analysis.conf", &c, err, sizeof err);
    if (r == 0) {
        if (!(c.interval_ms >= 10 && c.interval_ms <= 3600000) || !(c.max_clock_skew_s >= 0))
            abort();
        check_thresholds(&c.all);
        for (size_t i = 0; i < c.n_apps; i++) {
            if (!c.apps[i].app[0])
                abort();
            check_thresholds(&c.apps[i].t);
        }
        analysis_config_free(&c);
    } else if (r != -EINVAL || strncmp(err, "analysis.conf:", 14) != 0 || strchr(err, '\n') || c.n_apps) {
        abort();
    }
    details_round_trip(data, size);
    profile_lines(data, size);
    return 0;
}
