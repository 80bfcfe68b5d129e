/* bench-quick-frames: what the Qt adapter's frame timing costs per frame
 * (quick_frames.py). A Qt Quick window renders its first frame; then, on
 * the GUI thread (QSG_RENDER_LOOP=basic), the window's scene-graph signals
 * are emitted CYCLES times in a frame's order — afterAnimating,
 * beforeFrameBegin (Qt 6), before/afterSynchronizing, before/afterRendering,
 * frameSwapped, afterFrameEnd (Qt 6) — without rendering, so that the
 * thread's CPU time per cycle is the receivers' bookkeeping (the adapter's
 * under the agent, none without). Prints "ns_per_cycle N" and exits 0.
 */
#include <QtCore/QTimer>
#include <QtGui/QGuiApplication>
#include <QtQuick/QQuickWindow>

#include <cstdio>
#include <cstdlib>
#include <ctime>

static int64_t thread_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long cycles = argc > 1 ? atol(argv[1]) : 200000;
    QGuiApplication app(argc, argv);
    QQuickWindow window;
    window.resize(200, 120);
    bool started = false;
    QObject::connect(&window, &QQuickWindow::frameSwapped, &app, [&]() {
        if (started)
            return;
        started = true;
        QTimer::singleShot(100, &app, [&]() {
            int64_t t0 = thread_ns();
            for (long i = 0; i < cycles; i++) {
                emit window.afterAnimating();
#if QT_VERSION >= QT_VERSION_CHECK(6, 0, 0)
                emit window.beforeFrameBegin();
#endif
                emit window.beforeSynchronizing();
                emit window.afterSynchronizing();
                emit window.beforeRendering();
                emit window.afterRendering();
                emit window.frameSwapped();
#if QT_VERSION >= QT_VERSION_CHECK(6, 0, 0)
                emit window.afterFrameEnd();
#endif
            }
            int64_t t1 = thread_ns();
            printf("ns_per_cycle %.1f\n", (double)(t1 - t0) / (double)cycles);
            fflush(stdout);
            app.quit();
        });
    }, Qt::QueuedConnection);
    window.show();
    return app.exec();
}
