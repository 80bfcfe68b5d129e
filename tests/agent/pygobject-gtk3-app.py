"""A small PyGObject (GTK 3) app: GTK 3 is loaded through GObject
introspection after main(), as every PyGObject app does.

  pygobject-gtk3-app.py [--stall-ms M] [--open-ms N]

It shows a window (class PyGtk3Window: GType "__main__+PyGtk3Window") with
a label, stalls the main loop once for M ms (time.sleep in a GLib timeout,
default 900) 300 ms after the window is shown, and closes it N ms later
(default 300). Prints "stalled ms=D", its own measure of the stall.
"""
import sys
import time

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk  # noqa: E402


def option(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


STALL_MS = option("--stall-ms", 900)
OPEN_MS = option("--open-ms", 300)


class PyGtk3Window(Gtk.ApplicationWindow):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.set_title("pygobject-gtk3-app")
        self.set_default_size(320, 200)
        self.add(Gtk.Label(label="hello from PyGObject and GTK 3"))


def on_activate(app):
    win = PyGtk3Window(application=app)
    win.show_all()

    def stall():
        t0 = time.monotonic()
        time.sleep(STALL_MS / 1000)
        print("stalled ms=%.1f" % ((time.monotonic() - t0) * 1000), flush=True)
        GLib.timeout_add(OPEN_MS, win.destroy)
        return GLib.SOURCE_REMOVE

    GLib.timeout_add(300, stall)


app = Gtk.Application(application_id="org.pacer.PyGObjectGtk3App", flags=0)
app.connect("activate", on_activate)
sys.exit(app.run([]))
