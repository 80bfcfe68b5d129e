/* Frames where they reach the display, for any program (display.h).
 *
 * The display hooks (display_wayland.c, display_x11.c, display_gl.c,
 * display_vulkan.c) tell this file which surfaces are top-levels and when
 * a frame is handed to the display on one. From that:
 *
 *   the first frame presented   the process's first frame on a top-level
 *        surface (a `first_frame` event with its source): the start-up's
 *        first and main frame when no toolkit adapter's page drew first;
 *   frames records              per top-level surface (frames.c grades
 *        and writes them), unless the adapter in force times its windows'
 *        frames itself (ADAPTER_FRAMES) or that surface's (frames_timed,
 *        asked at its first frame: a Qt Quick window's scene graph);
 *   main-loop iterations        in a program whose loop is not GLib's, a
 *        frame presented on the main thread ends an iteration, as a wait
 *        does (loop.c): a loop that renders continuously and never waits
 *        still has iterations.
 *
 * When a frame reaches the display: a request is queued in the client
 * library (libwayland, libxcb, Xlib) and sent when the connection is
 * flushed. A wl_surface commit, a Present, an image upload or copy is
 * therefore pending until the next hand-over (display_handover): an
 * explicit flush (wl_display_flush, xcb_flush, XFlush, XSync), a call
 * that flushes before it waits (wl_display_dispatch[_queue],
 * wl_display_roundtrip[_queue], xcb_wait_for_event), or the main loop's
 * next wait (every toolkit flushes before it sleeps). A GL or Vulkan swap
 * hands its frame over before it returns: it counts as it returns.
 *
 * What one frame is, whatever path it takes:
 *   - an outer present (glXSwapBuffers, eglSwapBuffers*, vkQueuePresentKHR)
 *     is one frame, whatever the driver does inside it (a wl_surface
 *     commit, a Present, an image upload: display_outer_*); a window whose
 *     swapchain is Vulkan's counts only Vulkan's presents
 *     (display_outer_owned: a driver presenting from a thread of its own);
 *   - otherwise what a surface got between two hand-overs is one frame: a
 *     commit with a buffer, a Present, the image uploads and copies of
 *     each damaged rectangle a toolkit flushes together.
 * Only top-level surfaces count: a Wayland surface with an xdg_toplevel,
 * an X11 window created on a root window (override-redirect menus and
 * tooltips included), a GL or Vulkan surface whose window is not known.
 *
 * A frame's duration: from when its work began to when it was handed over.
 * Its work began when the main loop woke up for it (the iteration's start,
 * mainloop_busy_since) for a frame the main thread made, and never before
 * the surface's previous frame was handed over (a loop that renders
 * continuously: the interval), nor before the record's span began: frames
 * never overlap, so Σ delay ≤ span as for frame-clock frames. A surface
 * that animates (its last two frames a refresh or two apart) is due its
 * next frame one refresh after its last; when the main loop did not wait
 * since then, the frame counts from when it was due (count()). The
 * refresh interval is the outputs' (refresh_source "output"), as the
 * program learned it from the display (display_output_refresh), when all
 * outputs of the surface's family agree; else 60 Hz ("default").
 *
 * An adapter without a frame clock of its own (Qt) hears of every frame
 * its main thread queues on a top-level (frame_queued: it knows which
 * window is painting) and of every top-level's frame presented
 * (frame_presented), and tells its pages' draws from them.
 *
 * A toolkit adapter whose toolkit hands its frames over after the frame
 * clock's after-paint (GTK 3 flushes at its next event-loop wait) asks to
 * hear of the main thread's next hand-over (display_on_next_handover), so
 * that its page draws are when the frame reached the display.
 *
 * Threads: hooks run on any thread; one mutex guards the surfaces (a
 * one-entry cache finds the surface of the last frame without a search).
 * Records are submitted under it (the pacer instance's lock nests inside).
 * A hand-over with nothing pending costs one atomic load.
 */
#include "display.h"
#include "adapter.h"

#include <pacer/base/clock.h>

#include <sched.h>
#include <string.h>

#define MAX_SURFACES 256
#define MAX_NAMES 32
#define NAME_MAX_LEN 64

