/* The floor: the least a -finstrument-functions hook can do on this CPU.
 * Per hook, read the TSC and store (timestamp, function) into a ring in the
 * calling thread's own TLS; nothing else: no enabled check, no bounds check
 * (the index wraps), no hand-off to a writer, the data is thrown away. The
 * ring is exported so that the compiler cannot drop the stores. Preloaded
 * over the real runtime by run.py. */
#include <stdint.h>
#include <x86intrin.h>

#define RING_WORDS 8192u

__thread uint64_t pt_floor_ring[RING_WORDS] __attribute__((tls_model("initial-exec")));
static __thread unsigned idx __attribute__((tls_model("initial-exec")));

void __cyg_profile_func_enter(void *fn, void *site);
void __cyg_profile_func_exit(void *fn, void *site);

void __cyg_profile_func_enter(void *fn, void *site)
{
    (void)site;
    unsigned i = idx;
    pt_floor_ring[i] = __rdtsc();
    pt_floor_ring[i + 1] = (uint64_t)(uintptr_t)fn;
    idx = (i + 2) & (RING_WORDS - 1);
}

void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)site;
    unsigned i = idx;
    pt_floor_ring[i] = __rdtsc();
    pt_floor_ring[i + 1] = (uint64_t)(uintptr_t)fn | 1;
    idx = (i + 2) & (RING_WORDS - 1);
}
