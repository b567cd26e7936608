#!/usr/bin/env bash
# Gateway benchmarks (BENCHMARKS.md, "Gateway"), all on loopback, every load run bounded in time:
#   1. hot GET /query (answered from a live subscription) vs the C libmicrohttpd hello-world serving a body of the
#      same bytes and the same extra header, asked the same request (path and query too): wrk -t2 -c64 -d10s,
#      interleaved RUNS times each, medians, ratio;
#   2. cold GET/POST latency added over the embedded deployment's own HTTP API (Benchmarks/gateway_latency.py);
#   3. SSE fan-out: STREAMS streams on one query, ROUNDS mutations, time until each stream has the event, and memory
#      per idle stream (Benchmarks/sse-fanout/sse_fanout.c), after a smaller SMALL_STREAMS run to show how latency
#      scales with the stream count (and the client's own share); the STREAMS runs are 9.'s, against the floor, so it
#      ends with the gateway's ratio to the floor (the regression guard BENCHMARKS.md keeps per commit).
#   4. hot GET with a browser's Origin under CORS vs the same GET without it, on one gateway with CORS on
#      (hot-origin): both must take the hot path, so the ratio should be about 1.
#   5. multi-subscription streams (multi): MULTI_STREAMS streams of 10 subscriptions each over 121 distinct queries,
#      every stream holding the one query the mutation changes, vs as many single-subscription streams on that query,
#      each on a fresh gateway in the same run: time until every affected stream has the event, memory per stream,
#      and a check that no stream gets an event for a query that did not change. With MULTI_CONTROL=1 the
#      single-subscription run is made again after the multi one (a control: single against single).
#   6. hot GET with a browser's headers (hot-browser): Origin under CORS and Accept-Encoding: gzip, of a ~20 KB value
#      (messages:list of a channel filled first), vs the C hello-world serving the same gzip-coded bytes with the same
#      headers, asked the same request; then the same with the value's If-None-Match, a 304 from both (the C one
#      compares the tag too). Both servers stay up; each pair of loads runs back to back, the one going first
#      alternating. Besides the ratio of medians, the ratio of each back-to-back pair and their median.
#   7. JSON Patch deltas (delta): bytes on the wire per change for a live query of a 1,000-document list (one
#      document inserted, changed, removed), patch vs full value (Benchmarks/delta_bytes.py); then one change fanned
#      out to DELTA_STREAMS streams of that list, full values vs patches, a fresh gateway each, twice in turn.
#   8. clients that leave (churn): CHURN_RATE streams a second opened on a live query, each dropped after 1 s, for
#      CHURN_SECONDS; then 6 bursts of CHURN_BURST streams opened and dropped together; the heartbeat is off, and
#      another client sends mutations and GETs throughout (Benchmarks/stream_churn.py): dead connections held,
#      time from a client's close to the gateway's release, and that client's answers that were not 200.
#   9. SSE fan-out against the floor (fanout-c): Benchmarks/fanout-pairs.sh with this script's binary, FANOUT_C_RUNS
#      pairs (the C libmicrohttpd SSE server, then the gateway, each fresh) of STREAMS streams and ROUNDS changes; ends
#      with the ratio gateway/C of p50 and p99 per pair and their medians.
#  10. mutation to event (change-latency): CHANGE_ROUNDS mutations sent to the deployment itself; the time until the
#      gateway's SSE stream has the new value, and until the official Python client subscribed directly to the
#      deployment has it, in one run (Benchmarks/change_latency.py, with the .venv that scripts/test makes).
#  11. hot GET under a steady write load (hot-writes): a signed-in client writes WRITE_RATE mutations a second through
#      the gateway (Benchmarks/steady_writes.py) while wrk reads a hot GET of a query the writes do not change, with
#      --read-your-writes true and false alternately (RUNS each, a fresh gateway per run): hot-GET throughput with and
#      without the rule.
#  12. the gateway on one CPU (one-core): the churn load of 8 against a gateway that `taskset -c 0` keeps on one CPU,
#      with the load itself on the other (LOAD_CPUS) and heartbeats every ONE_CORE_HEARTBEAT seconds: the calling
#      client's slowest answer and a watching stream's longest silence must stay under the heartbeat. Also prints the
#      width of Swift's concurrency pool in that CPU set (Benchmarks/pool-width).
#  13. a live paginated feed (paginated): one insert reaching a stream of 5 loaded pages of feed:list (pinned as
#      client.js pins them), with and without JSON Patches, against one live query of the same posts (feed:all with a
#      limit): bytes and time to the event per insert, medians of PAGINATED_ROUNDS (Benchmarks/paginated_feed.py).
# Usage: Benchmarks/run-gateway.sh [hot|hot-origin|hot-browser|latency|fanout|fanout-c|multi|delta|churn|change-latency|hot-writes|one-core|paginated|all]
#   env: THREADS (default: cores), RUNS=3, DURATION=10s, CONNECTIONS=64, LATENCY_REQUESTS=1000,
#        STREAMS=10000, SMALL_STREAMS=1000, ROUNDS=5, MULTI_STREAMS=2000, DELTA_STREAMS=5000,
#        CHURN_RATE=500, CHURN_SECONDS=20, CHURN_BURST=1500, FANOUT_C_RUNS=3, CHANGE_ROUNDS=300, WRITE_RATE=100,
#        GATEWAY_BINARY: measure this convex-gateway binary instead of building the working tree's,
#        PIN=1: the wrk comparisons (hot, hot-origin, hot-browser) run the servers on SERVER_CPUS (default 0) and wrk
#        (one thread) on LOAD_CPUS (default 1), so the load generator cannot take the server's core: on a 2-core
#        machine, unpinned, the servers and wrk share both cores and the scheduler's choices move the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."