static const char *const source_names[] = {
    [DS_WAYLAND] = "wayland", [DS_X11_PRESENT] = "x11_present", [DS_X11_IMAGE] = "x11_image",
    [DS_GLX] = "glx",         [DS_EGL] = "egl",                 [DS_VULKAN] = "vulkan",
};

typedef struct surface {
    surface_kind kind; /* 0: a free slot */
    uint64_t handle;
    uint64_t number;      /* the records' instance, in order of appearance */
    bool toplevel;
    bool outer_owned;
    bool adapter_timed;   /* the adapter counts its frames (frames_timed) */
    const char *name;     /* interned */
    frame_stats *stats;
    int64_t created;      /* when it became a top-level */
    int64_t prev_end;     /* when its previous frame was handed over */
    int64_t prev_gap;     /* the time between its previous two frames */
    /* a frame waiting for the hand-over */
    bool pending;
    bool pending_main;    /* made on the main thread */
    display_source pending_source;
    int64_t pending_busy; /* the main loop's iteration start then */
    int64_t pending_at;   /* when it was queued: the frame's phases */
} surface;

/* A spin lock: the critical sections are a few loads and stores (a
 * record is written under it once per frames interval). */
static atomic_flag mu = ATOMIC_FLAG_INIT;

static void lock(void)
{
    for (int spins = 0; atomic_flag_test_and_set_explicit(&mu, memory_order_acquire); spins++)
        if (spins > 64)
            sched_yield();
}

static void unlock(void)
{
    atomic_flag_clear_explicit(&mu, memory_order_release);
}

static surface surfaces[MAX_SURFACES];
static size_t last_hit;
static uint64_t last_number;
/* Surfaces with a frame waiting for the hand-over, by index (lock held to
 * change; n_pending read without it to skip the lock). */
#define MAX_PENDING 32
static unsigned short pending[MAX_PENDING];
static _Atomic unsigned n_pending;
static bool main_queued;                /* main thread only: a frame queued, not yet handed over */
static void (*next_handover)(int64_t);  /* main thread only */
static _Atomic bool first_done;

/* The outputs' refresh intervals (display_output_refresh), and per family
 * the one they share (0: none known, or they differ). */
#define MAX_OUTPUTS 16
static struct {
    surface_kind family;
    uint64_t output;
    int64_t refresh_ns;
} outputs[MAX_OUTPUTS];
static _Atomic int64_t family_refresh[SK_VULKAN + 1];
static char names[MAX_NAMES][NAME_MAX_LEN];
static size_t n_names;

typedef struct outer_state {
    int depth;
    display_source source;
    bool inner;
    surface_kind kind;
    uint64_t handle;
    int64_t began; /* when the outermost present began */
} outer_state;
static __thread outer_state outer __attribute__((tls_model("initial-exec")));

bool display_on(void)
{
    return agent_active();
}

/* Lock held. */
static surface *find(surface_kind kind, uint64_t handle)
{
    surface *s = &surfaces[last_hit];
    if (s->kind == kind && s->handle == handle)
        return s;
    for (size_t i = 0; i < MAX_SURFACES; i++) {
        if (surfaces[i].kind == kind && surfaces[i].handle == handle) {
            last_hit = i;
            return &surfaces[i];
        }
    }
    return NULL;
}

/* Whether the frames of surfaces are the display's to count. */
static bool counts_frames(void)
{
    const agent_adapter *a = agent_adapter_in_force();
    return !a || !(a->measures & ADAPTER_FRAMES);
}

/* Lock held: a new surface, or NULL when MAX_SURFACES live already. */
static surface *add(surface_kind kind, uint64_t handle, int64_t t)
{
    for (size_t i = 0; i < MAX_SURFACES; i++) {
        surface *s = &surfaces[i];
        if (s->kind)
            continue;
        memset(s, 0, sizeof(*s));
        s->kind = kind;
        s->handle = handle;
        s->number = ++last_number;
        s->name = "toplevel";
        s->created = t;
        last_hit = i;
        return s;
    }
    agent_note_once("surfaces", "more than %d top-level surfaces at once; the frames of others are not counted",
                    MAX_SURFACES);
    return NULL;
}

