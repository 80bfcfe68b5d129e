"""Runs tests/server/otel/grpc-receiver.js — a real OTLP/gRPC receiver on
@grpc/grpc-js, test infrastructure — on a loopback port, tells it how to
answer, and reads back what it received (one JSON object per call, kept in a
file across its restarts)."""
import json
import os
import shutil
import subprocess

ROOT = os.environ.get("PACER_SOURCE_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OTEL = os.path.join(ROOT, "tests", "server", "otel")
SCRIPT = os.path.join(OTEL, "grpc-receiver.js")

# gRPC status codes
OK, CANCELLED, INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNAVAILABLE, UNAUTHENTICATED = 0, 1, 3, 8, 14, 16


def available():
    """node and the npm packages the receiver needs (scripts/install-deps.sh)."""
    mods = os.path.join(OTEL, "node_modules")
    return bool(shutil.which("node")) and all(
        os.path.isdir(os.path.join(mods, m)) for m in ("@grpc/grpc-js", "google-proto-files", "protobufjs"))


class GrpcReceiver:
    def __init__(self, log, port=0, tls=None):
        """log: the file of received calls (kept across restarts); tls: (cert, key)."""
        self.log = log
        self.tls = tls
        self.proc = None
        self.start(port)

    def start(self, port=0):
        args = ["node", SCRIPT, "--log", self.log, "--port", str(port)]
        if self.tls:
            args += ["--tls", self.tls[0], self.tls[1]]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening "):
            self.proc.kill()
            raise RuntimeError("grpc-receiver.js did not start: %r %s" % (line, self.proc.stderr.read()))
        self.port = int(line.split()[1])
        self.url = "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    def command(self, **cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if line.strip() != "ok":
            raise RuntimeError("grpc-receiver.js: %r" % line)

    def answer(self, *answers):
        """The next calls' answers: dicts of code, message, retryDelayMs."""
        self.command(answers=list(answers))

    def kill(self):
        """SIGKILL, as a crash."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        self.wait()

    def wait(self):
        if self.proc:
            self.proc.wait(timeout=30)
            for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                f.close()

    def close(self):
        self.kill()

    def calls(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [json.loads(line) for line in f if line.strip()]


def items(call):
    """The spans, log records or data points of a call's request."""
    m = call["message"]
    if call["signal"] == "traces":
        return [s for rs in m.get("resourceSpans", []) for ss in rs.get("scopeSpans", []) for s in ss.get("spans", [])]
    if call["signal"] == "logs":
        return [r for rl in m.get("resourceLogs", []) for sl in rl.get("scopeLogs", [])
                for r in sl.get("logRecords", [])]
    return [p for rm in m.get("resourceMetrics", []) for sm in rm.get("scopeMetrics", [])
            for mt in sm.get("metrics", []) for p in mt.get("gauge", {}).get("dataPoints", [])]
