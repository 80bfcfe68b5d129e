/* Addresses -> symbols (symbols.h): at export time for traces (never in the
 * traced process), and on the agent's watchdog thread for stacks of a
 * stuck main thread (never on the thread being measured).
 *
 * The traced process's /proc/self/maps (NAME.maps) says which ELF file was
 * mapped where; libdwfl turns that into modules with their load bias (PIE
 * executables and shared libraries alike), then gives the function name
 * from the symbol table and file:line from DWARF where the module has debug
 * info (or separate debug info under /usr/lib/debug). Files are opened
 * lazily, on the first address that falls in them. Results are cached per
 * address, so a trace of millions of calls does a few hundred lookups.
 *
 * libdw is loaded when the first symbolizer is made (symbols_dw.h); without
 * it, every address stays numeric.
 */
#include <pacer/symbols.h>
#include <pacer/symbols_dw.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Entries are allocated one by one: callers keep pt_sym pointers while the
 * table grows. */
struct entry {
    uint64_t addr;
    pt_sym sym;
};

struct pt_symbols {
    Dwfl *dwfl;
    pid_t pid; /* live process (pt_symbols_new_live), or 0 */
    struct entry **tab;
    size_t cap, n;
};

static char *debuginfo_path;
static const pt_dw_api *dw; /* set once (load_dw), before any session exists */
static Dwfl_Callbacks callbacks = {.debuginfo_path = &debuginfo_path};

/* Separate debug info for a live process, found locally only: by build id
 * under /usr/lib/debug/.build-id/. dwfl_standard_find_debuginfo would also
 * ask debuginfod servers (DEBUGINFOD_URLS, set system-wide on Debian):
 * network requests, libcurl initialised behind the application's back —
 * never inside someone else's process. */
static int find_debuginfo_local(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                                const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                                char **debuginfo_file_name)
{
    const unsigned char *id;
    GElf_Addr vaddr;
    int n = dw->dwfl_module_build_id(mod, &id, &vaddr);
    if (n < 2 || n > 64)
        return -1;
    char path[64 + 2 * 64];
    int len = snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%02x/", id[0]);
    for (int i = 1; i < n; i++)
        len += snprintf(path + len, sizeof path - (size_t)len, "%02x", id[i]);
    snprintf(path + len, sizeof path - (size_t)len, ".debug");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0)
        *debuginfo_file_name = strdup(path);
    return fd;
}

static Dwfl_Callbacks live_callbacks = {.find_debuginfo = find_debuginfo_local, .debuginfo_path = &debuginfo_path};

static void load_dw_once(void)
{
    dw = pt_dw();
    if (dw) {
        callbacks.find_elf = dw->dwfl_linux_proc_find_elf;
        callbacks.find_debuginfo = dw->dwfl_standard_find_debuginfo;
        live_callbacks.find_elf = dw->dwfl_linux_proc_find_elf;
    }
}

/* libdw's functions, or NULL when it cannot be loaded. Any thread. */
static const pt_dw_api *load_dw(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, load_dw_once);
    return dw;
}

static pt_symbols *alloc_symbols(void)
{
    pt_symbols *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cap = 256;
    s->tab = calloc(s->cap, sizeof *s->tab);
    if (!s->tab) {
        free(s);
        return NULL;
    }
    return s;
}

pt_symbols *pt_symbols_new_live(pid_t pid)
{
    pt_symbols *s = alloc_symbols();
    if (!s)
        return NULL;
    s->pid = pid;
    pt_symbols_refresh(s);
    return s;
}

pt_symbols *pt_symbols_new(const char *maps_path)
{
    pt_symbols *s = alloc_symbols();
    if (!s)
        return NULL;
    FILE *f = maps_path && load_dw() ? fopen(maps_path, "r") : NULL;
    if (f) {
        s->dwfl = dw->dwfl_begin(&callbacks);
        if (s->dwfl) {
            dw->dwfl_report_begin(s->dwfl);
            int rc = dw->dwfl_linux_proc_maps_report(s->dwfl, f);
            dw->dwfl_report_end(s->dwfl, NULL, NULL);
            if (rc != 0) {
                dw->dwfl_end(s->dwfl);
                s->dwfl = NULL;
            }
        }
        fclose(f);
    }
    return s;
}

