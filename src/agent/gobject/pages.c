/* Page life cycle on GTK 3 and GTK 4 (DESIGN §2, §3.1), what the adapters'
 * pages.c share (gobj.h, "pages.c"): a page's state, its events, its draws,
 * its selection in a stack or notebook, the page types the config names.
 * Which GTK moment is which event is the adapter's table (gtk4/pages.c,
 * gtk3/pages.c); where they differ, the adapter's hooks (gobj_page_hooks)
 * do their part.
 *
 *   show           first "map": the widget could be seen (a window shown; a
 *                  page the visible child of a mapped stack or notebook)
 *   draw           after-paint of the widget's frame clock, in a frame in
 *                  which it painted (the adapter says so: gobj_page_painted),
 *                  while the widget is mapped (listening on map, not on
 *                  unmap; frameclock.c); with defer_draws (GTK 3), while
 *                  the frame is still queued in the display library then
 *                  (Wayland: GDK commits at after-paint and flushes at its
 *                  next wait), the hand-over that follows (display.c)
 *   select+scroll  a page becomes the visible child of its stack (anything
 *                  with a "visible-child" property: GtkStack, AdwViewStack;
 *                  notify::visible-child) or the current page of its
 *                  notebook (switch-page)
 *   destroy        "destroy", or the adapter's moment (gobj_pages_gone)
 *
 * Stack pages named in a GtkBuilder file (<object class="GtkStackPage">
 * <property name="name">) are added inside GTK, not through the app's
 * gtk_stack_add_named: every stack is watched, and a visible child whose
 * page name the config in force names becomes a page when it is first
 * selected (created then; shown at once when the stack is mapped).
 *
 * Draw events are thinned at the source: a page reports its first draw and
 * then one draw after each request end anywhere in the process
 * (agent_net_epoch), which is all the model uses (initial draw, final draw =
 * first draw after the page's APIs ended). An idle app with a spinner thus
 * sends no event per frame.
 *
 * The visible page (gobj_pages_visible, for `jank` and `net` records): the
 * visible stack or notebook page of the window that painted last, else that
 * window. Kept as an atomic pointer to an interned class name, so the
 * watchdog thread can read it while the GTK thread is stuck.
 *
 * Page ids: a number per tracked instance, in creation order (1, 2, …),
 * used by every event and record of the instance; never its address, which
 * would tell the address-space layout to whoever reads the records.
 *
 * State: one page per instance (the adapter's, beginning with a gobj_page),
 * attached as qdata and freed with the object (page_free also drops every
 * handler on other objects). All of it runs on the GTK thread (the main
 * thread).
 */
#include "gobj.h"

#include <stdlib.h>

static const gobj_page_hooks *hooks;
static _Atomic bool hooks_set; /* the app's calls (calls.c) may come before */
static GQuark page_quark;
static uint64_t last_id;
static _Atomic(const char *) visible_now;

/* Draws of the frame that waits for its hand-over (defer_draws): page ids
 * and kinds, not pointers, as a page may be freed meanwhile. */
#define MAX_DEFERRED 64
static struct {
    uint64_t id;
    bool window;
} deferred[MAX_DEFERRED];
static size_t n_deferred;

void gobj_pages_set_hooks(const gobj_page_hooks *h)
{
    hooks = h;
    atomic_store(&hooks_set, true);
}

const char *gobj_pages_visible(void)
{
    return atomic_load_explicit(&visible_now, memory_order_relaxed);
}

gobj_page *gobj_page_of(gpointer obj)
{
    return obj && page_quark ? g_object_get_qdata(obj, page_quark) : NULL;
}

static void submit_page(pacer_event_type type, gobj_page *pg, const char *class_name)
{
    pacer_event ev = {
        .type = type,
        .page = pg->id,
        .class_name = class_name,
        .kind = pg->window ? PACER_PAGE_WINDOW : PACER_PAGE_PAGE,
    };
    agent_submit(&ev);
}

/* ---- draws ---- */

void gobj_page_painted(gobj_page *pg)
{
    pg->painted = true;
    pg->paint_epoch = atomic_load(&agent_net_epoch);
}

