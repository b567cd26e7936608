# Sourced by every benchmark script: the helpers they share.
#
#   median [FILE]                               the median of the numbers in FILE (one per line), or on standard input
#   figure NAME LINE                            the number after NAME= in LINE (the load clients print name=value pairs)
#   ratio A B                                   A / B with two decimals
#   wait_for URL                                waits (up to 20 s) until URL answers 200
#   stop PID_VARIABLE                           stops the process whose pid the variable holds, and empties it
#   cpu_ticks PID                               the process's user + system CPU time so far, in clock ticks
#   start_fanout_server c|GATEWAY_BINARY STREAMS LOG  -> sets server_pid and server_port: the C floor
#                                               (Benchmarks/sse-fanout/sse_server.c, 2 threads) or a gateway binary on
#                                               its embedded deployment (2 threads, no heartbeats, room for STREAMS
#                                               streams), once it answers
#   run_fanout_load PORT PID STREAMS ROUNDS [NAME]  the fan-out load client's output (Benchmarks/sse-fanout)

median() { sort -g "$@" | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

figure() { sed -n 's/.*'"$1"'=\([0-9.]*\).*/\1/p' <<<"$2"; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f\n", a / b }'; }

wait_for() { # url
    for _ in $(seq 1 200); do
        if [ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" = 200 ]; then return 0; fi
        sleep 0.1
    done
    echo "$1 did not answer 200" >&2
    return 1
}

stop() { # pid-variable
    local pid=${!1}
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    eval "$1="
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

start_fanout_server() {
    if [ "$1" = c ]; then
        .build-release/sse-server 18092 2 >"$3" 2>&1 &
        server_pid=$!
        server_port=18092
        for _ in $(seq 100); do grep -q listening "$3" && break; sleep 0.1; done
    else
        # One loopback address for every stream: its share is the whole limit (an environment variable, which
        # earlier binaries ignore).
        GATEWAY_MAX_STREAMS_PER_CLIENT=1000000 GATEWAY_MAX_CONNECTIONS_PER_CLIENT=1000000 "$1" --port 18090 --local-port 18091 --threads 2 --heartbeat-seconds 3600 \
            --max-connections $(($2 + 2000)) --log-level notice >"$3" 2>&1 &
        server_pid=$!
        server_port=18090
        for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:18090/readyz" && break; sleep 0.1; done
    fi
}

# The fan-out load: STREAMS streams on one live query (conformance:counter of NAME, default fanout), then ROUNDS
# changes to it, each awaited on every stream (Benchmarks/sse-fanout/sse_fanout.c; PID is the server's, for its
# memory). At most 180 s.
run_fanout_load() {
    local name=${5:-fanout}
    timeout 180 .build-release/sse-fanout "$1" "$2" "$3" "$4" "/subscribe/conformance:counter?name=$name" \
        "/mutation/conformance:increment" "{\"name\":\"$name\"}"
}
