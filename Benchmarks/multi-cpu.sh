#!/usr/bin/env bash
# Where the multi-subscription benchmark's extra time goes: `Benchmarks/run-gateway.sh multi` with one gateway binary
# (2,000 single-subscription streams on a fresh gateway, then 2,000 streams of 10 subscriptions on another), and for
# each of the two gateways its CPU time (`perf stat -e task-clock`) from once sse-fanout has opened its streams until
# it prints its summary (sse-fanout prints each line as it happens, so the window ends before it closes its streams).
# With PERF_RECORD=1, a `perf record -g` profile of each window instead (multi-single.perf.data and
# multi-multi.perf.data; read them with `perf report -i …`), and the samples per shared object of each. Needs perf.
#
# Usage: Benchmarks/multi-cpu.sh GATEWAY_BINARY
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${1:?usage: $0 GATEWAY_BINARY}
out=$(mktemp)
cleanup() { rm -f "$out"; }
trap cleanup EXIT
GATEWAY_BINARY=$binary Benchmarks/run-gateway.sh multi >"$out" 2>&1 &
bench=$!
cpu=()
for phase in single multi; do
    n=$([ "$phase" = single ] && echo 1 || echo 2)
    for _ in $(seq 3000); do
        [ "$(grep -c 'opened_in_ms' "$out")" -ge "$n" ] && break
        kill -0 "$bench" 2>/dev/null || { cat "$out" >&2; exit 1; }
        sleep 0.02
    done
    pid=$(pgrep -nf "$(basename "$binary") --port")
    if [ "${PERF_RECORD:-0}" = 1 ]; then
        perf record -q -F 4999 -g -o "multi-$phase.perf.data" -p "$pid" >/dev/null 2>&1 &
    else
        perf stat -x, -e task-clock -o "$out.$phase" -p "$pid" >/dev/null 2>&1 &
    fi
    watcher=$!
    for _ in $(seq 3000); do
        [ "$(grep -c '^fanout ' "$out")" -ge "$n" ] && break
        sleep 0.02
    done
    kill -INT "$watcher"
    wait "$watcher" 2>/dev/null || true
    if [ "${PERF_RECORD:-0}" = 1 ]; then
        echo "-- $phase: samples per shared object"
        perf report -i "multi-$phase.perf.data" --stdio --no-children -n --sort dso -g none 2>/dev/null |
            grep -E '^ +[0-9]' | head -6
    else
        cpu+=("$(awk -F, '/task-clock/ { printf "%.0f", $1 }' "$out.$phase")")
        rm -f "$out.$phase"
    fi
done
wait "$bench"
grep '^fanout ' "$out"
if [ "${PERF_RECORD:-0}" != 1 ]; then
    awk -v s="${cpu[0]}" -v m="${cpu[1]}" \
        'BEGIN { printf "gateway cpu during the rounds: single %d ms, multi %d ms, ratio %.2f\n", s, m, m / s }'
fi