WHAT=${1:-all}
THREADS=${THREADS:-$(nproc)}
RUNS=${RUNS:-3}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-64}
LATENCY_REQUESTS=${LATENCY_REQUESTS:-1000}
STREAMS=${STREAMS:-10000}
SMALL_STREAMS=${SMALL_STREAMS:-1000}
ROUNDS=${ROUNDS:-5}
MULTI_STREAMS=${MULTI_STREAMS:-2000}
DELTA_STREAMS=${DELTA_STREAMS:-5000}
CHURN_RATE=${CHURN_RATE:-500}
CHURN_SECONDS=${CHURN_SECONDS:-20}
CHURN_BURST=${CHURN_BURST:-1500}
FANOUT_C_RUNS=${FANOUT_C_RUNS:-3}
CHANGE_ROUNDS=${CHANGE_ROUNDS:-300}
WRITE_RATE=${WRITE_RATE:-100}
ONE_CORE_HEARTBEAT=${ONE_CORE_HEARTBEAT:-2}
PIN=${PIN:-0}
SERVER_CPUS=${SERVER_CPUS:-0}
LOAD_CPUS=${LOAD_CPUS:-1}
GW_PORT=${GW_PORT:-18090}
LOCAL_PORT=${LOCAL_PORT:-18091}
C_PORT=${C_PORT:-18092}
OUT=bench-out/gateway
mkdir -p "$OUT" .build-release
ulimit -n 20000

command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install -y wrk)" >&2; exit 1; }
pkg-config --exists libmicrohttpd || { echo "libmicrohttpd-dev is not installed" >&2; exit 1; }

machine() { echo "-- $(date -u +%H:%M:%S) UTC, load average:$(uptime | sed 's/.*load average://')"; }

# With PIN=1, servers run on SERVER_CPUS and wrk, with one thread, on LOAD_CPUS.
# (taskset execs the server, so $! is still the server's pid.)
ON_SERVER_CPUS=()
WRK=(wrk -t2)
if [ "$PIN" = 1 ]; then
    ON_SERVER_CPUS=(taskset -c "$SERVER_CPUS")
    WRK=(taskset -c "$LOAD_CPUS" wrk -t1)
    echo "== pinned: servers on CPU(s) $SERVER_CPUS, wrk (one thread) on CPU(s) $LOAD_CPUS"
