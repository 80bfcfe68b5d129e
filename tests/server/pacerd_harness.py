"""Runs the real pacerd on a free loopback port for a test, and talks to it
over HTTP with the standard library only."""
import json
import os
import random
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

PACERD = os.environ.get("PACERD", "build/src/server/pacerd")
ADMIN = "admin-" + "%016x" % random.getrandbits(64)
KEYS = {"shop": "shop-" + "%016x" % random.getrandbits(64), "other": "other-" + "%016x" % random.getrandbits(64)}


# The store the tests run against: PACER_TEST_STORE=clickhouse runs them on
# a ClickHouse server (clickhouse_harness.py) instead of SQLite: meson runs
# the server suites both ways.
BACKEND = os.environ.get("PACER_TEST_STORE", "sqlite")
# consolidation in seconds rather than hours, so that tests see every tier
CLICKHOUSE_ARGS = ["--clickhouse-slot", "10", "--clickhouse-settle", "20", "--clickhouse-day", "60"]
_databases = 0


class Pacerd:
    """pacerd with a fresh database in a temporary directory (kept across
    restart(), removed by close()); on ClickHouse, a fresh database of the
    test process's server."""

    def __init__(self, extra_args=(), db=None, keys_text=None, scheme="http", backend=None, clickhouse=None,
                 database=None, store_args=None, state=False, binary=None, env=None, grpc=False):
        """binary, env: another pacerd than PACERD, and its environment;
        grpc: also serve OTLP/gRPC (--grpc-listen), at grpc_base."""
        global _databases
        self.binary = binary or PACERD
        self.env = env
        self.backend = backend or BACKEND
        self.dir = tempfile.mkdtemp(prefix="pacerd-test-")
        self.db = db or os.path.join(self.dir, "pacer.db")
        if self.backend == "clickhouse":
            import clickhouse_harness
            self.ch = clickhouse or clickhouse_harness.shared()
            _databases += 1
            self.owns_database = database is None  # a database another Pacerd made is left to it
            self.database = database or "t%d_%d" % (os.getpid(), _databases)
            self.store_args = ["--clickhouse", self.ch.url(self.database)] + CLICKHOUSE_ARGS
            if state:
                # the application layer on this instance; a short settle, as
                # the analysis reads rows once half of it has passed
                self.store_args += ["--state", os.path.join(self.dir, "state.db"), "--clickhouse-settle", "4"]
        else:
            self.store_args = ["--db", self.db]
        if store_args is not None:
            self.store_args = list(store_args)
        self.admin_file = os.path.join(self.dir, "admin-token")
        self.keys_file = os.path.join(self.dir, "keys")
        self.scheme = scheme
        self.ssl_context = None
        with open(self.admin_file, "w") as f:
            f.write(ADMIN + "\n")
        with open(self.keys_file, "w") as f:
            if keys_text is not None:
                f.write(keys_text)
            else:
                f.write("# app key\n")
                for app, key in KEYS.items():
                    f.write("%s %s\n" % (app, key))
        self.extra_args = list(extra_args)
        self.grpc = grpc
        self.grpc_port = 0
        self.proc = None
        try:
            self.start()
        except RuntimeError:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise

    def start(self, port=0, grpc_port=0):
        self.stderr_path = os.path.join(self.dir, "stderr.%d" % time.monotonic_ns())
        self.stderr = open(self.stderr_path, "w")
        grpc_args = ["--grpc-listen", "127.0.0.1:%d" % grpc_port] if self.grpc else []
        self.proc = subprocess.Popen(
            [self.binary, "--listen", "127.0.0.1:%d" % port] + grpc_args + self.store_args +
            ["--admin-token-file", self.admin_file, "--keys-file", self.keys_file] + self.extra_args,
            stdout=subprocess.PIPE, stderr=self.stderr, text=True, env=self.env)
        line = self.proc.stdout.readline()
        if not line.startswith("pacerd: listening on %s://127.0.0.1:" % self.scheme):
            self.proc.kill()
            self.proc.wait()
            self.proc.stdout.close()
            self.stderr.close()
            with open(self.stderr_path) as f:
                raise RuntimeError("pacerd did not start: %r; stderr: %s" % (line, f.read()))
        self.port = int(line.rsplit(":", 1)[1])
        self.base = "%s://127.0.0.1:%d" % (self.scheme, self.port)
        if self.grpc:
            line = self.proc.stdout.readline()
            if not line.startswith("pacerd: OTLP/gRPC on %s://127.0.0.1:" % self.scheme):
                raise RuntimeError("pacerd did not say where it serves OTLP/gRPC: %r" % line)
            self.grpc_port = int(line.rsplit(":", 1)[1])
            self.grpc_base = "%s://127.0.0.1:%d" % (self.scheme, self.grpc_port)

    def kill(self, sig=9):
        self.proc.send_signal(sig)
        self.proc.wait(timeout=30)
        self.stderr.close()

    def restart(self):
        self.kill(15)
        self.start()

    def stderr_text(self):
        if not self.stderr.closed:
            self.stderr.flush()
        out = ""
        for name in sorted(os.listdir(self.dir)):
            if name.startswith("stderr."):
                out += open(os.path.join(self.dir, name)).read()
        return out

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.kill(15)
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.backend == "clickhouse" and self.owns_database and self.ch.proc:
            self.ch.sql("DROP DATABASE IF EXISTS " + self.database)

    def wait_consolidated(self, timeout=120):
        """ClickHouse: waits until every commit so far is in level 2 of the
        rollups (the keeper's rounds, --clickhouse-* times)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            last = self.sql("SELECT count(), max(toUInt32(at)) FROM pending")[0]
            day = int(self.store_option("--clickhouse-day", 86400))
            done = self.sql("SELECT count(), max(slot) FROM slots WHERE lvl = 2")[0]
            if last[0] and done[0] and (done[1] + 1) * day > last[1]:
                return
            time.sleep(0.5)
        raise AssertionError("the rollups were not consolidated within %d s" % timeout)

    def store_option(self, name, default):
        args = self.store_args + self.extra_args
        value = default
        for i, a in enumerate(args[:-1]):
            if a == name:
                value = args[i + 1]
        return value

    def sql(self, query):
        """The rows of a query on the store's own tables, as Python values
        (the same SQL for both where the tables agree: logs, metric_points,
        the names of columns)."""
        if self.backend == "clickhouse":
            import json as _json
            text = self.ch.sql(query + " FORMAT JSONCompact", self.database,
                               {"output_format_json_quote_64bit_integers": "0"})
            return [tuple(r) for r in _json.loads(text)["data"]]
        import sqlite3
        db = sqlite3.connect(self.db)
        try:
            return db.execute(query).fetchall()
        finally:
            db.close()

    def request(self, method, path, body=None, token=None, headers=None, content_type="application/json"):
        """Returns (status, headers, body bytes); never raises on an HTTP status."""
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        req = urllib.request.Request(self.base + path, data=body, method=method)
        if body is not None and content_type:
            req.add_header("Content-Type", content_type)
        if token:
            req.add_header("Authorization", "Bearer " + token)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=30, context=self.ssl_context) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def json(self, method, path, body=None, token=None, headers=None, expect=200):
        status, _, data = self.request(method, path, body, token, headers)
        if status != expect:
            raise AssertionError("%s %s: HTTP %d, want %d: %s" % (method, path, status, expect, data[:500]))
        return json.loads(data) if data else None

    def query(self, path):
        return self.json("GET", path, token=ADMIN)

    def ingest(self, endpoint, body, app="shop", batch_id=None, expect=200):
        headers = {"X-Pacer-Batch-Id": batch_id} if batch_id else None
        return self.json("POST", endpoint, body, token=KEYS[app], headers=headers, expect=expect)


def attr(key, value):
    if isinstance(value, bool):
        v = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}
    elif isinstance(value, float):
        v = {"doubleValue": value}
    else:
        v = {"stringValue": value}
    return {"key": key, "value": v}


def resource(app="shop", version="1.0", session="00000000deadbeef"):
    return {"attributes": [attr("service.name", app), attr("service.version", version),
                           attr("pacer.session", session)]}


def span(name, start_ns, dur_ns, attrs=(), status=0, trace=None, span_id=None):
    return {"traceId": trace or "%032x" % (random.getrandbits(127) | 1),
            "spanId": span_id or "%016x" % (random.getrandbits(63) | 1),
            "name": name, "kind": 1, "startTimeUnixNano": str(start_ns), "endTimeUnixNano": str(start_ns + dur_ns),
            "attributes": list(attrs), "status": {"code": status}}


def page_span(page, ts_ns, total_ms, initial_ms=None, status="complete", extra=()):
    attrs = [attr("pacer.type", "page"), attr("pacer.page", page), attr("pacer.status", status),
             attr("pacer.kind", "window"), attr("pacer.instance", 1)]
    if total_ms is not None:
        attrs.append(attr("pacer.total_ms", float(total_ms)))
    if initial_ms is not None:
        attrs.append(attr("pacer.initial_draw_ms", float(initial_ms)))
    attrs.extend(extra)
    return span(page, ts_ns, int((total_ms or 0) * 1e6), attrs)


def traces(spans, app="shop", version="1.0", session="00000000deadbeef"):
    return {"resourceSpans": [{"resource": resource(app, version, session),
                               "scopeSpans": [{"scope": {"name": "pacer"}, "spans": list(spans)}]}]}


def exact_quantile(values, q):
    s = sorted(values)
    return s[int(q * (len(s) - 1))]


def proc_kib(pid, field="VmRSS"):
    """A memory figure of a process from /proc/PID/status, in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def scrape(d, token=ADMIN):
    """GET /metrics, as {'name{labels}': value}."""
    status, _, body = d.request("GET", "/metrics", token=token)
    if status != 200:
        raise AssertionError("/metrics: HTTP %d: %s" % (status, body[:300]))
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


