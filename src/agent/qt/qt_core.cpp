/* The Qt adapter's core (qt_adapter.h): QtCore's hook table, the objects
 * of the main thread by class, the application's start, pages and their
 * draws. Links QtCore only.
 *
 * Getting in: QtCore exports `qtHookData`, a versioned table of callbacks
 * meant for tools (the one GammaRay uses): [0] its version, [1] its size,
 * [2] QT_VERSION, [3] AddQObject (called in QObject's constructor), [4]
 * RemoveQObject (in its destructor), [5] Startup (inside QCoreApplication's
 * construction). The adapter writes its callbacks there and calls the
 * previous ones (another tool's). No symbol of Qt is interposed and no
 * private header is needed.
 *
 * Class names: in QObject's constructor an object is a QObject still (its
 * subclass's constructor has not run), so the adapter keeps the pointer and
 * the time, and resolves the class at the next turn of the event loop (a
 * posted call; a posted call is no QObject, so posting from the hook
 * creates none). An object destroyed before then is dropped. The time kept
 * is the page's creation, whenever it is reported.
 *
 * Draws: the display tells which top-level surface the main thread queued a
 * frame on (frame_queued) while the adapter knows which window is painting
 * (the last Expose, UpdateRequest or Paint event the application's event
 * filter saw for one of its windows), so each surface is bound to its
 * window; when that surface's frame reaches the display (frame_presented)
 * the window and its visible pages draw. As in the GTK adapters, a page
 * reports its first draw and then one draw per request end in the process
 * (the host's epoch): the initial draw and the final draw.
 *
 * Frames: a Qt Quick window's are timed here from its scene graph's
 * signals, with their phases (below), and the display counts none of
 * them; other windows' frames are the display's.
 */
#include "qt_adapter.h"

#include <QtCore/QCoreApplication>
#include <QtCore/QEvent>
#include <QtCore/QMetaObject>
#include <QtCore/QMetaProperty>
#include <QtCore/QMetaType>
#include <QtCore/QVariant>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

extern "C" quintptr qtHookData[]; /* QtCore's, exported for tools */

