/* The application layer's settings: thresholds for cleaning, for the issue
 * kinds, for grading, for regressions between versions and for the life
 * cycle (docs/server.md, "Issues"). Every setting has a default; a file
 * (pacerd --analysis-config FILE) changes any of them, for all apps or for
 * one:
 *
 *     # a comment
 *     slow-page-total-ms = 3000
 *     [app shop]
 *     version-order = 1.0 1.1 2.0
 *     slow-page-total-ms = 2000
 *
 * Lines are `name = value`; a section `[app NAME]` holds the settings of
 * one app (the app settings only: the server's are given before any
 * section). Numbers are decimal (a fraction where the setting takes one).
 * An error names the line and the setting: "analysis.conf:3:
 * slow-page-total-ms: expected a number from 1 to 86400000".
 *
 * Immutable once loaded; any thread may read it.
 */
#ifndef PACER_SERVER_ANALYSIS_CONFIG_H
#define PACER_SERVER_ANALYSIS_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define ANA_MAX_VERSIONS 256 /* in one version-order */
#define ANA_MAX_APPS 1024    /* sections */

/* What one app's issues are judged by. */
typedef struct ana_thresholds {
    double slow_page_total_ms;   /* slow_page: p90 of total_ms at or above */
    double slow_page_initial_ms; /* … or p90 of initial_draw_ms */
    double slow_cold_ms;         /* slow_startup: p90 of cold_ms (Google Play vitals: 5 s) */
    double slow_warm_ms;         /* … of warm_ms (2 s) */
    double slow_request_ms;      /* slow_request: p90 of a pattern's total_ms */
    double large_image_bytes;    /* large_image: an image body (image/...) larger */
    double large_payload_bytes;  /* large_payload: another body larger */
    double net_error_rate;       /* net_error: share of a pattern's requests that failed */
    double net_error_min;        /* … and at least this many failed */
    double n_plus_one_count;     /* n_plus_one: one pattern requested this often in one page load */
    double serial_count;         /* serial_requests: this many requests one after another … */
    double serial_min_ms;        /* … each at least this long */
    double frozen_frames_min;    /* frozen_frames: frozen frames in a version */
    double percentile_min_samples; /* the p90 kinds: values a version needs before its p90 counts */
    double critical_ms;          /* grading: time lost per session of the version */
    double major_ms;
    double major_share;          /* … or the share of the version's sessions affected */
    double regression_min_samples;
    double regression_min_percent;
    double regression_min_ms;
    double regression_alpha;     /* family-wise level (Holm) of one pair of versions */
    double resolve_versions;     /* resolved: not seen in this many later versions … */
    double resolve_sessions;     /* … each with at least this many sessions */
    double resolve_days;         /* or not seen for this many days while the app sent data */
    size_t n_versions;           /* version-order: the versions in order (0: first-seen order) */
    char **versions;
} ana_thresholds;

typedef struct ana_app {
    char *app;
    ana_thresholds t;
} ana_app;

typedef struct ana_config {
    /* the server's own */
    double interval_ms;      /* between analysis cycles */
    double max_duration_ms;  /* cleaning: a duration longer is impossible */
    double max_clock_skew_s; /* cleaning: a timestamp later than now + this */
    double dedupe_records;   /* duplicates are recognised among the newest this many records */
    double webhook_attempts; /* deliveries tried at most this often */
    double cycle_records;    /* records read per source and cycle */
    ana_thresholds all;      /* every app's, unless its section says otherwise */
    size_t n_apps;
    ana_app *apps;
} ana_config;

/* The defaults (no allocation). */
void analysis_config_defaults(ana_config *c);

/* Parses a file's text (len bytes, need not be NUL-terminated) into *c,
 * which it first sets to the defaults. name is how messages call the file.
 * 0, or -EINVAL with "NAME:LINE: reason" in err (c is then freed and back
 * to the defaults), or -ENOMEM. */
int analysis_config_parse(const char *text, size_t len, const char *name, ana_config *c, char *err, size_t err_size);

/* Reads and parses a file (at most 1 MiB). 0, or negative errno with the
 * reason in err. */
int analysis_config_load(const char *path, ana_config *c, char *err, size_t err_size);

void analysis_config_free(ana_config *c);

/* The thresholds of app: its section's, else the server-wide ones. */
const ana_thresholds *analysis_config_app(const ana_config *c, const char *app);

/* A version's place among the app's: its index in version-order when
 * listed, else after all of those, by seq (first-seen order). */
int64_t analysis_config_version_rank(const ana_thresholds *t, const char *version, int64_t seq);

#endif
