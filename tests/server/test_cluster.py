"""Scale-out on loopback: two ClickHouse servers as the two shards of a
cluster (Distributed tables over *_local tables on each), two pacerd
instances on it behind haproxy, and clients pointed at haproxy: pacer's SDK
(upload_probe: records spooled and uploaded with batch ids, retried until
acknowledged) and a sender that retries its batches until acknowledged and
sends some again after an answer it "lost". Meanwhile one pacerd and then
the other is killed with SIGKILL and started again. At the end every record
is counted exactly once — by the query API through haproxy and through
each instance, after consolidation too — and both shards hold rows.
Skipped (exit 77) without clickhouse-server or haproxy
(scripts/install-deps.sh installs both)."""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import clickhouse_harness  # noqa: E402
from clickhouse_harness import ClickHouse, free_port  # noqa: E402
from pacerd_harness import ADMIN, KEYS, Pacerd, page_span, traces  # noqa: E402

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
PROBE = os.environ.get("UPLOAD_PROBE")
T0 = 1_700_006_400 * 10**9
BATCHES = 60
SPANS = 200
SDK_PAGES = 1500
ARGS = ["--clickhouse-slot", "2", "--clickhouse-settle", "10", "--clickhouse-day", "10"]

HAPROXY_CFG = """global
  maxconn 512
defaults
  mode http
  timeout connect 2s
  timeout client 60s
  timeout server 60s
  retries 3
  option redispatch
frontend pacer
  bind 127.0.0.1:{port}
  acl app_layer path_beg /api/v1/issues /api/v1/cleaning
  use_backend analysis if app_layer
  default_backend pacerd
backend analysis
  option httpchk GET /healthz
  server a 127.0.0.1:{a} check inter 200ms fall 1 rise 1
backend pacerd
  balance roundrobin
  option httpchk GET /healthz
  server a 127.0.0.1:{a} check inter 200ms fall 1 rise 1
  server b 127.0.0.1:{b} check inter 200ms fall 1 rise 1
"""


class Front:
    """What a client sees: haproxy's address, with the harness's request helpers."""

    def __init__(self, port, like):
        self.base = "http://127.0.0.1:%d" % port
        self.like = like

    def request(self, *a, **k):
        saved = self.like.base
        self.like.base = self.base
        try:
            return self.like.request(*a, **k)
        finally:
            self.like.base = saved

    def query(self, path):
        saved = self.like.base
        self.like.base = self.base
        try:
            return self.like.query(path)
        finally:
            self.like.base = saved