fi

echo "== building (release)"
# shellcheck disable=SC2046
gcc -O2 -Wall -o .build-release/mhd-hello-c Benchmarks/mhd-hello/C/hello.c \
    $(pkg-config --cflags --libs libmicrohttpd) -lpthread
gcc -O2 -Wall -o .build-release/sse-fanout Benchmarks/sse-fanout/sse_fanout.c
# shellcheck disable=SC2046
gcc -O2 -Wall -o .build-release/sse-server Benchmarks/sse-fanout/sse_server.c \
    $(pkg-config --cflags --libs libmicrohttpd) -lpthread
if [[ -n "${GATEWAY_BINARY:-}" ]]; then
    GATEWAY=$GATEWAY_BINARY  # another build to measure (e.g. an older commit's, copied aside), as it is
else
    swift build -c release --scratch-path .build-release --product convex-gateway 2>&1 | tail -1
    GATEWAY=.build-release/release/convex-gateway
fi
swiftc -O -o .build-release/pool-width Benchmarks/pool-width/main.swift

. Benchmarks/toolkit.sh
GW_PID=
C_PID=
cleanup() { stop C_PID; stop GW_PID; }
trap cleanup EXIT


start_gateway() { # log-name [extra flags...]
    local log=$1
    shift
    # Every client of a benchmark is on loopback: one address, whose share of the streams is the whole limit here
    # (an environment variable, which the binaries of earlier versions compared against ignore).
    GATEWAY_MAX_STREAMS_PER_CLIENT=1000000 GATEWAY_MAX_CONNECTIONS_PER_CLIENT=1000000 "${ON_SERVER_CPUS[@]}" "$GATEWAY" --port "$GW_PORT" --local-port "$LOCAL_PORT" --threads "$THREADS" --heartbeat-seconds 3600 \
        --max-connections 12000 --log-level notice "$@" >"$OUT/$log.log" 2>&1 &
    GW_PID=$!
    wait_for "http://127.0.0.1:$GW_PORT/readyz"
}


# The ratio of each run of one series to the same run of another (runs are interleaved, so each pair ran back to back).
pair_ratios() { # series-a series-b
    paste -d' ' "$OUT/$1.rps" "$OUT/$2.rps" | awk '{printf "%s%.2f", (NR > 1 ? " " : ""), $1 / $2}'
}


# With SERVER_PID set, also the server's CPU time (user + system) per request, which other load disturbs less than
# req/s does.
wrk_one() { # name url run [wrk options...]
    local name=$1 url=$2 run=$3
    shift 3
    local ticks_before=0 cpu=""
    [ -n "${SERVER_PID:-}" ] && ticks_before=$(cpu_ticks "$SERVER_PID")
    "${WRK[@]}" -c"$CONNECTIONS" -d"$DURATION" --latency "$@" "$url" >"$OUT/hot-$name-$run.txt"
    local rps p50 p99 bad
    rps=$(awk '/^Requests\/sec/ {print $2}' "$OUT/hot-$name-$run.txt")
    p50=$(awk '$1 == "50%" {print $2}' "$OUT/hot-$name-$run.txt")
    p99=$(awk '$1 == "99%" {print $2}' "$OUT/hot-$name-$run.txt")
    bad=$(awk '/Non-2xx|Socket errors/ {$1=$1; print}' "$OUT/hot-$name-$run.txt" | tr '\n' ' ')
    if [ -n "${SERVER_PID:-}" ]; then
        cpu=$(awk -v t=$(($(cpu_ticks "$SERVER_PID") - ticks_before)) -v hz="$(getconf CLK_TCK)" \
            -v r="$(awk '/requests in/ {print $1}' "$OUT/hot-$name-$run.txt")" 'BEGIN { printf "%.2f", t * 1000000 / hz / r }')
        echo "$cpu" >>"$OUT/hot-$name.cpu"
        cpu="server CPU $cpu us/req"
    fi
    printf '%-8s run %d: %12s req/s  p50 %-9s p99 %-9s %s %s\n' "$name" "$run" "$rps" "$p50" "$p99" "$cpu" "$bad"
    echo "$rps" >>"$OUT/hot-$name.rps"
}

