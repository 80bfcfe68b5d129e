/* What the GObject toolkit adapters (gtk4/, gtk3/) share: the functions of
 * GLib, GObject and GIO, and the parts built on them alone.
 *
 *   gobj_api.c    the tables of GLib/GObject/GIO functions and of the GTK
 *                 and GDK functions GTK 3 and GTK 4 share, below;
 *   types.c       construction seen from the type system: GtkWidget's and
 *                 GApplication's instance_init run a trampoline first;
 *   app.c         "application created" (GApplication activate) and the
 *                 handoff to a running instance;
 *   frameclock.c  one subscription per GdkFrameClock (GTK 3 and 4 share its
 *                 signals), shared by everything that follows a window's
 *                 frames; a window's `frames` records timed by its clock;
 *   pages.c       page life cycle: a page's state and events, its draws,
 *                 its selection in a stack or notebook, which widgets are
 *                 pages (the adapter's hooks do what is its own);
 *   leaks.c       GObject leaks: a destroyed page's objects watched until
 *                 the grace period ends (what a page owns: the adapter's
 *                 walk);
 *   known.c       leaks of toolkits and libraries no app can avoid;
 *   refs.c        --leaks=refs: who holds a leaked object;
 *   calls.c       GTK calls GTK 3 and GTK 4 share by name, made by the
 *                 application (gtk_stack_add_named …), handed to pages.c
 *                 once an adapter is in force;
 *   soup3.c       libsoup-3.0 requests (built with libsoup-3.0's headers);
 *   soup2.c       libsoup-2.4 requests (built with libsoup-2.4's headers).
 *
 * The agent links none of these libraries: every function below is found
 * by name (agent_real) when a GTK adapter attaches, into `gobj_fn`; each
 * name is then defined to its slot, so code calls g_type_name() as it would
 * with GLib linked. Nothing may call one of them before gobj_api_load()
 * returned true.
 */
#ifndef PACER_AGENT_GOBJ_H
#define PACER_AGENT_GOBJ_H

#define G_DISABLE_CAST_CHECKS 1

#include "agent.h"

#include <gio/gio.h>
#include <glib-object.h>

/* The GLib, GObject and GIO functions the agent calls: X(library, name). */
#define GOBJ_FUNCTIONS(X)                          \
    X(AGENT_LIBGLIB, g_free)                       \
    X(AGENT_LIBGLIB, g_quark_from_static_string)   \
    X(AGENT_LIBGLIB, g_quark_from_string)          \
    X(AGENT_LIBGLIB, g_quark_to_string)            \
    X(AGENT_LIBGLIB, g_timeout_add_full)           \
    X(AGENT_LIBGLIB, g_idle_add_full)              \
    X(AGENT_LIBGLIB, g_error_free)                 \
    X(AGENT_LIBGOBJECT, g_type_name)               \
    X(AGENT_LIBGOBJECT, g_type_is_a)               \
    X(AGENT_LIBGOBJECT, g_type_from_name)          \
    X(AGENT_LIBGOBJECT, g_type_class_ref)          \
    X(AGENT_LIBGOBJECT, g_type_class_peek)         \
    X(AGENT_LIBGOBJECT, g_type_parent)             \
    X(AGENT_LIBGOBJECT, g_signal_lookup)           \
    X(AGENT_LIBGOBJECT, g_signal_add_emission_hook) \
    X(AGENT_LIBGOBJECT, g_signal_connect_data)     \
    X(AGENT_LIBGOBJECT, g_signal_handler_disconnect) \
    X(AGENT_LIBGOBJECT, g_object_set_qdata_full)   \
    X(AGENT_LIBGOBJECT, g_object_set_qdata)        \
    X(AGENT_LIBGOBJECT, g_object_get_qdata)        \
    X(AGENT_LIBGOBJECT, g_object_ref)              \
    X(AGENT_LIBGOBJECT, g_object_unref)            \
    X(AGENT_LIBGOBJECT, g_object_get)              \
    X(AGENT_LIBGOBJECT, g_object_class_find_property) \
    X(AGENT_LIBGOBJECT, g_object_add_weak_pointer) \
    X(AGENT_LIBGOBJECT, g_object_remove_weak_pointer) \
    X(AGENT_LIBGOBJECT, g_object_is_floating)      \
    X(AGENT_LIBGOBJECT, g_weak_ref_init)           \
    X(AGENT_LIBGOBJECT, g_weak_ref_get)            \
    X(AGENT_LIBGOBJECT, g_weak_ref_clear)          \
    X(AGENT_LIBGOBJECT, g_value_get_object)        \
    X(AGENT_LIBGOBJECT, g_value_get_enum)          \
    X(AGENT_LIBGIO, g_application_get_type)        \
    X(AGENT_LIBGIO, g_application_get_is_remote)  \
    X(AGENT_LIBGIO, g_application_get_is_registered)

