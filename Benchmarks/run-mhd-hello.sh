#!/usr/bin/env bash
# HTTP-layer baseline: the C libmicrohttpd hello-world vs the same server on the MicroHTTPD wrapper.
# Both: epoll thread pool (THREADS, default = cores), two-call handler, 50-byte JSON body, loopback.
# Runs `wrk -t2 -c64 -d10s --latency` RUNS times each (interleaved C, Swift, C, ...) and prints medians.
# Usage: Benchmarks/run-mhd-hello.sh            (env: THREADS, RUNS=3, DURATION=10s, CONNECTIONS=64)
set -euo pipefail
cd "$(dirname "$0")/.."

THREADS=${THREADS:-$(nproc)}
RUNS=${RUNS:-3}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-64}
C_PORT=${C_PORT:-18081}
SWIFT_PORT=${SWIFT_PORT:-18082}
OUT=bench-out/mhd-hello
mkdir -p "$OUT" .build-release

command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install -y wrk)" >&2; exit 1; }
pkg-config --exists libmicrohttpd || { echo "libmicrohttpd-dev is not installed" >&2; exit 1; }

echo "== building (release)"
# shellcheck disable=SC2046
gcc -O2 -Wall -o .build-release/mhd-hello-c Benchmarks/mhd-hello/C/hello.c \
    $(pkg-config --cflags --libs libmicrohttpd) -lpthread
swift build -c release --scratch-path .build-release --product mhd-hello 2>&1 | tail -1

. Benchmarks/toolkit.sh
SERVER_PID=
cleanup() { if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi; }
trap cleanup EXIT

wait_for_port() {
    for _ in $(seq 1 100); do
        if curl -s -o /dev/null "http://127.0.0.1:$1/"; then return 0; fi
        sleep 0.1
    done
    echo "server on port $1 did not come up" >&2
    return 1
}

run_one() { # name binary port run [extra server args]
    local name=$1 binary=$2 port=$3 run=$4
    shift 4
    "$binary" "$port" "$THREADS" "$@" >"$OUT/$name-server.log" 2>&1 &
    SERVER_PID=$!
    wait_for_port "$port"
    local ticks_before ticks_after
    ticks_before=$(cpu_ticks "$SERVER_PID")
    wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency "http://127.0.0.1:$port/" >"$OUT/$name-$run.txt"
    ticks_after=$(cpu_ticks "$SERVER_PID")
    kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=
    local rps p50 p99 requests cpu
    rps=$(awk '/^Requests\/sec/ {print $2}' "$OUT/$name-$run.txt")
    p50=$(awk '$1 == "50%" {print $2}' "$OUT/$name-$run.txt")
    p99=$(awk '$1 == "99%" {print $2}' "$OUT/$name-$run.txt")
    requests=$(awk '/requests in/ {print $1}' "$OUT/$name-$run.txt")
    # Server CPU time (user+system) per request: less sensitive to other load than req/s.
    cpu=$(awk -v t=$((ticks_after - ticks_before)) -v hz="$(getconf CLK_TCK)" -v r="$requests" \
        'BEGIN { printf "%.2f", t * 1000000 / hz / r }')
    printf '%-6s run %d: %12s req/s  p50 %-9s p99 %-9s server CPU %s us/req\n' "$name" "$run" "$rps" "$p50" "$p99" "$cpu"
    echo "$rps" >>"$OUT/$name.rps"
    echo "$cpu" >>"$OUT/$name.cpu"
}



rm -f "$OUT"/*.rps "$OUT"/*.cpu
echo "== wrk -t2 -c$CONNECTIONS -d$DURATION --latency, $THREADS server threads, $RUNS runs each"
for run in $(seq 1 "$RUNS"); do
    run_one c .build-release/mhd-hello-c "$C_PORT" "$run"
    run_one swift .build-release/release/mhd-hello "$SWIFT_PORT" "$run" 16384 plain
    run_one swiftp .build-release/release/mhd-hello "$SWIFT_PORT" "$run" 16384 prepared
done
C_MEDIAN=$(median "$OUT/c.rps")
SWIFT_MEDIAN=$(median "$OUT/swift.rps")
PREPARED_MEDIAN=$(median "$OUT/swiftp.rps")
echo "== medians"
echo "C libmicrohttpd hello (shared response):      $C_MEDIAN req/s, server CPU $(median "$OUT/c.cpu") us/req"
echo "Swift MicroHTTPD hello (HTTPResponse/request): $SWIFT_MEDIAN req/s, server CPU $(median "$OUT/swift.cpu") us/req"
echo "Swift MicroHTTPD hello (HTTPPreparedResponse): $PREPARED_MEDIAN req/s, server CPU $(median "$OUT/swiftp.cpu") us/req"
awk -v s="$SWIFT_MEDIAN" -v p="$PREPARED_MEDIAN" -v c="$C_MEDIAN" \
    'BEGIN { printf "ratio Swift/C: %.2f (per-request response), %.2f (prepared)\n", s / c, p / c }'
