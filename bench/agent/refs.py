#!/usr/bin/env python3
"""Cost of the agent's g_object_ref / g_object_unref hooks (--leaks=refs
records the stacks of references): bench-refs (bench/agent/refs.c) without
the agent; with libpacer-agent.so (it keeps the hooks local: the calls go
straight to libgobject, what every agent user pays); with
libpacer-agent-refs.so, which exports them, without --leaks=refs (hooks
forward: what --leaks=native pays, whose agent exports them too) and with
PACER_LEAKS=refs (a widget's calls recorded with their stacks, other objects
only looked up), alternating, ROUNDS times; medians in ns per ref+unref pair.

usage: bench/agent/refs.py BUILD_DIR [ROUNDS]
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

build = sys.argv[1] if len(sys.argv) > 1 else "build-bench"
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
exe = os.path.join(build, "bench", "agent", "bench-refs")
agent = os.path.abspath(os.path.join(build, "src", "agent", "libpacer-agent.so"))
agent_refs = os.path.abspath(os.path.join(build, "src", "agent", "libpacer-agent-refs.so"))
out = tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False).name
base = {k: v for k, v in os.environ.items() if not k.startswith("PACER_")}
base["GDK_BACKEND"] = base.get("GDK_BACKEND", "x11")
modes = {
    "without the agent": base,
    "agent": dict(base, LD_PRELOAD=agent, PACER_OUT=out, PACER_AGENT_QUIET="1"),
    "agent-refs, refs off": dict(base, LD_PRELOAD=agent_refs, PACER_OUT=out, PACER_AGENT_QUIET="1"),
    "agent-refs --leaks=refs": dict(base, LD_PRELOAD=agent_refs, PACER_OUT=out, PACER_AGENT_QUIET="1",
                                    PACER_LEAKS="refs"),
}
res = {k: ([], []) for k in modes}
for _ in range(rounds):
    for k, env in modes.items():
        o = subprocess.run([exe], env=env, capture_output=True, text=True, check=True).stdout
        m = re.search(r"plain ([\d.]+) label ([\d.]+)", o)
        res[k][0].append(float(m.group(1)))
        res[k][1].append(float(m.group(2)))
med = statistics.median
base_plain = med(res["without the agent"][0])
print("ns per g_object_ref+unref pair, medians of %d rounds:" % rounds)
print("  %-24s %10s %12s" % ("", "GObject", "GtkLabel"))
for k in modes:
    print("  %-24s %10.1f %12.1f   (GObject +%.1f)" % (k, med(res[k][0]), med(res[k][1]), med(res[k][0]) - base_plain))
os.unlink(out)