/* The frame reached the display: the draws it held, at that moment. */
static void on_handover(int64_t t)
{
    agent_in_hook++;
    for (size_t i = 0; i < n_deferred; i++) {
        pacer_event ev = {.type = PACER_EV_PAGE_DRAW, .t_ns = t, .page = deferred[i].id,
                          .kind = deferred[i].window ? PACER_PAGE_WINDOW : PACER_PAGE_PAGE};
        agent_submit(&ev);
    }
    agent_in_hook--;
    n_deferred = 0;
}

static void on_after_paint(clock_listener *l, GObject *clock, int64_t now)
{
    gobj_page *pg = (gobj_page *)l;
    if (!pg->painted || pg->destroyed)
        return;
    pg->painted = false;
    if (pg->window)
        atomic_store_explicit(&visible_now, pg->visible_child ? pg->visible_child : pg->class_name,
                              memory_order_relaxed);
    if (!gobj_gtk.gtk_widget_get_mapped(pg->obj))
        return;
    if (pg->drawn && pg->drawn_epoch == pg->paint_epoch)
        return;
    pg->drawn = true;
    pg->drawn_epoch = pg->paint_epoch;
    if (!hooks->defer_draws || !display_main_frame_queued() || n_deferred == MAX_DEFERRED) {
        agent_in_hook++;
        submit_page(PACER_EV_PAGE_DRAW, pg, NULL); /* handed over while it painted */
        agent_in_hook--;
        return;
    }
    deferred[n_deferred].id = pg->id;
    deferred[n_deferred].window = pg->window;
    n_deferred++;
    display_on_next_handover(on_handover);
}

void gobj_pages_on_map(GObject *w, gobj_page *pg)
{
    if (pg->destroyed)
        return;
    if (!pg->shown) {
        pg->shown = true;
        agent_in_hook++;
        submit_page(PACER_EV_PAGE_SHOW, pg, NULL);
        agent_in_hook--;
    }
    frameclock_listen(&pg->listener, gobj_gtk.gtk_widget_get_frame_clock(w));
    if (hooks->mapped)
        hooks->mapped(pg, w);
}

static void on_map(GObject *w, gpointer data)
{
    gobj_pages_on_map(w, data);
}

static void on_unmap(GObject *w, gpointer data)
{
    gobj_page *pg = data;
    frameclock_unlisten(&pg->listener);
    if (hooks->unmapped)
        hooks->unmapped(pg);
    frameclock_frames_unmap(pg->frames);
}

/* ---- destroy ---- */

void gobj_pages_gone(gobj_page *pg)
{
    if (pg->destroyed)
        return;
    pg->destroyed = true;
    frameclock_unlisten(&pg->listener);
    if (hooks->gone)
        hooks->gone(pg);
    agent_in_hook++;
    submit_page(PACER_EV_PAGE_DESTROY, pg, NULL);
    agent_in_hook--;
    gobj_leaks_on_page_gone(pg->obj, pg->class_name, pg->id, pg->window);
}

static void on_destroy(GObject *w, gpointer data)
{
    gobj_pages_gone(data);
}

/* ---- selection (pages in a stack or notebook) ---- */

static bool is_inside(GObject *w, GObject *ancestor_or_self, GObject *stop)
{
    for (int depth = 0; w && depth < 8; depth++, w = gobj_gtk.gtk_widget_get_parent(w)) {
        if (w == ancestor_or_self)
            return true;
        if (w == stop)
            break;
    }
    return false;
}

/* The topmost widget above `w` (GTK 3's gtk_widget_get_toplevel; in GTK
 * 4, gtk_widget_get_root's window when it has one). */
static GObject *toplevel(GObject *w)
{
    for (GObject *p; (p = gobj_gtk.gtk_widget_get_parent(w));)
        w = p;
    return w;
}

static void set_visible(gobj_page *pg, bool visible)
{
    gobj_page *win = gobj_page_of(toplevel(pg->obj));
    if (win && win->window && (visible || win->visible_child == pg->class_name))
        win->visible_child = visible ? pg->class_name : NULL;
    if (visible && !pg->visible && !pg->destroyed) {
        agent_in_hook++;
        submit_page(PACER_EV_PAGE_SELECT, pg, NULL);
        /* A stack or notebook shows the page at once: being scrolled to is
         * the same moment as being selected (DESIGN §2). */
        submit_page(PACER_EV_PAGE_SCROLL, pg, NULL);
        agent_in_hook--;
    }
    pg->visible = visible;
}