void display_toplevel(surface_kind kind, uint64_t handle)
{
    int64_t t = mono_ns();
    lock();
    surface *s = find(kind, handle);
    if (!s)
        s = add(kind, handle, t);
    if (s && !s->toplevel) {
        s->toplevel = true;
        s->created = t;
    }
    unlock();
}

void display_outer_owned(surface_kind kind, uint64_t handle)
{
    lock();
    surface *s = find(kind, handle);
    if (s)
        s->outer_owned = true;
    unlock();
}

/* Lock held: forgets a pending frame (counted or not). */
static void clear_pending(surface *s)
{
    if (!s->pending)
        return;
    s->pending = false;
    unsigned n = atomic_load_explicit(&n_pending, memory_order_relaxed);
    unsigned short idx = (unsigned short)(s - surfaces);
    for (unsigned i = 0; i < n; i++)
        if (pending[i] == idx) {
            pending[i] = pending[n - 1];
            atomic_store_explicit(&n_pending, n - 1, memory_order_relaxed);
            break;
        }
}

/* Lock held: a frame waits on s for the hand-over. */
static void set_pending(surface *s)
{
    unsigned n = atomic_load_explicit(&n_pending, memory_order_relaxed);
    if (s->pending || n == MAX_PENDING)
        return;
    s->pending = true;
    pending[n] = (unsigned short)(s - surfaces);
    atomic_store_explicit(&n_pending, n + 1, memory_order_release);
}

/* Defined below: counting a frame, and what follows it. */
static bool count(surface *s, display_source source, int64_t t, int64_t busy, int64_t queued);
static void counted(bool first, display_source source, int64_t t, bool main_thread);

void display_gone(surface_kind kind, uint64_t handle)
{
    bool first = false;
    display_source source = DS_WAYLAND;
    int64_t t = mono_ns();
    lock();
    surface *s = find(kind, handle);
    if (s) {
        if (s->pending) {
            /* queued before the destroy, it reaches the display with it */
            clear_pending(s);
            source = s->pending_source;
            first = count(s, source, t, s->pending_busy, s->pending_at);
        }
        agent_in_hook++;
        frames_free(s->stats);
        agent_in_hook--;
        memset(s, 0, sizeof(*s));
    }
    unlock();
    if (first)
        counted(first, source, t, false);
}

/* Lock held: the interned copy of name[0..len), or NULL when full. */
static const char *intern(const char *name, size_t len)
{
    if (len >= NAME_MAX_LEN)
        len = NAME_MAX_LEN - 1;
    for (size_t i = 0; i < n_names; i++)
        if (strncmp(names[i], name, len) == 0 && names[i][len] == '\0')
            return names[i];
    if (n_names == MAX_NAMES)
        return NULL;
    memcpy(names[n_names], name, len);
    names[n_names][len] = '\0';
    return names[n_names++];
}

void display_name(surface_kind kind, uint64_t handle, const char *name, size_t len)
{
    if (!name || !len)
        return;
    lock();
    surface *s = find(kind, handle);
    const char *interned = s && !s->stats ? intern(name, len) : NULL; /* a series keeps its first name */
    if (interned)
        s->name = interned;
    unlock();
}

#define DEFAULT_REFRESH_NS 16666667

void display_output_refresh(surface_kind family, uint64_t output, int64_t refresh_ns)
{
    if (family < SK_WAYLAND || family > SK_VULKAN)
        return;
    lock();
    size_t free_slot = MAX_OUTPUTS, i;
    for (i = 0; i < MAX_OUTPUTS; i++) {
        if (outputs[i].family == family && outputs[i].output == output)
            break;
        if (!outputs[i].family && free_slot == MAX_OUTPUTS)
            free_slot = i;
    }
    if (i == MAX_OUTPUTS)
        i = free_slot;
    if (i < MAX_OUTPUTS) {
        if (refresh_ns > 0)
            outputs[i].family = family, outputs[i].output = output, outputs[i].refresh_ns = refresh_ns;
        else
            memset(&outputs[i], 0, sizeof(outputs[i]));
    }
    int64_t shared = 0;
    for (i = 0; i < MAX_OUTPUTS; i++) {
        if (outputs[i].family != family)
            continue;
        if (shared && outputs[i].refresh_ns != shared) {
            shared = 0;
            break;
        }
        shared = outputs[i].refresh_ns;
    }
    atomic_store_explicit(&family_refresh[family], shared, memory_order_relaxed);
    unlock();
}