hot() {
    echo "== 1. hot GET /query vs C hello-world (${WRK[*]} -c$CONNECTIONS -d$DURATION, $THREADS server threads, $RUNS interleaved runs each)"
    start_gateway hot-gateway
    local path="/query/mlb:first_place_team?division=AL%20Central"
    local url="http://127.0.0.1:$GW_PORT$path"
    # Warm the subscription (each later GET keeps it warm), then take the body and the ETag header it answers with.
    curl -s -o /dev/null "$url"
    sleep 0.5
    curl -s -D "$OUT/hot-headers.txt" -o "$OUT/hot-body.json" "$url"
    local body etag
    body=$(cat "$OUT/hot-body.json")
    etag=$(awk -F': ' 'tolower($1) == "etag" {print $2}' "$OUT/hot-headers.txt" | tr -d '\r')
    local stamp
    stamp=$(awk -F': ' 'tolower($1) == "convex-timestamp" {print $2}' "$OUT/hot-headers.txt" | tr -d '\r')
    echo "gateway response headers:"; sed 's/^/    /' "$OUT/hot-headers.txt"
    echo "body (${#body} bytes): $body"
    rm -f "$OUT"/hot-{c,gateway}.{rps,cpu}
    machine
    for run in $(seq 1 "$RUNS"); do
        "${ON_SERVER_CPUS[@]}" .build-release/mhd-hello-c "$C_PORT" "$THREADS" "$body" "ETag: $etag" \
            "Convex-Timestamp: $stamp" >"$OUT/hot-c-server.log" 2>&1 &
        C_PID=$!
        wait_for "http://127.0.0.1:$C_PORT/"
        SERVER_PID=$C_PID wrk_one c "http://127.0.0.1:$C_PORT$path" "$run"
        stop C_PID
        SERVER_PID=$GW_PID wrk_one gateway "$url" "$run"
    done
    machine
    local c g
    c=$(median "$OUT/hot-c.rps")
    g=$(median "$OUT/hot-gateway.rps")
    echo "medians: C hello-world $c req/s, gateway hot GET $g req/s"
    awk -v g="$g" -v c="$c" 'BEGIN { printf "ratio gateway/C: %.2f (target >= 0.80)\n", g / c }'
    echo "per-run ratios gateway/C (each pair run back to back): $(pair_ratios hot-gateway hot-c)"
    echo "server CPU per request (medians): C $(median "$OUT/hot-c.cpu") us, gateway $(median "$OUT/hot-gateway.cpu") us"
    curl -s "http://127.0.0.1:$GW_PORT/metrics" | grep -E '^gateway_upstream_subscriptions|^gateway_requests_total.*query' | head -5 || true
    stop GW_PID
}

hot_origin() {
    echo "== 4. hot GET with Origin under CORS vs without (${WRK[*]} -c$CONNECTIONS -d$DURATION, $RUNS interleaved runs each)"
    start_gateway hot-origin-gateway --cors-origins https://app.test
    local url="http://127.0.0.1:$GW_PORT/query/mlb:first_place_team?division=AL%20Central"
    curl -s -o /dev/null -H "Origin: https://app.test" "$url"
    sleep 0.5
    curl -s -o /dev/null -H "Origin: https://app.test" "$url"
    curl -s -D - -o /dev/null -H "Origin: https://app.test" "$url" | sed 's/^/    /'
    rm -f "$OUT/hot-origin.rps" "$OUT/hot-plain.rps"
    machine
    for run in $(seq 1 "$RUNS"); do
        wrk_one plain "$url" "$run"
        wrk_one origin "$url" "$run" -H "Origin: https://app.test"
    done
    machine
    local p o
    p=$(median "$OUT/hot-plain.rps")
    o=$(median "$OUT/hot-origin.rps")
    echo "medians: without Origin $p req/s, with Origin $o req/s"
    awk -v o="$o" -v p="$p" 'BEGIN { printf "ratio with/without Origin: %.2f\n", o / p }'
    stop GW_PID
}

