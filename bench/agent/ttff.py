#!/usr/bin/env python3
"""Agent overhead: time to first frame of the demo app, with and without
libpacer-agent.so preloaded, measured side by side.

    bench/agent/ttff.py BUILD_DIR [PAIRS]

Each pair runs `shop-app --first-frame-exit` once plain and once with the
agent (LD_PRELOAD plus the PACER_* environment `pacer run` would set, with
a config, records and raw events written to a temporary directory), in
alternating order so drift hits both sides alike. The app prints the
CLOCK_MONOTONIC time of its first window's first frame; the launcher takes
the same clock just before spawning. Prints the median of each side and the
median of the per-pair ratios (agent / plain). The target: under
1.02. Runs on its own Xvfb display when there is no DISPLAY.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 21
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
app = os.path.join(build, "examples", "shop-app")
agent = os.path.join(build, "src", "agent", "libpacer-agent.so")
config = os.path.join(root, "examples", "shop.xml")


def start_xvfb():
    r, w = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                            pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = os.read(r, 16)
        if not chunk:
            break
        buf += chunk
    os.close(r)
    return proc, ":" + buf.decode().strip()


def ttff_ms(env):
    t0 = time.monotonic_ns()
    p = subprocess.run([app, "--first-frame-exit"], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True, timeout=60)
    for line in p.stdout.splitlines():
        if line.startswith("first_frame_us="):
            return (int(line.split("=", 1)[1]) * 1000 - t0) / 1e6
    raise RuntimeError("no first frame (exit %d)" % p.returncode)


def main():
    for f in (app, agent):
        if not os.path.exists(f):
            sys.exit("ttff: %s is missing; build first" % f)
    xvfb = None
    env = dict(os.environ, GIO_USE_PROXY_RESOLVER="dummy", NO_AT_BRIDGE="1")
    if not env.get("DISPLAY") and not env.get("WAYLAND_DISPLAY"):
        if not shutil.which("Xvfb"):
            sys.exit("ttff: no display and no Xvfb")
        xvfb, env["DISPLAY"] = start_xvfb()
    work = tempfile.mkdtemp(prefix="pacer-bench-agent-")
    with_agent = dict(env, LD_PRELOAD=agent, PACER_OUT=os.path.join(work, "records.jsonl"),
                      PACER_RAW_EVENTS=os.path.join(work, "events.jsonl"), PACER_CONFIG=config,
                      PACER_APP="shop-bench")
    try:
        ttff_ms(env), ttff_ms(with_agent)  # warm the page cache
        plain, agented, ratios = [], [], []
        for i in range(pairs):
            if i % 2 == 0:
                a, b = ttff_ms(env), ttff_ms(with_agent)
            else:
                b, a = ttff_ms(with_agent), ttff_ms(env)
            plain.append(a)
            agented.append(b)
            ratios.append(b / a)
    finally:
        if xvfb:
            xvfb.terminate()
            xvfb.wait()
    print("time to first frame, shop-app --first-frame-exit, %d pairs" % pairs)
    print("  plain        median %8.2f ms" % statistics.median(plain))
    print("  with agent   median %8.2f ms" % statistics.median(agented))
    print("  ratio        median %8.4f   (agent / plain, per pair; target < 1.02)" % statistics.median(ratios))
    print("  ratio of the medians %.4f" % (statistics.median(agented) / statistics.median(plain)))


if __name__ == "__main__":
    main()
