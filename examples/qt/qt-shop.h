/* qt-shop's widgets: the Qt Widgets counterpart of examples/shop-app.c,
 * built once against Qt 6 (qt-shop6) and once against Qt 5 (qt-shop5) from
 * the same source. See qt-shop.cpp for what the app does and its options.
 *
 * Each class has its own Q_OBJECT, so QMetaObject::className() names it:
 * these names are what examples/qt/qt-shop.xml configures. */
#pragma once

#include <QLabel>
#include <QListWidget>
#include <QMainWindow>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QPushButton>
#include <QSplashScreen>
#include <QStackedWidget>
#include <QString>
#include <QWidget>

/* The splash shown first, for --splash-ms (a QSplashScreen: a splash by
 * default for pacer too). */
class QtShopSplash : public QSplashScreen
{
    Q_OBJECT
  public:
    QtShopSplash();
};

/* A stack page with no API: current at start. */
class QtShopWelcomePage : public QWidget
{
    Q_OBJECT
  public:
    explicit QtShopWelcomePage(QWidget *parent = nullptr);
};

/* A stack page that starts GET /api/test1 in its constructor; the home
 * window makes it current --lazy-ms after it was built: the lazy page. */
class QtMerchantPage : public QWidget
{
    Q_OBJECT
  public:
    QtMerchantPage(QNetworkAccessManager *nam, QWidget *parent = nullptr);
  signals:
    void loaded();

  private:
    QLabel *label;
};

/* The main page: GET /api/config from its constructor, then GET /api/list,
 * then the list is filled (the final draw follows the second request). */
class QtShopHomeWindow : public QMainWindow
{
    Q_OBJECT
  public:
    explicit QtShopHomeWindow(QNetworkAccessManager *nam);
    /* The demo's slow code: ranks made-up products on the GUI thread for
     * `ms` milliseconds of CPU time (a busy loop, as a real computation is),
     * freezing the window meanwhile. Not inlined: it has its own frame in
     * the stack of the main-loop stall. */
    static double computeRecommendations(int ms);
    /* Clicks the "Recommendations" button, as the user would: its handler
     * computes for --stall-ms (1000 ms without it). */
    void pressRecommendations();
  signals:
    /* The list, the merchant page and the lazy switch are all done. */
    void ready();

  private:
    void configLoaded(QNetworkReply *reply);
    void listLoaded(QNetworkReply *reply);
    void stepDone();
    void recommend();

    QNetworkAccessManager *nam;
    QLabel *title;
    QStackedWidget *stack;
    QtMerchantPage *merchant;
    QPushButton *recommendButton;
    QListWidget *list;
    int stepsLeft = 3; /* list filled, merchant loaded, lazy page shown */
};