hot_browser() {
    echo "== 6. hot GET with a browser's headers (Origin, Accept-Encoding: gzip) of a ~20 KB value vs C hello-world, 200 and 304 (${WRK[*]} -c$CONNECTIONS -d$DURATION, $RUNS interleaved runs each)"
    start_gateway hot-browser-gateway --cors-origins https://app.test
    local path="/query/messages:list?channel=bench20k"
    local url="http://127.0.0.1:$GW_PORT$path"
    local i=0
    while [ "$(curl -s "$url" | wc -c)" -lt 20000 ]; do
        i=$((i + 1))
        curl -s -o /dev/null -H 'Content-Type: application/json' \
            -d "{\"body\":\"message $i: the quick brown fox $((i * 7919 % 10007)) jumps over the lazy dog\",\"channel\":\"bench20k\"}" \
            "http://127.0.0.1:$GW_PORT/mutation/messages:send"
    done
    local browser=(-H "Origin: https://app.test" -H "Accept-Encoding: gzip")
    # The first GETs take full handling and make the target hot; the answer is then taken raw (gzip-coded).
    curl -s -o /dev/null "${browser[@]}" "$url"
    sleep 0.5
    curl -s -o /dev/null "${browser[@]}" "$url"
    curl -s -D "$OUT/browser-headers.txt" -o "$OUT/browser-body.gz" "${browser[@]}" "$url"
    local identity etag
    identity=$(curl -s "$url" | wc -c)
    etag=$(awk -F': ' 'tolower($1) == "etag" {print $2}' "$OUT/browser-headers.txt" | tr -d '\r')
    # The C server replays every header but those libmicrohttpd or hello.c write themselves.
    local replay=()
    mapfile -t replay < <(tail -n +2 "$OUT/browser-headers.txt" | tr -d '\r' \
        | grep -v -i -E '^(date|content-length|content-type|connection):' | grep -v '^$')
    echo "gateway response headers:"; sed 's/^/    /' "$OUT/browser-headers.txt"
    echo "value: $identity bytes, gzip-coded: $(wc -c <"$OUT/browser-body.gz") bytes ($i messages)"
    rm -f "$OUT"/hot-{c,gw}-{gzip,304}.{rps,cpu}
    machine
    "${ON_SERVER_CPUS[@]}" .build-release/mhd-hello-c "$C_PORT" "$THREADS" "@$OUT/browser-body.gz" "${replay[@]}" \
        >"$OUT/hot-browser-c-server.log" 2>&1 &
    C_PID=$!
    wait_for "http://127.0.0.1:$C_PORT/"
    local c_url="http://127.0.0.1:$C_PORT$path" not_modified=(-H "If-None-Match: $etag")
    # Both servers stay up (the idle one waits in epoll). Each run measures the two 200 gzip loads back to back,
    # then the two 304 loads, and the server that goes first alternates from run to run (C, gateway, gateway, C,
    # then the reverse), so neither has the same place in every pair.
    for run in $(seq 1 "$RUNS"); do
        if [ $((run % 2)) = 1 ]; then
            SERVER_PID=$C_PID wrk_one c-gzip "$c_url" "$run" "${browser[@]}"
            SERVER_PID=$GW_PID wrk_one gw-gzip "$url" "$run" "${browser[@]}"
            SERVER_PID=$GW_PID wrk_one gw-304 "$url" "$run" "${browser[@]}" "${not_modified[@]}"
            SERVER_PID=$C_PID wrk_one c-304 "$c_url" "$run" "${browser[@]}" "${not_modified[@]}"
        else
            SERVER_PID=$GW_PID wrk_one gw-gzip "$url" "$run" "${browser[@]}"
            SERVER_PID=$C_PID wrk_one c-gzip "$c_url" "$run" "${browser[@]}"
            SERVER_PID=$C_PID wrk_one c-304 "$c_url" "$run" "${browser[@]}" "${not_modified[@]}"
            SERVER_PID=$GW_PID wrk_one gw-304 "$url" "$run" "${browser[@]}" "${not_modified[@]}"
        fi
    done
    stop C_PID
    machine
    local c g c3 g3
    c=$(median "$OUT/hot-c-gzip.rps")
    g=$(median "$OUT/hot-gw-gzip.rps")
    c3=$(median "$OUT/hot-c-304.rps")
    g3=$(median "$OUT/hot-gw-304.rps")
    echo "medians: 200 gzip: C hello-world $c req/s, gateway $g req/s; 304: C $c3 req/s, gateway $g3 req/s"
    awk -v g="$g" -v c="$c" -v g3="$g3" -v c3="$c3" \
        'BEGIN { printf "ratio gateway/C: 200 gzip %.2f, 304 %.2f (target >= 0.90 each)\n", g / c, g3 / c3 }'
    echo "per-run ratios gateway/C (each pair run back to back): 200 gzip $(pair_ratios hot-gw-gzip hot-c-gzip)," \
        "median $(pair_ratios hot-gw-gzip hot-c-gzip | tr ' ' '\n' >"$OUT/pairs" && median "$OUT/pairs");" \
        "304 $(pair_ratios hot-gw-304 hot-c-304), median $(pair_ratios hot-gw-304 hot-c-304 | tr ' ' '\n' >"$OUT/pairs" && median "$OUT/pairs")"
    echo "server CPU per request (medians): 200 gzip: C $(median "$OUT/hot-c-gzip.cpu") us, gateway" \
        "$(median "$OUT/hot-gw-gzip.cpu") us; 304: C $(median "$OUT/hot-c-304.cpu") us, gateway $(median "$OUT/hot-gw-304.cpu") us"
    stop GW_PID
}

