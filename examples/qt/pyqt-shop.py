#!/usr/bin/python3
"""pyqt-shop: the demo shop as a PyQt6 script (Debian's python3-pyqt6), with
no line of pacer code: QtCore is loaded by the Python interpreter at run
time, when the script imports PyQt6.

A main window (PyShopHomeWindow) sends GET /api/config with
QNetworkAccessManager from its constructor and shows the title it returns.
It holds a QStackedWidget of two pages built at start: PyShopWelcomePage
(no API, current at once) and PyShopMerchantPage, which sends GET /api/test1
from its constructor and is made current only --lazy-ms after the window
was created: the lazy page. Once both requests answered and the lazy page
is shown, the script is ready; with --auto-exit it ends --linger-ms later
with --exit-code.

--log-requests prints to stderr, on the app's own clock (CLOCK_MONOTONIC
microseconds): "pyqt-shop: request PATH START END" (START just before
get(), END when the reply emits finished), "pyqt-shop: home T" (the main
window's constructor entered) and "pyqt-shop: ready T". A failed
request prints "pyqt-shop: request failed: ERROR" (Qt's errorString()).
"""
import argparse
import json
import sys
import time

from PyQt6.QtCore import QTimer, QUrl, pyqtSignal
from PyQt6.QtNetwork import QNetworkAccessManager, QNetworkReply, QNetworkRequest
from PyQt6.QtWidgets import QApplication, QLabel, QMainWindow, QStackedWidget, QVBoxLayout, QWidget

opts = None


def now_us():
    return time.monotonic_ns() // 1000


def api_get(nam, path, done):
    """GET opts.api + PATH; done(reply, body) once it finished."""
    start = now_us()
    reply = nam.get(QNetworkRequest(QUrl(opts.api + path)))

    def finished():
        end = now_us()
        if opts.log_requests:
            print("pyqt-shop: request %s %d %d" % (path, start, end), file=sys.stderr, flush=True)
        if reply.error() != QNetworkReply.NetworkError.NoError:
            print("pyqt-shop: request failed: %s" % reply.errorString(), file=sys.stderr, flush=True)
        done(reply, bytes(reply.readAll()))
        reply.deleteLater()

    reply.finished.connect(finished)


class PyShopWelcomePage(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        QVBoxLayout(self).addWidget(QLabel("Welcome to the pacer shop", self))


class PyShopMerchantPage(QWidget):
    loaded = pyqtSignal()

    def __init__(self, nam, parent=None):
        super().__init__(parent)
        self.label = QLabel("loading merchant…", self)
        QVBoxLayout(self).addWidget(self.label)
        api_get(nam, "/api/test1", self.on_loaded)

    def on_loaded(self, reply, body):
        try:
            self.label.setText(json.loads(body)["merchant"] + " — open now")
        except (ValueError, KeyError):
            self.label.setText("failed: " + reply.errorString())
        self.loaded.emit()


class PyShopHomeWindow(QMainWindow):
    ready = pyqtSignal()

    def __init__(self, nam):
        super().__init__()
        if opts.log_requests:
            print("pyqt-shop: home %d" % now_us(), file=sys.stderr, flush=True)
        self.steps_left = 3  # config, merchant, lazy page shown
        self.setWindowTitle("pacer shop (PyQt6)")
        self.resize(480, 400)
        central = QWidget(self)
        layout = QVBoxLayout(central)
        self.title = QLabel("loading…", central)
        layout.addWidget(self.title)
        self.stack = QStackedWidget(central)
        self.stack.addWidget(PyShopWelcomePage(self.stack))
        self.merchant = PyShopMerchantPage(nam, self.stack)
        self.merchant.loaded.connect(self.step_done)
        self.stack.addWidget(self.merchant)
        layout.addWidget(self.stack, 1)
        self.setCentralWidget(central)
        api_get(nam, "/api/config", self.on_config)
        QTimer.singleShot(opts.lazy_ms, self.show_lazy_page)

    def on_config(self, reply, body):
        try:
            self.title.setText(json.loads(body)["title"])
        except (ValueError, KeyError):
            self.title.setText("failed: " + reply.errorString())
        self.step_done()

    def show_lazy_page(self):
        self.stack.setCurrentWidget(self.merchant)
        self.step_done()

    def step_done(self):
        self.steps_left -= 1
        if self.steps_left == 0:
            self.ready.emit()


def main():
    global opts
    p = argparse.ArgumentParser(prog="pyqt-shop", description="The demo shop as a PyQt6 script.")
    p.add_argument("--api", default="http://127.0.0.1:8080", help="the demo API server")
    p.add_argument("--lazy-ms", type=int, default=1500, help="when the merchant page is made current")
    p.add_argument("--linger-ms", type=int, default=800, help="with --auto-exit: how long to stay once ready")
    p.add_argument("--auto-exit", action="store_true", help="end by itself once ready")
    p.add_argument("--exit-code", type=int, default=0, help="the exit status it ends with")
    p.add_argument("--log-requests", action="store_true",
                   help="print each request's start and end, CLOCK_MONOTONIC us, to stderr")
    opts = p.parse_args()

    app = QApplication(sys.argv[:1])
    nam = QNetworkAccessManager()
    home = PyShopHomeWindow(nam)

    def on_ready():
        if opts.log_requests:
            print("pyqt-shop: ready %d" % now_us(), file=sys.stderr, flush=True)
        if opts.auto_exit:
            QTimer.singleShot(opts.linger_ms, lambda: app.exit(opts.exit_code))

    home.ready.connect(on_ready)
    home.show()
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
