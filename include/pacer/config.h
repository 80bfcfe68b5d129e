/* pacer page config (DESIGN §4): which pages to measure, their initial APIs,
 * the main page, splash windows and thresholds.
 *
 *   <pacer>
 *     <page id="HomeActivity" tag="1"> <api id="/api/config"/> </page>
 *     <splash id="ShopSplashWindow"/>
 *     <thresholds jank-ms="700" hang-ms="5000" page-deadline-ms="30000"
 *                 slow-request-ms="1000" large-image-bytes="102400" frames-interval-ms="10000"
 *                 leak-grace-ms="5000"/>
 *     <known-leak id="gtk-popover-cache" type="GtkPopoverMenu" page="MyWindow"/>
 *     <upload config-poll-ms="60000" spool-max-kb="65536"/>
 *     <in-app module="libshop"/>
 *   </pacer>
 *
 * The root element is optional: the seed's bare list of <page> elements is
 * accepted as written. A config is immutable once loaded and reference
 * counted, so a page being measured can keep the snapshot it started with
 * while a new config is swapped in.
 */
#ifndef PACER_CONFIG_H
#define PACER_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include <pacer/export.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pacer_config pacer_config;

#define PACER_DEFAULT_JANK_MS 700
#define PACER_DEFAULT_HANG_MS 5000
#define PACER_DEFAULT_PAGE_DEADLINE_MS 30000
#define PACER_DEFAULT_SLOW_REQUEST_MS 1000
#define PACER_DEFAULT_LARGE_IMAGE_BYTES 102400
#define PACER_DEFAULT_FRAMES_INTERVAL_MS 10000
#define PACER_DEFAULT_LEAK_GRACE_MS 5000
#define PACER_DEFAULT_CONFIG_POLL_MS 60000
#define PACER_DEFAULT_SPOOL_MAX_KB 65536

/* Parses a config from memory. On success returns a config with one
 * reference. On failure returns NULL and, when ret_error is not NULL, stores
 * a malloc'd message "LINE:COLUMN: reason" (the caller frees it; NULL when
 * even the message could not be allocated). */
PACER_API pacer_config *pacer_config_parse(const char *xml, size_t len, char **ret_error);

/* Reads and parses a file. Errors read "PATH:LINE:COLUMN: reason", or
 * "PATH: <strerror>" when the file cannot be read. */
PACER_API pacer_config *pacer_config_load(const char *path, char **ret_error);

/* An empty config: no pages, default thresholds. */
PACER_API pacer_config *pacer_config_new_empty(void);

PACER_API pacer_config *pacer_config_ref(pacer_config *cfg);   /* thread-safe; accepts NULL */
PACER_API void pacer_config_unref(pacer_config *cfg);          /* thread-safe; accepts NULL */

/* Pages, in file order. Index functions return NULL / 0 when out of range. */
PACER_API size_t pacer_config_page_count(const pacer_config *cfg);
PACER_API const char *pacer_config_page_id(const pacer_config *cfg, size_t page);
PACER_API bool pacer_config_page_is_main(const pacer_config *cfg, size_t page); /* tag="1" */
PACER_API size_t pacer_config_page_api_count(const pacer_config *cfg, size_t page);
/* The API as written in the file. */
PACER_API const char *pacer_config_page_api(const pacer_config *cfg, size_t page, size_t api);

/* Finds the page configured for a class name. An exact id match anywhere in
 * the config wins; otherwise one side may be a bare name equal to the last
 * dot-separated component of the other (the seed's simple name vs full class
 * path: "MerchantFragment" matches "com.test.MerchantFragment", but
 * "com.a.X" does not match "com.b.X"). Returns the page index or -1.
 * pacer_config_is_splash() matches the same way. */
PACER_API long pacer_config_find_page(const pacer_config *cfg, const char *class_name);

/* Splash windows (class names), in file order. */
PACER_API size_t pacer_config_splash_count(const pacer_config *cfg);
PACER_API const char *pacer_config_splash(const pacer_config *cfg, size_t i);
PACER_API bool pacer_config_is_splash(const pacer_config *cfg, const char *class_name);

/* <in-app module="…"/>: modules whose frames count as the app's own in jank
 * stacks, besides the executable and the libraries of its own install
 * location (docs/agent.md). Each is a module basename prefix ("libshop"
 * matches libshop.so.1), or a path prefix when it starts with '/'. */
PACER_API size_t pacer_config_in_app_count(const pacer_config *cfg);
PACER_API const char *pacer_config_in_app(const pacer_config *cfg, size_t i);

/* Thresholds, in milliseconds (defaults above when not set). */
PACER_API uint32_t pacer_config_jank_ms(const pacer_config *cfg);
PACER_API uint32_t pacer_config_hang_ms(const pacer_config *cfg);
PACER_API uint32_t pacer_config_page_deadline_ms(const pacer_config *cfg);
/* A request at least this long is classified "slow" (net records). */
PACER_API uint32_t pacer_config_slow_request_ms(const pacer_config *cfg);
/* An image response body larger than this is "large_image" (bytes). */
PACER_API uint32_t pacer_config_large_image_bytes(const pacer_config *cfg);
/* How often a window that paints writes a frames record. */
PACER_API uint32_t pacer_config_frames_interval_ms(const pacer_config *cfg);

/* How long after a page is destroyed its objects may still be alive before
 * they are checked (then an idle pass and a second check). */
PACER_API uint32_t pacer_config_leak_grace_ms(const pacer_config *cfg);

/* Known leaks (<known-leak>), in file order: leaks of GTK's or another
 * library's own, reported with origin "library" and not as the app's. Each
 * has an id and either a type (object leaks: a retained object's GType
 * name) or a function (native leaks: a function of the allocation stack);
 * page, when not NULL, limits it to leaks of that page class. */
PACER_API size_t pacer_config_known_leak_count(const pacer_config *cfg);
PACER_API const char *pacer_config_known_leak_id(const pacer_config *cfg, size_t i);
PACER_API const char *pacer_config_known_leak_type(const pacer_config *cfg, size_t i);
PACER_API const char *pacer_config_known_leak_function(const pacer_config *cfg, size_t i);
PACER_API const char *pacer_config_known_leak_page(const pacer_config *cfg, size_t i);

/* Upload settings: how often a running app polls the server for a new
 * config (ms), and the size cap of the on-disk spool (KiB). */
PACER_API uint32_t pacer_config_config_poll_ms(const pacer_config *cfg);
PACER_API uint32_t pacer_config_spool_max_kb(const pacer_config *cfg);

#ifdef __cplusplus
}
#endif

#endif
