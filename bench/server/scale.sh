#!/usr/bin/env bash
# pacerd at scale (make bench; alone: make bench BENCH=server-scale):
#   bench/server/scale.sh BUILD_DIR
#
# Two stores side by side, one of 1,000,000 and one of 50,000,000 page spans
# (20 pages, 2 versions, 30 days up to now), filled by pacerd-fill
# (bench/server/fill.c: the requests go through pacerd's own ingest handler,
# without HTTP; built once and kept under BUILD_DIR/pacerd-bench/), then:
#   bytes      the file per page span, and where they are;
#   query      /api/v1/pages over all time, one version, and a range of 17
#              days that cuts two (both ends mid-day): p50 and p99 of 200;
#   ingest     the load generator (200,000 page spans a run, 1,000 a request,
#              4 connections, OTLP/HTTP JSON) into an empty store, into a
#              copy of the 1 M one and into a copy of the 50 M one, RUNS
#              times each, alternating: spans spread over 30 days (as the
#              query data set's are), and spans of the last minute (a fleet
#              that uploads as it goes); medians, and 50 M / empty;
#   spread     a third store of 50 M filled with --spread (each span at a
#              random time of the 30 days: uploads in no order of time, every
#              day but today cold): its bytes, and the same queries;
#   sustained  RSS_SECONDS (600) of ingest into a fresh store: pacerd's RSS
#              and the WAL every 10 s, their largest, what it stored.
# Environment: RUNS (5), SCALE_SMALL (1000000), SCALE_BIG (50000000),
# RSS_SECONDS (600), PARTS (all: "bytes query ingest spread sustained"). The 50 M store takes ~4 GB and ~10 minutes to fill the
# first time; the copy for the ingest runs as much again.
set -euo pipefail
build=${1:-build-bench}
runs=${RUNS:-5}
small=${SCALE_SMALL:-1000000}
big=${SCALE_BIG:-50000000}
rss_seconds=${RSS_SECONDS:-600}
parts=" ${PARTS:-bytes query ingest spread sustained} "
want() { [[ $parts == *" $1 "* ]]; }
pacerd=$build/src/server/pacerd
loadgen=$build/bench/server/pacerd-loadgen
querybench=$build/bench/server/pacerd-querybench
fill=$build/bench/server/pacerd-fill
work=$build/pacerd-bench
mkdir -p "$work"
echo "admin-$RANDOM$RANDOM$RANDOM" > "$work/admin"
echo "bench benchkey-$RANDOM$RANDOM" > "$work/keys"
key=$(cut -d' ' -f2 "$work/keys")
admin=$(cat "$work/admin")
pid=
start() { # db [extra args]
  local db=$1; shift
  : > "$work/out"
  "$pacerd" --listen 127.0.0.1:0 --db "$db" --admin-token-file "$work/admin" --keys-file "$work/keys" "$@" \
    > "$work/out" 2> "$work/err" &
  pid=$!
  for _ in $(seq 600); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.1; done
  port=$(sed -n 's/.*:\([0-9]*\)$/\1/p' "$work/out")
  [ -n "$port" ] || { cat "$work/err"; exit 1; }
}
stop() { kill "$pid"; wait "$pid" || true; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
metrics() { # port → "spans/s over the last 10 s" "spans stored", from /metrics
  python3 - "$1" "$admin" <<'PY'
import sys, urllib.request
r = urllib.request.Request("http://127.0.0.1:%s/metrics" % sys.argv[1], headers={"Authorization": "Bearer " + sys.argv[2]})
m = dict(l.rsplit(" ", 1) for l in urllib.request.urlopen(r, timeout=10).read().decode().splitlines() if l and l[0] != "#")
print(int(float(m["pacerd_ingest_spans_per_second"])), int(float(m['pacerd_ingest_records_total{signal="traces"}'])))
PY
}
spans_in() { # db → page spans it holds (0 when none or unreadable)
  python3 -c 'import sqlite3, sys
try:
    n = sqlite3.connect(sys.argv[1]).execute("SELECT SUM(count) FROM rollup_counts WHERE kind = '"'"'page'"'"'").fetchone()[0]
except Exception:
    n = 0
print(n or 0)' "$1"
}
store() { # n [spread] → the path of a store of n page spans, filled when missing
  local n=$1 db=$work/scale-$1${2:+-spread}.db
  if [ "$(spans_in "$db")" != "$n" ]; then
    rm -f "$db" "$db-wal" "$db-shm"
    echo "  filling $db with $n page spans over 30 days (pacerd-fill, pacerd's ingest handler without HTTP${2:+; --spread})" >&2
    "$fill" --db "$db" --spans "$n" --days 30 ${2:+--spread} | sed 's/^/    /' >&2
  fi
  echo "$db"
}

if want bytes || want query || want ingest; then
echo "stores: $small and $big page spans (20 pages, 2 versions, over the last 30 days)"
db_small=$(store "$small")
db_big=$(store "$big")
fi

bytes_of() { # db → one line: bytes per page span, and where they are
  python3 - "$1" <<'PY'
import os, sqlite3, sys
db = sys.argv[1]
c = sqlite3.connect(db)
n = c.execute("SELECT SUM(count) FROM rollup_counts WHERE kind = 'page'").fetchone()[0]
size = os.path.getsize(db)
parts = dict(c.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall())
free = c.execute("PRAGMA freelist_count").fetchone()[0] * c.execute("PRAGMA page_size").fetchone()[0]
def per(*names):
    return sum(parts.get(x, 0) for x in names) / n
print("  %d page spans: %d bytes = %.1f bytes per page span (target <= 110: %.2f x); blocks %.1f, trace_index %.1f,"
      " sub-day rollups %.1f, daily rollups %.1f, rows waiting to be sealed %.1f, free pages %.1f, the rest %.1f"
      % (n, size, size / n, size / n / 110, per("blocks", "blocks_at"), per("trace_index", "trace_index_at"),
         per("subday", "subday_metrics"), per("rollup_counts", "rollup_sketches"), per("page_loads"),
         free / n, size / n - per("blocks", "blocks_at", "trace_index", "trace_index_at", "subday",
                                   "subday_metrics", "rollup_counts", "rollup_sketches", "page_loads") - free / n))
PY
}

now=$(date +%s)
cut="from=$((now - 20 * 86400 - 4000))&to=$((now - 86400 * 3 + 7000))"
declare -A q50 q99
queries() { # label db label db … → the table of p50 (p99) per query, one column per store
  local labels=() dbs=()
  while [ $# -gt 0 ]; do labels+=("$1"); dbs+=("$2"); shift 2; done
  for db in "${dbs[@]}"; do
    start "$db"
    for q in "app=bench" "app=bench&version=1.1" "app=bench&$cut"; do
      line=$("$querybench" --port "$port" --token "$admin" --path "/api/v1/pages?$q" --n 200)
      q50[$db$q]=$(sed -n 's/.*p50_ms=\([0-9.]*\).*/\1/p' <<<"$line")
      q99[$db$q]=$(sed -n 's/.*p99_ms=\([0-9.]*\).*/\1/p' <<<"$line")
    done
    stop
  done
  printf '  %-36s' ""; printf ' %26s' "${labels[@]}"; echo
  for q in "app=bench" "app=bench&version=1.1" "app=bench&$cut"; do
    name=$q; [ "$q" = "app=bench&$cut" ] && name="app=bench, 17 days cutting two"
    printf '  %-36s' "$name"
    for db in "${dbs[@]}"; do printf ' %11s ms (p99 %7s)' "${q50[$db$q]}" "${q99[$db$q]}"; done
    echo
  done
  local last=${dbs[-1]}
  awk -v p="${q99[$last"app=bench&$cut"]}" -v l="${labels[-1]}" \
    'BEGIN {printf "  cut range, %s: p99 %.2f ms = %.3f x the target of 50 ms\n", l, p, p / 50}'
}

if want bytes; then
echo "bytes: the file per page span (the WAL is checkpointed away when pacerd stops)"
bytes_of "$db_small"
bytes_of "$db_big"
fi

if want query; then
echo "query: /api/v1/pages, 200 requests each, on one connection"
queries "$small spans" "$db_small" "$big spans" "$db_big"
fi

if want ingest; then

echo "ingest: $runs runs each of 200000 page spans (1000 a request, 4 connections, OTLP/HTTP JSON)"
echo "  into an empty store, a copy of the $small one and a copy of the $big one, alternating"
cp "$db_small" "$work/copy-small.db"
echo "  (copying the $big store for the runs)"
cp "$db_big" "$work/copy-big.db"
for mode in spread recent; do
  flags=""; what="spans spread over 30 days"
  [ "$mode" = recent ] && { flags="--recent"; what="spans of the last minute"; }
  e=(); s=(); b=(); ratios=()
  for i in $(seq "$runs"); do
    for target in empty small big; do
      case $target in
        empty) rm -f "$work/empty.db"*; db=$work/empty.db ;;
        small) db=$work/copy-small.db ;;
        big) db=$work/copy-big.db ;;
      esac
      start "$db"
      # shellcheck disable=SC2086
      line=$("$loadgen" --port "$port" --key "$key" --app bench --spans 200000 --batch 1000 --connections 4 $flags)
      stop
      rate=$(sed -n 's/.*spans_per_s=\([0-9]*\).*/\1/p' <<<"$line")
      case $target in empty) e+=("$rate") ;; small) s+=("$rate") ;; big) b+=("$rate");
        ratios+=("$(awk -v a="$rate" -v z="${e[-1]}" 'BEGIN {printf "%.3f", a / z}')") ;; esac
    done
    echo "  $mode run $i: empty ${e[-1]}, $small ${s[-1]}, $big ${b[-1]} spans/s"
  done
  me=$(printf '%s\n' "${e[@]}" | median); ms=$(printf '%s\n' "${s[@]}" | median)
  mb=$(printf '%s\n' "${b[@]}" | median); mr=$(printf '%s\n' "${ratios[@]}" | median)
  awk -v e="$me" -v s="$ms" -v b="$mb" -v r="$mr" -v w="$what" -v sm="$small" -v bg="$big" 'BEGIN {
    printf "  %s: medians empty %d, %s %d, %s %d spans/s; %s / empty %.2f x (per-pair median %.2f; target >= 0.8)\n",
      w, e, sm, s, bg, b, bg, b / e, r}'
