/* Who holds a leaked object (--leaks=refs; DESIGN §3.5): the GObject
 * counterpart of LeakCanary's path to a GC root.
 *
 * libpacer-agent-refs.so (and -heap.so) export g_object_ref,
 * g_object_unref and g_object_ref_sink (refs.syms), so every call through
 * the PLT (the app's, GTK's, GIO's: libgobject's calls to itself stay
 * inside it) passes here first; `pacer run --leaks=refs` preloads it. The
 * plain agent keeps the three local: the app's calls never come here. In
 * an exporting agent without --leaks=refs a hook is one relaxed load and a
 * call of the real function (bench/agent/refs.c measures it). With it,
 * each call on an object being recorded appends
 * (operation, stack) to the object's log: every widget from its
 * construction (leaks.c: the creation is the log's first entry, "new"),
 * and every other object a destroyed page leaves watched, from the destroy
 * on.
 *
 * Which references were never dropped: the log is replayed in order. "new"
 * and "ref" add a live reference held by the code that took it — the
 * module of the first frame outside GLib and the agent
 * (leakstack_holder). A "ref_sink" of a floating object takes over the
 * floating reference: that live reference's holder becomes the sinker's
 * (GTK's gtk_widget_set_parent takes the reference gtk_label_new made).
 * An "unref" drops the most recent live reference the same module holds,
 * else the most recent one. What is left are the references kept, grouped
 * by stack into the leak record's `refs`; references held that the log
 * does not explain (taken inside libgobject, or before recording began)
 * are `refs_unseen`.
 *
 * Threads: the hooks run on any thread; one mutex guards the logs. Stacks
 * are taken outside it. A log is dropped when its object is finalized
 * (qdata destroy notify).
 */
#include "gobj.h"
#include "leaks.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#undef g_object_ref
#undef g_object_unref
#undef g_object_ref_sink

#define LOG_MAX 4096 /* entries per object; later calls are counted, not kept */

enum { OP_NEW = 0, OP_REF = 1, OP_SINK = 2, OP_UNREF = 3 };

typedef struct reflog {
    GObject *obj;
    uint32_t n, cap, dropped;
    uint32_t *ev; /* stack << 2 | op */
} reflog;

typedef gpointer (*ref_fn)(gpointer);
typedef void (*unref_fn)(gpointer);
static ref_fn real_ref, real_ref_sink;
static unref_fn real_unref;

static _Atomic bool recording;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static reflog **slots; /* open addressing by object pointer */
static size_t cap, count;
static GQuark refs_quark;

static size_t slot_of(GObject *o)
{
    uint64_t h = (uint64_t)(uintptr_t)o;
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    return (size_t)h & (cap - 1);
}

/* Lock held. */
static reflog *find(GObject *o)
{
    if (!cap)
        return NULL;
    for (size_t i = slot_of(o); slots[i]; i = (i + 1) & (cap - 1))
        if (slots[i]->obj == o)
            return slots[i];
    return NULL;
}

/* Lock held. */
static bool insert(reflog *l)
{
    if (2 * (count + 1) > cap) {
        size_t ncap = cap ? cap * 2 : 1024;
        reflog **n = calloc(ncap, sizeof(*n));
        if (!n)
            return false;
        reflog **old = slots;
        size_t ocap = cap;
        slots = n;
        cap = ncap;
        for (size_t i = 0; i < ocap; i++) {
            if (!old[i])
                continue;
            size_t j = slot_of(old[i]->obj);
            while (slots[j])
                j = (j + 1) & (cap - 1);
            slots[j] = old[i];
        }
        free(old);
    }
    size_t i = slot_of(l->obj);
    while (slots[i])
        i = (i + 1) & (cap - 1);
    slots[i] = l;
    count++;
    return true;
}