namespace pacer_qt {

namespace {

enum { HOOK_VERSION = 0, HOOK_SIZE = 1, HOOK_QT_VERSION = 2, HOOK_ADD = 3, HOOK_REMOVE = 4, HOOK_STARTUP = 5 };

typedef void (*object_hook)(QObject *);
typedef void (*startup_hook)();

const pacer_qt_host *the_host;
object_hook prev_add, prev_remove;
startup_hook prev_startup;
std::atomic<bool> stopped{false};

/* Objects made on the main thread whose class is not known yet. An object
 * may be moved to another thread and destroyed there (Qt's HTTP thread
 * does so) before its turn: removals from any thread drop it, under pmu,
 * which is never held while Qt is called. Lock order: pmu, then mu. */
struct Pending {
    QObject *obj; /* NULL: destroyed before its turn */
    int64_t t;
};
std::mutex pmu;
std::vector<Pending> pending;
const size_t MAX_PENDING = 1 << 16;
bool pending_full;
std::vector<Pending> *resolving; /* the batch being resolved */
bool flush_posted;
QObject *context; /* the main thread's: posted resolutions run on it */
int64_t app_t;    /* the application object's construction */

const WidgetsPart *widgets;
const NetworkPart *network;
bool widgets_tried, network_tried;

} // namespace

struct QuickFrames;

struct Page {
    uint64_t id;
    const char *cls;
    bool window;
    QObject *obj;
    Page *win;          /* a page's window, a window itself */
    QObject *qwindow;   /* a window's QWindow */
    bool shown, visible, drawn, destroyed;
    uint64_t drawn_epoch;
    /* windows: a frame painted, waiting for its hand-over */
    bool frame_pending;
    uint64_t paint_epoch;
    bool quick;         /* a Qt Quick window, or an item page in one */
    std::shared_ptr<QuickFrames> frames; /* a Qt Quick window's */
};

namespace {

std::mutex mu; /* pages, surfaces: the display calls from any thread */
std::unordered_map<const QObject *, Page *> pages;
std::unordered_map<const QObject *, Page *> qwindows;
std::unordered_map<uint64_t, Page *> surfaces; /* (kind, handle) → window */
std::vector<Page *> live;                      /* every page not destroyed */
uint64_t last_id;
Page *painting;                                /* main thread */
std::atomic<const char *> visible_now{nullptr};
std::atomic<bool> any_tracked{false}; /* a page or window was ever tracked */

uint64_t surface_key(int kind, uint64_t handle)
{
    return handle * 8 + (uint64_t)kind;
}

void submit(pacer_event_type type, const Page *p, int64_t t, const char *cls = nullptr)
{
    pacer_event ev{};
    ev.type = type;
    ev.t_ns = t;
    ev.page = p->id;
    ev.class_name = cls;
    ev.kind = p->window ? PACER_PAGE_WINDOW : PACER_PAGE_PAGE;
    the_host->submit(&ev);
}

/* The directory of this library, with a trailing '/'. */
std::string own_dir()
{
    Dl_info info;
    if (!dladdr((void *)&own_dir, &info) || !info.dli_fname)
        return std::string();
    std::string p(info.dli_fname);
    size_t slash = p.rfind('/');
    return slash == std::string::npos ? std::string() : p.substr(0, slash + 1);
}

void *load_part(const char *part, const char *what)
{
    std::string path = own_dir() + "libpacer-qt" + std::to_string(the_host->major) + "-" + part + ".so";
    void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        std::string text = std::string(what) + " are not measured: " + dlerror();
        the_host->note(part, text.c_str());
    }
    return h;
}

const WidgetsPart *widgets_part()
{
    if (!widgets_tried) {
        widgets_tried = true;
        if (void *h = load_part("widgets", "Qt Widgets' pages")) {
            auto fn = (const WidgetsPart *(*)())dlsym(h, "pacer_qt_widgets_part");
            widgets = fn ? fn() : nullptr;
        }
        (void)dlerror();
    }
    return widgets;
}

const NetworkPart *network_part()
{
    if (!network_tried) {
        network_tried = true;
        if (void *h = load_part("network", "QNetworkAccessManager's requests")) {
            auto fn = (const NetworkPart *(*)())dlsym(h, "pacer_qt_network_part");
            network = fn ? fn() : nullptr;
        }
        (void)dlerror();
    }
    return network;
}

void quick_resolve(QObject *obj, const char *cls, int64_t t);

/* One object of the main thread, its class now known. */
void resolve(QObject *obj, int64_t t)
{
    if (obj->isWindowType() || obj->inherits("QQuickItem")) {
        quick_resolve(obj, obj->metaObject()->className(), t);
    } else if (obj->isWidgetType()) {
        if (const WidgetsPart *w = widgets_part())
            w->resolve(obj, obj->metaObject()->className(), t);
    } else if (obj->inherits("QNetworkReply")) {
        if (const NetworkPart *n = network_part())
            n->resolve(obj, t);
    }
}

/* Resolves a batch taken from `pending` (resolving points to it). pmu is
 * not held while Qt is called: a thread destroying an object may hold
 * Qt's own locks. */
void resolve_batch(std::vector<Pending> &batch)
{
    for (size_t i = 0;; i++) {
        Pending p;
        {
            std::lock_guard<std::mutex> g(pmu);
            if (i >= batch.size()) {
                resolving = nullptr;
                break;
            }
            p = batch[i];
            batch[i].obj = nullptr;
        }
        if (p.obj)
            resolve(p.obj, p.t);
    }
}

void flush()
{
    flush_posted = false;
    if (stopped.load(std::memory_order_relaxed)) {
        pending.clear();
        return;
    }
    std::vector<Pending> batch;
    {
        std::lock_guard<std::mutex> g(pmu);
        batch.swap(pending);
        resolving = &batch;
    }
    resolve_batch(batch);
}

/* An event concerns an object whose class is not resolved yet (a window
 * shown in the turn it was made): every object waiting is resolved now, in
 * the order they were made, so that its page exists before the event is
 * told and the events of the others keep their order. */
void resolve_early(const QObject *obj)
{
    std::vector<Pending> batch;
    {
        std::lock_guard<std::mutex> g(pmu);
        size_t n = pending.size();
        while (n > 0 && pending[n - 1].obj != obj)
            n--;
        if (n == 0 || resolving)
            return; /* not waiting (or inside a batch): nothing to tell early */
        batch.swap(pending);
        resolving = &batch;
    }
    resolve_batch(batch);
}

void post_flush()
{
    if (flush_posted || !context)
        return;
    flush_posted = true;
    QMetaObject::invokeMethod(context, [] { QTA_GUARD(flush()); }, Qt::QueuedConnection);
}

/* ---- the hooks (QtCore calls them; any thread) ---- */

void on_add(QObject *obj)
{
    if (!stopped.load(std::memory_order_relaxed) && the_host->on_main_thread()) {
        QTA_GUARD({
            {
                std::lock_guard<std::mutex> g(pmu);
                /* bounded: a program that makes objects and never runs its
                 * event loop (no turn resolves them) */
                if (pending.size() < MAX_PENDING)
                    pending.push_back(Pending{obj, the_host->now_ns()});
                else if (!pending_full) {
                    pending_full = true;
                    the_host->note("qt-objects", "more Qt objects than can wait for the event loop's next turn: "
                                                 "the classes of later ones are not looked at");
                }
            }
            post_flush();
        });
    }
    if (prev_add)
        prev_add(obj);
}

Page *last_quick_window; /* main thread: the Qt Quick window made last */
/* The Qt Quick window whose frame this thread is making (a render
 * thread's, or the GUI thread's in the basic render loop). */
thread_local std::shared_ptr<QuickFrames> rendering_here;
void quick_window_gone(Page *w);

void page_gone(Page *p, int64_t t)
{
    p->destroyed = true;
    if (last_quick_window == p)
        last_quick_window = nullptr;
    submit(PACER_EV_PAGE_DESTROY, p, t);
    for (Page *q : live)
        if (q->win == p)
            q->win = nullptr;
    for (auto it = surfaces.begin(); it != surfaces.end();)
        it = it->second == p ? surfaces.erase(it) : std::next(it);
    for (size_t i = 0; i < live.size(); i++)
        if (live[i] == p) {
            live[i] = live.back();
            live.pop_back();
            break;
        }
    if (painting == p)
        painting = nullptr;
    if (p->qwindow)
        qwindows.erase(p->qwindow);
    if (p->frames)
        quick_window_gone(p);
    const char *v = p->cls;
    visible_now.compare_exchange_strong(v, nullptr);
    delete p;
}

/* Drops a destroyed object from those waiting for their class. */
void drop_pending(std::vector<Pending> &v, const QObject *obj)
{
    for (size_t i = v.size(); i-- > 0;)
        if (v[i].obj == obj) {
            v[i].obj = nullptr;
            break;
        }
}

void on_remove(QObject *obj)
{
    QTA_GUARD({
        std::lock_guard<std::mutex> g(pmu);
        drop_pending(pending, obj);
        if (resolving)
            drop_pending(*resolving, obj);
    });
    if (the_host->on_main_thread() && any_tracked.load(std::memory_order_relaxed)) {
        QTA_GUARD({
            std::lock_guard<std::mutex> g(mu);
            if (!qwindows.empty()) {
                auto w = qwindows.find(obj);
                if (w != qwindows.end()) {
                    w->second->qwindow = nullptr;
                    qwindows.erase(w);
                }
            }
            if (!pages.empty()) {
                auto it = pages.find(obj);
                if (it != pages.end()) {
                    Page *p = it->second;
                    pages.erase(it);
                    if (!stopped.load(std::memory_order_relaxed))
                        page_gone(p, the_host->now_ns());
                }
            }
        });
    }
    if (prev_remove)
        prev_remove(obj);
}

/* The window a paint event is for (Expose and UpdateRequest go to a
 * QWindow, Paint to each widget painted). */
Page *window_of_paint(QObject *obj)
{
    if (obj->isWindowType()) {
        auto it = qwindows.find(obj);
        return it == qwindows.end() ? nullptr : it->second;
    }
    if (obj->isWidgetType() && widgets) {
        auto it = pages.find(widgets->top(obj));
        return it == pages.end() || !it->second->window ? nullptr : it->second;
    }
    return nullptr;
}

void quick_frame(Page *w);
void quick_polish_begins(Page *w);

/* On the application: sees every event of the main thread's objects. */
class Filter : public QObject {
  public:
    bool eventFilter(QObject *obj, QEvent *ev) override
    {
        QEvent::Type type = ev->type();
        if (type != QEvent::Show && type != QEvent::Hide && type != QEvent::Expose && type != QEvent::UpdateRequest &&
            type != QEvent::Paint)
            return false;
        if (stopped.load(std::memory_order_relaxed))
            return false;
        QTA_GUARD(seen(obj, type));
        return false;
    }

