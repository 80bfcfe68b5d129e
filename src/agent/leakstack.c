/* Stacks of leak records: frames named for the record, the holder of a
 * reference, native signatures, and known native leaks.
 *
 * Symbols come from libpacer-symbols (.symtab/.dynsym names, DWARF
 * file:line), through a symbolizer of this file's own behind a mutex: the
 * watchdog's is for its thread alone. It is made at the first stack a
 * record shows, so a run without leak stacks never reads DWARF. Only the
 * app's frames get file:line: a system library's are named from its symbol
 * table alone (through the symbolizer's libdwfl session), because its
 * lines would come from separate debug info (libc6-dbg, *-dbgsym), which
 * libdw decompresses whole at the first lookup — some 70 ms for libc here,
 * paid at the app's exit, where native leaks are reported.
 *
 * In-app frames follow the jank records' rule (docs/records.md): the
 * executable, or a library outside the system directories; never the
 * agent. A native signature is the jank fingerprint's algorithm (version
 * 1) over the allocation stack, started from its own seed so the two never
 * collide: FNV-1a 64 of "leak-native\n", then of the topmost 8 in-app
 * frames (all frames when none is in-app) as "module\nfunction\n", the
 * function cut at its first '.' or '@', consecutive repeats once.
 */
#include "leaks.h"

#include <pacer/base/hash.h>
#include <pacer/symbols.h>
#include <pacer/symbols_dw.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIG_FRAMES 8

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pt_symbols *symbols;
static char exe[4096];
static char *agent_file;
static uintptr_t base_agent, base_glib, base_gobject;

/* Lock held. */
static void ensure_symbols(void)
{
    if (!exe[0]) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        exe[n > 0 ? n : 0] = '\0';
        Dl_info info;
        if (dladdr((void *)ensure_symbols, &info) && info.dli_fname)
            agent_file = realpath(info.dli_fname, NULL);
    }
    if (!symbols)
        symbols = pt_symbols_new_live(getpid());
}

static uintptr_t module_base(const void *addr)
{
    Dl_info info;
    return addr && dladdr(addr, &info) ? (uintptr_t)info.dli_fbase : 0;
}

static void ensure_bases(void)
{
    if (base_agent)
        return;
    base_glib = module_base(agent_real(AGENT_LIBGLIB, "g_free"));
    base_gobject = module_base(agent_real(AGENT_LIBGOBJECT, "g_object_unref"));
    base_agent = module_base((void *)ensure_bases);
}

static bool path_in_app(const char *path)
{
    static const char *const system_dirs[] = {"/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/libexec/"};
    if (!path || path[0] != '/')
        return false;
    if (agent_file && strcmp(path, agent_file) == 0)
        return false;
    if (strcmp(path, exe) == 0)
        return true;
    for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++)
        if (strncmp(path, system_dirs[i], strlen(system_dirs[i])) == 0)
            return false;
    return true;
}

static bool sym_in_app(const pt_sym *s)
{
    return path_in_app(s->path) && strcmp(s->name, "[plt]") != 0;
}

static bool path_is_agent(const char *path)
{
    return path && agent_file && strcmp(path, agent_file) == 0;
}

/* A return address's call site: what names the calling line. */
static uint64_t call_site(uint64_t pc)
{
    return pc ? pc - 1 : 0;
}

/* Room for a frame named without the symbolizer's cache. */
typedef struct frame_buf {
    pt_sym sym;
    char hex[24];
} frame_buf;

/* Lock held, symbols made. The symbol of call site pc: NULL for the
 * agent's own code; the symbolizer's (file:line included) for the app's
 * frames and any it cannot place; a system library's from its symbol
 * table only, into *buf (its strings are libdwfl's, valid while the
 * symbolizer lives). */
static const pt_sym *frame_at(uint64_t pc, frame_buf *buf)
{
    Dwfl *d = pt_symbols_dwfl(symbols);
    const pt_dw_api *dw = pt_dw(); /* loaded: the symbolizer was made */
    Dwfl_Module *mod = d ? dw->dwfl_addrmodule(d, (Dwarf_Addr)pc) : NULL;
    Dwarf_Addr start = 0;
    const char *path = mod ? dw->dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL) : NULL;
    if (path_is_agent(path))
        return NULL;
    if (!path || path[0] != '/' || path_in_app(path)) {
        const pt_sym *s = pt_symbols_lookup(symbols, pc);
        return path_is_agent(s->path) ? NULL : s;
    }
    const char *name = dw->dwfl_module_addrname(mod, (GElf_Addr)pc);
    if (!name) {
        snprintf(buf->hex, sizeof(buf->hex), "0x%llx", (unsigned long long)pc);
        name = buf->hex;
    }
    buf->sym = (pt_sym){.name = name, .module = strrchr(path, '/') + 1, .path = path, .offset = pc - start};
    return &buf->sym;
}

