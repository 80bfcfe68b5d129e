/* The `jank` record (docs/records.md): one main-loop iteration busy for at
 * least jank_ms, with the stack the watchdog captured while it was stuck.
 * Runs on the watchdog thread only: it may allocate, read ELF and DWARF
 * files and take the pacer instance's lock. The record is built with the
 * core's record API and submitted also at exit (an ongoing iteration).
 *
 * Symbols: libpacer-symbols (pacer/symbols.h), the symbols component
 * libdw symbolizer: .symtab names (static functions of a PIE included),
 * DWARF file:line, for the executable and every shared library.
 *
 * In-app frames: frames of the app's own code —
 *   - the executable;
 *   - a library outside the system directories (/lib, /lib64, /usr/lib,
 *     /usr/lib64, /usr/libexec): an app under /opt or /usr/local, or one
 *     run from its build tree, with its libraries;
 *   - a library of the app's own package directory: a path with a
 *     directory named like the executable (/usr/lib/x86_64-linux-gnu/
 *     gnome-maps/libgnome-maps.so for /usr/bin/gnome-maps), or a basename
 *     "lib<executable>" (libgimp… for gimp);
 *   - a module the config names (<in-app module="…"/>: a basename prefix,
 *     or a path prefix);
 * never the agent's own frames, never a linker stub.
 *
 * Fingerprint (version 2, PACER_JANK_FP_VERSION): FNV-1a 64 over frames
 * taken from the top of the stack, each hashed as "module-basename \n
 * function \n". A frame is identified by its function name cut at its first
 * '.' or '@' (GCC's .isra.0, .constprop.0, .part.0, .cold clones differ
 * between builds; @@GLIBC_2.17 symbol versions); in a stripped file, which
 * names few functions, by the offset of its function's first byte from the
 * call-frame information ("+0x1a40"), the same in every run of that build.
 * A frame identified neither way is left out. Taken: the topmost FP_FRAMES
 * identified in-app frames; when fewer than two exist (a stall inside a
 * library, called from the main loop), also the topmost FP_LIB_FRAMES
 * identified frames of other modules, in stack order. Consecutive repeats
 * (recursion) count once. No address, call-site offset or line enters it:
 * the same stall gives the same fingerprint across runs (ASLR), and, for
 * named frames, across builds of the same code.
 */
#include "agent.h"

#include <pacer/base/hash.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pacer/symbols.h>

#define FP_FRAMES 8
#define FP_LIB_FRAMES 4
#define PACER_JANK_FP_VERSION 2

pt_symbols *stack_symbols(void); /* stack.c */

static char exe[4096];
static const char *exe_base;
static const char *agent_path;

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* A directory of `path` named `name`. */
static bool has_dir(const char *path, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strchr(path, '/'); p; p = strchr(p + 1, '/'))
        if (strncmp(p + 1, name, n) == 0 && p[1 + n] == '/')
            return true;
    return false;
}

static bool configured_in_app(const pt_sym *s, const pacer_config *cfg)
{
    for (size_t i = 0; i < pacer_config_in_app_count(cfg); i++) {
        const char *m = pacer_config_in_app(cfg, i);
        if (m[0] == '/' ? has_prefix(s->path, m) : s->module && has_prefix(s->module, m))
            return true;
    }
    return false;
}

static bool in_app(const pt_sym *s, const pacer_config *cfg)
{
    static const char *const system_dirs[] = {"/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/libexec/"};
    if (!s->path || s->path[0] != '/' || strcmp(s->name, "[plt]") == 0) /* a linker stub is no one's code */
        return false;
    if (agent_path && strcmp(s->path, agent_path) == 0)
        return false;
    if (strcmp(s->path, exe) == 0 || configured_in_app(s, cfg))
        return true;
    if (exe_base && *exe_base) {
        char lib[300];
        snprintf(lib, sizeof(lib), "lib%s", exe_base);
        if (has_dir(s->path, exe_base) || (s->module && has_prefix(s->module, lib)))
            return true;
    }
    for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++)
        if (has_prefix(s->path, system_dirs[i]))
            return false;
    return true;
}

/* The frame's identity in the fingerprint: its function name cut at the
 * first '.' or '@', else "+0x<function offset>"; false when it has neither. */
static bool frame_key(const pt_sym *s, char *buf, size_t size, const char **ret, size_t *ret_len)
{
    const char *fn = s->name;
    if (!(fn[0] == '0' && fn[1] == 'x') && strcmp(fn, "?") != 0) {
        *ret = fn;
        *ret_len = strcspn(fn, ".@"); /* clones (.isra.0, .cold) and symbol versions (@@GLIBC_2.17) */
        return *ret_len > 0;
    }
    if (!s->module || !s->func_offset)
        return false;
    int n = snprintf(buf, size, "+0x%llx", (unsigned long long)s->func_offset);
    *ret = buf;
    *ret_len = (size_t)n;
    return true;
}

/* The fingerprint over the frames chosen as the header says; false when no
 * frame is identified. */