#define AGENT_LIBGIO "libgio-2.0.so.0"

typedef struct gobj_table {
#define GOBJ_SLOT(lib, name) __typeof__(name) *name;
    GOBJ_FUNCTIONS(GOBJ_SLOT)
#undef GOBJ_SLOT
} gobj_table;

extern gobj_table gobj_fn;

#ifndef GOBJ_API_TABLE_ONLY
/* GLib's own macros of these two (a fast path, a typed result) call the
 * function by name: they give way to the table. */
#undef g_type_is_a
#undef g_object_ref
#define g_free (*gobj_fn.g_free)
#define g_quark_from_static_string (*gobj_fn.g_quark_from_static_string)
#define g_quark_from_string (*gobj_fn.g_quark_from_string)
#define g_quark_to_string (*gobj_fn.g_quark_to_string)
#define g_timeout_add_full (*gobj_fn.g_timeout_add_full)
#define g_idle_add_full (*gobj_fn.g_idle_add_full)
#define g_error_free (*gobj_fn.g_error_free)
#define g_type_name (*gobj_fn.g_type_name)
#define g_type_is_a (*gobj_fn.g_type_is_a)
#define g_type_from_name (*gobj_fn.g_type_from_name)
#define g_type_class_ref (*gobj_fn.g_type_class_ref)
#define g_type_class_peek (*gobj_fn.g_type_class_peek)
#define g_type_parent (*gobj_fn.g_type_parent)
#define g_signal_lookup (*gobj_fn.g_signal_lookup)
#define g_signal_add_emission_hook (*gobj_fn.g_signal_add_emission_hook)
#define g_signal_connect_data (*gobj_fn.g_signal_connect_data)
#define g_signal_handler_disconnect (*gobj_fn.g_signal_handler_disconnect)
#define g_object_set_qdata_full (*gobj_fn.g_object_set_qdata_full)
#define g_object_set_qdata (*gobj_fn.g_object_set_qdata)
#define g_object_get_qdata (*gobj_fn.g_object_get_qdata)
#define g_object_ref (*gobj_fn.g_object_ref)
#define g_object_unref (*gobj_fn.g_object_unref)
#define g_object_get (*gobj_fn.g_object_get)
#define g_object_class_find_property (*gobj_fn.g_object_class_find_property)
#define g_object_add_weak_pointer (*gobj_fn.g_object_add_weak_pointer)
#define g_object_remove_weak_pointer (*gobj_fn.g_object_remove_weak_pointer)
#define g_object_is_floating (*gobj_fn.g_object_is_floating)
#define g_weak_ref_init (*gobj_fn.g_weak_ref_init)
#define g_weak_ref_get (*gobj_fn.g_weak_ref_get)
#define g_weak_ref_clear (*gobj_fn.g_weak_ref_clear)
#define g_value_get_object (*gobj_fn.g_value_get_object)
#define g_value_get_enum (*gobj_fn.g_value_get_enum)
#define g_application_get_type (*gobj_fn.g_application_get_type)
#define g_application_get_is_remote (*gobj_fn.g_application_get_is_remote)
#define g_application_get_is_registered (*gobj_fn.g_application_get_is_registered)
#endif

/* The GTK and GDK functions GTK 3 and GTK 4 both have, by one name and
 * signature but for their instance types (GObject * here: gobject/ sees no
 * GTK header), which the shared parts below call: X(library, name, return
 * type, parameters), the library the adapter's GTK or GDK one. Found by
 * name when the adapter attaches, into `gobj_gtk`, and called through it
 * (gobj_gtk.name(…)): the adapter's own table holds the same names. */
