/* qt-shop: the demo shop as a Qt Widgets application, the counterpart of
 * examples/shop-app.c (GTK4). It holds no line of pacer code: everything
 * pacer learns about it must come from outside the app. The same source is
 * built against Qt 6 (qt-shop6) and Qt 5 (qt-shop5).
 *
 * What it does:
 *   1. A splash (QtShopSplash, a QSplashScreen) shows for --splash-ms.
 *   2. Then the home window (QtShopHomeWindow, the main page) is created.
 *      Its constructor sends GET /api/config with QNetworkAccessManager;
 *      when that answers it sends GET /api/list, and when that answers it
 *      fills a list: the final draw follows the second request's end.
 *   3. The home window holds a QStackedWidget of two pages built at start:
 *      QtShopWelcomePage (no API, current at once) and QtMerchantPage, which
 *      sends GET /api/test1 from its constructor and is made current only
 *      --lazy-ms after the home window was created: the lazy page.
 *   4. Once the list is filled, the merchant loaded and the lazy page shown,
 *      the app is ready. With --stall-ms N it then presses its
 *      "Recommendations" button by itself, whose handler blocks the event
 *      loop N ms inside QtShopHomeWindow::computeRecommendations().
 *   5. With --auto-exit it ends --linger-ms after that, as --exit-mode says:
 *      quit (QCoreApplication::exit(CODE): the event loop returns CODE),
 *      close (the home window is closed: Qt quits after its last window,
 *      and main returns CODE) or exit (exit(CODE) from inside a timer
 *      handler), CODE being --exit-code (0). Closed from outside (a window
 *      manager's close), it also returns CODE.
 *
 * --log-requests prints to stderr, on the app's own clock (CLOCK_MONOTONIC
 * microseconds):
 *   qt-shop: app T DISPATCHER         the QApplication constructed; the class
 *                                     of its event dispatcher (GLib's, or
 *                                     Qt's own under QT_NO_GLIB=1)
 *   qt-shop: home T                   the home window's constructor entered
 *   qt-shop: request PATH START END   START just before the get() call,
 *                                     END when the reply emits finished
 *   qt-shop: ready T                  step 4 reached
 *   qt-shop: stall START END          the computation of --stall-ms
 * A failed request prints "qt-shop: request failed: ERROR" (Qt's
 * errorString()) whatever the options.
 *
 * Environment: SHOP_STARTUP_DELAY_MS=N blocks N ms (a sleep, as a slow
 * synchronous init would) after the application object is created, before
 * the splash: a slower build of the same app. */
#include "qt-shop.h"

#include <QAbstractEventDispatcher>
#include <QApplication>
#include <QListWidgetItem>
#include <QNetworkRequest>
#include <QPainter>
#include <QPixmap>
#include <QTimer>
#include <QUrl>
#include <QVBoxLayout>
#include <QtGlobal>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>

#include <time.h>

namespace {

enum class ExitMode { Quit, Close, Exit };

struct Options {
    QString api = QStringLiteral("http://127.0.0.1:8080");
    int splashMs = 400;
    int lazyMs = 1500;
    int lingerMs = 800;
    bool autoExit = false;
    ExitMode exitMode = ExitMode::Quit;
    int exitCode = 0;
    int stallMs = 0;
    bool logRequests = false;
} opt;

long long monotonicUs()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* GET opt.api + PATH; `done` runs with the finished reply, which is deleted
 * later. --log-requests stamps the start just before get() and the end when
 * the reply emits finished. */
void apiGet(QNetworkAccessManager *nam, QObject *context, const char *path,
            std::function<void(QNetworkReply *)> done)
{
    QNetworkRequest request(QUrl(opt.api + QLatin1String(path)));
    long long start = monotonicUs();
    QNetworkReply *reply = nam->get(request);
    QString p = QString::fromLatin1(path);
    QObject::connect(reply, &QNetworkReply::finished, context, [reply, p, start, done]() {
        long long end = monotonicUs();
        if (opt.logRequests)
            fprintf(stderr, "qt-shop: request %s %lld %lld\n", qPrintable(p), start, end);
        if (reply->error() != QNetworkReply::NoError)
            fprintf(stderr, "qt-shop: request failed: %s\n", qPrintable(reply->errorString()));
        done(reply);
        reply->deleteLater();
    });
}

/* The text between "KEY":" and the next quote of a JSON body, or "". */
QString jsonString(const QByteArray &body, const char *key, int from = 0, int *next = nullptr)
{
    QByteArray needle = QByteArray("\"") + key + "\":\"";
    int at = body.indexOf(needle, from);
    if (at < 0)
        return QString();
    at += needle.size();
    int end = body.indexOf('"', at);
    if (end < 0)
        return QString();
    if (next)
        *next = end;
    return QString::fromUtf8(body.mid(at, end - at));
}

QPixmap splashPixmap()
{
    QPixmap pixmap(320, 200);
    pixmap.fill(QColor(0x2e, 0x34, 0x40));
    QPainter painter(&pixmap);
    painter.setPen(Qt::white);
    painter.drawText(pixmap.rect(), Qt::AlignCenter, QStringLiteral("pacer shop\nstarting…"));
    return pixmap;
}

} // namespace