void pt_symbols_free(pt_symbols *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->cap; i++) {
        struct entry *e = s->tab[i];
        if (e) {
            free((char *)e->sym.name);
            free((char *)e->sym.file);
            free((char *)e->sym.module);
            free((char *)e->sym.path);
            free(e);
        }
    }
    free(s->tab);
    if (s->dwfl)
        dw->dwfl_end(s->dwfl);
    free(s);
}

static size_t slot(const pt_symbols *s, uint64_t addr)
{
    size_t i = (size_t)((addr * UINT64_C(0x9E3779B97F4A7C15)) >> 20) & (s->cap - 1);
    while (s->tab[i] && s->tab[i]->addr != addr)
        i = (i + 1) & (s->cap - 1);
    return i;
}

static void grow(pt_symbols *s)
{
    struct entry **old = s->tab;
    size_t oldcap = s->cap;
    struct entry **tab = calloc(oldcap * 2, sizeof *tab);
    if (!tab)
        return; /* keep probing the full-ish table; still correct */
    s->tab = tab;
    s->cap = oldcap * 2;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i])
            s->tab[slot(s, old[i]->addr)] = old[i];
    free(old);
}

/* Whether addr lies in a PLT section of m (.plt, .plt.sec, .plt.got): a
 * stub the linker made, which no symbol names. */
static bool in_plt(Dwfl_Module *m, uint64_t addr)
{
    Dwarf_Addr a = (Dwarf_Addr)addr, bias;
    Elf_Scn *scn = dw->dwfl_module_address_section(m, &a, &bias);
    Elf *elf = scn ? dw->dwfl_module_getelf(m, &bias) : NULL;
    size_t shstrndx;
    GElf_Shdr shdr;
    if (!elf || dw->elf_getshdrstrndx(elf, &shstrndx) != 0 || !dw->gelf_getshdr(scn, &shdr))
        return false;
    const char *name = dw->elf_strptr(elf, shstrndx, shdr.sh_name);
    return name && strncmp(name, ".plt", 4) == 0;
}

/* The first address of the function holding addr (absolute), from its
 * symbol, else from the FDE covering it in .eh_frame / .debug_frame; 0 when
 * neither covers it. */
static uint64_t function_start(Dwfl_Module *m, uint64_t addr)
{
    GElf_Off off = 0;
    GElf_Sym sym;
    if (dw->dwfl_module_addrinfo(m, (GElf_Addr)addr, &off, &sym, NULL, NULL, NULL) && off <= addr)
        return addr - off;
    Dwarf_Addr bias;
    Dwarf_CFI *cfis[2] = {dw->dwfl_module_eh_cfi(m, &bias), NULL};
    Dwarf_Addr dbias;
    cfis[1] = dw->dwfl_module_dwarf_cfi(m, &dbias);
    Dwarf_Addr biases[2] = {bias, dbias};
    for (int i = 0; i < 2; i++) {
        Dwarf_Frame *frame = NULL;
        if (!cfis[i] || dw->dwarf_cfi_addrframe(cfis[i], (Dwarf_Addr)addr - biases[i], &frame) != 0)
            continue;
        Dwarf_Addr start = 0, end = 0;
        int ok = dw->dwarf_frame_info(frame, &start, &end, NULL) >= 0;
        free(frame);
        if (ok && start)
            return (uint64_t)(start + biases[i]);
    }
    return 0;
}