enum { GOBJ_GTK, GOBJ_GDK };
#define GOBJ_GTK_FUNCTIONS(X)                                                          \
    X(GOBJ_GTK, gtk_widget_get_mapped, gboolean, (GObject *widget))                  \
    X(GOBJ_GTK, gtk_widget_get_frame_clock, GObject *, (GObject *widget))            \
    X(GOBJ_GTK, gtk_widget_get_parent, GObject *, (GObject *widget))                 \
    X(GOBJ_GTK, gtk_window_get_type, GType, (void))                                  \
    X(GOBJ_GTK, gtk_notebook_get_type, GType, (void))                                \
    X(GOBJ_GTK, gtk_stack_get_type, GType, (void))                                   \
    X(GOBJ_GTK, gtk_stack_get_visible_child, GObject *, (GObject *stack))            \
    X(GOBJ_GTK, gtk_stack_get_visible_child_name, const char *, (GObject *stack))    \
    X(GOBJ_GDK, gdk_frame_clock_get_frame_time, gint64, (GObject *clock))            \
    X(GOBJ_GDK, gdk_frame_clock_get_refresh_info, void,                               \
      (GObject *clock, gint64 base_time, gint64 *refresh_interval, gint64 *presentation_time))

typedef struct gobj_gtk_table {
#define GOBJ_GTK_SLOT(lib, name, ret, params) ret(*name) params;
    GOBJ_GTK_FUNCTIONS(GOBJ_GTK_SLOT)
#undef GOBJ_GTK_SLOT
} gobj_gtk_table;

extern gobj_gtk_table gobj_gtk;

/* Fills gobj_fn, and gobj_gtk from the adapter's libraries (`gdk_lib` may
 * be `gtk_lib`: GTK 4's GDK is inside it). Returns true when every
 * function was found; otherwise the tables are left as they were and
 * *ret_missing names the first missing function. Once they are filled,
 * returns true at once. Any thread (an adapter's attach). */
bool gobj_api_load(const char *gtk_lib, const char *gdk_lib, const char **ret_missing);

/* ---- types.c ---- */

/* Called for every new widget instance, before any instance_init of it
 * runs (the adapter decides whether it is a page), with its own type. */
typedef void (*gobj_construct_fn)(GTypeInstance *instance, GType type);
/* The GTK adapter in force watches widgets: `fn` runs at each GtkWidget
 * construction on the main thread while the agent is active. Call from
 * attach, before GTK registers GtkWidget. */
void gobj_types_watch_widgets(gobj_construct_fn fn);
/* Says once when GtkWidget was registered before the hooks were in place
 * (no construction can be seen then). */
void gobj_types_check(void);

/* ---- app.c ---- */
/* A GApplication instance was constructed (types.c's trampoline). */
void gobj_app_on_application(GTypeInstance *app);
/* The application-created mark: emission hooks on GApplication's
 * activate / open / command-line. Main thread, at install. */
void gobj_app_install(void);

/* ---- frameclock.c ---- */
typedef struct clock_listener clock_listener;
struct clock_listener {
    /* any may be NULL; `now` is CLOCK_MONOTONIC ns, read once per signal */
    void (*before_paint)(clock_listener *l, int64_t now);
    void (*update)(clock_listener *l);
    void (*paint)(clock_listener *l);
    void (*after_paint)(clock_listener *l, GObject *clock, int64_t now);
    /* frameclock.c's */
    GObject *clock; /* a reference while listening */
    clock_listener *next;
};
/* Starts listening to `clock` (a GdkFrameClock; NULL: nothing happens and
 * false is returned), unless already listening. Main thread. */
bool frameclock_listen(clock_listener *l, GObject *clock);
/* Stops listening; does nothing when not listening. Main thread. */
void frameclock_unlisten(clock_listener *l);
/* When each phase of the clock's cycle in progress (at after-paint: the
 * cycle ending) began, CLOCK_MONOTONIC ns, 0 for a phase the cycle
 * skipped; NULL for a clock nobody listens to. Main thread. */
enum { CLOCK_BEFORE_PAINT, CLOCK_UPDATE, CLOCK_LAYOUT, CLOCK_PAINT, CLOCK_AFTER_PAINT, CLOCK_N_MARKS };
const int64_t *frameclock_marks(GObject *clock);
/* A phase begins now in the clock's cycle in progress, though its signal
 * comes later (GDK's X11 toplevels compute their size, measuring every
 * widget, at the end of update): kept unless the phase began already. */