/* Lock held: removes by backward shift, so no tombstones are needed. */
static void erase(GObject *o)
{
    if (!cap)
        return;
    size_t i = slot_of(o);
    while (slots[i] && slots[i]->obj != o)
        i = (i + 1) & (cap - 1);
    if (!slots[i])
        return;
    reflog *l = slots[i];
    slots[i] = NULL;
    count--;
    for (size_t j = (i + 1) & (cap - 1); slots[j]; j = (j + 1) & (cap - 1)) {
        size_t home = slot_of(slots[j]->obj);
        /* slots[j] may move to i when i lies between its home and j */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            slots[i] = slots[j];
            slots[j] = NULL;
            i = j;
        }
    }
    free(l->ev);
    free(l);
}

/* Lock held. */
static void append(reflog *l, int op, uint32_t stack)
{
    if (l->n == l->cap) {
        if (l->cap >= LOG_MAX) {
            l->dropped++;
            return;
        }
        uint32_t ncap = l->cap ? l->cap * 2 : 16;
        uint32_t *ev = realloc(l->ev, ncap * sizeof(*ev));
        if (!ev) {
            l->dropped++;
            return;
        }
        l->ev = ev;
        l->cap = ncap;
    }
    l->ev[l->n++] = stack << 2 | (uint32_t)op;
}

static void forget(gpointer data)
{
    pthread_mutex_lock(&mu);
    erase(data);
    pthread_mutex_unlock(&mu);
}

void refs_forget(GObject *obj)
{
    forget(obj);
}

void refs_watch(GObject *obj, uint32_t created)
{
    if (!obj || !leaks_refs_mode())
        return;
    if (!refs_quark)
        refs_quark = g_quark_from_static_string("pacer-agent-refs");
    pthread_mutex_lock(&mu);
    if (created)
        erase(obj); /* a new object at the address of one that died unseen */
    bool fresh = !find(obj);
    reflog *l = fresh ? calloc(1, sizeof(*l)) : NULL;
    if (l) {
        l->obj = obj;
        if (!insert(l)) {
            free(l);
            l = NULL;
        } else if (created) {
            append(l, OP_NEW, created);
        }
    }
    pthread_mutex_unlock(&mu);
    if (l) {
        /* no destroy notify of ours may be left on an object we forgot */
        g_object_set_qdata_full(obj, refs_quark, obj, forget);
        atomic_store_explicit(&recording, true, memory_order_relaxed);
    }
}

static bool logged(GObject *o)
{
    pthread_mutex_lock(&mu);
    bool yes = find(o) != NULL;
    pthread_mutex_unlock(&mu);
    return yes;
}

static void record(GObject *o, int op)
{
    if (agent_in_hook || !agent_active() || !logged(o))
        return;
    agent_in_hook++;
    uint32_t st = stackstore_capture(1);
    pthread_mutex_lock(&mu);
    reflog *l = find(o);
    if (l)
        append(l, op, st);
    pthread_mutex_unlock(&mu);
    agent_in_hook--;
}

AGENT_EXPORT gpointer g_object_ref(gpointer obj)
{
    AGENT_REAL(real_ref, AGENT_LIBGOBJECT, "g_object_ref");
    if (__builtin_expect(atomic_load_explicit(&recording, memory_order_relaxed), 0) && obj)
        record(obj, OP_REF);
    return real_ref(obj);
}

AGENT_EXPORT gpointer g_object_ref_sink(gpointer obj)
{
    AGENT_REAL(real_ref_sink, AGENT_LIBGOBJECT, "g_object_ref_sink");
    if (__builtin_expect(atomic_load_explicit(&recording, memory_order_relaxed), 0) && obj)
        record(obj, agent_active() && g_object_is_floating(obj) ? OP_SINK : OP_REF);
    return real_ref_sink(obj);
}

AGENT_EXPORT void g_object_unref(gpointer obj)
{
    AGENT_REAL(real_unref, AGENT_LIBGOBJECT, "g_object_unref");
    if (__builtin_expect(atomic_load_explicit(&recording, memory_order_relaxed), 0) && obj)
        record(obj, OP_UNREF);
    real_unref(obj);
}