/* A frame on a surface reached the display at t: counted. `busy` is the
 * main loop's iteration start when the main thread made it (0: another
 * thread did); `queued` when the program queued it (0: unknown). Its
 * phases: `paint` from its start to when it was queued, `present` from
 * then to t. Lock held; returns whether it was the process's first. */
static bool count(surface *s, display_source source, int64_t t, int64_t busy, int64_t queued)
{
    if (!s->stats && !s->adapter_timed && counts_frames()) {
        const agent_adapter *a = agent_adapter_in_force();
        if (a && a->frames_timed && a->frames_timed(s->kind, s->handle)) {
            s->adapter_timed = true;
        } else {
            s->stats = frames_new(s->name, s->number, source_names[source]);
            frames_begin_at(s->stats, s->created ? s->created : t);
        }
    }
    if (s->stats) {
        /* an EGL or Vulkan surface whose window is not known: the
         * outputs' refresh when a single one is known */
        surface_kind family = s->kind == SK_EGL || s->kind == SK_VULKAN ? 0 : s->kind;
        int64_t output = family ? atomic_load_explicit(&family_refresh[family], memory_order_relaxed) : 0;
        if (!family)
            for (int k = SK_WAYLAND; k <= SK_X11 && !output; k++)
                output = atomic_load_explicit(&family_refresh[k], memory_order_relaxed);
        int64_t refresh = output ? output : DEFAULT_REFRESH_NS;
        int64_t start = s->prev_end > busy ? s->prev_end : busy;
        /* A surface that animates (its last two frames came a refresh or
         * two apart) is due another frame one refresh after its last: if
         * the loop did not wait since then, the frame was late because the
         * loop was busy, and counts from when it was due (frame-clock
         * frames do the same, window_frames.c). */
        if (busy && s->prev_end && s->prev_gap && s->prev_gap <= 2 * refresh) {
            int64_t due = s->prev_end + refresh;
            if (due < start && mainloop_wait_end() <= due)
                start = due;
        }
        if (!start || start < frames_since(s->stats))
            start = frames_since(s->stats);
        frame_info fi = {.start = start, .end = t, .refresh_ns = output, .refresh_from = "output", .has_phases = true};
        int64_t q = queued < start ? start : queued > t ? t : queued;
        fi.phases[FRAME_PAINT] = q - start;
        fi.phases[FRAME_PRESENT] = t - q;
        agent_in_hook++;
        frames_add_info(s->stats, &fi);
        agent_in_hook--;
    }
    s->prev_gap = s->prev_end ? t - s->prev_end : 0;
    s->prev_end = t;
    const agent_adapter *a = agent_adapter_in_force();
    if (a && a->frame_presented) /* its pages' draws */
        a->frame_presented(s->kind, s->handle, t);
    return !atomic_load_explicit(&first_done, memory_order_relaxed) && !atomic_exchange(&first_done, true);
}

/* After counting: the start-up's first frame, the loop's iteration. */
static void counted(bool first, display_source source, int64_t t, bool main_thread)
{
    if (first) {
        pacer_event ev = {.type = PACER_EV_FIRST_FRAME, .t_ns = t, .source = source_names[source]};
        agent_in_hook++;
        agent_submit(&ev);
        agent_in_hook--;
    }
    if (main_thread && !loop_glib_mode())
        loop_present_boundary(t);
}

void display_frame(surface_kind kind, uint64_t handle, display_source source)
{
    if (outer.depth) {
        /* inside a swap: only which top-level it went to */
        if (!outer.inner) {
            lock();
            surface *s = find(kind, handle);
            bool top = s && s->toplevel;
            unlock();
            if (top) {
                outer.inner = true;
                outer.kind = kind;
                outer.handle = handle;
            }
        }
        return;
    }
    bool main_thread = agent_on_main_thread();
    lock();
    surface *s = find(kind, handle);
    if (main_thread && s && s->toplevel)
        main_queued = true;
    const agent_adapter *a = agent_adapter_in_force();
    if (a && !counts_frames()) {
        unlock();
        return; /* the toolkit's pages and frame clock say what a frame is */
    }
    if (a && a->frame_queued && main_thread && s && s->toplevel)
        a->frame_queued(kind, handle); /* which window this frame is */
    if (s && s->toplevel && !s->outer_owned && !s->pending) {
        s->pending_main = main_thread;
        s->pending_source = source;
        s->pending_busy = main_thread ? mainloop_busy_since() : 0;
        s->pending_at = mono_ns();
        set_pending(s);
    }
    unlock();
}