static void on_visible_child(GObject *stack, GParamSpec *pspec, gpointer data)
{
    gobj_page *pg = data;
    GObject *vc = NULL;
    g_object_get(stack, "visible-child", &vc, NULL);
    set_visible(pg, vc && is_inside(pg->obj, vc, stack));
    if (vc)
        g_object_unref(vc);
}

static void on_switch_page(GObject *nb, GObject *child, guint num, gpointer data)
{
    gobj_page *pg = data;
    set_visible(pg, child && is_inside(pg->obj, child, nb));
}

static void container_disconnect(gobj_page *pg)
{
    if (!pg->container)
        return;
    g_signal_handler_disconnect(pg->container, pg->container_id);
    g_object_remove_weak_pointer(pg->container, (gpointer *)&pg->container);
    pg->container = NULL;
}

/* Finds the stack or notebook the page sits in, a few levels up. */
static void container_connect(gobj_page *pg)
{
    GType notebook = gobj_gtk.gtk_notebook_get_type();
    GObject *o = gobj_gtk.gtk_widget_get_parent(pg->obj);
    for (int depth = 0; o && depth < 4; depth++, o = gobj_gtk.gtk_widget_get_parent(o)) {
        if (o == pg->container)
            return;
        bool is_stack = g_object_class_find_property(G_OBJECT_GET_CLASS(o), "visible-child") != NULL;
        bool is_notebook = notebook && g_type_is_a(G_OBJECT_TYPE(o), notebook);
        if (!is_stack && !is_notebook)
            continue;
        container_disconnect(pg);
        pg->container = o;
        g_object_add_weak_pointer(o, (gpointer *)&pg->container);
        if (is_stack) {
            pg->container_id =
                g_signal_connect_data(o, "notify::visible-child", G_CALLBACK(on_visible_child), pg, NULL, 0);
            on_visible_child(o, NULL, pg);
        } else {
            pg->container_id = g_signal_connect_data(o, "switch-page", G_CALLBACK(on_switch_page), pg, NULL, 0);
        }
        return;
    }
}

/* ---- view created ---- */

void gobj_pages_view_created(gobj_page *pg)
{
    if (pg->view_created || pg->destroyed)
        return;
    pg->view_created = true;
    submit_page(PACER_EV_PAGE_VIEW_CREATED, pg, NULL);
}

static void on_parent_notify(GObject *w, GParamSpec *pspec, gpointer data)
{
    gobj_page *pg = data;
    if (!gobj_gtk.gtk_widget_get_parent(w))
        return;
    agent_in_hook++;
    gobj_pages_view_created(pg);
    container_connect(pg);
    agent_in_hook--;
}

/* ---- creation ---- */

static void page_free(gpointer data)
{
    gobj_page *pg = data;
    frameclock_unlisten(&pg->listener);
    frameclock_frames_free(pg->frames);
    container_disconnect(pg);
    if (hooks->freed)
        hooks->freed(pg);
    free(pg);
}

void gobj_pages_track(GObject *obj, const char *class_name, bool window)
{
    if (!page_quark)
        page_quark = g_quark_from_static_string("pacer-agent-page");
    if (gobj_page_of(obj))
        return;
    gobj_page *pg = calloc(1, hooks->page_size);
    if (!pg) {
        agent_note_once("oom", "out of memory; some pages are not measured");
        return;
    }
    pg->listener.after_paint = on_after_paint;
    pg->obj = obj;
    pg->id = ++last_id;
    pg->window = window;
    pg->class_name = g_quark_to_string(g_quark_from_string(class_name));
    submit_page(PACER_EV_PAGE_CREATE, pg, class_name);
    g_object_set_qdata_full(obj, page_quark, pg, page_free);
    g_signal_connect_data(obj, "map", G_CALLBACK(on_map), pg, NULL, 0);
    g_signal_connect_data(obj, "unmap", G_CALLBACK(on_unmap), pg, NULL, 0);
    g_signal_connect_data(obj, "destroy", G_CALLBACK(on_destroy), pg, NULL, 0);
    if (hooks->tracked)
        hooks->tracked(pg);
    if (!window)
        g_signal_connect_data(obj, "notify::parent", G_CALLBACK(on_parent_notify), pg, NULL, 0);
}

