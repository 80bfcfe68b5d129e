/* Page life cycle on GTK 4 (DESIGN §2, §3.1): which GTK moment is which
 * page event, for windows (kind "window") and stack / notebook pages (kind
 * "page").
 *
 *   event          window                          page
 *   -------------  ------------------------------  ---------------------------------
 *   create         construction begins (types.c:   likewise, for a type the config in
 *                  GtkWidget's instance_init)      force names; or gtk_stack_add_named/
 *                                                  _titled with a configured name; or
 *                                                  a stack page whose name (from a
 *                                                  GtkBuilder file) is configured,
 *                                                  when it first becomes visible
 *   view_created   child set: gtk_window_set_child  gets a parent (notify::parent):
 *                  called by the app, else         added to its stack / notebook
 *                  notify::child
 *   show           first "map": the widget could be seen (a window shown; a
 *                  page the visible child of a mapped stack or notebook)
 *   draw           after-paint of the widget's frame clock, in a frame that
 *                  painted, while the widget is mapped (listening on map,
 *                  not on unmap; gobject/frameclock.c)
 *   select+scroll  —                               becomes the visible child of its
 *                                                  stack (notify::visible-child; also
 *                                                  AdwViewStack) or the current page
 *                                                  of its notebook (switch-page)
 *   destroy        leaves gtk_window_get_toplevels() ("destroy" signal)
 *                  or "destroy"
 *
 * Draw events are thinned at the source: a page reports its first draw and
 * then one draw after each request end anywhere in the process
 * (agent_net_epoch), which is all the model uses (initial draw, final draw =
 * first draw after the page's APIs ended). An idle app with a spinner thus
 * sends no event per frame.
 *
 * The visible page (gtk4_pages_visible, for `jank` records): the visible stack
 * or notebook page of the window that painted last, else that window. Kept
 * as an atomic pointer to an interned class name, so the watchdog thread
 * can read it while the GTK thread is stuck.
 *
 * Page ids: a number per tracked instance, in creation order (1, 2, …),
 * used by every event and record of the instance; never its address, which
 * would tell the address-space layout to whoever reads the records.
 *
 * Windows also get their frames counted (window_frames.c), on the same
 * frame clock subscription.
 *
 * State: one `page` per instance, attached as qdata and freed with the
 * object (page_free also drops every handler on other objects). All of it
 * runs on the GTK thread (the main thread).
 */
#include "gtk4.h"

#include <stdlib.h>
#include <string.h>

typedef struct page {
    clock_listener listener; /* first: the clock callbacks get it */
    GObject *obj; /* not a reference: the page lives as long as obj */
    uint64_t id;
    const char *class_name;    /* interned: lives as long as the process */
    const char *visible_child; /* windows: class of their visible page, or NULL */
    bool window;
    bool view_created;
    bool destroyed;
    bool shown; /* mapped once: page_show sent */
    bool drawn;
    bool painted;
    bool visible; /* visible child of its container (pages) */
    bool in_toplevels;
    uint64_t drawn_epoch;
    uint64_t paint_epoch;
    clock_frames *frames;   /* windows */
    GObject *container; /* weak pointer: stack or notebook */
    gulong container_id;
    struct page *next_window;
} page;

static GQuark page_quark;
static uint64_t last_id;
static page *windows; /* window pages, for the toplevel list check */
static bool toplevels_watched;
static _Atomic(const char *) visible_now;

const char *gtk4_pages_visible(void)
{
    return atomic_load_explicit(&visible_now, memory_order_relaxed);
}

static page *page_of(gpointer obj)
{
    return obj && page_quark ? g_object_get_qdata(obj, page_quark) : NULL;
}

static void submit_page(pacer_event_type type, page *pg, const char *class_name)
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

static void on_paint(clock_listener *l)
{
    page *pg = (page *)l;
    pg->painted = true;
    pg->paint_epoch = atomic_load(&agent_net_epoch);
}

static void on_after_paint(clock_listener *l, GObject *clock, int64_t now)
{
    page *pg = (page *)l;
    if (!pg->painted || pg->destroyed)
        return;
    pg->painted = false;
    if (pg->window)
        atomic_store_explicit(&visible_now, pg->visible_child ? pg->visible_child : pg->class_name,
                              memory_order_relaxed);
    if (!gtk_widget_get_mapped(GTK_WIDGET(pg->obj)))
        return;
    if (pg->drawn && pg->drawn_epoch == pg->paint_epoch)
        return;
    pg->drawn = true;
    pg->drawn_epoch = pg->paint_epoch;
    agent_in_hook++;
    submit_page(PACER_EV_PAGE_DRAW, pg, NULL);
    agent_in_hook--;
}

