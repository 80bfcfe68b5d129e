/* GTK calls that GTK 3 and GTK 4 share by name, made by the application
 * (GTK's own calls are bound inside libgtk and never come here; the
 * adapters' signal handlers cover them). The agent can export each name
 * once: the hook calls the real function of whichever GTK is loaded and
 * hands the call to the pages of the adapter in force (pages.c).
 *
 *   gtk_stack_add_named, gtk_stack_add_titled   a stack page added with a
 *       name, which the config may name as a page
 *
 * The two return a GtkStackPage in GTK 4 and nothing in GTK 3: the hook
 * returns what the real function left in the return register, which a
 * GTK 3 caller ignores, as it would have.
 */
#include "gobj.h"

static void stack_add(void *stack, void *child, const char *name)
{
    if (agent_in_hook || !agent_active() || !agent_on_main_thread())
        return;
    agent_in_hook++;
    gobj_pages_on_stack_add(stack, child, name);
    agent_in_hook--;
}

/* The loaded GTK's definition (in the global scope, or a GTK loaded
 * outside it). */
static void *real_gtk(const char *name)
{
    void *f = agent_real("libgtk-4.so.1", name);
    return f ? f : agent_real("libgtk-3.so.0", name);
}

typedef void *(*add_named_fn)(void *, void *, const char *);
typedef void *(*add_titled_fn)(void *, void *, const char *, const char *);
static add_named_fn real_add_named;
static add_titled_fn real_add_titled;

AGENT_EXPORT void *gtk_stack_add_named(void *stack, void *child, const char *name);
AGENT_EXPORT void *gtk_stack_add_named(void *stack, void *child, const char *name)
{
    if (!real_add_named)
        *(void **)&real_add_named = real_gtk("gtk_stack_add_named");
    stack_add(stack, child, name);
    return real_add_named(stack, child, name);
}

AGENT_EXPORT void *gtk_stack_add_titled(void *stack, void *child, const char *name, const char *title);
AGENT_EXPORT void *gtk_stack_add_titled(void *stack, void *child, const char *name, const char *title)
{
    if (!real_add_titled)
        *(void **)&real_add_titled = real_gtk("gtk_stack_add_titled");
    stack_add(stack, child, name);
    return real_add_titled(stack, child, name, title);
}