latency() {
    echo "== 2. cold latency added over the deployment's HTTP API ($LATENCY_REQUESTS sequential requests per row)"
    start_gateway latency-gateway
    machine
    python3 Benchmarks/gateway_latency.py "$GW_PORT" "$LOCAL_PORT" "$LATENCY_REQUESTS"
    machine
    stop GW_PID
}

fanout_one() { # streams
    start_gateway "fanout-$1-gateway"
    machine
    run_fanout_load "$GW_PORT" "$GW_PID" "$1" "$ROUNDS"
    machine
    stop GW_PID
}

fanout() {
    echo "== 3. SSE fan-out ($ROUNDS mutations; $SMALL_STREAMS streams on the gateway, then $STREAMS against the floor)"
    fanout_one "$SMALL_STREAMS"
    fanout_c
}

# The gateway against the floor: Benchmarks/fanout-pairs.sh, the one runner of that pair, on the binary measured here.
fanout_c() {
    echo "== 9. SSE fan-out, gateway vs the C SSE server ($STREAMS streams, $ROUNDS changes, $FANOUT_C_RUNS runs each, alternately)"
    STREAMS=$STREAMS ROUNDS=$ROUNDS RUNS=$FANOUT_C_RUNS Benchmarks/fanout-pairs.sh gateway="$GATEWAY"
}

change_latency() {
    echo "== 10. mutation to event: the gateway's stream vs the official Python client on the deployment ($CHANGE_ROUNDS mutations)"
    [ -x .venv/bin/python ] || { echo "no .venv (run scripts/test once, or: . scripts/prereqs.sh; ensure_python_venv)" >&2; exit 1; }
    start_gateway change-latency-gateway
    machine
    .venv/bin/python Benchmarks/change_latency.py "$GW_PORT" "$LOCAL_PORT" "$CHANGE_ROUNDS"
    machine
    stop GW_PID
}

