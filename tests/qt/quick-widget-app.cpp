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
#include <QtCore/QTimer>
#include <QtGui/QColor>
#include <QtQuick/QQuickItem>
#include <QtQuick/QQuickWindow>
#include <QtQuick/QSGSimpleRectNode>
#include <QtQuickWidgets/QQuickWidget>
#include <QtWidgets/QApplication>
#include <QtWidgets/QVBoxLayout>
#include <QtWidgets/QWidget>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

static int work_ms = 40, run_ms = 1000, sync_calls;

static int64_t now_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void busy(int ms)
{
    int64_t end = now_ns() + (int64_t)ms * 1000000;
    volatile unsigned x = 0;
    while (now_ns() < end)
        x = x + 1;
}

class SlowItem : public QQuickItem {
  public:
    SlowItem()
    {
        setFlag(ItemHasContents, true);
    }

  protected:
    QSGNode *updatePaintNode(QSGNode *old, UpdatePaintNodeData *) override
    {
        sync_calls++;
        busy(work_ms);
        auto *node = static_cast<QSGSimpleRectNode *>(old);
        if (!node)
            node = new QSGSimpleRectNode;
        node->setRect(boundingRect());
        node->setColor(QColor::fromHsv(sync_calls % 360, 200, 200));
        return node;
    }
};

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
    SlowItem *item = new SlowItem;
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
    printf("calls %d\n", sync_calls);
    return rc;
}