int64_t display_handover_time(void)
{
    if (atomic_load_explicit(&n_pending, memory_order_relaxed) || (agent_on_main_thread() && next_handover))
        return mono_ns();
    return 0;
}

void display_on_next_handover(void (*fn)(int64_t t))
{
    next_handover = fn;
}

bool display_main_frame_queued(void)
{
    return main_queued;
}

/* display_handover's work when frames wait (kept out of its fast path). */
__attribute__((noinline)) static void handover_pending(surface_kind family, int64_t t, bool main_thread)
{
    if (!t)
        t = mono_ns();
    bool first = false, main_made = false;
    display_source first_source = DS_WAYLAND;
    lock();
    for (unsigned i = 0; i < atomic_load_explicit(&n_pending, memory_order_relaxed);) {
        surface *s = &surfaces[pending[i]];
        if (family && s->kind != family) {
            i++;
            continue;
        }
        clear_pending(s); /* the last pending takes slot i */
        if (count(s, s->pending_source, t, s->pending_busy, s->pending_at)) {
            first = true;
            first_source = s->pending_source;
        }
        main_made |= s->pending_main;
    }
    unlock();
    counted(first, first_source, t, main_made && main_thread);
}

__attribute__((noinline)) static void handover_main(int64_t t)
{
    void (*fn)(int64_t) = next_handover;
    next_handover = NULL;
    fn(t ? t : mono_ns());
}

void display_handover(surface_kind family, int64_t t)
{
    bool main_thread = agent_on_main_thread();
    if (main_thread) {
        main_queued = false;
        if (next_handover) {
            if (!t)
                t = mono_ns();
            handover_main(t);
        }
    }
    if (atomic_load_explicit(&n_pending, memory_order_acquire))
        handover_pending(family, t, main_thread);
}

void display_outer_begin(display_source source)
{
    if (outer.depth++ == 0) {
        outer.source = source;
        outer.inner = false;
        outer.began = mono_ns();
        loop_present_begin();
    }
}

void display_outer_end(surface_kind kind, uint64_t handle, int64_t t)
{
    if (outer.depth <= 0 || --outer.depth > 0)
        return;
    loop_present_end();
    bool main_thread = agent_on_main_thread();
    if (!counts_frames()) {
        if (main_thread && !loop_glib_mode())
            loop_present_boundary(t);
        return;
    }
    if (outer.inner)
        kind = outer.kind, handle = outer.handle;
    int64_t busy = main_thread ? mainloop_busy_since() : 0;
    lock();
    surface *s = find(kind, handle);
    if (!s && (s = add(kind, handle, t)))
        s->toplevel = true; /* a GL or Vulkan surface whose window is not known */
    bool first = false;
    if (s && s->toplevel) {
        clear_pending(s); /* what the driver queued inside is this frame */
        const agent_adapter *a = agent_adapter_in_force();
        if (a && a->frame_queued && main_thread && !s->adapter_timed)
            a->frame_queued(kind, handle); /* which window this frame is: a GL-composited one too */
        first = count(s, outer.source, t, busy, outer.began);
    }
    unlock();
    if (s)
        counted(first, outer.source, t, main_thread);
}

/* A feature's flush (agent.c): at exit, frames still waiting for their
 * hand-over, and every surface's frames since its last record. */
void display_flush(void)
{
    display_handover(0, 0);
    lock();
    agent_in_hook++;
    for (size_t i = 0; i < MAX_SURFACES; i++)
        if (surfaces[i].kind && surfaces[i].stats)
            frames_emit(surfaces[i].stats, true);
    agent_in_hook--;
    unlock();
}