  private:
    void seen(QObject *obj, QEvent::Type type)
    {
        if (type == QEvent::Show || type == QEvent::Hide) {
            if (type == QEvent::Show && !pending.empty())
                resolve_early(obj);
            Page *p;
            {
                std::lock_guard<std::mutex> g(mu);
                auto it = pages.find(obj);
                if (it == pages.end())
                    return;
                p = it->second;
                p->visible = type == QEvent::Show;
                if (type == QEvent::Hide || p->shown)
                    return;
                p->shown = true;
                submit(PACER_EV_PAGE_SHOW, p, the_host->now_ns());
            }
            /* a widget's window and QWindow; a Qt Quick window shown in
             * a widgets app (a QQuickView beside QApplication) is a
             * QWindow, no widget */
            if (widgets && obj->isWidgetType())
                widgets->shown(obj, p);
            return;
        }
        Page *w;
        {
            std::lock_guard<std::mutex> g(mu);
            w = window_of_paint(obj);
            if (w)
                painting = w;
        }
        /* The GUI thread paints another window: a Qt Quick frame it was
         * making without swapping (Qt 5's basic loop tells no end then)
         * is over, so that window's surface is not taken for it. */
        if (rendering_here && !(w && w->frames == rendering_here))
            rendering_here.reset();
        if (w && w->quick && type != QEvent::Paint) {
            quick_polish_begins(w);
            quick_frame(w);
        }
    }
};

Filter *filter;

void on_startup()
{
    if (prev_startup)
        prev_startup();
    if (stopped.load(std::memory_order_relaxed))
        return;
    QTA_GUARD({
        QCoreApplication *app = QCoreApplication::instance();
        for (const Pending &p : pending)
            if (p.obj == app) {
                app_t = p.t;
                break;
            }
        pacer_event ev{};
        ev.type = PACER_EV_APP_CREATED;
        ev.t_ns = app_t ? app_t : the_host->now_ns();
        the_host->submit(&ev);
        /* Synchronously: a filter installed a turn later misses the first
         * window's Show. */
        context = new QObject;
        filter = new Filter;
        app->installEventFilter(filter);
        post_flush();
    });
}

/* ---- what the agent calls ---- */

void frame_queued(int kind, uint64_t handle)
{
    QTA_GUARD({
        std::lock_guard<std::mutex> g(mu);
        uint64_t key = surface_key(kind, handle);
        Page *w = painting;
        if (w)
            surfaces[key] = w;
        else {
            auto it = surfaces.find(key);
            w = it == surfaces.end() ? nullptr : it->second;
        }
        if (w) {
            w->frame_pending = true;
            w->paint_epoch = the_host->net_epoch();
        }
    });
}

void draw(Page *p, uint64_t epoch, int64_t t)
{
    if (p->destroyed || !p->visible || (p->drawn && p->drawn_epoch == epoch))
        return;
    p->drawn = true;
    p->drawn_epoch = epoch;
    submit(PACER_EV_PAGE_DRAW, p, t);
}

void frame_presented(int kind, uint64_t handle, int64_t t)
{
    if (stopped.load(std::memory_order_relaxed))
        return;
    QTA_GUARD({
        std::lock_guard<std::mutex> g(mu);
        auto it = surfaces.find(surface_key(kind, handle));
        if (it == surfaces.end()) {
            /* A Qt Quick window renders through GL or Vulkan, often on its
             * render thread: no paint event is seen around its frames.
             * Bound to its surface when it is the one shown. */
            Page *only = nullptr;
            int n = 0;
            for (Page *p : live)
                if (p->window && p->quick && p->shown && !p->destroyed)
                    only = p, n++;
            if (n != 1)
                return;
            it = surfaces.emplace(surface_key(kind, handle), only).first;
        }
        if (!it->second->frame_pending)
            return;
        Page *w = it->second;
        w->frame_pending = false;
        draw(w, w->paint_epoch, t);
        const char *vis = w->cls;
        for (Page *p : live)
            if (p->win == w && p != w && p->visible) {
                draw(p, w->paint_epoch, t);
                vis = p->cls;
            }
        visible_now.store(vis, std::memory_order_relaxed);
    });
}

/* ---- Qt Quick, by names: QtCore's meta-objects only ----
 *
 * Windows: every QQuickWindow (the `Window` of QML; its class is
 * QQuickWindowQmlImpl). Pages: items of a configured type (QML's
 * "Name_QMLTYPE_N" matches "Name"), in the window made last; visible while
 * their `visible` property is true; selected when a StackView or SwipeView
 * (any object with a `currentItem` property) makes them current, or at
 * creation when they were current then. Their draws: a frame of the window
 * that reached the display after its UpdateRequest or Expose, which is
 * when the window's pages' visibility is read. The signals are received by
 * a small object whose qt_metacall is the slot (no moc needed). */

/* Calls fn when `signal` (a method index of obj's) is emitted, on obj's
 * thread. Lives as long as obj. */
class Watch : public QObject {
  public:
    Watch(QObject *obj, int signal, std::function<void()> fn) : fn_(std::move(fn))
    {
        QMetaObject::connect(obj, signal, this, QObject::staticMetaObject.methodCount(), Qt::DirectConnection);
        QObject::connect(obj, &QObject::destroyed, this, [this]() { deleteLater(); });
    }
    int qt_metacall(QMetaObject::Call c, int id, void **args) override
    {
        id = QObject::qt_metacall(c, id, args);
        if (id < 0 || c != QMetaObject::InvokeMetaMethod)
            return id;
        if (id == 0 && !stopped.load(std::memory_order_relaxed))
            QTA_GUARD(fn_());
        return -1;
    }

