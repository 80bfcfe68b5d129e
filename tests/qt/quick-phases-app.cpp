/* quick-phases-app: a Qt Quick program with one slow item, for the Qt
 * adapter's frame phases (test_qt_quick_phases.py). Built against Qt 6
 * (quick-phases-app6) and Qt 5 (quick-phases-app5); no QML, no moc, no
 * pacer code.
 *
 *   --slow polish   the item's updatePolish() takes --work-ms (default 40)
 *                   of CPU per call (the GUI thread's polish step)
 *   --slow sync     its updatePaintNode() takes --work-ms per call (the
 *                   scene graph's sync, on the render thread when the
 *                   render loop is threaded)
 *   --run-ms N      how long each frame asks for the next (default 1500);
 *                   then the app quits
 *   --windows N     that many windows, each with its slow item (default 1)
 *
 * Every swapped frame asks for the next: polish() and update() on the
 * item. The windows are plain QQuickWindows. At exit it prints
 * "calls POLISH SYNC OFF_GUI" (how many times updatePolish() and
 * updatePaintNode() ran, and how many of the latter ran on another thread
 * than the GUI thread's) and exits 0.
 */
#include "slow-item.h"

#include <QtCore/QTimer>
#include <QtGui/QGuiApplication>
#include <QtQuick/QQuickWindow>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

static int work_ms = 40, run_ms = 1500, windows = 1;

int main(int argc, char **argv)
{
    const char *slow = "polish";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--slow") && i + 1 < argc)
            slow = argv[++i];
        else if (!strcmp(argv[i], "--work-ms") && i + 1 < argc)
            work_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--run-ms") && i + 1 < argc)
            run_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--windows") && i + 1 < argc)
            windows = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: quick-phases-app [--slow polish|sync] [--work-ms N] [--run-ms N] [--windows N]\n");
            return 2;
        }
    }
    if (strcmp(slow, "polish") != 0 && strcmp(slow, "sync") != 0) {
        fprintf(stderr, "quick-phases-app: --slow wants polish or sync, not '%s'\n", slow);
        return 2;
    }
    SlowItem::Step step = !strcmp(slow, "polish") ? SlowItem::Polish : SlowItem::Sync;

    QGuiApplication app(argc, argv);
    bool running = true;
    std::vector<std::unique_ptr<QQuickWindow>> shown;
    for (int i = 0; i < windows; i++) {
        QQuickWindow *window = new QQuickWindow;
        shown.emplace_back(window);
        window->setTitle(QStringLiteral("quick-phases-app %1").arg(i + 1));
        window->setPosition(20 + 260 * i, 20);
        window->resize(240, 160);
        SlowItem *item = new SlowItem(step, work_ms);
        item->setParentItem(window->contentItem());
        item->setSize(QSizeF(240, 160));
        QObject::connect(window, &QQuickWindow::frameSwapped, item, [item, &running]() {
            if (running) {
                item->polish();
                item->update();
            }
        });
        item->polish();
        window->show();
    }
    QTimer::singleShot(run_ms, &app, [&running, &app]() {
        running = false;
        QTimer::singleShot(200, &app, &QGuiApplication::quit);
    });
    int rc = app.exec();
    shown.clear();
    printf("calls %d %d %d\n", SlowItem::polish_calls.load(), SlowItem::sync_calls.load(), SlowItem::sync_off_gui.load());
    return rc;
}
