/* GObject leaks (DESIGN §3.5; seed 001's LeakCanary on GObject): objects
 * of a destroyed page that are still alive after the grace period, for
 * either GTK adapter.
 *
 * 1. Destroy. When a page is destroyed (the adapter's pages.c),
 *    gobj_leaks_on_page_gone() has the adapter walk what the page owns
 *    while its tree is still whole (gobj_leak_walk.collect: the page, every
 *    widget below it, what each widget holds of its own — GTK 4's event
 *    controllers and layout managers), then adds the objects its objects
 *    hold through "model", "factory" and "paintable" (list models and
 *    selection models, item factories, textures) when nothing outside the
 *    page holds them: an object is taken only when its reference count is
 *    no higher than the number of the page's objects that hold it, so a
 *    model the app shares or caches on purpose is never watched.
 * 2. Watch. Each object gets a GWeakRef: GLib clears it when the last
 *    reference goes (g_object_unref, before dispose), not when GTK 4
 *    disposes a window (gtk_window_destroy) while the app holds it, which
 *    so counts as alive; and it does not rely on finalize chaining up (a
 *    subclass that forgets to is still seen gone). g_weak_ref_get() hands a
 *    checker a reference while it looks, so an object is never touched
 *    after it was freed, whatever thread drops its last reference. GTK 3
 *    destroys a window's widgets with g_object_run_dispose(), and GLib
 *    clears weak references as it disposes: for an adapter that says so
 *    (gobj_leak_walk.disposed_alive) each object also carries a token in
 *    its qdata, which only finalization drops — a disposed widget the app
 *    still holds is alive until the token says it was finalized (GTK
 *    objects live on the GTK thread, where the checks run).
 * 3. Check. After leak_grace_ms (<thresholds leak-grace-ms>, default 5000;
 *    PACER_LEAK_GRACE_MS overrides it) a low-priority idle callback (the
 *    main loop has nothing else to do) counts the survivors. None: done.
 *    Else LeakCanary's double check: 100 ms later, another idle pass and a
 *    second count. An object back in use does not count: a widget whose
 *    root is a window in the toplevel list (moved to another window), or a
 *    controller or layout manager of such a widget.
 * 4. Report. The survivors make one `leak` record (kind "object") per page,
 *    split by origin: those a known leak matches (the shipped list, then
 *    the config's <known-leak>) go to a second record with origin
 *    "library". Each record: the page class and instance, the count by
 *    type, and up to MAX_LISTED objects with their reference counts, their
 *    creation stacks (--leaks=refs or native), and in --leaks=refs mode
 *    the references that were never dropped (refs.c). Its signature is
 *    FNV-1a 64 of "object\n", the page class and "\n", then each distinct
 *    retained type, sorted, and "\n": the same leak found again has the
 *    same signature, whatever the counts (docs/records.md).
 *
 * A page whose process exits before its check is not reported: there is
 * no grace period left to tell a leak from an object on its way out.
 *
 * Threads: all of it on the main thread; GWeakRef is thread-safe, so the
 * objects may die on any thread.
 */
#include "gobj.h"
#include "leaks.h"

#include <pacer/base/clock.h>
#include <pacer/base/hash.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECOND_CHECK_MS 100
#define MAX_LISTED 32
#define MAX_OBJECTS 100000 /* per page: a bound for a hostile tree */
#define PROP_DEPTH 3

static const char *const owned_props[] = {"model", "factory", "paintable"};

/* Finalization seen through qdata (disposed_alive): one reference for the
 * watch, one for the object's qdata, whose destroy notify runs when the
 * object is finalized (or its qdata replaced). */
typedef struct alive_token {
    _Atomic int refs;
    _Atomic bool finalized;
} alive_token;

static void token_unref(alive_token *t)
{
    if (t && atomic_fetch_sub(&t->refs, 1) == 1)
        free(t);
}

static void token_finalized(gpointer data)
{
    alive_token *t = data;
    atomic_store(&t->finalized, true);
    token_unref(t);
}

typedef struct watch_entry {
    GWeakRef ref;
    GObject *obj;     /* its address, compared, followed only while its token says it lives */
    const char *type; /* g_type_name: lives as long as the process */
    alive_token *token; /* disposed_alive only */
} watch_entry;

typedef struct watch {
    const char *page;
    uint64_t instance;
    bool window;
    int64_t destroyed_ns;
    int phase;
    size_t n;
    watch_entry e[];
} watch;

static GQuark watch_quark, created_quark, alive_quark;
static const gobj_leak_walk *walker;

void gobj_leaks_set_walk(const gobj_leak_walk *walk)
{
    walker = walk;
}