  private:
    std::function<void()> fn_;
};

/* ---- Qt Quick windows' frames, from their scene graph ----
 *
 * Each QQuickWindow's render loop tells the steps of its frames by the
 * window's own signals, found by name (no QtQuick header or link):
 *
 *   polish   the window's UpdateRequest or Expose (GUI thread; the event
 *            filter sees it before the window does) → afterAnimating,
 *            emitted right after the items' updatePolish() (GUI thread);
 *   begin    beforeFrameBegin (Qt 6) → the next step: the render
 *            hardware interface waits for a buffer to draw into;
 *   sync     beforeSynchronizing → afterSynchronizing: the items'
 *            updatePaintNode(), the GUI thread blocked meanwhile;
 *   render   beforeRendering → afterRendering;
 *   swap     afterRendering → frameSwapped: the buffer handed to the
 *            display (Qt 6's endFrame, Qt 5's swapBuffers).
 *
 * The threaded render loop emits all but polish's on its render thread
 * (the slots are direct connections and take only the window's lock),
 * the basic loop all on the GUI thread. A frame ends at frameSwapped and
 * begins at its first step (its polish), or when it was due: one refresh
 * after the window's previous frame when the window animates (its last
 * two frames a refresh or two apart) and the main loop did not wait
 * between then and the polish, as for GTK's frame clock. Frames never
 * overlap (the threaded loop polishes the next frame while the render
 * thread swaps this one): a frame begins no earlier than the previous
 * one ended, in the step under way then. The records' phases: polish →
 * layout, sync → update, render → paint, begin and swap → present, the
 * rest (the loop holding the frame back, the hand-over to the render
 * thread) → events; they add up to the frame.
 *
 * One source per window: the display asks, at a top-level surface's first
 * frame, whether the adapter times it (frames_timed). The adapter says yes
 * when the thread presenting it is inside a Qt Quick window's frame (a
 * step began and frameSwapped has not come): the window is bound to the
 * surface, its frames are the adapter's from then on (that first frame
 * included) and the display counts none of that surface's. The OpenGL
 * backends swap inside the frame, the software backend flushes its
 * backing store there too; a window whose frames reached the display
 * outside its frame would never be bound, and stay the display's. */

enum Mark { M_POLISH, M_ANIMATED, M_FRAME_BEGIN, M_SYNC, M_SYNCED, M_RENDER, M_RENDERED, N_MARKS };
/* The phase that begins at each mark. */
const int mark_phase[N_MARKS] = {PACER_QT_PHASE_LAYOUT,  PACER_QT_PHASE_EVENTS, PACER_QT_PHASE_PRESENT,
                                 PACER_QT_PHASE_UPDATE,  PACER_QT_PHASE_EVENTS, PACER_QT_PHASE_PAINT,
                                 PACER_QT_PHASE_PRESENT};

} // namespace