void frameclock_mark(GObject *clock, int mark);
/* A frame's phases (FRAME_*) from start to end, given the marks of its
 * cycle (NULL: none known, false returned); they add up to end − start.
 * Before the cycle's before-paint is `events` (the frame was due, the
 * loop held it back); before-paint and update are `update`. */
bool frameclock_phases(const int64_t *marks, int64_t start, int64_t end, int64_t phases[FRAME_N_PHASES]);

/* A window's `frames` records (DESIGN §3.3), timed by its frame clock while
 * it is mapped: the cycles and their grading, which the adapters'
 * window_frames.c share. An adapter embeds one in its window's state and
 * says which cycles drew the window. Main thread. */
typedef struct clock_frames clock_frames;
struct clock_frames {
    clock_listener listener; /* first: the callbacks get it */
    /* the adapter's (the three functions may be NULL): */
    bool draws_watched; /* a cycle is a frame only when it set `rendered`;
                           false: every cycle is one */
    bool rendered;      /* the window drew in the cycle in progress */
    void (*cycle_begins)(void);                          /* at before-paint */
    void (*unmapped)(clock_frames *f);                   /* stop watching draws */
    const frame_widget_time *(*widgets)(size_t *ret_n); /* the frame's widget types' times */
    /* frameclock.c's: */
    frame_stats *stats;
    int64_t begin, prev_begin, prev_end;
    bool in_frame, update, prev_update;
    clock_frames *next;
};
/* A window's frames in the adapter's state of `size` bytes, which begins
 * with the clock_frames (zeroed: the adapter fills its fields before
 * frameclock_frames_map); its records carry `class_name` (interned) and
 * `instance` (the window's page id). NULL on ENOMEM. */
void *frameclock_frames_new(size_t size, const char *class_name, uint64_t instance);
/* The window was mapped: counting starts on its `clock`. True when it
 * started now; false when it counts already or `clock` is NULL. */
bool frameclock_frames_map(clock_frames *f, GObject *clock);
/* The window was unmapped: its final record. Accepts NULL. */
void frameclock_frames_unmap(clock_frames *f);
/* Writes what is pending and frees the adapter's state (unmapped first).
 * Accepts NULL. */
void frameclock_frames_free(clock_frames *f);
/* At exit: the frames since their last record, of every window. */
void frameclock_frames_flush_all(void);

/* ---- pages.c ---- */
/* A page: a window (kind "window") or a stack / notebook page (kind "page")
 * tracked from its creation; the adapter's page begins with one. */
typedef struct gobj_page gobj_page;
struct gobj_page {
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
    clock_frames *frames; /* windows */
    GObject *container;   /* weak pointer: stack or notebook */
    gulong container_id;
};
/* What is the adapter's in its pages (any function may be NULL). */
typedef struct gobj_page_hooks {
    size_t page_size; /* the adapter's page, which begins with a gobj_page */
    /* a draw waits for the frame's hand-over when the display library
     * still holds the frame at after-paint (GTK 3, gobject/pages.c) */
    bool defer_draws;
    /* a page is tracked (its create event sent, map / unmap / destroy
     * connected): a window's frames are the adapter's to make */
    void (*tracked)(gobj_page *pg);
    /* mapped (after its show event, listening to `widget`'s clock);
     * unmapped (before its frames' final record) */
    void (*mapped)(gobj_page *pg, GObject *widget);
    void (*unmapped)(gobj_page *pg);
    /* destroyed (before its destroy event); freed with its object */
    void (*gone)(gobj_page *pg);
    void (*freed)(gobj_page *pg);
} gobj_page_hooks;
/* Set by the adapter's attach. */
void gobj_pages_set_hooks(const gobj_page_hooks *hooks);
/* A new widget instance starts its construction (the adapter's
 * gobj_construct_fn begins here): a stack is watched for configured page
 * names; true when the widget is a page for the config in force — a window
 * (*ret_window), or a type the config names. */
bool gobj_pages_construct(GTypeInstance *instance, GType type, bool *ret_window);
/* Tracks `obj` as a page of `class_name` (its create event), unless it is
 * one already. */
