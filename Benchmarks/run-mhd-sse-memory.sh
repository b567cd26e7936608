#!/usr/bin/env bash
# Memory per idle SSE stream on the MicroHTTPD wrapper (user-space RSS growth of the server process,
# kernel socket buffers not included), for several per-connection memory pool sizes.
# Usage: Benchmarks/run-mhd-sse-memory.sh        (env: STREAMS=5000, POOLS="8192 16384 32768")
set -euo pipefail
cd "$(dirname "$0")/.."
STREAMS=${STREAMS:-5000}
POOLS=${POOLS:-"8192 16384 32768"}
PORT=${PORT:-18083}
ulimit -n "$((STREAMS + 1000))"
swift build -c release --scratch-path .build-release --product mhd-hello 2>&1 | tail -1
for pool in $POOLS; do
    .build-release/release/mhd-hello "$PORT" "$(nproc)" "$pool" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done
    printf 'pool=%-6s ' "$pool"
    python3 Benchmarks/sse_idle_clients.py "$PORT" "$pid" "$STREAMS"
    kill "$pid"; wait "$pid" 2>/dev/null || true
done
