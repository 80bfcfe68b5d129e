"""The SDK over OTLP/gRPC, end to end, against a real gRPC server (pacerd's
gRPC front does not exist yet: tests/server/otel/grpc-receiver.js on
@grpc/grpc-js, test infrastructure, which stores a batch id once as pacerd
does):

  - the demo app under `pacer run --otlp-protocol grpc` (the agent, the key
    handed over through its descriptor) while the receiver stores the first
    call's batch and dies (SIGKILL) before answering, and comes back on the
    same port: every record of the run's records file arrives exactly once;
  - the same events replayed over gRPC (gzip and plain) and over OTLP/HTTP to
    the real pacerd: what the receiver decoded is what pacerd stored and
    gives back through its read APIs, span by span, log by log, point by
    point.
Skipped (exit 77) without node and the npm packages (scripts/install-deps.sh)."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
sys.path.insert(0, os.path.join(HERE, "..", "agent"))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
import grpc_receiver  # noqa: E402
from grpc_receiver import OK, UNAUTHENTICATED, GrpcReceiver, items  # noqa: E402
from pacerd_harness import KEYS, Pacerd  # noqa: E402

PACER = os.environ["PACER"]
ROOT = os.environ["PACER_SOURCE_ROOT"]
SHOP = os.path.join(ROOT, "tests", "data", "shop.xml")
EVENTS = os.path.join(ROOT, "examples", "events", "shop-events.jsonl")
EMPTY = os.path.join(ROOT, "tests", "data", "empty.jsonl")
SIGNAL = {"jank": "logs", "leak": "logs", "frames": "metrics"}


def env_without_upload_settings(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PACER_OTLP_", "PACER_CONFIG_SERVER"))}
    env.update(extra)
    return env


def attrs(o):
    return {a["key"]: a["value"] for a in o.get("attributes", [])}


def number(v):
    """An AnyValue's number, whichever way it was spelled."""
    if "intValue" in v:
        return int(v["intValue"])
    return v.get("doubleValue")


def norm(v):
    """OTLP JSON in one spelling: doubles as floats, 64-bit integers as ints."""
    if isinstance(v, dict):
        return {k: float(x) if k == "doubleValue" else int(x) if k == "intValue" else norm(x) for k, x in v.items()}
    if isinstance(v, list):
        return [norm(x) for x in v]
    return v


def attr_list(o):
    return sorted(json.dumps(norm(a), sort_keys=True) for a in o.get("attributes", []))


def comparable_span(s):
    """A span without what differs between two runs of the same events:
    its ids, its absolute times (the wall clock's offset is taken at each
    run's start) — its duration and its events' offsets kept."""
    start = int(s["startTimeUnixNano"])
    return {
        "name": s["name"], "kind": s.get("kind", 0), "status": s.get("status", {}).get("code", 0),
        "duration": int(s["endTimeUnixNano"]) - start,
        "attributes": attr_list(s),
        "events": [(e["name"], int(e["timeUnixNano"]) - start, attr_list(e)) for e in s.get("events", [])],
    }