void gobj_pages_track(GObject *obj, const char *class_name, bool window);
/* The page of `obj`, or NULL. */
gobj_page *gobj_page_of(gpointer obj);
/* The page painted in the frame-clock cycle in progress (its draw at
 * after-paint). */
void gobj_page_painted(gobj_page *pg);
/* The page's widget `w` was mapped (its show, its draws from now on). */
void gobj_pages_on_map(GObject *w, gobj_page *pg);
/* The page's view was created; the page is gone (its destroy event). */
void gobj_pages_view_created(gobj_page *pg);
void gobj_pages_gone(gobj_page *pg);
/* A stack page added with a name by the app (calls.c); nothing before an
 * adapter set its hooks. */
void gobj_pages_on_stack_add(GObject *stack, GObject *child, const char *name);
/* The class of the page visible now (the visible stack page of the window
 * that painted last, or that window), or NULL. Any thread. */
const char *gobj_pages_visible(void);

/* ---- leaks.c ---- */
/* What a page owns and whether an object is back in use: the toolkit's
 * widget tree, walked by the adapter. */
typedef struct gobj_leak_walk {
    /* Adds what `obj` owns directly through add(set, o): a widget's
     * children and what it holds of its own (GTK 4: its event controllers
     * and layout manager); nothing for other objects. leaks.c calls it for
     * the page and for every object added since, so the whole tree below
     * the page is walked. */
    void (*owned)(GObject *obj, void *set, void (*add)(void *set, GObject *obj));
    /* An object in use again: in a window that is still open. */
    bool (*in_use)(GObject *obj);
    /* The object of the page's tree that holds `obj` (its parent widget…),
     * or NULL. */
    GObject *(*holder)(GObject *obj);
    /* Leaks of the toolkit itself no app can avoid (known.c's entries),
     * ended by an entry whose id is NULL; may be NULL. */
    const struct gobj_known_leak *known;
    /* The toolkit disposes destroyed widgets that may still be held (GTK
     * 3's gtk_widget_destroy): GLib clears weak references then, so
     * finalization is watched instead. */
    bool disposed_alive;
} gobj_leak_walk;
/* Set by the adapter's attach. */
void gobj_leaks_set_walk(const gobj_leak_walk *walk);
/* A widget's construction (types.c): its creation stack, when
 * --leaks=refs or native wants it. Main thread. */
void gobj_leaks_on_construct(GTypeInstance *instance);
/* A page was destroyed: watch it and what it owns until the leak check.
 * Main thread, while its widget tree is still whole. */
void gobj_leaks_on_page_gone(GObject *obj, const char *class_name, uint64_t instance, bool window);
/* At install: what --leaks=refs needs (the stack store). */
void gobj_leaks_install(void);

/* ---- known.c ---- */
typedef struct gobj_known_leak {
    const char *id, *type, *page;
} gobj_known_leak;
/* The id of the known leak an object of `type` left by a page of class
 * `page` matches: the toolkit's list, then the config's <known-leak>; NULL
 * when none does. The id lives as long as `cfg`, or the process. */
const char *gobj_known_object(const gobj_known_leak *toolkit, pacer_config *cfg, const char *page,
                              const char *type);

/* ---- refs.c ---- */
/* PACER_LEAKS names refs and this agent exports the reference hooks
 * (libpacer-agent-refs.so or -heap.so; otherwise said once, and off). */
bool leaks_refs_mode(void);
/* Starts recording the references of obj (main thread: at construction or
 * when its page is destroyed). `created` is its creation stack, or 0. */
void refs_watch(GObject *obj, uint32_t created);
/* Adds the kept references of obj to LEAK_OBJECT element `o`
 * (refs, refs_unseen), given its reference count now. Main thread. */
void refs_describe(GObject *obj, pacer_record *o, int ref_count);
/* Forgets obj's log. */
void refs_forget(GObject *obj);
/* Whether the app's g_object_ref/unref calls reach refs.c's hooks: this
 * agent exports them (refs.syms). Any thread. */
bool refs_hooks_exported(void);

/* ---- soup3.c, soup2.c ---- */
/* Each hooks its libsoup when that one is loaded (there is at most one in
 * a process). At install, main thread. */
void soup3_install(void);
void soup2_install(void);
/* At exit: failed requests still waiting for their error text. */
void soup3_flush(void);
void soup2_flush(void);

#endif
