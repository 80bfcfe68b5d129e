/* Page life cycle on GTK 3 (DESIGN §2, §3.1): which GTK 3 moment is which
 * page event, for windows (kind "window") and stack / notebook pages (kind
 * "page") — the GTK 4 adapter's meanings (gtk4/pages.c), from GTK 3's API.
 *
 *   event          window                          page
 *   -------------  ------------------------------  ---------------------------------
 *   create         construction begins (types.c:   likewise, for a type the config in
 *                  GtkWidget's instance_init)      force names; or gtk_stack_add_named/
 *                                                  _titled with a configured name; or
 *                                                  a stack page whose name (from a
 *                                                  GtkBuilder file) is configured,
 *                                                  when it first becomes visible
 *   view_created   its child added (GtkContainer   gets a parent (notify::parent):
 *                  "add": an emission hook)        added to its stack / notebook
 *   show           first "map": the widget could be seen (a window shown; a
 *                  page the visible child of a mapped stack or notebook)
 *   draw           the frame reached the display, in a frame where the widget
 *                  itself drew (its "draw" signal ran) while mapped: after-
 *                  paint of the window's frame clock, unless the frame is
 *                  still queued in the display library then (Wayland: GDK
 *                  commits at after-paint and flushes at its next wait),
 *                  then the hand-over that follows (display.c); listening
 *                  on map, not on unmap
 *   select+scroll  —                               becomes the visible child of its
 *                                                  stack (notify::visible-child) or the
 *                                                  current page of its notebook
 *                                                  (switch-page)
 *   destroy        "destroy" (gtk_widget_destroy emits it at once in GTK 3)
 *
 * Windows: GTK 3 builds its menus, tooltips, combo-box and completion
 * pop-ups as GtkWindows too, and tells them apart only by the "type"
 * property g_object_new sets after the instance's init: a window of a class
 * of the app's (GtkApplicationWindow, GtkDialog, any subclass) is a page
 * from its construction as in GTK 4; GtkTooltipWindow and
 * GtkOffscreenWindow never are; a plain GtkWindow becomes a page when it is
 * first shown as a top-level (GTK_WINDOW_TOPLEVEL), and its creation is
 * then — a plain GtkWindow has no init code of the app's that could start a
 * request earlier.
 *
 * Draw events are thinned at the source as in GTK 4: a page reports its
 * first draw and then one draw after each request end anywhere in the
 * process (agent_net_epoch).
 *
 * The visible page (gtk3_pages_visible, for `jank` and `net` records): the
 * visible stack or notebook page of the window that painted last, else that
 * window.
 *
 * Page ids: a number per tracked instance, in creation order (1, 2, …),
 * never its address.
 *
 * Windows also get their frames counted (window_frames.c), on the same
 * frame clock subscription.
 *
 * State: one `page` per instance, attached as qdata and freed with the
 * object (page_free also drops every handler on other objects). All of it
 * runs on the GTK thread (the main thread).
 */
#include "gtk3.h"

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
    uint64_t drawn_epoch;
    uint64_t paint_epoch;
    clock_frames *frames;   /* windows */
    gulong draw_id;         /* its "draw" handler, while mapped */
    GObject *container; /* weak pointer: stack or notebook */
    gulong container_id;
    } page;

static GQuark page_quark;
static uint64_t last_id;
static _Atomic(const char *) visible_now;

/* Draws of the frame that waits for its hand-over (the header): page ids
 * and kinds, not pointers, as a page may be freed meanwhile. */
#define MAX_DEFERRED 64
static struct {
    uint64_t id;
    bool window;
} deferred[MAX_DEFERRED];
static size_t n_deferred;

const char *gtk3_pages_visible(void)
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

/* The widget drew in this frame ("draw", between the clock's paint and
 * after-paint). FALSE: the emission goes on as without the agent. */
