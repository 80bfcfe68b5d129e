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
  mkdir -p "$d"/{log,data,tmp,user_files,format_schemas}
  cat > "$d/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$d/log/server.log</log><errorlog>$d/log/error.log</errorlog>
    <size>10M</size><count>1</count></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>${http[$i]}</http_port>
  <tcp_port>${tcp[$i]}</tcp_port>
  <path>$d/data/</path>
  <tmp_path>$d/tmp/</tmp_path>
  <user_files_path>$d/user_files/</user_files_path>
  <format_schema_path>$d/format_schemas/</format_schema_path>
  <users_config>$d/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>268435456</mark_cache_size>
  <compression><case><min_part_size>1048576</min_part_size><min_part_size_ratio>0</min_part_size_ratio>
    <method>zstd</method></case>
    <case><min_part_size>16777216</min_part_size><min_part_size_ratio>0</min_part_size_ratio>
    <method>zstd</method><level>9</level></case></compression>
  <remote_servers><pacer>
    <shard><replica><host>127.0.0.1</host><port>${tcp[0]}</port></replica></shard>
    <shard><replica><host>127.0.0.1</host><port>${tcp[1]}</port></replica></shard>
  </pacer></remote_servers>
</yandex>
EOF
  cat > "$d/users.xml" <<'EOF'
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>4000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile>
    <quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
EOF
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
