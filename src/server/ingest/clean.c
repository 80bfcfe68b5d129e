/* Cleaning rules (clean.h). */
#include "clean.h"

#include <math.h>

#define EARLIEST_NS (946684800LL * 1000000000LL) /* 2000-01-01T00:00:00Z */
#define TOLERANCE_MS 1.0

const char *clean_reason_name(enum clean_reason r)
{
    static const char *const names[CLEAN_COUNT] = {
        [CLEAN_OK] = "",
        [CLEAN_NEGATIVE] = "negative_duration",
        [CLEAN_NON_FINITE] = "non_finite",
        [CLEAN_OVER_A_DAY] = "over_a_day",
        [CLEAN_CLOCK_SKEW] = "clock_skew",
        [CLEAN_PHASE_ORDER] = "phase_order",
        [CLEAN_DUPLICATE] = "duplicate",
        [CLEAN_OUTLIER] = "startup_outlier",
    };
    return r >= 0 && r < CLEAN_COUNT ? names[r] : "";
}

enum clean_reason clean_duration(const clean_limits *l, double ms)
{
    if (isnan(ms) || isinf(ms))
        return CLEAN_NON_FINITE;
    if (ms < 0)
        return CLEAN_NEGATIVE;
    if (ms > l->max_duration_ms)
        return CLEAN_OVER_A_DAY;
    return CLEAN_OK;
}

enum clean_reason clean_time(const clean_limits *l, int64_t ts_ns, int64_t now_ns)
{
    if (ts_ns < EARLIEST_NS || (now_ns <= INT64_MAX - l->max_skew_ns && ts_ns > now_ns + l->max_skew_ns))
        return CLEAN_CLOCK_SKEW;
    return CLEAN_OK;
}

/* a ≤ b, when both are there */
static bool before(double a, double b)
{
    return isnan(a) || isnan(b) || a <= b + TOLERANCE_MS;
}

enum clean_reason clean_page(double initial_draw_ms, double final_draw_ms, double total_ms)
{
    return before(initial_draw_ms, total_ms) && before(final_draw_ms, total_ms) ? CLEAN_OK : CLEAN_PHASE_ORDER;
}

enum clean_reason clean_startup(double first_screen_ms, double cold_ms, double full_display_ms)
{
    return before(first_screen_ms, cold_ms) && before(cold_ms, full_display_ms) ? CLEAN_OK : CLEAN_PHASE_ORDER;
}