bool leaks_refs_mode(void)
{
    static _Atomic int refs = -1;
    int r = atomic_load_explicit(&refs, memory_order_relaxed);
    if (r < 0) {
        r = (leaks_modes() & LEAKS_REFS) != 0;
        if (r && !refs_hooks_exported()) {
            agent_note_once("leaks-refs", "--leaks=refs needs libpacer-agent-refs.so preloaded (pacer run "
                                          "--leaks=refs does it); references are not recorded");
            r = 0;
        }
        atomic_store_explicit(&refs, r, memory_order_relaxed);
    }
    return r;
}

bool refs_hooks_exported(void)
{
    /* the global scope's g_object_ref: ours when this agent exports it
     * (the agent comes before libgobject), libgobject's otherwise */
    return dlsym(RTLD_DEFAULT, "g_object_ref") == (void *)g_object_ref;
}

/* ---- which references were kept ---- */

typedef struct live_ref {
    uint32_t stack;
    int op;
    uintptr_t holder;
} live_ref;

static const char *op_name(int op)
{
    return op == OP_NEW ? "new" : op == OP_SINK ? "ref_sink" : "ref";
}

void refs_describe(GObject *obj, pacer_record *o, int ref_count)
{
    pthread_mutex_lock(&mu);
    reflog *l = find(obj);
    uint32_t n = l ? l->n : 0;
    uint32_t *ev = n ? malloc(n * sizeof(*ev)) : NULL;
    if (ev)
        memcpy(ev, l->ev, n * sizeof(*ev));
    pthread_mutex_unlock(&mu);
    if (!l)
        return;
    live_ref *live = n ? calloc(n, sizeof(*live)) : NULL;
    size_t k = 0;
    for (uint32_t i = 0; live && i < n; i++) {
        int op = (int)(ev[i] & 3);
        uint32_t st = ev[i] >> 2;
        uintptr_t holder = leakstack_holder(st);
        if (op == OP_NEW || op == OP_REF) {
            live[k++] = (live_ref){st, op, holder};
        } else if (op == OP_SINK) {
            /* the floating reference, now the sinker's */
            size_t j = k;
            while (j > 0 && live[j - 1].op != OP_NEW)
                j--;
            if (j > 0)
                live[j - 1] = (live_ref){st, OP_SINK, holder};
            else
                live[k++] = (live_ref){st, OP_SINK, holder};
        } else if (k > 0) {
            size_t j = k;
            while (j > 0 && live[j - 1].holder != holder)
                j--;
            size_t drop = j > 0 ? j - 1 : k - 1;
            memmove(&live[drop], &live[drop + 1], (k - drop - 1) * sizeof(*live));
            k--;
        }
    }
    free(ev);
    pacer_record_set_empty(o, PACER_LEAKOBJ_REFS);
    for (size_t i = 0; i < k; i++) {
        if (!live[i].stack && live[i].op == OP_NEW)
            continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = live[j].stack == live[i].stack && live[j].op == live[i].op;
        if (seen)
            continue;
        int64_t same = 0;
        for (size_t j = i; j < k; j++)
            same += live[j].stack == live[i].stack && live[j].op == live[i].op;
        pacer_record *r = pacer_record_add(o, PACER_LEAKOBJ_REFS);
        if (!r)
            break;
        pacer_record_set_str(r, PACER_LEAKREF_OP, op_name(live[i].op));
        pacer_record_set_int(r, PACER_LEAKREF_COUNT, same);
        leakstack_add(r, PACER_LEAKREF_STACK, live[i].stack);
    }
    if (ref_count > (int)k)
        pacer_record_set_int(o, PACER_LEAKOBJ_REFS_UNSEEN, ref_count - (int)k);
    free(live);
}