QtShopSplash::QtShopSplash() : QSplashScreen(splashPixmap())
{
}

QtShopWelcomePage::QtShopWelcomePage(QWidget *parent) : QWidget(parent)
{
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(new QLabel(QStringLiteral("Welcome to the pacer shop"), this));
}

QtMerchantPage::QtMerchantPage(QNetworkAccessManager *nam, QWidget *parent)
    : QWidget(parent), label(new QLabel(QStringLiteral("loading merchant…"), this))
{
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(label);
    /* The page loads its data while it is still being built. */
    apiGet(nam, this, "/api/test1", [this](QNetworkReply *reply) {
        QString name = jsonString(reply->readAll(), "merchant");
        label->setText(name.isEmpty() ? QStringLiteral("failed: ") + reply->errorString()
                                      : name + QStringLiteral(" — open now"));
        emit loaded();
    });
}

QtShopHomeWindow::QtShopHomeWindow(QNetworkAccessManager *nam_) : nam(nam_)
{
    if (opt.logRequests)
        fprintf(stderr, "qt-shop: home %lld\n", monotonicUs());
    setWindowTitle(QStringLiteral("pacer shop (Qt %1)").arg(QT_VERSION_MAJOR));
    resize(480, 560);
    auto *central = new QWidget(this);
    auto *layout = new QVBoxLayout(central);
    title = new QLabel(QStringLiteral("loading…"), central);
    layout->addWidget(title);

    stack = new QStackedWidget(central);
    stack->addWidget(new QtShopWelcomePage(stack));
    merchant = new QtMerchantPage(nam, stack);
    stack->addWidget(merchant);
    connect(merchant, &QtMerchantPage::loaded, this, &QtShopHomeWindow::stepDone);
    layout->addWidget(stack);

    recommendButton = new QPushButton(QStringLiteral("Recommendations"), central);
    connect(recommendButton, &QPushButton::clicked, this, &QtShopHomeWindow::recommend);
    layout->addWidget(recommendButton);

    list = new QListWidget(central);
    layout->addWidget(list, 1);
    setCentralWidget(central);

    /* The first request starts inside the constructor. */
    apiGet(nam, this, "/api/config", [this](QNetworkReply *reply) { configLoaded(reply); });

    QTimer::singleShot(opt.lazyMs, this, [this]() {
        stack->setCurrentWidget(merchant);
        stepDone();
    });
}

void QtShopHomeWindow::configLoaded(QNetworkReply *reply)
{
    QString text = jsonString(reply->readAll(), "title");
    title->setText(text.isEmpty() ? reply->errorString() : text);
    /* The second request follows the first. */
    apiGet(nam, this, "/api/list", [this](QNetworkReply *r) { listLoaded(r); });
}

void QtShopHomeWindow::listLoaded(QNetworkReply *reply)
{
    QByteArray body = reply->readAll();
    int n = 0;
    for (int at = 0;; n++) {
        QString name = jsonString(body, "name", at, &at);
        if (name.isEmpty())
            break;
        list->addItem(name);
    }
    if (n == 0)
        list->addItem(reply->error() == QNetworkReply::NoError ? QStringLiteral("no items") : reply->errorString());
    stepDone();
}

void QtShopHomeWindow::stepDone()
{
    if (--stepsLeft == 0)
        emit ready();
}

Q_NEVER_INLINE double QtShopHomeWindow::computeRecommendations(int ms)
{
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    double score = 0;
    for (unsigned i = 1; std::chrono::steady_clock::now() < until; i++)
        score += (double)(i % 97) / (double)(i % 89 + 1); /* the "ranking" */
    return score;
}

void QtShopHomeWindow::pressRecommendations()
{
    recommendButton->click();
}

void QtShopHomeWindow::recommend()
{
    int ms = opt.stallMs ? opt.stallMs : 1000;
    long long start = monotonicUs();
    double score = computeRecommendations(ms);
    if (opt.logRequests)
        fprintf(stderr, "qt-shop: stall %lld %lld\n", start, monotonicUs());
    recommendButton->setText(QStringLiteral("Recommendations (%1)").arg(score, 0, 'f', 0));
}

namespace {

int parseNumber(const char *s, const char *name, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < 0 || v > max) {
        fprintf(stderr, "qt-shop: bad %s '%s' (0 to %ld)\n", name, s, max);
        exit(2);
    }
    return (int)v;
}

