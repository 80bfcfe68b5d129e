/* Addresses -> symbols, at export time only (never in the traced process).
 *
 * The traced process's /proc/self/maps (NAME.maps) says which ELF file was
 * mapped where; libdwfl turns that into modules with their load bias (PIE
 * executables and shared libraries alike), then gives the function name
 * from the symbol table and file:line from DWARF where the module has debug
 * info (or separate debug info under /usr/lib/debug). Files are opened
 * lazily, on the first address that falls in them. Results are cached per
 * address, so a trace of millions of calls does a few hundred lookups.
 */
#include "trace_read.h"

#include <elfutils/libdwfl.h>
#include <inttypes.h>
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
    struct entry **tab;
    size_t cap, n;
};

static char *debuginfo_path;
static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .debuginfo_path = &debuginfo_path,
};

pt_symbols *pt_symbols_new(const char *maps_path)
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
    FILE *f = maps_path ? fopen(maps_path, "r") : NULL;
    if (f) {
        s->dwfl = dwfl_begin(&callbacks);
        if (s->dwfl) {
            dwfl_report_begin(s->dwfl);
            int rc = dwfl_linux_proc_maps_report(s->dwfl, f);
            dwfl_report_end(s->dwfl, NULL, NULL);
            if (rc != 0) {
                dwfl_end(s->dwfl);
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
            free(e);
        }
    }
    free(s->tab);
    if (s->dwfl)
        dwfl_end(s->dwfl);
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

static void resolve(pt_symbols *s, uint64_t addr, pt_sym *out)
{
    Dwfl_Module *m = s->dwfl ? dwfl_addrmodule(s->dwfl, (Dwarf_Addr)addr) : NULL;
    const char *name = NULL, *file = NULL, *mod = NULL;
    int line = 0;
    if (m) {
        name = dwfl_module_addrname(m, (GElf_Addr)addr);
        Dwfl_Line *l = dwfl_module_getsrc(m, (Dwarf_Addr)addr);
        if (l)
            file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
        mod = dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        if (mod && strrchr(mod, '/'))
            mod = strrchr(mod, '/') + 1;
    }
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
}

const pt_sym *pt_symbols_lookup(pt_symbols *s, uint64_t addr)
{
    static const pt_sym unknown = {"?", NULL, 0, NULL};
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
            free(e);
            return &unknown;
        }
        s->tab[i] = e;
        s->n++;
    }
    return &s->tab[i]->sym;
}
