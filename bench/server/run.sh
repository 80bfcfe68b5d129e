#!/usr/bin/env bash
# pacerd benchmarks (make bench): ingest throughput and query latency.
#   bench/server/run.sh BUILD_DIR
# Ingest: RUNS pairs of fresh databases, each filled by the load generator
# with 200,000 page spans (1,000 per request, 4 keep-alive connections on
# loopback), once as OTLP/HTTP JSON and once as protobuf + gzip (the same
# spans), alternating; prints every run, the medians, JSON's ratio to the
# target (100,000 spans/s) and protobuf's to JSON (target 1.5), and
# pacerd's CPU split between the store's writer thread and the rest.
# Query: a database of 1,000,000 page loads (20 pages, 2 versions, 30
# days; built once, kept under BUILD_DIR), then the latency of
# /api/v1/pages for one app over all time, one version, and a range that
# cuts days (raw rows for the cut parts); median of 50 each, ratio to the
# target (50 ms).
set -euo pipefail
build=${1:-build-bench}
runs=${RUNS:-5}
pacerd=$build/src/server/pacerd
loadgen=$build/bench/server/pacerd-loadgen
querybench=$build/bench/server/pacerd-querybench
work=$build/pacerd-bench
mkdir -p "$work"
echo "admin-$RANDOM$RANDOM$RANDOM" > "$work/admin"
echo "bench benchkey-$RANDOM$RANDOM" > "$work/keys"
key=$(cut -d' ' -f2 "$work/keys")
admin=$(cat "$work/admin")
pid=
start() { # db
  : > "$work/out" # not the previous run's line: the shell below truncates it only once started
  "$pacerd" --listen 127.0.0.1:0 --db "$1" --admin-token-file "$work/admin" --keys-file "$work/keys" \
    > "$work/out" 2> "$work/err" &
  pid=$!
  for _ in $(seq 50); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.1; done
  port=$(sed -n 's/.*:\([0-9]*\)$/\1/p' "$work/out")
  [ -n "$port" ] || { cat "$work/err"; exit 1; }
}
stop() { kill "$pid"; wait "$pid" || true; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# pacerd's CPU time so far (user + system), seconds: the store's writer
# thread, then every other thread (HTTP, decoding, analysis, checkpoints)
thread_cpu() { # pid
  for t in /proc/"$1"/task/*; do
    echo "$(cat "$t/comm") $(awk '{print $14 + $15}' "$t/stat")"
  done | awk -v hz="$(getconf CLK_TCK)" '{if ($1 == "pacerd-writer") w += $2; else o += $2}
    END {printf "%.2f %.2f\n", w / hz, o / hz}'
}

spans=200000
echo "ingest: $runs runs each of $spans page spans, 1000 per request, 4 connections;"
echo "  OTLP/HTTP JSON and OTLP protobuf + gzip (the same spans), alternating"
json_rates=(); pb_rates=(); ratios=()
# per encoding (json_, pb_): pacerd's CPU, its writer's, the other threads',
# the run's seconds; filled and read through namerefs
# shellcheck disable=SC2034
{ json_cpu=(); pb_cpu=(); json_w=(); pb_w=(); json_o=(); pb_o=(); json_s=(); pb_s=(); }
for i in $(seq "$runs"); do
  for enc in json protobuf; do
    rm -f "$work/ingest.db"*
    start "$work/ingest.db"
    flags=""; [ "$enc" = protobuf ] && flags="--protobuf --gzip"
    # shellcheck disable=SC2086
    line=$("$loadgen" --port "$port" --key "$key" --app bench --spans "$spans" --batch 1000 --connections 4 $flags)
    # pacerd's CPU time for the run (user + system; the flush at exit excluded)
    cpu=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$pid/stat")
    read -r wcpu ocpu < <(thread_cpu "$pid")
    stop
    echo "  run $i $enc: $line pacerd_cpu_s=$cpu writer_cpu_s=$wcpu other_cpu_s=$ocpu"
    secs=$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' <<<"$line")
    k=${enc/protobuf/pb}
    declare -n c=${k}_cpu w=${k}_w o=${k}_o sec=${k}_s
    c+=("$cpu"); w+=("$wcpu"); o+=("$ocpu"); sec+=("$secs")
    rate=$(sed -n 's/.*spans_per_s=\([0-9]*\).*/\1/p' <<<"$line")
    if [ "$enc" = json ]; then json_rates+=("$rate"); last_json=$rate; else pb_rates+=("$rate");
      ratios+=("$(awk -v a="$rate" -v b="$last_json" 'BEGIN {printf "%.3f", a / b}')"); fi
  done
done
m=$(printf '%s\n' "${json_rates[@]}" | median)
mp=$(printf '%s\n' "${pb_rates[@]}" | median)
mr=$(printf '%s\n' "${ratios[@]}" | median)
awk -v m="$m" 'BEGIN {printf "  JSON: median %d spans/s = %.2f x the target of 100000 spans/s\n", m, m / 100000}'
awk -v m="$mp" -v j="$m" -v r="$mr" 'BEGIN {printf "  protobuf + gzip: median %d spans/s = %.2f x JSON (ratio of medians); median per-pair ratio %.2f (target >= 1.5)\n", m, m / j, r}'
cj=$(printf '%s\n' "${json_cpu[@]}" | median)
cp=$(printf '%s\n' "${pb_cpu[@]}" | median)
awk -v j="$cj" -v p="$cp" -v n="$spans" 'BEGIN {printf "  pacerd CPU per %d spans: JSON %.2f s, protobuf + gzip %.2f s (%.2f x less)\n", n, j, p, j / p}'
# The bound: one writer thread does the store's work for both encodings.
# Its CPU time against the run's wall time says how much of the run it
# was busy; the other threads' CPU is what the encodings change.
for enc in json pb; do
  declare -n ws=${enc}_w os=${enc}_o ss=${enc}_s
  mw=$(printf '%s\n' "${ws[@]}" | median); mo=$(printf '%s\n' "${os[@]}" | median); ms=$(printf '%s\n' "${ss[@]}" | median)
  awk -v e="$enc" -v w="$mw" -v o="$mo" -v s="$ms" -v n="$spans" 'BEGIN {printf "  %s: the writer thread %.2f s (%.1f us a span; busy %.0f %% of the run'"'"'s %.2f s), the other threads %.2f s (%.1f us a span)\n",
    e == "json" ? "JSON" : "protobuf + gzip", w, w * 1e6 / n, 100 * w / s, s, o, o * 1e6 / n}'
done

echo "decoding alone (bench/server/decodebench.c): one body of 1000 page spans, JSON vs protobuf vs protobuf + gzip"
echo "  $("$build/bench/server/pacerd-decodebench" --runs 40)"

db=$work/pages-1m.db
if [ ! -f "$db" ] || [ "$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT COALESCE(SUM(count), 0) FROM rollup_counts WHERE kind = \x27page\x27").fetchone()[0])' "$db" 2>/dev/null || echo 0)" -lt 1000000 ]; then
  rm -f "$db"*
  echo "query: building $db (1,000,000 page loads over 30 days, through the ingest path)"
  start "$db"
  "$loadgen" --port "$port" --key "$key" --app bench --spans 1000000 --batch 2000 --connections 2 --fresh \
    --pages 20 --versions 2 --days 30 | sed 's/^/  /'
  stop
fi
start "$db"
now=$(date +%s)
echo "query: /api/v1/pages over 1,000,000 page loads, 50 requests each"
for q in "app=bench" "app=bench&version=1.1" "app=bench&from=$((now - 20 * 86400 - 4000))&to=$((now - 86400 * 3 + 7000))"; do
  line=$("$querybench" --port "$port" --token "$admin" --path "/api/v1/pages?$q" --n 50)
  p50=$(sed -n 's/.*p50_ms=\([0-9.]*\).*/\1/p' <<<"$line")
  echo "  $q: $line"
  awk -v m="$p50" 'BEGIN {printf "    median %.2f ms = %.3f x the target of 50 ms\n", m, m / 50}'
done
stop
