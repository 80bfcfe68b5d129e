#!/usr/bin/env bash
# make bench: builds a release tree (build-bench/) and runs every benchmark.
# Each prints medians of repeated runs and ratios against a floor or a peer
# measured in the same run. Benchmarks are never part of `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=build-bench
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" -Dbuildtype=release -Dtests=false >/dev/null
fi
ninja -C "$dir" >/dev/null

# One entry per benchmark: "title|command". Commands run from the source root.
benchmarks=(
  "core model: cost of one event|$dir/bench/bench-model"
  "pacerd: ingest spans/s and query latency over 1,000,000 page loads|bench/server/run.sh $dir"
  "pacerd: ClickHouse beside SQLite: ingest spans/s, bytes per span, page query over 100 M vs 50 M page loads|bench/server/clickhouse.py $dir"
  "dashboard: page load time in chromium over a store of 1,000,000 page loads|bench/web/run.py $dir"
  "pacerd: /healthz under 1000 slow connections, latency under open-loop overload|bench/server/hostile.py $dir"
  "pacerd: the application layer's cost and how fast it keeps up|bench/server/analysis.sh $dir"
  "trace: ns per traced call, pacer vs floor vs uftrace|bench/trace/run.sh $dir"
  "agent: time to first paint seen by the X server, demo and gtk4-widget-factory, with vs without pacer run|bench/agent/ttff.py $dir"
  "agent: ns per main-loop iteration, with vs without the jank monitor|bench/agent/loop.py $dir"
  "agent: native leak tracking vs the plain program vs heaptrack, same program|bench/leaks/heap.py $dir"
  "agent: ns per g_object_ref/unref pair, plain vs the agent vs --leaks=refs|bench/agent/refs.py $dir"
)

for b in "${benchmarks[@]}"; do
  title=${b%%|*}
  cmd=${b#*|}
  echo
  echo "== $title"
  echo "   \$ $cmd"
  eval "$cmd"
done