static void watch_free(watch *w)
{
    for (size_t i = 0; i < w->n; i++) {
        g_weak_ref_clear(&w->e[i].ref);
        token_unref(w->e[i].token);
    }
    free(w);
}

/* ---- the walk (main thread, while the tree is whole) ---- */

typedef struct objset {
    GObject **v;
    unsigned *holders; /* candidates: how many of the page's objects hold it */
    size_t n, cap;
} objset;

static long objset_find(const objset *s, GObject *o)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] == o)
            return (long)i;
    return -1;
}

static bool objset_add(objset *s, GObject *o)
{
    if (s->n == s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 64;
        GObject **v = realloc(s->v, ncap * sizeof(*v));
        if (!v)
            return false;
        s->v = v;
        unsigned *h = realloc(s->holders, ncap * sizeof(*h));
        if (!h)
            return false;
        s->holders = h;
        s->cap = ncap;
    }
    s->holders[s->n] = 1;
    s->v[s->n++] = o;
    return true;
}

static void objset_free(objset *s)
{
    free(s->v);
    free(s->holders);
}

/* A linear search keeps the code small; pages hold hundreds of objects,
 * and this runs once per destroyed page. A hash would be the fix for a
 * page of tens of thousands. */
static void add_unique(objset *s, GObject *o)
{
    if (o && s->n < MAX_OBJECTS && objset_find(s, o) < 0)
        objset_add(s, o);
}

/* The objects o holds through the owned properties, as candidates. */
static void add_property_objects(objset *cand, GObject *o)
{
    GObjectClass *klass = G_OBJECT_GET_CLASS(o);
    for (size_t i = 0; i < sizeof(owned_props) / sizeof(owned_props[0]); i++) {
        GParamSpec *ps = g_object_class_find_property(klass, owned_props[i]);
        if (!ps || !(ps->flags & G_PARAM_READABLE) || (ps->flags & G_PARAM_DEPRECATED) ||
            !g_type_is_a(ps->value_type, G_TYPE_OBJECT))
            continue;
        GObject *v = NULL;
        g_object_get(o, owned_props[i], &v, NULL);
        if (!v)
            continue;
        long k = objset_find(cand, v);
        if (k >= 0)
            cand->holders[k]++;
        else if (cand->n < MAX_OBJECTS)
            objset_add(cand, v);
        g_object_unref(v);
    }
}

static void add_from_walk(void *set, GObject *o)
{
    add_unique(set, o);
}

static void collect(GObject *page, objset *out)
{
    objset cand = {0};
    add_unique(out, page);
    /* the tree, breadth first: out grows as it is walked */
    for (size_t i = 0; i < out->n; i++)
        walker->owned(out->v[i], out, add_from_walk);
    /* what the page's objects hold, a few levels deep (a view's selection
     * model, its list model, that model's model) */
    size_t from = 0;
    for (int depth = 0; depth < PROP_DEPTH; depth++) {
        size_t to = out->n;
        for (size_t i = from; i < to; i++)
            add_property_objects(&cand, out->v[i]);
        for (size_t i = 0; i < cand.n; i++) {
            GObject *o = cand.v[i];
            if (objset_find(out, o) >= 0)
                continue;
            /* held by the page alone: our own reference is gone again */
            int refs = g_atomic_int_get((int *)&o->ref_count);
            if (refs > 0 && (unsigned)refs <= cand.holders[i])
                add_unique(out, o);
        }
        cand.n = 0;
        from = to;
        if (from == out->n)
            break;
    }
    objset_free(&cand);
}

static gboolean on_grace(gpointer data);

