/* main() entered (DESIGN §3.2).
 *
 * The agent exports __libc_start_main, which every dynamically linked
 * glibc program calls from its entry point; it hands the real one a
 * trampoline in place of main that marks PACER_EV_MAIN and then calls
 * main. That moment is also where the agent finishes setting up
 * (agent_setup): every library constructor has run by then, so a toolkit's
 * classes can be referenced safely. The "application created" mark is the
 * toolkit adapter's (GApplication: gobject/app.c).
 */
#include "agent.h"

#include <unistd.h>

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);

static main_fn real_main;
static start_main_fn real_libc_start_main;

static int main_trampoline(int argc, char **argv, char **envp)
{
    if (agent_active()) {
        pacer_event ev = {.type = PACER_EV_MAIN};
        agent_submit(&ev);
        agent_setup();
    } else if (agent_waiting()) {
        dlopen_on_main();
    }
    return real_main(argc, argv, envp);
}

AGENT_EXPORT int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                                   void (*rtld_fini)(void), void *stack_end);
AGENT_EXPORT int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                                   void (*rtld_fini)(void), void *stack_end)
{
    AGENT_REAL(real_libc_start_main, NULL, "__libc_start_main");
    if (!real_libc_start_main)
        _exit(127); /* cannot happen with glibc; nothing sensible is left to do */
    real_main = main;
    return real_libc_start_main(main_trampoline, argc, argv, init, fini, rtld_fini, stack_end);
}