struct QuickFrames {
    std::mutex m;
    Page *page;            /* its window (mu): until gone */
    const char *name;
    uint64_t instance;
    int64_t refresh_ns;    /* the window's screen's, 0: not known */
    void *series;          /* once bound to a surface (frames_timed) */
    bool gone;
    /* the GUI thread's polish, taken by the next sync */
    int64_t gui_polish, gui_animated, gui_wait_end;
    /* the frame under way */
    int64_t marks[N_MARKS];
    int64_t wait_end;      /* the main loop's last wait end when its polish began */
    int64_t prev_end, prev_gap;
};

namespace {

std::mutex qmu; /* the windows' timers; lock order: mu, qmu, a timer's m */
std::vector<std::shared_ptr<QuickFrames>> quick_timers;

/* A frame ended at `end`: its phases from its marks. q->m held. */
void quick_frame_done(QuickFrames *q, int64_t end)
{
    int64_t *m = q->marks;
    int64_t first = 0;
    for (int i = 0; i < N_MARKS; i++)
        if (m[i] && (!first || m[i] < first))
            first = m[i];
    int64_t start = first ? first : end;
    /* (a frame the GUI thread polished: one the render thread made alone
     * was not held back by the main loop) */
    if (m[M_POLISH] && q->prev_end && q->prev_gap && q->prev_gap <= 2 * (q->refresh_ns ? q->refresh_ns : 16666667)) {
        int64_t due = q->prev_end + (q->refresh_ns ? q->refresh_ns : 16666667);
        if (due < start && q->wait_end <= due)
            start = due; /* late because the main loop was busy */
    }
    if (start < q->prev_end)
        start = q->prev_end;
    int64_t since = the_host->frames_since(q->series);
    if (start < since)
        start = since;
    if (start > end)
        start = end;
    /* The step under way at start: the latest mark not after it. */
    int phase = PACER_QT_PHASE_EVENTS;
    int64_t at = 0;
    for (int i = 0; i < N_MARKS; i++)
        if (m[i] && m[i] <= start && m[i] >= at)
            at = m[i], phase = mark_phase[i];
    /* The later marks in time order (ties in the steps' order). */
    int order[N_MARKS], n = 0;
    for (int i = 0; i < N_MARKS; i++) {
        if (!m[i] || m[i] <= start || m[i] > end)
            continue;
        int k = n++;
        while (k > 0 && m[order[k - 1]] > m[i]) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
    pacer_qt_frame f{};
    f.start = start;
    f.end = end;
    f.refresh_ns = q->refresh_ns;
    int64_t t = start;
    for (int k = 0; k < n; k++) {
        f.phases[phase] += m[order[k]] - t;
        t = m[order[k]];
        phase = mark_phase[order[k]];
    }
    f.phases[phase] += end - t;
    the_host->frames_add(q->series, &f);
    q->prev_gap = q->prev_end ? end - q->prev_end : 0;
    q->prev_end = end;
}

/* The window's signals, by the index of each slot. */
enum QuickSignal { S_ANIMATED, S_FRAME_BEGIN, S_SYNC, S_SYNCED, S_RENDER, S_RENDERED, S_SWAPPED, S_FRAME_END, N_SIGNALS };
const char *const quick_signals[N_SIGNALS] = {"afterAnimating()",     "beforeFrameBegin()", "beforeSynchronizing()",
                                              "afterSynchronizing()", "beforeRendering()",  "afterRendering()",
                                              "frameSwapped()",       "afterFrameEnd()"};

void quick_signal(const std::shared_ptr<QuickFrames> &q, int which)
{
    int64_t now = the_host->now_ns();
    std::lock_guard<std::mutex> g(q->m);
    if (q->gone)
        return;
    switch (which) {
    case S_ANIMATED:
        q->gui_animated = now;
        return;
    case S_FRAME_BEGIN:
        q->marks[M_FRAME_BEGIN] = now;
        break;
    case S_SYNC:
        /* the GUI thread's polish is this frame's (it waits for the sync) */
        if (q->gui_polish || q->gui_animated) {
            q->marks[M_POLISH] = q->gui_polish;
            q->marks[M_ANIMATED] = q->gui_animated;
            q->wait_end = q->gui_wait_end;
            q->gui_polish = q->gui_animated = 0;
        }
        q->marks[M_SYNC] = now;
        break;
    case S_SYNCED:
        q->marks[M_SYNCED] = now;
        return;
    case S_RENDER:
        q->marks[M_RENDER] = now;
        break;
    case S_RENDERED:
        q->marks[M_RENDERED] = now;
        return;
    case S_SWAPPED:
        if (q->series)
            quick_frame_done(q.get(), now);
        for (int64_t &t : q->marks)
            t = 0;
        q->wait_end = 0;
        if (rendering_here == q)
            rendering_here.reset();
        return;
    case S_FRAME_END:
        /* Qt 6: the frame is over, swapped or not (nothing changed, the
         * buffer could not be had) */
        if (rendering_here == q)
            rendering_here.reset();
        return;
    }
    if (rendering_here != q)
        rendering_here = q;
}

/* Receives a Qt Quick window's signals: qt_metacall is the slot of each
 * (no moc needed). Lives as long as the window. */
class QuickWatch : public QObject {
  public:
    QuickWatch(QObject *window, std::shared_ptr<QuickFrames> q) : q_(std::move(q))
    {
        const QMetaObject *mo = window->metaObject();
        for (int i = 0; i < N_SIGNALS; i++) {
            int index = mo->indexOfSignal(quick_signals[i]);
            if (index >= 0) /* Qt 5 has no beforeFrameBegin */
                QMetaObject::connect(window, index, this, QObject::staticMetaObject.methodCount() + i,
                                     Qt::DirectConnection);
        }
        QObject::connect(window, &QObject::destroyed, this, [this]() { deleteLater(); });
    }
    int qt_metacall(QMetaObject::Call c, int id, void **args) override
    {
        id = QObject::qt_metacall(c, id, args);
        if (id < 0 || c != QMetaObject::InvokeMetaMethod)
            return id;
        if (id < N_SIGNALS && !stopped.load(std::memory_order_relaxed))
            QTA_GUARD(quick_signal(q_, id));
        return -1;
    }

  private:
    std::shared_ptr<QuickFrames> q_;
};

/* An object-valued property, NULL when absent or of a type Qt cannot
 * read yet (Qt 5 registers QScreen* only when asked: reading it would
 * print a warning on the program's stderr). */
QObject *object_property(const QObject *obj, const char *name)
{
    const QMetaObject *mo = obj->metaObject();
    int i = mo->indexOfProperty(name);
    if (i < 0 || mo->property(i).userType() == QMetaType::UnknownType)
        return nullptr;
    return mo->property(i).read(obj).value<QObject *>();
}

/* The refresh interval of a window's screen (its QScreen's refreshRate,
 * what Qt Quick's animations run at), 0 when not known. */
int64_t screen_refresh_ns(QObject *window)
{
    QObject *screen = object_property(window, "screen");
    if (!screen && QCoreApplication::instance())
        screen = object_property(QCoreApplication::instance(), "primaryScreen");
    double hz = screen ? screen->property("refreshRate").toDouble() : 0;
    return hz >= 1 && hz <= 1000 ? (int64_t)(1e9 / hz) : 0;
}

void quick_frames_new(Page *p, QObject *window)
{
    auto q = std::make_shared<QuickFrames>();
    q->page = p;
    q->name = p->cls;
    q->instance = p->id;
    q->refresh_ns = screen_refresh_ns(window);
    {
        std::lock_guard<std::mutex> g(qmu);
        quick_timers.push_back(q);
    }
    {
        std::lock_guard<std::mutex> g(mu);
        p->frames = q;
    }
    new QuickWatch(window, q);
}

/* A frame of a Qt Quick window may begin: its polish (GUI thread). */
void quick_polish_begins(Page *w)
{
    std::shared_ptr<QuickFrames> q;
    {
        std::lock_guard<std::mutex> g(mu);
        q = w->frames;
    }
    if (!q)
        return;
    int64_t now = the_host->now_ns(), wait_end = the_host->loop_wait_end();
    std::lock_guard<std::mutex> g(q->m);
    q->gui_polish = now;
    q->gui_animated = 0;
    q->gui_wait_end = wait_end;
}

/* A Qt Quick window was destroyed (mu held): its last record. */
void quick_window_gone(Page *w)
{
    std::shared_ptr<QuickFrames> q = std::move(w->frames);
    {
        std::lock_guard<std::mutex> g(qmu);
        for (size_t i = 0; i < quick_timers.size(); i++)
            if (quick_timers[i] == q) {
                quick_timers[i] = quick_timers.back();
                quick_timers.pop_back();
                break;
            }
    }
    std::lock_guard<std::mutex> g(q->m);
    q->gone = true;
    if (q->series)
        the_host->frames_close(q->series);
    q->series = nullptr;
}

/* The display asks whether a surface's frames are the adapter's: they
 * are when this thread is making a shown Qt Quick window's frame. The surface
 * is that window's from then on, for its page draws too (frame_presented
 * follows): several Qt Quick windows each draw on their own. */
bool frames_timed(int kind, uint64_t handle)
{
    if (stopped.load(std::memory_order_relaxed))
        return false;
    bool mine = false;
    QTA_GUARD({
        QuickFrames *q = rendering_here.get();
        if (q) {
            std::lock_guard<std::mutex> g(mu);
            std::lock_guard<std::mutex> h(q->m);
            /* a window shown on screen: one that renders for a
             * QQuickWidget or a QQuickRenderControl is never shown, and
             * the surface presented then is another window's */
            if (!q->gone && q->page->visible) {
                if (!q->series) {
                    int64_t first = 0;
                    for (int64_t t : q->marks)
                        if (t && (!first || t < first))
                            first = t;
                    q->series = the_host->frames_open(q->name, q->instance, first ? first : the_host->now_ns());
                }
                mine = q->series != nullptr;
                surfaces[surface_key(kind, handle)] = q->page;
            }
        }
    });
    return mine;
}

/* At exit: every Qt Quick window's frames since its last record. A lock
 * held by a thread that a signal stopped for good (the exit sequence's
 * caller) is given up on after 50 ms: that window's last frames are lost,
 * never the exit. */
void flush_frames()
{
    QTA_GUARD({
        std::unique_lock<std::mutex> g(qmu, std::defer_lock);
        for (int i = 0; i < 50 && !g.try_lock(); i++)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (!g.owns_lock())
            return;
        for (auto &q : quick_timers) {
            std::unique_lock<std::mutex> h(q->m, std::defer_lock);
            for (int i = 0; i < 50 && !h.try_lock(); i++)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            if (h.owns_lock() && q->series)
                the_host->frames_flush(q->series);
        }
    });
}

int notify_of(const QObject *obj, const char *property)
{
    const QMetaObject *mo = obj->metaObject();
    int i = mo->indexOfProperty(property);
    return i < 0 ? -1 : mo->property(i).notifySignalIndex();
}

/* The class name a report uses: QML's run-time suffix cut. */
std::string bare_class(const char *cls)
{
    const char *qml = strstr(cls, "_QML");
    return qml && qml != cls ? std::string(cls, (size_t)(qml - cls)) : std::string(cls);
}

void container_current(QObject *container, int64_t t)
{
    QObject *item = container->property("currentItem").value<QObject *>();
    if (!item)
        return;
    resolve_early(item);
    if (Page *p = page_of(item))
        page_selected(p, t);
}

void quick_resolve(QObject *obj, const char *cls, int64_t t)
{
    if (obj->isWindowType()) {
        if (!obj->inherits("QQuickWindow"))
            return; /* a widget's window (QWidgetWindow), a plain QWindow */
        Page *p = page_new(obj, bare_class(cls).c_str(), true, t);
        {
            std::lock_guard<std::mutex> g(mu);
            p->quick = true;
        }
        window_set_qwindow(p, obj);
        last_quick_window = p;
        quick_frames_new(p, obj);
        return;
    }
    int current = notify_of(obj, "currentItem");
    if (current >= 0 && obj->property("currentItem").isValid())
        new Watch(obj, current, [obj]() { container_current(obj, the_host->now_ns()); });
    if (page_configured(cls) < 0)
        return;
    Page *p = page_new(obj, bare_class(cls).c_str(), false, t);
    {
        std::lock_guard<std::mutex> g(mu);
        p->quick = true;
        p->win = last_quick_window;
    }
    QObject *parent = obj->property("parent").value<QObject *>();
    if (parent && parent->property("currentItem").value<QObject *>() == obj)
        page_selected(p, t);
}

/* A Qt Quick window is about to make a frame (main thread): which of its
 * pages it shows. */
void quick_frame(Page *w)
{
    std::vector<std::pair<Page *, QObject *>> items;
    {
        std::lock_guard<std::mutex> g(mu);
        w->frame_pending = true;
        w->paint_epoch = the_host->net_epoch();
        for (Page *p : live)
            if (p->win == w && p != w)
                items.emplace_back(p, p->obj);
    }
    int64_t now = the_host->now_ns();
    for (auto &it : items) {
        bool visible = it.second->property("visible").toBool();
        std::lock_guard<std::mutex> g(mu);
        Page *p = it.first;
        if (p->destroyed)
            continue;
        p->visible = visible;
        if (visible && !p->shown) {
            p->shown = true;
            submit(PACER_EV_PAGE_SHOW, p, now);
        }
    }
}

const char *visible_page()
{
    return visible_now.load(std::memory_order_relaxed);
}

void stop()
{
    stopped.store(true);
}

} // namespace

/* ---- for the parts ---- */

const pacer_qt_host &host()
{
    return *the_host;
}

const char *intern(const char *s)
{
    static std::mutex imu;
    static std::unordered_set<std::string> names;
    std::lock_guard<std::mutex> g(imu);
    return names.insert(s ? s : "").first->c_str();
}

long page_configured(const char *class_name)
{
    long i = the_host->page_configured(class_name);
    if (i >= 0)
        return i;
    const char *qml = strstr(class_name, "_QML");
    if (!qml || qml == class_name)
        return -1;
    std::string bare(class_name, (size_t)(qml - class_name));
    return the_host->page_configured(bare.c_str());
}

Page *page_new(QObject *obj, const char *class_name, bool window, int64_t t)
{
    std::lock_guard<std::mutex> g(mu);
    if (pages.count(obj))
        return pages[obj];
    Page *p = new Page{};
    p->id = ++last_id;
    p->cls = intern(class_name);
    p->window = window;
    p->obj = obj;
    p->win = window ? p : nullptr;
    pages[obj] = p;
    live.push_back(p);
    any_tracked.store(true, std::memory_order_relaxed);
    submit(PACER_EV_PAGE_CREATE, p, t, p->cls);
    /* Its widgets exist with it (a window's child, a page in its stack). */
    submit(PACER_EV_PAGE_VIEW_CREATED, p, t);
    return p;
}

Page *page_of(const QObject *obj)
{
    std::lock_guard<std::mutex> g(mu);
    auto it = pages.find(obj);
    return it == pages.end() ? nullptr : it->second;
}

void page_selected(Page *p, int64_t t)
{
    std::lock_guard<std::mutex> g(mu);
    /* A stack shows its current page at once: selected and scrolled to
     * are the same moment, as for GTK's stacks. */
    submit(PACER_EV_PAGE_SELECT, p, t);
    submit(PACER_EV_PAGE_SCROLL, p, t);
}

void page_set_window(Page *p, Page *window)
{
    std::lock_guard<std::mutex> g(mu);
    if (!p->window)
        p->win = window;
}

bool page_is_window(const Page *p)
{
    return p->window;
}

void window_set_qwindow(Page *window, QObject *qwindow)
{
    std::lock_guard<std::mutex> g(mu);
    if (window->qwindow == qwindow)
        return;
    if (window->qwindow)
        qwindows.erase(window->qwindow);
    window->qwindow = qwindow;
    if (qwindow)
        qwindows[qwindow] = window;
}

} // namespace pacer_qt

