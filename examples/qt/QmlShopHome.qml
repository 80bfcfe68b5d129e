// The QML shop's first page: /api/config, then /api/list, then the list
// is filled (the final draw follows the second request).
import QtQuick
import QtQuick.Controls
import "shop.js" as Shop

Page {
    id: page
    property var opts
    signal loaded()

    header: Label {
        id: title
        text: "loading…"
        padding: 8
    }

    ListView {
        anchors.fill: parent
        model: ListModel { id: items }
        delegate: Label { text: name; padding: 4 }
    }

    Component.onCompleted: {
        Shop.get(opts, "/api/config", function(config) {
            var c = config.status === 200 ? JSON.parse(config.responseText) : null;
            title.text = c ? c.title : "failed: " + config.status;
            Shop.get(opts, "/api/list", function(list) {
                var l = list.status === 200 ? JSON.parse(list.responseText) : null;
                var rows = l && l.items ? l.items : [];
                for (var i = 0; i < rows.length; i++)
                    items.append({name: rows[i].name});
                if (rows.length === 0)
                    items.append({name: l ? "no items" : "failed: " + list.status});
                page.loaded();
            });
        });
    }
}