/* ---- which widgets are pages ---- */

/* Whether instances of `type` are pages for the config in force: windows
 * always, other widgets when the config names their type. */
static bool type_configured(GType type)
{
    pacer_config *cfg = agent_config();
    bool configured = cfg && pacer_config_find_page(cfg, g_type_name(type)) >= 0;
    pacer_config_unref(cfg);
    return configured;
}

/* What gobj_pages_construct needs to know of a widget type, kept per type:
 * GTK builds thousands of widgets of a few hundred types while it starts,
 * and the answer takes two type tests and a look-up of the type's name in
 * the config. `configured` holds for the config generation it was found
 * under: a config from the server makes the next widget of the type ask
 * again. GTK thread only. */
typedef struct type_info {
    GType type;
    uint64_t generation;
    bool stack, window, configured;
} type_info;

#define TYPE_SLOTS 1024 /* a power of two; a type past TYPE_PROBES taken slots is not kept */
#define TYPE_PROBES 8

static type_info types[TYPE_SLOTS];

static void type_info_fill(type_info *t, GType type, uint64_t generation)
{
    static GType stack_type, window_type;
    if (!stack_type) {
        stack_type = gobj_gtk.gtk_stack_get_type();
        window_type = gobj_gtk.gtk_window_get_type();
    }
    t->type = type;
    t->stack = g_type_is_a(type, stack_type);
    t->window = g_type_is_a(type, window_type);
    t->configured = !t->window && type_configured(type);
    t->generation = generation;
}

static const type_info *type_info_of(GType type)
{
    uint64_t generation = pacer_config_generation(pacer_default());
    uint64_t h = (uint64_t)type * UINT64_C(0x9E3779B97F4A7C15);
    for (size_t i = 0; i < TYPE_PROBES; i++) {
        type_info *t = &types[((size_t)(h >> 32) + i) & (TYPE_SLOTS - 1)];
        if (t->type == type) {
            if (t->generation != generation) {
                t->configured = !t->window && type_configured(type);
                t->generation = generation;
            }
            return t;
        }
        if (!t->type) {
            type_info_fill(t, type, generation);
            return t;
        }
    }
    static type_info uncached;
    type_info_fill(&uncached, type, generation);
    return &uncached;
}

/* Whether the config in force names a page `name`. */
static bool name_configured(const char *name)
{
    pacer_config *cfg = agent_config();
    bool configured = cfg && pacer_config_find_page(cfg, name) >= 0;
    pacer_config_unref(cfg);
    return configured;
}

/* A stack's visible child changed: a child whose page name is configured
 * becomes a page (the header). */
static void on_visible_child_name(GObject *stack, GParamSpec *pspec, gpointer data)
{
    const char *name = gobj_gtk.gtk_stack_get_visible_child_name(stack);
    GObject *child = gobj_gtk.gtk_stack_get_visible_child(stack);
    if (!name || !child || gobj_page_of(child) || !agent_active())
        return;
    if (!name_configured(name))
        return;
    agent_in_hook++;
    gobj_pages_track(child, name, false);
    gobj_page *pg = gobj_page_of(child);
    if (pg) {
        gobj_pages_view_created(pg); /* it is in its stack already */
        container_connect(pg);
        if (gobj_gtk.gtk_widget_get_mapped(child))
            gobj_pages_on_map(child, pg);
    }
    agent_in_hook--;
}

bool gobj_pages_construct(GTypeInstance *instance, GType type, bool *ret_window)
{
    const type_info *t = type_info_of(type);
    if (t->stack)
        g_signal_connect_data(instance, "notify::visible-child-name", G_CALLBACK(on_visible_child_name), NULL, NULL,
                              0);
    *ret_window = t->window;
    return t->window || t->configured;
}

void gobj_pages_on_stack_add(GObject *stack, GObject *child, const char *name)
{
    if (!atomic_load(&hooks_set) || !name || !child || gobj_page_of(child))
        return;
    if (name_configured(name)) /* configured by its stack page name: created when it is added */
        gobj_pages_track(child, name, false);
}
