/* Inside the Qt adapter (C++17): what its parts share.
 *
 * The adapter is three libraries per Qt major, so that pacer maps no Qt
 * module the program did not load itself:
 *
 *   libpacer-qtN.so          QtCore only (qt_core.cpp): QtCore's hook table
 *                            (objects added and removed, the application's
 *                            start), class names resolved at the next turn
 *                            of the event loop, the event filter on the
 *                            application, pages and their draws, Qt
 *                            Quick windows' frames from their scene graph;
 *   libpacer-qtN-widgets.so  QtGui + QtWidgets (qt_widgets.cpp): which
 *                            widgets are windows and pages, QStackedWidget
 *                            (and QTabWidget's) current page;
 *   libpacer-qtN-network.so  QtNetwork (qt_network.cpp): requests of
 *                            QNetworkAccessManager (QML's XMLHttpRequest
 *                            too).
 *
 * The core loads a part the first time it resolves an object of that
 * module (a widget, a network reply): the module is in the process then.
 * The parts link the core and call it through this header.
 *
 * Threads: objects of the main thread only (the GUI thread: the thread
 * that entered main()). Page state is guarded by one mutex, because the
 * display tells frames from any thread.
 *
 * No C++ exception leaves the adapter: every entry from Qt or from the
 * agent catches everything (QTA_GUARD).
 */
#ifndef PACER_AGENT_QT_ADAPTER_H
#define PACER_AGENT_QT_ADAPTER_H

#include "qt_host.h"

#include <QtCore/QObject>

#include <cstdint>

#define QTA_API __attribute__((visibility("default")))

/* Runs a statement, swallowing any exception: Qt and C callers must never
 * see one. */
#define QTA_GUARD(...)  \
    do {                \
        try {           \
            __VA_ARGS__;\
        } catch (...) { \
        }               \
    } while (0)

namespace pacer_qt {

struct Page;

/* The agent's functions. */
QTA_API const pacer_qt_host &host();

/* A string that lives as long as the process (page classes). */
QTA_API const char *intern(const char *s);

/* The config's page for a Qt class name; QML's "Name_QMLTYPE_N" and
 * "Name_QML_N" are matched as "Name". -1: none. */
QTA_API long page_configured(const char *class_name);

/* Tracks obj as a page created at t (its QObject constructor's time) and
 * submits page_create and view_created. Main thread. */
QTA_API Page *page_new(QObject *obj, const char *class_name, bool window, int64_t t);
/* The page of an object, or NULL. Main thread. */
QTA_API Page *page_of(const QObject *obj);
/* A page became its container's current one at t: select and scroll. */
QTA_API void page_selected(Page *p, int64_t t);
/* A page's window (for pages inside stacks: found when shown). */
QTA_API void page_set_window(Page *p, Page *window);
QTA_API bool page_is_window(const Page *p);
/* A window's native window (QWindow) is `qwindow`: its paint events are
 * that window's. */
QTA_API void window_set_qwindow(Page *window, QObject *qwindow);

/* What the parts add. */
struct WidgetsPart {
    /* A widget of the main thread, its class now known (t: constructed). */
    void (*resolve)(QObject *widget, const char *class_name, int64_t t);
    /* The top-level widget of a widget (QWidget::window()). */
    QObject *(*top)(QObject *widget);
    /* A tracked page was shown (QEvent::Show). */
    void (*shown)(QObject *widget, Page *p);
};
struct NetworkPart {
    void (*resolve)(QObject *reply, int64_t t);
};

} // namespace pacer_qt

/* Exported by the parts. */
extern "C" QTA_API const pacer_qt::WidgetsPart *pacer_qt_widgets_part(void);
extern "C" QTA_API const pacer_qt::NetworkPart *pacer_qt_network_part(void);

#endif
