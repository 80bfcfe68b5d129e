/* What an issue's evidence is gathered from, over all its versions (the
 * `details` column of the issues table, as JSON):
 *
 *   pages      per page class: occurrences on it (at most ISS_MAX_COUNTERS
 *              names; the rest under "(other)")
 *   statuses   per outcome of a failed request ("500", "transport failure")
 *   levels     frames per Matrix level (best, normal, middle, high, frozen)
 *   bytes      bytes leaked (native leaks), summed
 *   profile_top  jank and hang: the profiles of all occurrences merged,
 *              samples per frame each line is charged to (the innermost
 *              frame not in a system or toolkit library, profile_frames.h)
 *              (at most ISS_MAX_COUNTERS names; the rest under "(other)")
 *   profile_leaves  the same samples of the lines whose leaf is another
 *              frame, per "FRAME → LEAF": where the app's frame waited
 *   example    the representative occurrence (the one with the largest
 *              value: the longest jank, the slowest load …), a JSON object
 *              the detector wrote, and its value
 *
 * The writer (issue_details_json) and the reader (issue_details_parse) are each
 * other's inverse; an unreadable text reads as empty details.
 */
#ifndef PACER_SERVER_ISSUE_DETAILS_H
#define PACER_SERVER_ISSUE_DETAILS_H

#include "profile_frames.h"

#include <pacer/base/json.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ISS_MAX_COUNTERS 16
#define ISS_MAX_NAME 128

typedef struct iss_counter {
    char name[ISS_MAX_NAME];
    int64_t n;
} iss_counter;

typedef struct iss_details {
    iss_counter pages[ISS_MAX_COUNTERS + 1]; /* + "(other)" */
    size_t n_pages;
    iss_counter statuses[ISS_MAX_COUNTERS + 1];
    size_t n_statuses;
    int64_t levels[5];
    double bytes;
    iss_counter profile_top[ISS_MAX_COUNTERS + 1];
    size_t n_profile_top;
    iss_counter profile_leaves[ISS_MAX_COUNTERS + 1];
    size_t n_profile_leaves;
    char *example;        /* JSON object text, or NULL */
    double example_value; /* its value; the largest wins */
} iss_details;

void issue_details_free(iss_details *d);

/* Adds n to name in the list (a new name past the limit goes to "(other)"). */
void issue_details_count(iss_counter *list, size_t *n_list, const char *name, int64_t n);

/* A jank's profile (folded stacks, "f;g;h COUNT" per line) with its
 * stack's frames (hints, profile_frames.h): each line's COUNT added in
 * profile_top to the frame it is charged to, and in profile_leaves to
 * "FRAME → LEAF" when its leaf is another frame. Lines that do not read
 * so are left out. */
void issue_details_profile(iss_details *d, const char *folded, const profile_frames_hint *hints, size_t n_hints);

/* The name of "FRAME → LEAF" into buf (size bytes, cut on a character
 * boundary). */
void issue_details_leaf_key(char *buf, size_t size, const char *frame, size_t frame_len, const char *leaf,
                            size_t leaf_len);

/* Merges src into dst (the example of the larger value wins; it is copied). */
void issue_details_merge(iss_details *dst, const iss_details *src);

/* Replaces the example with a copy of json when value is larger than the
 * one held (or none is). */
void issue_details_example(iss_details *d, const char *json, double value);

/* The details as a JSON object into b. */
void issue_details_json(const iss_details *d, jbuf *b);
/* The same members, into an object b has open. */
void issue_details_members(const iss_details *d, jbuf *b);

/* Reads text (a issue_details_json output, or NULL) into d (emptied first).
 * Returns 0, -EINVAL for text that is not such an object (d empty), or
 * -ENOMEM. */
int issue_details_parse(const char *text, iss_details *d);

#endif
