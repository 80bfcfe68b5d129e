/* quick-widget-app: a Qt Widgets window whose content is a QQuickWidget
 * (test_qt_quick_phases.py). The QQuickWidget renders its scene into a
 * texture through an offscreen QQuickWindow that is never shown; the
 * frames that reach the display are the widget window's. Its item's
 * updatePaintNode() takes --work-ms (default 40) of CPU per call while a
 * timer asks for a new frame every 16 ms for --run-ms (default 1000);
 * then the app quits. Prints "calls SYNC" at exit and exits 0. Built
 * against Qt 6 (quick-widget-app6) and Qt 5 (quick-widget-app5); no QML,
 * no moc, no pacer code.
 */
#include "slow-item.h"

#include <QtCore/QTimer>
#include <QtQuick/QQuickWindow>
#include <QtQuickWidgets/QQuickWidget>
#include <QtWidgets/QApplication>
#include <QtWidgets/QVBoxLayout>
#include <QtWidgets/QWidget>

#include <cstdio>
#include <cstdlib>
#include <cstring>

static int work_ms = 40, run_ms = 1000;

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--work-ms") && i + 1 < argc)
            work_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--run-ms") && i + 1 < argc)
            run_ms = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: quick-widget-app [--work-ms N] [--run-ms N]\n");
            return 2;
        }
    }
    QApplication app(argc, argv);
    QWidget window;
    window.resize(240, 160);
    QVBoxLayout *layout = new QVBoxLayout(&window);
    QQuickWidget *quick = new QQuickWidget;
    quick->setResizeMode(QQuickWidget::SizeRootObjectToView);
    layout->addWidget(quick);
    SlowItem *item = new SlowItem(SlowItem::Sync, work_ms);
    item->setParentItem(quick->quickWindow()->contentItem());
    item->setSize(QSizeF(200, 120));

    QTimer tick;
    QObject::connect(&tick, &QTimer::timeout, item, [item]() { item->update(); });
    tick.start(16);
    QTimer::singleShot(run_ms, &app, [&]() {
        tick.stop();
        QTimer::singleShot(200, &app, &QApplication::quit);
    });
    window.show();
    int rc = app.exec();
    printf("calls %d\n", SlowItem::sync_calls.load());
    return rc;
}