void gobj_leaks_on_page_gone(GObject *obj, const char *class_name, uint64_t instance, bool window)
{
    if (!(leaks_modes() & LEAKS_OBJECTS) || !obj || !walker)
        return;
    if (!watch_quark)
        watch_quark = g_quark_from_static_string("pacer-agent-leak");
    if (g_object_get_qdata(obj, watch_quark))
        return; /* part of a page destroyed earlier (a stack page of a closed window) */
    agent_in_hook++;
    objset set = {0};
    collect(obj, &set);
    size_t n = 0;
    for (size_t i = 0; i < set.n; i++)
        if (!g_object_get_qdata(set.v[i], watch_quark))
            set.v[n++] = set.v[i];
    watch *w = calloc(1, sizeof(*w) + n * sizeof(watch_entry));
    if (!w) {
        objset_free(&set);
        agent_in_hook--;
        agent_note_once("leaks-oom", "out of memory; a destroyed page's objects are not watched");
        return;
    }
    w->page = class_name;
    w->instance = instance;
    w->window = window;
    w->destroyed_ns = mono_ns();
    w->n = n;
    for (size_t i = 0; i < n; i++) {
        watch_entry *e = &w->e[i];
        e->obj = set.v[i];
        e->type = g_type_name(G_OBJECT_TYPE(e->obj));
        g_weak_ref_init(&e->ref, e->obj);
        g_object_set_qdata(e->obj, watch_quark, GINT_TO_POINTER(1));
        if (walker->disposed_alive && (e->token = calloc(1, sizeof(*e->token)))) {
            if (!alive_quark)
                alive_quark = g_quark_from_static_string("pacer-agent-leak-alive");
            atomic_init(&e->token->refs, 2);
            g_object_set_qdata_full(e->obj, alive_quark, e->token, token_finalized);
        }
        if (leaks_refs_mode())
            refs_watch(e->obj, 0);
    }
    objset_free(&set);
    pacer_config *cfg = agent_config();
    const char *env = getenv("PACER_LEAK_GRACE_MS");
    long grace = env && *env ? strtol(env, NULL, 10) : (long)pacer_config_leak_grace_ms(cfg);
    pacer_config_unref(cfg);
    if (grace < 1 || grace > 3600000)
        grace = PACER_DEFAULT_LEAK_GRACE_MS;
    w->phase = 1;
    g_timeout_add_full(G_PRIORITY_DEFAULT, (guint)grace, on_grace, w, NULL);
    agent_in_hook--;
}

void gobj_leaks_install(void)
{
    if (leaks_refs_mode() && !stackstore_init())
        agent_note_once("leak-stacks", "no memory for stacks; leak records come without them");
}

void gobj_leaks_on_construct(GTypeInstance *instance)
{
    if (!leaks_refs_mode() && !leaks_native_mode())
        return;
    if (!created_quark)
        created_quark = g_quark_from_static_string("pacer-agent-created");
    uint32_t st = stackstore_capture(0);
    if (st)
        g_object_set_qdata((GObject *)instance, created_quark, GUINT_TO_POINTER(st));
    if (leaks_refs_mode())
        refs_watch((GObject *)instance, st);
}

/* ---- the checks ---- */

/* An object in use again: in a window that is still open. */
static bool in_use(GObject *o)
{
    return walker->in_use(o);
}

/* The page's objects alive now, as references (NULL: gone); the caller
 * drops them with let_go(). */
static GObject **hold_alive(watch *w)
{
    GObject **live = calloc(w->n ? w->n : 1, sizeof(*live));
    for (size_t i = 0; live && i < w->n; i++) {
        live[i] = g_weak_ref_get(&w->e[i].ref);
        alive_token *t = w->e[i].token;
        if (!live[i] && t && !atomic_load(&t->finalized))
            live[i] = g_object_ref(w->e[i].obj); /* disposed, not finalized: GTK thread */
    }
    return live;
}

static void let_go(watch *w, GObject **live)
{
    for (size_t i = 0; live && i < w->n; i++)
        if (live[i])
            g_object_unref(live[i]);
    free(live);
}

static size_t count_retained(watch *w)
{
    GObject **live = hold_alive(w);
    size_t n = 0;
    for (size_t i = 0; live && i < w->n; i++)
        n += live[i] && !in_use(live[i]);
    let_go(w, live);
    return n;
}

/* Whether a survivor is held by another survivor of the page through the
 * widget tree (a child of a retained widget, a controller or the layout
 * manager of one): retained through it, not a leak of its own. */
static bool held_by_survivor(watch *w, GObject *const *live, GObject *o)
{
    GObject *holder = walker->holder(o);
    if (!holder)
        return false;
    for (size_t i = 0; i < w->n; i++)
        if (live[i] && live[i] == holder)
            return true;
    return false;
}

typedef struct survivor {
    GObject *obj; /* a reference of hold_alive()'s */
    const char *type;
} survivor;

static int by_type(const void *a, const void *b)
{
    const survivor *x = a, *y = b;
    return strcmp(x->type, y->type);
}

