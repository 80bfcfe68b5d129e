/* Addresses -> function, file:line, module: the symbolizer component
 * (src/symbols, static library libpacer-symbols, not installed). The trace
 * file reader uses it at export, and the agent (src/agent/stack.c) to name
 * the frames of a stuck main thread.
 *
 * It reads the ELF symbol table (.symtab when the file has one, so static
 * functions of a PIE executable are named, else .dynsym) and DWARF line
 * tables (in the file or under /usr/lib/debug) with libdw, which the first
 * pt_symbols_new* loads (symbols_dw.h; without it every address stays
 * numeric). Not for a hot path: files are opened lazily and every lookup
 * may read them. Not thread-safe: one pt_symbols per thread.
 */
#ifndef PACER_SYMBOLS_H
#define PACER_SYMBOLS_H

#include <stdint.h>
#include <sys/types.h>

typedef struct pt_symbols pt_symbols;
typedef struct pt_sym {
    const char *name;   /* function, "[plt]" for a linker stub, or "0x<addr>" when unknown */
    const char *file;   /* source file, or NULL */
    int line;           /* 0 when unknown */
    const char *module; /* basename of the ELF file, or NULL */
    const char *path;   /* the ELF file as mapped (full path), or NULL */
    uint64_t offset;    /* addr - the module's load address (0 without a module) */
    /* The start of the function holding addr, as an offset like `offset`:
     * from the symbol, else from the call-frame information (the FDE's
     * first address), which a stripped file keeps. 0 when neither says. */
    uint64_t func_offset;
} pt_sym;

/* Loads the module list of a process from a maps file (/proc/PID/maps or a
 * copy; NULL or unreadable: addresses stay numeric). Never fails but for
 * memory (NULL); ELF files are opened lazily. */
pt_symbols *pt_symbols_new(const char *maps_path);
void pt_symbols_free(pt_symbols *s);
/* Resolves addr (cached). The result lives as long as s. */
const pt_sym *pt_symbols_lookup(pt_symbols *s, uint64_t addr);

/* The modules of a live process (getpid() for this one), vDSO included
 * (read from /proc/PID/mem). NULL when out of memory. */
pt_symbols *pt_symbols_new_live(pid_t pid);

/* Live only: reads the process's maps again and adds the modules mapped
 * since (libraries dlopen'ed later). Lookups of addresses that had no
 * module are forgotten (their pt_sym pointers become invalid) and resolved
 * again. Returns 0 or -errno (-EINVAL for a symbols object made from a
 * maps file, -ENOSYS when libdw cannot be loaded). */
int pt_symbols_refresh(pt_symbols *s);

/* The libdwfl session behind s (NULL when no maps were read), for callers
 * that also unwind with it (dwfl_attach_state). Owned by s. */
struct Dwfl *pt_symbols_dwfl(pt_symbols *s);

#endif
