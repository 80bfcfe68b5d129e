/* longjmp wrappers: tell the trace which frames a longjmp unwinds.
 *
 * Functions skipped by a longjmp never call their exit hook. Before jumping,
 * we record a longjmp event carrying the stack pointer the jump lands on;
 * the reader ends every open frame below it at that instant.
 *
 * The target stack pointer is read from the jmp_buf. glibc keeps it mangled
 * (x86-64: rotate left 17 after xor with the pointer guard at %fs:0x30),
 * a layout it has kept since 2006; elsewhere the marker is skipped and the
 * reader falls back to matching exits by address. The wrappers forward to
 * libc's functions, looked up once at load time with dlsym(RTLD_NEXT). They
 * take effect when libpacer-trace is preloaded or linked before libc (the
 * usual -lpacer-trace link line).
 */
#include "runtime.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdlib.h>

typedef void (*jump_fn)(void *, int);
static jump_fn real_longjmp, real_siglongjmp, real__longjmp, real_longjmp_chk;

void pt_longjmp_init(void);
PT_EXPORT PT_NOINSTR void __longjmp_chk(jmp_buf env, int val) __attribute__((noreturn));

PT_NOINSTR static jump_fn lookup(const char *name)
{
    return (jump_fn)dlsym(RTLD_NEXT, name);
}

void pt_longjmp_init(void)
{
    real_longjmp = lookup("longjmp");
    real_siglongjmp = lookup("siglongjmp");
    real__longjmp = lookup("_longjmp");
    real_longjmp_chk = lookup("__longjmp_chk");
}

PT_NOINSTR static void note_jump(void *env)
{
#if defined(__x86_64__) && defined(__GLIBC__)
    if (!__atomic_load_n(&pt_mode, __ATOMIC_RELAXED))
        return;
    uint64_t v = ((uint64_t *)env)[6], guard; /* JB_RSP */
    __asm__("mov %%fs:0x30, %0" : "=r"(guard));
    uint64_t target = ((v >> 17) | (v << 47)) ^ guard;
    uint64_t here = (uint64_t)(uintptr_t)__builtin_frame_address(0);
    if (target <= here || target - here > (UINT64_C(1) << 30))
        return; /* not on this stack as far as we can tell */
    /* The enter hook's convention: the function's rsp in its body. */
    pt_record_longjmp(target >> 4);
#else
    (void)env;
#endif
}

PT_NOINSTR __attribute__((noreturn)) static void jump(jump_fn *fn, const char *name, void *env, int val)
{
    note_jump(env);
    if (!*fn)
        *fn = lookup(name);
    if (!*fn)
        abort();
    (*fn)(env, val);
    __builtin_unreachable();
}

PT_EXPORT PT_NOINSTR void longjmp(jmp_buf env, int val)
{
    jump(&real_longjmp, "longjmp", env, val);
}

PT_EXPORT PT_NOINSTR void siglongjmp(sigjmp_buf env, int val)
{
    jump(&real_siglongjmp, "siglongjmp", env, val);
}

PT_EXPORT PT_NOINSTR void _longjmp(jmp_buf env, int val)
{
    jump(&real__longjmp, "_longjmp", env, val);
}

void __longjmp_chk(jmp_buf env, int val)
{
    jump(&real_longjmp_chk, "__longjmp_chk", env, val);
}
