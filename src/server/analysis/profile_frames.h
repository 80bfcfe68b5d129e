/* Which frame of a jank's profile its samples are charged to, for the
 * evidence (profile_top) and the tracker's Markdown.
 *
 * A profile line is a folded stack, "f;g;h COUNT", outermost frame first
 * (docs/records.md, jank: profile). Its leaf h is most often where the
 * main thread waited or spent its time inside a system or toolkit library
 * (poll, read, nanosleep, g_main_context_iteration, …), the same for every
 * stall; what the app can change is the innermost frame that is its own.
 * So a line is charged to its innermost frame that is not in a system or
 * toolkit library, and to its leaf when every frame is.
 *
 * A folded frame is a function name (cut at '.' or '@'), MODULE+0xOFFSET
 * when the function has no name, or an address. Where it was comes from,
 * in order:
 *   - the jank's stack (the frames the watchdog first saw, with module and
 *     in_app): a frame named there is the app's when in_app, else in a
 *     system library when its module is one (below);
 *   - its bracketed name ([plt], [vdso], [k]: a linker stub, the vDSO, the
 *     kernel) or bare address: system;
 *   - MODULE+0xOFFSET: its module;
 *   - else its name: the C library's and the toolkits' prefixes and the
 *     C library's blocking and common calls (profile_frames.c's lists).
 * System and toolkit modules: the C library and its loader (libc, libm,
 * libpthread, libdl, librt, ld-linux), the vDSO, the C++ runtime
 * (libstdc++, libgcc_s), GLib (libglib, libgobject, libgio, libgmodule,
 * libgthread), GTK and what draws for it (libgtk, libgdk, libpango,
 * libcairo, libharfbuzz), Qt (libQt*), and pacer's agent.
 */
#ifndef PACER_SERVER_PROFILE_FRAMES_H
#define PACER_SERVER_PROFILE_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A frame of the jank's stack: its function (cut at '.' or '@' as the
 * profile's are; borrowed) with its module (or NULL) and in_app. */
typedef struct profile_frames_hint {
    const char *function;
    size_t len;
    const char *module;
    bool in_app;
} profile_frames_hint;

/* One line of a profile, its parts borrowed from the line. */
typedef struct profile_frames_line {
    int64_t count;             /* its samples, 1 to 10^9 */
    const char *frame, *leaf;  /* the frame it is charged to; the innermost one */
    size_t frame_len, leaf_len;
} profile_frames_line;

/* Reads line (len bytes, no line break) as "f;g;h COUNT" into *ret:
 * false when it does not read so (no count, a count out of range, an
 * empty frame list). */
bool profile_frames_read(const char *line, size_t len, const profile_frames_hint *hints, size_t n_hints,
                         profile_frames_line *ret);

/* Whether the module (a file name, or a path: its last part counts) is
 * a system or toolkit library. */
bool profile_frames_system_module(const char *module, size_t len);

/* Whether a folded frame is in a system or toolkit library, by the hints
 * (the jank's stack) first, else by its form and name. */
bool profile_frames_system(const char *frame, size_t len, const profile_frames_hint *hints, size_t n_hints);

#endif