void usage(FILE *out)
{
    fputs("usage: qt-shop [--api URL] [--splash-ms N] [--lazy-ms N] [--linger-ms N] [--auto-exit]\n"
          "               [--exit-mode quit|close|exit] [--exit-code N] [--stall-ms N] [--log-requests]\n"
          "  --api URL          the demo API server (default http://127.0.0.1:8080)\n"
          "  --splash-ms N      how long the splash shows (400)\n"
          "  --lazy-ms N        when the merchant page is made current, after the home window (1500)\n"
          "  --linger-ms N      with --auto-exit: how long to stay once ready (800)\n"
          "  --auto-exit        end by itself once ready\n"
          "  --exit-mode M      quit (the event loop's exit), close (the home window), exit (exit())\n"
          "  --exit-code N      the exit status the app ends with (0)\n"
          "  --stall-ms N       once ready, block the event loop N ms in computeRecommendations()\n"
          "  --log-requests     print each request's start and end, CLOCK_MONOTONIC us, to stderr\n"
          "Environment: SHOP_STARTUP_DELAY_MS=N sleeps N ms before the splash.\n",
          out);
}

void parseOptions(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (strcmp(a, "--api") == 0 && v)
            opt.api = QString::fromLocal8Bit(argv[++i]);
        else if (strcmp(a, "--splash-ms") == 0 && v)
            opt.splashMs = parseNumber(argv[++i], a, 600000);
        else if (strcmp(a, "--lazy-ms") == 0 && v)
            opt.lazyMs = parseNumber(argv[++i], a, 600000);
        else if (strcmp(a, "--linger-ms") == 0 && v)
            opt.lingerMs = parseNumber(argv[++i], a, 600000);
        else if (strcmp(a, "--auto-exit") == 0)
            opt.autoExit = true;
        else if (strcmp(a, "--exit-mode") == 0 && v) {
            const char *m = argv[++i];
            if (strcmp(m, "quit") == 0)
                opt.exitMode = ExitMode::Quit;
            else if (strcmp(m, "close") == 0)
                opt.exitMode = ExitMode::Close;
            else if (strcmp(m, "exit") == 0)
                opt.exitMode = ExitMode::Exit;
            else {
                fprintf(stderr, "qt-shop: --exit-mode takes quit, close or exit, not '%s'\n", m);
                exit(2);
            }
        } else if (strcmp(a, "--exit-code") == 0 && v)
            opt.exitCode = parseNumber(argv[++i], a, 255);
        else if (strcmp(a, "--stall-ms") == 0 && v)
            opt.stallMs = parseNumber(argv[++i], a, 600000);
        else if (strcmp(a, "--log-requests") == 0)
            opt.logRequests = true;
        else if (strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else {
            fprintf(stderr, "qt-shop: unknown option or missing value: %s\n", a);
            usage(stderr);
            exit(2);
        }
    }
}

} // namespace

int main(int argc, char **argv)
{
    /* The options first: --help and a bad option need no display. */
    parseOptions(argc, argv);
    int delayMs = 0;
    const char *delay = getenv("SHOP_STARTUP_DELAY_MS");
    if (delay && *delay)
        delayMs = parseNumber(delay, "SHOP_STARTUP_DELAY_MS", 600000);

    static int qtArgc = 1;
    static char *qtArgv[] = {argv[0], nullptr};
    QApplication app(qtArgc, qtArgv);
    if (opt.logRequests)
        fprintf(stderr, "qt-shop: app %lld %s\n", monotonicUs(),
                QAbstractEventDispatcher::instance()->metaObject()->className());
    if (delayMs)
        std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
    QNetworkAccessManager nam;

    auto *splash = new QtShopSplash;
    splash->setAttribute(Qt::WA_DeleteOnClose);
    splash->show();

    QtShopHomeWindow *home = nullptr;
    QTimer::singleShot(opt.splashMs, &app, [&]() {
        home = new QtShopHomeWindow(&nam);
        home->setAttribute(Qt::WA_DeleteOnClose);
        QObject::connect(home, &QtShopHomeWindow::ready, home, [&]() {
            if (opt.logRequests)
                fprintf(stderr, "qt-shop: ready %lld\n", monotonicUs());
            /* Its own turn of the event loop: the stall, then the exit timer. */
            QTimer::singleShot(0, home, [&]() {
                if (opt.stallMs)
                    home->pressRecommendations();
                if (!opt.autoExit)
                    return;
                QTimer::singleShot(opt.lingerMs, home, [&]() {
                    switch (opt.exitMode) {
                    case ExitMode::Quit:
                        QCoreApplication::exit(opt.exitCode);
                        break;
                    case ExitMode::Close:
                        home->close();
                        break;
                    case ExitMode::Exit:
                        exit(opt.exitCode); /* from inside a handler, on purpose */
                    }
                });
            });
        });
        home->show();
        splash->close();
    });

    /* quit: the code comes back through the event loop; a close (the app's
     * own or from outside) ends it with 0. */
    int rc = app.exec();
    return rc ? rc : opt.exitCode;
}
