// qml-shop: the demo shop in QML, run by Qt 6's qml runtime with no line of
// pacer code:
//   qml qml-shop.qml -- --api URL [--lazy-ms N] [--auto-exit] ...
// (options: shop.js). A Window holding a StackView: its first page
// (QmlShopHome) loads /api/config then /api/list with XMLHttpRequest; --lazy-ms
// after the window was built, a second page (QmlShopMerchant) is pushed and
// loads /api/test1. Once both pages have loaded, the app is ready. With
// --log-requests it prints "qml-shop: window T" when the window is built,
// "qml-shop: ready T" and each request's stamps (shop.js), T in
// CLOCK_REALTIME ms (Date.now(): QML has no monotonic clock). With
// --auto-exit it ends --linger-ms later: quit (Qt.exit(--exit-code)) or
// close (the window is closed; qml then ends with 0).
import QtQuick
import QtQuick.Controls
import QtQuick.Window
import "shop.js" as Shop

Window {
    id: window
    width: 480
    height: 560
    visible: true
    title: "pacer shop (QML)"

    readonly property var opts: Shop.options(Qt.application.arguments)
    property int stepsLeft: 2

    function stepDone() {
        if (--stepsLeft > 0)
            return;
        if (opts.logRequests)
            console.info("qml-shop: ready " + Date.now());
        if (opts.autoExit)
            leave.start();
    }

    StackView {
        id: stack
        anchors.fill: parent
        initialItem: QmlShopHome {
            opts: window.opts
            onLoaded: window.stepDone()
        }
    }

    Component.onCompleted: {
        if (opts.logRequests)
            console.info("qml-shop: window " + Date.now());
        lazy.start();
    }

    Timer {
        id: lazy
        interval: window.opts.lazyMs
        onTriggered: {
            var page = stack.push(Qt.resolvedUrl("QmlShopMerchant.qml"), {opts: window.opts});
            page.loaded.connect(window.stepDone);
        }
    }

    Timer {
        id: leave
        interval: window.opts.lingerMs
        onTriggered: {
            if (window.opts.exitMode === "close")
                window.close();
            else
                Qt.exit(window.opts.exitCode);
        }
    }
}
