/* A shared library of the traced sample: its functions must be named, with
 * file:line, from the library's own ELF and DWARF at export. */
#include "sample_lib.h"

__attribute__((noinline, noclone)) int lib_inner(int x)
{
    return x * 3 + 1;
}

__attribute__((noinline, noclone)) int lib_work(int x)
{
    return lib_inner(x) + lib_inner(x + 1);
}
