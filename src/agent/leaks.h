/* Leak detection inside the agent (docs/agent.md, "Leaks"): what its files
 * share. Object leaks and --leaks=refs are GObject's (gobject/leaks.c,
 * gobject/refs.c); these are the toolkit-neutral parts:
 *
 *   leakmode.c    the modes (PACER_LEAKS);
 *   leakstack.c   stacks → the records' frames, signatures, known native
 *                 leaks;
 *   stackstore.c  cheap capture of the calling thread's stack, interned;
 *   heap.c        --leaks=native (libpacer-agent-heap.so only): the
 *                 allocation hooks, the table of live blocks, sampling;
 *   heap_mark.c   the conservative mark over the process's roots;
 *   heap_stub.c   the same entry points in the plain agent, doing nothing.
 */
#ifndef PACER_AGENT_LEAKS_H
#define PACER_AGENT_LEAKS_H

#include "agent.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- leakmode.c: the modes (PACER_LEAKS: "refs", "native", or both,
 * comma-separated; "off") ---- */
enum { LEAKS_OBJECTS = 1, LEAKS_REFS = 2, LEAKS_NATIVE = 4 };
/* The LEAKS_* bits PACER_LEAKS asks for (objects unless "off"). */
int leaks_modes(void);
/* Allocation tracking is on: this is libpacer-agent-heap.so and
 * PACER_LEAKS names native. */
bool leaks_native_mode(void);

/* ---- stackstore.c ---- */
#define STACKSTORE_MAX_FRAMES 32
/* Reserves the store and loads the unwinder; call once outside any hook.
 * Returns false when memory cannot be reserved (no stacks then). */
bool stackstore_init(void);
/* The calling thread's stack (its caller first, after `skip` more frames),
 * interned; 0 when none could be taken. Any thread; never allocates. */
uint32_t stackstore_capture(unsigned skip);
/* The same from the frame whose return address is `first` (a hook's
 * __builtin_return_address(0): its caller) on. */
uint32_t stackstore_capture_from(uintptr_t first);
/* Interns pcs[0..n). 0 when full. */
uint32_t stackstore_add(const uint64_t *pcs, size_t n);
/* The frames of `id` (return addresses; NULL and 0 for id 0). They never
 * change. Any thread, no lock. */
size_t stackstore_get(uint32_t id, const uint64_t **ret_pcs);
void stackstore_fork_prepare(void);
void stackstore_fork_parent(void);
void stackstore_fork_child(void);

/* ---- leakstack.c ---- */
/* Appends stack `id` as STACK_FRAME elements to list `field` of r
 * (innermost first, the agent's own frames left out). Any thread (its
 * symbolizer has a lock). Returns the number of frames added. */
size_t leakstack_add(pacer_record *r, unsigned field, uint32_t id);
/* Whether the stack's first frame outside the allocator and GLib's object
 * system is the agent's own code. */
bool leakstack_is_agent(uint32_t id);
/* The load address of the module holding the first frame of `id` that is
 * outside libglib, libgobject and the agent: the code that holds a
 * reference (refs.c). 0 when unknown. */
uintptr_t leakstack_holder(uint32_t id);
/* The native leak signature of stack `id`: 16 hex digits into hex[17];
 * false when the stack has no named frame. */
bool leakstack_signature(uint32_t id, char hex[17]);
/* Whether stack `id` has an in-app frame (the executable, or a library
 * outside the system directories). */
bool leakstack_in_app(uint32_t id);
/* Whether a function of stack `id` is `fn` (known native leaks). */
bool leakstack_has_function(uint32_t id, const char *fn);

/* Known native leaks: the config's <known-leak function="…">. The id of
 * the entry whose function a native leak stack contains; NULL when none
 * does. The returned id lives as long as the config `cfg`. */
const char *leaks_known_native(pacer_config *cfg, uint32_t stack);

/* ---- heap.c / heap_stub.c ---- */
/* Our own mappings, which the mark never scans as roots. */
void leaks_own_region(const void *start, size_t len);
void leaks_disown_region(const void *start, size_t len);

#endif