static gboolean on_draw(GtkWidget *w, cairo_t *cr, gpointer data)
{
    page *pg = data;
    pg->painted = true;
    pg->paint_epoch = atomic_load(&agent_net_epoch);
    return FALSE;
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
    if (!display_main_frame_queued() || n_deferred == MAX_DEFERRED) {
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
    if (!pg->draw_id)
        pg->draw_id = g_signal_connect_data(w, "draw", G_CALLBACK(on_draw), pg, NULL, 0);
    gtk3_frames_on_map(pg->frames, w);
}

static void draw_disconnect(page *pg)
{
    if (pg->draw_id)
        g_signal_handler_disconnect(pg->obj, pg->draw_id);
    pg->draw_id = 0;
}

static void on_unmap(GtkWidget *w, gpointer data)
{
    page *pg = data;
    frameclock_unlisten(&pg->listener);
    draw_disconnect(pg);
    frameclock_frames_unmap(pg->frames);
}

/* ---- destroy ---- */

static void page_gone(page *pg)
{
    if (pg->destroyed)
        return;
    pg->destroyed = true;
    frameclock_unlisten(&pg->listener);
    if (pg->window)
        g_object_set_qdata(pg->obj, g_quark_from_static_string(GTK3_DESTROYED_QUARK), GINT_TO_POINTER(1));
    agent_in_hook++;
    submit_page(PACER_EV_PAGE_DESTROY, pg, NULL);
    agent_in_hook--;
    gobj_leaks_on_page_gone(pg->obj, pg->class_name, pg->id, pg->window);
}

static void on_destroy(GtkWidget *w, gpointer data)
{
    page_gone(data);
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
    GtkWidget *root = gtk_widget_get_toplevel(GTK_WIDGET(pg->obj));
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

/* GtkContainer::add of any container (an emission hook: a window's
 * handler cannot be connected while GtkWidget's init runs, before the
 * instance is a GtkContainer): a window page got its child. */
static gboolean on_add(GSignalInvocationHint *hint, guint n, const GValue *params, gpointer data)
{
    page *pg = n >= 2 && agent_active() ? page_of(g_value_get_object(&params[0])) : NULL;
    if (pg && pg->window && g_value_get_object(&params[1])) {
        agent_in_hook++;
        view_created(pg);
        agent_in_hook--;
    }
    return TRUE; /* keep the hook */
}

static void watch_adds(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    GType container = gtk_container_get_type();
    g_type_class_ref(container); /* signals exist once the class does */
    guint id = g_signal_lookup("add", container);
    if (id)
        g_signal_add_emission_hook(id, 0, on_add, NULL, NULL);
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
        pg->frames = gtk3_frames_new(pg->class_name, pg->id);
        watch_adds();
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

/* A plain GtkWindow: a page once it is first mapped as a top-level (the
 * header). */
static void on_plain_window_map(GtkWidget *w, gpointer data)
{
    if (!agent_active() || page_of(w) || gtk_window_get_window_type(GTK_WINDOW(w)) != GTK_WINDOW_TOPLEVEL)
        return; /* a pop-up: at each map, one call */
    agent_in_hook++;
    page_track((GObject *)w, "GtkWindow", true);
    page *pg = page_of(w);
    if (pg) {
        if (gtk_bin_get_child(GTK_BIN(w)))
            view_created(pg);
        on_map(w, pg);
    }
    agent_in_hook--;
}

void gtk3_pages_on_construct(GTypeInstance *instance, GType type)
{
    const type_info *t = type_info_of(type);
    if (t->stack)
        g_signal_connect_data(instance, "notify::visible-child-name", G_CALLBACK(on_visible_child_name), NULL, NULL,
                              0);
    if (!t->window && !t->configured)
        return;
    const char *name = g_type_name(type);
    if (t->window && (strcmp(name, "GtkTooltipWindow") == 0 || strcmp(name, "GtkOffscreenWindow") == 0))
        return; /* never a top-level the user opened */
    if (t->window && strcmp(name, "GtkWindow") == 0) {
        g_signal_connect_data(instance, "map", G_CALLBACK(on_plain_window_map), NULL, NULL, 0);
        return;
    }
    agent_setup(); /* normally done at main(); a window built earlier does it */
    page_track((GObject *)instance, name, t->window);
}

void gtk3_pages_on_stack_add(GObject *stack, GObject *child, const char *name)
{
    if (!name || !child || page_of(child))
        return;
    pacer_config *cfg = agent_config();
    bool configured = cfg && pacer_config_find_page(cfg, name) >= 0;
    pacer_config_unref(cfg);
    if (configured) /* configured by its stack page name: created when it is added */
        page_track(child, name, false);
}
