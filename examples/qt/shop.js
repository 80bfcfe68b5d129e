// The QML shop's options and requests, shared by its pages.
.pragma library

// The options after `--` on qml's command line (Qt.application.arguments
// holds the whole command line): --api URL, --lazy-ms N, --linger-ms N,
// --auto-exit, --exit-mode quit|close, --exit-code N, --log-requests.
function options(args) {
    var o = {api: "http://127.0.0.1:8080", lazyMs: 1500, lingerMs: 800, autoExit: false,
             exitMode: "quit", exitCode: 0, logRequests: false};
    var i = args.indexOf("--");
    for (i = i < 0 ? args.length : i + 1; i < args.length; i++) {
        var a = args[i], v = args[i + 1];
        if (a === "--api" && v !== undefined) { o.api = v; i++; }
        else if (a === "--lazy-ms" && v !== undefined) { o.lazyMs = number(a, v); i++; }
        else if (a === "--linger-ms" && v !== undefined) { o.lingerMs = number(a, v); i++; }
        else if (a === "--exit-code" && v !== undefined) { o.exitCode = number(a, v); i++; }
        else if (a === "--exit-mode" && (v === "quit" || v === "close")) { o.exitMode = v; i++; }
        else if (a === "--auto-exit") o.autoExit = true;
        else if (a === "--log-requests") o.logRequests = true;
        else {
            console.error("qml-shop: unknown option or bad value: " + a);
            Qt.exit(2);
        }
    }
    return o;
}

function number(name, v) {
    var n = Number(v);
    if (!(n >= 0 && n <= 600000 && Math.floor(n) === n)) {
        console.error("qml-shop: bad " + name + " '" + v + "'");
        Qt.exit(2);
        return 0;
    }
    return n;
}

// GET opts.api + PATH with XMLHttpRequest; done(xhr) when it is DONE.
// --log-requests prints "qml-shop: request PATH START END", START just
// before send() and END at readyState DONE, in CLOCK_REALTIME milliseconds
// (Date.now(): QML has no monotonic clock). A failure prints
// "qml-shop: request failed: PATH STATUS".
function get(opts, path, done) {
    var xhr = new XMLHttpRequest();
    var start = 0;
    xhr.onreadystatechange = function() {
        if (xhr.readyState !== XMLHttpRequest.DONE)
            return;
        var end = Date.now();
        if (opts.logRequests)
            console.info("qml-shop: request " + path + " " + start + " " + end);
        if (xhr.status !== 200)
            console.info("qml-shop: request failed: " + path + " " + xhr.status);
        done(xhr);
    };
    xhr.open("GET", opts.api + path);
    start = Date.now();
    xhr.send();
}