static void on_map(GtkWidget *w, gpointer data)
{
    page *pg = data;
    if (pg->destroyed)
        return;
    if (!pg->shown) {
        pg->shown = true;
        agent_in_hook++;
        submit_page(PACER_EV_PAGE_SHOW, pg, NULL);
        agent_in_hook--;
    }
    frameclock_listen(&pg->listener, (GObject *)gtk_widget_get_frame_clock(w));
    gtk4_frames_on_map(pg->frames, w);
}

static void on_unmap(GtkWidget *w, gpointer data)
{
    page *pg = data;
    frameclock_unlisten(&pg->listener);
    frameclock_frames_unmap(pg->frames);
}

/* ---- destroy ---- */

static void page_gone(page *pg)
{
    if (pg->destroyed)
        return;
    pg->destroyed = true;
    frameclock_unlisten(&pg->listener);
    agent_in_hook++;
    submit_page(PACER_EV_PAGE_DESTROY, pg, NULL);
    agent_in_hook--;
    gobj_leaks_on_page_gone(pg->obj, pg->class_name, pg->id, pg->window);
}

static void on_destroy(GtkWidget *w, gpointer data)
{
    page_gone(data);
}

/* gtk_window_destroy() drops GTK's reference and removes the window from
 * the toplevel list, but the "destroy" signal waits for the last reference
 * (which the app may hold): leaving the list is the reliable moment. */
static void on_toplevels_changed(GListModel *list, guint pos, guint removed, guint added, gpointer data)
{
    guint n = g_list_model_get_n_items(list);
    for (page *pg = windows; pg; pg = pg->next_window) {
        if (pg->destroyed)
            continue;
        bool present = false;
        for (guint i = 0; i < n && !present; i++) {
            gpointer item = g_list_model_get_item(list, i);
            present = item == (gpointer)pg->obj;
            if (item)
                g_object_unref(item);
        }
        if (present)
            pg->in_toplevels = true;
        else if (pg->in_toplevels)
            page_gone(pg);
    }
}

/* ---- selection (pages in a stack or notebook) ---- */

static bool is_inside(GtkWidget *w, GObject *ancestor_or_self, GObject *stop)
{
    for (int depth = 0; w && depth < 8; depth++, w = gtk_widget_get_parent(w)) {
        if ((GObject *)w == ancestor_or_self)
            return true;
        if ((GObject *)w == stop)
            break;
    }
    return false;
}

static void set_visible(page *pg, bool visible)
{
    GtkRoot *root = gtk_widget_get_root(GTK_WIDGET(pg->obj));
    page *win = root ? page_of(root) : NULL;
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
    page *pg = data;
    GtkWidget *vc = NULL;
    g_object_get(stack, "visible-child", &vc, NULL);
    set_visible(pg, vc && is_inside(GTK_WIDGET(pg->obj), (GObject *)vc, stack));
    if (vc)
        g_object_unref(vc);
}

static void on_switch_page(GtkNotebook *nb, GtkWidget *child, guint num, gpointer data)
{
    page *pg = data;
    set_visible(pg, child && is_inside(GTK_WIDGET(pg->obj), (GObject *)child, (GObject *)nb));
}

static void container_disconnect(page *pg)
{
    if (!pg->container)
        return;
    g_signal_handler_disconnect(pg->container, pg->container_id);
    g_object_remove_weak_pointer(pg->container, (gpointer *)&pg->container);
    pg->container = NULL;
}

/* Finds the stack (anything with a "visible-child" property: GtkStack,
 * AdwViewStack) or notebook the page sits in, a few levels up. */
