#!/usr/bin/env bash
# Three replicas behind HAProxy (scripts/replicas, deploy/haproxy.cfg: the set docs/replicas.md describes) against one
# replica of the same set called directly, in one run, on release builds:
#
#   hot     the hot GET /query (wrk -t1 -c64, DURATION each), direct then through the balancer, RUNS pairs: req/s
#           ratio balancer / direct per pair and their median
#   fanout  STREAMS event streams on one counter, 5 changes (Benchmarks/sse-fanout/sse_fanout.c), direct then through
#           the balancer, RUNS pairs: p50 and p99 time ratios balancer / direct and their medians. HAProxy takes two
#           descriptors per stream and the machine's limit is 20,000 per process, so 9,000 streams by default
#   kill    KILL_STREAMS streams through the balancer, a writer and a reader calling every 20 ms, then replica 1 killed
#           (Benchmarks/replica_kill.py): how long until every cut stream had an event again, and how many calls got
#           an error
#
# Usage: Benchmarks/replicas.sh [hot|fanout|kill|all]   (default all)
#   env: RUNS=3, DURATION=5s, STREAMS=9000, KILL_STREAMS=3000, PORT=19080 (the balancer; replicas on PORT+1..3),
#        BIN=.build-release/release (convex-gateway and convex-local; built when missing)
set -euo pipefail
cd "$(dirname "$0")/.."
ulimit -n 20000
mode=${1:-all}
RUNS=${RUNS:-3}
PORT=${PORT:-19080}
BIN=${BIN:-.build-release/release}
if [ ! -x "$BIN/convex-gateway" ] || [ ! -x "$BIN/convex-local" ]; then
    swift build -c release --scratch-path .build-release --product convex-gateway
    swift build -c release --scratch-path .build-release --product convex-local
fi
[ -x .build-release/sse-fanout ] || gcc -O2 -Wall -o .build-release/sse-fanout Benchmarks/sse-fanout/sse_fanout.c

state=$(mktemp -d)
REPLICAS_BIN_DIR=$BIN scripts/replicas --port "$PORT" --state-dir "$state" >"$state/script.log" 2>&1 &
set_pid=$!
trap 'kill -TERM "$set_pid" 2>/dev/null || true; wait "$set_pid" 2>/dev/null || true; rm -rf "$state"' EXIT
for _ in $(seq 600); do [ -e "$state/ready" ] && break; sleep 0.1; done
[ -e "$state/ready" ] || { echo "the replica set did not start:"; cat "$state/script.log"; exit 1; }
direct=$((PORT + 1))
echo "replica set: balancer $PORT, replicas $((PORT + 1))-$((PORT + 3)); load $(cut -d' ' -f1-3 /proc/loadavg)"

. Benchmarks/toolkit.sh

hot() {
    local url=/query/conformance:counter?name=hot ratios=() d b
    for port in "$direct" "$PORT"; do
        for _ in 1 2 3; do curl -fsS -o /dev/null "http://127.0.0.1:$port$url"; done
    done
    for run in $(seq "$RUNS"); do
        d=$(wrk -t1 -c64 -d"${DURATION:-5s}" "http://127.0.0.1:$direct$url" | awk '/Requests\/sec/ { print $2 }')
        b=$(wrk -t1 -c64 -d"${DURATION:-5s}" "http://127.0.0.1:$PORT$url" | awk '/Requests\/sec/ { print $2 }')
        ratios+=("$(ratio "$b" "$d")")
        echo "hot run $run: direct $d req/s, balancer $b req/s, balancer / direct ${ratios[-1]}"
    done
    echo "hot: median balancer / direct $(printf '%s\n' "${ratios[@]}" | median) (req/s)"
}

# Until no replica holds a stream: behind HAProxy a departed client's stream is let go at the replica's next write to
# it (a heartbeat), so the streams of the last run may still count against the next one's --max-streams.
wait_no_streams() {
    local k open
    for _ in $(seq 300); do
        open=0
        for k in 1 2 3; do
            open=$((open + $(curl -fsS "http://127.0.0.1:$((PORT + k))/metrics" |
                awk '/^convex_gateway_sse_active_streams / { printf "%d", $2 }')))
        done
        [ "$open" = 0 ] && return
        sleep 0.1
    done
    echo "streams still open after 30 s: $open"
}

fanout_once() { # port -> the client's summary line
    wait_no_streams
    run_fanout_load "$1" "$(cat "$state/replica-1.pid")" "${STREAMS:-9000}" 5 "fanout$1" 2>&1 |
        grep -E "^fanout|did not|closed" | tr '\n' ' ' || true
}

fanout() {
    local p50s=() p99s=() d b
    for run in $(seq "$RUNS"); do
        d=$(fanout_once "$direct")
        b=$(fanout_once "$PORT")
        echo "fanout run $run direct: $d"
        echo "fanout run $run balancer: $b"
        p50s+=("$(ratio "$(figure p50_ms "$b")" "$(figure p50_ms "$d")")")
        p99s+=("$(ratio "$(figure p99_ms "$b")" "$(figure p99_ms "$d")")")
        echo "fanout run $run balancer / direct: p50 ${p50s[-1]}, p99 ${p99s[-1]}"
    done
    echo "fanout: median balancer / direct p50 $(printf '%s\n' "${p50s[@]}" | median)," \
        "p99 $(printf '%s\n' "${p99s[@]}" | median) (time, ${STREAMS:-9000} streams)"
}

kill_one() {
    python3 Benchmarks/replica_kill.py "$PORT" "$state" "${KILL_STREAMS:-3000}" 1
}

case "$mode" in
    hot) hot ;;
    fanout) fanout ;;
    kill) kill_one ;;
    all) hot; fanout; kill_one ;;
    *) echo "usage: $0 [hot|fanout|kill|all]" >&2; exit 2 ;;
esac
