#!/usr/bin/env bash
# Trace benchmark: ns per traced call (enter + exit) on a call-heavy program,
# measured side by side in one run for
#   plain    the program built without -finstrument-functions (baseline)
#   off      built with the flag and linked with libpacer-trace, tracing off
#   floor    the same binary with a preloaded hook that only reads the TSC
#            and stores 16 bytes (bench/trace/floor.c): the limit
#   pacer    the same binary, tracing on (pacer trace record's environment)
#   uftrace  the same binary under `uftrace record` (Debian's uftrace)
# Rounds interleave the modes; each figure is a median over the rounds, and
# ns/call = (median loop time - plain's) / calls. The loop is timed inside
# the program; "run ms" is the whole process (start-up, final flush).
#
# usage: bench/trace/run.sh [BUILD_DIR]     (default: build-bench)
# env:   TRACE_BENCH_CALLS (2000000), TRACE_BENCH_RUNS (7)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build-bench}
build=$(cd "$build" && pwd)
calls=${TRACE_BENCH_CALLS:-2000000}
runs=${TRACE_BENCH_RUNS:-7}
lib="$build/src/trace"
cc=${CC:-cc}

[ -f "$lib/libpacer-trace.so" ] || { echo "trace bench: $lib/libpacer-trace.so missing; build first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$cc" -O2 -o "$work/calls-plain" "$here/calls.c"
"$cc" -O2 -finstrument-functions -o "$work/calls" "$here/calls.c" \
  -L"$lib" -lpacer-trace -Wl,-rpath,"$lib"
"$cc" -O2 -shared -fPIC -o "$work/libfloor.so" "$here/floor.c"

have_uftrace=1
command -v uftrace >/dev/null || { have_uftrace=0; echo "trace bench: uftrace not installed; skipping it" >&2; }

modes="plain off floor pacer"
[ $have_uftrace = 1 ] && modes="$modes uftrace"

# run MODE -> appends "loop_ns wall_ns" to $work/MODE.txt
run() {
  local mode=$1 out t0 t1
  rm -rf "$work/pacer.trace" "$work/uftrace.data"
  t0=$(date +%s%N)
  case $mode in
    plain)   out=$("$work/calls-plain" "$calls") ;;
    off)     out=$(env -u PACER_TRACE_DIR "$work/calls" "$calls") ;;
    floor)   out=$(LD_PRELOAD="$work/libfloor.so" "$work/calls" "$calls") ;;
    pacer)   out=$(PACER_TRACE_DIR="$work/pacer.trace" "$work/calls" "$calls") ;;
    uftrace) out=$(uftrace record -d "$work/uftrace.data" "$work/calls" "$calls" 2>/dev/null) ;;
  esac
  t1=$(date +%s%N)
  echo "${out#loop_ns=}" | awk -v w=$((t1 - t0)) '{print $1, w}' >>"$work/$mode.txt"
  case $mode in
    pacer)   cat "$work"/pacer.trace/*.ptrace | wc -c >>"$work/pacer.bytes" ;;
    uftrace) cat "$work"/uftrace.data/*.dat | wc -c >>"$work/uftrace.bytes" ;;
  esac
}

for ((r = 0; r < runs; r++)); do
  for m in $modes; do run "$m"; done
done

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
loop() { cut -d' ' -f1 "$work/$1.txt" | median; }
wall() { cut -d' ' -f2 "$work/$1.txt" | median; }

base=$(loop plain)
events=$((2 * calls + 2))
echo "trace: $calls calls of a tiny function, median of $runs interleaved runs ($(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
printf '  %-8s %12s %12s %10s %14s\n' mode "loop ms" "run ms" "ns/call" "bytes/event"
declare -A per
for m in $modes; do
  l=$(loop "$m")
  per[$m]=$(awk -v l="$l" -v b="$base" -v n="$calls" 'BEGIN {printf "%.1f", (l - b) / n}')
  bpe="-"
  [ -f "$work/$m.bytes" ] && bpe=$(median <"$work/$m.bytes" | awk -v e=$events '{printf "%.2f", $1 / e}')
  [ "$m" = plain ] && per[$m]="(base)"
  printf '  %-8s %12.2f %12.2f %10s %14s\n' "$m" "$(awk -v l="$l" 'BEGIN{print l/1e6}')" \
    "$(awk -v w="$(wall "$m")" 'BEGIN{print w/1e6}')" "${per[$m]}" "$bpe"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
echo "  pacer / floor   = $(ratio "${per[pacer]}" "${per[floor]}")x   (target <= 1.3x)"
[ $have_uftrace = 1 ] && echo "  uftrace / pacer = $(ratio "${per[uftrace]}" "${per[pacer]}")x   (target >= 4x)"
echo "  pacer ns/call   = ${per[pacer]}   (Nanoscope: 20 ns/call)"
