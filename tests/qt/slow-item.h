/* A Qt Quick item whose polish or sync step takes a known time of CPU:
 * the ground truth of the Qt Quick frame tests (quick-phases-app,
 * quick-widget-app). Header only: each app stays one file, without moc. */
#pragma once

#include <QtCore/QCoreApplication>
#include <QtCore/QThread>
#include <QtGui/QColor>
#include <QtQuick/QQuickItem>
#include <QtQuick/QSGSimpleRectNode>

#include "../agent/app-clock.h"

#include <atomic>

/* Its updatePolish() (the GUI thread's polish step) or its
 * updatePaintNode() (the scene graph's sync, on the render thread when
 * the render loop is threaded) takes work_ms per call; it counts both
 * calls, and the syncs made off the GUI thread. */
class SlowItem : public QQuickItem {
  public:
    enum Step { Polish, Sync };
    inline static std::atomic<int> polish_calls{0}, sync_calls{0}, sync_off_gui{0};

    SlowItem(Step slow, int work_ms) : slow_(slow), work_ms_(work_ms)
    {
        setFlag(ItemHasContents, true);
    }

  protected:
    void updatePolish() override
    {
        polish_calls++;
        if (slow_ == Polish)
            busy(work_ms_);
    }
    QSGNode *updatePaintNode(QSGNode *old, UpdatePaintNodeData *) override
    {
        int n = ++sync_calls;
        if (QThread::currentThread() != QCoreApplication::instance()->thread())
            sync_off_gui++;
        if (slow_ == Sync)
            busy(work_ms_);
        auto *node = static_cast<QSGSimpleRectNode *>(old);
        if (!node)
            node = new QSGSimpleRectNode;
        node->setRect(boundingRect());
        node->setColor(QColor::fromHsv(n % 360, 200, 200));
        return node;
    }

  private:
    Step slow_;
    int work_ms_;
};
