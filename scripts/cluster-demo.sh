#!/usr/bin/env bash
# pacerd scaled out on one machine: two ClickHouse servers as the two shards
# of a cluster, two pacerd instances sharing it (Distributed tables over each
# shard's *_local tables), haproxy in front of both. Point pacer's SDK (or
# any OpenTelemetry exporter) at haproxy; kill either pacerd, even with
# SIGKILL: the other takes the traffic and nothing is lost or counted twice.
#
#   scripts/cluster-demo.sh [BUILD_DIR]        (default build/; Ctrl-C stops it all)
#
# Everything listens on 127.0.0.1 only, on free ports, with its data in a
# temporary directory (removed at the end; CLUSTER_DIR=DIR keeps it there).
# Needs clickhouse-server and haproxy (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
pacerd=$build/src/server/pacerd
for bin in "$pacerd" /usr/sbin/clickhouse-server "$(command -v haproxy || echo /usr/sbin/haproxy)"; do
  [ -x "$bin" ] || { echo "cluster-demo: $bin missing (make build; scripts/install-deps.sh)" >&2; exit 1; }
done
dir=${CLUSTER_DIR:-$(mktemp -d /tmp/pacer-cluster.XXXXXX)}
mkdir -p "$dir"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${CLUSTER_DIR:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT INT TERM

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

http=("$(free_port)" "$(free_port)")
tcp=("$(free_port)" "$(free_port)")
for i in 0 1; do
  d=$dir/clickhouse$i
  # the servers' config is the tests' (tests/server/clickhouse_harness.py)
  python3 tests/server/clickhouse_harness.py config "$d" "${http[$i]}" "${tcp[$i]}" \
    "pacer=127.0.0.1:${tcp[0]},127.0.0.1:${tcp[1]}"
  /usr/sbin/clickhouse-server --config-file="$d/config.xml" > "$d/log/stdout.log" 2>&1 &
  pids+=($!)
done
for i in 0 1; do
  for _ in $(seq 600); do curl -sf "http://127.0.0.1:${http[$i]}/ping" >/dev/null && break; sleep 0.1; done
  curl -sf "http://127.0.0.1:${http[$i]}/ping" >/dev/null || { echo "cluster-demo: ClickHouse $i did not start" >&2; exit 1; }
done

head -c 24 /dev/urandom | base64 > "$dir/admin-token"
echo "shop $(head -c 24 /dev/urandom | base64)" > "$dir/keys"
cut -d' ' -f2 "$dir/keys" > "$dir/shop.key"
ports=()
for i in 0 1; do
  other=$((1 - i))
  url="http://127.0.0.1:${http[$i]},127.0.0.1:${http[$other]}/pacer?cluster=pacer"
  # the first runs the application layer (analysis, issues, cleaning counts)
  state=(); [ "$i" = 0 ] && state=(--state "$dir/state.db")
  "$pacerd" --listen 127.0.0.1:0 --clickhouse "$url" "${state[@]}" --admin-token-file "$dir/admin-token" \
    --keys-file "$dir/keys" > "$dir/pacerd$i.out" 2> "$dir/pacerd$i.log" &
  pids+=($!)
  for _ in $(seq 600); do grep -q listening "$dir/pacerd$i.out" 2>/dev/null && break; sleep 0.1; done
  port=$(sed -n 's/.*:\([0-9]*\)$/\1/p' "$dir/pacerd$i.out")
  [ -n "$port" ] || { cat "$dir/pacerd$i.log" >&2; exit 1; }
  ports+=("$port")
done

front=$(free_port)
cat > "$dir/haproxy.cfg" <<EOF
global
  maxconn 512
defaults
  mode http
  timeout connect 2s
  timeout client 60s
  timeout server 60s
  retries 3
  option redispatch
frontend pacer
  bind 127.0.0.1:$front
  acl app_layer path_beg /api/v1/issues /api/v1/cleaning
  use_backend analysis if app_layer
  default_backend pacerd
backend analysis
  option httpchk GET /healthz
  server a 127.0.0.1:${ports[0]} check inter 500ms fall 2 rise 2
backend pacerd
  balance roundrobin
  option httpchk GET /healthz
  server a 127.0.0.1:${ports[0]} check inter 500ms fall 2 rise 2
  server b 127.0.0.1:${ports[1]} check inter 500ms fall 2 rise 2
EOF
"$(command -v haproxy || echo /usr/sbin/haproxy)" -f "$dir/haproxy.cfg" -db > "$dir/haproxy.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$front/healthz" >/dev/null && break; sleep 0.1; done

cat <<EOF
pacer cluster on this machine (data in $dir):
  ClickHouse shards   http://127.0.0.1:${http[0]}/  http://127.0.0.1:${http[1]}/  (database pacer, cluster pacer)
  pacerd              http://127.0.0.1:${ports[0]}  (pid ${pids[2]}, --state: issues)   http://127.0.0.1:${ports[1]}  (pid ${pids[3]})
  haproxy             http://127.0.0.1:$front   <- point the SDK here

  $build/src/cli/pacer replay --app shop --server http://127.0.0.1:$front --key-file $dir/shop.key \\
      examples/events/shop-events.jsonl
  curl -H "Authorization: Bearer \$(cat $dir/admin-token)" 'http://127.0.0.1:$front/api/v1/pages?app=shop'
  curl -H "Authorization: Bearer \$(cat $dir/admin-token)" 'http://127.0.0.1:$front/api/v1/issues?app=shop'
  kill -9 ${pids[2]}     # one pacerd gone: haproxy sends everything to the other

Ctrl-C stops everything.
EOF
wait
