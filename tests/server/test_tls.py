"""pacerd over TLS (--tls-cert / --tls-key, libmicrohttpd with GnuTLS),
with a self-signed certificate this test makes with openssl: clients that
trust it talk HTTPS, clients that do not refuse it, plain HTTP gets no
answer, a silent TLS client is cut at the header deadline, and the SDK
(`pacer replay --server https://... --ca`) delivers only when told which
certificate to trust."""
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from pacerd_harness import ADMIN, KEYS, Pacerd, page_span, traces  # noqa: E402

PACER = os.environ.get("PACER")
ROOT = os.environ.get("PACER_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
T0 = 1_700_006_400 * 10**9


def make_certificate(directory):
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=pacerd test",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True)
    return cert, key


class Tls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("openssl"):
            if os.environ.get("CI"):
                raise AssertionError("openssl is missing (scripts/install-deps.sh installs it)")
            raise unittest.SkipTest("openssl is missing")
        cls.tmp = tempfile.mkdtemp(prefix="pacerd-tls-")
        cls.cert, cls.key = make_certificate(cls.tmp)
        cls.d = Pacerd(["--tls-cert", cls.cert, "--tls-key", cls.key, "--header-timeout", "2"], scheme="https")
        cls.d.ssl_context = ssl.create_default_context(cafile=cls.cert)

    @classmethod
    def tearDownClass(cls):
        cls.d.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_https_with_the_certificate_trusted(self):
        self.assertEqual(self.d.request("GET", "/healthz")[0], 200)
        self.d.ingest("/v1/traces", traces([page_span("TlsWindow", T0, 7.5)]))
        pages = {p["page"]: p for p in self.d.query("/api/v1/pages?app=shop")["pages"]}
        self.assertEqual(pages["TlsWindow"]["count"], 1)

    def test_a_client_that_does_not_trust_it_refuses(self):
        with self.assertRaises(urllib.error.URLError) as e:
            urllib.request.urlopen(self.d.base + "/healthz", timeout=10, context=ssl.create_default_context())
        self.assertIsInstance(e.exception.reason, ssl.SSLCertVerificationError)

    def test_plain_http_gets_no_answer(self):
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=10)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        got = b""
        try:
            while True:
                c = s.recv(4096)
                if not c:
                    break
                got += c
        except OSError:
            pass
        s.close()
        self.assertFalse(got.startswith(b"HTTP/"), got[:100])

    def test_a_silent_tls_client_is_cut_at_the_header_deadline(self):
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=15)
        t = time.monotonic()
        try:
            closed = s.recv(1) == b""
        except ConnectionResetError:
            closed = True
        except socket.timeout:
            closed = False
        s.close()
        self.assertTrue(closed, "a TCP connection that never starts TLS stayed open %.1f s" % (time.monotonic() - t))

    def test_the_sdk_verifies_the_certificate(self):
        if not PACER:
            self.skipTest("PACER is not set")
        spool = os.path.join(self.tmp, "spool.db")
        events = os.path.join(ROOT, "examples", "events", "shop-events.jsonl")
        config = os.path.join(ROOT, "tests", "data", "shop.xml")
        env = dict(os.environ, PACER_KEY=KEYS["shop"])

        def replay(*extra):
            return subprocess.run([PACER, "replay", "--config", config, "--app", "shop", "--app-version", "tls",
                                   "--server", self.d.base, "--spool", spool] + list(extra) + [events],
                                  capture_output=True, text=True, timeout=60, env=env)

        def stored():
            got = self.d.query("/api/v1/pages?app=shop&version=tls")["pages"]
            return sum(p["count"] for p in got)

        p = replay()  # the system's CAs do not know this certificate
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("uploaded 0 batch(es)", p.stderr)
        self.assertIn("waits in the spool", p.stderr)
        self.assertEqual(stored(), 0)
        p = replay("--ca", self.cert)
        self.assertEqual(p.returncode, 0, p.stderr)
        records = [json.loads(l) for l in p.stdout.splitlines()]
        pages = [r for r in records if r["type"] == "page"]
        self.assertEqual(stored(), 2 * len(pages))  # this run's pages and the previous run's, from the spool
        p = replay("--ca", os.path.join(self.tmp, "missing.pem"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("--ca", p.stderr)


class TlsConfiguration(unittest.TestCase):
    def test_a_bad_certificate_or_key_stops_the_start_with_its_name(self):
        if not shutil.which("openssl"):
            self.skipTest("openssl is missing")
        tmp = tempfile.mkdtemp(prefix="pacerd-tls-")
        try:
            cert, key = make_certificate(tmp)
            junk = os.path.join(tmp, "junk.pem")
            with open(junk, "w") as f:
                f.write("not a certificate\n")
            for args, reason in ((["--tls-cert", junk, "--tls-key", key], "--tls-cert %s: not a PEM file" % junk),
                                 (["--tls-cert", cert, "--tls-key", os.path.join(tmp, "none")], "--tls-key"),
                                 (["--tls-cert", cert], "--tls-cert and --tls-key go together"),
                                 (["--tls-cert", key, "--tls-key", cert], "cannot listen with TLS")):
                with self.assertRaises(RuntimeError) as e:
                    Pacerd(args, scheme="https")
                self.assertIn(reason, str(e.exception))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