class DemoOverGrpc(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not grpc_receiver.available():
            raise unittest.SkipTest("node or the npm packages of tests/server/otel are missing")

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.rx = GrpcReceiver(os.path.join(self.tmp.name, "calls.jsonl"))

    def tearDown(self):
        self.rx.close()
        self.tmp.cleanup()

    def test_demo_app_exactly_once_across_a_receiver_sigkill(self):
        from agentlib import SHOP_APP, SHOP_CONFIG, APP_ENV, ApiServer, Xvfb, read_jsonl
        key = KEYS["shop"]
        key_path = os.path.join(self.tmp.name, "shop.key")
        with open(key_path, "w") as f:
            f.write(key + "\n")
        os.chmod(key_path, 0o600)
        out = os.path.join(self.tmp.name, "records.jsonl")
        spool = os.path.join(self.tmp.name, "spool.db")
        port = self.rx.port
        self.rx.command(dieAfterStoring=1)
        restarted = threading.Event()

        def restart():
            self.rx.wait()             # it stored the first batch and killed itself
            time.sleep(0.3)
            self.rx.start(port)        # same address, same store
            restarted.set()
        t = threading.Thread(target=restart, daemon=True)
        t.start()
        with Xvfb() as x, ApiServer({"/api/config": 200, "/api/list": 300, "/api/test1": 300}) as api:
            env = env_without_upload_settings(DISPLAY=x.display, **APP_ENV)
            env.pop("WAYLAND_DISPLAY", None)
            p = subprocess.run([PACER, "run", "--config", SHOP_CONFIG, "--out", out, "--app", "shop",
                                "--app-version", "grpc", "--server", self.rx.url, "--otlp-protocol", "grpc",
                                "--key-file", key_path, "--spool", spool, "--",
                                SHOP_APP, "--api", api.base, "--auto-exit"],
                               env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        t.join(timeout=60)
        self.assertTrue(restarted.is_set(), "the receiver was never called, so never killed")
        records = read_jsonl(out)
        self.assertTrue([r for r in records if r["type"] == "page"], records)
        # the app's four requests, none of the uploader's gRPC calls
        nets = [r for r in records if r["type"] == "net"]
        self.assertEqual(len(nets), 4, nets)
        self.assertTrue(all(n["url"].startswith(api.base) for n in nets), nets)
        # what the run could not deliver before it exited waits in the spool:
        # the next run (nothing of its own) sends it
        for _ in range(5):
            calls = self.rx.calls()
            if sum(len(items(c)) for c in calls if c["stored"] and c["signal"] == "traces") >= \
                    len([r for r in records if SIGNAL.get(r["type"], "traces") == "traces"]):
                break
            subprocess.run([PACER, "replay", "--server", self.rx.url, "--otlp-protocol", "grpc", "--spool", spool,
                            EMPTY], env=env_without_upload_settings(PACER_KEY=key), capture_output=True, timeout=60)
        calls = self.rx.calls()
        killed = calls[0]
        self.assertTrue(killed["stored"])
        again = [c for c in calls[1:] if c["batch"] == killed["batch"]]
        self.assertTrue(again and all(c["duplicate"] and c["code"] == OK for c in again),
                        "the unanswered batch was not sent again under its id")
        for c in calls:
            self.assertEqual(c["metadata"]["authorization"], "Bearer " + key)
        stored = [c for c in calls if c["stored"]]
        # every record exactly once: spans and log records one each, a
        # frames record's points all at its time
        spans = [s for c in stored if c["signal"] == "traces" for s in items(c)]
        logs = [r for c in stored if c["signal"] == "logs" for r in items(c)]
        points = [p for c in stored if c["signal"] == "metrics" for p in items(c)]
        want_spans = sorted((r["ts"], r["type"]) for r in records if SIGNAL.get(r["type"], "traces") == "traces")
        self.assertEqual(sorted((int(s["startTimeUnixNano"]), attrs(s)["pacer.type"]["stringValue"]) for s in spans),
                         want_spans)
        self.assertEqual(sorted((int(r["timeUnixNano"]), attrs(r)["pacer.type"]["stringValue"]) for r in logs),
                         sorted((r["ts"], r["type"]) for r in records if SIGNAL.get(r["type"]) == "logs"))
        self.assertEqual({int(p["timeUnixNano"]) for p in points},
                         {r["ts"] for r in records if r["type"] == "frames"})
        # the numbers are the records file's
        home = [r for r in records if r["type"] == "page" and r["page"] == "ShopHomeWindow"][0]
        span = [s for s in spans if int(s["startTimeUnixNano"]) == home["ts"]][0]
        self.assertEqual(number(attrs(span)["pacer.total_ms"]), home["total_ms"])
        self.assertEqual(int(span["endTimeUnixNano"]) - home["ts"], round(home["total_ms"] * 1e6))


    def test_demo_app_says_why_the_server_refused(self):
        """A refusal is told in the run's words: the gRPC status and its
        message, not an HTTP status the call never had."""
        from agentlib import SHOP_APP, SHOP_CONFIG, APP_ENV, ApiServer, Xvfb
        self.rx.answer({"code": UNAUTHENTICATED, "message": "unknown key"})
        with Xvfb() as x, ApiServer({"/api/config": 20, "/api/list": 20, "/api/test1": 20}) as api:
            env = env_without_upload_settings(DISPLAY=x.display, PACER_KEY="not-a-key", **APP_ENV)
            env.pop("WAYLAND_DISPLAY", None)
            p = subprocess.run([PACER, "run", "--config", SHOP_CONFIG, "--app", "shop", "--server", self.rx.url,
                                "--otlp-protocol", "grpc", "--spool", os.path.join(self.tmp.name, "spool.db"),
                                "--", SHOP_APP, "--api", api.base, "--auto-exit"],
                               env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(self.rx.calls(), "nothing was sent")
        self.assertIn("(gRPC UNAUTHENTICATED: unknown key); check the key", p.stderr)
        self.assertNotIn("HTTP", p.stderr)

class ReplayMatchesHttp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not grpc_receiver.available():
            raise unittest.SkipTest("node or the npm packages of tests/server/otel are missing")

    def test_grpc_delivers_what_http_delivers_to_pacerd(self):
        tmp = tempfile.TemporaryDirectory()
        d = Pacerd()
        rx = GrpcReceiver(os.path.join(tmp.name, "calls.jsonl"))
        try:
            events = os.path.join(tmp.name, "events.jsonl")
            with open(EVENTS) as src, open(events, "w") as f:
                f.write(src.read())
                f.write(json.dumps({"t": 6_000_000_000, "ev": "record", "record": {
                    "type": "jank", "kind": "jank", "duration_ms": 900.0, "page": "ShopHomeWindow",
                    "fingerprint": "abc", "stack": [{"function": "compute", "module": "shop", "in_app": True}]}}) + "\n")
                f.write(json.dumps({"t": 7_000_000_000, "ev": "record", "record": {
                    "type": "frames", "window": "ShopHomeWindow", "instance": 1, "final": True, "frames": 120,
                    "slow": 3, "frozen": 0, "dropped_frames": 5, "delay_ms": 40.5, "max_frame_ms": 33.25,
                    "refresh_ms": 16.667, "levels": {"best": 100, "normal": 15}}}) + "\n")

            def replay(server, version, *extra):
                p = subprocess.run([PACER, "replay", "--config", SHOP, "--app", "shop", "--app-version", version,
                                    "--session", "s-" + version, "--server", server,
                                    "--spool", os.path.join(tmp.name, version + ".db"), *extra, events],
                                   capture_output=True, text=True, timeout=90,
                                   env=env_without_upload_settings(PACER_KEY=KEYS["shop"]))
                self.assertEqual(p.returncode, 0, p.stderr)
                return [json.loads(line) for line in p.stdout.splitlines()]

            records = replay(d.base, "http")
            for compression in ("gzip", "none"):
                replay(rx.url, "grpc-" + compression, "--otlp-protocol", "grpc", "--otlp-compression", compression)

            # pacerd's spans: every page and start-up record's trace
            http_spans = []
            for t in ("page", "startup"):
                for r in d.query("/api/v1/records?app=shop&version=http&type=%s&limit=200" % t)["records"]:
                    http_spans += d.query("/api/v1/traces/" + r["trace_id"])["spans"]
            self.assertEqual(len(http_spans), len([r for r in records if r["type"] in ("page", "startup")]))
            http_logs = d.query("/api/v1/logs?app=shop")["logs"]
            http_points = d.query("/api/v1/metrics?app=shop&name=pacer.frames.frames")["points"]
            calls = rx.calls()
            self.assertTrue(all(c["code"] == OK and c["stored"] for c in calls))
            for compression in ("gzip", "none"):
                with self.subTest(compression=compression):
                    mine = [c for c in calls if attrs(c["message"][
                        {"traces": "resourceSpans", "logs": "resourceLogs", "metrics": "resourceMetrics"}[c["signal"]]
                    ][0]["resource"])["service.version"]["stringValue"] == "grpc-" + compression]
                    self.assertEqual({c["flag"] for c in mine}, {1 if compression == "gzip" else 0})
                    spans = [s for c in mine if c["signal"] == "traces" for s in items(c)]
                    key = lambda s: (s["name"], json.dumps(attrs(s).get("pacer.instance")))  # noqa: E731
                    self.assertEqual(sorted((comparable_span(s) for s in spans), key=json.dumps),
                                     sorted((comparable_span(s) for s in http_spans), key=json.dumps))
                    self.assertEqual(len({key(s) for s in spans}), len(spans))
                    logs = [r for c in mine if c["signal"] == "logs" for r in items(c)]
                    self.assertEqual(len(logs), 1)
                    self.assertEqual(len(http_logs), 1)
                    self.assertEqual(attr_list(logs[0]), attr_list(http_logs[0]))
                    self.assertEqual(logs[0]["severityNumber"], http_logs[0]["severityNumber"])
                    frames = [p for c in mine if c["signal"] == "metrics"
                              for rm in c["message"]["resourceMetrics"] for sm in rm["scopeMetrics"]
                              for m in sm["metrics"] if m["name"] == "pacer.frames.frames"
                              for p in m["gauge"]["dataPoints"]]
                    self.assertEqual(len(frames), 1)
                    self.assertEqual(len(http_points), 1)
                    value = frames[0]["asDouble"] if "asDouble" in frames[0] else int(frames[0].get("asInt", 0))
                    self.assertEqual(value, http_points[0]["value"])
                    self.assertEqual(attr_list(frames[0]), attr_list(http_points[0]))
        finally:
            rx.close()
            d.close()
            tmp.cleanup()


if __name__ == "__main__":
    if not grpc_receiver.available():
        print("skipped: node or the npm packages of tests/server/otel are missing")
        sys.exit(77)
    unittest.main()
