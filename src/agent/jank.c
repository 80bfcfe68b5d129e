/* The `jank` record (docs/records.md): one main-loop iteration busy for at
 * least jank_ms, with the stack the watchdog captured while it was stuck.
 * Runs on the watchdog thread only: it may allocate, read ELF and DWARF
 * files and take the pacer instance's lock. The record is built with the
 * core's record API and submitted also at exit (an ongoing iteration).
 *
 * Symbols: libpacer-symbols (src/trace/symbols.h), the trace component's
 * libdw symbolizer: .symtab names (static functions of a PIE included),
 * DWARF file:line, for the executable and every shared library.
 *
 * In-app frames: frames of the executable, or of a library outside the
 * system directories (/lib, /lib64, /usr/lib, /usr/lib64, /usr/libexec);
 * never the agent's own frames.
 *
 * Fingerprint (version 1): FNV-1a 64 over the topmost FP_FRAMES in-app
 * frames — when there are none, the topmost frames of any module — each
 * as "module-basename \n function \n", where the function name is cut at
 * its first '.' or '@' (GCC's .isra.0, .constprop.0, .part.0, .cold clones
 * differ between builds; @@GLIBC_2.17 symbol versions) and consecutive repeats (recursion) count once. No
 * address, offset or line enters it, so it is the same across runs (ASLR)
 * and across builds of the same code.
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

pt_symbols *stack_symbols(void); /* stack.c */

static char exe[4096];
static const char *agent_path;

static bool in_app(const pt_sym *s)
{
    static const char *const system_dirs[] = {"/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/libexec/"};
    if (!s->path || s->path[0] != '/' || strcmp(s->name, "[plt]") == 0) /* a linker stub is no one's code */
        return false;
    if (agent_path && strcmp(s->path, agent_path) == 0)
        return false;
    if (strcmp(s->path, exe) == 0)
        return true;
    for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++)
        if (strncmp(s->path, system_dirs[i], strlen(system_dirs[i])) == 0)
            return false;
    return true;
}

static size_t norm_len(const char *fn)
{
    if (fn[0] == '0' && fn[1] == 'x')
        return 0; /* unknown: an address, which must not enter the hash */
    return strcspn(fn, ".@"); /* clones (.isra.0, .cold) and symbol versions (@@GLIBC_2.17) */
}

/* Hashes the frames `want_in_app` selects; returns the number used. */
static size_t fingerprint(const pt_sym *const *syms, const bool *app, size_t n, bool want_in_app, uint64_t *ret)
{
    uint64_t h = FNV1A64_INIT;
    size_t used = 0, named = 0;
    const char *prev_mod = NULL, *prev_fn = NULL;
    size_t prev_len = 0;
    for (size_t i = 0; i < n && used < FP_FRAMES; i++) {
        if (want_in_app && !app[i])
            continue;
        const char *mod = syms[i]->module ? syms[i]->module : "?";
        size_t len = norm_len(syms[i]->name);
        const char *fn = len ? syms[i]->name : "?";
        if (!len)
            len = 1;
        else
            named++;
        if (prev_fn && len == prev_len && strncmp(fn, prev_fn, len) == 0 && strcmp(mod, prev_mod) == 0)
            continue;
        h = fnv1a64(h, mod, strlen(mod));
        h = fnv1a64(h, "\n", 1);
        h = fnv1a64(h, fn, len);
        h = fnv1a64(h, "\n", 1);
        prev_mod = mod, prev_fn = fn, prev_len = len;
        used++;
    }
    *ret = h;
    return named ? used : 0; /* frames without a single name make no fingerprint */
}

void jank_emit(const loop_span *span, int64_t hang_ns, const stack_trace *st, const char *stack_status,
               const char *stack_method, const char *page, bool ongoing)
{
    if (!exe[0]) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        exe[n > 0 ? n : 0] = '\0';
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
        static const pt_sym unknown = {"?", NULL, 0, NULL, NULL, 0};
        /* Lookups first, copies of nothing: every pointer stays valid until
         * the next refresh, which only stack_symbols() does. */
        for (size_t i = 0; i < st->n; i++) {
            syms[i] = symbols ? pt_symbols_lookup(symbols, st->pc[i]) : &unknown;
            app[i] = in_app(syms[i]);
        }
        uint64_t fp;
        if (fingerprint(syms, app, st->n, true, &fp) || fingerprint(syms, app, st->n, false, &fp)) {
            char hex[17];
            snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)fp);
            pacer_record_set_str(r, PACER_JANK_FINGERPRINT, hex);
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
            pacer_record_set_str(f, PACER_STACK_FUNCTION, s->name);
            if (s->file) {
                pacer_record_set_str(f, PACER_STACK_FILE, s->file);
                pacer_record_set_int(f, PACER_STACK_LINE, s->line);
            }
            pacer_record_set_bool(f, PACER_STACK_IN_APP, app[i]);
        }
    }
    agent_submit_record(r); /* also at exit, after the agent stopped (ongoing) */
}