static void container_connect(page *pg)
{
    GType notebook = gtk_notebook_get_type();
    GtkWidget *w = gtk_widget_get_parent(GTK_WIDGET(pg->obj));
    for (int depth = 0; w && depth < 4; depth++, w = gtk_widget_get_parent(w)) {
        GObject *o = (GObject *)w;
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

static void view_created(page *pg)
{
    if (pg->view_created || pg->destroyed)
        return;
    pg->view_created = true;
    submit_page(PACER_EV_PAGE_VIEW_CREATED, pg, NULL);
}

static void on_child_notify(GObject *win, GParamSpec *pspec, gpointer data)
{
    if (gtk_window_get_child(GTK_WINDOW(win)))
        view_created(data);
}

static void on_parent_notify(GObject *w, GParamSpec *pspec, gpointer data)
{
    page *pg = data;
    if (!gtk_widget_get_parent(GTK_WIDGET(w)))
        return;
    agent_in_hook++;
    view_created(pg);
    container_connect(pg);
    agent_in_hook--;
}

/* ---- creation ---- */

static void page_free(gpointer data)
{
    page *pg = data;
    frameclock_unlisten(&pg->listener);
    frameclock_frames_free(pg->frames);
    container_disconnect(pg);
    for (page **it = &windows; *it; it = &(*it)->next_window) {
        if (*it == pg) {
            *it = pg->next_window;
            break;
        }
    }
    free(pg);
}

static void page_track(GObject *obj, const char *class_name, bool window)
{
    if (!page_quark)
        page_quark = g_quark_from_static_string("pacer-agent-page");
    if (page_of(obj))
        return;
    page *pg = calloc(1, sizeof(*pg));
    if (!pg) {
        agent_note_once("oom", "out of memory; some pages are not measured");
        return;
    }
    pg->listener.paint = on_paint;
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
    if (window) {
        pg->frames = gtk4_frames_new(pg->class_name, pg->id);
        g_signal_connect_data(obj, "notify::child", G_CALLBACK(on_child_notify), pg, NULL, 0);
        pg->next_window = windows;
        windows = pg;
        if (!toplevels_watched) {
            toplevels_watched = true;
            g_signal_connect_data(gtk_window_get_toplevels(), "items-changed", G_CALLBACK(on_toplevels_changed),
                                  NULL, NULL, 0);
        }
    } else {
        g_signal_connect_data(obj, "notify::parent", G_CALLBACK(on_parent_notify), pg, NULL, 0);
    }
}

/* Whether instances of `type` are pages for the config in force: windows
 * always, other widgets when the config names their type. */
static bool type_configured(GType type)
{
    pacer_config *cfg = agent_config();
    bool configured = cfg && pacer_config_find_page(cfg, g_type_name(type)) >= 0;
    pacer_config_unref(cfg);
    return configured;
}

/* What pages_on_construct needs to know of a widget type, kept per type:
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
        stack_type = gtk_stack_get_type();
        window_type = gtk_window_get_type();
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

/* Stack pages named in a GtkBuilder file (<object class="GtkStackPage">
 * <property name="name">) are added inside GTK, not through the app's
 * gtk_stack_add_named: every stack is watched, and a visible child whose
 * page name the config in force names becomes a page when it is first
 * selected (created then; shown at once when the stack is mapped). */
static void on_visible_child_name(GObject *stack, GParamSpec *pspec, gpointer data)
{
    const char *name = gtk_stack_get_visible_child_name((GtkStack *)stack);
    GtkWidget *child = gtk_stack_get_visible_child((GtkStack *)stack);
    if (!name || !child || page_of(child) || !agent_active())
        return;
    pacer_config *cfg = agent_config();
    bool configured = cfg && pacer_config_find_page(cfg, name) >= 0;
    pacer_config_unref(cfg);
    if (!configured)
        return;
    agent_in_hook++;
    page_track((GObject *)child, name, false);
    page *pg = page_of(child);
    if (pg) {
        view_created(pg); /* it is in its stack already */
        container_connect(pg);
        if (gtk_widget_get_mapped(child))
            on_map(child, pg);
    }
    agent_in_hook--;
}

void gtk4_pages_on_construct(GTypeInstance *instance, GType type)
{
    const type_info *t = type_info_of(type);
    if (t->stack)
        g_signal_connect_data(instance, "notify::visible-child-name", G_CALLBACK(on_visible_child_name), NULL, NULL,
                              0);
    if (!t->window && !t->configured)
        return;
    bool window = t->window;
    agent_setup(); /* normally done at main(); a window built earlier does it */
    page_track((GObject *)instance, g_type_name(type), window);
}

static void pages_on_window_child(GtkWindow *window)
{
    page *pg = page_of(window);
    if (pg && gtk_window_get_child(window))
        view_created(pg);
}

void gtk4_pages_on_stack_add(GObject *stack, GObject *child, const char *name)
{
    if (!name || !child || page_of(child))
        return;
    pacer_config *cfg = agent_config();
    bool configured = cfg && pacer_config_find_page(cfg, name) >= 0;
    pacer_config_unref(cfg);
    if (configured) /* configured by its stack page name: created when it is added */
        page_track(child, name, false);
}

/* ---- GTK 4 calls made by the application (GTK's own calls are bound
 * inside libgtk and never come here; the signals above cover them; the
 * names GTK 3 shares are gobject/calls.c's). ---- */

typedef void (*set_child_fn)(GtkWindow *, GtkWidget *);
static set_child_fn real_gtk_window_set_child;

AGENT_EXPORT void gtk_window_set_child(GtkWindow *window, GtkWidget *child)
{
    AGENT_REAL(real_gtk_window_set_child, GTK4_LIB, "gtk_window_set_child");
    real_gtk_window_set_child(window, child);
    if (!agent_in_hook && agent_active() && agent_on_main_thread()) {
        agent_in_hook++;
        pages_on_window_child(window);
        agent_in_hook--;
    }
}