/* One record of the entries `v` (sorted by type), of `survivors` in all. */
static void emit(watch *w, const survivor *v, size_t n, size_t survivors, const char *known)
{
    pacer_record *r = pacer_record_new(PACER_RECORD_LEAK);
    if (!r)
        return;
    uint64_t h = fnv1a64(FNV1A64_INIT, "object\n", 7);
    h = fnv1a64(h, w->page, strlen(w->page));
    h = fnv1a64(h, "\n", 1);
    for (size_t i = 0; i < n; i++) {
        if (i && strcmp(v[i].type, v[i - 1].type) == 0)
            continue;
        h = fnv1a64(h, v[i].type, strlen(v[i].type));
        h = fnv1a64(h, "\n", 1);
    }
    char sig[17];
    snprintf(sig, sizeof(sig), "%016llx", (unsigned long long)h);
    pacer_record_set_time(r, w->destroyed_ns);
    pacer_record_set_str(r, PACER_LEAK_KIND, "object");
    pacer_record_set_str(r, PACER_LEAK_SIGNATURE, sig);
    pacer_record_set_str(r, PACER_LEAK_ORIGIN, known ? "library" : "app");
    pacer_record_set_str(r, PACER_LEAK_KNOWN_LEAK, known);
    pacer_record_set_str(r, PACER_LEAK_PAGE, w->page);
    pacer_record_set_id(r, PACER_LEAK_INSTANCE, w->instance);
    pacer_record_set_str(r, PACER_LEAK_PAGE_KIND, w->window ? "window" : "page");
    pacer_record_set_int(r, PACER_LEAK_RETAINED, (int64_t)survivors);
    pacer_record_set_ms(r, PACER_LEAK_CHECK_MS, mono_ns() - w->destroyed_ns);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && strcmp(v[j].type, v[i].type) == 0)
            j++;
        pacer_record *t = pacer_record_add(r, PACER_LEAK_TYPES);
        if (t) {
            pacer_record_set_str(t, PACER_LEAKTYPE_TYPE, v[i].type);
            pacer_record_set_int(t, PACER_LEAKTYPE_COUNT, (int64_t)(j - i));
        }
        i = j;
    }
    for (size_t i = 0; i < n && i < MAX_LISTED; i++) {
        pacer_record *o = pacer_record_add(r, PACER_LEAK_OBJECTS);
        if (!o)
            break;
        GObject *obj = v[i].obj;
        int refs = g_atomic_int_get((int *)&obj->ref_count) - 1; /* not ours */
        pacer_record_set_str(o, PACER_LEAKOBJ_TYPE, v[i].type);
        pacer_record_set_int(o, PACER_LEAKOBJ_REF_COUNT, refs);
        uint32_t created = created_quark ? GPOINTER_TO_UINT(g_object_get_qdata(obj, created_quark)) : 0;
        if (created)
            leakstack_add(o, PACER_LEAKOBJ_CREATED, created);
        if (leaks_refs_mode())
            refs_describe(obj, o, refs);
    }
    agent_submit_record(r);
}

static void report(watch *w)
{
    GObject **live = hold_alive(w);
    survivor *app = calloc(w->n ? w->n : 1, sizeof(*app)), *lib = calloc(w->n ? w->n : 1, sizeof(*lib));
    if (!live || !app || !lib) {
        let_go(w, live);
        free(app);
        free(lib);
        return;
    }
    pacer_config *cfg = agent_config();
    size_t n_app = 0, n_lib = 0, all_app = 0, all_lib = 0;
    const char *known = NULL;
    for (size_t i = 0; i < w->n; i++) {
        if (!live[i] || in_use(live[i]))
            continue;
        const char *k = gobj_known_object(walker->known, cfg, w->page, w->e[i].type);
        if (k)
            all_lib++;
        else
            all_app++;
        if (held_by_survivor(w, live, live[i]))
            continue;
        survivor s = {live[i], w->e[i].type};
        if (k) {
            known = known ? known : k;
            lib[n_lib++] = s;
        } else {
            app[n_app++] = s;
        }
    }
    /* by type, as the record lists them */
    qsort(app, n_app, sizeof(*app), by_type);
    qsort(lib, n_lib, sizeof(*lib), by_type);
    agent_in_hook++;
    if (n_app)
        emit(w, app, n_app, all_app, NULL);
    if (n_lib)
        emit(w, lib, n_lib, all_lib, known);
    agent_in_hook--;
    pacer_config_unref(cfg);
    free(app);
    free(lib);
    let_go(w, live);
}

static gboolean on_idle(gpointer data)
{
    watch *w = data;
    if (!agent_active()) {
        watch_free(w);
        return G_SOURCE_REMOVE;
    }
    agent_in_hook++;
    size_t n = count_retained(w);
    agent_in_hook--;
    if (n == 0) {
        watch_free(w);
    } else if (w->phase == 1) {
        w->phase = 2;
        g_timeout_add_full(G_PRIORITY_DEFAULT, SECOND_CHECK_MS, on_grace, w, NULL);
    } else {
        report(w);
        watch_free(w);
    }
    return G_SOURCE_REMOVE;
}

static gboolean on_grace(gpointer data)
{
    g_idle_add_full(G_PRIORITY_LOW, on_idle, data, NULL);
    return G_SOURCE_REMOVE;
}
