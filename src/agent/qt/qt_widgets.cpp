/* The Qt adapter's widgets part (qt_adapter.h): which widgets are pages.
 * Links QtGui and QtWidgets; loaded by the core when it first resolves a
 * widget, so only programs that made one map it.
 *
 *   window   every top-level widget (isWindow() when its class is known)
 *            but pop-ups, tool tips and the desktop: a QMainWindow, a
 *            QDialog, a QSplashScreen (a splash when the config says so);
 *   page     a widget of a class the config in force names; inside a
 *            QStackedWidget (also QTabWidget's) it is selected when it
 *            becomes the current one (currentChanged), or at its creation
 *            when it was current then (the first page added).
 */
#include "qt_adapter.h"

#include <QtWidgets/QStackedWidget>
#include <QtWidgets/QWidget>
#include <QtGui/QWindow>

namespace pacer_qt {
namespace {

void on_current_changed(QStackedWidget *stack, int index)
{
    QWidget *w = stack->widget(index);
    if (Page *p = w ? page_of(w) : nullptr)
        page_selected(p, host().now_ns());
}

void resolve(QObject *obj, const char *class_name, int64_t t)
{
    QWidget *w = static_cast<QWidget *>(obj);
    if (QStackedWidget *stack = qobject_cast<QStackedWidget *>(w))
        QObject::connect(stack, &QStackedWidget::currentChanged, stack,
                         [stack](int i) { QTA_GUARD(on_current_changed(stack, i)); });
    if (w->isWindow()) {
        Qt::WindowType type = w->windowType();
        if (type == Qt::Popup || type == Qt::ToolTip || type == Qt::Desktop)
            return;
        page_new(obj, class_name, true, t);
        return;
    }
    if (page_configured(class_name) < 0)
        return;
    Page *p = page_new(obj, class_name, false, t);
    QStackedWidget *stack = qobject_cast<QStackedWidget *>(w->parentWidget());
    if (stack && stack->currentWidget() == w)
        page_selected(p, t);
}

QObject *top(QObject *obj)
{
    return static_cast<QWidget *>(obj)->window();
}

void shown(QObject *obj, Page *p)
{
    QWidget *w = static_cast<QWidget *>(obj);
    if (page_is_window(p)) {
        window_set_qwindow(p, w->windowHandle());
        return;
    }
    if (Page *win = page_of(w->window()))
        page_set_window(p, win);
}

const WidgetsPart part = {
    [](QObject *o, const char *c, int64_t t) { QTA_GUARD(resolve(o, c, t)); },
    [](QObject *o) -> QObject * {
        try {
            return top(o);
        } catch (...) {
            return nullptr;
        }
    },
    [](QObject *o, Page *p) { QTA_GUARD(shown(o, p)); },
};

} // namespace
} // namespace pacer_qt

extern "C" const pacer_qt::WidgetsPart *pacer_qt_widgets_part(void)
{
    return &pacer_qt::part;
}
