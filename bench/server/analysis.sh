#!/usr/bin/env bash
# pacerd's application layer (make bench): what the analysis costs and how
# fast it keeps up.
#   bench/server/analysis.sh BUILD_DIR
# RUNS times: a fresh database, the load generator's 200,000 page spans
# (1,000 per request, 4 connections, 2 versions, 20 pages: 40 page classes
# and versions of candidates, a regression test per pair of versions), the
# analysis every 100 ms; prints the ingest rate, how long after the ingest
# ended the analysis had read every row, and pacerd's CPU time during the
# ingest and after it (the analysis alone then). Medians of the runs. The
# ingest figure is to be read beside bench/server/run.sh's (the same load,
# the analysis at its default 2 s): the analysis runs at nice 10, so it
# takes the CPU the ingest leaves.
set -euo pipefail
build=${1:-build-bench}
runs=${RUNS:-5}
spans=${SPANS:-200000}
pacerd=$build/src/server/pacerd
loadgen=$build/bench/server/pacerd-loadgen
work=$build/pacerd-analysis-bench
mkdir -p "$work"
echo "admin-$RANDOM$RANDOM$RANDOM" > "$work/admin"
echo "bench benchkey-$RANDOM$RANDOM" > "$work/keys"
key=$(cut -d' ' -f2 "$work/keys")
admin=$(cat "$work/admin")
printf 'interval-ms = 100\n' > "$work/analysis.conf"
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat"; }
metric() { curl -s -H "Authorization: Bearer $admin" "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

rates=(); lags=(); cpu_in=(); cpu_after=()
echo "analysis: $runs runs of $spans page spans, the analysis every 100 ms"
for i in $(seq "$runs"); do
  rm -f "$work/db"*
  : > "$work/out"
  "$pacerd" --listen 127.0.0.1:0 --db "$work/db" --admin-token-file "$work/admin" --keys-file "$work/keys" \
    --analysis-config "$work/analysis.conf" > "$work/out" 2> "$work/err" &
  pid=$!
  for _ in $(seq 50); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.1; done
  port=$(sed -n 's/.*:\([0-9]*\)$/\1/p' "$work/out")
  line=$("$loadgen" --port "$port" --key "$key" --app bench --spans "$spans" --batch 1000 --connections 4)
  t1=$(date +%s.%N)
  c1=$(cpu_s "$pid")
  for _ in $(seq 1200); do
    rows=$(metric pacerd_analysis_rows_total)
    [ "$(metric pacerd_analysis_behind_rows)" = "0" ] && [ "${rows%.*}" -ge "$spans" ] && break
    sleep 0.05
  done
  t2=$(date +%s.%N)
  c2=$(cpu_s "$pid")
  kill "$pid"; wait "$pid" || true
  rate=$(sed -n 's/.*spans_per_s=\([0-9]*\).*/\1/p' <<<"$line")
  lag=$(awk -v a="$t1" -v b="$t2" 'BEGIN {printf "%.2f", b - a}')
  after=$(awk -v a="$c1" -v b="$c2" 'BEGIN {printf "%.2f", b - a}')
  echo "  run $i: $rate spans/s; every row read ${lag} s after the ingest ended; pacerd CPU ${c1} s during, ${after} s after"
  rates+=("$rate"); lags+=("$lag"); cpu_in+=("$c1"); cpu_after+=("$after")
done
echo "  median: $(printf '%s\n' "${rates[@]}" | median) spans/s with the analysis running;" \
     "caught up $(printf '%s\n' "${lags[@]}" | median) s after;" \
     "pacerd CPU $(printf '%s\n' "${cpu_in[@]}" | median) s during, $(printf '%s\n' "${cpu_after[@]}" | median) s after"