class Cluster(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        tcp = [free_port(), free_port()]
        shards = {"pacer": [("127.0.0.1", tcp[0]), ("127.0.0.1", tcp[1])]}
        cls.ch = [ClickHouse(tcp=tcp[0], clusters=shards), ClickHouse(tcp=tcp[1], clusters=shards)]
        db = "cluster%d" % os.getpid()
        hosts = ["127.0.0.1:%d" % c.http for c in cls.ch]
        # each instance talks to its own node first; both make the tables on both
        url_a = "http://%s,%s/%s?cluster=pacer" % (hosts[0], hosts[1], db)
        url_b = "http://%s,%s/%s?cluster=pacer" % (hosts[1], hosts[0], db)
        cls.dir = tempfile.mkdtemp(prefix="pacer-cluster-")
        # a runs the application layer (--state): haproxy sends it the issues and cleaning APIs
        cls.a = Pacerd(ARGS, backend="clickhouse", clickhouse=cls.ch[0], database=db,
                       store_args=["--clickhouse", url_a, "--state", os.path.join(cls.dir, "state.db")])
        cls.b = Pacerd(ARGS, backend="clickhouse", clickhouse=cls.ch[1], database=db, store_args=["--clickhouse", url_b])
        cls.port = free_port()
        cfg = os.path.join(cls.dir, "haproxy.cfg")
        with open(cfg, "w") as f:
            f.write(HAPROXY_CFG.format(port=cls.port, a=cls.a.port, b=cls.b.port))
        cls.haproxy = subprocess.Popen([HAPROXY, "-f", cfg, "-db"], stdout=subprocess.DEVNULL,
                                       stderr=open(os.path.join(cls.dir, "haproxy.log"), "w"))
        cls.front = Front(cls.port, cls.a)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(cls.front.base + "/healthz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.1)

    @classmethod
    def tearDownClass(cls):
        cls.haproxy.terminate()
        cls.haproxy.wait()
        for d in (cls.a, cls.b):
            d.close()
        for c in cls.ch:
            c.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def sender(self, bodies, acked, errors, first, step):
        r = random.Random(first)
        for batch in range(first, len(bodies), step):
            for again in (False, True):
                if again and r.random() >= 0.2:
                    break
                k = batch if not again else r.randrange(0, batch + 1)  # an answer "lost": sent again
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    try:
                        st, _, _ = self.front.request("POST", "/v1/traces", bodies[k], token=KEYS["shop"],
                                                      headers={"X-Pacer-Batch-Id": "cl-%d" % k})
                    except OSError:
                        st = None
                    if st == 200:
                        acked.add(k)
                        break
                    if st not in (None, 429, 502, 503, 504):
                        errors.append("batch %d: HTTP %s" % (k, st))
                        break
                    time.sleep(0.05)
                else:
                    errors.append("batch %d: never acknowledged" % k)

    def test_0_the_application_layer_behind_haproxy(self):
        # the issues and cleaning APIs go to the instance that runs it, whatever the round robin
        for _ in range(4):
            st, _, body = self.front.request("GET", "/api/v1/cleaning?app=shop", token=ADMIN)
            self.assertEqual(st, 200, body)
            st, _, body = self.front.request("GET", "/api/v1/issues?app=shop", token=ADMIN)
            self.assertEqual(st, 200, body)
        st, _, _ = self.b.request("GET", "/api/v1/issues?app=shop", token=ADMIN)
        self.assertEqual(st, 501)

    def test_sigkill_of_one_instance_during_ingest(self):
        rnd = random.Random(3)
        bodies = []
        for b in range(BATCHES):
            spans = [page_span("ClusterWindow", T0 + rnd.randrange(3 * 86400 * 10**9), rnd.uniform(5, 900))
                     for _ in range(SPANS)]
            for i, s in enumerate(spans):
                s["spanId"] = "%08x%08x" % (b + 1, i + 1)
            bodies.append(traces(spans))
        acked, errors = set(), []
        threads = [threading.Thread(target=self.sender, args=(bodies, acked, errors, n, 2)) for n in range(2)]
        spool = os.path.join(self.dir, "spool.db")
        env = dict(os.environ, PACER_KEY=KEYS["shop"])
        probe = None
        if PROBE:
            probe = subprocess.Popen([PROBE, self.front.base, spool, "shop", "pages", str(SDK_PAGES), "3"], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for t in threads:
            t.start()
        kills = 0
        for victim in (self.a, self.b, self.a, self.b):
            if not any(t.is_alive() for t in threads):
                break
            time.sleep(0.4 + random.random() * 0.4)
            port = victim.port
            victim.kill(9)
            kills += 1
            time.sleep(0.3)
            victim.start(port)
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(len(acked), BATCHES)
        self.assertGreaterEqual(kills, 2, "ingest ended before an instance could be killed twice")
        pages = {p["page"]: p for p in self.front.query("/api/v1/pages?app=shop")["pages"]}
        self.assertEqual(pages["ClusterWindow"]["count"], BATCHES * SPANS)
        self.assertEqual(pages["ClusterWindow"]["metrics"]["total_ms"]["count"], BATCHES * SPANS)
        if probe:
            probe.wait(timeout=120)
            # what the SDK still had spooled goes with its next run
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                got = {p["page"]: p for p in self.front.query("/api/v1/pages?app=shop")["pages"]}
                if got.get("ProbeWindow", {}).get("count") == SDK_PAGES:
                    break
                subprocess.run([PROBE, self.front.base, spool, "shop", "pages", "0", "0"], env=env,
                               capture_output=True, timeout=60)
            got = {p["page"]: p for p in self.front.query("/api/v1/pages?app=shop")["pages"]}
            self.assertEqual(got["ProbeWindow"]["count"], SDK_PAGES)
        # through each instance, and once consolidated
        for d in (self.a, self.b):
            pages = {p["page"]: p for p in d.query("/api/v1/pages?app=shop")["pages"]}
            self.assertEqual(pages["ClusterWindow"]["count"], BATCHES * SPANS)
        self.a.wait_consolidated()
        pages = {p["page"]: p for p in self.front.query("/api/v1/pages?app=shop")["pages"]}
        self.assertEqual(pages["ClusterWindow"]["count"], BATCHES * SPANS)
        if probe:
            self.assertEqual(pages["ProbeWindow"]["count"], SDK_PAGES)
        distinct = self.a.sql("SELECT uniqExact(span_id) FROM page_loads WHERE page = 'ClusterWindow'")[0][0]
        self.assertEqual(distinct, BATCHES * SPANS)
        for c in self.ch:  # both shards hold part of it
            n = int(c.sql("SELECT count() FROM page_loads_local", self.a.database).strip())
            self.assertGreater(n, 0)


if __name__ == "__main__":
    if not clickhouse_harness.available() or not os.access(HAPROXY, os.X_OK):
        print("skipped: clickhouse-server or haproxy missing (run scripts/install-deps.sh)")
        sys.exit(1 if os.environ.get("CI") else 77)
    unittest.main()
