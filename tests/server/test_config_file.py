#!/usr/bin/env python3
"""pacerd's config file (--config FILE, pacerd.conf(5)), its reload on
SIGHUP and its readiness messages to a service manager, on the real pacerd:

- the file gives every option the command line does (relative paths from
  the file's folder), and the command line overrides it;
- a bad line is refused at start with "FILE:LINE: why" and exit 2; on a
  reload it is logged so and every setting in use stays;
- SIGHUP reads the file again: a new keys file (an old key refused, the
  new one accepted), a new --max-body (413 where 400 was), a new log level
  are applied; a changed option that needs a restart is logged as such;
- with $NOTIFY_SOCKET (systemd's Type=notify, here a datagram socket of
  the test's own), READY=1 comes once the port accepts connections, none
  when the start fails; RELOADING=1 then READY=1 around a reload;
  STOPPING=1 on SIGTERM.
"""
import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from pacerd_harness import PACERD  # noqa: E402

ADMIN = "admin-" + os.urandom(8).hex()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """pacerd started with args from dir; stderr into a file."""

    def __init__(self, dir, args, env=None):
        self.dir = dir
        self.err_path = os.path.join(dir, "stderr-%d" % time.monotonic_ns())
        self.err = open(self.err_path, "w")
        self.p = subprocess.Popen([PACERD, *args], cwd=dir, stdout=subprocess.PIPE, stderr=self.err, text=True,
                                  env=dict(os.environ, **(env or {})))
        self.port = None

    def wait_listening(self):
        line = self.p.stdout.readline()
        if "listening on" not in line:
            self.p.wait(10)
            raise AssertionError("pacerd did not start: %s" % self.stderr())
        self.port = int(line.rsplit(":", 1)[1])
        return self

    def stderr(self):
        with open(self.err_path) as f:
            return f.read()

    def wait_stderr(self, pattern, timeout=10):
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.stderr()):
            if time.monotonic() > deadline:
                raise AssertionError("no %r in pacerd's log:\n%s" % (pattern, self.stderr()))
            time.sleep(0.05)

    def status(self, method, path, token, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        headers = {"Authorization": "Bearer " + token}
        if body is not None:
            headers["Content-Type"] = "application/json"
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        r.read()
        c.close()
        return r.status

    def key_accepted(self, key):
        return self.status("GET", "/v1/config/shop", key) not in (401, 403)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(40)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.p.stdout.close()
        self.err.close()


class ConfigFile(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="pacerd-conf-")
        self.dir = self.tmp.name
        self.write("admin-token", ADMIN + "\n")
        self.key_a = "key-a-" + os.urandom(8).hex()
        self.key_b = "key-b-" + os.urandom(8).hex()
        self.write("keys-a", "# the first keys file\nshop %s\n" % self.key_a)
        self.write("keys-b", "shop %s\n" % self.key_b)
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.stop()
        self.tmp.cleanup()

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def conf(self, extra="", keys="keys-a"):
        # relative paths: from the file's folder, whatever pacerd's
        # working directory
        return self.write("pacerd.conf", "# pacerd's settings\n\n  listen = 127.0.0.1:0\ndb=pacer.db\n"
                          "admin-token-file = admin-token\n\tkeys-file   =   %s  \n%s" % (keys, extra))

    def start(self, *args, env=None, cwd=None):
        s = Server(cwd or self.dir, list(args), env)
        self.servers.append(s)
        return s

    def test_file_gives_the_options(self):
        conf = self.conf()
        s = self.start("--config", conf, cwd="/").wait_listening()
        self.assertTrue(s.key_accepted(self.key_a))
        self.assertFalse(s.key_accepted(self.key_b))
        self.assertTrue(os.path.exists(os.path.join(self.dir, "pacer.db")))

    def test_command_line_overrides_the_file(self):
        conf = self.conf()
        s = self.start("--config", conf, "--keys-file", os.path.join(self.dir, "keys-b")).wait_listening()
        self.assertTrue(s.key_accepted(self.key_b))
        self.assertFalse(s.key_accepted(self.key_a))
        # the order does not matter: the file first, then the command line
        s2 = self.start("--listen", "127.0.0.1:0", "--db", os.path.join(self.dir, "other.db"), "--config",
                        conf).wait_listening()
        self.assertTrue(s2.key_accepted(self.key_a))
        self.assertTrue(os.path.exists(os.path.join(self.dir, "other.db")))

    def test_bad_line_refuses_to_start(self):
        cases = [
            ("max-body = 12\n", r":7: max-body = 12: expected 1024 to 1073741824 bytes$"),
            ("no-such-thing = 1\n", r":7: no-such-thing: no such option"),
            ("just words\n", r":7: expected NAME = VALUE"),
            ("threads =\n", r":7: threads: expected a value after '='"),
            ("db = again.db\n", r":7: db is given again \(first on line 4\)$"),
            ("help = yes\n", r":7: help: on the command line only"),
            ("log-level = loud\n", r":7: log-level = loud: expected error, warning, info or debug$"),
            ("webhook = ftp://x\n", r":7: webhook = ftp://x: expected an http:// or https:// URL$"),
        ]
        for extra, want in cases:
            with self.subTest(extra=extra):
                conf = self.conf(extra)
                p = subprocess.run([PACERD, "--config", conf], capture_output=True, text=True, timeout=30)
                self.assertEqual(p.returncode, 2, p.stderr)
                line = p.stderr.strip().splitlines()[-1]
                self.assertTrue(line.startswith("pacerd: " + conf + ":"), line)
                self.assertRegex(line, want)
        p = subprocess.run([PACERD, "--config", os.path.join(self.dir, "missing.conf")], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn("missing.conf: No such file or directory", p.stderr)

    def test_reload_applies_keys_limits_level_and_names_what_needs_a_restart(self):
        conf = self.conf()
        s = self.start("--config", conf).wait_listening()
        self.assertTrue(s.key_accepted(self.key_a))
        body = "x" * 4096
        self.assertEqual(s.status("POST", "/v1/traces", self.key_a, body), 400)  # read, not JSON
        self.conf("max-body = 1024\nlog-level = debug\nthreads = 3\n", keys="keys-b")
        s.p.send_signal(signal.SIGHUP)
        s.wait_stderr(r"SIGHUP: reloaded .*pacerd\.conf, the admin token and 1 keys; 3 settings changed")
        self.assertTrue(s.key_accepted(self.key_b))
        self.assertFalse(s.key_accepted(self.key_a))
        self.assertEqual(s.status("POST", "/v1/traces", self.key_b, body), 413)
        log = s.stderr()
        self.assertIn("SIGHUP: threads changed in %s: it needs a restart" % conf, log)
        self.assertNotIn("keys-file changed", log)
        # the new level holds from this reload on: debug messages come
        self.conf("max-body = 2048\nlog-level = debug\nthreads = 3\n", keys="keys-b")
        s.p.send_signal(signal.SIGHUP)
        s.wait_stderr(r"SIGHUP: applied a new max-body")

    def test_reload_applies_the_limits_to_the_grpc_front_too(self):
        conf = self.conf("grpc-listen = 127.0.0.1:0\n")
        s = self.start("--config", conf).wait_listening()
        line = s.p.stdout.readline()
        self.assertIn("OTLP/gRPC on", line)
        grpc_port = int(line.rsplit(":", 1)[1])

        def closed_at_accept(n):
            socks = [socket.create_connection(("127.0.0.1", grpc_port), timeout=5) for _ in range(n)]
            closed = 0
            try:
                for c in socks:
                    try:
                        closed += c.recv(65536) == b""  # open: pacerd's SETTINGS come
                    except ConnectionResetError:
                        closed += 1
            finally:
                for c in socks:
                    c.close()
            return closed

        self.assertEqual(closed_at_accept(4), 0)
        self.conf("grpc-listen = 127.0.0.1:0\nmax-per-address = 2\n")
        s.p.send_signal(signal.SIGHUP)
        s.wait_stderr(r"SIGHUP: reloaded .*; 1 settings changed")
        # the four closed above counted off by pacerd (liveness, up to 10 s)
        deadline = time.monotonic() + 10
        while self.open_grpc_connections(s) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(self.open_grpc_connections(s), 0)
        # the I/O thread takes the new limits before it accepts what came after them
        self.assertEqual(closed_at_accept(4), 2)

    def open_grpc_connections(self, s):
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
        c.request("GET", "/metrics", headers={"Authorization": "Bearer " + ADMIN})
        r = c.getresponse()
        body = r.read().decode()
        c.close()
        self.assertEqual(r.status, 200, body[:300])
        return float(re.search(r"^pacerd_grpc_connections (\S+)$", body, re.M).group(1))

    def test_bad_reload_keeps_every_setting(self):
        conf = self.conf()
        s = self.start("--config", conf).wait_listening()
        for bad in ("max-body = 1024\nmax-wait = forever\n", "max-body = 1024\n"):
            with self.subTest(bad=bad):
                # a bad line, or a good file naming a keys file that is not there
                self.conf(bad, keys="keys-b" if "forever" in bad else "keys-missing")
                s.p.send_signal(signal.SIGHUP)
                want = ":8: max-wait = forever: expected 1 to 600000 ms" if "forever" in bad else \
                    "keys-missing: No such file or directory"
                s.wait_stderr(re.escape(want) + "; the settings in use stay")
                self.assertTrue(s.key_accepted(self.key_a))
                self.assertFalse(s.key_accepted(self.key_b))
                self.assertEqual(s.status("POST", "/v1/traces", self.key_a, "x" * 4096), 400)
        self.assertIsNone(s.p.poll())


class Readiness(unittest.TestCase):
    """The notification socket as systemd makes it: AF_UNIX datagrams."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="pacerd-notify-")
        self.dir = self.tmp.name
        with open(os.path.join(self.dir, "admin-token"), "w") as f:
            f.write(ADMIN + "\n")
        with open(os.path.join(self.dir, "keys"), "w") as f:
            f.write("shop k-%s\n" % os.urandom(8).hex())
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock_path = os.path.join(self.dir, "notify")
        self.sock.bind(self.sock_path)
        self.server = None

    def tearDown(self):
        if self.server:
            self.server.stop()
        self.sock.close()
        self.tmp.cleanup()

    def args(self, port, keys="keys"):
        return ["--listen", "127.0.0.1:%d" % port, "--db", "pacer.db", "--admin-token-file", "admin-token",
                "--keys-file", keys]

    def receive(self, timeout=30):
        self.sock.settimeout(timeout)
        return self.sock.recv(4096).decode()

    def test_ready_once_the_port_accepts(self):
        port = free_port()
        self.server = Server(self.dir, self.args(port), env={"NOTIFY_SOCKET": self.sock_path})
        msg = self.receive()
        # the first message is READY=1; at that moment the port accepts
        self.assertEqual(msg.split("\n")[0], "READY=1", msg)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            self.assertTrue(c.recv(100).startswith(b"HTTP/1.1 200"))
        self.assertIn("STATUS=listening on http://127.0.0.1:%d" % port, msg)
        # a reload: RELOADING=1 with the monotonic time, then READY=1
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self.server.p.send_signal(signal.SIGHUP)
        reloading = self.receive()
        m = re.fullmatch(r"RELOADING=1\nMONOTONIC_USEC=(\d+)", reloading)
        self.assertTrue(m, reloading)
        self.assertGreaterEqual(int(m.group(1)), before)
        self.assertEqual(self.receive(), "READY=1")
        # SIGTERM: STOPPING=1, then the process ends
        self.server.p.send_signal(signal.SIGTERM)
        self.assertEqual(self.receive(), "STOPPING=1")
        self.assertEqual(self.server.p.wait(40), 0)

    def test_abstract_socket_name(self):
        name = "pacerd-test-%d-%s" % (os.getpid(), os.urandom(4).hex())
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as abstract:
            abstract.bind("\0" + name)
            abstract.settimeout(30)
            self.server = Server(self.dir, self.args(0), env={"NOTIFY_SOCKET": "@" + name})
            self.assertTrue(abstract.recv(4096).decode().startswith("READY=1\n"))

    def test_no_ready_when_the_start_fails(self):
        self.server = Server(self.dir, self.args(free_port(), keys="no-such-keys"),
                             env={"NOTIFY_SOCKET": self.sock_path})
        self.assertEqual(self.server.p.wait(30), 1)
        self.sock.settimeout(0.2)
        with self.assertRaises(socket.timeout):
            self.sock.recv(4096)
        self.assertIn("no-such-keys: No such file or directory", self.server.stderr())


if __name__ == "__main__":
    unittest.main(verbosity=2)
