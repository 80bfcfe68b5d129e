// The QML shop's second page, pushed later: it loads /api/test1 when built.
import QtQuick
import QtQuick.Controls
import "shop.js" as Shop

Page {
    id: page
    property var opts
    signal loaded()

    Label {
        id: label
        anchors.centerIn: parent
        text: "loading merchant…"
    }

    Component.onCompleted: {
        Shop.get(opts, "/api/test1", function(xhr) {
            var m = xhr.status === 200 ? JSON.parse(xhr.responseText) : null;
            label.text = m ? m.merchant + " — open now" : "failed: " + xhr.status;
            page.loaded();
        });
    }
}
