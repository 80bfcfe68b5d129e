/* pacer report: the frames section (records of type "frames", DESIGN §3.3).
 *
 * Per window class, the sums over its records (each covers the frames since
 * the window's previous record): frames, slow, frozen, dropped frames,
 * frame delay, the frames per Matrix level; the longest frame; the refresh
 * interval of the last record; slow and frozen as a share of the frames.
 */
#include "report.h"
#include "report_fields.h"
#include "report_index.h"
#include "report_stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const counters[] = {"frames", "slow", "frozen", "dropped_frames"};
#define N_COUNTERS 4
static const char *const levels[] = {"best", "normal", "middle", "high", "frozen"};
#define N_LEVELS 5

typedef struct frames_window {
    char *name; /* the window class; first member, see report_index.h */
    size_t records;
    json_int_t count[N_COUNTERS], level[N_LEVELS];
    double delay_ms, max_frame_ms, refresh_ms;
} frames_window;

typedef struct frames_summary {
    report_index windows;
} frames_summary;

static void *frames_new(void)
{
    return calloc(1, sizeof(frames_summary));
}

static void frames_free(void *state)
{
    frames_summary *s = state;
    if (!s)
        return;
    report_index_release(&s->windows, NULL);
    free(s);
}

static int frames_check(json_t *rec, char *reason)
{
    int r;
    if ((r = report_check_string(rec, "window", 1, reason)) < 0 ||
        (r = report_check_object(rec, "levels", 0, reason)) < 0)
        return r;
    for (size_t i = 0; i < N_COUNTERS; i++)
        if ((r = report_check_integer(rec, counters[i], i == 0, reason)) < 0)
            return r;
    static const char *const ms[] = {"delay_ms", "max_frame_ms", "refresh_ms"};
    for (size_t i = 0; i < 3; i++)
        if ((r = report_check_ms(rec, ms[i], reason)) < 0)
            return r;
    json_t *lv = report_field(rec, "levels");
    for (size_t i = 0; lv && i < N_LEVELS; i++)
        if ((r = report_check_integer(lv, levels[i], 0, reason)) < 0)
            return r;
    return 0;
}

static double num(json_t *rec, const char *key)
{
    json_t *v = report_field(rec, key);
    return v ? json_number_value(v) : 0;
}

static int frames_add(void *state, json_t *rec, const report_options *opt)
{
    frames_summary *s = state;
    frames_window *w = report_index_get(&s->windows, json_string_value(report_field(rec, "window")), sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->records++;
    for (size_t i = 0; i < N_COUNTERS; i++) {
        json_t *v = report_field(rec, counters[i]);
        w->count[i] += v ? json_integer_value(v) : 0;
    }
    json_t *lv = report_field(rec, "levels");
    for (size_t i = 0; lv && i < N_LEVELS; i++) {
        json_t *v = report_field(lv, levels[i]);
        w->level[i] += v ? json_integer_value(v) : 0;
    }
    w->delay_ms += num(rec, "delay_ms");
    if (num(rec, "max_frame_ms") > w->max_frame_ms)
        w->max_frame_ms = num(rec, "max_frame_ms");
    if (report_field(rec, "refresh_ms"))
        w->refresh_ms = num(rec, "refresh_ms");
    return 0;
}

static double share(json_int_t part, json_int_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0;
}

static void frames_print_text(void *state, FILE *out, const report_options *opt)
{
    frames_summary *s = state;
    fprintf(out, "Frames, by window\n");
    if (s->windows.n == 0) {
        fprintf(out, "  no frames records\n");
        return;
    }
    frames_window **w = (frames_window **)report_index_sorted(&s->windows);
    fprintf(out, "  %-24s %8s %7s %6s %7s %6s %8s %10s %9s %8s\n", "window", "frames", "slow", "%", "frozen", "%",
            "dropped", "delay ms", "max ms", "refresh");
    for (size_t i = 0; i < s->windows.n; i++) {
        frames_window *x = w[i];
        fprintf(out, "  %-24s %8lld %7lld %6.1f %7lld %6.1f %8lld %10.1f %9.1f %8.2f\n", x->name,
                (long long)x->count[0], (long long)x->count[1], share(x->count[1], x->count[0]),
                (long long)x->count[2], share(x->count[2], x->count[0]), (long long)x->count[3], x->delay_ms,
                x->max_frame_ms, x->refresh_ms);
        fprintf(out, "  %-24s levels:", "");
        for (size_t k = 0; k < N_LEVELS; k++)
            fprintf(out, " %s %lld", levels[k], (long long)x->level[k]);
        fprintf(out, "\n");
    }
}

static json_t *frames_to_json(void *state, const report_options *opt)
{
    frames_summary *s = state;
    json_t *arr = json_array();
    if (!arr)
        return NULL;
    frames_window **w = (frames_window **)report_index_sorted(&s->windows);
    for (size_t i = 0; i < s->windows.n; i++) {
        frames_window *x = w[i];
        json_t *lv = json_object();
        for (size_t k = 0; lv && k < N_LEVELS; k++)
            if (json_object_set_new(lv, levels[k], json_integer(x->level[k])) < 0) {
                json_decref(lv);
                lv = NULL;
            }
        json_t *o = lv ? json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:o}", "window", x->name, "records",
                                   (json_int_t)x->records, "frames", x->count[0], "slow", x->count[1], "frozen",
                                   x->count[2], "dropped_frames", x->count[3], "delay_ms", x->delay_ms,
                                   "max_frame_ms", x->max_frame_ms, "refresh_ms", x->refresh_ms, "levels", lv)
                       : NULL;
        if (!o || json_array_append_new(arr, o) < 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

const report_section report_frames_section = {
    .type = "frames",
    .json_key = "frames",
    .state_new = frames_new,
    .state_free = frames_free,
    .check = frames_check,
    .add = frames_add,
    .print_text = frames_print_text,
    .to_json = frames_to_json,
};
