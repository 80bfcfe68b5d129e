/* libdw and libelf (elfutils), loaded at run time: the symbolizer component
 * (src/symbols) owns the table, its own code and the agent's unwinder call
 * through it.
 *
 * Linked, the two libraries (and libbz2 behind libdw) were mapped into
 * every program the agent is preloaded into, before any of the program's
 * code ran: three more objects in the global symbol scope, which every
 * symbol look-up of the program's start-up passes, for a feature that is
 * used only when a stack is named or unwound. They were mapped into every
 * `pacer` command as well. Loaded here at the first use (dlopen RTLD_LOCAL:
 * they never enter the program's own scope).
 *
 * Every libdw/libelf function pacer calls is in the list below; the table
 * has one slot per name, of the function's own type, so a call reads
 * `dw->dwfl_begin(...)`.
 */
#ifndef PACER_SYMBOLS_DW_H
#define PACER_SYMBOLS_DW_H

#include <elfutils/libdwfl.h>
#include <gelf.h>

#define PT_DW_FUNCTIONS(X)             \
    X(dwfl_begin)                      \
    X(dwfl_end)                        \
    X(dwfl_errmsg)                     \
    X(dwfl_pid)                        \
    X(dwfl_report_begin)               \
    X(dwfl_report_begin_add)           \
    X(dwfl_report_end)                 \
    X(dwfl_linux_proc_find_elf)        \
    X(dwfl_linux_proc_maps_report)     \
    X(dwfl_linux_proc_report)          \
    X(dwfl_standard_find_debuginfo)    \
    X(dwfl_addrmodule)                 \
    X(dwfl_module_addrinfo)            \
    X(dwfl_module_addrname)            \
    X(dwfl_module_address_section)     \
    X(dwfl_module_build_id)            \
    X(dwfl_module_dwarf_cfi)           \
    X(dwfl_module_eh_cfi)              \
    X(dwfl_module_getelf)              \
    X(dwfl_module_getsrc)              \
    X(dwfl_module_info)                \
    X(dwfl_lineinfo)                   \
    X(dwfl_attach_state)               \
    X(dwfl_getthread_frames)           \
    X(dwfl_frame_pc)                   \
    X(dwfl_thread_state_registers)     \
    X(dwfl_thread_state_register_pc)   \
    X(dwarf_cfi_addrframe)             \
    X(dwarf_frame_info)                \
    X(elf_getshdrstrndx)               \
    X(elf_strptr)                      \
    X(gelf_getshdr)

typedef struct pt_dw_api {
#define PT_DW_SLOT(name) __typeof__(name) *name;
    PT_DW_FUNCTIONS(PT_DW_SLOT)
#undef PT_DW_SLOT
} pt_dw_api;

/* Loads libdw (once; libelf is its dependency) and returns its functions,
 * or NULL when it cannot be loaded or lacks one of them (pt_dw_error says
 * which). Any thread; the first call maps the libraries (dlopen: it takes
 * the dynamic loader's lock), so not from a signal handler. */
const pt_dw_api *pt_dw(void);

/* Why pt_dw() returned NULL ("" before the first call or when it did not). */
const char *pt_dw_error(void);

#endif
