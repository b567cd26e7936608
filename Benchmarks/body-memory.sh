#!/usr/bin/env bash
# Peak memory of the gateway while CLIENTS clients send request bodies of the largest size at once (BENCHMARKS.md,
# "Request bodies in flight: peak memory"). Loopback only, every load bounded in time.
#
# The gateway runs on its embedded deployment with bench:* denied, and each client POSTs a JSON body of exactly
# MAX_BODY bytes (one string argument filling it) to /mutation/bench:write ROUNDS times in a row: the gateway reads,
# parses and types the body, then answers the unknown-function 404 without sending it anywhere, so what is measured is
# the gateway's own cost of bodies in flight. Two runs on fresh gateways: with --max-body-bytes-in-flight IN_FLIGHT
# (the default bound), then with a bound too large to matter (as before bodies in flight were bounded). For each:
# resident memory before the load (VmRSS), its peak during the load (VmHWM, reset just before the load through
# /proc/PID/clear_refs; else the largest of VmRSS sampled every 20 ms), and the answers by status (404: read whole,
# 503: over the bound).
#
# Usage: Benchmarks/body-memory.sh
#   env: CLIENTS=8, ROUNDS=3, MAX_BODY=16777216, IN_FLIGHT=33554432, TIME_LIMIT=120 (seconds per load),
#        GATEWAY_BINARY: measure this convex-gateway binary instead of building the working tree's, GW_PORT=18094
set -euo pipefail
cd "$(dirname "$0")/.."

CLIENTS=${CLIENTS:-8}
ROUNDS=${ROUNDS:-3}
MAX_BODY=${MAX_BODY:-16777216}
IN_FLIGHT=${IN_FLIGHT:-33554432}
TIME_LIMIT=${TIME_LIMIT:-120}
GW_PORT=${GW_PORT:-18094}
OUT=bench-out/body-memory
mkdir -p "$OUT" .build-release

command -v curl >/dev/null || { echo "curl is not installed" >&2; exit 1; }

if [[ -n "${GATEWAY_BINARY:-}" ]]; then
    GATEWAY=$GATEWAY_BINARY
else
    echo "== building (release)"
    swift build -c release --scratch-path .build-release --product convex-gateway 2>&1 | tail -1
    GATEWAY=.build-release/release/convex-gateway
fi

BODY=$OUT/body.json
python3 -c 'import sys; n = int(sys.argv[1]); sys.stdout.write("{\"s\":\"" + "x" * (n - 8) + "\"}")' \
    "$MAX_BODY" >"$BODY"
[ "$(stat -c %s "$BODY")" = "$MAX_BODY" ] || { echo "the body is not $MAX_BODY bytes" >&2; exit 1; }

. Benchmarks/toolkit.sh
GW_PID=
SAMPLER_PID=
cleanup() { stop SAMPLER_PID; stop GW_PID; }
trap cleanup EXIT

kib() { # field pid: a /proc/PID/status field, in KiB
    awk -v field="$1:" '$1 == field { print $2 }' "/proc/$2/status"
}


client() { # index: ROUNDS posts, one status per line
    for _ in $(seq 1 "$ROUNDS"); do
        curl -s -o /dev/null -w '%{http_code}\n' --max-time "$TIME_LIMIT" \
            -H 'Content-Type: application/json' --data-binary "@$BODY" \
            "http://127.0.0.1:$GW_PORT/mutation/bench:write" || echo "failed"
    done >"$OUT/client-$1.txt"
}

run() { # label in-flight-bound
    local label=$1 bound=$2
    # Every client is on loopback, one address: its share of the bodies is the whole bound here (an environment
    # variable, which earlier binaries ignore).
    GATEWAY_MAX_BODY_BYTES_PER_CLIENT=$((1 << 40)) GATEWAY_MAX_CONNECTIONS_PER_CLIENT=1000000 \
        "$GATEWAY" --port "$GW_PORT" --threads "$(nproc)" --log-level error --deny-functions 'bench:*' \
        --max-body-bytes "$MAX_BODY" --max-body-bytes-in-flight "$bound" >"$OUT/gateway-$label.log" 2>&1 &
    GW_PID=$!
    wait_for "http://127.0.0.1:$GW_PORT/healthz"
    # One body first, so that what a first request sets up once is in the baseline.
    curl -s -o /dev/null --max-time "$TIME_LIMIT" -H 'Content-Type: application/json' --data-binary "@$BODY" \
        "http://127.0.0.1:$GW_PORT/mutation/bench:write"
    sleep 1
    local before peak=0 hwm=1
    before=$(kib VmRSS "$GW_PID")
    echo 5 >"/proc/$GW_PID/clear_refs" 2>/dev/null || hwm=0
    (
        largest=0
        while kill -0 "$GW_PID" 2>/dev/null; do
            rss=$(kib VmRSS "$GW_PID" || echo 0)
            if [ "${rss:-0}" -gt "$largest" ]; then largest=$rss; echo "$largest" >"$OUT/sampled-$label.txt"; fi
            sleep 0.02
        done
    ) &
    SAMPLER_PID=$!
    local started=$SECONDS
    local pids=()
    for i in $(seq 1 "$CLIENTS"); do
        client "$i" &
        pids+=($!)
    done
    timeout "$((TIME_LIMIT + 10))" bash -c 'for pid in "$@"; do while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done; done' \
        _ "${pids[@]}" || echo "-- the load did not end within ${TIME_LIMIT} s" >&2
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    local elapsed=$((SECONDS - started))
    if [ "$hwm" = 1 ]; then peak=$(kib VmHWM "$GW_PID"); fi
    stop SAMPLER_PID
    local sampled
    sampled=$(cat "$OUT/sampled-$label.txt" 2>/dev/null || echo 0)
    if [ "$peak" -lt "$sampled" ]; then peak=$sampled; fi
    local statuses
    statuses=$(cat "$OUT"/client-*.txt | sort | uniq -c | awk '{ printf "%s x%s ", $2, $1 }')
    awk -v label="$label" -v bound="$bound" -v clients="$CLIENTS" -v rounds="$ROUNDS" -v size="$MAX_BODY" \
        -v before="$before" -v peak="$peak" -v elapsed="$elapsed" -v statuses="$statuses" 'BEGIN {
            printf "%-10s in-flight bound %13.0f B, %d clients x %d bodies of %.0f B: RSS before %.1f MiB, ",
                label, bound, clients, rounds, size, before / 1024
            printf "peak %.1f MiB (+%.1f MiB), %d s; answers: %s\n", peak / 1024, (peak - before) / 1024, elapsed,
                statuses
        }'
    rm -f "$OUT"/client-*.txt
    stop GW_PID
}

echo "-- $(date -u +%Y-%m-%dT%H:%M:%S) UTC, $(nproc) CPUs, load average:$(uptime | sed 's/.*load average://')"
run bounded "$IN_FLIGHT"
run unbounded 1099511627776