using namespace pacer_qt;

extern "C" QTA_API int pacer_qt_adapter_init(const pacer_qt_host *h, pacer_qt_ops *ops, const char **why)
{
    try {
        if (!h || h->version < 1 || h->size < sizeof(pacer_qt_host)) {
            *why = "an agent of the same version as its Qt adapter";
            return -EINVAL;
        }
        if (qtHookData[HOOK_VERSION] < 1 || qtHookData[HOOK_SIZE] < 6) {
            *why = "QtCore's hook table (qtHookData) of version 1 with 6 slots";
            return -ENOTSUP;
        }
        if ((int)(qtHookData[HOOK_QT_VERSION] >> 16) != QT_VERSION_MAJOR || h->major != QT_VERSION_MAJOR) {
            *why = "an adapter built for its Qt major version";
            return -ENOTSUP;
        }
        if (QCoreApplication::instance()) {
            *why = "an adapter loaded before its application object was made";
            return -EALREADY;
        }
        the_host = h;
        pending.reserve(256);
        prev_add = (object_hook)qtHookData[HOOK_ADD];
        prev_remove = (object_hook)qtHookData[HOOK_REMOVE];
        prev_startup = (startup_hook)qtHookData[HOOK_STARTUP];
        qtHookData[HOOK_ADD] = (quintptr)&on_add;
        qtHookData[HOOK_REMOVE] = (quintptr)&on_remove;
        qtHookData[HOOK_STARTUP] = (quintptr)&on_startup;
        ops->frame_queued = frame_queued;
        ops->frame_presented = frame_presented;
        ops->visible_page = visible_page;
        ops->stop = stop;
        ops->frames_timed = frames_timed;
        ops->flush = flush_frames;
        return 0;
    } catch (...) {
        *why = "memory";
        return -ENOMEM;
    }
}
