/* Cleaning on ingest (docs/server.md, "Cleaning"): what keeps a pacer
 * record out of the statistics, by reason.
 *
 * Only pacer's records are cleaned (spans, log records and data points
 * carrying pacer's types): plain OpenTelemetry data is stored as sent.
 *
 *   negative_duration  a duration (a schema field of unit ms) below 0
 *   non_finite         a duration that is NaN or infinite
 *   over_a_day         a duration over max-duration-ms (a day)
 *   clock_skew         a timestamp later than the server's clock plus
 *                      max-clock-skew-s, or before 2000-01-01
 *   phase_order        a page whose phases are out of order (its initial
 *                      or final draw longer than its total), a cold start
 *                      whose phases are (first screen after the main
 *                      frame, the main frame after full display)
 * Those records are not stored: ingest counts them as rejected in
 * partialSuccess, naming the reason, and hands them to the store as
 * tallies (store.h, store_tally), which it counts by reason.
 *
 *   duplicate          a record already stored (the same record id: a
 *                      span's trace and span id; a log record's or data
 *                      point's app, session, time, type or name and
 *                      content) sent again without X-Pacer-Batch-Id — a
 *                      batch resent by an SDK that sends no batch ids:
 *                      stored once, counted here (dedupe.h decides,
 *                      before the batch is submitted); a batch with an
 *                      id is stored once by its id
 *   startup_outlier    a start-up the SDK flagged as an outlier (Matrix's
 *                      rule): stored and counted, its times left out of
 *                      the percentiles
 */
#ifndef PACER_SERVER_CLEAN_H
#define PACER_SERVER_CLEAN_H

#include <stdbool.h>
#include <stdint.h>

enum clean_reason {
    CLEAN_OK = 0,
    CLEAN_NEGATIVE,
    CLEAN_NON_FINITE,
    CLEAN_OVER_A_DAY,
    CLEAN_CLOCK_SKEW,
    CLEAN_PHASE_ORDER,
    CLEAN_DUPLICATE,
    CLEAN_OUTLIER,
    CLEAN_COUNT
};

/* "negative_duration", …; "" for CLEAN_OK. */
const char *clean_reason_name(enum clean_reason r);

typedef struct clean_limits {
    double max_duration_ms;
    int64_t max_skew_ns;
} clean_limits;

/* A duration in ms: CLEAN_OK, CLEAN_NEGATIVE, CLEAN_NON_FINITE or
 * CLEAN_OVER_A_DAY. */
enum clean_reason clean_duration(const clean_limits *l, double ms);

/* A record's wall-clock time (unix ns) against now_ns. */
enum clean_reason clean_time(const clean_limits *l, int64_t ts_ns, int64_t now_ns);

/* A page's phases (NAN: absent): the initial and the final draw are parts
 * of the total. A small tolerance (1 ms) covers the rounding of values
 * sent with 3 decimals. */
enum clean_reason clean_page(double initial_draw_ms, double final_draw_ms, double total_ms);

/* A cold start's phases (NAN: absent): first screen ≤ cold ≤ full display. */
enum clean_reason clean_startup(double first_screen_ms, double cold_ms, double full_display_ms);

#endif