hot_writes() {
    echo "== 11. hot GET under $WRITE_RATE signed-in writes/s, --read-your-writes true vs false (${WRK[*]} -c$CONNECTIONS -d$DURATION, $RUNS runs each, alternating)"
    local path="/query/mlb:first_place_team?division=AL%20Central"
    local seconds=${DURATION%s}
    rm -f "$OUT/hot-rule-on.rps" "$OUT/hot-rule-off.rps"
    machine
    for run in $(seq 1 "$RUNS"); do
        for rule in on off; do
            local flag=true
            [ "$rule" = off ] && flag=false
            start_gateway "hot-writes-$rule-gateway" --read-your-writes "$flag"
            curl -s -o /dev/null "http://127.0.0.1:$GW_PORT$path"
            sleep 0.5
            curl -s -o /dev/null "http://127.0.0.1:$GW_PORT$path"
            python3 Benchmarks/steady_writes.py "$GW_PORT" "$WRITE_RATE" "$((seconds + 1))" >"$OUT/hot-writes-$rule-$run.txt" &
            local writer=$!
            wrk_one "rule-$rule" "http://127.0.0.1:$GW_PORT$path" "$run"
            wait "$writer"
            echo "   ($rule) $(cat "$OUT/hot-writes-$rule-$run.txt")"
            stop GW_PID
        done
    done
    machine
    local on off
    on=$(median "$OUT/hot-rule-on.rps")
    off=$(median "$OUT/hot-rule-off.rps")
    echo "medians: read-your-writes on $on req/s, off $off req/s"
    awk -v a="$on" -v b="$off" 'BEGIN { printf "ratio on/off: %.2f\n", a / b }'
}

# One line per stream kind for sse-fanout: "1 1 <path>" (one first event, a transition holding every subscription's
# value), 10 subscriptions of conformance:counter, the first on the
# counter the mutation changes ("fanout"), the other nine on 120 counters that never change, a different nine per line.
multi_paths() {
    local enc_open='%7B%22name%22%3A%22' enc_close='%22%7D'
    for k in $(seq 0 119); do
        local path="/subscribe?sub.s0=conformance:counter&args.s0=${enc_open}fanout${enc_close}"
        for j in $(seq 1 9); do
            path+="&sub.s$j=conformance:counter&args.s$j=${enc_open}q$(((k * 9 + j) % 120))${enc_close}"
        done
        echo "1 1 $path"
    done
}

multi() {
    echo "== 5. $MULTI_STREAMS multi-subscription streams (10 subscriptions, 121 distinct queries) vs as many single ones"
    multi_paths > "$OUT/multi-paths.txt"
    fanout_one "$MULTI_STREAMS"
    start_gateway "multi-$MULTI_STREAMS-gateway"
    machine
    .build-release/sse-fanout "$GW_PORT" "$GW_PID" "$MULTI_STREAMS" "$ROUNDS" \
        "@$OUT/multi-paths.txt" "/mutation/conformance:increment" '{"name":"fanout"}'
    machine
    stop GW_PID
    if [ "${MULTI_CONTROL:-0}" = 1 ]; then
        echo "-- control: single-subscription streams again"
        fanout_one "$MULTI_STREAMS"
    fi
}

delta() {
    echo "== 7. JSON Patch deltas on a live query of 1,000 documents (items:list)"
    start_gateway delta-bytes-gateway
    machine
    python3 Benchmarks/delta_bytes.py "$GW_PORT" 1000 plain
    stop GW_PID
    echo "-- one document inserted, fanned out to $DELTA_STREAMS streams ($ROUNDS mutations), full values vs patches"
    for turn in 1 2; do
        for kind in full patch; do
            local path="/subscribe/items:list"
            [ "$kind" = patch ] && path+="?delta=json-patch"
            start_gateway "delta-$kind-$turn-gateway"
            python3 Benchmarks/delta_bytes.py "$GW_PORT" 1000 --seed-only
            echo "-- $kind (turn $turn): $path"
            machine
            .build-release/sse-fanout "$GW_PORT" "$GW_PID" "$DELTA_STREAMS" "$ROUNDS" "$path" \
                "/mutation/items:add" '{"text":"one more item"}'
            machine
            stop GW_PID
        done
    done
}

