"""Shared harness of the agent tests: a private Xvfb display, a private
headless Wayland compositor, the demo API server on a free port, `pacer run` of a program, and reading its records.

Paths come from the environment set in tests/agent/meson.build: PACER,
SHOP_APP, SHOP_API_SERVER, SHOP_CONFIG. Tests that need Xvfb skip (meson
exit code 77) when it is missing; so do those that need weston.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PACER = os.environ["PACER"]
SHOP_APP = os.environ["SHOP_APP"]
SHOP_API_SERVER = os.environ["SHOP_API_SERVER"]
SHOP_CONFIG = os.environ["SHOP_CONFIG"]

# A headless session has no D-Bus session bus: without this, GIO's proxy
# lookup for the first request may wait on D-Bus activation (seen: 1 s),
# which is real time the agent would rightly report, but not the ground
# truth the tests compare against (the server's delays).
APP_ENV = {"GIO_USE_PROXY_RESOLVER": "dummy", "NO_AT_BRIDGE": "1"}


def skip_unless(ok, why):
    """Skips (meson's exit 77) on a developer machine without Xvfb; in CI,
    where the install script provides it, its absence is a failure."""
    if not ok:
        if os.environ.get("CI"):
            print("FAIL:", why)
            sys.exit(1)
        print("SKIP:", why)
        sys.exit(77)


class Xvfb:
    """A private X server; .display is ":N"."""

    def __enter__(self):
        skip_unless(shutil.which("Xvfb"), "Xvfb is not installed")
        r, w = os.pipe()
        self.proc = subprocess.Popen(
            ["Xvfb", "-displayfd", str(w), "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
            pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(w)
        buf = b""
        deadline = time.monotonic() + 30
        while not buf.endswith(b"\n") and time.monotonic() < deadline:
            chunk = os.read(r, 16)
            if not chunk:
                break
            buf += chunk
        os.close(r)
        if not buf.strip():
            self.proc.kill()
            raise RuntimeError("Xvfb did not start")
        self.display = ":" + buf.decode().strip()
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def require_in_test(ok, why):
    """Inside a test: skips it on a developer machine without the tool; in
    CI, where the install script provides it, its absence is a failure."""
    if not ok:
        if os.environ.get("CI"):
            raise RuntimeError(why)
        import unittest
        raise unittest.SkipTest(why)


class Weston:
    """A private Wayland compositor: Debian's weston, headless (no output
    device, no GPU), its desktop shell (GTK 4.8's windows end in a protocol
    error under the kiosk shell), in a private XDG_RUNTIME_DIR. .env is what
    a GTK client needs to use it (no DISPLAY: GDK must not fall back to
    X11)."""

    SOCKET = "wayland-pacer-test"

    def __enter__(self):
        require_in_test(shutil.which("weston"), "weston is not installed")
        self.runtime = tempfile.mkdtemp(prefix="pacer-weston-")  # 0700, as XDG_RUNTIME_DIR must be
        self.proc = subprocess.Popen(
            ["weston", "--backend=headless-backend.so", "--no-config",
             "--idle-time=0", "--width=1024", "--height=768", "--socket=" + self.SOCKET,
             "--log=" + os.path.join(self.runtime, "weston.log")],
            env=dict(os.environ, XDG_RUNTIME_DIR=self.runtime), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        socket = os.path.join(self.runtime, self.SOCKET)
        deadline = time.monotonic() + 30
        while not os.path.exists(socket) and self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if not os.path.exists(socket):
            log = self.log()
            self.__exit__(None, None, None)
            raise RuntimeError("weston did not start (its log: %s)" % log)
        self.env = {"XDG_RUNTIME_DIR": self.runtime, "WAYLAND_DISPLAY": self.SOCKET, "GDK_BACKEND": "wayland"}
        return self

    def log(self):
        try:
            with open(os.path.join(self.runtime, "weston.log")) as f:
                return f.read()
        except OSError:
            return ""

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.runtime, ignore_errors=True)


class ApiServer:
    """The demo API server with per-path delays; .base is its URL."""

    def __init__(self, delays):
        self.delays = delays

    def __enter__(self):
        args = [SHOP_API_SERVER, "--port", "0", "--quiet"]
        for path, ms in self.delays.items():
            args += ["--delay", "%s=%d" % (path, ms)]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if "listening on " not in line:
            self.proc.kill()
            raise RuntimeError("API server did not start: %r" % line)
        self.base = line.split("listening on ", 1)[1].strip()
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(10)


def read_jsonl(path):
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                out.append(json.loads(line))
    return out


def pacer_run(display, program, args=(), config=None, timeout=60, extra_env=None, workdir=None):
    """Runs PROGRAM under `pacer run` to completion. Returns
    (returncode, records, events, stderr)."""
    workdir = workdir or tempfile.mkdtemp(prefix="pacer-agent-test-")
    out = os.path.join(workdir, "records.jsonl")
    raw = os.path.join(workdir, "events.jsonl")
    cmd = [PACER, "run", "--out", out, "--raw-events", raw]
    if config:
        cmd += ["--config", config]
    cmd += ["--", program] + list(args)
    env = dict(os.environ, DISPLAY=display, **APP_ENV, **(extra_env or {}))
    env.pop("WAYLAND_DISPLAY", None)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    return p.returncode, read_jsonl(out), read_jsonl(raw), p.stderr


def of_type(records, t, **match):
    return [r for r in records if r.get("type") == t and all(r.get(k) == v for k, v in match.items())]


def documented_fields():
    """Field names per record type, from the tables of docs/records.md."""
    import re
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "records.md")
    text = open(path).read()
    fields = {}
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        title = section.splitlines()[0].strip()
        name = "common" if title == "Common fields" else title.strip("`")
        fields[name] = set(re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.M))
    return fields


def assert_documented(test, records, types):
    """Every field the records of `types` carry is in docs/records.md, and
    each record has the common fields."""
    doc = documented_fields()
    for t in types:
        recs = of_type(records, t)
        test.assertTrue(recs, "no %s record to check against docs/records.md" % t)
        for r in recs:
            test.assertEqual(set(r) - doc["common"] - doc[t], set(),
                             "%s record fields missing from docs/records.md" % t)
            test.assertEqual(doc["common"] - set(r), set(), "%s record lacks common fields" % t)


def assert_frames_invariants(test, f):
    """Frames never overlap: the delays fit in the span, and so do the
    dropped refresh slots (docs/records.md)."""
    test.assertLessEqual(f["delay_ms"], f["span_ms"] + 0.001, f)
    test.assertLessEqual(f["dropped_frames"], f["span_ms"] / f["refresh_ms"] + 0.001, f)
    test.assertLessEqual(f["max_frame_ms"], f["span_ms"] + 0.001, f)