done
rm -f "$work/copy-small.db"* "$work/copy-big.db"* "$work/empty.db"*
fi

if want spread; then
echo "spread: $big page spans at random times of the 30 days (uploads in no order of time: every day but today cold)"
db_spread=$(store "$big" spread)
bytes_of "$db_spread"
queries "$big spans spread" "$db_spread"
fi

want sustained || exit 0

echo "sustained: $rss_seconds s of ingest into a fresh store (4 connections, 1000-span requests, spans over 30 days)"
rm -f "$work/rss.db"*
start "$work/rss.db"
"$loadgen" --port "$port" --key "$key" --app bench --seconds "$rss_seconds" --batch 1000 --connections 4 \
  > "$work/rss.out" &
lg=$!
max_rss=0; max_wal=0; t=0
while kill -0 "$lg" 2>/dev/null; do
  sleep 10; t=$((t + 10))
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  wal=$(stat -c %s "$work/rss.db-wal" 2>/dev/null || echo 0)
  [ "$rss" -gt "$max_rss" ] && max_rss=$rss
  [ "$wal" -gt "$max_wal" ] && max_wal=$wal
  if [ $((t % 60)) -eq 0 ]; then
    read -r rate stored < <(metrics "$port")
    echo "  ${t} s: RSS $((rss / 1024)) MiB, WAL $((wal >> 20)) MiB; $rate spans/s over the last 10 s, $stored stored"
  fi
done
wait "$lg" || true
end_rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
stop
line=$(cat "$work/rss.out")
n=$(sed -n 's/.*spans=\([0-9]*\).*/\1/p' <<<"$line")
bytes=$(stat -c %s "$work/rss.db")
awk -v m="$max_rss" -v e="$end_rss" -v w="$max_wal" -v n="$n" -v b="$bytes" -v l="$line" 'BEGIN {
  printf "  %s\n  RSS: largest %.0f MiB = %.2f x the bound of 256 MiB, at the end %.0f MiB; WAL: largest %.0f MiB\n",
    l, m / 1024, m / 1024 / 256, e / 1024, w / 1048576
  printf "  the store: %d page spans, %.1f bytes each\n", n, b / n}'
rm -f "$work/rss.db"*