paginated() {
    echo "== 13. one insert reaching a live feed of 5 loaded pages, against one live query of the same posts"
    start_gateway paginated-gateway
    machine
    python3 Benchmarks/paginated_feed.py "$GW_PORT" 500 20 "${PAGINATED_ROUNDS:-40}"
    stop GW_PID
}

churn() {
    echo "== 8. clients that leave: streams opened and dropped with the heartbeat off, a client calling meanwhile"
    start_gateway churn-gateway
    machine
    python3 Benchmarks/stream_churn.py "$GW_PORT" "$GW_PID" steady "$CHURN_RATE" "$CHURN_SECONDS" 1
    machine
    python3 Benchmarks/stream_churn.py "$GW_PORT" "$GW_PID" bursts "$CHURN_BURST" 6
    machine
    stop GW_PID
}

one_core() {
    echo "== 12. the gateway on one CPU (taskset -c 0), the churn load on CPU(s) $LOAD_CPUS, heartbeat ${ONE_CORE_HEARTBEAT} s"
    echo "Swift's concurrency pool width: $(nproc) CPUs -> $(.build-release/pool-width) threads;" \
        "taskset -c 0 ($(taskset -c 0 nproc) CPU) -> $(taskset -c 0 .build-release/pool-width) threads"
    # taskset execs the gateway, so $! is its pid and every thread it starts inherits the CPU set.
    # No --threads: the default is one per CPU the process may use.
    GATEWAY_MAX_STREAMS_PER_CLIENT=1000000 GATEWAY_MAX_CONNECTIONS_PER_CLIENT=1000000 taskset -c 0 "$GATEWAY" --port "$GW_PORT" --local-port "$LOCAL_PORT" \
        --heartbeat-seconds "$ONE_CORE_HEARTBEAT" --max-connections 12000 --log-level notice \
        >"$OUT/one-core-gateway.log" 2>&1 &
    GW_PID=$!
    wait_for "http://127.0.0.1:$GW_PORT/readyz"
    echo "gateway on CPU(s) $(taskset -pc "$GW_PID" | sed 's/.*: //'), libmicrohttpd threads:" \
        "$(grep -o 'http.threads=[0-9]*' "$OUT/one-core-gateway.log" | head -1 | cut -d= -f2)"
    machine
    taskset -c "$LOAD_CPUS" python3 Benchmarks/stream_churn.py "$GW_PORT" "$GW_PID" steady "$CHURN_RATE" "$CHURN_SECONDS" 1
    machine
    taskset -c "$LOAD_CPUS" python3 Benchmarks/stream_churn.py "$GW_PORT" "$GW_PID" bursts "$CHURN_BURST" 6
    machine
    stop GW_PID
}

case "$WHAT" in
    hot) hot ;;
    hot-origin) hot_origin ;;
    hot-browser) hot_browser ;;
    latency) latency ;;
    fanout) fanout ;;
    fanout-c) fanout_c ;;
    change-latency) change_latency ;;
    hot-writes) hot_writes ;;
    multi) multi ;;
    delta) delta ;;
    churn) churn ;;
    one-core) one_core ;;
    paginated) paginated ;;
    all) hot; hot_origin; hot_browser; latency; fanout; multi; delta; churn ;;
    *) echo "usage: $0 [hot|hot-origin|hot-browser|latency|fanout|fanout-c|multi|delta|churn|change-latency|hot-writes|one-core|paginated|all]" >&2; exit 2 ;;
esac