size_t leakstack_add(pacer_record *r, unsigned field, uint32_t id)
{
    const uint64_t *pcs;
    size_t n = stackstore_get(id, &pcs);
    if (!n)
        return 0;
    size_t added = 0;
    pthread_mutex_lock(&mu);
    ensure_symbols();
    pacer_record_set_empty(r, field);
    for (size_t i = 0; i < n; i++) {
        uint64_t pc = call_site(pcs[i]);
        static const pt_sym unknown = {.name = "?"};
        frame_buf buf;
        const pt_sym *s = symbols ? frame_at(pc, &buf) : &unknown;
        if (!s)
            continue;
        pacer_record *f = pacer_record_add(r, field);
        if (!f)
            break;
        char hex[24];
        snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)pc);
        pacer_record_set_str(f, PACER_STACK_ADDRESS, hex);
        pacer_record_set_str(f, PACER_STACK_MODULE, s->module);
        if (s->module) {
            snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)s->offset);
            pacer_record_set_str(f, PACER_STACK_OFFSET, hex);
        }
        pacer_record_set_str(f, PACER_STACK_FUNCTION, s->name);
        if (s->file) {
            pacer_record_set_str(f, PACER_STACK_FILE, s->file);
            pacer_record_set_int(f, PACER_STACK_LINE, s->line);
        }
        pacer_record_set_bool(f, PACER_STACK_IN_APP, sym_in_app(s));
        added++;
    }
    pthread_mutex_unlock(&mu);
    return added;
}

bool leakstack_is_agent(uint32_t id)
{
    const uint64_t *pcs;
    size_t n = stackstore_get(id, &pcs);
    pthread_mutex_lock(&mu);
    ensure_bases();
    pthread_mutex_unlock(&mu);
    for (size_t i = 0; i < n; i++) {
        uintptr_t b = module_base((void *)(uintptr_t)call_site(pcs[i]));
        if (b == base_glib || b == base_gobject)
            continue; /* g_malloc, g_object_new: whose call? */
        return b == base_agent;
    }
    return false;
}

uintptr_t leakstack_holder(uint32_t id)
{
    const uint64_t *pcs;
    size_t n = stackstore_get(id, &pcs);
    pthread_mutex_lock(&mu);
    ensure_bases();
    pthread_mutex_unlock(&mu);
    for (size_t i = 0; i < n; i++) {
        uintptr_t b = module_base((void *)(uintptr_t)call_site(pcs[i]));
        if (b && b != base_glib && b != base_gobject && b != base_agent)
            return b;
    }
    return 0;
}

static size_t norm_len(const char *fn)
{
    if (fn[0] == '0' && fn[1] == 'x')
        return 0;
    return strcspn(fn, ".@");
}

/* Lock held: the symbols of the stack's frames, agent frames left out
 * (bufs: room for those named outside the symbolizer's cache). */
static size_t lookup_all(uint32_t id, const pt_sym **syms, bool *app, frame_buf *bufs)
{
    const uint64_t *pcs;
    size_t n = stackstore_get(id, &pcs), k = 0;
    ensure_symbols();
    if (!symbols)
        return 0;
    for (size_t i = 0; i < n && k < STACKSTORE_MAX_FRAMES; i++) {
        const pt_sym *s = frame_at(call_site(pcs[i]), &bufs[k]);
        if (!s)
            continue;
        syms[k] = s;
        app[k] = sym_in_app(s);
        k++;
    }
    return k;
}

bool leakstack_signature(uint32_t id, char hex[17])
{
    const pt_sym *syms[STACKSTORE_MAX_FRAMES];
    bool app[STACKSTORE_MAX_FRAMES];
    frame_buf bufs[STACKSTORE_MAX_FRAMES];
    pthread_mutex_lock(&mu);
    size_t n = lookup_all(id, syms, app, bufs);
    bool any_app = false;
    for (size_t i = 0; i < n; i++)
        any_app |= app[i];
    uint64_t h = fnv1a64(FNV1A64_INIT, "leak-native\n", 12);
    size_t used = 0, named = 0, prev_len = 0;
    const char *prev_fn = NULL, *prev_mod = NULL;
    for (size_t i = 0; i < n && used < SIG_FRAMES; i++) {
        if (any_app && !app[i])
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
    pthread_mutex_unlock(&mu);
    snprintf(hex, 17, "%016llx", (unsigned long long)h);
    return named > 0;
}

bool leakstack_in_app(uint32_t id)
{
    const pt_sym *syms[STACKSTORE_MAX_FRAMES];
    bool app[STACKSTORE_MAX_FRAMES];
    frame_buf bufs[STACKSTORE_MAX_FRAMES];
    pthread_mutex_lock(&mu);
    size_t n = lookup_all(id, syms, app, bufs);
    pthread_mutex_unlock(&mu);
    for (size_t i = 0; i < n; i++)
        if (app[i])
            return true;
    return false;
}

bool leakstack_has_function(uint32_t id, const char *fn)
{
    const pt_sym *syms[STACKSTORE_MAX_FRAMES];
    bool app[STACKSTORE_MAX_FRAMES];
    frame_buf bufs[STACKSTORE_MAX_FRAMES];
    size_t want = strlen(fn);
    bool found = false;
    pthread_mutex_lock(&mu);
    size_t n = lookup_all(id, syms, app, bufs);
    for (size_t i = 0; i < n && !found; i++)
        found = norm_len(syms[i]->name) == want && strncmp(syms[i]->name, fn, want) == 0;
    pthread_mutex_unlock(&mu);
    return found;
}

/* ---- known native leaks ---- */

const char *leaks_known_native(pacer_config *cfg, uint32_t stack)
{
    for (size_t i = 0; i < pacer_config_known_leak_count(cfg); i++) {
        const char *f = pacer_config_known_leak_function(cfg, i);
        if (f && leakstack_has_function(stack, f))
            return pacer_config_known_leak_id(cfg, i);
    }
    return NULL;
}