static bool fingerprint(const pt_sym *const *syms, const bool *app, size_t n, uint64_t *ret)
{
    char bufs[STACK_MAX_FRAMES][24];
    const char *keys[STACK_MAX_FRAMES];
    size_t lens[STACK_MAX_FRAMES];
    size_t n_app = 0;
    for (size_t i = 0; i < n; i++) {
        if (!frame_key(syms[i], bufs[i], sizeof(bufs[i]), &keys[i], &lens[i]))
            keys[i] = NULL;
        else if (app[i])
            n_app++;
    }
    bool join_libs = n_app < 2;
    uint64_t h = FNV1A64_INIT;
    size_t used_app = 0, used_lib = 0, used = 0;
    const char *prev_mod = NULL, *prev_fn = NULL;
    size_t prev_len = 0;
    for (size_t i = 0; i < n; i++) {
        if (!keys[i])
            continue;
        if (app[i] ? used_app >= FP_FRAMES : (!join_libs || used_lib >= FP_LIB_FRAMES))
            continue;
        const char *mod = syms[i]->module ? syms[i]->module : "?";
        if (prev_fn && lens[i] == prev_len && strncmp(keys[i], prev_fn, prev_len) == 0 && strcmp(mod, prev_mod) == 0)
            continue;
        h = fnv1a64(h, mod, strlen(mod));
        h = fnv1a64(h, "\n", 1);
        h = fnv1a64(h, keys[i], lens[i]);
        h = fnv1a64(h, "\n", 1);
        prev_mod = mod, prev_fn = keys[i], prev_len = lens[i];
        *(app[i] ? &used_app : &used_lib) += 1;
        used++;
    }
    *ret = h;
    return used > 0;
}

void jank_emit(const loop_span *span, int64_t hang_ns, const stack_trace *st, const char *stack_status,
               const char *stack_method, const char *page, bool ongoing)
{
    if (!exe[0]) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        exe[n > 0 ? n : 0] = '\0';
        exe_base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
        Dl_info info;
        if (dladdr((void *)jank_emit, &info) && info.dli_fname)
            agent_path = realpath(info.dli_fname, NULL);
    }
    pacer_record *r = pacer_record_new(PACER_RECORD_JANK);
    if (!r)
        return;
    int64_t dur = span->end - span->start;
    pacer_record_set_str(r, PACER_JANK_KIND, dur >= hang_ns ? "hang" : "jank");
    pacer_record_set_ms(r, PACER_JANK_DURATION_MS, dur);
    if (ongoing)
        pacer_record_set_bool(r, PACER_JANK_ONGOING, true);
    pacer_record_set_str(r, PACER_JANK_PAGE, page);
    pacer_record_set_str(r, PACER_JANK_STACK_STATUS, stack_status);
    pacer_record_set_str(r, PACER_JANK_STACK_METHOD, stack_method);

    if (st && st->n) {
        pt_symbols *symbols = stack_symbols();
        const pt_sym *syms[STACK_MAX_FRAMES];
        bool app[STACK_MAX_FRAMES];
        static const pt_sym unknown = {.name = "?"};
        /* Lookups first, copies of nothing: every pointer stays valid until
         * the next refresh, which only stack_symbols() does. */
        pacer_config *cfg = agent_config();
        for (size_t i = 0; i < st->n; i++) {
            syms[i] = symbols ? pt_symbols_lookup(symbols, st->pc[i]) : &unknown;
            app[i] = in_app(syms[i], cfg);
        }
        pacer_config_unref(cfg);
        uint64_t fp;
        if (fingerprint(syms, app, st->n, &fp)) {
            char hex[17];
            snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)fp);
            pacer_record_set_str(r, PACER_JANK_FINGERPRINT, hex);
            pacer_record_set_int(r, PACER_JANK_FINGERPRINT_VERSION, PACER_JANK_FP_VERSION);
        }
        if (st->truncated)
            pacer_record_set_bool(r, PACER_JANK_STACK_TRUNCATED, true);
        pacer_record_set_empty(r, PACER_JANK_STACK);
        for (size_t i = 0; i < st->n; i++) {
            const pt_sym *s = syms[i];
            pacer_record *f = pacer_record_add(r, PACER_JANK_STACK);
            if (!f)
                break;
            char hex[24];
            snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)st->pc[i]);
            pacer_record_set_str(f, PACER_STACK_ADDRESS, hex);
            pacer_record_set_str(f, PACER_STACK_MODULE, s->module); /* NULL: null */
            if (s->module) {
                snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)s->offset);
                pacer_record_set_str(f, PACER_STACK_OFFSET, hex);
            }
            char *readable = agent_demangle(s->name); /* C++ */
            pacer_record_set_str(f, PACER_STACK_FUNCTION, readable ? readable : s->name);
            free(readable);
            if (s->file) {
                pacer_record_set_str(f, PACER_STACK_FILE, s->file);
                pacer_record_set_int(f, PACER_STACK_LINE, s->line);
            }
            pacer_record_set_bool(f, PACER_STACK_IN_APP, app[i]);
        }
    }
    profile_attach(r, span->start);
    agent_submit_record(r); /* also at exit, after the agent stopped (ongoing) */
}