static void resolve(pt_symbols *s, uint64_t addr, pt_sym *out)
{
    Dwfl_Module *m = s->dwfl ? dw->dwfl_addrmodule(s->dwfl, (Dwarf_Addr)addr) : NULL;
    const char *name = NULL, *file = NULL, *mod = NULL, *path = NULL;
    Dwarf_Addr start = 0;
    int line = 0;
    if (m) {
        name = dw->dwfl_module_addrname(m, (GElf_Addr)addr);
        Dwfl_Line *l = dw->dwfl_module_getsrc(m, (Dwarf_Addr)addr);
        if (l)
            file = dw->dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
        mod = path = dw->dwfl_module_info(m, NULL, &start, NULL, NULL, NULL, NULL, NULL);
        if (mod && strrchr(mod, '/'))
            mod = strrchr(mod, '/') + 1;
        if (mod && strncmp(mod, "[vdso", 5) == 0)
            mod = "[vdso]"; /* libdw names it "[vdso: PID]" */
    }
    if (!name && m && in_plt(m, addr))
        name = "[plt]";
    if (name) {
        out->name = strdup(name);
    } else {
        char buf[32];
        snprintf(buf, sizeof buf, "0x%" PRIx64, addr);
        out->name = strdup(buf);
    }
    out->file = file ? strdup(file) : NULL;
    out->line = file ? line : 0;
    out->module = mod ? strdup(mod) : NULL;
    out->path = path ? strdup(path) : NULL;
    out->offset = m ? addr - (uint64_t)start : 0;
    uint64_t fn = m ? function_start(m, addr) : 0;
    out->func_offset = fn >= (uint64_t)start ? fn - (uint64_t)start : 0;
}

const pt_sym *pt_symbols_lookup(pt_symbols *s, uint64_t addr)
{
    static const pt_sym unknown = {.name = "?"};
    if (s->n * 2 >= s->cap)
        grow(s);
    size_t i = slot(s, addr);
    if (!s->tab[i]) {
        if (s->n + 1 >= s->cap)
            return &unknown;
        struct entry *e = calloc(1, sizeof *e);
        if (!e)
            return &unknown;
        e->addr = addr;
        resolve(s, addr, &e->sym);
        if (!e->sym.name) {
            free((char *)e->sym.file);
            free((char *)e->sym.module);
            free((char *)e->sym.path);
            free(e);
            return &unknown;
        }
        s->tab[i] = e;
        s->n++;
    }
    return &s->tab[i]->sym;
}

struct Dwfl *pt_symbols_dwfl(pt_symbols *s)
{
    return s->dwfl;
}

int pt_symbols_refresh(pt_symbols *s)
{
    if (!s->pid)
        return -EINVAL;
    if (!load_dw())
        return -ENOSYS; /* no libdw: addresses stay numeric */
    int rc = 0;
    if (!s->dwfl) {
        s->dwfl = dw->dwfl_begin(&live_callbacks);
        if (!s->dwfl)
            rc = -ENOMEM;
    }
    if (rc == 0) {
        dw->dwfl_report_begin_add(s->dwfl);
        if (dw->dwfl_linux_proc_report(s->dwfl, s->pid) != 0)
            rc = -EIO;
        dw->dwfl_report_end(s->dwfl, NULL, NULL);
    }
    /* Entries without a module may have one now: drop them from the cache.
     * Entries keep their slots otherwise (pointers handed out stay valid);
     * a dropped slot is refilled at the next lookup, so the probe chains are
     * rebuilt by re-inserting what is kept. */
    size_t cap = s->cap;
    struct entry **old = s->tab;
    struct entry **tab = calloc(cap, sizeof *tab);
    if (!tab)
        return rc ? rc : -ENOMEM;
    s->tab = tab;
    s->n = 0;
    for (size_t i = 0; i < cap; i++) {
        struct entry *e = old[i];
        if (!e)
            continue;
        if (!e->sym.module) {
            free((char *)e->sym.name);
            free((char *)e->sym.file);
            free((char *)e->sym.path);
            free(e);
            continue;
        }
        s->tab[slot(s, e->addr)] = e;
        s->n++;
    }
    free(old);
    return rc;
}