class Poster:
    """A client that keeps posting to /v1/traces until stopped, as an SDK
    whose batches a store refuses: make(k) gives the k-th upload as (body,
    batch id, records in it), each with a batch id of its own; `pause` s
    between uploads. What each got, and the records acknowledged."""

    def __init__(self, d, make, pause=0.2, app="shop"):
        self.d, self.make, self.pause, self.app = d, make, pause, app
        self.outcomes = []  # (batch id, status)
        self.acked = 0
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        k = 0
        while not self.stop_event.is_set():
            body, bid, n = self.make(k)
            k += 1
            st = self.d.request("POST", "/v1/traces", body, token=KEYS[self.app],
                                headers={"X-Pacer-Batch-Id": bid})[0]
            self.outcomes.append((bid, st))
            if st == 200:
                self.acked += n
            self.stop_event.wait(self.pause)

    def statuses(self, since=0):
        return [st for _, st in self.outcomes[since:]]

    def stop(self):
        self.stop_event.set()
        self.thread.join(timeout=60)


def healthz_probes(d, n=16, every=0.5):
    """n answers of /healthz, one each `every` s, as a load balancer's
    checks: [(status, JSON body)]."""
    out = []
    for _ in range(n):
        st, _, data = d.request("GET", "/healthz")
        out.append((st, json.loads(data)))
        time.sleep(every)
    return out


def raw_exchange(port, data, src="127.0.0.1", timeout=10.0, read_all=True):
    """Sends raw bytes, returns (what came back, whether the server closed
    the connection) — the server's close is seen within timeout."""
    import socket
    s = socket.socket()
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    try:
        s.sendall(data)
    except OSError:
        pass
    got = b""
    closed = False
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            got += chunk
            if not read_all and b"\r\n\r\n" in got:
                break
    except socket.timeout:
        pass
    except ConnectionResetError:
        closed = True
    s.close()
    return got, closed
