#!/usr/bin/env bash
# Where a fan-out's time goes, for the C floor or a gateway binary: the server's CPU time, context switches and
# syscalls (perf's syscall tracepoints) while changes fan out to STREAMS streams on one live query: from once sse-fanout
# has opened its streams, for 0.3 s per round but one (each round waits 0.3 s before its change, so the window ends
# before the client closes its streams). Each count is also given per event sent (`sendto` + `sendmsg`: one per
# stream per change). With PERF_RECORD=1, a `perf record -g` profile of the same window instead
# (written to fanout.perf.data; read it with `perf report -i fanout.perf.data`); PERF_CALLGRAPH=0 records without call
# graphs, at 4999 Hz (lighter: the flat profile of where the CPU goes, per symbol). Needs perf, and
# Benchmarks/run-gateway.sh to have built .build-release/sse-server and sse-fanout once.
#
# EXTRA_EVENTS adds perf events to the count, e.g. allocations: `perf probe -x /lib/x86_64-linux-gnu/libc.so.6 --add
# malloc` once, then EXTRA_EVENTS=probe_libc:malloc.
#
# Usage: Benchmarks/fanout-syscalls.sh c|GATEWAY_BINARY [ROUNDS=10] [STREAMS=10000]
#   (task-clock is in ms: per event sent, ms per event)
set -euo pipefail
cd "$(dirname "$0")/.."
ulimit -n 20000
server=${1:?usage: $0 c|GATEWAY_BINARY [ROUNDS] [STREAMS]}
rounds=${2:-10}
streams=${3:-10000}
log=$(mktemp)
out=$(mktemp)
. Benchmarks/toolkit.sh
start_fanout_server "$server" "$streams" "$log"
pid=$server_pid
port=$server_port
cleanup() { kill "$pid" 2>/dev/null || true; rm -f "$log" "$out"; }
trap cleanup EXIT
run_fanout_load "$port" "$pid" "$streams" "$rounds" >"$out" 2>&1 &
client=$!
for _ in $(seq 600); do grep -q "^streams=" "$out" && break; sleep 0.05; done
window=$(awk -v r="$rounds" 'BEGIN { print (r - 1) * 0.3 }')
if [ "${PERF_RECORD:-0}" = 1 ]; then
    if [ "${PERF_CALLGRAPH:-1}" = 0 ]; then
        perf record -q -F 4999 -o fanout.perf.data -p "$pid" -- sleep "$window" >/dev/null 2>&1
    else
        perf record -q -F 2999 -g -o fanout.perf.data -p "$pid" -- sleep "$window" >/dev/null 2>&1
    fi
else
    events=task-clock,context-switches
    for call in sendto sendmsg write writev read recvfrom epoll_wait epoll_ctl futex close accept4; do
        events+=",syscalls:sys_enter_$call"
    done
    events+=${EXTRA_EVENTS:+,$EXTRA_EVENTS}
    perf stat -x, -e "$events" -p "$pid" -- sleep "$window" 2>&1 | awk -F, '
        $1 + 0 > 0 { name[++n] = $3; count[n] = $1 }
        $3 ~ /sys_enter_send(to|msg)$/ { sends += $1 }
        END {
            printf "%-36s %12s  %s\n", "counted in the window", "count", "per event sent"
            for (i = 1; i <= n; i++) printf "%-36s %12s  %.3f\n", name[i], count[i], sends ? count[i] / sends : 0
        }'
fi
wait "$client" || true
grep -E "^fanout|^spread|^round" "$out"
