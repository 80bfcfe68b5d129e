#!/usr/bin/env bash
# make bench: builds a release tree (build-bench/) and runs every benchmark.
# Each prints medians of repeated runs and ratios against a floor or a peer
# measured in the same run. Benchmarks are never part of `make test`.
# BENCH=NAME[,NAME…] runs only those (make bench BENCH=server-scale); the
# names are the first field of the table below.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=build-bench
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" -Dbuildtype=release -Dtests=false >/dev/null
fi
ninja -C "$dir" >/dev/null

# One entry per benchmark: "name|title|command". Commands run from the source root.
benchmarks=(
  "core-model|core model: cost of one event|$dir/bench/bench-model"
  "client-upload|client upload path per record: OTLP from the record vs the earlier JSON path (callgrind counts, CPU time, bytes)|bench/upload/run.py $dir"
  "server|pacerd: ingest spans/s and query latency over 1,000,000 page loads|bench/server/run.sh $dir"
  "server-scale|pacerd at scale: 1 M vs 50 M stored page spans (ingest, cut-range query, bytes), RSS through 10 minutes of ingest|bench/server/scale.sh $dir"
  "server-clickhouse|pacerd: ClickHouse beside SQLite: ingest spans/s, bytes per span, page query over 100 M vs 50 M page loads|bench/server/clickhouse.py $dir"
  "web|dashboard: page load time in chromium over a store of 1,000,000 page loads|bench/web/run.py $dir"
  "server-grpc|pacerd: the same spans over OTLP/gRPC and OTLP/HTTP protobuf: spans/s and pacerd CPU per span|/usr/bin/python3 bench/server/grpc.py $dir"
  "server-hostile|pacerd: /healthz under 1000 slow connections, latency under open-loop overload|bench/server/hostile.py $dir"
  "server-analysis|pacerd: the application layer's cost and how fast it keeps up|bench/server/analysis.sh $dir"
  "trace|trace: CPU per traced call (the writer included), pacer vs floor vs uftrace, on a micro benchmark and on SQLite's shell|bench/trace/run.py $dir"
  "agent-ttff|agent: time to first paint seen by the X server, demo and gtk4-widget-factory, plain vs pacer run vs pacer run with the agent idle|bench/agent/ttff.py $dir"
  "agent-loop|agent: ns per main-loop iteration, with vs without the jank monitor|bench/agent/loop.py $dir"
  "agent-display|agent: ns of CPU time per frame and per main-loop iteration in a program without a toolkit adapter, display and wait hooks vs none|bench/agent/display.py $dir"
  "agent-cpu|agent: its threads' share of the process's CPU time over a scripted 60 s session, gtk4-widget-factory, gtk3-widget-factory, the Qt 6 demo shop and kcalc (Qt 5)|bench/agent/cpu.py $dir"
  "agent-qt-objects|agent: ns of CPU time per QObject made and destroyed, with the Qt adapter vs without the agent (a PyQt6 script)|bench/agent/qt_objects.py $dir"
  "agent-qt-frames|agent: ns of CPU time per Qt Quick frame for the Qt adapter's scene-graph timing, with vs without the agent|bench/agent/quick_frames.py $dir"
  "agent-leaks|agent: native leak tracking vs the plain program vs heaptrack, same program|bench/leaks/heap.py $dir"
  "agent-refs|agent: ns per g_object_ref/unref pair, plain vs the agent vs --leaks=refs|bench/agent/refs.py $dir"
  "agent-profile|agent: CPU per profile sample of a long iteration, idle cost with profiles on vs off, CPU per frame with phases and --frames=detail|bench/agent/profile.py $dir"
)

selected=",${BENCH:-},"
names=""
for b in "${benchmarks[@]}"; do names="$names ${b%%|*}"; done
if [ -n "${BENCH:-}" ]; then
  for want in ${BENCH//,/ }; do
    case " $names " in *" $want "*) ;; *) echo "bench.sh: BENCH=$want: no such benchmark (one of:$names)" >&2; exit 2 ;; esac
  done
fi

for b in "${benchmarks[@]}"; do
  name=${b%%|*}
  rest=${b#*|}
  title=${rest%%|*}
  cmd=${rest#*|}
  [ -z "${BENCH:-}" ] || [[ "$selected" == *",$name,"* ]] || continue
  echo
  echo "== $title"
  echo "   \$ $cmd"
  eval "$cmd"
done
