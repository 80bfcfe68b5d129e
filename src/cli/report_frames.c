/* pacer report: the frames section (records of type "frames", DESIGN §3.3).
 *
 * Per window class, the sums over its records (each covers the frames since
 * the window's previous record): frames, slow, frozen, dropped frames,
 * frame delay, the frames per Matrix level (the fields of the levels
 * object); the longest frame; the refresh interval of the last record; slow
 * and frozen as a share of the frames.
 */
#include "report.h"
#include "report_fields.h"
#include "report_index.h"
#include "report_stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The counters summed per window, in the order of the JSON members. */
static const unsigned counters[] = {PACER_FRAMES_FRAMES, PACER_FRAMES_SLOW, PACER_FRAMES_FROZEN,
                                    PACER_FRAMES_DROPPED_FRAMES};
#define N_COUNTERS (sizeof(counters) / sizeof(counters[0]))
enum { C_FRAMES, C_SLOW, C_FROZEN, C_DROPPED }; /* indexes into counters */

typedef struct frames_window {
    char *name; /* the window class; first member, see report_index.h */
    size_t records;
    int64_t count[N_COUNTERS];
    int64_t level[PACER_LEVEL_N_FIELDS]; /* by PACER_LEVEL_* */
    double delay, max_frame, refresh; /* ms */
} frames_window;

typedef struct frames_summary {
    report_index windows;
} frames_summary;

static const char *field_name(unsigned field)
{
    return report_field_name(PACER_RECORD_FRAMES, field);
}

static const pacer_shape *levels_shape(void)
{
    return report_shape(PACER_RECORD_FRAMES)->fields[PACER_FRAMES_LEVELS].shape;
}

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

static int frames_add(void *state, const pacer_record *rec, const report_options *opt)
{
    frames_summary *s = state;
    frames_window *w = report_index_get(&s->windows, pacer_record_str(rec, PACER_FRAMES_WINDOW), sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->records++;
    /* An absent counter, level or time reads as 0. */
    for (size_t i = 0; i < N_COUNTERS; i++)
        w->count[i] += pacer_record_int(rec, counters[i]);
    const pacer_record *lv = pacer_record_child(rec, PACER_FRAMES_LEVELS);
    for (unsigned k = 0; lv && k < PACER_LEVEL_N_FIELDS; k++)
        w->level[k] += pacer_record_int(lv, k);
    w->delay += pacer_record_ms(rec, PACER_FRAMES_DELAY_MS);
    if (pacer_record_ms(rec, PACER_FRAMES_MAX_FRAME_MS) > w->max_frame)
        w->max_frame = pacer_record_ms(rec, PACER_FRAMES_MAX_FRAME_MS);
    if (pacer_record_has(rec, PACER_FRAMES_REFRESH_MS))
        w->refresh = pacer_record_ms(rec, PACER_FRAMES_REFRESH_MS);
    return 0;
}

static double share(int64_t part, int64_t whole)
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
                (long long)x->count[C_FRAMES], (long long)x->count[C_SLOW], share(x->count[C_SLOW], x->count[C_FRAMES]),
                (long long)x->count[C_FROZEN], share(x->count[C_FROZEN], x->count[C_FRAMES]),
                (long long)x->count[C_DROPPED], x->delay, x->max_frame, x->refresh);
        fprintf(out, "  %-24s levels:", "");
        for (size_t k = 0; k < PACER_LEVEL_N_FIELDS; k++)
            fprintf(out, " %s %lld", levels_shape()->fields[k].name, (long long)x->level[k]);
        fprintf(out, "\n");
    }
}

static void frames_to_json(void *state, jbuf *out, const report_options *opt)
{
    frames_summary *s = state;
    jbuf_open(out, '[');
    frames_window **w = (frames_window **)report_index_sorted(&s->windows);
    for (size_t i = 0; i < s->windows.n; i++) {
        frames_window *x = w[i];
        jbuf_open(out, '{');
        jbuf_kv_str(out, field_name(PACER_FRAMES_WINDOW), x->name);
        jbuf_kv_u64(out, "records", x->records);
        for (size_t k = 0; k < N_COUNTERS; k++)
            jbuf_kv_i64(out, field_name(counters[k]), x->count[k]);
        report_json_number(out, field_name(PACER_FRAMES_DELAY_MS), x->delay);
        report_json_number(out, field_name(PACER_FRAMES_MAX_FRAME_MS), x->max_frame);
        report_json_number(out, field_name(PACER_FRAMES_REFRESH_MS), x->refresh);
        jbuf_key(out, field_name(PACER_FRAMES_LEVELS));
        jbuf_open(out, '{');
        for (size_t k = 0; k < PACER_LEVEL_N_FIELDS; k++)
            jbuf_kv_i64(out, levels_shape()->fields[k].name, x->level[k]);
        jbuf_close(out, '}');
        jbuf_close(out, '}');
    }
    jbuf_close(out, ']');
}

const report_section report_frames_section = {
    .type = PACER_RECORD_FRAMES,
    .json_key = "frames",
    .state_new = frames_new,
    .state_free = frames_free,
    .add = frames_add,
    .print_text = frames_print_text,
    .to_json = frames_to_json,
};
